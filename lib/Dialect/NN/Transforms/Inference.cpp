//===- Inference.cpp - Put a network in inference mode ----------*- C++ -*-===//
//
// Implements `prepareForInference` and the `nn-inference` pass: the network
// function keeps its prediction as its result (no labels, no loss), batch
// norms normalize with their running statistics (composed of elementwise
// ops over the same parameters, as PyTorch's eval mode computes them) and
// dropouts are the identity. The pass first refuses tensor sizes the
// pipeline cannot compile, as nn-attach-loss does for training.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNINFERENCEPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

/// `bn` with its running statistics: y = x * a + (bias - mean * a), a =
/// scale * (1 / sqrt(var + epsilon)), the per-channel terms ([C]) reshaped
/// to broadcast over dim 1 of the input ([N, C, ...]).
static LogicalResult lowerBatchNorm(BatchNormOp bn) {
  auto type = dyn_cast<RankedTensorType>(bn.getType());
  if (!type || type.getRank() < 2)
    return bn.emitOpError("expected an input of rank 2 or more, got ")
           << bn.getType();
  OpBuilder b(bn);
  Location loc = bn.getLoc();
  auto channelType = cast<RankedTensorType>(bn.getScale().getType());
  auto scalarType = RankedTensorType::get({}, channelType.getElementType());
  Value epsilon = ConstantOp::create(
      b, loc,
      cast<ElementsAttr>(DenseElementsAttr::get(
          scalarType, b.getFloatAttr(channelType.getElementType(),
                                     bn.getEpsilon().convertToDouble()))));
  Value var = AddOp::create(b, loc, bn.getRunningVar(), epsilon);
  Value rstd = ReciprocalOp::create(b, loc, SqrtOp::create(b, loc, var));
  Value a = MulOp::create(b, loc, bn.getScale(), rstd);
  Value c = SubOp::create(b, loc, bn.getBias(),
                          MulOp::create(b, loc, bn.getRunningMean(), a));
  // [C] -> [C, 1, ...]: numpy broadcasting lines it up with dim 1.
  SmallVector<int64_t> shape(type.getRank() - 1, 1);
  shape[0] = channelType.getDimSize(0);
  auto perChannel = RankedTensorType::get(shape, channelType.getElementType());
  Value a4 = ReshapeOp::create(b, loc, perChannel, a);
  Value c4 = ReshapeOp::create(b, loc, perChannel, c);
  Value y = AddOp::create(b, loc, MulOp::create(b, loc, bn.getInput(), a4), c4);
  if (y.getType() != bn.getType())
    return bn.emitOpError("running-statistics form has type ")
           << y.getType() << ", expected " << bn.getType();
  // The statistics stay running statistics where parameters are laid out
  // (after the trainable ones), as in training: an evaluation pipeline reads
  // the training arena's parameters in place.
  for (Value stat : {bn.getRunningMean(), bn.getRunningVar()})
    if (auto read = stat.getDefiningOp<ParamOp>())
      if (auto decl = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(
              read, read.getNameAttr()))
        decl->setAttr(NNDialect::kRunningStatisticAttrName, b.getUnitAttr());
  bn.replaceAllUsesWith(y);
  bn.erase();
  return success();
}

LogicalResult mlir::gpipe::nn::prepareForInference(func::FuncOp func) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitOpError("expected a body of one block to run inference");
  if (func.getFunctionType().getNumResults() != 1)
    return func.emitOpError("expected one result, the prediction, got ")
           << func.getFunctionType().getNumResults();
  SmallVector<BatchNormOp> norms;
  SmallVector<DropoutOp> dropouts;
  func.walk([&](Operation *op) {
    if (auto bn = dyn_cast<BatchNormOp>(op))
      norms.push_back(bn);
    else if (auto dropout = dyn_cast<DropoutOp>(op))
      dropouts.push_back(dropout);
  });
  for (BatchNormOp bn : norms)
    if (failed(lowerBatchNorm(bn)))
      return failure();
  for (DropoutOp dropout : dropouts) {
    dropout.replaceAllUsesWith(dropout.getInput());
    dropout.erase();
  }
  return success();
}

namespace {
struct NNInferencePass
    : public mlir::gpipe::nn::impl::NNInferencePassBase<NNInferencePass> {
  using NNInferencePassBase::NNInferencePassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(funcName);
    if (!func) {
      module.emitError("no function named '")
          << funcName << "' to run inference with";
      return signalPassFailure();
    }
    if (failed(checkTensorSizes(func)) || failed(prepareForInference(func)))
      signalPassFailure();
  }
};
} // namespace
