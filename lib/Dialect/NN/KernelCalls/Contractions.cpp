//===- Contractions.cpp - Kernel calls of the contractions family
//
// Contractions: matrix products, GEMMs and linear layers, in fp32 or with bf16
// operands, and the fused attention: their KernelCallOpInterface models.
//
//===----------------------------------------------------------------------===//

#include "CallBuilder.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::kernel_calls;
using ::gpipe::abi::KernelId;

namespace {

FailureOr<KernelCall> build(CallBuilder &b, nn::MatMulOp mm) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel((b.bf16() ? KernelId::k_matmul_bf16 : KernelId::k_matmul_f32))
      .tensor(mm.getLhs())
      .tensor(mm.getRhs())
      .integer(mm.getTransLhs())
      .integer(mm.getTransRhs())
      .tensor(mm.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::GemmOp op) {
  if (failed(b.f32Only()))
    return failure();
  // The kernel takes the operands' and the result's dims without a
  // rank.
  if (rankOf(op.getA()) != 2 || rankOf(op.getB()) != 2 ||
      rankOf(op.getResult()) != 2)
    return b.error("expected 2-D operands and result");
  b.kernel((b.bf16() ? KernelId::k_gemm_bf16 : KernelId::k_gemm_f32))
      .buffer(op.getA())
      .shape(op.getA());
  b.buffer(op.getB()).shape(op.getB());
  if (Value c = op.getC())
    b.tensor(c);
  else
    b.null().null().integer(0);
  return b.real(op.getAlpha().convertToFloat())
      .real(op.getBeta().convertToFloat())
      .integer(op.getTransA())
      .integer(op.getTransB())
      .buffer(op.getResult())
      .shape(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::LinearOp op) {
  if (failed(b.f32Only()))
    return failure();
  // The kernel takes the weight's dims without a rank and the bias's
  // size from the result.
  if (rankOf(op.getWeight()) != 2)
    return b.error("expected a 2-D weight");
  ArrayRef<int64_t> outShape = shapeOf(op.getResult());
  if (Value bias = op.getBias())
    if (outShape.empty() || rankOf(bias) != 1 ||
        shapeOf(bias)[0] != outShape.back())
      return b.error("expected a bias of shape [")
             << (outShape.empty() ? 0 : outShape.back()) << "]";
  return b.kernel((b.bf16() ? KernelId::k_linear_bf16 : KernelId::k_linear_f32))
      .tensor(op.getInput())
      .buffer(op.getWeight())
      .shape(op.getWeight())
      .optBuffer(op.getBias())
      .integer(op.getTransposeWeight())
      .tensor(op.getResult())
      .done();
}

/// nn.attention's and nn.attention_grad's shared arguments, in the
/// kernels' order up to the scale.
CallBuilder &attentionArgs(CallBuilder &b, Value q, Value k, Value v,
                           Value bias, float scale) {
  b.buffer(q).buffer(k).buffer(v).shape(q).integer(rankOf(q));
  ArrayRef<int64_t> vs = shapeOf(v);
  b.integer(vs[vs.size() - 2]).integer(vs.back());
  if (bias)
    b.tensor(bias);
  else
    b.null().null().integer(0);
  return b.real(scale);
}

FailureOr<KernelCall> build(CallBuilder &b, nn::AttentionOp op) {
  if (failed(b.f32Only()))
    return failure();
  return attentionArgs(b.kernel(KernelId::k_attention_f32), op.getQuery(),
                       op.getKey(), op.getValue(), op.getBias(),
                       op.getScale().convertToFloat())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::AttentionGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  return attentionArgs(b.kernel(KernelId::k_attention_grad_f32), op.getQuery(),
                       op.getKey(), op.getValue(), op.getBias(),
                       op.getScale().convertToFloat())
      .buffer(op.getGrad())
      .buffer(op.getQueryGrad())
      .buffer(op.getKeyGrad())
      .buffer(op.getValueGrad())
      .done();
}

} // namespace

void mlir::gpipe::kernel_calls::registerContractionsKernels(MLIRContext *ctx) {
  attach<nn::MatMulOp, build>(ctx);
  attach<nn::GemmOp, build>(ctx);
  attach<nn::LinearOp, build>(ctx);
  attach<nn::AttentionOp, build>(ctx);
  attach<nn::AttentionGradOp, build>(ctx);
}
