/*===- GemmChoice.h - Which implementation a GEMM shape runs on --*- C -*-===*\
|*                                                                            *|
|* The vocabulary of a model's GEMM choice that the compiler (which decides   *|
|* it, gpipe-compile --gemm) and the CPU kernels (which apply it,             *|
|* gpipe_rt_cpu_set_gemm_choice) share: the implementations, their names,    *|
|* and the cell of the choice grid a dimension falls in. Plain C, no runtime  *|
|* library behind it.                                                         *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GPIPE_RUNTIME_GEMMCHOICE_H
#define GPIPE_RUNTIME_GEMMCHOICE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The GEMM implementations a CPU GEMM can run on. A compiled model
/// records which one each shape takes (the metadata's `gemm`, installed
/// with gpipe_rt_cpu_set_gemm_choice), so a library computes the same bits
/// on every run and in every stage.
typedef enum gpipe_rt_gemm_impl {
  /// OpenBLAS's sgemm: every layout.
  GPIPE_RT_GEMM_OPENBLAS = 0,
  /// libxsmm's JIT kernel for the shape (alpha 1; libxsmm 1.17 makes no
  /// kernel that reads B transposed, so such a GEMM reads a transposed
  /// copy of B).
  GPIPE_RT_GEMM_LIBXSMM = 1,
  GPIPE_RT_GEMM_IMPL_COUNT
} gpipe_rt_gemm_impl;

/// "openblas", "libxsmm" (the metadata's and --gemm's names); NULL for any
/// other value.
static inline const char *gpipe_rt_gemm_impl_name(int32_t impl) {
  return impl == GPIPE_RT_GEMM_OPENBLAS  ? "openblas"
         : impl == GPIPE_RT_GEMM_LIBXSMM ? "libxsmm"
                                         : (const char *)0;
}

/// The cell of dimension `d` on a choice grid of `size` increasing
/// dimensions: the nearest in log scale (the geometric mean of two
/// neighbours is the boundary; one formula, so the compiler and the
/// runtime agree on every shape).
static inline int32_t gpipe_rt_gemm_grid_cell(int64_t d, const int64_t *grid,
                                              int32_t size) {
  int32_t i = 0;
  while (i + 1 < size &&
         (double)d * (double)d > (double)grid[i] * (double)grid[i + 1])
    ++i;
  return i;
}

/// The implementation a choice gives C (m x n) = op(A) op(B), op(A)
/// m x k: `impl` without a grid (`size` 0); with one, the character '0' +
/// impl of cell (M, N, K) in `cells[2 trans_a + trans_b]`, at index
/// (i * size + j) * size + l, and OpenBLAS where that layout has no cells
/// (NULL or empty). What gpipe-compile decides by and the kernels apply.
static inline int32_t gpipe_rt_gemm_choose(int32_t impl, const int64_t *grid,
                                           int32_t size,
                                           const char *const cells[4],
                                           int trans_a, int trans_b, int64_t m,
                                           int64_t n, int64_t k) {
  if (size == 0)
    return impl;
  const char *layout = cells[2 * (trans_a != 0) + (trans_b != 0)];
  if (!layout || !layout[0])
    return GPIPE_RT_GEMM_OPENBLAS;
  int64_t index = ((int64_t)gpipe_rt_gemm_grid_cell(m, grid, size) * size +
                   gpipe_rt_gemm_grid_cell(n, grid, size)) *
                      size +
                  gpipe_rt_gemm_grid_cell(k, grid, size);
  return layout[index] - '0';
}

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* GPIPE_RUNTIME_GEMMCHOICE_H */
