//===- Kernels.cpp - CPU kernels for the nn ops -----------------*- C++ -*-===//
//
// The CPU backend's kernels behind the C ABI of CPUKernels.h. Shapes
// are validated first; then each kernel runs plain loops written so the
// compiler can vectorize the innermost one (broadcast and strided operands
// are collapsed to a few dims whose innermost stride is 0 or 1). Reductions
// run in double precision in a fixed order (eight interleaved partial sums
// combined in a fixed tree), so results are bitwise reproducible. Every
// sgemm goes through checkedSgemm, which validates its arguments against
// BLAS's int range before calling OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"

#include <cblas.h>

// OpenBLAS's own cblas.h declares these; repeat them so the build does not
// depend on which cblas.h the system's alternatives pick.
extern "C" void openblas_set_num_threads(int threads);
extern "C" int openblas_get_num_threads(void);

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace gpipe::rt {
namespace {

constexpr int kMaxRank = GPIPE_RT_MAX_RANK;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

thread_local std::string lastError;

/// Builds the message of a failing call and sets it as the thread's last
/// error when converted to the status it returns:
///   return Error(GPIPE_RT_INVALID_ARGUMENT, "matmul") << "bad " << x;
class Error {
public:
  Error(gpipe_rt_status code, const char *kernel) : code(code) {
    os << kernel << ": ";
  }
  template <typename T> Error &operator<<(const T &value) {
    os << value;
    return *this;
  }
  operator gpipe_rt_status() {
    lastError = os.str();
    return code;
  }

private:
  gpipe_rt_status code;
  std::ostringstream os;
};

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

std::ostream &operator<<(std::ostream &os, const Shape &shape) {
  os << '[';
  for (int32_t i = 0; i < shape.rank; ++i)
    os << (i ? ", " : "") << shape.dims[i];
  return os << ']';
}

/// Validates and copies a shape argument named `what` of `kernel`.
gpipe_rt_status readShape(const char *kernel, const char *what,
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

/// A non-empty buffer needs a pointer.
gpipe_rt_status checkPointer(const char *kernel, const char *what,
                             const void *ptr, int64_t numElements) {
  if (!ptr && numElements > 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << what << " is null but holds " << numElements << " elements";
  return GPIPE_RT_SUCCESS;
}

gpipe_rt_status checkCount(const char *kernel, int64_t count) {
  if (count < 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "negative element count " << count;
  return GPIPE_RT_SUCCESS;
}

/// Row-major strides of `shape`, in elements.
void contiguousStrides(const Shape &shape, int64_t *strides) {
  int64_t s = 1;
  for (int32_t i = shape.rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape.dims[i];
  }
}

/// Strides (in elements) for reading `in` broadcast to `out`; false when
/// `in` does not broadcast to `out`.
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
    if (d == out.dims[i])
      strides[i] = d == 1 ? 0 : s;
    else if (d == 1)
      strides[i] = 0;
    else
      return false;
    s *= d;
  }
  return true;
}

/// The numpy broadcast of `shapes`; false when they do not broadcast.
bool broadcastShape(const Shape *const *shapes, int count, Shape &out) {
  out.rank = 0;
  for (int k = 0; k < count; ++k)
    out.rank = std::max(out.rank, shapes[k]->rank);
  for (int32_t i = 0; i < out.rank; ++i) {
    int64_t d = 1;
    for (int k = 0; k < count; ++k) {
      int32_t j = i - (out.rank - shapes[k]->rank);
      if (j < 0)
        continue;
      int64_t e = shapes[k]->dims[j];
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

//===----------------------------------------------------------------------===//
// Strided iteration
//===----------------------------------------------------------------------===//

/// An iteration space of `rank` dims walked by N operands with their own
/// strides (in elements), after collapsing dims of size 1 and merging
/// adjacent dims every operand walks contiguously.
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

/// Calls fn(count, offsets, innerStrides) once per run of the innermost dim,
/// in row-major order of the outer dims. The space must not be empty.
template <int N, typename Fn>
void forEachRun(const StridedPlan<N> &plan, Fn &&fn) {
  int64_t offsets[N] = {};
  int64_t innerStrides[N] = {};
  if (plan.rank == 0) {
    fn(int64_t(1), offsets, innerStrides);
    return;
  }
  int32_t r = plan.rank;
  for (int k = 0; k < N; ++k)
    innerStrides[k] = plan.strides[k][r - 1];
  int64_t outer = 1;
  for (int32_t d = 0; d < r - 1; ++d)
    outer *= plan.dims[d];
  int64_t index[kMaxRank] = {};
  for (int64_t o = 0; o < outer; ++o) {
    fn(plan.dims[r - 1], offsets, innerStrides);
    for (int32_t d = r - 2; d >= 0; --d) {
      for (int k = 0; k < N; ++k)
        offsets[k] += plan.strides[k][d];
      if (++index[d] < plan.dims[d])
        break;
      for (int k = 0; k < N; ++k)
        offsets[k] -= plan.strides[k][d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

/// Element storage of a given byte width, for kernels that only move data.
template <size_t Size> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };

template <typename T>
void copyRuns(const StridedPlan<2> &plan, void *dst, const void *src) {
  T *d = static_cast<T *>(dst);
  const T *s = static_cast<const T *>(src);
  forEachRun(plan, [&](int64_t n, const int64_t *off, const int64_t *st) {
    T *dd = d + off[0];
    const T *ss = s + off[1];
    if (st[0] == 1 && st[1] == 1) {
      std::memcpy(dd, ss, size_t(n) * sizeof(T));
      return;
    }
    int64_t ds = st[0], sst = st[1];
    for (int64_t i = 0; i < n; ++i)
      dd[i * ds] = ss[i * sst];
  });
}

/// Copies the `space`-shaped elements at `src` (strides `srcStrides`) to
/// `dst` (strides `dstStrides`), all in elements of `elemSize` bytes.
void stridedCopy(size_t elemSize, const Shape &space, void *dst,
                 const int64_t *dstStrides, const void *src,
                 const int64_t *srcStrides) {
  if (space.numElements == 0)
    return;
  int64_t strides[2][kMaxRank];
  std::copy(dstStrides, dstStrides + space.rank, strides[0]);
  std::copy(srcStrides, srcStrides + space.rank, strides[1]);
  StridedPlan<2> plan = collapse(space, strides);
  switch (elemSize) {
  case 1:
    return copyRuns<Bits<1>::type>(plan, dst, src);
  case 2:
    return copyRuns<Bits<2>::type>(plan, dst, src);
  case 4:
    return copyRuns<Bits<4>::type>(plan, dst, src);
  default:
    return copyRuns<Bits<8>::type>(plan, dst, src);
  }
}

/// Element size of a dtype a data-movement kernel accepts.
gpipe_rt_status dtypeSize(const char *kernel, gpipe_rt_dtype dtype,
                          size_t &size) {
  size = gpipe_rt_dtype_size(dtype);
  if (size == 0)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "unknown element type " << int(dtype);
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Reductions in a fixed order
//===----------------------------------------------------------------------===//

constexpr int kLanes = 8;

double combineLanes(const double (&acc)[kLanes]) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) +
         ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

/// sum of map(x[i]) in double: eight interleaved partial sums.
template <typename Map> double sumMapped(const float *x, int64_t n, Map map) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k)
      acc[k] += map(x[i + k]);
  for (int k = 0; i + k < n; ++k)
    acc[k] += map(x[i + k]);
  return combineLanes(acc);
}

float maxOf(const float *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

//===----------------------------------------------------------------------===//
// BLAS: the one checking path
//===----------------------------------------------------------------------===//

/// A leading dimension for a matrix with `cols` columns (BLAS wants >= 1
/// even when the matrix is empty).
int64_t leadingDim(int64_t cols) { return std::max<int64_t>(1, cols); }

bool fitsBlasInt(int64_t v) {
  return v >= 0 && v <= int64_t(std::numeric_limits<int>::max());
}

/// Profiling of the time spent inside sgemm (gpipe_rt_cpu_set_gemm_timing).
std::atomic<bool> gemmTiming{false};
std::atomic<uint64_t> gemmNanoseconds{0};

/// C[M, N] = alpha * op(A) * op(B) + beta * C, row-major, where op(A) is
/// [M, K] and op(B) is [K, N]. Validates every argument before calling
/// cblas_sgemm, so OpenBLAS's own argument checker never fires.
gpipe_rt_status checkedSgemm(const char *kernel, bool transA, bool transB,
                             int64_t m, int64_t n, int64_t k, float alpha,
                             const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc) {
  if (!fitsBlasInt(m) || !fitsBlasInt(n) || !fitsBlasInt(k) ||
      !fitsBlasInt(lda) || !fitsBlasInt(ldb) || !fitsBlasInt(ldc))
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
  if (m == 0 || n == 0)
    return GPIPE_RT_SUCCESS;
  if (!c || (k > 0 && (!a || !b)))
    return Error(GPIPE_RT_BLAS_ERROR, kernel) << "sgemm with a null matrix";
  if (k == 0 || alpha == 0.0f) {
    // BLAS leaves this case to the implementation's quick return; spell it
    // out: beta == 0 overwrites C (even NaN), otherwise C scales.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return GPIPE_RT_SUCCESS;
  }
  bool timed = gemmTiming.load(std::memory_order_relaxed);
  auto start = timed ? std::chrono::steady_clock::now()
                     : std::chrono::steady_clock::time_point();
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), alpha,
              a, int(lda), b, int(ldb), beta, c, int(ldc));
  if (timed)
    gemmNanoseconds.fetch_add(
        uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count()),
        std::memory_order_relaxed);
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

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
  }
  return "binary";
}

/// Reads the operands of a broadcasting op with `N - 1` inputs and checks
/// that they broadcast to `out`; fills the collapsed plan (operand 0 is the
/// output).
template <int N>
gpipe_rt_status planBroadcast(const char *kernel, const Shape (&inputs)[N - 1],
                              const Shape &out, StridedPlan<N> &plan) {
  const Shape *ptrs[N - 1];
  for (int k = 0; k < N - 1; ++k)
    ptrs[k] = &inputs[k];
  Shape expected;
  bool ok = broadcastShape(ptrs, N - 1, expected);
  if (!ok || expected != out) {
    Error error(GPIPE_RT_INVALID_ARGUMENT, kernel);
    error << "operands ";
    for (int k = 0; k < N - 1; ++k)
      error << (k ? ", " : "") << inputs[k];
    if (!ok)
      return error << " do not broadcast";
    return error << " broadcast to " << expected << ", not to the result shape "
                 << out;
  }
  int64_t strides[N][kMaxRank];
  contiguousStrides(out, strides[0]);
  for (int k = 1; k < N; ++k)
    broadcastStrides(inputs[k - 1], out, strides[k]);
  plan = collapse(out, strides);
  return GPIPE_RT_SUCCESS;
}

/// out[i] = f(a, b) over a broadcast plan (operands: out, lhs, rhs); the
/// innermost strides are 0 or 1, dispatched to four vectorizable loops.
template <typename T, typename R, typename F>
void broadcastBinary(const StridedPlan<3> &plan, const T *lhs, const T *rhs,
                     R *out, F f) {
  forEachRun(plan, [&](int64_t n, const int64_t *off, const int64_t *st) {
    R *o = out + off[0];
    const T *a = lhs + off[1];
    const T *b = rhs + off[2];
    if (st[1] && st[2]) {
      for (int64_t i = 0; i < n; ++i)
        o[i] = f(a[i], b[i]);
    } else if (st[1]) {
      T bv = *b;
      for (int64_t i = 0; i < n; ++i)
        o[i] = f(a[i], bv);
    } else if (st[2]) {
      T av = *a;
      for (int64_t i = 0; i < n; ++i)
        o[i] = f(av, b[i]);
    } else {
      R v = f(*a, *b);
      for (int64_t i = 0; i < n; ++i)
        o[i] = v;
    }
  });
}

float sigmoid(float x) {
  // Never exponentiates a positive number: no overflow, no cancellation.
  if (x >= 0.0f)
    return 1.0f / (1.0f + std::exp(-x));
  float e = std::exp(x);
  return e / (1.0f + e);
}

template <typename T> T toInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v <= double(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (v >= double(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

template <typename Out, typename In> Out convert(In v) {
  if constexpr (std::is_same_v<Out, bool>)
    return v != In(0);
  else if constexpr (std::is_floating_point_v<Out>)
    return static_cast<Out>(v);
  else if constexpr (std::is_floating_point_v<In>)
    return toInt<Out>(double(v));
  else
    return static_cast<Out>(v);
}

/// Storage type of a dtype the cast kernel handles (bool is one byte).
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

template <typename Out, typename In>
void castLoop(const void *in, void *out, int64_t count) {
  const In *src = static_cast<const In *>(in);
  Out *dst = static_cast<Out *>(out);
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<Out, uint8_t>)
      dst[i] = src[i] != In(0) ? 1 : 0;
    else if constexpr (std::is_same_v<In, uint8_t>)
      dst[i] = src[i] ? Out(1) : Out(0);
    else
      dst[i] = convert<Out>(src[i]);
  }
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

/// Transpose of a collapsed plan whose source walks one outer dim `j`
/// contiguously while the innermost output dim is strided: copy in square
/// tiles over (j, innermost) so both sides stay in cache.
template <typename T>
void tiledTranspose(const StridedPlan<2> &plan, int32_t j, T *dst,
                    const T *src) {
  constexpr int64_t kTile = 32;
  int32_t r = plan.rank, last = r - 1;
  // The odometer runs over every dim but j and the innermost.
  StridedPlan<2> outer;
  for (int32_t d = 0; d < last; ++d) {
    if (d == j)
      continue;
    outer.dims[outer.rank] = plan.dims[d];
    outer.strides[0][outer.rank] = plan.strides[0][d];
    outer.strides[1][outer.rank] = plan.strides[1][d];
    ++outer.rank;
  }
  // A trailing dummy dim of size 1 makes forEachRun call once per outer
  // index.
  outer.dims[outer.rank] = 1;
  outer.strides[0][outer.rank] = 0;
  outer.strides[1][outer.rank] = 0;
  ++outer.rank;
  int64_t nj = plan.dims[j], nl = plan.dims[last];
  int64_t dj = plan.strides[0][j], dl = plan.strides[0][last];
  int64_t sj = plan.strides[1][j], sl = plan.strides[1][last];
  forEachRun(outer, [&](int64_t, const int64_t *off, const int64_t *) {
    T *d = dst + off[0];
    const T *s = src + off[1];
    for (int64_t j0 = 0; j0 < nj; j0 += kTile) {
      int64_t j1 = std::min(nj, j0 + kTile);
      for (int64_t l0 = 0; l0 < nl; l0 += kTile) {
        int64_t l1 = std::min(nl, l0 + kTile);
        for (int64_t a = j0; a < j1; ++a)
          for (int64_t b = l0; b < l1; ++b)
            d[a * dj + b * dl] = s[a * sj + b * sl];
      }
    }
  });
}

template <typename T>
void transposeTyped(const StridedPlan<2> &plan, void *dst, const void *src) {
  int32_t r = plan.rank;
  if (r >= 2 && plan.strides[1][r - 1] != 1) {
    for (int32_t j = 0; j < r - 1; ++j) {
      if (plan.strides[1][j] == 1) {
        tiledTranspose<T>(plan, j, static_cast<T *>(dst),
                          static_cast<const T *>(src));
        return;
      }
    }
  }
  copyRuns<T>(plan, dst, src);
}

//===----------------------------------------------------------------------===//
// Indexing helpers
//===----------------------------------------------------------------------===//

/// Reads index `i` of an i32 or i64 buffer.
int64_t readIndex(gpipe_rt_dtype type, const void *indices, int64_t i) {
  if (type == GPIPE_RT_I32)
    return static_cast<const int32_t *>(indices)[i];
  return static_cast<const int64_t *>(indices)[i];
}

gpipe_rt_status checkIndexType(const char *kernel, const char *what,
                               gpipe_rt_dtype type) {
  if (type != GPIPE_RT_I32 && type != GPIPE_RT_I64)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << what << " must be i32 or i64, got " << gpipe_rt_dtype_name(type);
  return GPIPE_RT_SUCCESS;
}

/// The multi-index of flat position `flat` in `shape`, as "[i, j]".
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

//===----------------------------------------------------------------------===//
// Random numbers for parameter init
//===----------------------------------------------------------------------===//

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

uint64_t splitMix64(uint64_t x) {
  x += kGoldenGamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

} // namespace
} // namespace gpipe::rt

using namespace gpipe::rt;

//===----------------------------------------------------------------------===//
// Common
//===----------------------------------------------------------------------===//

extern "C" const char *gpipe_rt_last_error(void) { return lastError.c_str(); }

extern "C" void gpipe_rt_clear_error(void) { lastError.clear(); }

extern "C" size_t gpipe_rt_dtype_size(gpipe_rt_dtype dtype) {
  switch (dtype) {
  case GPIPE_RT_F32:
  case GPIPE_RT_I32:
    return 4;
  case GPIPE_RT_F64:
  case GPIPE_RT_I64:
    return 8;
  case GPIPE_RT_F16:
  case GPIPE_RT_BF16:
    return 2;
  case GPIPE_RT_BOOL:
    return 1;
  }
  return 0;
}

extern "C" const char *gpipe_rt_dtype_name(gpipe_rt_dtype dtype) {
  switch (dtype) {
  case GPIPE_RT_F32:
    return "f32";
  case GPIPE_RT_F64:
    return "f64";
  case GPIPE_RT_F16:
    return "f16";
  case GPIPE_RT_BF16:
    return "bf16";
  case GPIPE_RT_I64:
    return "i64";
  case GPIPE_RT_I32:
    return "i32";
  case GPIPE_RT_BOOL:
    return "i1";
  }
  return "?";
}

extern "C" void gpipe_rt_cpu_set_blas_threads(int32_t threads) {
  openblas_set_num_threads(threads < 1 ? 1 : threads);
}

extern "C" void gpipe_rt_cpu_set_gemm_timing(int32_t enabled) {
  gemmTiming.store(enabled != 0, std::memory_order_relaxed);
}

extern "C" uint64_t gpipe_rt_cpu_gemm_nanoseconds(void) {
  return gemmNanoseconds.load(std::memory_order_relaxed);
}

extern "C" int32_t gpipe_rt_cpu_get_blas_threads(void) {
  return openblas_get_num_threads();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cpu_binary_f32(
    gpipe_rt_binary_op op, const float *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const float *rhs, const int64_t *rhsShape, int32_t rhsRank,
    float *out, const int64_t *outShape, int32_t outRank) {
  const char *kernel = binaryName(op);
  Shape in[2], res;
  GPIPE_RT_TRY(readShape(kernel, "lhs", lhsShape, lhsRank, in[0]));
  GPIPE_RT_TRY(readShape(kernel, "rhs", rhsShape, rhsRank, in[1]));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, res));
  StridedPlan<3> plan;
  GPIPE_RT_TRY(planBroadcast<3>(kernel, in, res, plan));
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "lhs", lhs, in[0].numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "rhs", rhs, in[1].numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));
  switch (op) {
  case GPIPE_RT_ADD:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return a + b; });
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_SUB:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return a - b; });
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_MUL:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return a * b; });
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_DIV:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return a / b; });
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_POW:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return std::pow(a, b); });
    return GPIPE_RT_SUCCESS;
  }
  return Error(GPIPE_RT_INVALID_ARGUMENT, "binary") << "unknown op " << int(op);
}

extern "C" gpipe_rt_status gpipe_rt_cpu_unary_f32(gpipe_rt_unary_op op,
                                                  const float *in, float *out,
                                                  int64_t count) {
  GPIPE_RT_TRY(checkCount("unary", count));
  GPIPE_RT_TRY(checkPointer("unary", "input", in, count));
  GPIPE_RT_TRY(checkPointer("unary", "result", out, count));
  switch (op) {
  case GPIPE_RT_NEG:
    for (int64_t i = 0; i < count; ++i)
      out[i] = -in[i];
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_RECIPROCAL:
    for (int64_t i = 0; i < count; ++i)
      out[i] = 1.0f / in[i];
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_SQRT:
    for (int64_t i = 0; i < count; ++i)
      out[i] = std::sqrt(in[i]);
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_EXP:
    for (int64_t i = 0; i < count; ++i)
      out[i] = std::exp(in[i]);
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_LOG:
    for (int64_t i = 0; i < count; ++i)
      out[i] = std::log(in[i]);
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_ERF:
    for (int64_t i = 0; i < count; ++i)
      out[i] = std::erf(in[i]);
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_TANH:
    for (int64_t i = 0; i < count; ++i)
      out[i] = std::tanh(in[i]);
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_SIGMOID:
    for (int64_t i = 0; i < count; ++i)
      out[i] = sigmoid(in[i]);
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_RELU:
    // NaN stays NaN, as in PyTorch.
    for (int64_t i = 0; i < count; ++i)
      out[i] = in[i] < 0.0f ? 0.0f : in[i];
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_GELU: {
    constexpr float kSqrtHalf = 0.70710678118654752440f;
    for (int64_t i = 0; i < count; ++i) {
      float x = in[i];
      out[i] = x * 0.5f * (1.0f + std::erf(x * kSqrtHalf));
    }
    return GPIPE_RT_SUCCESS;
  }
  }
  return Error(GPIPE_RT_INVALID_ARGUMENT, "unary") << "unknown op " << int(op);
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_equal(gpipe_rt_dtype dtype, const void *lhs,
                   const int64_t *lhsShape, int32_t lhsRank, const void *rhs,
                   const int64_t *rhsShape, int32_t rhsRank, uint8_t *out,
                   const int64_t *outShape, int32_t outRank) {
  const char *kernel = "equal";
  Shape in[2], res;
  GPIPE_RT_TRY(readShape(kernel, "lhs", lhsShape, lhsRank, in[0]));
  GPIPE_RT_TRY(readShape(kernel, "rhs", rhsShape, rhsRank, in[1]));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, res));
  StridedPlan<3> plan;
  GPIPE_RT_TRY(planBroadcast<3>(kernel, in, res, plan));
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "lhs", lhs, in[0].numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "rhs", rhs, in[1].numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    broadcastBinary(plan, static_cast<const T *>(lhs),
                    static_cast<const T *>(rhs), out,
                    [](T a, T b) { return uint8_t(a == b); });
  };
  switch (dtype) {
  case GPIPE_RT_F32:
    run(float());
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_F64:
    run(double());
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_I32:
    run(int32_t());
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_I64:
    run(int64_t());
    return GPIPE_RT_SUCCESS;
  case GPIPE_RT_BOOL:
    broadcastBinary(plan, static_cast<const uint8_t *>(lhs),
                    static_cast<const uint8_t *>(rhs), out,
                    [](uint8_t a, uint8_t b) { return uint8_t(!a == !b); });
    return GPIPE_RT_SUCCESS;
  default:
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "unsupported element type " << gpipe_rt_dtype_name(dtype);
  }
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_where(const uint8_t *cond, const int64_t *condShape,
                   int32_t condRank, gpipe_rt_dtype dtype, const void *x,
                   const int64_t *xShape, int32_t xRank, const void *y,
                   const int64_t *yShape, int32_t yRank, void *out,
                   const int64_t *outShape, int32_t outRank) {
  const char *kernel = "where";
  size_t elemSize;
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
  Shape in[3], res;
  GPIPE_RT_TRY(readShape(kernel, "condition", condShape, condRank, in[0]));
  GPIPE_RT_TRY(readShape(kernel, "x", xShape, xRank, in[1]));
  GPIPE_RT_TRY(readShape(kernel, "y", yShape, yRank, in[2]));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, res));
  StridedPlan<4> plan;
  GPIPE_RT_TRY(planBroadcast<4>(kernel, in, res, plan));
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "condition", cond, in[0].numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "x", x, in[1].numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "y", y, in[2].numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    T *o = static_cast<T *>(out);
    const T *xs = static_cast<const T *>(x);
    const T *ys = static_cast<const T *>(y);
    forEachRun(plan, [&](int64_t n, const int64_t *off, const int64_t *st) {
      T *oo = o + off[0];
      const uint8_t *c = cond + off[1];
      const T *xx = xs + off[2];
      const T *yy = ys + off[3];
      int64_t sc = st[1], sx = st[2], sy = st[3];
      for (int64_t i = 0; i < n; ++i)
        oo[i] = c[i * sc] ? xx[i * sx] : yy[i * sy];
    });
  };
  switch (elemSize) {
  case 1:
    run(Bits<1>::type());
    break;
  case 2:
    run(Bits<2>::type());
    break;
  case 4:
    run(Bits<4>::type());
    break;
  default:
    run(Bits<8>::type());
    break;
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_not(const uint8_t *in, uint8_t *out,
                                            int64_t count) {
  GPIPE_RT_TRY(checkCount("not", count));
  GPIPE_RT_TRY(checkPointer("not", "input", in, count));
  GPIPE_RT_TRY(checkPointer("not", "result", out, count));
  for (int64_t i = 0; i < count; ++i)
    out[i] = in[i] ? 0 : 1;
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_cast(gpipe_rt_dtype inType,
                                             const void *in,
                                             gpipe_rt_dtype outType, void *out,
                                             int64_t count) {
  GPIPE_RT_TRY(checkCount("cast", count));
  GPIPE_RT_TRY(checkPointer("cast", "input", in, count));
  GPIPE_RT_TRY(checkPointer("cast", "result", out, count));
  bool known = false;
  withCastType(inType, [&](auto inZero) {
    known = withCastType(outType, [&](auto outZero) {
      castLoop<decltype(outZero), decltype(inZero)>(in, out, count);
    });
  });
  if (!known)
    return Error(GPIPE_RT_INVALID_ARGUMENT, "cast")
           << "unsupported conversion from " << gpipe_rt_dtype_name(inType)
           << " to " << gpipe_rt_dtype_name(outType)
           << " (supported: f32, f64, i32, i64, i1)";
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cpu_matmul_f32(const float *lhs, const int64_t *lhsShape,
                        int32_t lhsRank, const float *rhs,
                        const int64_t *rhsShape, int32_t rhsRank, float *out,
                        const int64_t *outShape, int32_t outRank) {
  const char *kernel = "matmul";
  Shape a, b, res;
  GPIPE_RT_TRY(readShape(kernel, "lhs", lhsShape, lhsRank, a));
  GPIPE_RT_TRY(readShape(kernel, "rhs", rhsShape, rhsRank, b));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, res));
  if (a.rank < 2 || b.rank < 2)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "operands must have rank 2 or more, got " << a << " and " << b;
  int64_t m = a.dims[a.rank - 2], k = a.dims[a.rank - 1];
  int64_t k2 = b.dims[b.rank - 2], n = b.dims[b.rank - 1];
  if (k != k2)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "inner dimensions differ: " << a << " and " << b;
  // Batch shapes: everything but the matrix dims.
  Shape ab = a, bb = b, batch;
  ab.rank -= 2;
  bb.rank -= 2;
  const Shape *batches[2] = {&ab, &bb};
  Shape expected;
  if (!broadcastShape(batches, 2, batch))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "batch dims of " << a << " and " << b << " do not broadcast";
  expected = batch;
  expected.dims[expected.rank++] = m;
  expected.dims[expected.rank++] = n;
  if (expected.rank > kMaxRank || expected != res)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << a << " x " << b << " gives " << expected
           << ", not the result shape " << res;
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "lhs", lhs, a.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "rhs", rhs, b.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));

  batch.numElements = 1;
  for (int32_t i = 0; i < batch.rank; ++i)
    batch.numElements *= batch.dims[i];
  int64_t strides[3][kMaxRank];
  contiguousStrides(batch, strides[0]);
  broadcastStrides(ab, batch, strides[1]);
  broadcastStrides(bb, batch, strides[2]);
  StridedPlan<3> plan = collapse(batch, strides);

  // One sgemm when rhs is shared by every batch and lhs is not broadcast:
  // the batch folds into the rows.
  bool rhsShared = true;
  for (int32_t d = 0; d < plan.rank; ++d)
    rhsShared = rhsShared && plan.strides[2][d] == 0;
  bool lhsDense = plan.rank == 0 || (plan.rank == 1 && plan.strides[1][0] == 1);
  if (rhsShared && lhsDense)
    return checkedSgemm(kernel, false, false, batch.numElements * m, n, k, 1.0f,
                        lhs, leadingDim(k), rhs, leadingDim(n), 0.0f, out,
                        leadingDim(n));

  gpipe_rt_status status = GPIPE_RT_SUCCESS;
  forEachRun(plan, [&](int64_t count, const int64_t *off, const int64_t *st) {
    for (int64_t i = 0; i < count && status == GPIPE_RT_SUCCESS; ++i) {
      status =
          checkedSgemm(kernel, false, false, m, n, k, 1.0f,
                       lhs + (off[1] + i * st[1]) * m * k, leadingDim(k),
                       rhs + (off[2] + i * st[2]) * k * n, leadingDim(n), 0.0f,
                       out + (off[0] + i * st[0]) * m * n, leadingDim(n));
    }
  });
  return status;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_gemm_f32(const float *a, const int64_t *aShape, const float *b,
                      const int64_t *bShape, const float *c,
                      const int64_t *cShape, int32_t cRank, float alpha,
                      float beta, int32_t transA, int32_t transB, float *out,
                      const int64_t *outShape) {
  const char *kernel = "gemm";
  Shape as, bs, cs, res;
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
  float effectiveBeta = 0.0f;
  if (c) {
    GPIPE_RT_TRY(readShape(kernel, "c", cShape, cRank, cs));
    int64_t strides[2][kMaxRank];
    contiguousStrides(res, strides[0]);
    if (!broadcastStrides(cs, res, strides[1]))
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "c " << cs << " does not broadcast to the result " << res;
    stridedCopy(sizeof(float), res, out, strides[0], c, strides[1]);
    effectiveBeta = beta;
  }
  return checkedSgemm(kernel, transA, transB, m, n, k, alpha, a,
                      leadingDim(as.dims[1]), b, leadingDim(bs.dims[1]),
                      effectiveBeta, out, leadingDim(n));
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_linear_f32(const float *input, const int64_t *inputShape,
                        int32_t inputRank, const float *weight,
                        const int64_t *weightShape, const float *bias,
                        int32_t transposeWeight, float *out,
                        const int64_t *outShape, int32_t outRank) {
  const char *kernel = "linear";
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
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", input, in.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "weight", weight, w.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));
  int64_t rows = res.numElements / outF;
  if (bias) {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out + r * outF, bias, size_t(outF) * sizeof(float));
  }
  return checkedSgemm(kernel, false, transposeWeight != 0, rows, outF, inF,
                      1.0f, input, leadingDim(inF), weight,
                      leadingDim(w.dims[1]), bias ? 1.0f : 0.0f, out,
                      leadingDim(outF));
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Softmax-style kernels: `s` as outer x n x inner around `axis` (a scalar
/// is one element along axis 0).
static gpipe_rt_status splitAtAxis(const char *kernel, const Shape &s,
                                   int64_t axis, int64_t &outer, int64_t &n,
                                   int64_t &inner) {
  if (axis < 0 || axis >= std::max<int64_t>(s.rank, 1) ||
      (s.rank == 0 && axis != 0))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for " << s;
  outer = 1;
  inner = 1;
  n = s.rank ? s.dims[axis] : 1;
  for (int32_t d = 0; d < axis; ++d)
    outer *= s.dims[d];
  for (int32_t d = int32_t(axis) + 1; d < s.rank; ++d)
    inner *= s.dims[d];
  return GPIPE_RT_SUCCESS;
}

/// Layer-norm kernels: `rows` independent rows of the `n` elements of dims
/// [axis, rank).
static gpipe_rt_status splitNormalized(const char *kernel, const Shape &s,
                                       int64_t axis, float epsilon,
                                       int64_t &rows, int64_t &n) {
  if (axis < 0 || axis > s.rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for " << s;
  if (!(epsilon >= 0.0f))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "epsilon must be non-negative, got " << epsilon;
  rows = 1;
  n = 1;
  for (int32_t d = 0; d < axis; ++d)
    rows *= s.dims[d];
  for (int32_t d = int32_t(axis); d < s.rank; ++d)
    n *= s.dims[d];
  return GPIPE_RT_SUCCESS;
}


extern "C" gpipe_rt_status gpipe_rt_cpu_softmax_f32(const float *in,
                                                    const int64_t *shape,
                                                    int32_t rank, int64_t axis,
                                                    float *out) {
  const char *kernel = "softmax";
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  int64_t outer = 0, n = 0, inner = 0;
  GPIPE_RT_TRY(splitAtAxis(kernel, s, axis, outer, n, inner));
  if (s.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, s.numElements));

  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const float *x = in + o * n;
      float *y = out + o * n;
      float m = maxOf(x, n);
      for (int64_t j = 0; j < n; ++j)
        y[j] = std::exp(x[j] - m);
      float sum = float(sumMapped(y, n, [](float v) { return double(v); }));
      for (int64_t j = 0; j < n; ++j)
        y[j] = y[j] / sum;
    }
    return GPIPE_RT_SUCCESS;
  }

  // Strided axis: keep `inner` running maxima and sums, walk the axis with
  // contiguous vectors.
  std::vector<float> maxima(static_cast<size_t>(inner));
  std::vector<double> sums(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const float *x = in + o * n * inner;
    float *y = out + o * n * inner;
    std::fill(maxima.begin(), maxima.end(),
              -std::numeric_limits<float>::infinity());
    std::fill(sums.begin(), sums.end(), 0.0);
    float *mx = maxima.data();
    double *sm = sums.data();
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        mx[i] = x[j * inner + i] > mx[i] ? x[j * inner + i] : mx[i];
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < inner; ++i) {
        float e = std::exp(x[j * inner + i] - mx[i]);
        y[j * inner + i] = e;
        sm[i] += e;
      }
    }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        y[j * inner + i] = y[j * inner + i] / float(sm[i]);
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_layer_norm_f32(const float *in, const int64_t *shape, int32_t rank,
                            int64_t axis, const float *scale, const float *bias,
                            float epsilon, float *out, float *mean,
                            float *rstd) {
  const char *kernel = "layer_norm";
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  int64_t rows = 0, n = 0;
  GPIPE_RT_TRY(splitNormalized(kernel, s, axis, epsilon, rows, n));
  if (s.numElements == 0) {
    // Rows of zero elements have no mean; leave everything untouched.
    return GPIPE_RT_SUCCESS;
  }
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "scale", scale, n));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, s.numElements));
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = in + r * n;
    float *y = out + r * n;
    double mu = sumMapped(x, n, [](float v) { return double(v); }) / double(n);
    double var = sumMapped(x, n,
                           [mu](float v) {
                             double d = double(v) - mu;
                             return d * d;
                           }) /
                 double(n);
    float muF = float(mu);
    float rs = float(1.0 / std::sqrt(var + double(epsilon)));
    if (bias) {
      for (int64_t j = 0; j < n; ++j)
        y[j] = (x[j] - muF) * rs * scale[j] + bias[j];
    } else {
      for (int64_t j = 0; j < n; ++j)
        y[j] = (x[j] - muF) * rs * scale[j];
    }
    if (mean)
      mean[r] = muF;
    if (rstd)
      rstd[r] = rs;
  }
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cpu_gather(
    gpipe_rt_dtype dtype, const void *data, const int64_t *dataShape,
    int32_t dataRank, gpipe_rt_dtype indexType, const void *indices,
    const int64_t *indicesShape, int32_t indicesRank, int64_t axis, void *out) {
  const char *kernel = "gather";
  size_t elemSize;
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
  GPIPE_RT_TRY(checkIndexType(kernel, "indices", indexType));
  Shape ds, is;
  GPIPE_RT_TRY(readShape(kernel, "data", dataShape, dataRank, ds));
  GPIPE_RT_TRY(readShape(kernel, "indices", indicesShape, indicesRank, is));
  if (axis < 0 || axis >= ds.rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for data " << ds;
  if (ds.rank - 1 + is.rank > kMaxRank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "result rank " << ds.rank - 1 + is.rank << " exceeds "
           << kMaxRank;
  int64_t outer = 1, inner = 1, axisDim = ds.dims[axis];
  for (int32_t d = 0; d < axis; ++d)
    outer *= ds.dims[d];
  for (int32_t d = int32_t(axis) + 1; d < ds.rank; ++d)
    inner *= ds.dims[d];
  GPIPE_RT_TRY(checkPointer(kernel, "indices", indices, is.numElements));
  // Check every index before writing anything.
  for (int64_t i = 0; i < is.numElements; ++i) {
    int64_t idx = readIndex(indexType, indices, i);
    if (idx < 0 || idx >= axisDim)
      return Error(GPIPE_RT_OUT_OF_RANGE, kernel)
             << "index " << idx << " at position " << positionOf(is, i)
             << " of indices " << is << " is out of range [0, " << axisDim
             << ") for axis " << axis << " of data " << ds;
  }
  if (is.numElements > 0 &&
      outer * inner > std::numeric_limits<int64_t>::max() / is.numElements)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "result of gathering " << is << " from " << ds
           << " has more elements than int64 holds";
  int64_t total = outer * is.numElements * inner;
  if (total == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "data", data, ds.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, total));
  const char *src = static_cast<const char *>(data);
  char *dst = static_cast<char *>(out);
  size_t rowBytes = size_t(inner) * elemSize;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < is.numElements; ++i) {
      int64_t idx = readIndex(indexType, indices, i);
      std::memcpy(dst + size_t(o * is.numElements + i) * rowBytes,
                  src + size_t(o * axisDim + idx) * rowBytes, rowBytes);
    }
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_transpose(gpipe_rt_dtype dtype, const void *in,
                       const int64_t *shape, int32_t rank, const int64_t *perm,
                       void *out) {
  const char *kernel = "transpose";
  size_t elemSize;
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
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
  if (s.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, s.numElements));
  Shape res = s;
  int64_t inStrides[kMaxRank], strides[2][kMaxRank];
  contiguousStrides(s, inStrides);
  for (int32_t i = 0; i < s.rank; ++i) {
    res.dims[i] = s.dims[perm[i]];
    strides[1][i] = inStrides[perm[i]];
  }
  contiguousStrides(res, strides[0]);
  StridedPlan<2> plan = collapse(res, strides);
  switch (elemSize) {
  case 1:
    transposeTyped<Bits<1>::type>(plan, out, in);
    break;
  case 2:
    transposeTyped<Bits<2>::type>(plan, out, in);
    break;
  case 4:
    transposeTyped<Bits<4>::type>(plan, out, in);
    break;
  default:
    transposeTyped<Bits<8>::type>(plan, out, in);
    break;
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_slice(gpipe_rt_dtype dtype, const void *in, const int64_t *shape,
                   int32_t rank, const int64_t *offsets, const int64_t *sizes,
                   const int64_t *strides, void *out) {
  const char *kernel = "slice";
  size_t elemSize;
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
  Shape s, res;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  if (s.rank > 0 && (!offsets || !strides))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "null offsets or strides";
  GPIPE_RT_TRY(readShape(kernel, "sizes", sizes, rank, res));
  int64_t inStrides[kMaxRank], st[2][kMaxRank];
  contiguousStrides(s, inStrides);
  contiguousStrides(res, st[0]);
  int64_t base = 0;
  for (int32_t i = 0; i < s.rank; ++i) {
    int64_t off = offsets[i], size = sizes[i], step = strides[i];
    bool ok = step > 0 && off >= 0 &&
              (size == 0 ? off <= s.dims[i]
                         : off < s.dims[i] &&
                               (size - 1) <= (s.dims[i] - 1 - off) / step);
    if (!ok)
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "dim " << i << ": offset " << off << ", size " << size
             << ", stride " << step << " do not fit in " << s.dims[i]
             << " (input " << s << ")";
    base += off * inStrides[i];
    st[1][i] = inStrides[i] * step;
  }
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));
  stridedCopy(elemSize, res, out, st[0],
              static_cast<const char *>(in) + size_t(base) * elemSize, st[1]);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_split(gpipe_rt_dtype dtype, const void *in, const int64_t *shape,
                   int32_t rank, int64_t axis, const int64_t *sizes,
                   int32_t numOutputs, void *const *outs) {
  const char *kernel = "split";
  size_t elemSize;
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
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
  int64_t inStrides[kMaxRank], st[2][kMaxRank];
  contiguousStrides(s, inStrides);
  std::copy(inStrides, inStrides + s.rank, st[1]);
  int64_t offset = 0;
  for (int32_t i = 0; i < numOutputs; ++i) {
    Shape piece = s;
    piece.dims[axis] = sizes[i];
    piece.numElements =
        s.dims[axis] ? s.numElements / s.dims[axis] * sizes[i] : 0;
    GPIPE_RT_TRY(checkPointer(kernel, "result", outs[i], piece.numElements));
    contiguousStrides(piece, st[0]);
    stridedCopy(elemSize, piece, outs[i], st[0],
                static_cast<const char *>(in) +
                    size_t(offset * inStrides[axis]) * elemSize,
                st[1]);
    offset += sizes[i];
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_concat(gpipe_rt_dtype dtype, int32_t numInputs,
                    const void *const *inputs, const int64_t *const *shapes,
                    int32_t rank, int64_t axis, void *out) {
  const char *kernel = "concat";
  size_t elemSize;
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
  if (numInputs < 1 || !inputs || !shapes)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "expected at least one input";
  std::vector<Shape> in(static_cast<size_t>(numInputs));
  for (int32_t i = 0; i < numInputs; ++i)
    GPIPE_RT_TRY(readShape(kernel, "input", shapes[i], rank, in[size_t(i)]));
  if (axis < 0 || axis >= rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for rank " << rank;
  Shape res = in[0];
  res.dims[axis] = 0;
  for (int32_t i = 0; i < numInputs; ++i) {
    const Shape &s = in[size_t(i)];
    for (int32_t d = 0; d < rank; ++d)
      if (d != axis && s.dims[d] != res.dims[d])
        return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
               << "input " << i << " " << s << " does not match input 0 "
               << in[0] << " outside axis " << axis;
    if (s.dims[axis] > std::numeric_limits<int64_t>::max() - res.dims[axis])
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "result too large";
    res.dims[axis] += s.dims[axis];
  }
  int64_t outStrides[kMaxRank], st[2][kMaxRank];
  contiguousStrides(res, outStrides);
  std::copy(outStrides, outStrides + rank, st[0]);
  int64_t offset = 0;
  for (int32_t i = 0; i < numInputs; ++i) {
    const Shape &s = in[size_t(i)];
    GPIPE_RT_TRY(checkPointer(kernel, "input", inputs[i], s.numElements));
    if (s.numElements > 0)
      GPIPE_RT_TRY(checkPointer(kernel, "result", out, 1));
    contiguousStrides(s, st[1]);
    stridedCopy(elemSize, s,
                static_cast<char *>(out) +
                    size_t(offset * outStrides[axis]) * elemSize,
                st[0], inputs[i], st[1]);
    offset += s.dims[axis];
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_copy(gpipe_rt_dtype dtype,
                                             const void *in, void *out,
                                             int64_t count) {
  size_t elemSize;
  GPIPE_RT_TRY(dtypeSize("copy", dtype, elemSize));
  GPIPE_RT_TRY(checkCount("copy", count));
  GPIPE_RT_TRY(checkPointer("copy", "input", in, count));
  GPIPE_RT_TRY(checkPointer("copy", "result", out, count));
  if (count > 0 && in != out)
    std::memmove(out, in, size_t(count) * elemSize);
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cpu_cross_entropy_f32(const float *logits, const int64_t *logitsShape,
                               int32_t logitsRank, gpipe_rt_dtype labelType,
                               const void *labels, float *loss) {
  const char *kernel = "cross_entropy";
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "logits", logitsShape, logitsRank, s));
  GPIPE_RT_TRY(checkIndexType(kernel, "labels", labelType));
  if (s.rank < 1)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "logits must have a class dim";
  if (!loss)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "null loss";
  Shape rowsShape = s;
  --rowsShape.rank;
  int64_t classes = s.dims[s.rank - 1];
  int64_t rows = 1;
  for (int32_t d = 0; d < rowsShape.rank; ++d)
    rows *= rowsShape.dims[d];
  rowsShape.numElements = rows;
  GPIPE_RT_TRY(checkPointer(kernel, "labels", labels, rows));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = readIndex(labelType, labels, r);
    if (label < 0 || label >= classes)
      return Error(GPIPE_RT_OUT_OF_RANGE, kernel)
             << "label " << label << " at position " << positionOf(rowsShape, r)
             << " is out of range [0, " << classes << ")";
  }
  GPIPE_RT_TRY(checkPointer(kernel, "logits", logits, s.numElements));
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = logits + r * classes;
    float m = maxOf(x, classes);
    double sum =
        sumMapped(x, classes, [m](float v) { return double(std::exp(v - m)); });
    double lse = double(m) + std::log(sum);
    total += lse - double(x[readIndex(labelType, labels, r)]);
  }
  *loss = float(total / double(rows));
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_mse_f32(const float *input,
                                                const float *target,
                                                int64_t count, float *loss) {
  GPIPE_RT_TRY(checkCount("mse", count));
  GPIPE_RT_TRY(checkPointer("mse", "input", input, count));
  GPIPE_RT_TRY(checkPointer("mse", "target", target, count));
  if (!loss)
    return Error(GPIPE_RT_INVALID_ARGUMENT, "mse") << "null loss";
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      double d = double(input[i + k]) - double(target[i + k]);
      acc[k] += d * d;
    }
  }
  for (int k = 0; i + k < count; ++k) {
    double d = double(input[i + k]) - double(target[i + k]);
    acc[k] += d * d;
  }
  *loss = float(combineLanes(acc) / double(count));
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Backward kernels
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cpu_reduce_sum_f32(const float *in, const int64_t *shape, int32_t rank,
                            const int64_t *axes, int32_t numAxes, float *out) {
  const char *kernel = "reduce_sum";
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  if (numAxes < 0 || numAxes > s.rank || (numAxes > 0 && !axes))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << numAxes << " axes for input " << s;
  bool reduced[kMaxRank] = {};
  for (int32_t i = 0; i < numAxes; ++i) {
    if (axes[i] < 0 || axes[i] >= s.rank || (i > 0 && axes[i] <= axes[i - 1]))
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "axes must be sorted, distinct and below rank " << s.rank
             << " (axis " << axes[i] << " at position " << i << ")";
    reduced[axes[i]] = true;
  }
  // The result: the kept dims, row-major; its strides per input dim (0 on
  // the reduced ones).
  Shape res;
  int64_t strides[2][kMaxRank];
  res.rank = 0;
  res.numElements = 1;
  for (int32_t d = 0; d < s.rank; ++d)
    if (!reduced[d]) {
      res.dims[res.rank++] = s.dims[d];
      res.numElements *= s.dims[d];
    }
  {
    int64_t stride = 1;
    for (int32_t d = s.rank - 1; d >= 0; --d) {
      strides[0][d] = reduced[d] ? 0 : stride;
      if (!reduced[d])
        stride *= s.dims[d];
    }
  }
  contiguousStrides(s, strides[1]);
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, res.numElements));
  if (s.numElements == 0) {
    std::fill(out, out + res.numElements, 0.0f);
    return GPIPE_RT_SUCCESS;
  }
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  // Row-major order over the input visits, for every result element, its
  // inputs in increasing index order of the reduced dims.
  std::vector<double> acc(static_cast<size_t>(res.numElements), 0.0);
  StridedPlan<2> plan = collapse(s, strides);
  double *a = acc.data();
  forEachRun(plan, [&](int64_t n, const int64_t *off, const int64_t *st) {
    double *o = a + off[0];
    const float *x = in + off[1];
    int64_t so = st[0], sx = st[1];
    if (so == 0) {
      double sum = *o;
      for (int64_t i = 0; i < n; ++i)
        sum += double(x[i * sx]);
      *o = sum;
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      o[i * so] += double(x[i * sx]);
  });
  for (int64_t i = 0; i < res.numElements; ++i)
    out[i] = float(a[i]);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_insert_slice(
    gpipe_rt_dtype dtype, const void *source, const int64_t *sourceShape,
    const void *dest, const int64_t *destShape, int32_t rank,
    const int64_t *offsets, const int64_t *strides, void *out) {
  const char *kernel = "insert_slice";
  size_t elemSize;
  GPIPE_RT_TRY(dtypeSize(kernel, dtype, elemSize));
  Shape src, dst;
  GPIPE_RT_TRY(readShape(kernel, "source", sourceShape, rank, src));
  GPIPE_RT_TRY(readShape(kernel, "dest", destShape, rank, dst));
  if (dst.rank > 0 && (!offsets || !strides))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "null offsets or strides";
  int64_t dstStrides[kMaxRank], st[2][kMaxRank];
  contiguousStrides(dst, dstStrides);
  contiguousStrides(src, st[1]);
  int64_t base = 0;
  for (int32_t i = 0; i < dst.rank; ++i) {
    int64_t off = offsets[i], size = src.dims[i], step = strides[i];
    bool ok = step > 0 && off >= 0 &&
              (size == 0 ? off <= dst.dims[i]
                         : off < dst.dims[i] &&
                               (size - 1) <= (dst.dims[i] - 1 - off) / step);
    if (!ok)
      return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
             << "dim " << i << ": offset " << off << ", size " << size
             << ", stride " << step << " do not fit in " << dst.dims[i]
             << " (source " << src << ", dest " << dst << ")";
    base += off * dstStrides[i];
    st[0][i] = dstStrides[i] * step;
  }
  if (dst.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "dest", dest, dst.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, dst.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "source", source, src.numElements));
  if (out != dest)
    std::memmove(out, dest, size_t(dst.numElements) * elemSize);
  stridedCopy(elemSize, src, static_cast<char *>(out) + size_t(base) * elemSize,
              st[0], source, st[1]);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_gather_grad_f32(gpipe_rt_dtype indexType, const void *indices,
                             const int64_t *indicesShape, int32_t indicesRank,
                             const float *grad, const int64_t *gradShape,
                             int32_t gradRank, int64_t axis, float *out,
                             const int64_t *outShape, int32_t outRank) {
  const char *kernel = "gather_grad";
  GPIPE_RT_TRY(checkIndexType(kernel, "indices", indexType));
  Shape is, gs, os;
  GPIPE_RT_TRY(readShape(kernel, "indices", indicesShape, indicesRank, is));
  GPIPE_RT_TRY(readShape(kernel, "grad", gradShape, gradRank, gs));
  GPIPE_RT_TRY(readShape(kernel, "result", outShape, outRank, os));
  if (axis < 0 || axis >= os.rank)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "axis " << axis << " is out of range for result " << os;
  // grad must be out.shape[:axis] + indices.shape + out.shape[axis+1:].
  Shape expected;
  expected.rank = 0;
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
  int64_t outer = 1, inner = 1, axisDim = os.dims[axis];
  for (int32_t d = 0; d < axis; ++d)
    outer *= os.dims[d];
  for (int32_t d = int32_t(axis) + 1; d < os.rank; ++d)
    inner *= os.dims[d];
  GPIPE_RT_TRY(checkPointer(kernel, "indices", indices, is.numElements));
  for (int64_t i = 0; i < is.numElements; ++i) {
    int64_t idx = readIndex(indexType, indices, i);
    if (idx < 0 || idx >= axisDim)
      return Error(GPIPE_RT_OUT_OF_RANGE, kernel)
             << "index " << idx << " at position " << positionOf(is, i)
             << " of indices " << is << " is out of range [0, " << axisDim
             << ") for axis " << axis << " of " << os;
  }
  if (os.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, os.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, gs.numElements));
  std::vector<double> acc(static_cast<size_t>(os.numElements), 0.0);
  int64_t count = is.numElements;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t idx = readIndex(indexType, indices, i);
      double *dst = acc.data() + (o * axisDim + idx) * inner;
      const float *src = grad + (o * count + i) * inner;
      for (int64_t k = 0; k < inner; ++k)
        dst[k] += double(src[k]);
    }
  }
  for (int64_t i = 0; i < os.numElements; ++i)
    out[i] = float(acc[size_t(i)]);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_softmax_grad_f32(const float *output, const float *grad,
                              const int64_t *shape, int32_t rank, int64_t axis,
                              float *out) {
  const char *kernel = "softmax_grad";
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  int64_t outer = 0, n = 0, inner = 0;
  GPIPE_RT_TRY(splitAtAxis(kernel, s, axis, outer, n, inner));
  if (s.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "output", output, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, s.numElements));
  std::vector<double> sums(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const float *y = output + o * n * inner;
    const float *dy = grad + o * n * inner;
    float *dx = out + o * n * inner;
    std::fill(sums.begin(), sums.end(), 0.0);
    double *sm = sums.data();
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        sm[i] += double(dy[j * inner + i]) * double(y[j * inner + i]);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        dx[j * inner + i] = float(double(y[j * inner + i]) *
                                  (double(dy[j * inner + i]) - sm[i]));
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_layer_norm_grad_f32(
    const float *in, const int64_t *shape, int32_t rank, int64_t axis,
    const float *scale, const float *grad, float epsilon, float *inputGrad,
    float *scaleGrad, float *biasGrad) {
  const char *kernel = "layer_norm_grad";
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "input", shape, rank, s));
  int64_t rows = 0, n = 0;
  GPIPE_RT_TRY(splitNormalized(kernel, s, axis, epsilon, rows, n));
  if (n == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "scale", scale, n));
  if (scaleGrad)
    std::fill(scaleGrad, scaleGrad + n, 0.0f);
  if (biasGrad)
    std::fill(biasGrad, biasGrad + n, 0.0f);
  if (s.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, s.numElements));
  std::vector<double> xhat(static_cast<size_t>(n));
  std::vector<double> scaleAcc(scaleGrad ? size_t(n) : 0, 0.0);
  std::vector<double> biasAcc(biasGrad ? size_t(n) : 0, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = in + r * n;
    const float *dy = grad + r * n;
    double mu = sumMapped(x, n, [](float v) { return double(v); }) / double(n);
    double var = sumMapped(x, n,
                           [mu](float v) {
                             double d = double(v) - mu;
                             return d * d;
                           }) /
                 double(n);
    double rs = 1.0 / std::sqrt(var + double(epsilon));
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      double xh = (double(x[j]) - mu) * rs;
      double g = double(dy[j]) * double(scale[j]);
      xhat[size_t(j)] = xh;
      sumG += g;
      sumGX += g * xh;
    }
    if (inputGrad) {
      double meanG = sumG / double(n), meanGX = sumGX / double(n);
      float *dx = inputGrad + r * n;
      for (int64_t j = 0; j < n; ++j) {
        double g = double(dy[j]) * double(scale[j]);
        dx[j] = float(rs * (g - meanG - xhat[size_t(j)] * meanGX));
      }
    }
    if (scaleGrad)
      for (int64_t j = 0; j < n; ++j)
        scaleAcc[size_t(j)] += double(dy[j]) * xhat[size_t(j)];
    if (biasGrad)
      for (int64_t j = 0; j < n; ++j)
        biasAcc[size_t(j)] += double(dy[j]);
  }
  if (scaleGrad)
    for (int64_t j = 0; j < n; ++j)
      scaleGrad[j] = float(scaleAcc[size_t(j)]);
  if (biasGrad)
    for (int64_t j = 0; j < n; ++j)
      biasGrad[j] = float(biasAcc[size_t(j)]);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_gelu_grad_f32(const float *in,
                                                      const float *grad,
                                                      float *out,
                                                      int64_t count) {
  const char *kernel = "gelu_grad";
  GPIPE_RT_TRY(checkCount(kernel, count));
  GPIPE_RT_TRY(checkPointer(kernel, "input", in, count));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, count));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, count));
  constexpr double kSqrtHalf = 0.70710678118654752440;
  constexpr double kInvSqrtTwoPi = 0.39894228040143267794;
  for (int64_t i = 0; i < count; ++i) {
    double x = in[i];
    double cdf = 0.5 * (1.0 + std::erf(x * kSqrtHalf));
    double pdf = kInvSqrtTwoPi * std::exp(-0.5 * x * x);
    out[i] = float(double(grad[i]) * (cdf + x * pdf));
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_cross_entropy_grad_at_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, const float *grad,
    float *out) {
  if (!grad)
    return Error(GPIPE_RT_INVALID_ARGUMENT, "cross_entropy_grad")
           << "null grad";
  return gpipe_rt_cpu_cross_entropy_grad_f32(logits, logitsShape, logitsRank,
                                             labelType, labels, *grad, out);
}

extern "C" gpipe_rt_status gpipe_rt_cpu_fill_f32(float *out, int64_t count,
                                                 float value) {
  const char *kernel = "fill";
  GPIPE_RT_TRY(checkCount(kernel, count));
  GPIPE_RT_TRY(checkPointer(kernel, "out", out, count));
  for (int64_t i = 0; i < count; ++i)
    out[i] = value;
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_cross_entropy_grad_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, float grad, float *out) {
  const char *kernel = "cross_entropy_grad";
  Shape s;
  GPIPE_RT_TRY(readShape(kernel, "logits", logitsShape, logitsRank, s));
  GPIPE_RT_TRY(checkIndexType(kernel, "labels", labelType));
  if (s.rank < 1)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "logits must have a class dim";
  Shape rowsShape = s;
  --rowsShape.rank;
  int64_t classes = s.dims[s.rank - 1];
  int64_t rows = 1;
  for (int32_t d = 0; d < rowsShape.rank; ++d)
    rows *= rowsShape.dims[d];
  rowsShape.numElements = rows;
  GPIPE_RT_TRY(checkPointer(kernel, "labels", labels, rows));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = readIndex(labelType, labels, r);
    if (label < 0 || label >= classes)
      return Error(GPIPE_RT_OUT_OF_RANGE, kernel)
             << "label " << label << " at position " << positionOf(rowsShape, r)
             << " is out of range [0, " << classes << ")";
  }
  if (s.numElements == 0)
    return GPIPE_RT_SUCCESS;
  GPIPE_RT_TRY(checkPointer(kernel, "logits", logits, s.numElements));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, s.numElements));
  double factor = double(grad) / double(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = logits + r * classes;
    float *dx = out + r * classes;
    int64_t label = readIndex(labelType, labels, r);
    float m = maxOf(x, classes);
    double sum =
        sumMapped(x, classes, [m](float v) { return double(std::exp(v - m)); });
    for (int64_t j = 0; j < classes; ++j) {
      double p = double(std::exp(x[j] - m)) / sum;
      dx[j] = float((p - (j == label ? 1.0 : 0.0)) * factor);
    }
  }
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cpu_sgd_update_f32(float *param,
                                                       const float *grad,
                                                       int64_t count,
                                                       float lr) {
  const char *kernel = "sgd_update";
  GPIPE_RT_TRY(checkCount(kernel, count));
  GPIPE_RT_TRY(checkPointer(kernel, "param", param, count));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, count));
  for (int64_t i = 0; i < count; ++i) {
    float step = lr * grad[i];
    param[i] = param[i] - step;
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_accumulate_f32(float *acc,
                                                      const float *grad,
                                                      int64_t count,
                                                      int32_t first) {
  const char *kernel = "accumulate";
  GPIPE_RT_TRY(checkCount(kernel, count));
  GPIPE_RT_TRY(checkPointer(kernel, "acc", acc, count));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, count));
  if (first) {
    if (acc != grad)
      std::memcpy(acc, grad, size_t(count) * sizeof(float));
    return GPIPE_RT_SUCCESS;
  }
  for (int64_t i = 0; i < count; ++i)
    acc[i] = acc[i] + grad[i];
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Parameter initialization
//===----------------------------------------------------------------------===//

extern "C" uint64_t gpipe_rt_hash_name(const char *name, size_t size) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(name[i]);
    h *= 1099511628211ull;
  }
  return h;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_fill_init_f32(gpipe_rt_init init, float *out, int64_t count,
                           double scale, uint64_t seed, uint64_t stream) {
  const char *kernel = "fill_init";
  GPIPE_RT_TRY(checkCount(kernel, count));
  GPIPE_RT_TRY(checkPointer(kernel, "result", out, count));
  switch (init) {
  case GPIPE_RT_INIT_ZEROS:
  case GPIPE_RT_INIT_ONES:
    std::fill(out, out + count, init == GPIPE_RT_INIT_ONES ? 1.0f : 0.0f);
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
  uint64_t key = splitMix64(seed ^ splitMix64(stream));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = splitMix64(key + uint64_t(i) * kGoldenGamma);
    if (init == GPIPE_RT_INIT_UNIFORM) {
      double u = double(bits >> 40) * 0x1.0p-24; // [0, 1), 24 bits.
      out[i] = float((2.0 * u - 1.0) * scale);
    } else {
      // Box-Muller on the two 32-bit halves: u1 in (0, 1], u2 in [0, 1).
      double u1 = double((bits >> 32) + 1) * 0x1.0p-32;
      double u2 = double(bits & 0xFFFFFFFFull) * 0x1.0p-32;
      double z = std::sqrt(-2.0 * std::log(u1)) *
                 std::cos(6.283185307179586476925 * u2);
      out[i] = float(z * scale);
    }
  }
  return GPIPE_RT_SUCCESS;
}
