//===- Losses.cpp - Kernel calls of the losses family
//
// Losses: cross-entropy and mean squared error, and the cross-entropy
// gradient: their KernelCallOpInterface models.
//
//===----------------------------------------------------------------------===//

#include "CallBuilder.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::kernel_calls;
using ::gpipe::abi::KernelId;

namespace {

FailureOr<KernelCall> build(CallBuilder &b, nn::CrossEntropyOp op) {
  if (failed(b.dtype(op.getLogits(), {GPIPE_RT_F32})))
    return failure();
  FailureOr<gpipe_rt_dtype> labelType = b.dtype(op.getLabels(), kIndexTypes);
  if (failed(labelType) || failed(b.dtype(op.getResult(), {GPIPE_RT_F32})))
    return failure();
  if (rankOf(op.getLogits()) < 1 ||
      shapeOf(op.getLabels()) != shapeOf(op.getLogits()).drop_back())
    return b.error("labels must be shaped like the logits without "
                   "the class dim");
  return b.kernel(KernelId::k_cross_entropy_f32)
      .tensor(op.getLogits())
      .integer(*labelType)
      .buffer(op.getLabels())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::CrossEntropyGradOp op) {
  if (failed(b.dtype(op.getLogits(), {GPIPE_RT_F32})))
    return failure();
  FailureOr<gpipe_rt_dtype> labelType = b.dtype(op.getLabels(), kIndexTypes);
  if (failed(labelType) || failed(b.dtype(op.getGrad(), {GPIPE_RT_F32})) ||
      failed(b.dtype(op.getResult(), {GPIPE_RT_F32})))
    return failure();
  if (rankOf(op.getLogits()) < 1 ||
      shapeOf(op.getLabels()) != shapeOf(op.getLogits()).drop_back() ||
      shapeOf(op.getResult()) != shapeOf(op.getLogits()) ||
      countOf(op.getGrad()) != 1)
    return b.error("labels must be shaped like the logits without the class "
                   "dim, the result like the logits, and grad a scalar");
  // The scalar seed is read by the kernel, never by the caller
  // (in compiled code it may live in device memory).
  return b.kernel(KernelId::k_cross_entropy_grad_at_f32)
      .tensor(op.getLogits())
      .integer(*labelType)
      .buffer(op.getLabels())
      .buffer(op.getGrad())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::MSEOp op) {
  if (failed(b.f32Only()))
    return failure();
  if (shapeOf(op.getInput()) != shapeOf(op.getTarget()))
    return b.error("input and target shapes differ");
  return b.kernel(KernelId::k_mse_f32)
      .buffer(op.getInput())
      .buffer(op.getTarget())
      .integer(countOf(op.getInput()))
      .buffer(op.getResult())
      .done();
}

} // namespace

void mlir::gpipe::kernel_calls::registerLossesKernels(MLIRContext *ctx) {
  attach<nn::CrossEntropyOp, build>(ctx);
  attach<nn::CrossEntropyGradOp, build>(ctx);
  attach<nn::MSEOp, build>(ctx);
}
