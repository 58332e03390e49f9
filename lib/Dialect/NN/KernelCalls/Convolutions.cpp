//===- Convolutions.cpp - Kernel calls of the convolutions family
//
// Convolutions and pooling over NCHW images, and their gradients: their
// KernelCallOpInterface models.
//
//===----------------------------------------------------------------------===//

#include "CallBuilder.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::kernel_calls;
using ::gpipe::abi::KernelId;

namespace {

FailureOr<KernelCall> build(CallBuilder &b, nn::Conv2DOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_conv2d_f32)
      .buffer(op.getInput())
      .shape(op.getInput())
      .buffer(op.getWeight())
      .shape(op.getWeight())
      .optBuffer(op.getBias())
      .ints(op.getStrides())
      .ints(op.getPads())
      .ints(op.getDilations())
      .integer(op.getGroups())
      .buffer(op.getResult())
      .shape(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::Conv2DGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_conv2d_grad_f32)
      .buffer(op.getInput())
      .shape(op.getInput())
      .buffer(op.getWeight())
      .shape(op.getWeight())
      .buffer(op.getGrad())
      .shape(op.getGrad())
      .ints(op.getStrides())
      .ints(op.getPads())
      .ints(op.getDilations())
      .integer(op.getGroups())
      .buffer(op.getInputGrad())
      .buffer(op.getWeightGrad())
      .buffer(op.getBiasGrad())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::MaxPool2DOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_max_pool2d_f32)
      .buffer(op.getInput())
      .shape(op.getInput())
      .ints(op.getKernel())
      .ints(op.getStrides())
      .ints(op.getPads())
      .ints(op.getDilations())
      .buffer(op.getResult())
      .shape(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::MaxPool2DGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_max_pool2d_grad_f32)
      .buffer(op.getInput())
      .shape(op.getInput())
      .buffer(op.getGrad())
      .shape(op.getGrad())
      .ints(op.getKernel())
      .ints(op.getStrides())
      .ints(op.getPads())
      .ints(op.getDilations())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::AvgPool2DOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_avg_pool2d_f32)
      .buffer(op.getInput())
      .shape(op.getInput())
      .ints(op.getKernel())
      .ints(op.getStrides())
      .ints(op.getPads())
      .integer(op.getCountIncludePad())
      .buffer(op.getResult())
      .shape(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::AvgPool2DGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_avg_pool2d_grad_f32)
      .buffer(op.getGrad())
      .shape(op.getGrad())
      .ints(op.getKernel())
      .ints(op.getStrides())
      .ints(op.getPads())
      .integer(op.getCountIncludePad())
      .buffer(op.getResult())
      .shape(op.getResult())
      .done();
}

} // namespace

void mlir::gpipe::kernel_calls::registerConvolutionsKernels(MLIRContext *ctx) {
  attach<nn::Conv2DOp, build>(ctx);
  attach<nn::Conv2DGradOp, build>(ctx);
  attach<nn::MaxPool2DOp, build>(ctx);
  attach<nn::MaxPool2DGradOp, build>(ctx);
  attach<nn::AvgPool2DOp, build>(ctx);
  attach<nn::AvgPool2DGradOp, build>(ctx);
}
