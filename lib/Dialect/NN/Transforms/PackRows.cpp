//===- PackRows.cpp - Several per-sample tensors as one -------------------===//
//
// A pipeline boundary carries one tensor per micro-batch. Where a network
// needs several at once (a model's inputs, or the hidden state and the
// attention mask a transformer block passes on), they travel as one tensor
// `[B, S]`: each reshaped to `[B, n]` and concatenated along dim 1. These
// are plain nn ops (reshape, concat, slice), so micro-batching, autodiff and
// the kernels need nothing new, and the copies are exact. Implements the
// helpers and `nn-pack-inputs`.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNLayerLoc.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNPACKINPUTSPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

/// Elements per sample of a `[B, ...]` tensor.
static int64_t rowSize(RankedTensorType type) {
  int64_t n = 1;
  for (int64_t d : type.getShape().drop_front())
    n *= d;
  return n;
}

bool mlir::gpipe::nn::canPackRows(TypeRange types) {
  if (types.empty())
    return false;
  auto first = dyn_cast<RankedTensorType>(types.front());
  if (!first || first.getRank() < 1)
    return false;
  return llvm::all_of(types, [&](Type t) {
    auto type = dyn_cast<RankedTensorType>(t);
    return type && type.getRank() >= 1 &&
           type.getElementType() == first.getElementType() &&
           type.getDimSize(0) == first.getDimSize(0);
  });
}

Value mlir::gpipe::nn::packRows(OpBuilder &builder, Location loc,
                                ValueRange values) {
  SmallVector<Value> rows;
  int64_t total = 0;
  auto first = cast<RankedTensorType>(values.front().getType());
  int64_t batch = first.getDimSize(0);
  for (Value v : values) {
    auto type = cast<RankedTensorType>(v.getType());
    int64_t n = rowSize(type);
    total += n;
    auto rowType = RankedTensorType::get({batch, n}, type.getElementType());
    rows.push_back(
        type == rowType
            ? v
            : ReshapeOp::create(builder, loc, rowType, v).getResult());
  }
  if (rows.size() == 1)
    return rows.front();
  auto packed = RankedTensorType::get({batch, total}, first.getElementType());
  return ConcatOp::create(builder, loc, packed, rows, /*axis=*/1);
}

SmallVector<Value> mlir::gpipe::nn::unpackRows(OpBuilder &builder, Location loc,
                                               Value packed, TypeRange types) {
  SmallVector<Value> values;
  auto packedType = cast<RankedTensorType>(packed.getType());
  int64_t batch = packedType.getDimSize(0), offset = 0;
  for (Type t : types) {
    auto type = cast<RankedTensorType>(t);
    int64_t n = rowSize(type);
    auto rowType = RankedTensorType::get({batch, n}, type.getElementType());
    Value row = packed;
    if (rowType != packedType)
      row = SliceOp::create(
          builder, loc, rowType, packed, ArrayRef<int64_t>{0, offset},
          ArrayRef<int64_t>{batch, n}, ArrayRef<int64_t>{1, 1});
    if (row.getType() != type)
      row = ReshapeOp::create(builder, loc, type, row);
    values.push_back(row);
    offset += n;
  }
  return values;
}

/// The ONNX name an argument was imported from, else "input<i>".
static std::string argumentName(BlockArgument arg) {
  if (StringAttr name = getNameOfLoc(arg.getLoc()))
    return name.str();
  return "input" + std::to_string(arg.getArgNumber());
}

LogicalResult mlir::gpipe::nn::packInputs(ModuleOp module, func::FuncOp func) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitOpError("expected a network body of one block");
  Block &entry = func.getBody().front();
  unsigned count = entry.getNumArguments();
  if (count == 0)
    return success();
  MLIRContext *ctx = func.getContext();
  auto partOf = [&](BlockArgument arg, int64_t offset) -> Attribute {
    return DictionaryAttr::get(
        ctx,
        {NamedAttribute(StringAttr::get(ctx, "name"),
                        StringAttr::get(ctx, argumentName(arg))),
         NamedAttribute(StringAttr::get(ctx, "offset"),
                        IntegerAttr::get(IntegerType::get(ctx, 64), offset)),
         NamedAttribute(StringAttr::get(ctx, "type"),
                        TypeAttr::get(arg.getType()))});
  };
  // One input stays as it is; only its name is recorded.
  if (count == 1) {
    if (isa<RankedTensorType>(entry.getArgument(0).getType()))
      module->setAttr(kInputPartsAttrName,
                      ArrayAttr::get(ctx, {partOf(entry.getArgument(0), 0)}));
    return success();
  }

  // Every input needs the first one's element type and batch.
  auto first = dyn_cast<RankedTensorType>(entry.getArgument(0).getType());
  for (BlockArgument arg : entry.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() < 1)
      return emitError(arg.getLoc(), "input '")
             << argumentName(arg) << "' of type " << arg.getType()
             << " has no batch dim; a network with several inputs needs "
                "each to have the batch in dim 0";
    if (!first || type.getDimSize(0) != first.getDimSize(0))
      return emitError(arg.getLoc(), "input '")
             << argumentName(arg) << "' of type " << type << " has "
             << type.getDimSize(0) << " samples in dim 0, but input '"
             << argumentName(entry.getArgument(0)) << "' of type " << first
             << " has " << (first ? first.getDimSize(0) : 0)
             << "; several inputs must share the batch";
    if (type.getElementType() != first.getElementType())
      return emitError(arg.getLoc(), "input '")
             << argumentName(arg) << "' has element type "
             << type.getElementType() << " but input '"
             << argumentName(entry.getArgument(0)) << "' has "
             << first.getElementType()
             << "; gpipe carries several inputs as one tensor per sample "
                "and needs them to share one element type";
  }

  SmallVector<Type> types(entry.getArgumentTypes());
  SmallVector<Attribute> parts;
  int64_t offset = 0;
  for (BlockArgument arg : entry.getArguments()) {
    parts.push_back(partOf(arg, offset));
    offset += rowSize(cast<RankedTensorType>(arg.getType()));
  }
  module->setAttr(kInputPartsAttrName, ArrayAttr::get(ctx, parts));
  auto packedType = RankedTensorType::get({first.getDimSize(0), offset},
                                          first.getElementType());
  FusedLoc packedLoc = cast<FusedLoc>(FusedLoc::get(
      ctx, llvm::map_to_vector(entry.getArguments(),
                               [](BlockArgument a) { return a.getLoc(); })));
  BlockArgument packed = entry.insertArgument(0u, packedType, packedLoc);

  OpBuilder builder = OpBuilder::atBlockBegin(&entry);
  SmallVector<Value> inputs = unpackRows(builder, packedLoc, packed, types);
  for (unsigned i = 0; i < count; ++i)
    entry.getArgument(i + 1).replaceAllUsesWith(inputs[i]);
  entry.eraseArguments(1, count);
  func.setFunctionType(
      FunctionType::get(ctx, entry.getArgumentTypes(), func.getResultTypes()));
  return success();
}

namespace {
struct NNPackInputsPass
    : public mlir::gpipe::nn::impl::NNPackInputsPassBase<NNPackInputsPass> {
  using NNPackInputsPassBase::NNPackInputsPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(funcName);
    if (!func) {
      module.emitError("no network function '") << funcName << "'";
      return signalPassFailure();
    }
    if (failed(packInputs(module, func)))
      signalPassFailure();
  }
};
} // namespace
