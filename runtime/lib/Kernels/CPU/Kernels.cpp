//===- Kernels.cpp - CPU kernels for the nn ops -----------------*- C++ -*-===//
//
// The CPU backend's kernels behind the C ABI of CPUKernels.h. Arguments are
// validated first, by the checks the CUDA kernels share
// (Common/KernelArgs.h), failures going to this library's thread-local
// message that gpipe_rt_last_error() reads. Then each kernel runs plain
// loops written so the compiler can vectorize the innermost one (broadcast
// and strided operands are collapsed to a few dims whose innermost stride is
// 0 or 1). Reductions run in double precision in a fixed order (eight
// interleaved partial sums combined in a fixed tree), so results are bitwise
// reproducible. Every sgemm goes through checkedSgemm, which validates its
// arguments against BLAS's int range before calling OpenBLAS.
//
// The entry points are defined against the prototypes CPUKernels.h expands
// from Kernels.def: a definition whose parameters differ from the .def's
// conflicts with its C declaration and does not compile.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/ScalarMath.h"

#include "CPU/CPUInternal.h"
#include "CPU/Parallel.h"
#include "CPU/Reductions.h"
#include "Common/KernelArgs.h"
#include "Common/Remainders.h"

#include <cblas.h>

// OpenBLAS's own cblas.h declares these; repeat them so the build does not
// depend on which cblas.h the system's alternatives pick.
extern "C" void openblas_set_num_threads(int threads);

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpipe::rt {
namespace {

using namespace args;
using cpu::combineLanes;
using cpu::forEachLane;
using cpu::kLanes;
using cpu::maxOf;
using cpu::sumLanes;
using cpu::sumMapped;
using cpu::threadScratch;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// The message of the last failing call on this thread, read by
/// gpipe_rt_last_error.
thread_local std::string lastError;

/// `name` for the shared checks: its failures go to lastError.
Kernel cpuKernel(const char *name) { return Kernel{name, &lastError}; }

//===----------------------------------------------------------------------===//
// Strided iteration
//===----------------------------------------------------------------------===//

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

/// forEachRun with the plan's outermost dim split over the kernel threads
/// (cpu::parallelFor), for plans whose operand 0, the result, gets each
/// element from one run only, so the runs may go in any order. Each plan
/// element stands for `weight` elements of work.
template <int N, typename Fn>
void forEachRunParallel(const StridedPlan<N> &plan, const Fn &fn,
                        int64_t weight = 1) {
  int64_t total = weight;
  for (int32_t d = 0; d < plan.rank; ++d)
    total *= plan.dims[d];
  if (plan.rank == 0 || total < 2 * cpu::kParallelGrain ||
      cpu::kernelThreads() <= 1) {
    forEachRun(plan, fn);
    return;
  }
  int64_t perIndex = std::max<int64_t>(total / plan.dims[0], 1);
  int64_t grain =
      std::max<int64_t>(1, (cpu::kParallelGrain + perIndex - 1) / perIndex);
  cpu::parallelFor(plan.dims[0], grain, [&](int64_t begin, int64_t end) {
    StridedPlan<N> part = plan;
    part.dims[0] = end - begin;
    int64_t base[N];
    for (int k = 0; k < N; ++k)
      base[k] = begin * plan.strides[k][0];
    forEachRun(part, [&](int64_t n, const int64_t *off, const int64_t *st) {
      int64_t shifted[N];
      for (int k = 0; k < N; ++k)
        shifted[k] = off[k] + base[k];
      fn(n, shifted, st);
    });
  });
}

/// `Parallel`: over the kernel threads (the source and the result must not
/// overlap).
template <typename T, bool Parallel = false>
void copyRuns(const StridedPlan<2> &plan, void *dst, const void *src) {
  T *d = static_cast<T *>(dst);
  const T *s = static_cast<const T *>(src);
  auto run = [&](int64_t n, const int64_t *off, const int64_t *st) {
    T *dd = d + off[0];
    const T *ss = s + off[1];
    if (st[0] == 1 && st[1] == 1) {
      std::memcpy(dd, ss, size_t(n) * sizeof(T));
      return;
    }
    int64_t ds = st[0], sst = st[1];
    for (int64_t i = 0; i < n; ++i)
      dd[i * ds] = ss[i * sst];
  };
  if constexpr (Parallel)
    forEachRunParallel(plan, run);
  else
    forEachRun(plan, run);
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
  // Over the kernel threads when source and result lie apart (a copy
  // within one buffer keeps its order).
  auto extent = [&](const int64_t *st) {
    int64_t last = 0;
    for (int32_t d = 0; d < space.rank; ++d)
      last += (space.dims[d] - 1) * std::llabs(st[d]);
    return (last + 1) * int64_t(elemSize);
  };
  auto lowest = [&](const void *base, const int64_t *st) {
    int64_t below = 0;
    for (int32_t d = 0; d < space.rank; ++d)
      if (st[d] < 0)
        below += (space.dims[d] - 1) * st[d];
    return static_cast<const char *>(base) + below * int64_t(elemSize);
  };
  const char *d0 = lowest(dst, dstStrides), *s0 = lowest(src, srcStrides);
  bool apart = d0 + extent(dstStrides) <= s0 || s0 + extent(srcStrides) <= d0;
  withBitsType(elemSize, [&](auto zero) {
    if (apart)
      copyRuns<decltype(zero), /*Parallel=*/true>(plan, dst, src);
    else
      copyRuns<decltype(zero)>(plan, dst, src);
  });
}

//===----------------------------------------------------------------------===//
// BLAS: the one checking path
//===----------------------------------------------------------------------===//

/// Profiling of the time spent inside sgemm (gpipe_rt_cpu_set_gemm_timing).
std::atomic<bool> gemmTiming{false};
std::atomic<uint64_t> gemmNanoseconds{0};

} // namespace

std::atomic<bool> cpu::kernelTiming{false};
thread_local uint64_t cpu::kernelNanoseconds[GPIPE_RT_KERNEL_CLASS_COUNT] = {};

namespace {
/// The calling thread's sgemm times by shape (gpipe_rt_cpu_thread_gemm_
/// shapes); `gemmShapeCount` past the array's end: some did not fit.
thread_local gpipe_rt_gemm_shape_time gemmShapes[GPIPE_RT_GEMM_SHAPES];
thread_local int32_t gemmShapeCount = 0;
/// Non-zero while a batch records its products itself.
thread_local int gemmShapesHeld = 0;

void recordGemmShape(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                     uint64_t ns, uint64_t calls = 1) {
  if (gemmShapesHeld > 0)
    return;
  gpipe_rt_gemm_shape_time record = {m, n, k, transA, transB, calls, ns};
  int32_t held = std::min<int32_t>(gemmShapeCount, GPIPE_RT_GEMM_SHAPES);
  for (int32_t i = 0; i < held; ++i) {
    gpipe_rt_gemm_shape_time &s = gemmShapes[i];
    if (gpipe_rt_gemm_same_shape(&s, &record)) {
      s.calls += calls;
      s.nanoseconds += ns;
      return;
    }
  }
  if (gemmShapeCount < GPIPE_RT_GEMM_SHAPES)
    gemmShapes[gemmShapeCount] = record;
  gemmShapeCount = std::min(gemmShapeCount + 1, GPIPE_RT_GEMM_SHAPES + 1);
}
} // namespace
thread_local int cpu::kernelDepth = 0;

namespace {

/// Set while a _bf16 contraction runs on this thread: checkedSgemm rounds
/// both operands to bf16 first.
thread_local bool bf16Operands = false;

/// Marks the current thread's GEMMs as bf16 for a scope.
struct Bf16Scope {
  Bf16Scope() { bf16Operands = true; }
  ~Bf16Scope() { bf16Operands = false; }
};

/// `x` rounded to the nearest bf16 (ties to even), as a float; NaN stays a
/// (quiet) NaN, infinities stay.
float roundToBf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) {
    if (u & 0x007fffffu)
      u |= 0x00400000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
  }
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

/// The `rows` x `cols` matrix at `m` (leading dim `ld`) rounded to bf16
/// into `copy` (same layout).
const float *roundedCopy(const float *m, int64_t rows, int64_t cols, int64_t ld,
                         std::vector<float> &copy) {
  copy.resize(size_t((rows - 1) * ld + cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      copy[size_t(r * ld + c)] = roundToBf16(m[r * ld + c]);
  return copy.data();
}

/// M x N x K at most of a product that stays on one thread (OpenBLAS
/// 0.3.21's own threaded interface draws the line there: 65536 x
/// GEMM_MULTITHREAD_THRESHOLD (4)).
constexpr int64_t kSmallProduct = int64_t(1) << 18;

/// OpenBLAS 0.3.21 computes a GEMM of at most 100^3 multiply-adds with a
/// separate small-matrix kernel on CPUs that have one (SkylakeX and later:
/// sgemm_small_kernel_permit), which sums in another order. A block of rows
/// of a split GEMM stays above this many multiply-adds, so it takes the
/// kernel the whole GEMM takes.
constexpr int64_t kSmallKernelProduct = int64_t(1) << 21;

/// Rows per block of a GEMM of `n` columns and depth `k` split by rows: a
/// multiple of the tile height `tile` with more than kSmallKernelProduct
/// multiply-adds.
int64_t splitRows(int64_t tile, int64_t n, int64_t k) {
  int64_t need = kSmallKernelProduct / std::max<int64_t>(1, n * k) + 1;
  return tile * ((need + tile - 1) / tile);
}

/// OpenBLAS runs every call on the calling thread: the runtime splits a
/// GEMM over the kernel threads itself (checkedSgemm). OpenBLAS's threaded
/// driver cuts C where the thread count says, and an element's tile, so
/// the kernel and the order it sums in, depends on where the cuts fall
/// (measured: 0.3.21 on AMD Zen, every shape from 128^3 up and K = 8: 3-6%
/// of the elements differ between 1 and 2 threads); its threads also spin
/// on the cores between calls while the other kernels run.
void singleThreadedOpenBlas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

/// Rows [row, row + rows) of C = alpha * op(A) * op(B) + beta * C
/// (row-major, op(A) [M, K], op(B) [K, N]) in one cblas_sgemm call.
/// beta = 0 is a memset and beta = 1: OpenBLAS's driver scales C by beta
/// (for 0: fills it with zeros, in a loop a few times slower than memset)
/// and then always accumulates into it, so the bits are the same.
void sgemmRows(bool transA, bool transB, int64_t row, int64_t rows, int64_t n,
               int64_t k, float alpha, const float *a, int64_t lda,
               const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  float *block = c + row * ldc;
  if (beta == 0.0f && rows > 0 && n > 0) {
    if (ldc == n)
      std::memset(block, 0, size_t(rows * n) * sizeof(float));
    else
      for (int64_t r = 0; r < rows; ++r)
        std::memset(block + r * ldc, 0, size_t(n) * sizeof(float));
    beta = 1.0f;
  }
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, int(rows), int(n), int(k),
              alpha, transA ? a + row : a + row * lda, int(lda), b, int(ldb),
              beta, block, int(ldc));
}

/// The rows of C a split GEMM's blocks hold a multiple of: the smallest
/// candidate for which cutting C into blocks of rows gives, on this CPU,
/// exactly the bits of one call (a multiple of the sgemm kernel's tile
/// height: 12 on AMD Zen with AVX2), found once by computing a GEMM whole
/// and in blocks (of splitRows rows, the last taking the remainder) for
/// each transpose; 0 when none does (GEMMs then stay whole).
int64_t gemmRowBlock() {
  static const int64_t block = [] {
    singleThreadedOpenBlas();
    // Wide and deep enough that every block runs OpenBLAS's regular kernel
    // (splitRows), as a split GEMM's blocks do.
    const int64_t n = 70, k = 301;
    uint32_t state = 12345;
    auto next = [&] {
      state = state * 1664525u + 1013904223u;
      return float(int32_t(state >> 8) - (1 << 23)) / float(1 << 23);
    };
    for (int64_t b : {4, 8, 12, 16, 24, 32, 48, 64, 96}) {
      int64_t rows = splitRows(b, n, k);
      // Two blocks, then the last with a remainder, as checkedSgemm cuts.
      int64_t m = 3 * rows + b + 5;
      std::vector<float> a(size_t(m * k)), bm(size_t(k * n)),
          whole(size_t(m * n)), parts(size_t(m * n));
      for (float &x : a)
        x = next();
      for (float &x : bm)
        x = next();
      bool same = true;
      for (int t = 0; t < 4 && same; ++t) {
        bool ta = t & 1, tb = t & 2;
        int64_t lda = ta ? m : k, ldb = tb ? k : n;
        auto call = [&](int64_t row, int64_t count, float *c) {
          sgemmRows(ta, tb, row, count, n, k, 1.0f, a.data(), lda, bm.data(),
                    ldb, 0.0f, c, n);
        };
        call(0, m, whole.data());
        int64_t blocks = m / rows;
        for (int64_t i = 0; i < blocks; ++i) {
          int64_t row = i * rows;
          call(row, (i + 1 == blocks ? m : row + rows) - row, parts.data());
        }
        same = std::memcmp(whole.data(), parts.data(),
                           whole.size() * sizeof(float)) == 0;
      }
      if (same)
        return b;
    }
    return int64_t(0);
  }();
  return block;
}

/// A GEMM's shape, layout, leading dimensions, thread count, alpha and
/// beta: what a
/// shape's own split (shapeRowBlock) is decided for.
struct SplitKey {
  int64_t m, n, k, lda, ldb, ldc, flags, beta;
  bool operator==(const SplitKey &o) const {
    return m == o.m && n == o.n && k == o.k && lda == o.lda && ldb == o.ldb &&
           ldc == o.ldc && flags == o.flags && beta == o.beta;
  }
};

struct SplitKeyHash {
  size_t operator()(const SplitKey &key) const {
    return cpu::hashValues(
        {key.m, key.n, key.k, key.lda, key.ldb, key.ldc, key.flags, key.beta});
  }
};

/// Multiply-adds at least of one block of a shape's own split: a worker's
/// wake-up (about 1.3 us) must buy more than it costs (2^16 multiply-adds
/// take about 1.5 us at one core's sgemm rate).
constexpr int64_t kMinBlockProduct = int64_t(1) << 16;

/// Rows per block for a GEMM too small for gemmRowBlock's blocks (which
/// hold 2^21 multiply-adds each, so OpenBLAS takes the regular kernel in
/// all of them) but worth splitting: the smaller transformers' 256 x 64 x
/// 256 runs on one core otherwise. Below that size the bits of a block
/// depend on where it falls in OpenBLAS's register tiles in ways no single
/// tile height captures (measured here, AMD Zen: blocks of 24 rows keep
/// 280 x 64 x 64's bits, 1336 x 70 x 301 needs 48), so, as for libxsmm's
/// kernels (GemmChoice.cpp), the block is decided per shape, at its first
/// call on the thread: the first candidate near m / threads, a multiple of
/// 12, 24, 48, 8, 16, 32 or 64 rows, whose blocks (each one call, the last
/// taking the remainder) give exactly the bits of one call over all of C
/// on random operands of that very shape and layout, with the call's alpha
/// and beta over a C that is not zero (OpenBLAS's edge tiles apply alpha
/// and add C otherwise than its main tiles: a check with alpha 1 into
/// zeros passed 512 x 64 x 32 splits that differed in 10% of the elements
/// at alpha 0.3 into a gradient). 0: none does, the GEMM runs whole. The
/// calling thread keeps the answer, so a thread's later calls of the shape
/// only look it up (a thread of the kernel pool that first gets such a
/// GEMM in a later step, as an attention head's, decides it then).
int64_t shapeRowBlock(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      float alpha, float beta, int64_t lda, int64_t ldb,
                      int64_t ldc, int threads) {
  thread_local std::unordered_map<SplitKey, int64_t, SplitKeyHash> decided;
  uint32_t alphaBits, betaBits;
  std::memcpy(&alphaBits, &alpha, sizeof alphaBits);
  std::memcpy(&betaBits, &beta, sizeof betaBits);
  int64_t flags = int64_t(transA) | int64_t(transB) << 1 |
                  int64_t(threads) << 2 | int64_t(alphaBits) << 31;
  SplitKey key{m, n, k, lda, ldb, ldc, flags, int64_t(betaBits)};
  auto [it, inserted] = decided.try_emplace(key, 0);
  if (!inserted)
    return it->second;
  size_t aSize = size_t(transA ? (k - 1) * lda + m : (m - 1) * lda + k);
  size_t bSize = size_t(transB ? (n - 1) * ldb + k : (k - 1) * ldb + n);
  size_t cSize = size_t((m - 1) * ldc + n);
  std::vector<float> a(aSize), b(bSize), c0(cSize), whole, parts;
  uint32_t state = 2463534242u;
  for (std::vector<float> *v : {&a, &b, &c0})
    cpu::fillCheckOperand(*v, state);
  auto call = [&](int64_t row, int64_t rows, float *c) {
    sgemmRows(transA, transB, row, rows, n, k, alpha, a.data(), lda, b.data(),
              ldb, beta, c, ldc);
  };
  whole = c0;
  call(0, m, whole.data());
  for (int64_t tile : {12, 24, 48, 8, 16, 32, 64}) {
    int64_t rows =
        std::max<int64_t>(tile, (m / threads + tile - 1) / tile * tile);
    int64_t blocks = m / rows;
    if (blocks < 2 || rows * n * k < kMinBlockProduct)
      continue;
    parts = c0;
    for (int64_t i = 0; i < blocks; ++i)
      call(i * rows, (i + 1 == blocks ? m : (i + 1) * rows) - i * rows,
           parts.data());
    if (std::memcmp(whole.data(), parts.data(), cSize * sizeof(float)) == 0)
      return it->second = rows;
  }
  return 0;
}

/// C[M, N] = alpha * op(A) * op(B) + beta * C, row-major, where op(A) is
/// [M, K] and op(B) is [K, N]. Validates every argument before calling
/// cblas_sgemm, so OpenBLAS's own argument checker never fires. Under a
/// Bf16Scope A and B are rounded to bf16 first.
gpipe_rt_status checkedSgemm(const Kernel &kernel, bool transA, bool transB,
                             int64_t m, int64_t n, int64_t k, float alpha,
                             const float *a, int64_t lda, const float *b,
                             int64_t ldb, float beta, float *c, int64_t ldc) {
  bool empty = false;
  GPIPE_RT_TRY(checkSgemm(kernel, transA, transB, m, n, k, a, lda, b, ldb, c,
                          ldc, /*batch=*/1, empty));
  if (empty)
    return GPIPE_RT_SUCCESS;
  if (k == 0 || alpha == 0.0f) {
    // BLAS leaves this case to the implementation's quick return; spell it
    // out: beta == 0 overwrites C (even NaN), otherwise C scales.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return GPIPE_RT_SUCCESS;
  }
  singleThreadedOpenBlas();
  bool timed =
      gemmTiming.load(std::memory_order_relaxed) || cpu::kernelDepth > 0;
  auto start = timed ? std::chrono::steady_clock::now()
                     : std::chrono::steady_clock::time_point();
  auto finishTiming = [&] {
    if (!timed)
      return;
    uint64_t ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count());
    if (gemmTiming.load(std::memory_order_relaxed))
      gemmNanoseconds.fetch_add(ns, std::memory_order_relaxed);
    if (cpu::kernelDepth > 0) {
      cpu::kernelNanoseconds[GPIPE_RT_KERNEL_CLASS_SGEMM] += ns;
      recordGemmShape(transA, transB, m, n, k, ns);
    }
  };
  if (bf16Operands) {
    thread_local std::vector<float> roundedA, roundedB;
    a = roundedCopy(a, transA ? k : m, transA ? m : k, lda, roundedA);
    b = roundedCopy(b, transB ? n : k, transB ? k : n, ldb, roundedB);
  }
  // A large GEMM splits over the kernel threads into blocks of rows of C
  // (gemmRowBlock), one single-threaded sgemm each: every element falls in
  // the same kind of tile, summed in the same order, as in one call over
  // all of C, so the bits do not depend on the thread count
  // (Blas.GemmBitsDoNotDependOnTheThreadCount).
  auto sgemm = [&](int64_t row, int64_t rows) {
    sgemmRows(transA, transB, row, rows, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
  };
  int threads = cpu::kernelThreads();
  // The shape's implementation, as the model's GEMM choice says: libxsmm
  // where it makes a kernel for this call (alpha 1; beta 0 clears C first,
  // as sgemmRows does, so both accumulate), OpenBLAS otherwise.
  if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f) &&
      cpu::gemmImplFor(transA, transB, m, n, k) == GPIPE_RT_GEMM_LIBXSMM) {
    if (beta == 0.0f)
      for (int64_t r = 0; r < m; ++r)
        std::memset(c + r * ldc, 0, size_t(n) * sizeof(float));
    if (cpu::xsmmGemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc,
                      m * n * k > kSmallProduct ? threads : 1)) {
      finishTiming();
      return GPIPE_RT_SUCCESS;
    }
    beta = 1.0f;
  }
  int64_t tile = threads > 1 && m * n * k > kSmallProduct ? gemmRowBlock() : 0;
  int64_t block = tile ? splitRows(tile, n, k) : 0;
  int64_t shapeBlock =
      threads > 1 && m * n * k > kSmallProduct && (block == 0 || m < 2 * block)
          ? shapeRowBlock(transA, transB, m, n, k, alpha, beta, lda, ldb, ldc,
                          threads)
          : 0;
  if (shapeBlock) {
    // The shape's own blocks, one call each, as they were checked.
    int64_t blocks = m / shapeBlock;
    cpu::parallelFor(blocks, 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i)
        sgemm(i * shapeBlock,
              (i + 1 == blocks ? m : (i + 1) * shapeBlock) - i * shapeBlock);
    });
  } else if (block == 0 || m < 2 * block) {
    sgemm(0, m);
  } else {
    // Whole blocks; the last one takes the remainder too, so none falls to
    // OpenBLAS's small-matrix kernel.
    int64_t blocks = m / block;
    int64_t grain = std::max<int64_t>(1, blocks / threads);
    cpu::parallelFor(blocks, grain, [&](int64_t first, int64_t last) {
      int64_t row = first * block;
      sgemm(row, (last == blocks ? m : last * block) - row);
    });
  }
  finishTiming();
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// out[i] = f(a, b) over a broadcast plan (operands: out, lhs, rhs); the
/// innermost strides are 0 or 1, dispatched to four vectorizable loops.
template <typename T, typename R, typename F>
void broadcastBinary(const StridedPlan<3> &plan, const T *lhs, const T *rhs,
                     R *out, F f) {
  forEachRunParallel(plan,
                     [&](int64_t n, const int64_t *off, const int64_t *st) {
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
  forEachRunParallel(
      outer,
      [&](int64_t, const int64_t *off, const int64_t *) {
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
      },
      nj * nl);
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
  copyRuns<T, /*Parallel=*/true>(plan, dst, src);
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

/// The first of `count` indices outside [0, bound), or -1 if there is none.
int64_t firstBadIndex(gpipe_rt_dtype type, const void *indices, int64_t count,
                      int64_t bound) {
  for (int64_t i = 0; i < count; ++i) {
    int64_t idx = readIndex(type, indices, i);
    if (idx < 0 || idx >= bound)
      return i;
  }
  return -1;
}

/// Checks the labels of cross-entropy's rows before anything is computed.
gpipe_rt_status checkLabels(const Kernel &kernel, gpipe_rt_dtype labelType,
                            const void *labels, const LogitsArgs &args) {
  int64_t bad = firstBadIndex(labelType, labels, args.rows, args.classes);
  if (bad < 0)
    return GPIPE_RT_SUCCESS;
  return labelOutOfRange(kernel, readIndex(labelType, labels, bad),
                         args.rowShape, bad, args.classes);
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

namespace cpu {

Kernel kernelNamed(const char *name) { return cpuKernel(name); }

gpipe_rt_status sgemm(const Kernel &kernel, bool transA, bool transB, int64_t m,
                      int64_t n, int64_t k, float alpha, const float *a,
                      int64_t lda, const float *b, int64_t ldb, float beta,
                      float *c, int64_t ldc) {
  return checkedSgemm(kernel, transA, transB, m, n, k, alpha, a, lda, b, ldb,
                      beta, c, ldc);
}

} // namespace cpu
} // namespace gpipe::rt

using namespace gpipe::rt;

//===----------------------------------------------------------------------===//
// Common
//===----------------------------------------------------------------------===//

extern "C" const void *const gpipe_rt_cpu_kernels[] = {
#define GPIPE_RT_ARG(role, type, name) type name
#define GPIPE_RT_KERNEL(name, ret, args)                                       \
  reinterpret_cast<const void *>(&gpipe_rt_cpu_##name),
#include "gpipe/Runtime/Kernels.def"
};
extern "C" const int32_t gpipe_rt_cpu_kernel_count =
    int32_t(sizeof gpipe_rt_cpu_kernels / sizeof gpipe_rt_cpu_kernels[0]);

extern "C" const char *gpipe_rt_last_error(void) { return lastError.c_str(); }

extern "C" void gpipe_rt_clear_error(void) { lastError.clear(); }

extern "C" void gpipe_rt_cpu_set_blas_threads(int32_t threads) {
  gpipe_rt_cpu_set_kernel_threads(threads);
}

extern "C" void gpipe_rt_cpu_set_gemm_timing(int32_t enabled) {
  gemmTiming.store(enabled != 0, std::memory_order_relaxed);
}

extern "C" uint64_t gpipe_rt_cpu_gemm_nanoseconds(void) {
  return gemmNanoseconds.load(std::memory_order_relaxed);
}

extern "C" void gpipe_rt_cpu_set_kernel_timing(int32_t enabled) {
  cpu::kernelTiming.store(enabled != 0, std::memory_order_relaxed);
}

extern "C" uint64_t
gpipe_rt_cpu_thread_kernel_nanoseconds(gpipe_rt_kernel_class cls) {
  return cls >= 0 && cls < GPIPE_RT_KERNEL_CLASS_COUNT
             ? cpu::kernelNanoseconds[cls]
             : 0;
}

extern "C" int32_t
gpipe_rt_cpu_thread_gemm_shapes(gpipe_rt_gemm_shape_time *out,
                                int32_t capacity) {
  int32_t held = std::min<int32_t>(gemmShapeCount, GPIPE_RT_GEMM_SHAPES);
  for (int32_t i = 0; i < std::min(held, capacity); ++i)
    out[i] = gemmShapes[i];
  return gemmShapeCount > GPIPE_RT_GEMM_SHAPES ? -1 : held;
}

extern "C" void gpipe_rt_cpu_reset_thread_gemm_shapes(void) {
  gemmShapeCount = 0;
}

extern "C" int32_t gpipe_rt_cpu_get_blas_threads(void) {
  return gpipe_rt_cpu_get_kernel_threads();
}

extern "C" int64_t gpipe_rt_cpu_gemm_row_block(void) { return gemmRowBlock(); }

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_binary_f32(
    gpipe_rt_binary_op op, const float *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const float *rhs, const int64_t *rhsShape, int32_t rhsRank,
    float *out, const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  Kernel kernel = cpuKernel(binaryName(op));
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkBinary(kernel, op, lhs, lhsShape, lhsRank, rhs, rhsShape,
                           rhsRank, out, outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  const StridedPlan<3> &plan = args.plan;
  switch (op) {
  case GPIPE_RT_ADD:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return a + b; });
    break;
  case GPIPE_RT_SUB:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return a - b; });
    break;
  case GPIPE_RT_MUL:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return a * b; });
    break;
  case GPIPE_RT_DIV:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return a / b; });
    break;
  case GPIPE_RT_POW:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return math::floatPower(a, b); });
    break;
  case GPIPE_RT_MAX:
    broadcastBinary(plan, lhs, rhs, out, [](float a, float b) {
      return a != a ? a : b != b ? b : (a < b ? b : a);
    });
    break;
  case GPIPE_RT_MIN:
    broadcastBinary(plan, lhs, rhs, out, [](float a, float b) {
      return a != a ? a : b != b ? b : (b < a ? b : a);
    });
    break;
  case GPIPE_RT_REMAINDER:
    broadcastBinary(plan, lhs, rhs, out, [](float a, float b) {
      return math::floorRemainder(a, b);
    });
    break;
  case GPIPE_RT_FMOD:
    broadcastBinary(plan, lhs, rhs, out,
                    [](float a, float b) { return fmodf(a, b); });
    break;
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_binary_i64(
    gpipe_rt_binary_op op, const int64_t *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const int64_t *rhs, const int64_t *rhsShape,
    int32_t rhsRank, int64_t *out, const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  Kernel kernel = cpuKernel(binaryName(op));
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkBinaryI64(kernel, op, lhs, lhsShape, lhsRank, rhs, rhsShape,
                              rhsRank, out, outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  if (op == GPIPE_RT_DIV || op == GPIPE_RT_REMAINDER || op == GPIPE_RT_FMOD) {
    int64_t count = 1;
    for (int32_t d = 0; d < rhsRank; ++d)
      count *= rhsShape[d];
    for (int64_t i = 0; i < count; ++i)
      if (rhs[i] == 0)
        return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
               << "integer division by zero at element " << i << " of rhs";
  }
  const StridedPlan<3> &plan = args.plan;
  // Two's complement wraparound, as ONNX's integer ops.
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  switch (op) {
  case GPIPE_RT_ADD:
    broadcastBinary(plan, lhs, rhs, out, [&](int64_t a, int64_t b) {
      return wrap(uint64_t(a) + uint64_t(b));
    });
    break;
  case GPIPE_RT_SUB:
    broadcastBinary(plan, lhs, rhs, out, [&](int64_t a, int64_t b) {
      return wrap(uint64_t(a) - uint64_t(b));
    });
    break;
  case GPIPE_RT_MUL:
    broadcastBinary(plan, lhs, rhs, out, [&](int64_t a, int64_t b) {
      return wrap(uint64_t(a) * uint64_t(b));
    });
    break;
  case GPIPE_RT_DIV:
    // Truncation toward zero; INT64_MIN / -1 wraps to INT64_MIN.
    broadcastBinary(plan, lhs, rhs, out, [](int64_t a, int64_t b) {
      return (a == INT64_MIN && b == -1) ? a : a / b;
    });
    break;
  case GPIPE_RT_MAX:
    broadcastBinary(plan, lhs, rhs, out,
                    [](int64_t a, int64_t b) { return a < b ? b : a; });
    break;
  case GPIPE_RT_MIN:
    broadcastBinary(plan, lhs, rhs, out,
                    [](int64_t a, int64_t b) { return b < a ? b : a; });
    break;
  case GPIPE_RT_POW:
    broadcastBinary(plan, lhs, rhs, out, [](int64_t a, int64_t b) {
      return math::integerPower(a, b);
    });
    break;
  case GPIPE_RT_REMAINDER:
    broadcastBinary(plan, lhs, rhs, out, [](int64_t a, int64_t b) {
      return math::integerRemainder(a, b);
    });
    break;
  case GPIPE_RT_FMOD:
    // INT64_MIN % -1 is 0 (and undefined behaviour in C++).
    broadcastBinary(plan, lhs, rhs, out,
                    [](int64_t a, int64_t b) { return b == -1 ? 0 : a % b; });
    break;
  }
  return GPIPE_RT_SUCCESS;
}

namespace gpipe::rt {
namespace {
/// out[begin, end) of gpipe_rt_cpu_unary_f32 (the kernel threads' share).
GPIPE_RT_CPU_CLONES void unaryRange(gpipe_rt_unary_op op, const float *in,
                                    float *out, int64_t begin, int64_t end) {
  switch (op) {
  case GPIPE_RT_NEG:
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::ScalarFloat().neg(in[i]);
    break;
  case GPIPE_RT_RECIPROCAL:
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::reciprocal(math::ScalarFloat(), in[i]);
    break;
  case GPIPE_RT_SQRT:
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::ScalarFloat().sqrt(in[i]);
    break;
  case GPIPE_RT_EXP:
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::expf(in[i]);
    break;
  case GPIPE_RT_LOG:
    for (int64_t i = begin; i < end; ++i)
      out[i] = std::log(in[i]);
    break;
  case GPIPE_RT_ERF:
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::erff(in[i]);
    break;
  case GPIPE_RT_TANH:
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::tanhf(in[i]);
    break;
  case GPIPE_RT_SIGMOID:
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::sigmoidf(in[i]);
    break;
  case GPIPE_RT_RELU:
    // NaN stays NaN, as in PyTorch.
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::relu(math::ScalarFloat(), in[i]);
    break;
  case GPIPE_RT_GELU:
    for (int64_t i = begin; i < end; ++i)
      out[i] = math::geluf(in[i]);
    break;
  case GPIPE_RT_SIN:
    for (int64_t i = begin; i < end; ++i)
      out[i] = std::sin(in[i]);
    break;
  case GPIPE_RT_COS:
    for (int64_t i = begin; i < end; ++i)
      out[i] = std::cos(in[i]);
    break;
  case GPIPE_RT_FLOOR:
    for (int64_t i = begin; i < end; ++i)
      out[i] = std::floor(in[i]);
    break;
  case GPIPE_RT_CEIL:
    for (int64_t i = begin; i < end; ++i)
      out[i] = std::ceil(in[i]);
    break;
  case GPIPE_RT_ROUND:
    // The default rounding mode rounds ties to even.
    for (int64_t i = begin; i < end; ++i)
      out[i] = std::nearbyint(in[i]);
    break;
  }
}

/// out[begin, end) of gpipe_rt_cpu_gelu_grad_f32.
GPIPE_RT_CPU_CLONES void geluGradRange(const float *in, const float *grad,
                                       float *out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i)
    out[i] = math::geluGradf(in[i], grad[i]);
}

/// out = lhs `op` rhs as bytes 0/1 over a broadcast plan (operands: out,
/// lhs, rhs). Booleans (T = uint8_t) compare by truth, not by byte value.
template <typename T>
void compareTyped(gpipe_rt_compare_op op, const StridedPlan<3> &plan,
                  const void *lhs, const void *rhs, uint8_t *out) {
  const T *a = static_cast<const T *>(lhs);
  const T *b = static_cast<const T *>(rhs);
  auto key = [](T v) {
    if constexpr (std::is_same_v<T, uint8_t>)
      return v != 0;
    else
      return v;
  };
  switch (op) {
  case GPIPE_RT_CMP_EQ:
    broadcastBinary(plan, a, b, out,
                    [&](T x, T y) { return uint8_t(key(x) == key(y)); });
    break;
  case GPIPE_RT_CMP_NE:
    broadcastBinary(plan, a, b, out,
                    [&](T x, T y) { return uint8_t(key(x) != key(y)); });
    break;
  case GPIPE_RT_CMP_LT:
    broadcastBinary(plan, a, b, out,
                    [&](T x, T y) { return uint8_t(key(x) < key(y)); });
    break;
  case GPIPE_RT_CMP_LE:
    broadcastBinary(plan, a, b, out,
                    [&](T x, T y) { return uint8_t(key(x) <= key(y)); });
    break;
  case GPIPE_RT_CMP_GT:
    broadcastBinary(plan, a, b, out,
                    [&](T x, T y) { return uint8_t(key(x) > key(y)); });
    break;
  case GPIPE_RT_CMP_GE:
    broadcastBinary(plan, a, b, out,
                    [&](T x, T y) { return uint8_t(key(x) >= key(y)); });
    break;
  }
}

/// out[begin, end) of gpipe_rt_cpu_clip_f32: max then min as selects, so a
/// NaN fails both comparisons and stays.
GPIPE_RT_CPU_CLONES void clipRange(const float *in, float *out, float lo,
                                   float hi, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    float x = in[i];
    float y = x < lo ? lo : x;
    out[i] = hi < y ? hi : y;
  }
}

/// out[begin, end) of gpipe_rt_cpu_clip_grad_f32 (a NaN input is not
/// inside the bounds).
GPIPE_RT_CPU_CLONES void clipGradRange(const float *in, const float *grad,
                                       float *out, float lo, float hi,
                                       int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    float x = in[i];
    out[i] = lo < x && x < hi ? grad[i] : 0.0f;
  }
}

/// Lines [begin, end) of gpipe_rt_cpu_cumsum over `outer` x `n` x `inner`:
/// line t = o * inner + i holds the n elements inner apart from
/// o * n * inner + i. Each result is the one before it plus one term, so a
/// line is summed in order from its first term (its last when `reverse`);
/// consecutive lines of a block are walked side by side, a vector loop over
/// them per position, which changes no line's order. T is float, or
/// uint64_t for i64 (wrapping). `out` must not alias `in`.
template <typename T>
GPIPE_RT_MATH_INLINE void
cumsumLines(const T *in, T *out, int64_t n, int64_t inner, bool exclusive,
            bool reverse, int64_t begin, int64_t end) {
  // Position k of the summation order is row reverse ? n - 1 - k : k.
  int64_t first = reverse ? (n - 1) * inner : 0;
  int64_t step = reverse ? -inner : inner;
  while (begin < end) {
    int64_t o = begin / inner, i0 = begin % inner;
    int64_t width = std::min(inner - i0, end - begin);
    const T *x = in + o * n * inner + i0 + first;
    T *y = out + o * n * inner + i0 + first;
    if (exclusive) {
      // Nothing, the first term, then one more term each.
      for (int64_t i = 0; i < width; ++i)
        y[i] = T(0);
      if (n > 1)
        for (int64_t i = 0; i < width; ++i)
          y[step + i] = x[i];
      for (int64_t k = 2; k < n; ++k) {
        const T *xp = x + (k - 1) * step;
        const T *yp = y + (k - 1) * step;
        T *yk = y + k * step;
        for (int64_t i = 0; i < width; ++i)
          yk[i] = yp[i] + xp[i];
      }
    } else {
      for (int64_t i = 0; i < width; ++i)
        y[i] = x[i];
      for (int64_t k = 1; k < n; ++k) {
        const T *xk = x + k * step;
        const T *yp = y + (k - 1) * step;
        T *yk = y + k * step;
        for (int64_t i = 0; i < width; ++i)
          yk[i] = yp[i] + xk[i];
      }
    }
    begin += width;
  }
}

GPIPE_RT_CPU_CLONES void cumsumF32Lines(const float *in, float *out, int64_t n,
                                        int64_t inner, bool exclusive,
                                        bool reverse, int64_t begin,
                                        int64_t end) {
  cumsumLines(in, out, n, inner, exclusive, reverse, begin, end);
}

GPIPE_RT_CPU_CLONES void cumsumI64Lines(const uint64_t *in, uint64_t *out,
                                        int64_t n, int64_t inner,
                                        bool exclusive, bool reverse,
                                        int64_t begin, int64_t end) {
  cumsumLines(in, out, n, inner, exclusive, reverse, begin, end);
}
} // namespace
} // namespace gpipe::rt

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_unary_f32(
    gpipe_rt_unary_op op, const float *in, float *out, int64_t count) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkUnary(cpuKernel("unary"), op, in, out, count));
  cpu::parallelFor(count, cpu::kParallelGrain, [&](int64_t begin, int64_t end) {
    unaryRange(op, in, out, begin, end);
  });
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_equal(gpipe_rt_dtype dtype, const void *lhs,
                   const int64_t *lhsShape, int32_t lhsRank, const void *rhs,
                   const int64_t *rhsShape, int32_t rhsRank, uint8_t *out,
                   const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkEqual(cpuKernel("equal"), dtype, lhs, lhsShape, lhsRank,
                          rhs, rhsShape, rhsRank, out, outShape, outRank,
                          args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  const StridedPlan<3> &plan = args.plan;
  auto run = [&](auto zero) {
    using T = decltype(zero);
    broadcastBinary(plan, static_cast<const T *>(lhs),
                    static_cast<const T *>(rhs), out,
                    [](T a, T b) { return uint8_t(a == b); });
  };
  switch (dtype) {
  case GPIPE_RT_F32:
    run(float());
    break;
  case GPIPE_RT_F64:
    run(double());
    break;
  case GPIPE_RT_I32:
    run(int32_t());
    break;
  case GPIPE_RT_I64:
    run(int64_t());
    break;
  default: // GPIPE_RT_BOOL; checkEqual rejected every other type.
    broadcastBinary(plan, static_cast<const uint8_t *>(lhs),
                    static_cast<const uint8_t *>(rhs), out,
                    [](uint8_t a, uint8_t b) { return uint8_t(!a == !b); });
    break;
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_where(
    const uint8_t *cond, const int64_t *condShape, int32_t condRank,
    gpipe_rt_dtype dtype, const void *x, const int64_t *xShape, int32_t xRank,
    const void *y, const int64_t *yShape, int32_t yRank, void *out,
    const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  WhereArgs args;
  GPIPE_RT_TRY(checkWhere(cpuKernel("where"), cond, condShape, condRank, dtype,
                          x, xShape, xRank, y, yShape, yRank, out, outShape,
                          outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  auto run = [&](auto zero) {
    using T = decltype(zero);
    T *o = static_cast<T *>(out);
    const T *xs = static_cast<const T *>(x);
    const T *ys = static_cast<const T *>(y);
    forEachRunParallel(args.plan,
                       [&](int64_t n, const int64_t *off, const int64_t *st) {
                         T *oo = o + off[0];
                         const uint8_t *c = cond + off[1];
                         const T *xx = xs + off[2];
                         const T *yy = ys + off[3];
                         int64_t sc = st[1], sx = st[2], sy = st[3];
                         for (int64_t i = 0; i < n; ++i)
                           oo[i] = c[i * sc] ? xx[i * sx] : yy[i * sy];
                       });
  };
  withBitsType(args.elemSize, run);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_not(const uint8_t *in, uint8_t *out,
                                            int64_t count) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkNot(cpuKernel("not"), in, out, count));
  for (int64_t i = 0; i < count; ++i)
    out[i] = in[i] ? 0 : 1;
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_compare(gpipe_rt_compare_op op, gpipe_rt_dtype dtype,
                     const void *lhs, const int64_t *lhsShape, int32_t lhsRank,
                     const void *rhs, const int64_t *rhsShape, int32_t rhsRank,
                     uint8_t *out, const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkCompare(cpuKernel("compare"), op, dtype, lhs, lhsShape,
                            lhsRank, rhs, rhsShape, rhsRank, out, outShape,
                            outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  const StridedPlan<3> &plan = args.plan;
  switch (dtype) {
  case GPIPE_RT_F32:
    compareTyped<float>(op, plan, lhs, rhs, out);
    break;
  case GPIPE_RT_F64:
    compareTyped<double>(op, plan, lhs, rhs, out);
    break;
  case GPIPE_RT_I32:
    compareTyped<int32_t>(op, plan, lhs, rhs, out);
    break;
  case GPIPE_RT_I64:
    compareTyped<int64_t>(op, plan, lhs, rhs, out);
    break;
  default: // GPIPE_RT_BOOL; checkCompare rejected every other type.
    compareTyped<uint8_t>(op, plan, lhs, rhs, out);
    break;
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_logical(
    gpipe_rt_logical_op op, const uint8_t *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const uint8_t *rhs, const int64_t *rhsShape,
    int32_t rhsRank, uint8_t *out, const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkLogical(cpuKernel("logical"), op, lhs, lhsShape, lhsRank,
                            rhs, rhsShape, rhsRank, out, outShape, outRank,
                            args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  const StridedPlan<3> &plan = args.plan;
  switch (op) {
  case GPIPE_RT_AND:
    broadcastBinary(plan, lhs, rhs, out, [](uint8_t a, uint8_t b) {
      return uint8_t((a != 0) & (b != 0));
    });
    break;
  case GPIPE_RT_OR:
    broadcastBinary(plan, lhs, rhs, out, [](uint8_t a, uint8_t b) {
      return uint8_t((a != 0) | (b != 0));
    });
    break;
  case GPIPE_RT_XOR:
    broadcastBinary(plan, lhs, rhs, out, [](uint8_t a, uint8_t b) {
      return uint8_t((a != 0) != (b != 0));
    });
    break;
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_cumsum(gpipe_rt_dtype dtype, const void *in, const int64_t *shape,
                    int32_t rank, int64_t axis, int32_t exclusive,
                    int32_t reverse, void *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  CumsumArgs args;
  GPIPE_RT_TRY(checkCumsum(cpuKernel("cumsum"), dtype, in, shape, rank, axis,
                           out, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.n, inner = args.inner;
  bool excl = exclusive != 0, rev = reverse != 0;
  // Lines are independent: split them over the threads, never a line.
  int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / n);
  cpu::parallelFor(args.outer * inner, grain, [&](int64_t begin, int64_t end) {
    if (dtype == GPIPE_RT_F32)
      cumsumF32Lines(static_cast<const float *>(in), static_cast<float *>(out),
                     n, inner, excl, rev, begin, end);
    else // GPIPE_RT_I64; checkCumsum rejected the others.
      cumsumI64Lines(static_cast<const uint64_t *>(in),
                     static_cast<uint64_t *>(out), n, inner, excl, rev, begin,
                     end);
  });
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_broadcast(gpipe_rt_dtype dtype, const void *in,
                       const int64_t *inShape, int32_t inRank, void *out,
                       const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  BroadcastToArgs args;
  GPIPE_RT_TRY(checkBroadcastTo(cpuKernel("broadcast"), dtype, in, inShape,
                                inRank, out, outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  withBitsType(args.elemSize, [&](auto zero) {
    copyRuns<decltype(zero), /*Parallel=*/true>(args.plan, out, in);
  });
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_clip_f32(const float *in, float *out,
                                                 int64_t count, float lo,
                                                 float hi) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkClip(cpuKernel("clip"), in, out, count, lo, hi));
  cpu::parallelFor(count, cpu::kParallelGrain, [&](int64_t begin, int64_t end) {
    clipRange(in, out, lo, hi, begin, end);
  });
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_clip_grad_f32(const float *in,
                                                      const float *grad,
                                                      float *out, int64_t count,
                                                      float lo, float hi) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkClipGrad(cpuKernel("clip_grad"), in, grad, out, count));
  cpu::parallelFor(count, cpu::kParallelGrain, [&](int64_t begin, int64_t end) {
    clipGradRange(in, grad, out, lo, hi, begin, end);
  });
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_cast(gpipe_rt_dtype inType,
                                             const void *in,
                                             gpipe_rt_dtype outType, void *out,
                                             int64_t count) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkCast(cpuKernel("cast"), inType, in, outType, out, count));
  withCastType(inType, [&](auto inZero) {
    withCastType(outType, [&](auto outZero) {
      castLoop<decltype(outZero), decltype(inZero)>(in, out, count);
    });
  });
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cpu_matmul_f32(const float *lhs, const int64_t *lhsShape,
                        int32_t lhsRank, const float *rhs,
                        const int64_t *rhsShape, int32_t rhsRank,
                        int32_t transLhs, int32_t transRhs, float *out,
                        const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Kernel kernel = cpuKernel("matmul");
  MatmulArgs args;
  GPIPE_RT_TRY(checkMatmul(kernel, lhs, lhsShape, lhsRank, rhs, rhsShape,
                           rhsRank, transLhs, transRhs, out, outShape, outRank,
                           args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t m = args.m, n = args.n, k = args.k;
  bool ta = args.transLhs, tb = args.transRhs;
  // One sgemm when rhs is shared by every batch and lhs is not broadcast:
  // the batch folds into the rows.
  if (args.foldBatch)
    return checkedSgemm(kernel, false, tb, args.batch.numElements * m, n, k,
                        1.0f, lhs, leadingDim(args.lda), rhs,
                        leadingDim(args.ldb), 0.0f, out, leadingDim(n));

  // A batch of small products (attention's per-head GEMMs, each too small
  // for checkedSgemm to split) splits over the kernel threads, whole
  // products each; larger ones go in order and each splits itself. A
  // product's bits do not depend on the thread that computes it.
  std::atomic<int> status{GPIPE_RT_SUCCESS};
  bool bf16 = bf16Operands;
  auto products = [&](int64_t count, const int64_t *off, const int64_t *st) {
    bool saved = bf16Operands;
    bf16Operands = bf16;
    for (int64_t i = 0; i < count && status.load(std::memory_order_relaxed) ==
                                         GPIPE_RT_SUCCESS;
         ++i) {
      gpipe_rt_status s =
          checkedSgemm(kernel, ta, tb, m, n, k, 1.0f,
                       lhs + (off[1] + i * st[1]) * m * k, leadingDim(args.lda),
                       rhs + (off[2] + i * st[2]) * k * n, leadingDim(args.ldb),
                       0.0f, out + (off[0] + i * st[0]) * m * n, leadingDim(n));
      if (s != GPIPE_RT_SUCCESS) {
        int expected = GPIPE_RT_SUCCESS;
        status.compare_exchange_strong(expected, s);
      }
    }
    bf16Operands = saved;
  };
  if (m * n * k <= kSmallProduct) {
    // Split over the workers, whose products the rank thread's shape
    // record would miss: the batch counts as its products, timed whole.
    bool timed = cpu::kernelDepth > 0;
    auto start = timed ? std::chrono::steady_clock::now()
                       : std::chrono::steady_clock::time_point();
    ++gemmShapesHeld;
    forEachRunParallel(args.plan, products, m * n * k);
    --gemmShapesHeld;
    if (timed)
      recordGemmShape(
          ta, tb, m, n, k,
          uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count()),
          uint64_t(args.batch.numElements));
  } else {
    forEachRun(args.plan, products);
  }
  return gpipe_rt_status(status.load());
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_gemm_f32(const float *a, const int64_t *aShape, const float *b,
                      const int64_t *bShape, const float *c,
                      const int64_t *cShape, int32_t cRank, float alpha,
                      float beta, int32_t transA, int32_t transB, float *out,
                      const int64_t *outShape) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Kernel kernel = cpuKernel("gemm");
  GemmArgs args;
  GPIPE_RT_TRY(checkGemm(kernel, a, aShape, b, bShape, c, cShape, cRank, beta,
                         transA, transB, out, outShape, args));
  if (c && !args.cInPlace)
    stridedCopy(sizeof(float), args.result, out, args.resultStrides, c,
                args.cStrides);
  return checkedSgemm(kernel, transA, transB, args.m, args.n, args.k, alpha, a,
                      args.lda, b, args.ldb, args.beta, out, args.ldc);
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_linear_f32(const float *input, const int64_t *inputShape,
                        int32_t inputRank, const float *weight,
                        const int64_t *weightShape, const float *bias,
                        int32_t transposeWeight, float *out,
                        const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Kernel kernel = cpuKernel("linear");
  LinearArgs args;
  GPIPE_RT_TRY(checkLinear(kernel, input, inputShape, inputRank, weight,
                           weightShape, transposeWeight, out, outShape, outRank,
                           args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t rows = args.rows, inF = args.inFeatures, outF = args.outFeatures;
  if (bias) {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out + r * outF, bias, size_t(outF) * sizeof(float));
  }
  return checkedSgemm(kernel, false, transposeWeight != 0, rows, outF, inF,
                      1.0f, input, leadingDim(inF), weight, args.weightLd,
                      bias ? 1.0f : 0.0f, out, leadingDim(outF));
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_matmul_bf16(const float *lhs, const int64_t *lhsShape,
                         int32_t lhsRank, const float *rhs,
                         const int64_t *rhsShape, int32_t rhsRank,
                         int32_t transLhs, int32_t transRhs, float *out,
                         const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Bf16Scope bf16;
  return gpipe_rt_cpu_matmul_f32(lhs, lhsShape, lhsRank, rhs, rhsShape, rhsRank,
                                 transLhs, transRhs, out, outShape, outRank);
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_gemm_bf16(const float *a, const int64_t *aShape, const float *b,
                       const int64_t *bShape, const float *c,
                       const int64_t *cShape, int32_t cRank, float alpha,
                       float beta, int32_t transA, int32_t transB, float *out,
                       const int64_t *outShape) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Bf16Scope bf16;
  return gpipe_rt_cpu_gemm_f32(a, aShape, b, bShape, c, cShape, cRank, alpha,
                               beta, transA, transB, out, outShape);
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_linear_bf16(const float *input, const int64_t *inputShape,
                         int32_t inputRank, const float *weight,
                         const int64_t *weightShape, const float *bias,
                         int32_t transposeWeight, float *out,
                         const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Bf16Scope bf16;
  return gpipe_rt_cpu_linear_f32(input, inputShape, inputRank, weight,
                                 weightShape, bias, transposeWeight, out,
                                 outShape, outRank);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

namespace gpipe::rt {
namespace {
/// Rows [begin, end) of a softmax along a contiguous axis of `n`.
GPIPE_RT_CPU_CLONES void softmaxRows(const float *in, float *out, int64_t n,
                                     int64_t begin, int64_t end) {
  for (int64_t o = begin; o < end; ++o) {
    const float *x = in + o * n;
    float *y = out + o * n;
    float m = maxOf(x, n);
    for (int64_t j = 0; j < n; ++j)
      y[j] = math::expNonPositivef(x[j] - m);
    float sum = float(sumMapped(y, n, [](float v) { return double(v); }));
    for (int64_t j = 0; j < n; ++j)
      y[j] = y[j] / sum;
  }
}

/// Outer indices [begin, end) of a softmax along a strided axis: keep
/// `inner` running maxima and sums, walk the axis with contiguous vectors.
GPIPE_RT_CPU_CLONES void softmaxStrided(const float *in, float *out, int64_t n,
                                        int64_t inner, int64_t begin,
                                        int64_t end) {
  float *mx = threadScratch<float>(size_t(inner));
  double *sm = threadScratch<double>(size_t(inner));
  for (int64_t o = begin; o < end; ++o) {
    const float *x = in + o * n * inner;
    float *y = out + o * n * inner;
    std::fill(mx, mx + inner, -std::numeric_limits<float>::infinity());
    std::fill(sm, sm + inner, 0.0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        mx[i] = x[j * inner + i] > mx[i] ? x[j * inner + i] : mx[i];
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < inner; ++i) {
        float e = math::expNonPositivef(x[j * inner + i] - mx[i]);
        y[j * inner + i] = e;
        sm[i] += e;
      }
    }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        y[j * inner + i] = y[j * inner + i] / float(sm[i]);
  }
}

/// The grain, in rows, of row kernels over rows of `n` elements.
int64_t rowGrain(int64_t n) {
  return std::max<int64_t>(1, cpu::kParallelGrain / std::max<int64_t>(n, 1));
}
} // namespace
} // namespace gpipe::rt

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status
gpipe_rt_cpu_softmax_f32(const float *in, const int64_t *shape, int32_t rank,
                         int64_t axis, float *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  AxisSplit args;
  GPIPE_RT_TRY(
      checkSoftmax(cpuKernel("softmax"), in, shape, rank, axis, out, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t outer = args.outer, n = args.n, inner = args.inner;
  cpu::parallelFor(outer, rowGrain(n * inner), [&](int64_t begin, int64_t end) {
    if (inner == 1)
      softmaxRows(in, out, n, begin, end);
    else
      softmaxStrided(in, out, n, inner, begin, end);
  });
  return GPIPE_RT_SUCCESS;
}

namespace gpipe::rt {
namespace {
/// Rows [begin, end) of gpipe_rt_cpu_layer_norm_f32.
GPIPE_RT_CPU_CLONES void layerNormRows(const float *in, const float *scale,
                                       const float *bias, float epsilon,
                                       float *out, float *mean, float *rstd,
                                       int64_t n, int64_t begin, int64_t end) {
  for (int64_t r = begin; r < end; ++r) {
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
}
} // namespace
} // namespace gpipe::rt

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_layer_norm_f32(
    const float *in, const int64_t *shape, int32_t rank, int64_t axis,
    const float *scale, const float *bias, float epsilon, float *out,
    float *mean, float *rstd) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  RowSplit args;
  GPIPE_RT_TRY(checkLayerNorm(cpuKernel("layer_norm"), in, shape, rank, axis,
                              scale, epsilon, out, args));
  if (args.count == 0) {
    // Rows of zero elements have no mean; leave everything untouched.
    return GPIPE_RT_SUCCESS;
  }
  int64_t n = args.n;
  cpu::parallelFor(args.rows, rowGrain(n), [&](int64_t begin, int64_t end) {
    layerNormRows(in, scale, bias, epsilon, out, mean, rstd, n, begin, end);
  });
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cpu_gather(
    gpipe_rt_dtype dtype, const void *data, const int64_t *dataShape,
    int32_t dataRank, gpipe_rt_dtype indexType, const void *indices,
    const int64_t *indicesShape, int32_t indicesRank, int64_t axis, void *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  Kernel kernel = cpuKernel("gather");
  GatherArgs args;
  GPIPE_RT_TRY(checkGather(kernel, dtype, dataShape, dataRank, indexType,
                           indices, indicesShape, indicesRank, axis, args));
  // Check every index before writing anything.
  const Shape &is = args.indices;
  int64_t axisDim = args.axisDim;
  int64_t bad = firstBadIndex(indexType, indices, is.numElements, axisDim);
  if (bad >= 0)
    return gatherIndexOutOfRange(kernel, readIndex(indexType, indices, bad), is,
                                 bad, axis, args.data);
  GPIPE_RT_TRY(checkGatherResult(kernel, data, out, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  const char *src = static_cast<const char *>(data);
  char *dst = static_cast<char *>(out);
  size_t rowBytes = size_t(args.inner) * args.elemSize;
  for (int64_t o = 0; o < args.outer; ++o) {
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
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  CopyArgs args;
  GPIPE_RT_TRY(checkTranspose(cpuKernel("transpose"), dtype, in, shape, rank,
                              perm, out, args));
  const Shape &res = args.space;
  if (res.numElements == 0)
    return GPIPE_RT_SUCCESS;
  int64_t strides[2][kMaxRank];
  std::copy(args.dstStrides, args.dstStrides + res.rank, strides[0]);
  std::copy(args.srcStrides, args.srcStrides + res.rank, strides[1]);
  StridedPlan<2> plan = collapse(res, strides);
  withBitsType(args.elemSize, [&](auto zero) {
    transposeTyped<decltype(zero)>(plan, out, in);
  });
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_slice(gpipe_rt_dtype dtype, const void *in, const int64_t *shape,
                   int32_t rank, const int64_t *offsets, const int64_t *sizes,
                   const int64_t *strides, void *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  CopyArgs args;
  GPIPE_RT_TRY(checkSlice(cpuKernel("slice"), dtype, in, shape, rank, offsets,
                          sizes, strides, out, args));
  if (args.space.numElements == 0)
    return GPIPE_RT_SUCCESS;
  stridedCopy(args.elemSize, args.space, out, args.dstStrides,
              static_cast<const char *>(in) + size_t(args.base) * args.elemSize,
              args.srcStrides);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_split(gpipe_rt_dtype dtype, const void *in, const int64_t *shape,
                   int32_t rank, int64_t axis, const int64_t *sizes,
                   int32_t numOutputs, void *const *outs) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  // Reused: a step allocates nothing.
  thread_local PartsArgs args;
  GPIPE_RT_TRY(checkSplit(cpuKernel("split"), dtype, in, shape, rank, axis,
                          sizes, numOutputs, outs, args));
  const char *src = static_cast<const char *>(in);
  for (size_t i = 0; i < args.parts.size(); ++i) {
    const Part &part = args.parts[i];
    stridedCopy(args.elemSize, part.shape, outs[i], part.strides,
                src + size_t(part.offset) * args.elemSize, args.wholeStrides);
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_concat(gpipe_rt_dtype dtype, int32_t numInputs,
                    const void *const *inputs, const int64_t *const *shapes,
                    int32_t rank, int64_t axis, void *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  // Reused: a step allocates nothing.
  thread_local PartsArgs args;
  GPIPE_RT_TRY(checkConcat(cpuKernel("concat"), dtype, numInputs, inputs,
                           shapes, rank, axis, out, args));
  char *dst = static_cast<char *>(out);
  for (size_t i = 0; i < args.parts.size(); ++i) {
    const Part &part = args.parts[i];
    stridedCopy(args.elemSize, part.shape,
                dst + size_t(part.offset) * args.elemSize, args.wholeStrides,
                inputs[i], part.strides);
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_copy(gpipe_rt_dtype dtype,
                                             const void *in, void *out,
                                             int64_t count) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  size_t elemSize;
  GPIPE_RT_TRY(checkCopy(cpuKernel("copy"), dtype, in, out, count, elemSize));
  if (count <= 0 || in == out)
    return GPIPE_RT_SUCCESS;
  const char *from = static_cast<const char *>(in);
  char *to = static_cast<char *>(out);
  int64_t bytes = count * int64_t(elemSize);
  if (to + bytes <= from || from + bytes <= to) {
    // Apart: in pieces over the kernel threads.
    cpu::parallelFor(
        bytes, 4 * cpu::kParallelGrain, [&](int64_t begin, int64_t end) {
          std::memcpy(to + begin, from + begin, size_t(end - begin));
        });
  } else {
    std::memmove(out, in, size_t(bytes));
  }
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cpu_cross_entropy_f32(const float *logits, const int64_t *logitsShape,
                               int32_t logitsRank, gpipe_rt_dtype labelType,
                               const void *labels, float *loss) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  Kernel kernel = cpuKernel("cross_entropy");
  LogitsArgs args;
  GPIPE_RT_TRY(checkCrossEntropy(kernel, logitsShape, logitsRank, labelType,
                                 labels, loss, args));
  GPIPE_RT_TRY(checkLabels(kernel, labelType, labels, args));
  GPIPE_RT_TRY(checkPointer(kernel, "logits", logits, args.logits.numElements));
  int64_t rows = args.rows, classes = args.classes;
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = logits + r * classes;
    float m = maxOf(x, classes);
    double sum = sumMapped(x, classes, [m](float v) {
      return double(math::expNonPositivef(v - m));
    });
    double lse = double(m) + std::log(sum);
    total += lse - double(x[readIndex(labelType, labels, r)]);
  }
  *loss = float(total / double(rows));
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_mse_f32(const float *input,
                                                const float *target,
                                                int64_t count, float *loss) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  GPIPE_RT_TRY(checkMse(cpuKernel("mse"), input, target, count, loss));
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

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status
gpipe_rt_cpu_reduce_sum_f32(const float *in, const int64_t *shape, int32_t rank,
                            const int64_t *axes, int32_t numAxes, float *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  ReduceArgs args;
  GPIPE_RT_TRY(checkReduceSum(cpuKernel("reduce_sum"), in, shape, rank, axes,
                              numAxes, out, args));
  const Shape &s = args.input;
  int64_t outputs = args.outputs;
  if (outputs == 0)
    return GPIPE_RT_SUCCESS;
  if (s.numElements == 0) {
    std::fill(out, out + outputs, 0.0f);
    return GPIPE_RT_SUCCESS;
  }
  // The result's strides per input dim (0 on the reduced ones; the kept
  // dims row-major) and the input's.
  int64_t strides[2][kMaxRank];
  {
    int64_t stride = 1;
    for (int32_t d = s.rank - 1; d >= 0; --d) {
      strides[0][d] = args.reduced[d] ? 0 : stride;
      if (!args.reduced[d])
        stride *= s.dims[d];
    }
  }
  contiguousStrides(s, strides[1]);
  // Row-major order over the input visits, for every result element, its
  // inputs in increasing index order of the reduced dims.
  double *a = threadScratch<double>(size_t(outputs));
  std::fill(a, a + outputs, 0.0);
  StridedPlan<2> plan = collapse(s, strides);
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
  for (int64_t i = 0; i < outputs; ++i)
    out[i] = float(a[i]);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_insert_slice(
    gpipe_rt_dtype dtype, const void *source, const int64_t *sourceShape,
    const void *dest, const int64_t *destShape, int32_t rank,
    const int64_t *offsets, const int64_t *strides, void *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  InsertSliceArgs args;
  GPIPE_RT_TRY(checkInsertSlice(cpuKernel("insert_slice"), dtype, source,
                                sourceShape, dest, destShape, rank, offsets,
                                strides, out, args));
  if (args.destCount == 0)
    return GPIPE_RT_SUCCESS;
  size_t elemSize = args.elemSize;
  if (out != dest)
    std::memmove(out, dest, size_t(args.destCount) * elemSize);
  stridedCopy(elemSize, args.space,
              static_cast<char *>(out) + size_t(args.base) * elemSize,
              args.dstStrides, source, args.srcStrides);
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_gather_grad_f32(gpipe_rt_dtype indexType, const void *indices,
                             const int64_t *indicesShape, int32_t indicesRank,
                             const float *grad, const int64_t *gradShape,
                             int32_t gradRank, int64_t axis, float *out,
                             const int64_t *outShape, int32_t outRank) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  Kernel kernel = cpuKernel("gather_grad");
  GatherGradArgs args;
  GPIPE_RT_TRY(checkGatherGrad(kernel, indexType, indices, indicesShape,
                               indicesRank, gradShape, gradRank, axis, outShape,
                               outRank, args));
  const Shape &is = args.indices, &os = args.result;
  int64_t outer = args.outer, inner = args.inner, axisDim = args.axisDim;
  int64_t bad = firstBadIndex(indexType, indices, is.numElements, axisDim);
  if (bad >= 0)
    return gatherGradIndexOutOfRange(kernel, readIndex(indexType, indices, bad),
                                     is, bad, axis, os);
  GPIPE_RT_TRY(checkGatherGradResult(kernel, grad, out, args));
  if (os.numElements == 0)
    return GPIPE_RT_SUCCESS;
  double *acc = threadScratch<double>(size_t(os.numElements));
  std::fill(acc, acc + os.numElements, 0.0);
  int64_t count = is.numElements;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t idx = readIndex(indexType, indices, i);
      double *dst = acc + (o * axisDim + idx) * inner;
      const float *src = grad + (o * count + i) * inner;
      for (int64_t k = 0; k < inner; ++k)
        dst[k] += double(src[k]);
    }
  }
  for (int64_t i = 0; i < os.numElements; ++i)
    out[i] = float(acc[i]);
  return GPIPE_RT_SUCCESS;
}

namespace gpipe::rt {
namespace {
/// Outer indices [begin, end) of gpipe_rt_cpu_softmax_grad_f32.
GPIPE_RT_CPU_CLONES void softmaxGradOuter(const float *output,
                                          const float *grad, float *out,
                                          int64_t n, int64_t inner,
                                          int64_t begin, int64_t end) {
  if (inner == 1) {
    // A contiguous axis: eight interleaved partial sums (sumLanes).
    for (int64_t o = begin; o < end; ++o) {
      const float *y = output + o * n;
      const float *dy = grad + o * n;
      float *dx = out + o * n;
      double sum =
          sumLanes(n, [&](int64_t j) { return double(dy[j]) * double(y[j]); });
      for (int64_t j = 0; j < n; ++j)
        dx[j] = float(double(y[j]) * (double(dy[j]) - sum));
    }
    return;
  }
  double *sm = threadScratch<double>(size_t(inner));
  for (int64_t o = begin; o < end; ++o) {
    const float *y = output + o * n * inner;
    const float *dy = grad + o * n * inner;
    float *dx = out + o * n * inner;
    std::fill(sm, sm + inner, 0.0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        sm[i] += double(dy[j * inner + i]) * double(y[j * inner + i]);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < inner; ++i)
        dx[j * inner + i] = float(double(y[j * inner + i]) *
                                  (double(dy[j * inner + i]) - sm[i]));
  }
}

/// Rows [begin, end) of gpipe_rt_cpu_layer_norm_grad_f32's input gradient;
/// each row's mean and 1/std go to `mus` and `rss` for the parameters'.
GPIPE_RT_CPU_CLONES void layerNormGradRows(const float *in, const float *scale,
                                           const float *grad, float epsilon,
                                           float *inputGrad, double *mus,
                                           double *rss, int64_t n,
                                           int64_t begin, int64_t end) {
  double *xhat = threadScratch<double, 0>(size_t(n));
  for (int64_t r = begin; r < end; ++r) {
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
    mus[r] = mu;
    rss[r] = rs;
    if (!inputGrad)
      continue;
    // The sums of g and g * xhat: eight interleaved partial sums each.
    double accG[kLanes] = {}, accGX[kLanes] = {};
    forEachLane(n, [&](int64_t j, int k) {
      double xh = (double(x[j]) - mu) * rs;
      double g = double(dy[j]) * double(scale[j]);
      xhat[j] = xh;
      accG[k] += g;
      accGX[k] += g * xh;
    });
    double meanG = combineLanes(accG) / double(n);
    double meanGX = combineLanes(accGX) / double(n);
    float *dx = inputGrad + r * n;
    for (int64_t j = 0; j < n; ++j) {
      double g = double(dy[j]) * double(scale[j]);
      dx[j] = float(rs * (g - meanG - xhat[j] * meanGX));
    }
  }
}

/// Columns [begin, end) of the scale and bias gradients: per column, the
/// rows in order.
GPIPE_RT_CPU_CLONES void
layerNormGradColumns(const float *in, const float *grad, const double *mus,
                     const double *rss, float *scaleGrad, float *biasGrad,
                     int64_t rows, int64_t n, int64_t begin, int64_t end) {
  int64_t width = end - begin;
  double *scaleAcc = threadScratch<double, 1>(size_t(width));
  double *biasAcc = threadScratch<double, 2>(size_t(width));
  std::fill(scaleAcc, scaleAcc + width, 0.0);
  std::fill(biasAcc, biasAcc + width, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = in + r * n + begin;
    const float *dy = grad + r * n + begin;
    double mu = mus[r], rs = rss[r];
    if (scaleGrad)
      for (int64_t j = 0; j < width; ++j)
        scaleAcc[j] += double(dy[j]) * ((double(x[j]) - mu) * rs);
    if (biasGrad)
      for (int64_t j = 0; j < width; ++j)
        biasAcc[j] += double(dy[j]);
  }
  if (scaleGrad)
    for (int64_t j = 0; j < width; ++j)
      scaleGrad[begin + j] = float(scaleAcc[j]);
  if (biasGrad)
    for (int64_t j = 0; j < width; ++j)
      biasGrad[begin + j] = float(biasAcc[j]);
}
} // namespace
} // namespace gpipe::rt

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_softmax_grad_f32(
    const float *output, const float *grad, const int64_t *shape, int32_t rank,
    int64_t axis, float *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  AxisSplit args;
  GPIPE_RT_TRY(checkSoftmaxGrad(cpuKernel("softmax_grad"), output, grad, shape,
                                rank, axis, out, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.n, inner = args.inner;
  cpu::parallelFor(args.outer, rowGrain(n * inner),
                   [&](int64_t begin, int64_t end) {
                     softmaxGradOuter(output, grad, out, n, inner, begin, end);
                   });
  return GPIPE_RT_SUCCESS;
}

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_layer_norm_grad_f32(
    const float *in, const int64_t *shape, int32_t rank, int64_t axis,
    const float *scale, const float *grad, float epsilon, float *inputGrad,
    float *scaleGrad, float *biasGrad) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  RowSplit args;
  GPIPE_RT_TRY(checkLayerNormGrad(cpuKernel("layer_norm_grad"), in, shape, rank,
                                  axis, scale, grad, epsilon, args));
  int64_t rows = args.rows, n = args.n;
  if (n == 0)
    return GPIPE_RT_SUCCESS;
  if (scaleGrad)
    std::fill(scaleGrad, scaleGrad + n, 0.0f);
  if (biasGrad)
    std::fill(biasGrad, biasGrad + n, 0.0f);
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  // The rows' statistics, shared by both passes (the caller's scratch).
  double *mus = threadScratch<double, 3>(size_t(rows));
  double *rss = threadScratch<double, 4>(size_t(rows));
  cpu::parallelFor(rows, rowGrain(n), [&](int64_t begin, int64_t end) {
    layerNormGradRows(in, scale, grad, epsilon, inputGrad, mus, rss, n, begin,
                      end);
  });
  if (scaleGrad || biasGrad) {
    // Columns in blocks of whole cache lines.
    int64_t grain = (rowGrain(rows) + 15) / 16 * 16;
    cpu::parallelFor(n, grain, [&](int64_t begin, int64_t end) {
      layerNormGradColumns(in, grad, mus, rss, scaleGrad, biasGrad, rows, n,
                           begin, end);
    });
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_gelu_grad_f32(
    const float *in, const float *grad, float *out, int64_t count) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkGeluGrad(cpuKernel("gelu_grad"), in, grad, out, count));
  cpu::parallelFor(count, cpu::kParallelGrain, [&](int64_t begin, int64_t end) {
    geluGradRange(in, grad, out, begin, end);
  });
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_cross_entropy_grad_at_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, const float *grad,
    float *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  if (!grad)
    return Error(GPIPE_RT_INVALID_ARGUMENT, cpuKernel("cross_entropy_grad"))
           << "null grad";
  return gpipe_rt_cpu_cross_entropy_grad_f32(logits, logitsShape, logitsRank,
                                             labelType, labels, *grad, out);
}

extern "C" gpipe_rt_status gpipe_rt_cpu_fill_f32(float *out, int64_t count,
                                                 float value) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkBuffers(cpuKernel("fill"), count, {{"out", out}}));
  for (int64_t i = 0; i < count; ++i)
    out[i] = value;
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_cross_entropy_grad_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, float grad, float *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  Kernel kernel = cpuKernel("cross_entropy_grad");
  LogitsArgs args;
  GPIPE_RT_TRY(checkCrossEntropyGrad(kernel, logitsShape, logitsRank, labelType,
                                     labels, args));
  GPIPE_RT_TRY(checkLabels(kernel, labelType, labels, args));
  GPIPE_RT_TRY(checkCrossEntropyGradResult(kernel, logits, out, args));
  if (args.logits.numElements == 0)
    return GPIPE_RT_SUCCESS;
  int64_t rows = args.rows, classes = args.classes;
  double factor = double(grad) / double(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = logits + r * classes;
    float *dx = out + r * classes;
    int64_t label = readIndex(labelType, labels, r);
    float m = maxOf(x, classes);
    double sum = sumMapped(x, classes, [m](float v) {
      return double(math::expNonPositivef(v - m));
    });
    for (int64_t j = 0; j < classes; ++j) {
      double p = double(math::expNonPositivef(x[j] - m)) / sum;
      dx[j] = float((p - (j == label ? 1.0 : 0.0)) * factor);
    }
  }
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_sgd_update_f32(
    float *param, const float *grad, int64_t count, float lr) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_OPTIMIZER);
  GPIPE_RT_TRY(checkSgdUpdate(cpuKernel("sgd_update"), param, grad, count));
  for (int64_t i = 0; i < count; ++i) {
    float step = lr * grad[i];
    param[i] = param[i] - step;
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" GPIPE_RT_CPU_CLONES gpipe_rt_status gpipe_rt_cpu_accumulate_f32(
    float *acc, const float *grad, int64_t count, int32_t first) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkAccumulate(cpuKernel("accumulate"), acc, grad, count));
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
// Dropout
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cpu_dropout_f32(const float *in, float *out,
                                                    int64_t count, float ratio,
                                                    uint64_t key,
                                                    uint64_t stream) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkDropout(cpuKernel("dropout"), in, out, count, ratio));
  const float scale = float(1.0 / (1.0 - double(ratio)));
  const uint64_t k = splitMix64(key ^ splitMix64(stream));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t bits = splitMix64(k + uint64_t(i) * kGoldenGamma);
    float u = float(bits >> 40) * 0x1.0p-24f; // [0, 1), 24 bits, exact.
    out[i] = u >= ratio ? in[i] * scale : 0.0f;
  }
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
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  GPIPE_RT_TRY(checkFillInit(cpuKernel("fill_init"), init, out, count, scale));
  if (init == GPIPE_RT_INIT_ZEROS || init == GPIPE_RT_INIT_ONES) {
    std::fill(out, out + count, init == GPIPE_RT_INIT_ONES ? 1.0f : 0.0f);
    return GPIPE_RT_SUCCESS;
  }
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
