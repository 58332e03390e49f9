//===- Elementwise.cpp - Kernel calls of the elementwise family
//
// Elementwise ops: unary and binary arithmetic, comparisons, logic, selects,
// casts, clips, dropout: their KernelCallOpInterface models.
//
//===----------------------------------------------------------------------===//

#include "CallBuilder.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::kernel_calls;
using ::gpipe::abi::KernelId;

namespace {

/// A float op of the unary kernel (unary_f32).
template <typename OpT, gpipe_rt_unary_op Kind>
FailureOr<KernelCall> buildUnary(CallBuilder &b, OpT op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_unary_f32)
      .integer(Kind)
      .buffer(op->getOperand(0))
      .buffer(op->getResult(0))
      .integer(countOf(op->getOperand(0)))
      .done();
}

/// A binary op with broadcasting: the i64 kernel for integer arithmetic
/// (position ids), else the f32 one.
template <typename OpT, gpipe_rt_binary_op Kind>
FailureOr<KernelCall> buildBinary(CallBuilder &b, OpT op) {
  bool integer = cast<ShapedType>(op->getResult(0).getType())
                     .getElementType()
                     .isInteger(64);
  if (!integer && failed(b.f32Only()))
    return failure();
  return b.kernel(integer ? KernelId::k_binary_i64 : KernelId::k_binary_f32)
      .integer(Kind)
      .tensor(op->getOperand(0))
      .tensor(op->getOperand(1))
      .tensor(op->getResult(0))
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::EqualOp eq) {
  FailureOr<gpipe_rt_dtype> dtype =
      b.dtype(eq.getLhs(), {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_I32,
                            GPIPE_RT_I64, GPIPE_RT_BOOL});
  if (failed(dtype))
    return failure();
  return b.kernel(KernelId::k_equal)
      .integer(*dtype)
      .tensor(eq.getLhs())
      .tensor(eq.getRhs())
      .tensor(eq.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::CompareOp cmp) {
  FailureOr<gpipe_rt_dtype> dtype =
      b.dtype(cmp.getLhs(), {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_I32,
                             GPIPE_RT_I64, GPIPE_RT_BOOL});
  if (failed(dtype))
    return failure();
  // nn.ComparePredicate and gpipe_rt_compare_op number alike.
  return b.kernel(KernelId::k_compare)
      .integer(static_cast<int64_t>(cmp.getPredicate()))
      .integer(*dtype)
      .tensor(cmp.getLhs())
      .tensor(cmp.getRhs())
      .tensor(cmp.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::LogicalOp op) {
  // nn.LogicalKind and gpipe_rt_logical_op number alike.
  return b.kernel(KernelId::k_logical)
      .integer(static_cast<int64_t>(op.getKind()))
      .tensor(op.getLhs())
      .tensor(op.getRhs())
      .tensor(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::NotOp notOp) {
  return b.kernel(KernelId::k_not)
      .buffer(notOp.getInput())
      .buffer(notOp.getResult())
      .integer(countOf(notOp.getInput()))
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::WhereOp where) {
  FailureOr<gpipe_rt_dtype> dtype = b.dtype(where.getX());
  if (failed(dtype))
    return failure();
  return b.kernel(KernelId::k_where)
      .tensor(where.getCondition())
      .integer(*dtype)
      .tensor(where.getX())
      .tensor(where.getY())
      .tensor(where.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::CastOp cast) {
  FailureOr<gpipe_rt_dtype> from = b.dtype(cast.getInput());
  if (failed(from))
    return failure();
  FailureOr<gpipe_rt_dtype> to = b.dtype(cast.getResult());
  if (failed(to))
    return failure();
  return b.kernel(KernelId::k_cast)
      .integer(*from)
      .buffer(cast.getInput())
      .integer(*to)
      .buffer(cast.getResult())
      .integer(countOf(cast.getInput()))
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::ClipOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_clip_f32)
      .buffer(op.getInput())
      .buffer(op.getResult())
      .integer(countOf(op.getInput()))
      .real(op.getMin().convertToFloat())
      .real(op.getMax().convertToFloat())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::ClipGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_clip_grad_f32)
      .buffer(op.getInput())
      .buffer(op.getGrad())
      .buffer(op.getResult())
      .integer(countOf(op.getInput()))
      .real(op.getMin().convertToFloat())
      .real(op.getMax().convertToFloat())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::GeluGradOp op) {
  if (failed(b.f32Only()))
    return failure();
  if (shapeOf(op.getInput()) != shapeOf(op.getGrad()))
    return b.error("input and grad shapes differ");
  return b.kernel(KernelId::k_gelu_grad_f32)
      .buffer(op.getInput())
      .buffer(op.getGrad())
      .buffer(op.getResult())
      .integer(countOf(op.getInput()))
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::DropoutOp op) {
  if (failed(b.f32Only()))
    return failure();
  return b.kernel(KernelId::k_dropout_f32)
      .buffer(op.getInput())
      .buffer(op.getResult())
      .integer(countOf(op.getInput()))
      .real(op.getRatio().convertToFloat())
      .rngKey()
      .integer(op.getStream())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::BroadcastToOp op) {
  FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getInput());
  if (failed(dtype))
    return failure();
  return b.kernel(KernelId::k_broadcast)
      .integer(*dtype)
      .tensor(op.getInput())
      .tensor(op.getResult())
      .done();
}

template <typename OpT, gpipe_rt_unary_op Kind>
void attachUnary(MLIRContext *ctx) {
  attach<OpT, buildUnary<OpT, Kind>>(ctx);
}
template <typename OpT, gpipe_rt_binary_op Kind>
void attachBinary(MLIRContext *ctx) {
  attach<OpT, buildBinary<OpT, Kind>>(ctx);
}

} // namespace

void mlir::gpipe::kernel_calls::registerElementwiseKernels(MLIRContext *ctx) {
  attachUnary<nn::NegOp, GPIPE_RT_NEG>(ctx);
  attachUnary<nn::ReciprocalOp, GPIPE_RT_RECIPROCAL>(ctx);
  attachUnary<nn::SqrtOp, GPIPE_RT_SQRT>(ctx);
  attachUnary<nn::ExpOp, GPIPE_RT_EXP>(ctx);
  attachUnary<nn::LogOp, GPIPE_RT_LOG>(ctx);
  attachUnary<nn::SinOp, GPIPE_RT_SIN>(ctx);
  attachUnary<nn::CosOp, GPIPE_RT_COS>(ctx);
  attachUnary<nn::FloorOp, GPIPE_RT_FLOOR>(ctx);
  attachUnary<nn::CeilOp, GPIPE_RT_CEIL>(ctx);
  attachUnary<nn::RoundOp, GPIPE_RT_ROUND>(ctx);
  attachUnary<nn::ErfOp, GPIPE_RT_ERF>(ctx);
  attachUnary<nn::TanhOp, GPIPE_RT_TANH>(ctx);
  attachUnary<nn::SigmoidOp, GPIPE_RT_SIGMOID>(ctx);
  attachUnary<nn::ReluOp, GPIPE_RT_RELU>(ctx);
  attachUnary<nn::GeluOp, GPIPE_RT_GELU>(ctx);
  attachBinary<nn::AddOp, GPIPE_RT_ADD>(ctx);
  attachBinary<nn::SubOp, GPIPE_RT_SUB>(ctx);
  attachBinary<nn::MulOp, GPIPE_RT_MUL>(ctx);
  attachBinary<nn::DivOp, GPIPE_RT_DIV>(ctx);
  attachBinary<nn::PowOp, GPIPE_RT_POW>(ctx);
  attachBinary<nn::MaxOp, GPIPE_RT_MAX>(ctx);
  attachBinary<nn::MinOp, GPIPE_RT_MIN>(ctx);
  attachBinary<nn::RemainderOp, GPIPE_RT_REMAINDER>(ctx);
  attachBinary<nn::FModOp, GPIPE_RT_FMOD>(ctx);
  attach<nn::EqualOp, build>(ctx);
  attach<nn::CompareOp, build>(ctx);
  attach<nn::LogicalOp, build>(ctx);
  attach<nn::NotOp, build>(ctx);
  attach<nn::WhereOp, build>(ctx);
  attach<nn::CastOp, build>(ctx);
  attach<nn::ClipOp, build>(ctx);
  attach<nn::ClipGradOp, build>(ctx);
  attach<nn::GeluGradOp, build>(ctx);
  attach<nn::DropoutOp, build>(ctx);
  attach<nn::BroadcastToOp, build>(ctx);
}
