//===- FoldConstants.cpp - Evaluate constant nn ops at compile time -------===//
//
// Implements `nn-fold-constants`: every nn op with a host evaluation whose
// operands are all nn.constant is evaluated once (HostTensor.h) and becomes
// an nn.constant. Ops are visited in order, so a chain of them (positions ->
// comparison -> select) folds in one walk.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/Transforms/Passes.h"

#include "gpipe/Dialect/NN/IR/NNLayerLoc.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Utils/HostTensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNFOLDCONSTANTSPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::nn;

namespace {
/// What folding one op gives: its results' values, nothing where the op has
/// no host evaluation (it stays in the graph), or a failure already reported.
using Folded = FailureOr<std::optional<SmallVector<HostTensor>>>;

Folded one(FailureOr<HostTensor> value) {
  if (failed(value))
    return failure();
  return std::optional(SmallVector<HostTensor>{std::move(*value)});
}
Folded none() { return std::optional<SmallVector<HostTensor>>(); }

/// The host evaluation of `op` on `in` (its operands' values).
Folded evaluate(Operation *op, ArrayRef<HostTensor> in) {
  auto emitError = [op] { return op->emitOpError(); };
  auto binary = [&](BinaryFn fn) {
    return one(foldBinary(fn, in[0], in[1], emitError));
  };
  auto unary = [&](UnaryFn fn) { return one(foldUnary(fn, in[0], emitError)); };
  auto resultShape = [op](unsigned i = 0) {
    return cast<RankedTensorType>(op->getResult(i).getType()).getShape();
  };
  auto reshaped = [&]() {
    HostTensor r = in[0];
    r.shape.assign(resultShape().begin(), resultShape().end());
    return one(std::move(r));
  };
  return llvm::TypeSwitch<Operation *, Folded>(op)
      .Case([&](AddOp) { return binary(BinaryFn::Add); })
      .Case([&](SubOp) { return binary(BinaryFn::Sub); })
      .Case([&](MulOp) { return binary(BinaryFn::Mul); })
      .Case([&](DivOp) { return binary(BinaryFn::Div); })
      .Case([&](MaxOp) { return binary(BinaryFn::Max); })
      .Case([&](MinOp) { return binary(BinaryFn::Min); })
      .Case([&](RemainderOp) { return binary(BinaryFn::Mod); })
      .Case([&](FModOp) { return binary(BinaryFn::FMod); })
      .Case([&](PowOp) {
        return in[0].isFloat() ? binary(BinaryFn::Pow) : none();
      })
      .Case([&](EqualOp) { return binary(BinaryFn::Equal); })
      .Case([&](CompareOp compare) -> Folded {
        switch (compare.getPredicate()) {
        case ComparePredicate::eq:
          return binary(BinaryFn::Equal);
        case ComparePredicate::ne: {
          FailureOr<HostTensor> equal =
              foldBinary(BinaryFn::Equal, in[0], in[1], emitError);
          if (failed(equal))
            return failure();
          return one(foldUnary(UnaryFn::Not, *equal, emitError));
        }
        case ComparePredicate::lt:
          return binary(BinaryFn::Less);
        case ComparePredicate::le:
          return binary(BinaryFn::LessOrEqual);
        case ComparePredicate::gt:
          return binary(BinaryFn::Greater);
        case ComparePredicate::ge:
          return binary(BinaryFn::GreaterOrEqual);
        }
        return none();
      })
      .Case([&](LogicalOp logical) -> Folded {
        switch (logical.getKind()) {
        case LogicalKind::and_:
          return binary(BinaryFn::And);
        case LogicalKind::or_:
          return binary(BinaryFn::Or);
        case LogicalKind::xor_:
          return binary(BinaryFn::Xor);
        }
        return none();
      })
      .Case([&](NotOp) { return unary(UnaryFn::Not); })
      .Case([&](NegOp) { return unary(UnaryFn::Neg); })
      .Case([&](SqrtOp) { return unary(UnaryFn::Sqrt); })
      .Case([&](ExpOp) { return unary(UnaryFn::Exp); })
      .Case([&](LogOp) { return unary(UnaryFn::Log); })
      .Case([&](SinOp) { return unary(UnaryFn::Sin); })
      .Case([&](CosOp) { return unary(UnaryFn::Cos); })
      .Case([&](FloorOp) { return unary(UnaryFn::Floor); })
      .Case([&](CeilOp) { return unary(UnaryFn::Ceil); })
      .Case([&](RoundOp) { return unary(UnaryFn::Round); })
      .Case([&](WhereOp) {
        return one(foldWhere(in[0], in[1], in[2], emitError));
      })
      .Case([&](CastOp cast) {
        return one(
            foldCast(in[0], getElementTypeOrSelf(cast.getType()), emitError));
      })
      .Case([&](ReshapeOp) { return reshaped(); })
      .Case([&](UnsqueezeOp) { return reshaped(); })
      .Case([&](BroadcastToOp) {
        return one(foldBroadcastTo(in[0], resultShape()));
      })
      .Case([&](TransposeOp transpose) {
        return one(foldTranspose(in[0], transpose.getPerm(), resultShape()));
      })
      .Case([&](SliceOp slice) {
        return one(foldSlice(in[0], slice.getOffsets(), slice.getSizes(),
                             slice.getStrides()));
      })
      .Case([&](ConcatOp concat) {
        SmallVector<const HostTensor *> inputs;
        for (const HostTensor &t : in)
          inputs.push_back(&t);
        return one(foldConcat(inputs, concat.getAxis(), resultShape()));
      })
      .Case([&](SplitOp split) -> Folded {
        SmallVector<HostTensor> parts;
        size_t rank = in[0].shape.size();
        SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
        for (unsigned i = 0; i < split.getNumResults(); ++i) {
          parts.push_back(foldSlice(in[0], offsets, resultShape(i), strides));
          offsets[split.getAxis()] += resultShape(i)[split.getAxis()];
        }
        return std::optional(std::move(parts));
      })
      .Case([&](GatherOp gather) -> Folded {
        // Out-of-range indices are the compiled model's to report.
        int64_t dim = in[0].shape[gather.getAxis()];
        if (!llvm::all_of(in[1].ints,
                          [&](int64_t i) { return i >= 0 && i < dim; }))
          return none();
        return one(
            foldGather(in[0], in[1].ints, in[1].shape, gather.getAxis()));
      })
      .Default([&](Operation *) { return none(); });
}

/// Whether `op` may be evaluated once for all: an nn op without regions or
/// side effects, on constants only, with static results of at most
/// `maxElements` elements.
bool isFoldable(Operation *op, int64_t maxElements) {
  if (!isa_and_nonnull<NNDialect>(op->getDialect()) ||
      op->getNumRegions() != 0 || op->getNumOperands() == 0 ||
      op->getNumResults() == 0 || !isPure(op) ||
      isa<ConstantOp, ParamOp, DropoutOp>(op))
    return false;
  if (!llvm::all_of(op->getOperands(), [](Value v) {
        return v.getDefiningOp<ConstantOp>() != nullptr;
      }))
    return false;
  return llvm::all_of(op->getResultTypes(), [&](Type t) {
    auto type = dyn_cast<RankedTensorType>(t);
    return type && type.hasStaticShape() &&
           type.getNumElements() <= maxElements;
  });
}

/// A name for a folded value's resource blob: the op's ONNX name if any.
std::string hintFor(Operation *op) {
  if (StringAttr name = getNameOfLoc(op->getLoc()))
    return name.str();
  return "folded";
}

/// Folded values up to this many elements print inline as `dense`.
constexpr int64_t kInlineElements = 16;
} // namespace

FailureOr<unsigned> mlir::gpipe::nn::foldConstantOps(Operation *root,
                                                     int64_t maxElements) {
  SmallVector<Operation *> order;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) { order.push_back(op); });
  unsigned folded = 0;
  for (Operation *op : order) {
    if (!isFoldable(op, maxElements))
      continue;
    SmallVector<HostTensor> operands;
    for (Value v : op->getOperands()) {
      auto constant = v.getDefiningOp<ConstantOp>();
      FailureOr<HostTensor> t = fromElementsAttr(
          constant.getValue(), [&] { return constant.emitOpError(); });
      if (failed(t))
        return failure();
      operands.push_back(std::move(*t));
    }
    Folded results = evaluate(op, operands);
    if (failed(results))
      return failure();
    if (!*results)
      continue;
    OpBuilder builder(op);
    for (auto [result, value] : llvm::zip(op->getResults(), **results)) {
      // The host value carries the op's result type (a cast's target, a
      // comparison's i1).
      assert(value.getType() == result.getType() && "folded to another type");
      ElementsAttr attr = toElementsAttr(value, hintFor(op), kInlineElements);
      result.replaceAllUsesWith(
          ConstantOp::create(builder, op->getLoc(), attr).getResult());
    }
    // The operands' constants go too once nothing reads them.
    llvm::SetVector<Operation *> defs;
    for (Value v : op->getOperands())
      defs.insert(v.getDefiningOp());
    op->erase();
    for (Operation *def : defs)
      if (def->use_empty())
        def->erase();
    ++folded;
  }
  return folded;
}

namespace {
struct NNFoldConstantsPass
    : public mlir::gpipe::nn::impl::NNFoldConstantsPassBase<
          NNFoldConstantsPass> {
  using NNFoldConstantsPassBase::NNFoldConstantsPassBase;
  void runOnOperation() override {
    if (failed(foldConstantOps(getOperation(), maxElements)))
      signalPassFailure();
  }
};
} // namespace
