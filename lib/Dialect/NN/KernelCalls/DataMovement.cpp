//===- DataMovement.cpp - Kernel calls of the datamovement family
//
// Data movement: gathers, transposes, slices, splits, concatenations: their
// KernelCallOpInterface models.
//
//===----------------------------------------------------------------------===//

#include "CallBuilder.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::kernel_calls;
using ::gpipe::abi::KernelId;

namespace {

FailureOr<KernelCall> build(CallBuilder &b, nn::GatherOp op) {
  FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getData());
  if (failed(dtype))
    return failure();
  FailureOr<gpipe_rt_dtype> indexType = b.dtype(op.getIndices(), kIndexTypes);
  if (failed(indexType))
    return failure();
  return b.kernel(KernelId::k_gather)
      .integer(*dtype)
      .tensor(op.getData())
      .integer(*indexType)
      .tensor(op.getIndices())
      .integer(op.getAxis())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::GatherGradOp op) {
  FailureOr<gpipe_rt_dtype> indexType = b.dtype(op.getIndices(), kIndexTypes);
  if (failed(indexType) || failed(b.dtype(op.getGrad(), {GPIPE_RT_F32})) ||
      failed(b.dtype(op.getResult(), {GPIPE_RT_F32})))
    return failure();
  return b.kernel(KernelId::k_gather_grad_f32)
      .integer(*indexType)
      .tensor(op.getIndices())
      .tensor(op.getGrad())
      .integer(op.getAxis())
      .tensor(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::TransposeOp op) {
  FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getInput());
  if (failed(dtype))
    return failure();
  if (int64_t(op.getPerm().size()) != rankOf(op.getInput()))
    return b.error("perm has ") << op.getPerm().size() << " entries for rank "
                                << rankOf(op.getInput());
  return b.kernel(KernelId::k_transpose)
      .integer(*dtype)
      .tensor(op.getInput())
      .ints(op.getPerm())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::SliceOp op) {
  FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getInput());
  if (failed(dtype))
    return failure();
  size_t rank = size_t(rankOf(op.getInput()));
  if (op.getOffsets().size() != rank || op.getSizes().size() != rank ||
      op.getStrides().size() != rank ||
      op.getSizes() != shapeOf(op.getResult()))
    return b.error("offsets, sizes and strides must have one entry per "
                   "dim, sizes matching the result");
  return b.kernel(KernelId::k_slice)
      .integer(*dtype)
      .tensor(op.getInput())
      .ints(op.getOffsets())
      .ints(op.getSizes())
      .ints(op.getStrides())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::InsertSliceOp op) {
  FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getDest());
  if (failed(dtype))
    return failure();
  size_t rank = size_t(rankOf(op.getDest()));
  if (cast<ShapedType>(op.getSource().getType()).getElementType() !=
          cast<ShapedType>(op.getDest().getType()).getElementType() ||
      size_t(rankOf(op.getSource())) != rank ||
      op.getOffsets().size() != rank || op.getStrides().size() != rank)
    return b.error("source, dest, offsets and strides must agree on "
                   "the rank and element type");
  return b.kernel(KernelId::k_insert_slice)
      .integer(*dtype)
      .buffer(op.getSource())
      .shape(op.getSource())
      .buffer(op.getDest())
      .shape(op.getDest())
      .integer(rank)
      .ints(op.getOffsets())
      .ints(op.getStrides())
      .buffer(op.getResult())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::SplitOp op) {
  FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getInput());
  if (failed(dtype))
    return failure();
  int64_t axis = int64_t(op.getAxis());
  if (op.getSizes().size() != op.getNumResults())
    return b.error("has ") << op.getSizes().size() << " sizes for "
                           << op.getNumResults() << " results";
  for (auto [result, size] : llvm::zip(op.getResults(), op.getSizes()))
    if (axis >= rankOf(result) || shapeOf(result)[axis] != size)
      return b.error("result type ")
             << result.getType() << " does not match size " << size;
  return b.kernel(KernelId::k_split)
      .integer(*dtype)
      .tensor(op.getInput())
      .integer(axis)
      .ints(op.getSizes())
      .integer(op.getNumResults())
      .buffers(op.getResults())
      .done();
}

FailureOr<KernelCall> build(CallBuilder &b, nn::ConcatOp op) {
  FailureOr<gpipe_rt_dtype> dtype = b.dtype(op.getResult());
  if (failed(dtype))
    return failure();
  for (Value v : op.getInputs())
    if (rankOf(v) != rankOf(op.getResult()) ||
        cast<ShapedType>(v.getType()).getElementType() !=
            cast<ShapedType>(op.getResult().getType()).getElementType())
      return b.error("inputs must match the result's rank and element type");
  return b.kernel(KernelId::k_concat)
      .integer(*dtype)
      .integer(op.getInputs().size())
      .buffers(op.getInputs())
      .shapes(op.getInputs())
      .integer(rankOf(op.getResult()))
      .integer(op.getAxis())
      .buffer(op.getResult())
      .done();
}

} // namespace

void mlir::gpipe::kernel_calls::registerDataMovementKernels(MLIRContext *ctx) {
  attach<nn::GatherOp, build>(ctx);
  attach<nn::GatherGradOp, build>(ctx);
  attach<nn::TransposeOp, build>(ctx);
  attach<nn::SliceOp, build>(ctx);
  attach<nn::InsertSliceOp, build>(ctx);
  attach<nn::SplitOp, build>(ctx);
  attach<nn::ConcatOp, build>(ctx);
}
