//===- FoldConstants.cpp - Evaluate constant nn ops at compile time -------===//
//
// Implements `nn-fold-constants`: every nn op whose operands are all
// nn.constant runs once on the interpreter (the kernels a compiled model
// runs) and becomes an nn.constant. Ops are visited in order, so a chain of
// them (positions -> comparison -> select) folds in one walk.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Interpreter/Passes.h"

#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Interpreter/Interpreter.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_NNFOLDCONSTANTSPASS
#include "gpipe/Interpreter/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

/// Whether `op` may be evaluated once for all: an nn op without regions or
/// side effects that draws no random numbers, on constants only.
static bool isFoldable(Operation *op, int64_t maxElements) {
  if (!isa_and_nonnull<nn::NNDialect>(op->getDialect()) ||
      op->getNumRegions() != 0 || op->getNumOperands() == 0 ||
      op->getNumResults() == 0 || !isPure(op) ||
      isa<nn::ConstantOp, nn::ParamOp, nn::DropoutOp>(op))
    return false;
  if (!llvm::all_of(op->getOperands(), [](Value v) {
        return v.getDefiningOp<nn::ConstantOp>() != nullptr;
      }))
    return false;
  return llvm::all_of(op->getResultTypes(), [&](Type t) {
    auto type = dyn_cast<RankedTensorType>(t);
    return type && type.hasStaticShape() &&
           type.getNumElements() <= maxElements;
  });
}

/// A name for a folded value's resource blob: the op's ONNX name if any.
static std::string hintFor(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (isa<NameLoc>(l)) {
        loc = l;
        break;
      }
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "folded";
}

FailureOr<unsigned> mlir::gpipe::foldConstantOps(Operation *root,
                                                 int64_t maxElements) {
  SmallVector<Operation *> order;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) { order.push_back(op); });
  unsigned folded = 0;
  for (Operation *op : order) {
    if (!isFoldable(op, maxElements))
      continue;
    SmallVector<HostTensor> operands;
    for (Value v : op->getOperands()) {
      auto constant = v.getDefiningOp<nn::ConstantOp>();
      FailureOr<HostTensor> t = hostTensorFromAttr(
          constant.getValue(), [&] { return constant.emitOpError(); });
      if (failed(t))
        return failure();
      operands.push_back(std::move(*t));
    }
    FailureOr<std::vector<HostTensor>> results = interpretOp(op, operands);
    if (failed(results))
      return failure();
    OpBuilder builder(op);
    for (auto [result, value] : llvm::zip(op->getResults(), *results)) {
      ElementsAttr attr =
          elementsAttrFromHostTensor(value, op->getContext(), hintFor(op));
      result.replaceAllUsesWith(
          nn::ConstantOp::create(builder, op->getLoc(), attr).getResult());
    }
    // The operands' constants go too once nothing reads them.
    SmallVector<Operation *> defs;
    for (Value v : op->getOperands())
      defs.push_back(v.getDefiningOp());
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
    : public mlir::gpipe::impl::NNFoldConstantsPassBase<NNFoldConstantsPass> {
  using NNFoldConstantsPassBase::NNFoldConstantsPassBase;
  void runOnOperation() override {
    if (failed(foldConstantOps(getOperation(), maxElements)))
      signalPassFailure();
  }
};
} // namespace
