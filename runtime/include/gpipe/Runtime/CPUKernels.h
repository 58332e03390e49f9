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

#include "gpipe/Runtime/GemmChoice.h"
#include "gpipe/Runtime/Kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Sets the threads a GEMM splits over (the engine's per-rank BLAS
/// threads): the kernel threads below, so the same as
/// gpipe_rt_cpu_set_kernel_threads. OpenBLAS itself always runs on the
/// calling thread; the runtime splits a large GEMM into blocks of whole
/// rows (gpipe_rt_cpu_gemm_row_block), one single-threaded sgemm each,
/// which gives the bits of one call on every thread count. Values below 1 are
/// treated as 1.
void gpipe_rt_cpu_set_blas_threads(int32_t threads);

/// The current BLAS (= kernel) thread count.
int32_t gpipe_rt_cpu_get_blas_threads(void);

/// The rows of C each block of a GEMM split over threads holds a multiple
/// of: the smallest block height whose blocks give, on this CPU, the bits
/// of one sgemm call (measured once, at first use); 0 when none does, and
/// GEMMs then run whole on the calling thread.
int64_t gpipe_rt_cpu_gemm_row_block(void);

/// Whether this runtime was built with `impl`.
int32_t gpipe_rt_cpu_gemm_impl_available(int32_t impl);

/// Installs which implementation each GEMM shape of this process takes
/// (a model's; the engine installs its metadata's before the first step).
/// `impl` is the implementation of every shape. With a grid (`grid_size` > 0),
/// `cells[layout]` (layout = 2 trans_a + trans_b; NULL: OpenBLAS throughout)
/// holds one character per cell, '0' + impl, cell (i, j, l) of M, N, K at index
/// (i * size + j) * size + l (gpipe_rt_gemm_grid_cell), and decides
/// instead of `impl`. Fails, naming what, for an implementation this
/// runtime lacks or a malformed grid; the choice in force then stays.
gpipe_rt_status gpipe_rt_cpu_set_gemm_choice(int32_t impl, const int64_t *grid,
                                             int32_t grid_size,
                                             const char *const cells[4]);
/// The implementation the installed choice gives C (m x n) = op(A) op(B),
/// op(A) m x k (OpenBLAS until a choice is installed).
int32_t gpipe_rt_cpu_gemm_impl_for(int32_t trans_a, int32_t trans_b, int64_t m,
                                   int64_t n, int64_t k);

/// Sets the threads the elementwise, row and data-movement kernels may
/// split their work over (the calling thread and a pool of workers; values
/// below 1 are 1). The engine sets it with the BLAS threads: more than one
/// only where a rank runs alone in its process. Each element is computed by
/// the same code on any thread, so the results do not depend on it.
void gpipe_rt_cpu_set_kernel_threads(int32_t threads);
int32_t gpipe_rt_cpu_get_kernel_threads(void);

/// Runs rows [0, `rows`) of a model library's fused elementwise loop: `fn`
/// computes rows [first, end) of it from its argument array `argv`, each
/// row of `row_elements` elements and independent of the others. The rows
/// are split over the kernel threads in ranges of at least the elementwise
/// kernels' grain, or run on the calling thread when there are too few
/// (or one thread); the results do not depend on the split.
void gpipe_rt_cpu_fused_rows(void (*fn)(const void *argv, int64_t first,
                                        int64_t end),
                             const void *argv, int64_t rows,
                             int64_t row_elements);

/// Profiling for benchmarks: while enabled, the wall time of every sgemm
/// call (on any thread) is added to one process-wide counter, which
/// gpipe_rt_cpu_gemm_nanoseconds reads. Off by default.
void gpipe_rt_cpu_set_gemm_timing(int32_t enabled);
uint64_t gpipe_rt_cpu_gemm_nanoseconds(void);

/// What a kernel entry point counts as in the kernel timing.
typedef enum gpipe_rt_kernel_class {
  /// linear, matmul, gemm, conv2d and their bf16 forms (bias, im2col and
  /// the BLAS call);
  GPIPE_RT_KERNEL_CLASS_GEMM,
  /// of GEMM, the time inside OpenBLAS's sgemm;
  GPIPE_RT_KERNEL_CLASS_SGEMM,
  /// unary, binary, where, equal, not, cast, gelu_grad, dropout, fills,
  /// the gradient accumulation;
  GPIPE_RT_KERNEL_CLASS_ELEMENTWISE,
  /// softmax, layer and batch norm, pools, reductions and losses (with
  /// their gradients);
  GPIPE_RT_KERNEL_CLASS_NORMALIZATION,
  /// copy, transpose, slice, split, concat, insert_slice, gather;
  GPIPE_RT_KERNEL_CLASS_MOVEMENT,
  /// sgd_update, running_stats_update;
  GPIPE_RT_KERNEL_CLASS_OPTIMIZER,
  GPIPE_RT_KERNEL_CLASS_COUNT
} gpipe_rt_kernel_class;

/// Kernel timing for `gpipe-run --kernel-times` and benchmarks: while
/// enabled, every kernel entry point adds its wall time to the calling
/// thread's count of its class (an entry point another one calls counts
/// in its caller), and sgemm calls to SGEMM as well.
/// gpipe_rt_cpu_thread_kernel_nanoseconds reads the calling thread's
/// count. Off by default; one relaxed atomic load per call while off.
void gpipe_rt_cpu_set_kernel_timing(int32_t enabled);
uint64_t gpipe_rt_cpu_thread_kernel_nanoseconds(gpipe_rt_kernel_class cls);

/// One GEMM shape's time on a thread while kernel timing is on: C (m x n)
/// = op(A) (m x k) * op(B) (k x n), op the transpose where trans_a/trans_b;
/// a batch of products counts each one as a call.
typedef struct gpipe_rt_gemm_shape_time {
  int64_t m, n, k;
  int32_t trans_a, trans_b;
  uint64_t calls, nanoseconds;
} gpipe_rt_gemm_shape_time;

/// Whether two records are of one shape (sizes and transposes).
static inline int gpipe_rt_gemm_same_shape(const gpipe_rt_gemm_shape_time *a,
                                           const gpipe_rt_gemm_shape_time *b) {
  return a->m == b->m && a->n == b->n && a->k == b->k &&
         a->trans_a == b->trans_a && a->trans_b == b->trans_b;
}

/// The most shapes a thread records (further shapes count in their class
/// only, and gpipe_rt_cpu_thread_gemm_shapes says so).
#define GPIPE_RT_GEMM_SHAPES 64

/// Copies the calling thread's GEMM times by shape (each sgemm call while
/// kernel timing is on, inside a kernel entry point) into `out` (at most
/// `capacity` records) and returns how many it holds, or -1 when more
/// shapes ran than it keeps. Allocates nothing.
int32_t gpipe_rt_cpu_thread_gemm_shapes(gpipe_rt_gemm_shape_time *out,
                                        int32_t capacity);
/// Forgets the calling thread's GEMM times by shape.
void gpipe_rt_cpu_reset_thread_gemm_shapes(void);

/// 64-bit FNV-1a hash of `size` bytes at `name` (the `stream` of a
/// parameter's fill_init_f32).
uint64_t gpipe_rt_hash_name(const char *name, size_t size);

/// The kernels of Kernels.def.
#define GPIPE_RT_ARG(role, type, name) type name
#define GPIPE_RT_KERNEL(name, ret, args) ret gpipe_rt_cpu_##name args;
#include "gpipe/Runtime/Kernels.def"

/// The address of every kernel above, in Kernels.def's order: what keeps
/// them all in a program that links the CPU kernels, whichever it calls
/// itself (a model library resolves its calls against the program that
/// loads it).
extern const void *const gpipe_rt_cpu_kernels[];
/// How many entries gpipe_rt_cpu_kernels has.
extern const int32_t gpipe_rt_cpu_kernel_count;

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* GPIPE_RUNTIME_CPUKERNELS_H */
