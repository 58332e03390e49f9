//===- KernelArgs.h - Host-side argument checks of the kernels --*- C++ -*-===//
//
// The host-side half of every kernel entry point, shared by the CPU kernels
// (lib/Kernels/CPU/Kernels.cpp) and the CUDA kernels
// (lib/Kernels/CUDA/Kernels.cu), whose C ABIs take the same arguments and
// promise the same validation and the same messages: shapes, the message
// builder of a failing call, the checks of single arguments, numpy
// broadcasting, collapsed iteration plans, and one check per kernel that
// validates the entry point's arguments in the order the kernel documents and
// returns the sizes its computation needs. The backends keep the computation
// and the few checks that depend on where the data lives: index and label
// values are read on the host by the CPU kernels and on the device by the CUDA
// kernels, so those kernels' checks come in two halves that each backend calls
// around its own index check.
//
// A check that finds nothing to compute (an empty result) succeeds with a
// count of 0 and skips the pointer checks, as the kernels always did.
//
// The message of a failure goes to the thread-local string of the backend
// whose entry point failed, named by the Kernel the checks are given: the
// CPU kernels keep the one gpipe_rt_last_error() reads, the CUDA kernels the
// one gpipe_rt_cuda_last_error() reads, so neither sees the other's
// failures.
//
// Plain C++17 without CUDA types, so that nvcc's host pass compiles it as
// well as g++. The checks are compiled once, in KernelArgs.cpp (library
// GPipeRuntimeKernelArgs, which both kernel libraries link); what stays
// here is what must be seen to be used: the message builder, the
// element-type dispatch and the templates over operand counts.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_COMMON_KERNELARGS_H
#define GPIPE_RUNTIME_LIB_COMMON_KERNELARGS_H

#include "gpipe/Runtime/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace gpipe::rt::args {

constexpr int kMaxRank = GPIPE_RT_MAX_RANK;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// The kernel a check runs for: its name, which starts every message, and
/// the calling backend's thread-local last-error string, which receives the
/// message of a failure.
struct Kernel {
  const char *name;
  std::string *lastError;
};

/// Builds the message of a failing call and stores it as the kernel's
/// backend's last error when converted to the status the call returns:
///   return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "bad " << x;
class Error {
public:
  Error(gpipe_rt_status code, const Kernel &kernel)
      : code(code), lastError(kernel.lastError) {
    os << kernel.name << ": ";
  }
  template <typename T> Error &operator<<(const T &value) {
    os << value;
    return *this;
  }
  operator gpipe_rt_status() {
    *lastError = os.str();
    return code;
  }

private:
  gpipe_rt_status code;
  std::string *lastError;
  std::ostringstream os;
};

/// Returns the status of `expr` from the enclosing function unless it is
/// GPIPE_RT_SUCCESS.
#define GPIPE_RT_TRY(expr)                                                     \
  do {                                                                         \
    gpipe_rt_status tryStatus = (expr);                                        \
    if (tryStatus != GPIPE_RT_SUCCESS)                                         \
      return tryStatus;                                                        \
  } while (false)

//===----------------------------------------------------------------------===//
// Shapes
//===----------------------------------------------------------------------===//

struct Shape {
  int32_t rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t numElements = 1;

  bool operator==(const Shape &other) const {
    return rank == other.rank && std::equal(dims, dims + rank, other.dims);
  }
  bool operator!=(const Shape &other) const { return !(*this == other); }
};

/// "[2, 3]".
std::ostream &operator<<(std::ostream &os, const Shape &shape);

/// The dims of a shape that was validated before (for messages); its
/// element count is not computed.
Shape shapeOf(const int64_t *dims, int32_t rank);

/// Validates and copies a shape argument named `what` of `kernel`.
gpipe_rt_status readShape(const Kernel &kernel, const char *what,
                          const int64_t *dims, int32_t rank, Shape &shape);

/// A non-empty buffer needs a pointer.
gpipe_rt_status checkPointer(const Kernel &kernel, const char *what,
                             const void *ptr, int64_t numElements);

gpipe_rt_status checkCount(const Kernel &kernel, int64_t count);

/// A buffer argument of an elementwise kernel: its name and pointer.
struct Buffer {
  const char *what;
  const void *data;
};

/// The arguments of a kernel over `count` elements of each of `buffers`:
/// the count, then every pointer in order.
gpipe_rt_status checkBuffers(const Kernel &kernel, int64_t count,
                             std::initializer_list<Buffer> buffers);

/// Element size of a dtype a data-movement kernel accepts.
gpipe_rt_status dtypeSize(const Kernel &kernel, gpipe_rt_dtype dtype,
                          size_t &size);

gpipe_rt_status checkIndexType(const Kernel &kernel, const char *what,
                               gpipe_rt_dtype type);

/// Row-major strides of `shape`, in elements.
void contiguousStrides(const Shape &shape, int64_t *strides);

/// Strides (in elements) for reading `in` broadcast to `out`: 0 along
/// stretched dims; false when `in` does not broadcast to `out`.
bool broadcastStrides(const Shape &in, const Shape &out, int64_t *strides);

/// The numpy broadcast of `count` shapes; false when they do not broadcast.
bool broadcastShape(const Shape *shapes, int count, Shape &out);

/// The multi-index of flat position `flat` in `shape`, as "[i, j]".
std::string positionOf(const Shape &shape, int64_t flat);

/// The products of the dims of `shape` before and after `axis`.
void productsAround(const Shape &shape, int64_t axis, int64_t &outer,
                    int64_t &inner);

//===----------------------------------------------------------------------===//
// Strided iteration plans
//===----------------------------------------------------------------------===//

/// An iteration space of `rank` dims walked by N operands with their own
/// strides (in elements), after collapsing dims of size 1 and merging
/// adjacent dims every operand walks contiguously. A plain aggregate, so the
/// CUDA kernels take it by value.
template <int N> struct StridedPlan {
  int32_t rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};
};

template <int N>
StridedPlan<N> collapse(const Shape &space,
                        const int64_t (&strides)[N][kMaxRank]) {
  StridedPlan<N> plan;
  for (int32_t i = 0; i < space.rank; ++i) {
    int64_t d = space.dims[i];
    if (d == 1)
      continue;
    int32_t r = plan.rank;
    bool merge = r > 0;
    for (int k = 0; merge && k < N; ++k)
      merge = plan.strides[k][r - 1] == strides[k][i] * d;
    if (merge) {
      plan.dims[r - 1] *= d;
      for (int k = 0; k < N; ++k)
        plan.strides[k][r - 1] = strides[k][i];
      continue;
    }
    plan.dims[r] = d;
    for (int k = 0; k < N; ++k)
      plan.strides[k][r] = strides[k][i];
    ++plan.rank;
  }
  return plan;
}

/// Calls fn with a value of the unsigned type `elemSize` bytes wide (1, 2,
/// 4, else 8): element storage for kernels that only move data.
template <typename Fn> void withBitsType(size_t elemSize, Fn &&fn) {
  switch (elemSize) {
  case 1:
    fn(uint8_t());
    break;
  case 2:
    fn(uint16_t());
    break;
  case 4:
    fn(uint32_t());
    break;
  default:
    fn(uint64_t());
    break;
  }
}

/// Calls fn with a value of the storage type of a dtype the cast kernel
/// handles (bool is one byte); false for any other dtype.
template <typename Fn> bool withCastType(gpipe_rt_dtype dtype, Fn &&fn) {
  switch (dtype) {
  case GPIPE_RT_F32:
    fn(float());
    return true;
  case GPIPE_RT_F64:
    fn(double());
    return true;
  case GPIPE_RT_I32:
    fn(int32_t());
    return true;
  case GPIPE_RT_I64:
    fn(int64_t());
    return true;
  case GPIPE_RT_BOOL:
    fn(uint8_t());
    return true;
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Data-dependent failures
//===----------------------------------------------------------------------===//

/// An index outside [0, bound): `value` at flat `position` of `indices`,
/// indexing axis `axis` of `indexed`, which the message introduces with `of`
/// (" of data " for gather, " of " for gather_grad).
gpipe_rt_status indexOutOfRange(const Kernel &kernel, int64_t value,
                                const Shape &indices, int64_t position,
                                int64_t bound, int64_t axis, const char *of,
                                const Shape &indexed);

/// A label outside [0, classes) at flat `position` of the label rows.
gpipe_rt_status labelOutOfRange(const Kernel &kernel, int64_t label,
                                const Shape &rows, int64_t position,
                                int64_t classes);

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// A leading dimension for a matrix with `cols` columns (BLAS wants >= 1
/// even when the matrix is empty).
inline int64_t leadingDim(int64_t cols) { return std::max<int64_t>(1, cols); }

bool fitsBlasInt(int64_t v);

/// The arguments of `batch` row-major products C[M, N] = alpha * op(A) *
/// op(B) + beta * C, where op(A) is [M, K] and op(B) is [K, N], against
/// BLAS's int range; sets `empty` when there is nothing to compute.
gpipe_rt_status checkSgemm(const Kernel &kernel, bool transA, bool transB,
                           int64_t m, int64_t n, int64_t k, const float *a,
                           int64_t lda, const float *b, int64_t ldb,
                           const float *c, int64_t ldc, int64_t batch,
                           bool &empty);

//===----------------------------------------------------------------------===//
// Elementwise kernels
//===----------------------------------------------------------------------===//

const char *binaryName(gpipe_rt_binary_op op);

/// An operand of a broadcasting kernel: its name, data and shape.
struct Operand {
  const char *what;
  const void *data;
  const int64_t *shape;
  int32_t rank;
};

/// What a broadcasting kernel walks: `count` result elements (0: nothing to
/// compute), in a plan whose operand 0 is the result and operand k the k-th
/// input.
template <int N> struct BroadcastArgs {
  int64_t count = 0;
  StridedPlan<N> plan;
};

/// Reads the shapes of `N - 1` inputs and the result, checks that the
/// inputs broadcast to the result, plans the walk and, unless the result is
/// empty, checks the pointers.
template <int N>
gpipe_rt_status checkBroadcast(const Kernel &kernel,
                               const Operand (&inputs)[N - 1],
                               const Operand &result, BroadcastArgs<N> &args) {
  Shape in[N - 1], res;
  for (int k = 0; k < N - 1; ++k)
    GPIPE_RT_TRY(readShape(kernel, inputs[k].what, inputs[k].shape,
                           inputs[k].rank, in[k]));
  GPIPE_RT_TRY(readShape(kernel, result.what, result.shape, result.rank, res));
  Shape expected;
  bool ok = broadcastShape(in, N - 1, expected);
  if (!ok || expected != res) {
    Error error(GPIPE_RT_INVALID_ARGUMENT, kernel);
    error << "operands ";
    for (int k = 0; k < N - 1; ++k)
      error << (k ? ", " : "") << in[k];
    if (!ok)
      return error << " do not broadcast";
    return error << " broadcast to " << expected << ", not to the result shape "
                 << res;
  }
  int64_t strides[N][kMaxRank];
  contiguousStrides(res, strides[0]);
  for (int k = 1; k < N; ++k)
    broadcastStrides(in[k - 1], res, strides[k]);
  args.plan = collapse(res, strides);
  args.count = res.numElements;
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  for (int k = 0; k < N - 1; ++k)
    GPIPE_RT_TRY(checkPointer(kernel, inputs[k].what, inputs[k].data,
                              in[k].numElements));
  return checkPointer(kernel, result.what, result.data, res.numElements);
}

/// gpipe_rt_*_binary_f32; `kernel` is named binaryName(op).
gpipe_rt_status checkBinary(const Kernel &kernel, gpipe_rt_binary_op op,
                            const float *lhs, const int64_t *lhsShape,
                            int32_t lhsRank, const float *rhs,
                            const int64_t *rhsShape, int32_t rhsRank,
                            const float *out, const int64_t *outShape,
                            int32_t outRank, BroadcastArgs<3> &args);

/// gpipe_rt_*_binary_i64: binary's checks, pow refused; a zero divisor of
/// div is reported with its position in `rhs`.
gpipe_rt_status checkBinaryI64(const Kernel &kernel, gpipe_rt_binary_op op,
                               const int64_t *lhs, const int64_t *lhsShape,
                               int32_t lhsRank, const int64_t *rhs,
                               const int64_t *rhsShape, int32_t rhsRank,
                               const int64_t *out, const int64_t *outShape,
                               int32_t outRank, BroadcastArgs<3> &args);

/// gpipe_rt_*_unary_f32.
gpipe_rt_status checkUnary(const Kernel &kernel, gpipe_rt_unary_op op,
                           const float *in, const float *out, int64_t count);

/// gpipe_rt_*_equal.
gpipe_rt_status checkEqual(const Kernel &kernel, gpipe_rt_dtype dtype,
                           const void *lhs, const int64_t *lhsShape,
                           int32_t lhsRank, const void *rhs,
                           const int64_t *rhsShape, int32_t rhsRank,
                           const uint8_t *out, const int64_t *outShape,
                           int32_t outRank, BroadcastArgs<3> &args);

/// where: the broadcast walk (operands: result, condition, x, y) and the
/// element size of x, y and the result.
struct WhereArgs : BroadcastArgs<4> {
  size_t elemSize = 0;
};

/// gpipe_rt_*_where.
gpipe_rt_status checkWhere(const Kernel &kernel, const uint8_t *cond,
                           const int64_t *condShape, int32_t condRank,
                           gpipe_rt_dtype dtype, const void *x,
                           const int64_t *xShape, int32_t xRank, const void *y,
                           const int64_t *yShape, int32_t yRank,
                           const void *out, const int64_t *outShape,
                           int32_t outRank, WhereArgs &args);

/// gpipe_rt_*_not.
gpipe_rt_status checkNot(const Kernel &kernel, const uint8_t *in,
                         const uint8_t *out, int64_t count);

/// gpipe_rt_*_compare.
gpipe_rt_status checkCompare(const Kernel &kernel, gpipe_rt_compare_op op,
                             gpipe_rt_dtype dtype, const void *lhs,
                             const int64_t *lhsShape, int32_t lhsRank,
                             const void *rhs, const int64_t *rhsShape,
                             int32_t rhsRank, const uint8_t *out,
                             const int64_t *outShape, int32_t outRank,
                             BroadcastArgs<3> &args);

/// gpipe_rt_*_logical.
gpipe_rt_status checkLogical(const Kernel &kernel, gpipe_rt_logical_op op,
                             const uint8_t *lhs, const int64_t *lhsShape,
                             int32_t lhsRank, const uint8_t *rhs,
                             const int64_t *rhsShape, int32_t rhsRank,
                             const uint8_t *out, const int64_t *outShape,
                             int32_t outRank, BroadcastArgs<3> &args);

/// cumsum: the tensor as `outer` x `n` x `inner` around the axis, that is
/// `outer * inner` independent lines of `n` elements `inner` apart.
struct CumsumArgs {
  int64_t outer = 1, n = 1, inner = 1;
  /// Elements of the tensor; 0: nothing to compute.
  int64_t count = 0;
};

/// gpipe_rt_*_cumsum: dtype f32 or i64, axis in [0, rank).
gpipe_rt_status checkCumsum(const Kernel &kernel, gpipe_rt_dtype dtype,
                            const void *in, const int64_t *shape, int32_t rank,
                            int64_t axis, const void *out, CumsumArgs &args);

/// broadcast: the walk (operands: result, input) and the element size.
struct BroadcastToArgs : BroadcastArgs<2> {
  size_t elemSize = 0;
};

/// gpipe_rt_*_broadcast.
gpipe_rt_status checkBroadcastTo(const Kernel &kernel, gpipe_rt_dtype dtype,
                                 const void *in, const int64_t *inShape,
                                 int32_t inRank, const void *out,
                                 const int64_t *outShape, int32_t outRank,
                                 BroadcastToArgs &args);

/// gpipe_rt_*_clip_f32: lo <= hi (neither NaN).
gpipe_rt_status checkClip(const Kernel &kernel, const float *in,
                          const float *out, int64_t count, float lo, float hi);

/// gpipe_rt_*_clip_grad_f32.
gpipe_rt_status checkClipGrad(const Kernel &kernel, const float *in,
                              const float *grad, const float *out,
                              int64_t count);

/// gpipe_rt_*_cast.
gpipe_rt_status checkCast(const Kernel &kernel, gpipe_rt_dtype inType,
                          const void *in, gpipe_rt_dtype outType,
                          const void *out, int64_t count);

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// matmul: `batch` products op(lhs) [m, k] x op(rhs) [k, n].
struct MatmulArgs {
  int64_t m = 0, n = 0, k = 0;
  /// Whether each operand is read transposed, and its stored row length
  /// (the BLAS leading dimension).
  bool transLhs = false, transRhs = false;
  int64_t lda = 0, ldb = 0;
  /// Elements of the result; 0: nothing to compute.
  int64_t count = 0;
  /// The broadcast batch dims (with their element count) and the walk over
  /// them, in matrices (operands: result, lhs, rhs).
  Shape batch;
  StridedPlan<3> plan;
  /// rhs is shared by every batch and lhs is neither broadcast nor
  /// transposed: the batch folds into the rows of one product.
  bool foldBatch = false;
};

/// gpipe_rt_*_matmul_f32.
gpipe_rt_status checkMatmul(const Kernel &kernel, const float *lhs,
                            const int64_t *lhsShape, int32_t lhsRank,
                            const float *rhs, const int64_t *rhsShape,
                            int32_t rhsRank, int32_t transLhs, int32_t transRhs,
                            const float *out, const int64_t *outShape,
                            int32_t outRank, MatmulArgs &args);

/// gemm: result[m, n] = alpha * op(a) op(b) + beta * c.
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
  /// beta when c is given, else 0.
  float beta = 0.0f;
  /// c is the result's own buffer (accumulation in place): nothing to copy.
  bool cInPlace = false;
  /// The result's shape and row-major strides, and c's strides broadcast to
  /// it (when c is given).
  Shape result;
  int64_t resultStrides[kMaxRank] = {};
  int64_t cStrides[kMaxRank] = {};
};

/// gpipe_rt_*_gemm_f32 (alpha needs no check).
gpipe_rt_status checkGemm(const Kernel &kernel, const float *a,
                          const int64_t *aShape, const float *b,
                          const int64_t *bShape, const float *c,
                          const int64_t *cShape, int32_t cRank, float beta,
                          int32_t transA, int32_t transB, const float *out,
                          const int64_t *outShape, GemmArgs &args);

/// linear: `rows` rows of `inFeatures` times the weight.
struct LinearArgs {
  int64_t rows = 0, inFeatures = 0, outFeatures = 0;
  /// The weight's leading dimension.
  int64_t weightLd = 1;
  /// Elements of the result; 0: nothing to compute.
  int64_t count = 0;
};

/// gpipe_rt_*_linear_f32 (the bias is optional and has outFeatures
/// elements).
gpipe_rt_status checkLinear(const Kernel &kernel, const float *input,
                            const int64_t *inputShape, int32_t inputRank,
                            const float *weight, const int64_t *weightShape,
                            int32_t transposeWeight, const float *out,
                            const int64_t *outShape, int32_t outRank,
                            LinearArgs &args);

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// A softmax-family shape as `outer` x `n` x `inner` around the axis.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
  /// Elements of the tensor; 0: nothing to compute.
  int64_t count = 0;
};

/// Softmax-style kernels: `s` as outer x n x inner around `axis` (a scalar
/// is one element along axis 0).
gpipe_rt_status splitAtAxis(const Kernel &kernel, const Shape &s, int64_t axis,
                            AxisSplit &split);

/// gpipe_rt_*_softmax_f32.
gpipe_rt_status checkSoftmax(const Kernel &kernel, const float *in,
                             const int64_t *shape, int32_t rank, int64_t axis,
                             const float *out, AxisSplit &args);

/// attention and attention_grad: `count` leading indices (batch and
/// heads), `rows` (T) queries of `depth` (D), `keys` (S) keys and values of
/// `valueDim` (E); the leading dims for the bias's offset per leading index.
struct AttentionArgs {
  int64_t count = 0, rows = 0, depth = 0, keys = 0, valueDim = 0;
  int32_t leadingRank = 0;
  int64_t leading[kMaxRank] = {};
  /// The bias's strides broadcast to [leading..., T, S] (0 where it
  /// repeats); `hasBias` false when it is null.
  bool hasBias = false;
  int64_t biasStrides[kMaxRank] = {};

  /// The bias's offset for leading index `n` (row-major over `leading`).
  int64_t biasOffset(int64_t n) const {
    int64_t offset = 0;
    for (int32_t d = leadingRank - 1; d >= 0; --d) {
      offset += (n % leading[d]) * biasStrides[d];
      n /= leading[d];
    }
    return offset;
  }
  int64_t biasRowStride() const { return biasStrides[leadingRank]; }
  int64_t biasKeyStride() const { return biasStrides[leadingRank + 1]; }
};

/// gpipe_rt_*_attention_f32 and, with `grad` and the three gradients,
/// gpipe_rt_*_attention_grad_f32 (`grad` null for the forward, whose
/// output is `outs[0]`).
gpipe_rt_status checkAttention(
    const Kernel &kernel, const float *q, const float *k, const float *v,
    const int64_t *qShape, int32_t rank, int64_t keys, int64_t valueDim,
    const float *bias, const int64_t *biasShape, int32_t biasRank, float scale,
    const float *grad, float *const *outs, int numOuts, AttentionArgs &args);

/// gpipe_rt_*_softmax_grad_f32.
gpipe_rt_status checkSoftmaxGrad(const Kernel &kernel, const float *output,
                                 const float *grad, const int64_t *shape,
                                 int32_t rank, int64_t axis, const float *out,
                                 AxisSplit &args);

/// A layer-norm shape as `rows` independent rows of the `n` elements of
/// dims [axis, rank).
struct RowSplit {
  int64_t rows = 1, n = 1;
  /// Elements of the tensor.
  int64_t count = 0;
};

gpipe_rt_status splitNormalized(const Kernel &kernel, const Shape &s,
                                int64_t axis, float epsilon, RowSplit &split);

/// gpipe_rt_*_layer_norm_f32 (bias, mean and rstd are optional); a count
/// of 0 leaves everything untouched.
gpipe_rt_status checkLayerNorm(const Kernel &kernel, const float *in,
                               const int64_t *shape, int32_t rank, int64_t axis,
                               const float *scale, float epsilon,
                               const float *out, RowSplit &args);

/// gpipe_rt_*_layer_norm_grad_f32 (the three results are optional). With
/// n == 0 there is nothing to do; with n > 0 and a count of 0 only the
/// scale and bias gradients (zeros) are written.
gpipe_rt_status checkLayerNormGrad(const Kernel &kernel, const float *in,
                                   const int64_t *shape, int32_t rank,
                                   int64_t axis, const float *scale,
                                   const float *grad, float epsilon,
                                   RowSplit &args);

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

/// Whether `size` elements from `off` every `step` fit in a dim of `dim`.
bool sliceFits(int64_t off, int64_t size, int64_t step, int64_t dim);

/// gather: `outer` x `indices` x `inner` rows out of `outer` x `axisDim` x
/// `inner`.
struct GatherArgs {
  size_t elemSize = 0;
  Shape data, indices;
  int64_t outer = 1, inner = 1, axisDim = 0;
  /// Elements of the result (set by checkGatherResult); 0: nothing to
  /// compute.
  int64_t count = 0;
};

/// The first half of gpipe_rt_*_gather's checks: everything before the
/// index values.
gpipe_rt_status checkGather(const Kernel &kernel, gpipe_rt_dtype dtype,
                            const int64_t *dataShape, int32_t dataRank,
                            gpipe_rt_dtype indexType, const void *indices,
                            const int64_t *indicesShape, int32_t indicesRank,
                            int64_t axis, GatherArgs &args);

/// The second half of gpipe_rt_*_gather's checks: the result's size and,
/// unless it is empty, the data and result pointers.
gpipe_rt_status checkGatherResult(const Kernel &kernel, const void *data,
                                  const void *out, GatherArgs &args);

/// An out-of-range index of gather.
gpipe_rt_status gatherIndexOutOfRange(const Kernel &kernel, int64_t value,
                                      const Shape &indices, int64_t position,
                                      int64_t axis, const Shape &data);

/// A strided copy of the `space`-shaped elements of `elemSize` bytes, with
/// the strides (in elements) of the destination and the source.
struct CopyArgs {
  size_t elemSize = 0;
  Shape space;
  int64_t dstStrides[kMaxRank] = {};
  int64_t srcStrides[kMaxRank] = {};
  /// Offset in elements of the first element copied: into the input for
  /// slice, into the result for insert_slice.
  int64_t base = 0;
};

/// gpipe_rt_*_transpose: copies `space` (the result's shape) from the
/// input; an empty space means nothing to compute.
gpipe_rt_status checkTranspose(const Kernel &kernel, gpipe_rt_dtype dtype,
                               const void *in, const int64_t *shape,
                               int32_t rank, const int64_t *perm,
                               const void *out, CopyArgs &args);

/// gpipe_rt_*_slice: copies `space` (the sizes) from the input at `base`;
/// an empty space means nothing to compute.
gpipe_rt_status checkSlice(const Kernel &kernel, gpipe_rt_dtype dtype,
                           const void *in, const int64_t *shape, int32_t rank,
                           const int64_t *offsets, const int64_t *sizes,
                           const int64_t *strides, const void *out,
                           CopyArgs &args);

/// insert_slice: the result is dest (`destCount` elements) with the source
/// (`space`) written at `base`.
struct InsertSliceArgs : CopyArgs {
  /// 0: nothing to compute.
  int64_t destCount = 0;
};

/// gpipe_rt_*_insert_slice.
gpipe_rt_status checkInsertSlice(const Kernel &kernel, gpipe_rt_dtype dtype,
                                 const void *source, const int64_t *sourceShape,
                                 const void *dest, const int64_t *destShape,
                                 int32_t rank, const int64_t *offsets,
                                 const int64_t *strides, const void *out,
                                 InsertSliceArgs &args);

/// One part of a split or a concat: its shape, its own row-major strides,
/// and the element offset of its first element in the whole tensor.
struct Part {
  Shape shape;
  int64_t strides[kMaxRank] = {};
  int64_t offset = 0;
};

/// split and concat: a whole tensor (split's input, concat's result) with
/// its row-major strides, cut along the axis into parts.
struct PartsArgs {
  size_t elemSize = 0;
  int64_t wholeStrides[kMaxRank] = {};
  std::vector<Part> parts;
};

/// gpipe_rt_*_split: checks every output before anything is copied.
gpipe_rt_status checkSplit(const Kernel &kernel, gpipe_rt_dtype dtype,
                           const void *in, const int64_t *shape, int32_t rank,
                           int64_t axis, const int64_t *sizes,
                           int32_t numOutputs, void *const *outs,
                           PartsArgs &args);

/// gpipe_rt_*_concat: checks every input before anything is copied.
gpipe_rt_status checkConcat(const Kernel &kernel, gpipe_rt_dtype dtype,
                            int32_t numInputs, const void *const *inputs,
                            const int64_t *const *shapes, int32_t rank,
                            int64_t axis, const void *out, PartsArgs &args);

/// gpipe_rt_*_copy.
gpipe_rt_status checkCopy(const Kernel &kernel, gpipe_rt_dtype dtype,
                          const void *in, const void *out, int64_t count,
                          size_t &elemSize);

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Cross-entropy: logits [..., C] as `rows` label rows (of shape `rowShape`)
/// of `classes` logits.
struct LogitsArgs {
  Shape logits, rowShape;
  int64_t rows = 0, classes = 0;
};

gpipe_rt_status splitLogits(const Kernel &kernel, const int64_t *logitsShape,
                            int32_t logitsRank, gpipe_rt_dtype labelType,
                            LogitsArgs &args);

/// gpipe_rt_*_cross_entropy_f32 up to the label values; the logits pointer
/// is checked by checkPointer after them on the CPU, before them on CUDA.
gpipe_rt_status checkCrossEntropy(const Kernel &kernel,
                                  const int64_t *logitsShape,
                                  int32_t logitsRank, gpipe_rt_dtype labelType,
                                  const void *labels, const float *loss,
                                  LogitsArgs &args);

/// The first half of gpipe_rt_*_cross_entropy_grad_f32's checks: everything
/// before the label values.
gpipe_rt_status checkCrossEntropyGrad(const Kernel &kernel,
                                      const int64_t *logitsShape,
                                      int32_t logitsRank,
                                      gpipe_rt_dtype labelType,
                                      const void *labels, LogitsArgs &args);

/// The second half: unless the logits are empty, their pointer and the
/// result's.
gpipe_rt_status checkCrossEntropyGradResult(const Kernel &kernel,
                                            const float *logits,
                                            const float *out,
                                            const LogitsArgs &args);

/// gpipe_rt_*_mse_f32.
gpipe_rt_status checkMse(const Kernel &kernel, const float *input,
                         const float *target, int64_t count, const float *loss);

//===----------------------------------------------------------------------===//
// Backward kernels
//===----------------------------------------------------------------------===//

/// reduce_sum: the input, which of its dims are reduced, and the number of
/// results (the product of the kept dims; 0: nothing to compute).
struct ReduceArgs {
  Shape input;
  bool reduced[kMaxRank] = {};
  int64_t outputs = 0;
};

/// gpipe_rt_*_reduce_sum_f32 (an empty input with a non-empty result sums
/// to zeros without reading the input).
gpipe_rt_status checkReduceSum(const Kernel &kernel, const float *in,
                               const int64_t *shape, int32_t rank,
                               const int64_t *axes, int32_t numAxes,
                               const float *out, ReduceArgs &args);

/// gather_grad: scatters `indices` rows of grad into a result of `outer` x
/// `axisDim` x `inner`.
struct GatherGradArgs {
  Shape indices, grad, result;
  int64_t outer = 1, inner = 1, axisDim = 0;
};

/// The first half of gpipe_rt_*_gather_grad_f32's checks: everything before
/// the index values.
gpipe_rt_status checkGatherGrad(const Kernel &kernel, gpipe_rt_dtype indexType,
                                const void *indices,
                                const int64_t *indicesShape,
                                int32_t indicesRank, const int64_t *gradShape,
                                int32_t gradRank, int64_t axis,
                                const int64_t *outShape, int32_t outRank,
                                GatherGradArgs &args);

/// The second half: unless the result is empty, its pointer and grad's.
gpipe_rt_status checkGatherGradResult(const Kernel &kernel, const float *grad,
                                      const float *out,
                                      const GatherGradArgs &args);

/// An out-of-range index of gather_grad.
gpipe_rt_status gatherGradIndexOutOfRange(const Kernel &kernel, int64_t value,
                                          const Shape &indices,
                                          int64_t position, int64_t axis,
                                          const Shape &result);

/// gpipe_rt_*_gelu_grad_f32.
gpipe_rt_status checkGeluGrad(const Kernel &kernel, const float *in,
                              const float *grad, const float *out,
                              int64_t count);

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch normalization
//===----------------------------------------------------------------------===//

/// The geometry of a 2-D window sliding over NCHW images: the images
/// [n, c, h, w], the result [n, outC, oh, ow], the window [kh, kw] with its
/// strides, pads and dilations, and for a convolution its groups. A plain
/// aggregate, so the CUDA kernels take it by value.
struct Window2d {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t outC = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1;
  int64_t strideH = 1, strideW = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dilationH = 1, dilationW = 1;
  /// Convolution only: the groups, the input and output channels of one
  /// group, and the weight's elements.
  int64_t groups = 1, groupIn = 0, groupOut = 0, weightCount = 0;
  /// Elements of the images and of the result.
  int64_t inCount = 0, outCount = 0;
};

/// gpipe_rt_*_conv2d_f32 (the bias is optional); with an empty result
/// there is nothing to compute and the pointers are not checked.
gpipe_rt_status checkConv2d(const Kernel &kernel, const float *in,
                            const int64_t *inShape, const float *weight,
                            const int64_t *weightShape, const float *bias,
                            const int64_t *strides, const int64_t *pads,
                            const int64_t *dilations, int64_t groups,
                            const float *out, const int64_t *outShape,
                            Window2d &args);

/// gpipe_rt_*_conv2d_grad_f32 (the three results are optional; only the
/// operands a requested result needs are checked).
gpipe_rt_status checkConv2dGrad(const Kernel &kernel, const float *in,
                                const int64_t *inShape, const float *weight,
                                const int64_t *weightShape, const float *grad,
                                const int64_t *gradShape,
                                const int64_t *strides, const int64_t *pads,
                                const int64_t *dilations, int64_t groups,
                                const float *inputGrad, const float *weightGrad,
                                const float *biasGrad, Window2d &args);

/// gpipe_rt_*_max_pool2d_f32.
gpipe_rt_status checkMaxPool2d(const Kernel &kernel, const float *in,
                               const int64_t *inShape,
                               const int64_t *kernelDims,
                               const int64_t *strides, const int64_t *pads,
                               const int64_t *dilations, const float *out,
                               const int64_t *outShape, Window2d &args);

/// gpipe_rt_*_max_pool2d_grad_f32.
gpipe_rt_status checkMaxPool2dGrad(const Kernel &kernel, const float *in,
                                   const int64_t *inShape, const float *grad,
                                   const int64_t *gradShape,
                                   const int64_t *kernelDims,
                                   const int64_t *strides, const int64_t *pads,
                                   const int64_t *dilations,
                                   const float *inputGrad, Window2d &args);

/// gpipe_rt_*_avg_pool2d_f32.
gpipe_rt_status checkAvgPool2d(const Kernel &kernel, const float *in,
                               const int64_t *inShape,
                               const int64_t *kernelDims,
                               const int64_t *strides, const int64_t *pads,
                               const float *out, const int64_t *outShape,
                               Window2d &args);

/// gpipe_rt_*_avg_pool2d_grad_f32.
gpipe_rt_status checkAvgPool2dGrad(const Kernel &kernel, const float *grad,
                                   const int64_t *gradShape,
                                   const int64_t *kernelDims,
                                   const int64_t *strides, const int64_t *pads,
                                   const float *inputGrad,
                                   const int64_t *inShape, Window2d &args);

/// The divisor of the average-pool window at output (oh, ow): the number of
/// its positions inside the image, or with `countIncludePad` inside the
/// padded image (ONNX AveragePool, PyTorch avg_pool2d).
inline int64_t avgPoolDivisor(const Window2d &a, int64_t oh, int64_t ow,
                              bool countIncludePad) {
  int64_t h0 = oh * a.strideH - a.padTop, w0 = ow * a.strideW - a.padLeft;
  int64_t h1 = h0 + a.kh, w1 = w0 + a.kw;
  if (countIncludePad) {
    h1 = std::min(h1, a.h + a.padBottom);
    w1 = std::min(w1, a.w + a.padRight);
  } else {
    h0 = std::max<int64_t>(h0, 0);
    w0 = std::max<int64_t>(w0, 0);
    h1 = std::min(h1, a.h);
    w1 = std::min(w1, a.w);
  }
  return std::max<int64_t>(h1 - h0, 0) * std::max<int64_t>(w1 - w0, 0);
}

/// A batch-norm shape [N, C, ...] as `n` images of `c` channels of `inner`
/// positions.
struct ChannelSplit {
  int64_t n = 0, c = 0, inner = 1;
  /// Elements of the tensor.
  int64_t count = 0;
};

/// gpipe_rt_*_batch_norm_f32.
gpipe_rt_status checkBatchNorm(const Kernel &kernel, const float *in,
                               const int64_t *shape, int32_t rank,
                               const float *scale, const float *bias,
                               float epsilon, const float *out,
                               ChannelSplit &args);

/// gpipe_rt_*_batch_norm_grad_f32 (the five results are optional).
gpipe_rt_status checkBatchNormGrad(
    const Kernel &kernel, const float *in, const int64_t *shape, int32_t rank,
    const float *scale, const float *grad, float epsilon, const float *shift,
    const float *inputGrad, const float *scaleGrad, const float *biasGrad,
    const float *meanStat, const float *varStat, ChannelSplit &args);

/// gpipe_rt_*_running_stats_update_f32.
gpipe_rt_status checkRunningStatsUpdate(const Kernel &kernel,
                                        const float *runningMean,
                                        const float *runningVar,
                                        const float *meanStat,
                                        const float *varStat, int64_t channels,
                                        int64_t count, double momentum);

//===----------------------------------------------------------------------===//
// Optimizer updates and initialization
//===----------------------------------------------------------------------===//

/// gpipe_rt_*_sgd_update_f32.
gpipe_rt_status checkSgdUpdate(const Kernel &kernel, const float *param,
                               const float *grad, int64_t count);

/// gpipe_rt_*_accumulate_f32.
gpipe_rt_status checkAccumulate(const Kernel &kernel, const float *acc,
                                const float *grad, int64_t count);

/// gpipe_rt_*_dropout_f32: ratio in [0, 1).
gpipe_rt_status checkDropout(const Kernel &kernel, const float *in,
                             const float *out, int64_t count, float ratio);

/// gpipe_rt_*_fill_init_f32 (the scale only matters to the random inits).
gpipe_rt_status checkFillInit(const Kernel &kernel, gpipe_rt_init init,
                              const float *out, int64_t count, double scale);

} // namespace gpipe::rt::args

#endif // GPIPE_RUNTIME_LIB_COMMON_KERNELARGS_H
