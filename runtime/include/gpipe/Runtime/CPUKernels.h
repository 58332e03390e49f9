/*===- CPUKernels.h - CPU kernels for the nn ops ------------------*- C -*-===*\
|*                                                                            *|
|* The CPU backend's kernels: one `gpipe_rt_cpu_<name>` entry point for every *|
|* entry of Kernels.def (which documents each kernel), over host memory,      *|
|* plus the CPU library's own controls (BLAS threads, GEMM timing). Float     *|
|* math is fp32; contractions go through OpenBLAS sgemm, the rest are plain   *|
|* loops with a fixed order of summation, so results are bitwise              *|
|* reproducible from run to run for a given build and BLAS thread count. On   *|
|* failure gpipe_rt_last_error() names the kernel and the offending values.   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GPIPE_RUNTIME_CPUKERNELS_H
#define GPIPE_RUNTIME_CPUKERNELS_H

#include "gpipe/Runtime/Kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Sets OpenBLAS's thread count (the runtime runs one BLAS thread per rank,
/// so it calls this with 1). Values below 1 are treated as 1.
void gpipe_rt_cpu_set_blas_threads(int32_t threads);

/// The current OpenBLAS thread count.
int32_t gpipe_rt_cpu_get_blas_threads(void);

/// Profiling for benchmarks: while enabled, the wall time of every sgemm
/// call (on any thread) is added to one process-wide counter, which
/// gpipe_rt_cpu_gemm_nanoseconds reads. Off by default.
void gpipe_rt_cpu_set_gemm_timing(int32_t enabled);
uint64_t gpipe_rt_cpu_gemm_nanoseconds(void);

/// 64-bit FNV-1a hash of `size` bytes at `name` (the `stream` of a
/// parameter's fill_init_f32).
uint64_t gpipe_rt_hash_name(const char *name, size_t size);

/// The kernels of Kernels.def.
#define GPIPE_RT_ARG(role, type, name) type name
#define GPIPE_RT_KERNEL(name, ret, args) ret gpipe_rt_cpu_##name args;
#include "gpipe/Runtime/Kernels.def"

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* GPIPE_RUNTIME_CPUKERNELS_H */
