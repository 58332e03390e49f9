//===- AttachLoss.cpp - Append the training loss --------------------------===//
//
// Implements `attachLoss` and the `nn-attach-loss` pass: the network function
// (inputs -> prediction) gets a trailing `labels` argument and returns the
// scalar loss, `nn.cross_entropy` of the prediction as logits or `nn.mse`
// against a target of the prediction's type. The pass first refuses tensor
// sizes the pipeline cannot compile (a dimension of 0, a byte size past
// 1 PiB), in the network's own terms.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNATTACHLOSSPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

LogicalResult mlir::gpipe::nn::attachLoss(func::FuncOp func, LossKind kind) {
  StringRef lossName = getLossName(kind);
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitOpError("expected a body of one block to attach a ")
           << lossName << " loss to";
  FunctionType type = func.getFunctionType();
  if (type.getNumResults() != 1)
    return func.emitOpError("expected one result to attach a ")
           << lossName << " loss to, got " << type.getNumResults();
  auto prediction = dyn_cast<RankedTensorType>(type.getResult(0));
  if (!prediction || !isa<FloatType>(prediction.getElementType()))
    return func.emitOpError("cannot attach a ")
           << lossName << " loss to a result of type " << type.getResult(0)
           << ": expected a float tensor";

  MLIRContext *ctx = func.getContext();
  RankedTensorType labelsType = prediction;
  if (kind == LossKind::CrossEntropy) {
    if (prediction.getRank() == 0)
      return func.emitOpError("cannot attach a cross-entropy loss to a result "
                              "of type ")
             << prediction << ": expected logits with a class dim";
    // Softmax over one class is 1 whatever the logit: the loss would be
    // exactly 0 and nothing would train.
    if (prediction.getShape().back() == 1)
      return emitError(func.getLoc(), "cross-entropy needs at least 2 "
                                      "classes, got 1 in the last dimension "
                                      "of ")
             << prediction << "; use --loss mse for one output";
    labelsType = RankedTensorType::get(prediction.getShape().drop_back(),
                                       IntegerType::get(ctx, 64));
  }

  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Location labelsLoc =
      NameLoc::get(StringAttr::get(ctx, "labels"), func.getLoc());
  unsigned labelsIndex = type.getNumInputs();
  if (failed(func.insertArgument(labelsIndex, labelsType, DictionaryAttr(),
                                 labelsLoc)))
    return failure();
  Value labels = body.getArgument(labelsIndex);

  OpBuilder builder(ret);
  auto lossType = RankedTensorType::get({}, prediction.getElementType());
  Value predicted = ret.getOperand(0);
  Value loss;
  if (kind == LossKind::CrossEntropy) {
    Location loc =
        NameLoc::get(StringAttr::get(ctx, "/loss/CrossEntropy"), ret.getLoc());
    loss = CrossEntropyOp::create(builder, loc, lossType, predicted, labels);
  } else {
    Location loc =
        NameLoc::get(StringAttr::get(ctx, "/loss/MSE"), ret.getLoc());
    loss = MSEOp::create(builder, loc, lossType, predicted, labels);
  }
  ret.getOperandsMutable().assign(loss);
  func.setFunctionType(
      FunctionType::get(ctx, body.getArgumentTypes(), TypeRange{lossType}));
  return success();
}

/// The largest tensor the network may hold, in bytes: 1 PiB. Memory plans
/// add up many tensors in 64-bit byte counts; far below 2^63, their sums
/// cannot overflow.
static constexpr int64_t kMaxTensorBytes = int64_t(1) << 50;

/// Refuses, before any rewrite shows them in other ops' terms, tensor sizes
/// the pipeline cannot compile: a dimension of size 0 (a layer of width 0
/// would surface later as an `nn.gemm` shape mismatch) and tensors whose
/// byte size overflows or exceeds kMaxTensorBytes (it would wrap around
/// into a tiny memory plan).
LogicalResult mlir::gpipe::nn::checkTensorSizes(func::FuncOp func) {
  auto check = [&](Value value, Location loc, StringRef what) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      return success();
    for (int64_t dim : type.getShape())
      if (dim == 0)
        return emitError(loc) << what << " of type " << type
                              << " has a dimension of size 0 (a layer of "
                                 "width 0?); every dimension must be at "
                                 "least 1";
    int64_t bytes =
        std::max<int64_t>(1, (int64_t(type.getElementTypeBitWidth()) + 7) / 8);
    bool overflow = false;
    for (int64_t dim : type.getShape())
      overflow |=
          llvm::MulOverflow(bytes, dim, bytes) || bytes > kMaxTensorBytes;
    if (!overflow)
      return success();
    InFlightDiagnostic diag = emitError(loc);
    diag << what << " of type " << type << " holds ";
    llvm::interleave(
        type.getShape(), [&](int64_t d) { diag << d; }, [&] { diag << " x "; });
    return diag << " elements, more than the 1 PiB a tensor may take; use a "
                   "smaller batch or smaller layers";
  };
  for (BlockArgument arg : func.getArguments())
    if (failed(check(arg, arg.getLoc(),
                     "input " + std::to_string(arg.getArgNumber()))))
      return failure();
  WalkResult result = func.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (failed(check(v, op->getLoc(),
                       "'" + op->getName().getStringRef().str() + "' result")))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {
struct NNAttachLossPass
    : public mlir::gpipe::nn::impl::NNAttachLossPassBase<NNAttachLossPass> {
  using NNAttachLossPassBase::NNAttachLossPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(funcName);
    if (!func) {
      module.emitError("no function named '")
          << funcName << "' to attach the loss to";
      return signalPassFailure();
    }
    if (failed(checkTensorSizes(func)) || failed(attachLoss(func, loss)))
      signalPassFailure();
  }
};
} // namespace
