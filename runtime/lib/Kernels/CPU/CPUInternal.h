//===- CPUInternal.h - What the CPU kernel files share ----------*- C++ -*-===//
//
// The pieces of Kernels.cpp that the CPU backend's other kernel files
// (ConvKernels.cpp) call: the Kernel of an entry point, whose failures go to
// the thread-local message gpipe_rt_last_error() reads, and the one checking
// path to OpenBLAS's sgemm (validation, bf16 rounding, gemm timing), and
// the timer every entry point starts (gpipe_rt_cpu_set_kernel_timing).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_KERNELS_CPU_CPUINTERNAL_H
#define GPIPE_RUNTIME_LIB_KERNELS_CPU_CPUINTERNAL_H

#include "Common/KernelArgs.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <vector>

/// The float loops of the hottest kernels are compiled three times, for
/// AVX-512, AVX2 and the baseline, and the loader picks the best the CPU
/// has (GCC's and Clang's function multiversioning). The instructions
/// differ, not the arithmetic: the same IEEE operations in the same order
/// without contraction (-ffp-contract=off), so every version computes the
/// same bits.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) &&        \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define GPIPE_RT_CPU_CLONES                                                    \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GPIPE_RT_CPU_CLONES
#endif

namespace gpipe::rt::cpu {

/// FNV-1a over `values`: the hash of the per-shape tables (GEMM splits,
/// libxsmm plans).
inline size_t hashValues(std::initializer_list<int64_t> values) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t v : values)
    h = (h ^ uint64_t(v)) * 1099511628211ull;
  return size_t(h);
}

/// Fills `v` with values in [-1, 1) from a xorshift32 `state`: the random
/// operands on which a per-shape split is checked to keep one call's bits.
inline void fillCheckOperand(std::vector<float> &v, uint32_t &state) {
  for (float &x : v) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    x = float(int32_t(state >> 8) - (1 << 23)) / float(1 << 23);
  }
}

/// `name` for the shared checks: its failures go to the CPU backend's
/// last-error string.
args::Kernel kernelNamed(const char *name);

/// C[M, N] = alpha * op(A) * op(B) + beta * C, row-major, where op(A) is
/// [M, K] and op(B) is [K, N], every argument validated before OpenBLAS is
/// called.
gpipe_rt_status sgemm(const args::Kernel &kernel, bool transA, bool transB,
                      int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb,
                      float beta, float *c, int64_t ldc);

/// The implementation the installed GEMM choice gives C (m x n) =
/// op(A) op(B) (GemmChoice.cpp; OpenBLAS when none is installed).
int32_t gemmImplFor(bool transA, bool transB, int64_t m, int64_t n, int64_t k);

/// C (m x n) += op(A) B with libxsmm (row-major, alpha 1; the caller
/// clears C for beta 0), split by rows over `threads` where the blocks give
/// the bits of the whole. False, and nothing computed, when libxsmm makes no
/// kernel for it or the runtime was built without it.
bool xsmmGemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb,
              float *c, int64_t ldc, int threads);

/// `n` elements of per-thread scratch that only grows: each rank runs its
/// kernels on its own thread, so after the first steps the kernels allocate
/// nothing. `Slot` tells apart the buffers held at once: one kernel's, and
/// those of a kernel that calls another (Kernels.cpp uses 0-9,
/// ConvKernels.cpp 10-19, AttentionKernels.cpp 20-29).
template <typename T, int Slot = 0> T *threadScratch(size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n)
    buffer.resize(n);
  return buffer.data();
}

/// Whether kernel timing is on (gpipe_rt_cpu_set_kernel_timing).
extern std::atomic<bool> kernelTiming;
/// This thread's nanoseconds per kernel class while timing was on.
extern thread_local uint64_t kernelNanoseconds[GPIPE_RT_KERNEL_CLASS_COUNT];
/// How many timed entry points are running on this thread (an entry point
/// that calls another counts once).
extern thread_local int kernelDepth;

/// Adds the wall time of an entry point, from construction to destruction,
/// to this thread's count of its class while timing is on; one relaxed load
/// when it is off.
class KernelTimer {
public:
  explicit KernelTimer(gpipe_rt_kernel_class cls) : cls(cls) {
    if (kernelDepth > 0) {
      ++kernelDepth;
    } else if (kernelTiming.load(std::memory_order_relaxed)) {
      kernelDepth = 1;
      start = std::chrono::steady_clock::now();
    }
  }
  ~KernelTimer() {
    if (kernelDepth == 0)
      return;
    if (--kernelDepth == 0)
      kernelNanoseconds[cls] +=
          uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count());
  }
  KernelTimer(const KernelTimer &) = delete;
  KernelTimer &operator=(const KernelTimer &) = delete;

private:
  gpipe_rt_kernel_class cls;
  std::chrono::steady_clock::time_point start;
};

} // namespace gpipe::rt::cpu

#endif // GPIPE_RUNTIME_LIB_KERNELS_CPU_CPUINTERNAL_H
