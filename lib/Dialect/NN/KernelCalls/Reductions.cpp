//===- Reductions.cpp - Kernel calls of the reductions family
//
// Reductions and normalizations: sums, cumulative sums, softmax, layer and
// batch norm, and their gradients: their KernelCallOpInterface models.
//
//===----------------------------------------------------------------------===//

#include "CallBuilder.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::kernel_calls;
using ::gpipe::abi::KernelId;

namespace {

FailureOr<KernelCall> build(CallBuilder &b, nn::ReduceSumOp op) {
  if (failed(b.f32Only()))
    return failure();
  // The kernel checks the axes; the result must hold the kept dims.
  ArrayRef<int64_t> axes = op.getAxes();
  int64_t kept = 1;
  for (auto [d, size] : llvm::enumerate(shapeOf(op.getInput())))
    if (!llvm::is_contained(axes, int64_t(d)))
      kept *= size;
  if (kept != countOf(op.getResult()))
    return b.error("result has ")
           << countOf(op.getResult()) << " elements, but reducing "
           << op.getInput().getType() << " keeps " << kept;
  return b.kernel(KernelId::k_reduce_sum_f32)
      .tensor(op.getInput())
      .ints(axes)
      .integer(axes.size())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::CumSumOp op) {
  FailureOr<gpipe_rt_dtype> dtype =
      b.dtype(op.getInput(), {GPIPE_RT_F32, GPIPE_RT_I64});
  if (failed(dtype))
    return failure();
  return b.kernel(KernelId::k_cumsum)
      .integer(*dtype)
      .tensor(op.getInput())
      .integer(op.getAxis())
      .integer(op.getExclusive())
      .integer(op.getReverse())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::SoftmaxOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_softmax_f32)
      .tensor(op.getInput())
      .integer(op.getAxis())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::SoftmaxGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  // One shape describes all three buffers.
  if (shapeOf(op.getOutput()) != shapeOf(op.getGrad()) ||
      shapeOf(op.getOutput()) != shapeOf(op.getResult()))
    return b.error("output, grad and result shapes differ");
  return b.kernel(KernelId::k_softmax_grad_f32)
      .buffer(op.getOutput())
      .buffer(op.getGrad())
      .shape(op.getOutput())
      .integer(rankOf(op.getOutput()))
      .integer(op.getAxis())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::LayerNormOp op) {
  if (failed(b.f32Only()))
    return failure();
  int64_t axis = int64_t(op.getAxis());
  if (axis > rankOf(op.getInput()))
    return b.error("axis ") << axis << " exceeds the rank";
  int64_t normalized = productOf(shapeOf(op.getInput()).drop_front(axis));
  if (countOf(op.getScale()) != normalized ||
      (op.getBias() && countOf(op.getBias()) != normalized))
    return b.error("scale and bias must cover the normalized dims");
  // No mean and rstd: the backward recomputes them.
  return b.kernel(KernelId::k_layer_norm_f32)
      .tensor(op.getInput())
      .integer(axis)
      .buffer(op.getScale())
      .optBuffer(op.getBias())
      .real(op.getEpsilon().convertToFloat())
      .buffer(op.getResult())
      .null()
      .null()
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::LayerNormGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  Value x = op.getInput();
  int64_t axis = int64_t(op.getAxis());
  if (axis > rankOf(x))
    return b.error("axis ") << axis << " exceeds the rank";
  int64_t normalized = productOf(shapeOf(x).drop_front(axis));
  if (shapeOf(op.getGrad()) != shapeOf(x) ||
      shapeOf(op.getInputGrad()) != shapeOf(x) ||
      countOf(op.getScale()) != normalized ||
      countOf(op.getScaleGrad()) != normalized ||
      countOf(op.getBiasGrad()) != normalized)
    return b.error("shapes do not fit a layer norm over dims [")
           << axis << ", " << rankOf(x) << ") of " << x.getType();
  return b.kernel(KernelId::k_layer_norm_grad_f32)
      .tensor(x)
      .integer(axis)
      .buffer(op.getScale())
      .buffer(op.getGrad())
      .real(op.getEpsilon().convertToFloat())
      .buffer(op.getInputGrad())
      .buffer(op.getScaleGrad())
      .buffer(op.getBiasGrad())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::BatchNormOp op) {
  if (failed(b.f32Only()))
    return failure();
  // The running statistics are not read: see nn.batch_norm.
  return b.kernel(KernelId::k_batch_norm_f32)
      .tensor(op.getInput())
      .buffer(op.getScale())
      .buffer(op.getBias())
      .real(op.getEpsilon().convertToFloat())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::BatchNormGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_batch_norm_grad_f32)
      .tensor(op.getInput())
      .buffer(op.getScale())
      .buffer(op.getGrad())
      .real(op.getEpsilon().convertToFloat())
      .buffer(op.getRunningMean())
      .buffer(op.getInputGrad())
      .buffer(op.getScaleGrad())
      .buffer(op.getBiasGrad())
      .buffer(op.getMeanStat())
      .buffer(op.getVarStat())
      .done();
}

} // namespace

void mlir::gpipe::kernel_calls::registerReductionsKernels(MLIRContext *ctx) {
  attach<nn::ReduceSumOp, build>(ctx);
  attach<nn::CumSumOp, build>(ctx);
  attach<nn::SoftmaxOp, build>(ctx);
  attach<nn::SoftmaxGradOp, build>(ctx);
  attach<nn::LayerNormOp, build>(ctx);
  attach<nn::LayerNormGradOp, build>(ctx);
  attach<nn::BatchNormOp, build>(ctx);
  attach<nn::BatchNormGradOp, build>(ctx);
}
