//===- CPUInternal.h - What the CPU kernel files share ----------*- C++ -*-===//
//
// The pieces of Kernels.cpp that the CPU backend's other kernel files
// (ConvKernels.cpp) call: the Kernel of an entry point, whose failures go to
// the thread-local message gpipe_rt_last_error() reads, and the one checking
// path to OpenBLAS's sgemm (validation, bf16 rounding, gemm timing).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_KERNELS_CPU_CPUINTERNAL_H
#define GPIPE_RUNTIME_LIB_KERNELS_CPU_CPUINTERNAL_H

#include "Common/KernelArgs.h"

namespace gpipe::rt::cpu {

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

} // namespace gpipe::rt::cpu

#endif // GPIPE_RUNTIME_LIB_KERNELS_CPU_CPUINTERNAL_H
