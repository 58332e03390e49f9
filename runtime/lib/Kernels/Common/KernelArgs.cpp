//===- KernelArgs.cpp - Host-side argument checks of the kernels -*- C++
//-*-===//
//
// The definitions of KernelArgs.h's checks: compiled once for the CPU and
// the CUDA kernel libraries, which give the same validation and the same
// messages.
//
//===----------------------------------------------------------------------===//

#include "Common/KernelArgs.h"

#include <cmath>

namespace gpipe::rt::args {

std::ostream &operator<<(std::ostream &os, const Shape &shape) {
  os << '[';
  for (int32_t i = 0; i < shape.rank; ++i)
    os << (i ? ", " : "") << shape.dims[i];
  return os << ']';
}

Shape shapeOf(const int64_t *dims, int32_t rank) {
  Shape shape;
  shape.rank = rank;
  std::copy(dims, dims + rank, shape.dims);
  return shape;
}

gpipe_rt_status readShape(const Kernel &kernel, const char *what,
                          const int64_t *dims, int32_t rank, Shape &shape) {
  if (rank < 0 || rank > kMaxRank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << what << " has rank " << rank << ", expected 0 to " << kMaxRank;
  if (rank > 0 && !dims)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << what << " has rank " << rank << " but a null shape";
  shape.rank = rank;
  shape.numElements = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << what << " dim " << i << " is negative (" << dims[i] << ")";
    shape.dims[i] = dims[i];
  }
  // Every product of dims must fit in int64, also when another dim is 0
  // (kernels multiply sub-products of the dims).
  bool empty = false;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0) {
      empty = true;
      continue;
    }
    if (shape.numElements > std::numeric_limits<int64_t>::max() / dims[i])
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << what << " " << shape << " has more elements than int64 holds";
    shape.numElements *= dims[i];
  }
  if (empty)
    shape.numElements = 0;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkPointer(const Kernel &kernel, const char *what,
                             const void *ptr, int64_t numElements) {
  if (!ptr && numElements > 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << what << " is null but holds " << numElements << " elements";
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkCount(const Kernel &kernel, int64_t count) {
  if (count < 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "negative element count " << count;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkBuffers(const Kernel &kernel, int64_t count,
                             std::initializer_list<Buffer> buffers) {
  GPIPE_RT_TRY(checkCount(kernel, count));
  for (const Buffer &buffer : buffers)
    GPIPE_RT_TRY(checkPointer(kernel, buffer.what, buffer.data, count));
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status dtypeSize(const Kernel &kernel, gpipe_rt_dtype dtype,
                          size_t &size) {
  size = gpipe_rt_dtype_size(dtype);
  if (size == 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "unknown element type " << int(dtype);
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkIndexType(const Kernel &kernel, const char *what,
                               gpipe_rt_dtype type) {
  if (type != GPIPE_RT_I32 && type != GPIPE_RT_I64)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << what << " must be i32 or i64, got " << gpipe_rt_dtype_name(type);
  return GPIPE_RT_SUCCESS;
}

void contiguousStrides(const Shape &shape, int64_t *strides) {
  int64_t s = 1;
  for (int32_t i = shape.rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape.dims[i];
  }
}

bool broadcastStrides(const Shape &in, const Shape &out, int64_t *strides) {
  if (in.rank > out.rank)
    return false;
  int32_t lead = out.rank - in.rank;
  int64_t s = 1;
  for (int32_t i = out.rank - 1; i >= 0; --i) {
    if (i < lead) {
      strides[i] = 0;
      continue;
    }
    int64_t d = in.dims[i - lead];
    if (d != out.dims[i] && d != 1)
      return false;
    strides[i] = d == 1 ? 0 : s;
    s *= d;
  }
  return true;
}

bool broadcastShape(const Shape *shapes, int count, Shape &out) {
  out.rank = 0;
  for (int k = 0; k < count; ++k)
    out.rank = std::max(out.rank, shapes[k].rank);
  for (int32_t i = 0; i < out.rank; ++i) {
    int64_t d = 1;
    for (int k = 0; k < count; ++k) {
      int32_t j = i - (out.rank - shapes[k].rank);
      if (j < 0)
        continue;
      int64_t e = shapes[k].dims[j];
      if (e == d || e == 1)
        continue;
      if (d != 1)
        return false;
      d = e;
    }
    out.dims[i] = d;
  }
  return true;
}

std::string positionOf(const Shape &shape, int64_t flat) {
  int64_t index[kMaxRank] = {};
  for (int32_t d = shape.rank - 1; d >= 0; --d) {
    if (shape.dims[d] == 0)
      continue;
    index[d] = flat % shape.dims[d];
    flat /= shape.dims[d];
  }
  std::ostringstream os;
  os << '[';
  for (int32_t d = 0; d < shape.rank; ++d)
    os << (d ? ", " : "") << index[d];
  os << ']';
  return os.str();
}

void productsAround(const Shape &shape, int64_t axis, int64_t &outer,
                    int64_t &inner) {
  outer = 1;
  inner = 1;
  for (int32_t d = 0; d < axis; ++d)
    outer *= shape.dims[d];
  for (int32_t d = int32_t(axis) + 1; d < shape.rank; ++d)
    inner *= shape.dims[d];
}

gpipe_rt_status indexOutOfRange(const Kernel &kernel, int64_t value,
                                const Shape &indices, int64_t position,
                                int64_t bound, int64_t axis, const char *of,
                                const Shape &indexed) {
  return Error(GPIPE_RT_OUT_OF_RANGE, kernel)
         << "index " << value << " at position "
         << positionOf(indices, position) << " of indices " << indices
         << " is out of range [0, " << bound << ") for axis " << axis << of
         << indexed;
}

gpipe_rt_status labelOutOfRange(const Kernel &kernel, int64_t label,
                                const Shape &rows, int64_t position,
                                int64_t classes) {
  return Error(GPIPE_RT_OUT_OF_RANGE, kernel)
         << "label " << label << " at position " << positionOf(rows, position)
         << " is out of range [0, " << classes << ")";
}

bool fitsBlasInt(int64_t v) {
  return v >= 0 && v <= int64_t(std::numeric_limits<int>::max());
}

gpipe_rt_status checkSgemm(const Kernel &kernel, bool transA, bool transB,
                           int64_t m, int64_t n, int64_t k, const float *a,
                           int64_t lda, const float *b, int64_t ldb,
                           const float *c, int64_t ldc, int64_t batch,
                           bool &empty) {
  if (!fitsBlasInt(m) || !fitsBlasInt(n) || !fitsBlasInt(k) ||
      !fitsBlasInt(lda) || !fitsBlasInt(ldb) || !fitsBlasInt(ldc) ||
      !fitsBlasInt(batch))
    return Error(GPIPE_RT_BLAS_ERROR, kernel)
           << "sgemm arguments exceed the BLAS int range (M=" << m
           << ", N=" << n << ", K=" << k << ", lda=" << lda << ", ldb=" << ldb
           << ", ldc=" << ldc << ")";
  int64_t aCols = transA ? m : k, bCols = transB ? k : n;
  if (lda < std::max<int64_t>(1, aCols) || ldb < std::max<int64_t>(1, bCols) ||
      ldc < std::max<int64_t>(1, n))
    return Error(GPIPE_RT_BLAS_ERROR, kernel)
           << "sgemm leading dimensions too small (M=" << m << ", N=" << n
           << ", K=" << k << ", lda=" << lda << ", ldb=" << ldb
           << ", ldc=" << ldc << ")";
  empty = m == 0 || n == 0 || batch == 0;
  if (empty)
    return GPIPE_RT_SUCCESS;
  if (!c || (k > 0 && (!a || !b)))
    return Error(GPIPE_RT_BLAS_ERROR, kernel) << "sgemm with a null matrix";
  return GPIPE_RT_SUCCESS;
}

const char *binaryName(gpipe_rt_binary_op op) {
  switch (op) {
  case GPIPE_RT_ADD:
    return "add";
  case GPIPE_RT_SUB:
    return "sub";
  case GPIPE_RT_MUL:
    return "mul";
  case GPIPE_RT_DIV:
    return "div";
  case GPIPE_RT_POW:
    return "pow";
  case GPIPE_RT_MAX:
    return "max";
  case GPIPE_RT_MIN:
    return "min";
  case GPIPE_RT_REMAINDER:
    return "remainder";
  case GPIPE_RT_FMOD:
    return "fmod";
  }
  return "binary";
}

/// The broadcast and the op of binary_f32 (`integer` false) and binary_i64.
static gpipe_rt_status
checkBinaryOperands(const Kernel &kernel, gpipe_rt_binary_op op,
                    const void *lhs, const int64_t *lhsShape, int32_t lhsRank,
                    const void *rhs, const int64_t *rhsShape, int32_t rhsRank,
                    const void *out, const int64_t *outShape, int32_t outRank,
                    bool integer, BroadcastArgs<3> &args) {
  GPIPE_RT_TRY(checkBroadcast<3>(
      kernel,
      {{"lhs", lhs, lhsShape, lhsRank}, {"rhs", rhs, rhsShape, rhsRank}},
      {"result", out, outShape, outRank}, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  if (int(op) < GPIPE_RT_ADD || int(op) > GPIPE_RT_FMOD)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "unknown op " << int(op) << (integer ? " for i64 tensors" : "");
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkBinaryI64(const Kernel &kernel, gpipe_rt_binary_op op,
                               const int64_t *lhs, const int64_t *lhsShape,
                               int32_t lhsRank, const int64_t *rhs,
                               const int64_t *rhsShape, int32_t rhsRank,
                               const int64_t *out, const int64_t *outShape,
                               int32_t outRank, BroadcastArgs<3> &args) {
  return checkBinaryOperands(kernel, op, lhs, lhsShape, lhsRank, rhs, rhsShape,
                             rhsRank, out, outShape, outRank,
                             /*integer=*/true, args);
}

gpipe_rt_status checkBinary(const Kernel &kernel, gpipe_rt_binary_op op,
                            const float *lhs, const int64_t *lhsShape,
                            int32_t lhsRank, const float *rhs,
                            const int64_t *rhsShape, int32_t rhsRank,
                            const float *out, const int64_t *outShape,
                            int32_t outRank, BroadcastArgs<3> &args) {
  return checkBinaryOperands(kernel, op, lhs, lhsShape, lhsRank, rhs, rhsShape,
                             rhsRank, out, outShape, outRank,
                             /*integer=*/false, args);
}

gpipe_rt_status checkUnary(const Kernel &kernel, gpipe_rt_unary_op op,
                           const float *in, const float *out, int64_t count) {
  GPIPE_RT_TRY(checkBuffers(kernel, count, {{"input", in}, {"result", out}}));
  // The ops are numbered 0 (neg) to 11 (cos) without gaps.
  if (int(op) < GPIPE_RT_NEG || int(op) > GPIPE_RT_ROUND)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "unknown op " << int(op);
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkEqual(const Kernel &kernel, gpipe_rt_dtype dtype,
                           const void *lhs, const int64_t *lhsShape,
                           int32_t lhsRank, const void *rhs,
                           const int64_t *rhsShape, int32_t rhsRank,
                           const uint8_t *out, const int64_t *outShape,
                           int32_t outRank, BroadcastArgs<3> &args) {
  GPIPE_RT_TRY(checkBroadcast<3>(
      kernel,
      {{"lhs", lhs, lhsShape, lhsRank}, {"rhs", rhs, rhsShape, rhsRank}},
      {"result", out, outShape, outRank}, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  switch (dtype) {
  case GPIPE_RT_F32:
  case GPIPE_RT_F64:
  case GPIPE_RT_I32:
  case GPIPE_RT_I64:
  case GPIPE_RT_BOOL:
    return GPIPE_RT_SUCCESS;
  default:
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "unsupported element type " << gpipe_rt_dtype_name(dtype);
  }
}

gpipe_rt_status checkWhere(const Kernel &kernel, const uint8_t *cond,
                           const int64_t *condShape, int32_t condRank,
                           gpipe_rt_dtype dtype, const void *x,
                           const int64_t *xShape, int32_t xRank, const void *y,
                           const int64_t *yShape, int32_t yRank,
                           const void *out, const int64_t *outShape,
                           int32_t outRank, WhereArgs &args) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, args.elemSize));
  return checkBroadcast<4>(kernel,
                           {{"condition", cond, condShape, condRank},
                            {"x", x, xShape, xRank},
                            {"y", y, yShape, yRank}},
                           {"result", out, outShape, outRank}, args);
}

gpipe_rt_status checkNot(const Kernel &kernel, const uint8_t *in,
                         const uint8_t *out, int64_t count) {
  return checkBuffers(kernel, count, {{"input", in}, {"result", out}});
}

gpipe_rt_status checkCompare(const Kernel &kernel, gpipe_rt_compare_op op,
                             gpipe_rt_dtype dtype, const void *lhs,
                             const int64_t *lhsShape, int32_t lhsRank,
                             const void *rhs, const int64_t *rhsShape,
                             int32_t rhsRank, const uint8_t *out,
                             const int64_t *outShape, int32_t outRank,
                             BroadcastArgs<3> &args) {
  // The shapes, pointers and element types equal takes.
  GPIPE_RT_TRY(checkEqual(kernel, dtype, lhs, lhsShape, lhsRank, rhs, rhsShape,
                          rhsRank, out, outShape, outRank, args));
  if (args.count > 0 &&
      (int(op) < GPIPE_RT_CMP_EQ || int(op) > GPIPE_RT_CMP_GE))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "unknown op " << int(op);
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkLogical(const Kernel &kernel, gpipe_rt_logical_op op,
                             const uint8_t *lhs, const int64_t *lhsShape,
                             int32_t lhsRank, const uint8_t *rhs,
                             const int64_t *rhsShape, int32_t rhsRank,
                             const uint8_t *out, const int64_t *outShape,
                             int32_t outRank, BroadcastArgs<3> &args) {
  GPIPE_RT_TRY(checkBroadcast<3>(
      kernel,
      {{"lhs", lhs, lhsShape, lhsRank}, {"rhs", rhs, rhsShape, rhsRank}},
      {"result", out, outShape, outRank}, args));
  if (args.count > 0 && (int(op) < GPIPE_RT_AND || int(op) > GPIPE_RT_XOR))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "unknown op " << int(op);
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkCumsum(const Kernel &kernel, gpipe_rt_dtype dtype,
                            const void *in, const int64_t *shape, int32_t rank,
                            int64_t axis, const void *out, CumsumArgs &args) {
  size_t elemSize = 0;
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
  if (dtype != GPIPE_RT_F32 && dtype != GPIPE_RT_I64)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "unsupported element type " << gpipe_rt_dtype_name(dtype)
           << " (supported: f32, i64)";
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  if (axis < 0 || axis >= s.rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for " << s;
  args.n = s.dims[axis];
  productsAround(s, axis, args.outer, args.inner);
  args.count = s.numElements;
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  return checkPointer(kernel, "result", out, s.numElements);
}

gpipe_rt_status checkBroadcastTo(const Kernel &kernel, gpipe_rt_dtype dtype,
                                 const void *in, const int64_t *inShape,
                                 int32_t inRank, const void *out,
                                 const int64_t *outShape, int32_t outRank,
                                 BroadcastToArgs &args) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, args.elemSize));
  Shape src, res;
  GPIPE_RT_TRY(readShape(kernel, "input", inShape, inRank, src));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, res));
  int64_t strides[2][kMaxRank];
  contiguousStrides(res, strides[0]);
  if (!broadcastStrides(src, res, strides[1]))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "input " << src << " does not broadcast to the result shape "
           << res;
  args.plan = collapse(res, strides);
  args.count = res.numElements;
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, src.numElements));
  return checkPointer(kernel, "result", out, res.numElements);
}

gpipe_rt_status checkClip(const Kernel &kernel, const float *in,
                          const float *out, int64_t count, float lo, float hi) {
  GPIPE_RT_TRY(checkBuffers(kernel, count, {{"input", in}, {"result", out}}));
  if (!(lo <= hi))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "lo must not exceed hi, got lo " << lo << " and hi " << hi;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkClipGrad(const Kernel &kernel, const float *in,
                              const float *grad, const float *out,
                              int64_t count) {
  return checkBuffers(kernel, count,
                      {{"input", in}, {"grad", grad}, {"result", out}});
}

gpipe_rt_status checkCast(const Kernel &kernel, gpipe_rt_dtype inType,
                          const void *in, gpipe_rt_dtype outType,
                          const void *out, int64_t count) {
  GPIPE_RT_TRY(checkBuffers(kernel, count, {{"input", in}, {"result", out}}));
  auto any = [](auto) {};
  if (!withCastType(inType, any) || !withCastType(outType, any))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "unsupported conversion from " << gpipe_rt_dtype_name(inType)
           << " to " << gpipe_rt_dtype_name(outType)
           << " (supported: f32, f64, i32, i64, i1)";
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkMatmul(const Kernel &kernel, const float *lhs,
                            const int64_t *lhsShape, int32_t lhsRank,
                            const float *rhs, const int64_t *rhsShape,
                            int32_t rhsRank, int32_t transLhs, int32_t transRhs,
                            const float *out, const int64_t *outShape,
                            int32_t outRank, MatmulArgs &args) {
  Shape a, b, res;
  GPIPE_RT_TRY(readShape(kernel, "lhs", lhsShape, lhsRank, a));
  GPIPE_RT_TRY(readShape(kernel, "rhs", rhsShape, rhsRank, b));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, res));
  if (a.rank < 2 || b.rank < 2)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "operands must have rank 2 or more, got " << a << " and " << b;
  int64_t aRows = a.dims[a.rank - 2], aCols = a.dims[a.rank - 1];
  int64_t bRows = b.dims[b.rank - 2], bCols = b.dims[b.rank - 1];
  int64_t m = transLhs ? aCols : aRows, k = transLhs ? aRows : aCols;
  int64_t k2 = transRhs ? bCols : bRows, n = transRhs ? bRows : bCols;
  if (k != k2)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "inner dimensions differ: " << a
           << (transLhs ? " transposed" : "") << " and " << b
           << (transRhs ? " transposed" : "");
  // Batch shapes: everything but the matrix dims.
  Shape batches[2] = {a, b}, batch;
  batches[0].rank -= 2;
  batches[1].rank -= 2;
  if (!broadcastShape(batches, 2, batch))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "batch dims of " << a << " and " << b << " do not broadcast";
  Shape expected = batch;
  expected.dims[expected.rank++] = m;
  expected.dims[expected.rank++] = n;
  if (expected.rank > kMaxRank || expected != res)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << a << (transLhs ? " transposed" : "") << " x " << b
           << (transRhs ? " transposed" : "") << " gives " << expected
           << ", not the result shape " << res;
  args.m = m;
  args.n = n;
  args.k = k;
  args.transLhs = transLhs != 0;
  args.transRhs = transRhs != 0;
  args.lda = aCols;
  args.ldb = bCols;
  args.count = res.numElements;
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "lhs", lhs, a.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "rhs", rhs, b.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));

  batch.numElements = 1;
  for (int32_t i = 0; i < batch.rank; ++i)
    batch.numElements *= batch.dims[i];
  int64_t strides[3][kMaxRank];
  contiguousStrides(batch, strides[0]);
  broadcastStrides(batches[0], batch, strides[1]);
  broadcastStrides(batches[1], batch, strides[2]);
  args.batch = batch;
  args.plan = collapse(batch, strides);
  const StridedPlan<3> &plan = args.plan;
  bool rhsShared = true;
  for (int32_t d = 0; d < plan.rank; ++d)
    rhsShared = rhsShared && plan.strides[2][d] == 0;
  bool lhsDense = plan.rank == 0 || (plan.rank == 1 && plan.strides[1][0] == 1);
  args.foldBatch = rhsShared && lhsDense && !args.transLhs;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkGemm(const Kernel &kernel, const float *a,
                          const int64_t *aShape, const float *b,
                          const int64_t *bShape, const float *c,
                          const int64_t *cShape, int32_t cRank, float beta,
                          int32_t transA, int32_t transB, const float *out,
                          const int64_t *outShape, GemmArgs &args) {
  Shape as, bs, cs, &res = args.result;
  GPIPE_RT_TRY(readShape(kernel, "a", aShape, 2, as));
  GPIPE_RT_TRY(readShape(kernel, "b", bShape, 2, bs));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, 2, res));
  int64_t m = transA ? as.dims[1] : as.dims[0];
  int64_t k = transA ? as.dims[0] : as.dims[1];
  int64_t k2 = transB ? bs.dims[1] : bs.dims[0];
  int64_t n = transB ? bs.dims[0] : bs.dims[1];
  if (k != k2)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "inner dimensions differ: a " << as
           << (transA ? " (transposed)" : "") << " and b " << bs
           << (transB ? " (transposed)" : "");
  if (res.dims[0] != m || res.dims[1] != n)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "product is [" << m << ", " << n << "], not the result shape "
           << res;
  GPIPE_RT_TRY(checkPointer(kernel, "a", a, as.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "b", b, bs.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));
  if (c) {
    GPIPE_RT_TRY(readShape(kernel, "c", cShape, cRank, cs));
    contiguousStrides(res, args.resultStrides);
    if (!broadcastStrides(cs, res, args.cStrides))
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "c " << cs << " does not broadcast to the result " << res;
    args.cInPlace = c == out;
    if (args.cInPlace && cs != res)
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "c is the result's buffer but has shape " << cs
             << ", not the result's " << res;
    args.beta = beta;
  }
  args.m = m;
  args.n = n;
  args.k = k;
  args.lda = leadingDim(as.dims[1]);
  args.ldb = leadingDim(bs.dims[1]);
  args.ldc = leadingDim(n);
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkLinear(const Kernel &kernel, const float *input,
                            const int64_t *inputShape, int32_t inputRank,
                            const float *weight, const int64_t *weightShape,
                            int32_t transposeWeight, const float *out,
                            const int64_t *outShape, int32_t outRank,
                            LinearArgs &args) {
  Shape in, w, res;
  GPIPE_RT_TRY(readShape(kernel, "input", inputShape, inputRank, in));
  GPIPE_RT_TRY(readShape(kernel, "weight", weightShape, 2, w));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, res));
  if (in.rank < 1)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "input must have rank 1 or more";
  int64_t inF = in.dims[in.rank - 1];
  int64_t wIn = transposeWeight ? w.dims[1] : w.dims[0];
  int64_t outF = transposeWeight ? w.dims[0] : w.dims[1];
  if (inF != wIn)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "input " << in << " has " << inF << " features but weight " << w
           << (transposeWeight ? " ([out, in])" : " ([in, out])") << " takes "
           << wIn;
  Shape expected = in;
  expected.dims[expected.rank - 1] = outF;
  if (expected != res)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "result should be " << expected << ", got " << res;
  args.count = res.numElements;
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", input, in.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "weight", weight, w.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));
  args.rows = res.numElements / outF;
  args.inFeatures = inF;
  args.outFeatures = outF;
  args.weightLd = leadingDim(w.dims[1]);
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status splitAtAxis(const Kernel &kernel, const Shape &s, int64_t axis,
                            AxisSplit &split) {
  if (axis < 0 || axis >= std::max<int64_t>(s.rank, 1) ||
      (s.rank == 0 && axis != 0))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for " << s;
  split.n = s.rank ? s.dims[axis] : 1;
  productsAround(s, axis, split.outer, split.inner);
  split.count = s.numElements;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkSoftmax(const Kernel &kernel, const float *in,
                             const int64_t *shape, int32_t rank, int64_t axis,
                             const float *out, AxisSplit &args) {
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  GPIPE_RT_TRY(splitAtAxis(kernel, s, axis, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  return checkPointer(kernel, "result", out, s.numElements);
}

gpipe_rt_status checkAttention(
    const Kernel &kernel, const float *q, const float *k, const float *v,
    const int64_t *qShape, int32_t rank, int64_t keys, int64_t valueDim,
    const float *bias, const int64_t *biasShape, int32_t biasRank, float scale,
    const float *grad, float *const *outs, int numOuts, AttentionArgs &args) {
  Shape qs;
  GPIPE_RT_TRY(readShape(kernel, "q", qShape, rank, qs));
  if (qs.rank < 2)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "q needs a row and a feature dim, got " << qs;
  if (keys < 0 || valueDim < 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "keys (" << keys << ") and value dim (" << valueDim
           << ") must be non-negative";
  if (!std::isfinite(scale))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "scale must be finite, got " << scale;
  args = AttentionArgs();
  args.leadingRank = qs.rank - 2;
  args.count = 1;
  for (int32_t d = 0; d < args.leadingRank; ++d) {
    args.leading[d] = qs.dims[d];
    args.count *= qs.dims[d];
  }
  args.rows = qs.dims[qs.rank - 2];
  args.depth = qs.dims[qs.rank - 1];
  args.keys = keys;
  args.valueDim = valueDim;
  // The scores' shape, [leading..., T, S], which the bias broadcasts to.
  Shape scores = qs;
  scores.dims[qs.rank - 1] = keys;
  scores.numElements = args.count * args.rows * keys;
  if (bias) {
    Shape bs;
    GPIPE_RT_TRY(readShape(kernel, "bias", biasShape, biasRank, bs));
    if (!broadcastStrides(bs, scores, args.biasStrides))
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "bias " << bs << " does not broadcast to the scores " << scores;
    args.hasBias = true;
    GPIPE_RT_TRY(checkPointer(kernel, "bias", bias, bs.numElements));
  }
  int64_t qCount = args.count * args.rows * args.depth;
  int64_t kCount = args.count * keys * args.depth;
  int64_t vCount = args.count * keys * valueDim;
  int64_t outCount = args.count * args.rows * valueDim;
  GPIPE_RT_TRY(checkPointer(kernel, "q", q, qCount));
  GPIPE_RT_TRY(checkPointer(kernel, "k", k, kCount));
  GPIPE_RT_TRY(checkPointer(kernel, "v", v, vCount));
  if (!grad)
    return checkPointer(kernel, "result", numOuts > 0 ? outs[0] : nullptr,
                        outCount);
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, outCount));
  const char *names[3] = {"q gradient", "k gradient", "v gradient"};
  int64_t counts[3] = {qCount, kCount, vCount};
  for (int i = 0; i < 3; ++i)
    GPIPE_RT_TRY(checkPointer(kernel, names[i], i < numOuts ? outs[i] : nullptr,
                              counts[i]));
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkSoftmaxGrad(const Kernel &kernel, const float *output,
                                 const float *grad, const int64_t *shape,
                                 int32_t rank, int64_t axis, const float *out,
                                 AxisSplit &args) {
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  GPIPE_RT_TRY(splitAtAxis(kernel, s, axis, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "output", output, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, s.numElements));
  return checkPointer(kernel, "result", out, s.numElements);
}

gpipe_rt_status splitNormalized(const Kernel &kernel, const Shape &s,
                                int64_t axis, float epsilon, RowSplit &split) {
  if (axis < 0 || axis > s.rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for " << s;
  if (!(epsilon >= 0.0f))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "epsilon must be non-negative, got " << epsilon;
  split.rows = 1;
  split.n = 1;
  for (int32_t d = 0; d < axis; ++d)
    split.rows *= s.dims[d];
  for (int32_t d = int32_t(axis); d < s.rank; ++d)
    split.n *= s.dims[d];
  split.count = s.numElements;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkLayerNorm(const Kernel &kernel, const float *in,
                               const int64_t *shape, int32_t rank, int64_t axis,
                               const float *scale, float epsilon,
                               const float *out, RowSplit &args) {
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  GPIPE_RT_TRY(splitNormalized(kernel, s, axis, epsilon, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "scale", scale, args.n));
  return checkPointer(kernel, "result", out, s.numElements);
}

gpipe_rt_status checkLayerNormGrad(const Kernel &kernel, const float *in,
                                   const int64_t *shape, int32_t rank,
                                   int64_t axis, const float *scale,
                                   const float *grad, float epsilon,
                                   RowSplit &args) {
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  GPIPE_RT_TRY(splitNormalized(kernel, s, axis, epsilon, args));
  if (args.n == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "scale", scale, args.n));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  return checkPointer(kernel, "grad", grad, s.numElements);
}

bool sliceFits(int64_t off, int64_t size, int64_t step, int64_t dim) {
  if (step <= 0 || off < 0)
    return false;
  if (size == 0)
    return off <= dim;
  return off < dim && (size - 1) <= (dim - 1 - off) / step;
}

gpipe_rt_status checkGather(const Kernel &kernel, gpipe_rt_dtype dtype,
                            const int64_t *dataShape, int32_t dataRank,
                            gpipe_rt_dtype indexType, const void *indices,
                            const int64_t *indicesShape, int32_t indicesRank,
                            int64_t axis, GatherArgs &args) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, args.elemSize));
  GPIPE_RT_TRY(checkIndexType(kernel, "indices", indexType));
  Shape &ds = args.data, &is = args.indices;
  GPIPE_RT_TRY(readShape(kernel, "data", dataShape, dataRank, ds));
  GPIPE_RT_TRY(readShape(kernel, "indices", indicesShape, indicesRank, is));
  if (axis < 0 || axis >= ds.rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for data " << ds;
  if (ds.rank - 1 + is.rank > kMaxRank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "result rank " << ds.rank - 1 + is.rank << " exceeds "
           << kMaxRank;
  args.axisDim = ds.dims[axis];
  productsAround(ds, axis, args.outer, args.inner);
  return checkPointer(kernel, "indices", indices, is.numElements);
}

gpipe_rt_status checkGatherResult(const Kernel &kernel, const void *data,
                                  const void *out, GatherArgs &args) {
  const Shape &ds = args.data, &is = args.indices;
  if (is.numElements > 0 &&
      args.outer * args.inner >
          std::numeric_limits<int64_t>::max() / is.numElements)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "result of gathering " << is << " from " << ds
           << " has more elements than int64 holds";
  args.count = args.outer * is.numElements * args.inner;
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "data", data, ds.numElements));
  return checkPointer(kernel, "result", out, args.count);
}

gpipe_rt_status gatherIndexOutOfRange(const Kernel &kernel, int64_t value,
                                      const Shape &indices, int64_t position,
                                      int64_t axis, const Shape &data) {
  return indexOutOfRange(kernel, value, indices, position, data.dims[axis],
                         axis, " of data ", data);
}

gpipe_rt_status checkTranspose(const Kernel &kernel, gpipe_rt_dtype dtype,
                               const void *in, const int64_t *shape,
                               int32_t rank, const int64_t *perm,
                               const void *out, CopyArgs &args) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, args.elemSize));
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  if (s.rank > 0 && !perm)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "null permutation";
  bool seen[kMaxRank] = {};
  for (int32_t i = 0; i < s.rank; ++i) {
    if (perm[i] < 0 || perm[i] >= s.rank || seen[perm[i]]) {
      Error error(GPIPE_RT_INVALID_ARGUMENT, kernel);
      error << "perm [";
      for (int32_t j = 0; j < s.rank; ++j)
        error << (j ? ", " : "") << perm[j];
      return error << "] is not a permutation of " << s.rank << " dims";
    }
    seen[perm[i]] = true;
  }
  args.space = s;
  if (s.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, s.numElements));
  int64_t inStrides[kMaxRank];
  contiguousStrides(s, inStrides);
  for (int32_t i = 0; i < s.rank; ++i) {
    args.space.dims[i] = s.dims[perm[i]];
    args.srcStrides[i] = inStrides[perm[i]];
  }
  contiguousStrides(args.space, args.dstStrides);
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkSlice(const Kernel &kernel, gpipe_rt_dtype dtype,
                           const void *in, const int64_t *shape, int32_t rank,
                           const int64_t *offsets, const int64_t *sizes,
                           const int64_t *strides, const void *out,
                           CopyArgs &args) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, args.elemSize));
  Shape s, &res = args.space;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  if (s.rank > 0 && (!offsets || !strides))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "null offsets or strides";
  GPIPE_RT_TRY(readShape(kernel, "sizes", sizes, rank, res));
  int64_t inStrides[kMaxRank];
  contiguousStrides(s, inStrides);
  contiguousStrides(res, args.dstStrides);
  args.base = 0;
  for (int32_t i = 0; i < s.rank; ++i) {
    if (!sliceFits(offsets[i], sizes[i], strides[i], s.dims[i]))
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "dim " << i << ": offset " << offsets[i] << ", size "
             << sizes[i] << ", stride " << strides[i] << " do not fit in "
             << s.dims[i] << " (input " << s << ")";
    args.base += offsets[i] * inStrides[i];
    args.srcStrides[i] = inStrides[i] * strides[i];
  }
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  return checkPointer(kernel, "result", out, res.numElements);
}

gpipe_rt_status checkInsertSlice(const Kernel &kernel, gpipe_rt_dtype dtype,
                                 const void *source, const int64_t *sourceShape,
                                 const void *dest, const int64_t *destShape,
                                 int32_t rank, const int64_t *offsets,
                                 const int64_t *strides, const void *out,
                                 InsertSliceArgs &args) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, args.elemSize));
  Shape &src = args.space, dst;
  GPIPE_RT_TRY(readShape(kernel, "source", sourceShape, rank, src));
  GPIPE_RT_TRY(readShape(kernel, "dest", destShape, rank, dst));
  if (dst.rank > 0 && (!offsets || !strides))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "null offsets or strides";
  int64_t destStrides[kMaxRank];
  contiguousStrides(dst, destStrides);
  contiguousStrides(src, args.srcStrides);
  args.base = 0;
  for (int32_t i = 0; i < dst.rank; ++i) {
    if (!sliceFits(offsets[i], src.dims[i], strides[i], dst.dims[i]))
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "dim " << i << ": offset " << offsets[i] << ", size "
             << src.dims[i] << ", stride " << strides[i] << " do not fit in "
             << dst.dims[i] << " (source " << src << ", dest " << dst << ")";
    args.base += offsets[i] * destStrides[i];
    args.dstStrides[i] = destStrides[i] * strides[i];
  }
  args.destCount = dst.numElements;
  if (dst.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "dest", dest, dst.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, dst.numElements));
  return checkPointer(kernel, "source", source, src.numElements);
}

gpipe_rt_status checkSplit(const Kernel &kernel, gpipe_rt_dtype dtype,
                           const void *in, const int64_t *shape, int32_t rank,
                           int64_t axis, const int64_t *sizes,
                           int32_t numOutputs, void *const *outs,
                           PartsArgs &args) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, args.elemSize));
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  if (axis < 0 || axis >= s.rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for " << s;
  if (numOutputs < 1 || !sizes || !outs)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "expected at least one output with its size";
  int64_t total = 0;
  for (int32_t i = 0; i < numOutputs; ++i) {
    if (sizes[i] < 0 || sizes[i] > s.dims[axis] - total)
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "sizes do not sum to dim " << axis << " of " << s;
    total += sizes[i];
  }
  if (total != s.dims[axis])
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "sizes sum to " << total << ", not to dim " << axis << " of "
           << s;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  contiguousStrides(s, args.wholeStrides);
  args.parts.assign(static_cast<size_t>(numOutputs), Part());
  int64_t offset = 0;
  for (int32_t i = 0; i < numOutputs; ++i) {
    Part &part = args.parts[size_t(i)];
    part.shape = s;
    part.shape.dims[axis] = sizes[i];
    part.shape.numElements =
        s.dims[axis] ? s.numElements / s.dims[axis] * sizes[i] : 0;
    GPIPE_RT_TRY(
        checkPointer(kernel, "result", outs[i], part.shape.numElements));
    contiguousStrides(part.shape, part.strides);
    part.offset = offset * args.wholeStrides[axis];
    offset += sizes[i];
  }
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkConcat(const Kernel &kernel, gpipe_rt_dtype dtype,
                            int32_t numInputs, const void *const *inputs,
                            const int64_t *const *shapes, int32_t rank,
                            int64_t axis, const void *out, PartsArgs &args) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, args.elemSize));
  if (numInputs < 1 || !inputs || !shapes)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "expected at least one input";
  args.parts.assign(static_cast<size_t>(numInputs), Part());
  for (int32_t i = 0; i < numInputs; ++i)
    GPIPE_RT_TRY(readShape(kernel, "input", shapes[i], rank,
                           args.parts[size_t(i)].shape));
  if (axis < 0 || axis >= rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for rank " << rank;
  const Shape &first = args.parts[0].shape;
  Shape res = first;
  res.dims[axis] = 0;
  for (int32_t i = 0; i < numInputs; ++i) {
    const Shape &s = args.parts[size_t(i)].shape;
    for (int32_t d = 0; d < rank; ++d)
      if (d != axis && s.dims[d] != res.dims[d])
        return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
               << "input " << i << " " << s << " does not match input 0 "
               << first << " outside axis " << axis;
    if (s.dims[axis] > std::numeric_limits<int64_t>::max() - res.dims[axis])
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "result too large";
    res.dims[axis] += s.dims[axis];
  }
  contiguousStrides(res, args.wholeStrides);
  int64_t offset = 0;
  for (int32_t i = 0; i < numInputs; ++i) {
    Part &part = args.parts[size_t(i)];
    GPIPE_RT_TRY(
        checkPointer(kernel, "input", inputs[i], part.shape.numElements));
    if (part.shape.numElements > 0)
      GPIPE_RT_TRY(checkPointer(kernel, "result", out, 1));
    contiguousStrides(part.shape, part.strides);
    part.offset = offset * args.wholeStrides[axis];
    offset += part.shape.dims[axis];
  }
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkCopy(const Kernel &kernel, gpipe_rt_dtype dtype,
                          const void *in, const void *out, int64_t count,
                          size_t &elemSize) {
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
  return checkBuffers(kernel, count, {{"input", in}, {"result", out}});
}

gpipe_rt_status splitLogits(const Kernel &kernel, const int64_t *logitsShape,
                            int32_t logitsRank, gpipe_rt_dtype labelType,
                            LogitsArgs &args) {
  Shape &s = args.logits;
  GPIPE_RT_TRY(readShape(kernel, "logits", logitsShape, logitsRank, s));
  GPIPE_RT_TRY(checkIndexType(kernel, "labels", labelType));
  if (s.rank < 1)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "logits must have a class dim";
  args.rowShape = s;
  --args.rowShape.rank;
  args.classes = s.dims[s.rank - 1];
  args.rows = 1;
  for (int32_t d = 0; d < args.rowShape.rank; ++d)
    args.rows *= args.rowShape.dims[d];
  args.rowShape.numElements = args.rows;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkCrossEntropy(const Kernel &kernel,
                                  const int64_t *logitsShape,
                                  int32_t logitsRank, gpipe_rt_dtype labelType,
                                  const void *labels, const float *loss,
                                  LogitsArgs &args) {
  GPIPE_RT_TRY(splitLogits(kernel, logitsShape, logitsRank, labelType, args));
  if (!loss)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "null loss";
  return checkPointer(kernel, "labels", labels, args.rows);
}

gpipe_rt_status checkCrossEntropyGrad(const Kernel &kernel,
                                      const int64_t *logitsShape,
                                      int32_t logitsRank,
                                      gpipe_rt_dtype labelType,
                                      const void *labels, LogitsArgs &args) {
  GPIPE_RT_TRY(splitLogits(kernel, logitsShape, logitsRank, labelType, args));
  return checkPointer(kernel, "labels", labels, args.rows);
}

gpipe_rt_status checkCrossEntropyGradResult(const Kernel &kernel,
                                            const float *logits,
                                            const float *out,
                                            const LogitsArgs &args) {
  if (args.logits.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "logits", logits, args.logits.numElements));
  return checkPointer(kernel, "result", out, args.logits.numElements);
}

gpipe_rt_status checkMse(const Kernel &kernel, const float *input,
                         const float *target, int64_t count,
                         const float *loss) {
  GPIPE_RT_TRY(
      checkBuffers(kernel, count, {{"input", input}, {"target", target}}));
  if (!loss)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "null loss";
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkReduceSum(const Kernel &kernel, const float *in,
                               const int64_t *shape, int32_t rank,
                               const int64_t *axes, int32_t numAxes,
                               const float *out, ReduceArgs &args) {
  Shape &s = args.input;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  if (numAxes < 0 || numAxes > s.rank || (numAxes > 0 && !axes))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << numAxes << " axes for input " << s;
  for (int32_t i = 0; i < numAxes; ++i) {
    if (axes[i] < 0 || axes[i] >= s.rank || (i > 0 && axes[i] <= axes[i - 1]))
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "axes must be sorted, distinct and below rank " << s.rank
             << " (axis " << axes[i] << " at position " << i << ")";
    args.reduced[axes[i]] = true;
  }
  args.outputs = 1;
  for (int32_t d = 0; d < s.rank; ++d)
    if (!args.reduced[d])
      args.outputs *= s.dims[d];
  if (args.outputs == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, args.outputs));
  return checkPointer(kernel, "input", in, s.numElements);
}

gpipe_rt_status checkGatherGrad(const Kernel &kernel, gpipe_rt_dtype indexType,
                                const void *indices,
                                const int64_t *indicesShape,
                                int32_t indicesRank, const int64_t *gradShape,
                                int32_t gradRank, int64_t axis,
                                const int64_t *outShape, int32_t outRank,
                                GatherGradArgs &args) {
  GPIPE_RT_TRY(checkIndexType(kernel, "indices", indexType));
  Shape &is = args.indices, &gs = args.grad, &os = args.result;
  GPIPE_RT_TRY(readShape(kernel, "indices", indicesShape, indicesRank, is));
  GPIPE_RT_TRY(readShape(kernel, "grad", gradShape, gradRank, gs));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, os));
  if (axis < 0 || axis >= os.rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for result " << os;
  // grad must be out.shape[:axis] + indices.shape + out.shape[axis+1:].
  Shape expected;
  bool fits = os.rank - 1 + is.rank <= kMaxRank;
  if (fits) {
    for (int32_t d = 0; d < axis; ++d)
      expected.dims[expected.rank++] = os.dims[d];
    for (int32_t d = 0; d < is.rank; ++d)
      expected.dims[expected.rank++] = is.dims[d];
    for (int32_t d = int32_t(axis) + 1; d < os.rank; ++d)
      expected.dims[expected.rank++] = os.dims[d];
  }
  if (!fits || expected != gs)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "grad " << gs << " does not have the shape of gathering " << is
           << " along axis " << axis << " of " << os;
  args.axisDim = os.dims[axis];
  productsAround(os, axis, args.outer, args.inner);
  return checkPointer(kernel, "indices", indices, is.numElements);
}

gpipe_rt_status checkGatherGradResult(const Kernel &kernel, const float *grad,
                                      const float *out,
                                      const GatherGradArgs &args) {
  if (args.result.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, args.result.numElements));
  return checkPointer(kernel, "grad", grad, args.grad.numElements);
}

gpipe_rt_status gatherGradIndexOutOfRange(const Kernel &kernel, int64_t value,
                                          const Shape &indices,
                                          int64_t position, int64_t axis,
                                          const Shape &result) {
  return indexOutOfRange(kernel, value, indices, position, result.dims[axis],
                         axis, " of ", result);
}

gpipe_rt_status checkGeluGrad(const Kernel &kernel, const float *in,
                              const float *grad, const float *out,
                              int64_t count) {
  return checkBuffers(kernel, count,
                      {{"input", in}, {"grad", grad}, {"result", out}});
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch normalization
//===----------------------------------------------------------------------===//

namespace {

/// Attributes beyond this are refused, so no product of them overflows.
constexpr int64_t kMaxWindowAttr = std::numeric_limits<int32_t>::max();

/// Reads an NCHW shape (rank 4, implied by the kernel's ABI).
gpipe_rt_status readImages(const Kernel &kernel, const char *what,
                           const int64_t *dims, Shape &shape) {
  if (!dims)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << what << " is null";
  return readShape(kernel, what, dims, 4, shape);
}

/// One [h, w] pair of window attributes: each in [min, kMaxWindowAttr].
gpipe_rt_status readPair(const Kernel &kernel, const char *what,
                         const int64_t *values, int64_t min, const char *must,
                         int64_t (&pair)[2]) {
  if (!values)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << what << " is null";
  for (int i = 0; i < 2; ++i) {
    if (values[i] < min || values[i] > kMaxWindowAttr)
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << what << " [" << values[0] << ", " << values[1] << "] must be "
             << must << " (and at most " << kMaxWindowAttr << ")";
    pair[i] = values[i];
  }
  return GPIPE_RT_SUCCESS;
}

/// The window [kh, kw] (positive), strides (positive), pads [top, left,
/// bottom, right] (non-negative) and dilations (positive; all 1 when null).
gpipe_rt_status readWindow(const Kernel &kernel, const int64_t *kernelDims,
                           const int64_t *strides, const int64_t *pads,
                           const int64_t *dilations, Window2d &a) {
  int64_t k[2] = {}, s[2] = {}, d[2] = {1, 1}, p0[2] = {}, p1[2] = {};
  GPIPE_RT_TRY(readPair(kernel, "kernel", kernelDims, 1, "positive", k));
  GPIPE_RT_TRY(readPair(kernel, "strides", strides, 1, "positive", s));
  if (!pads)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "pads is null";
  for (int i = 0; i < 4; ++i)
    if (pads[i] < 0 || pads[i] > kMaxWindowAttr)
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "pads [" << pads[0] << ", " << pads[1] << ", " << pads[2]
             << ", " << pads[3] << "] (top, left, bottom, right) must be "
             << "non-negative (and at most " << kMaxWindowAttr << ")";
  p0[0] = pads[0];
  p0[1] = pads[1];
  p1[0] = pads[2];
  p1[1] = pads[3];
  if (dilations)
    GPIPE_RT_TRY(readPair(kernel, "dilations", dilations, 1, "positive", d));
  a.kh = k[0];
  a.kw = k[1];
  a.strideH = s[0];
  a.strideW = s[1];
  a.padTop = p0[0];
  a.padLeft = p0[1];
  a.padBottom = p1[0];
  a.padRight = p1[1];
  a.dilationH = d[0];
  a.dilationW = d[1];
  return GPIPE_RT_SUCCESS;
}

/// Checks the result's size along one spatial dim against the ONNX
/// Conv/MaxPool/AveragePool formula: floor((size + before + after -
/// ((k - 1) * d + 1)) / s) + 1, or ceil instead of floor (ceil_mode), where
/// a last window starting past the input and its leading padding is dropped
/// (as PyTorch does). Either is accepted.
gpipe_rt_status checkOutputDim(const Kernel &kernel, const char *dim,
                               int64_t size, int64_t before, int64_t after,
                               int64_t k, int64_t s, int64_t d, int64_t out) {
  int64_t extent = (k - 1) * d + 1;
  int64_t span = size + before + after - extent;
  if (span < 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "the window spans " << extent << " along the " << dim
           << ", more than the padded input's " << size + before + after;
  int64_t floorOut = span / s + 1;
  int64_t ceilOut = (span + s - 1) / s + 1;
  if ((ceilOut - 1) * s >= size + before)
    --ceilOut;
  if (out != floorOut && out != ceilOut)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "result " << dim << " " << out << " is neither the floor ("
           << floorOut << ") nor the ceil (" << ceilOut
           << ") of the window count for input " << dim << " " << size;
  return GPIPE_RT_SUCCESS;
}

/// Both spatial dims of the result `out` ([n, outC, oh, ow]) against the
/// images `in` and the window; fills the sizes of `a`.
gpipe_rt_status checkSpatial(const Kernel &kernel, const Shape &in,
                             const Shape &out, Window2d &a) {
  GPIPE_RT_TRY(checkOutputDim(kernel, "height", in.dims[2], a.padTop,
                              a.padBottom, a.kh, a.strideH, a.dilationH,
                              out.dims[2]));
  GPIPE_RT_TRY(checkOutputDim(kernel, "width", in.dims[3], a.padLeft,
                              a.padRight, a.kw, a.strideW, a.dilationW,
                              out.dims[3]));
  a.n = in.dims[0];
  a.c = in.dims[1];
  a.h = in.dims[2];
  a.w = in.dims[3];
  a.outC = out.dims[1];
  a.oh = out.dims[2];
  a.ow = out.dims[3];
  a.inCount = in.numElements;
  a.outCount = out.numElements;
  return GPIPE_RT_SUCCESS;
}

/// The shapes of a convolution: images, weight [O, C / groups, kh, kw] and
/// result (or its gradient) [N, O, OH, OW].
gpipe_rt_status checkConvShapes(const Kernel &kernel, const int64_t *inShape,
                                const int64_t *weightShape, const char *outWhat,
                                const int64_t *outShape, const int64_t *strides,
                                const int64_t *pads, const int64_t *dilations,
                                int64_t groups, Window2d &a) {
  Shape in, weight, out;
  GPIPE_RT_TRY(readImages(kernel, "input shape", inShape, in));
  GPIPE_RT_TRY(readImages(kernel, "weight shape", weightShape, weight));
  GPIPE_RT_TRY(readImages(kernel, outWhat, outShape, out));
  if (groups < 1)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "groups must be positive, got " << groups;
  if (weight.dims[0] % groups != 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "the weight's " << weight.dims[0]
           << " output channels are not divisible by groups " << groups;
  if (weight.dims[1] > std::numeric_limits<int64_t>::max() / groups ||
      weight.dims[1] * groups != in.dims[1])
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "input " << in << " has " << in.dims[1]
           << " channels, but weight " << weight << " with groups " << groups
           << " takes " << weight.dims[1] << " x " << groups;
  if (out.dims[0] != in.dims[0] || out.dims[1] != weight.dims[0])
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << outWhat << " " << out << " does not match input " << in
           << " and weight " << weight << " (expected [" << in.dims[0] << ", "
           << weight.dims[0] << ", OH, OW])";
  GPIPE_RT_TRY(
      readWindow(kernel, weight.dims + 2, strides, pads, dilations, a));
  GPIPE_RT_TRY(checkSpatial(kernel, in, out, a));
  a.groups = groups;
  a.groupIn = weight.dims[1];
  a.groupOut = weight.dims[0] / groups;
  a.weightCount = weight.numElements;
  return GPIPE_RT_SUCCESS;
}

/// The shapes of a pool: images and result [N, C, OH, OW].
gpipe_rt_status checkPoolShapes(const Kernel &kernel, const int64_t *inShape,
                                const char *outWhat, const int64_t *outShape,
                                const int64_t *kernelDims,
                                const int64_t *strides, const int64_t *pads,
                                const int64_t *dilations, Window2d &a) {
  Shape in, out;
  GPIPE_RT_TRY(readImages(kernel, "input shape", inShape, in));
  GPIPE_RT_TRY(readImages(kernel, outWhat, outShape, out));
  if (out.dims[0] != in.dims[0] || out.dims[1] != in.dims[1])
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << outWhat << " " << out << " does not match input " << in
           << " (expected [" << in.dims[0] << ", " << in.dims[1]
           << ", OH, OW])";
  GPIPE_RT_TRY(readWindow(kernel, kernelDims, strides, pads, dilations, a));
  return checkSpatial(kernel, in, out, a);
}

/// [N, C, ...] as images, channels and positions.
gpipe_rt_status splitChannels(const Kernel &kernel, const int64_t *shape,
                              int32_t rank, float epsilon,
                              ChannelSplit &split) {
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  if (rank < 2)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "input " << s << " must have rank >= 2 ([N, C, ...])";
  if (!(epsilon >= 0.0f))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "epsilon must be non-negative, got " << epsilon;
  split.n = s.dims[0];
  split.c = s.dims[1];
  split.inner = 1;
  for (int32_t d = 2; d < rank; ++d)
    split.inner *= s.dims[d];
  split.count = s.numElements;
  return GPIPE_RT_SUCCESS;
}

} // namespace

gpipe_rt_status checkConv2d(const Kernel &kernel, const float *in,
                            const int64_t *inShape, const float *weight,
                            const int64_t *weightShape, const float *bias,
                            const int64_t *strides, const int64_t *pads,
                            const int64_t *dilations, int64_t groups,
                            const float *out, const int64_t *outShape,
                            Window2d &args) {
  GPIPE_RT_TRY(checkConvShapes(kernel, inShape, weightShape, "result shape",
                               outShape, strides, pads, dilations, groups,
                               args));
  if (args.outCount == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, args.inCount));
  GPIPE_RT_TRY(checkPointer(kernel, "weight", weight, args.weightCount));
  return checkPointer(kernel, "result", out, args.outCount);
}

gpipe_rt_status checkConv2dGrad(const Kernel &kernel, const float *in,
                                const int64_t *inShape, const float *weight,
                                const int64_t *weightShape, const float *grad,
                                const int64_t *gradShape,
                                const int64_t *strides, const int64_t *pads,
                                const int64_t *dilations, int64_t groups,
                                const float *inputGrad, const float *weightGrad,
                                const float *biasGrad, Window2d &args) {
  GPIPE_RT_TRY(checkConvShapes(kernel, inShape, weightShape, "grad shape",
                               gradShape, strides, pads, dilations, groups,
                               args));
  if (weightGrad)
    GPIPE_RT_TRY(checkPointer(kernel, "input", in, args.inCount));
  if (inputGrad)
    GPIPE_RT_TRY(checkPointer(kernel, "weight", weight, args.weightCount));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, args.outCount));
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkMaxPool2d(const Kernel &kernel, const float *in,
                               const int64_t *inShape,
                               const int64_t *kernelDims,
                               const int64_t *strides, const int64_t *pads,
                               const int64_t *dilations, const float *out,
                               const int64_t *outShape, Window2d &args) {
  GPIPE_RT_TRY(checkPoolShapes(kernel, inShape, "result shape", outShape,
                               kernelDims, strides, pads, dilations, args));
  if (args.outCount == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, args.inCount));
  return checkPointer(kernel, "result", out, args.outCount);
}

gpipe_rt_status checkMaxPool2dGrad(const Kernel &kernel, const float *in,
                                   const int64_t *inShape, const float *grad,
                                   const int64_t *gradShape,
                                   const int64_t *kernelDims,
                                   const int64_t *strides, const int64_t *pads,
                                   const int64_t *dilations,
                                   const float *inputGrad, Window2d &args) {
  GPIPE_RT_TRY(checkPoolShapes(kernel, inShape, "grad shape", gradShape,
                               kernelDims, strides, pads, dilations, args));
  if (args.inCount == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, args.inCount));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, args.outCount));
  return checkPointer(kernel, "input grad", inputGrad, args.inCount);
}

gpipe_rt_status checkAvgPool2d(const Kernel &kernel, const float *in,
                               const int64_t *inShape,
                               const int64_t *kernelDims,
                               const int64_t *strides, const int64_t *pads,
                               const float *out, const int64_t *outShape,
                               Window2d &args) {
  GPIPE_RT_TRY(checkPoolShapes(kernel, inShape, "result shape", outShape,
                               kernelDims, strides, pads, nullptr, args));
  if (args.outCount == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, args.inCount));
  return checkPointer(kernel, "result", out, args.outCount);
}

gpipe_rt_status checkAvgPool2dGrad(const Kernel &kernel, const float *grad,
                                   const int64_t *gradShape,
                                   const int64_t *kernelDims,
                                   const int64_t *strides, const int64_t *pads,
                                   const float *inputGrad,
                                   const int64_t *inShape, Window2d &args) {
  GPIPE_RT_TRY(checkPoolShapes(kernel, inShape, "grad shape", gradShape,
                               kernelDims, strides, pads, nullptr, args));
  if (args.inCount == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, args.outCount));
  return checkPointer(kernel, "input grad", inputGrad, args.inCount);
}

gpipe_rt_status checkBatchNorm(const Kernel &kernel, const float *in,
                               const int64_t *shape, int32_t rank,
                               const float *scale, const float *bias,
                               float epsilon, const float *out,
                               ChannelSplit &args) {
  GPIPE_RT_TRY(splitChannels(kernel, shape, rank, epsilon, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, args.count));
  GPIPE_RT_TRY(checkPointer(kernel, "scale", scale, args.c));
  GPIPE_RT_TRY(checkPointer(kernel, "bias", bias, args.c));
  return checkPointer(kernel, "result", out, args.count);
}

gpipe_rt_status checkBatchNormGrad(
    const Kernel &kernel, const float *in, const int64_t *shape, int32_t rank,
    const float *scale, const float *grad, float epsilon, const float *shift,
    const float *inputGrad, const float *scaleGrad, const float *biasGrad,
    const float *meanStat, const float *varStat, ChannelSplit &args) {
  GPIPE_RT_TRY(splitChannels(kernel, shape, rank, epsilon, args));
  if (args.c == 0)
    return GPIPE_RT_SUCCESS;
  if (inputGrad)
    GPIPE_RT_TRY(checkPointer(kernel, "scale", scale, args.c));
  if (meanStat || varStat)
    GPIPE_RT_TRY(checkPointer(kernel, "shift", shift, args.c));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, args.count));
  if (inputGrad || scaleGrad || biasGrad)
    GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, args.count));
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkRunningStatsUpdate(const Kernel &kernel,
                                        const float *runningMean,
                                        const float *runningVar,
                                        const float *meanStat,
                                        const float *varStat, int64_t channels,
                                        int64_t count, double momentum) {
  GPIPE_RT_TRY(checkBuffers(kernel, channels,
                            {{"running mean", runningMean},
                             {"running var", runningVar},
                             {"mean stat", meanStat},
                             {"var stat", varStat}}));
  if (count < 2)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "count must be at least 2 (the unbiased variance divides by "
           << "count - 1), got " << count;
  if (!std::isfinite(momentum))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "momentum must be finite, got " << momentum;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkSgdUpdate(const Kernel &kernel, const float *param,
                               const float *grad, int64_t count) {
  return checkBuffers(kernel, count, {{"param", param}, {"grad", grad}});
}

gpipe_rt_status checkAccumulate(const Kernel &kernel, const float *acc,
                                const float *grad, int64_t count) {
  return checkBuffers(kernel, count, {{"acc", acc}, {"grad", grad}});
}

gpipe_rt_status checkDropout(const Kernel &kernel, const float *in,
                             const float *out, int64_t count, float ratio) {
  GPIPE_RT_TRY(checkBuffers(kernel, count, {{"input", in}, {"result", out}}));
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "ratio must lie in [0, 1), got " << ratio;
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkFillInit(const Kernel &kernel, gpipe_rt_init init,
                              const float *out, int64_t count, double scale) {
  GPIPE_RT_TRY(checkBuffers(kernel, count, {{"result", out}}));
  switch (init) {
  case GPIPE_RT_INIT_ZEROS:
  case GPIPE_RT_INIT_ONES:
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_INIT_NORMAL:
  case GPIPE_RT_INIT_UNIFORM:
    break;
  default:
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "unknown init " << int(init);
  }
  if (!(scale >= 0.0) || !std::isfinite(scale))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "scale must be finite and non-negative, got " << scale;
  return GPIPE_RT_SUCCESS;
}

} // namespace gpipe::rt::args
