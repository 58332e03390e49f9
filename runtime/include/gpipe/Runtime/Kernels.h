/*===- Kernels.h - What every kernel backend shares ---------------*- C -*-===*\
|*                                                                            *|
|* The backend-neutral half of the kernel C ABI: the conventions every        *|
|* backend's kernels follow and the enums their arguments use. The kernels    *|
|* themselves are declared once, in Kernels.def; CPUKernels.h and             *|
|* CUDAKernels.h expand it into their `gpipe_rt_cpu_*` and `gpipe_rt_cuda_*`  *|
|* prototypes, with the same parameter lists, semantics, validation and      *|
|* messages.                                                                  *|
|*                                                                            *|
|* Conventions: one entry point per `nn` op (forward and the gradient ops    *|
|* autodiff emits) plus the optimizer updates and parameter fills, over raw  *|
|* row-major buffers whose shapes are passed explicitly (a pointer to `rank` *|
|* int64 dims; a rank-0 tensor is a scalar of one element). Every kernel      *|
|* validates its shapes and returns a gpipe_rt_status; on failure the         *|
|* backend's last-error string names the kernel and the offending values.     *|
|* Outputs never alias inputs unless a kernel says so. Broadcasting follows   *|
|* numpy: shapes align at the right, a dim of 1 stretches.                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GPIPE_RUNTIME_KERNELS_H
#define GPIPE_RUNTIME_KERNELS_H

#include "gpipe/Runtime/Common.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The largest rank any kernel accepts.
#define GPIPE_RT_MAX_RANK 8

/// The operation of gpipe_rt_*_binary_f32.
typedef enum gpipe_rt_binary_op {
  GPIPE_RT_ADD = 0,
  GPIPE_RT_SUB = 1,
  GPIPE_RT_MUL = 2,
  GPIPE_RT_DIV = 3,
  GPIPE_RT_POW = 4,
  /// NaN propagates (ONNX Max and Min, torch.maximum and torch.minimum).
  GPIPE_RT_MAX = 5,
  GPIPE_RT_MIN = 6,
  /// The remainder with the divisor's sign: a - b * floor(a / b) (Python's
  /// %, torch.remainder, ONNX Mod with fmod 0); a zero remainder takes the
  /// divisor's sign.
  GPIPE_RT_REMAINDER = 7,
  /// The remainder with the dividend's sign: a - b * trunc(a / b) (C's
  /// fmod, torch.fmod, ONNX Mod with fmod 1).
  GPIPE_RT_FMOD = 8,
} gpipe_rt_binary_op;

/// The operation of gpipe_rt_*_unary_f32.
typedef enum gpipe_rt_unary_op {
  GPIPE_RT_NEG = 0,
  GPIPE_RT_RECIPROCAL = 1,
  GPIPE_RT_SQRT = 2,
  GPIPE_RT_EXP = 3,
  GPIPE_RT_ERF = 4,
  GPIPE_RT_TANH = 5,
  GPIPE_RT_SIGMOID = 6,
  GPIPE_RT_RELU = 7,
  /// Exact GELU: x * 0.5 * (1 + erf(x / sqrt(2))).
  GPIPE_RT_GELU = 8,
  GPIPE_RT_LOG = 9,
  GPIPE_RT_SIN = 10,
  GPIPE_RT_COS = 11,
  GPIPE_RT_FLOOR = 12,
  GPIPE_RT_CEIL = 13,
  /// To the nearest integer, ties to even (ONNX Round, torch.round).
  GPIPE_RT_ROUND = 14,
} gpipe_rt_unary_op;

/// The predicate of gpipe_rt_*_compare.
typedef enum gpipe_rt_compare_op {
  GPIPE_RT_CMP_EQ = 0,
  GPIPE_RT_CMP_NE = 1,
  GPIPE_RT_CMP_LT = 2,
  GPIPE_RT_CMP_LE = 3,
  GPIPE_RT_CMP_GT = 4,
  GPIPE_RT_CMP_GE = 5,
} gpipe_rt_compare_op;

/// The operation of gpipe_rt_*_logical.
typedef enum gpipe_rt_logical_op {
  GPIPE_RT_AND = 0,
  GPIPE_RT_OR = 1,
  GPIPE_RT_XOR = 2,
} gpipe_rt_logical_op;

/// The rule of gpipe_rt_*_fill_init_f32.
typedef enum gpipe_rt_init {
  GPIPE_RT_INIT_ZEROS = 0,
  GPIPE_RT_INIT_ONES = 1,
  /// Normal with mean 0 and standard deviation `scale`.
  GPIPE_RT_INIT_NORMAL = 2,
  /// Uniform on [-scale, scale).
  GPIPE_RT_INIT_UNIFORM = 3,
} gpipe_rt_init;

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* GPIPE_RUNTIME_KERNELS_H */
