/*===- CPUKernels.h - CPU kernels for the nn ops ------------------*- C -*-===*\
|*                                                                            *|
|* The CPU backend's kernels: one entry point per `nn` op (forward and the    *|
|* gradient ops autodiff emits) and the SGD update, over raw                  *|
|* row-major buffers whose shapes are passed explicitly (a pointer to `rank`  *|
|* int64 dims; a rank-0 tensor is a scalar of one element). Float math is     *|
|* fp32; contractions go through OpenBLAS sgemm, the rest are plain loops     *|
|* with a fixed order of summation, so results are bitwise reproducible from  *|
|* run to run for a given build and BLAS thread count.                        *|
|*                                                                            *|
|* Every kernel validates its shapes and returns a gpipe_rt_status; on        *|
|* failure gpipe_rt_last_error() names the kernel and the offending values.   *|
|* Outputs never alias inputs unless a kernel says so. Broadcasting follows   *|
|* numpy: shapes align at the right, a dim of 1 stretches.                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GPIPE_RUNTIME_CPUKERNELS_H
#define GPIPE_RUNTIME_CPUKERNELS_H

#include "gpipe/Runtime/Common.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The largest rank any kernel accepts.
#define GPIPE_RT_MAX_RANK 8

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

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

typedef enum gpipe_rt_binary_op {
  GPIPE_RT_ADD = 0,
  GPIPE_RT_SUB = 1,
  GPIPE_RT_MUL = 2,
  GPIPE_RT_DIV = 3,
  GPIPE_RT_POW = 4,
} gpipe_rt_binary_op;

/// out = lhs `op` rhs with broadcasting; `outShape` must be the broadcast
/// shape. `out` may alias an operand of the output's shape.
gpipe_rt_status gpipe_rt_cpu_binary_f32(
    gpipe_rt_binary_op op, const float *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const float *rhs, const int64_t *rhsShape, int32_t rhsRank,
    float *out, const int64_t *outShape, int32_t outRank);

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
} gpipe_rt_unary_op;

/// out[i] = op(in[i]) for `count` elements; `out` may equal `in`.
gpipe_rt_status gpipe_rt_cpu_unary_f32(gpipe_rt_unary_op op, const float *in,
                                       float *out, int64_t count);

/// out = (lhs == rhs) with broadcasting, as bytes 0/1. `dtype` is the
/// operands' type: f32, f64, i32, i64 or bool.
gpipe_rt_status gpipe_rt_cpu_equal(gpipe_rt_dtype dtype, const void *lhs,
                                   const int64_t *lhsShape, int32_t lhsRank,
                                   const void *rhs, const int64_t *rhsShape,
                                   int32_t rhsRank, uint8_t *out,
                                   const int64_t *outShape, int32_t outRank);

/// out = cond ? x : y, all three broadcast to `outShape`. `cond` holds
/// bytes (nonzero is true); x, y and out have type `dtype` (any).
gpipe_rt_status gpipe_rt_cpu_where(const uint8_t *cond,
                                   const int64_t *condShape, int32_t condRank,
                                   gpipe_rt_dtype dtype, const void *x,
                                   const int64_t *xShape, int32_t xRank,
                                   const void *y, const int64_t *yShape,
                                   int32_t yRank, void *out,
                                   const int64_t *outShape, int32_t outRank);

/// out[i] = !in[i] over bytes (nonzero is true); `out` may equal `in`.
gpipe_rt_status gpipe_rt_cpu_not(const uint8_t *in, uint8_t *out,
                                 int64_t count);

/// Converts `count` elements between f32, f64, i32, i64 and bool. Floats to
/// integers truncate toward zero and saturate at the integer's range (NaN
/// gives 0); anything to bool is `x != 0`.
gpipe_rt_status gpipe_rt_cpu_cast(gpipe_rt_dtype inType, const void *in,
                                  gpipe_rt_dtype outType, void *out,
                                  int64_t count);

//===----------------------------------------------------------------------===//
// Contractions (OpenBLAS sgemm)
//===----------------------------------------------------------------------===//

/// Numpy matmul of operands of rank >= 2: [..., M, K] x [..., K, N] ->
/// [..., M, N], leading (batch) dims broadcast.
gpipe_rt_status
gpipe_rt_cpu_matmul_f32(const float *lhs, const int64_t *lhsShape,
                        int32_t lhsRank, const float *rhs,
                        const int64_t *rhsShape, int32_t rhsRank, float *out,
                        const int64_t *outShape, int32_t outRank);

/// ONNX Gemm: out[M, N] = alpha * op(a) * op(b) + beta * c, `op` transposing
/// when `transA`/`transB` is nonzero; `c` (may be null, then `cRank` is
/// ignored) broadcasts to [M, N]. `aShape`, `bShape` and `outShape` have two
/// dims each.
gpipe_rt_status gpipe_rt_cpu_gemm_f32(const float *a, const int64_t *aShape,
                                      const float *b, const int64_t *bShape,
                                      const float *c, const int64_t *cShape,
                                      int32_t cRank, float alpha, float beta,
                                      int32_t transA, int32_t transB,
                                      float *out, const int64_t *outShape);

/// Fully connected layer, one sgemm: input [..., in] times weight [in, out]
/// (or [out, in] when `transposeWeight`), plus `bias` [out] (may be null).
/// `outShape` is input's shape with the last dim replaced by `out`.
gpipe_rt_status
gpipe_rt_cpu_linear_f32(const float *input, const int64_t *inputShape,
                        int32_t inputRank, const float *weight,
                        const int64_t *weightShape, const float *bias,
                        int32_t transposeWeight, float *out,
                        const int64_t *outShape, int32_t outRank);

/// The same three contractions in bf16 (gpipe-compile --precision bf16):
/// both GEMM operands are rounded to bf16 (round to nearest even; the
/// products are then exact in fp32), accumulation, bias and result are
/// fp32. Same arguments, checks and messages as the _f32 kernels.
gpipe_rt_status
gpipe_rt_cpu_matmul_bf16(const float *lhs, const int64_t *lhsShape,
                        int32_t lhsRank, const float *rhs,
                        const int64_t *rhsShape, int32_t rhsRank, float *out,
                        const int64_t *outShape, int32_t outRank);
gpipe_rt_status gpipe_rt_cpu_gemm_bf16(const float *a, const int64_t *aShape,
                                       const float *b, const int64_t *bShape,
                                       const float *c, const int64_t *cShape,
                                       int32_t cRank, float alpha, float beta,
                                       int32_t transA, int32_t transB,
                                       float *out, const int64_t *outShape);
gpipe_rt_status
gpipe_rt_cpu_linear_bf16(const float *input, const int64_t *inputShape,
                        int32_t inputRank, const float *weight,
                        const int64_t *weightShape, const float *bias,
                        int32_t transposeWeight, float *out,
                        const int64_t *outShape, int32_t outRank);

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Softmax along `axis` (max-subtracted); out has the input's shape and may
/// equal `in`.
gpipe_rt_status gpipe_rt_cpu_softmax_f32(const float *in, const int64_t *shape,
                                         int32_t rank, int64_t axis,
                                         float *out);

/// Layer normalization over dims [axis, rank): biased variance, `epsilon`
/// inside the square root, then times `scale` and plus `bias` (may be null),
/// both shaped like the normalized dims. `mean` and `rstd` (may be null)
/// receive one value per normalized row (the product of dims [0, axis)):
/// the row's mean and 1 / sqrt(var + epsilon), what a backward kernel needs.
gpipe_rt_status gpipe_rt_cpu_layer_norm_f32(const float *in,
                                            const int64_t *shape, int32_t rank,
                                            int64_t axis, const float *scale,
                                            const float *bias, float epsilon,
                                            float *out, float *mean,
                                            float *rstd);

//===----------------------------------------------------------------------===//
// Indexing and data movement (any element type)
//===----------------------------------------------------------------------===//

/// ONNX Gather: out shape is data.shape[:axis] + indices.shape +
/// data.shape[axis+1:]. `indexType` is i32 or i64; every index must lie in
/// [0, data.shape[axis]): the first one that does not is reported with its
/// position, and `out` is left untouched.
gpipe_rt_status gpipe_rt_cpu_gather(
    gpipe_rt_dtype dtype, const void *data, const int64_t *dataShape,
    int32_t dataRank, gpipe_rt_dtype indexType, const void *indices,
    const int64_t *indicesShape, int32_t indicesRank, int64_t axis, void *out);

/// out dim i is input dim perm[i].
gpipe_rt_status gpipe_rt_cpu_transpose(gpipe_rt_dtype dtype, const void *in,
                                       const int64_t *shape, int32_t rank,
                                       const int64_t *perm, void *out);

/// Takes sizes[i] elements of dim i starting at offsets[i], every
/// strides[i] (> 0). The result has shape `sizes`.
gpipe_rt_status gpipe_rt_cpu_slice(gpipe_rt_dtype dtype, const void *in,
                                   const int64_t *shape, int32_t rank,
                                   const int64_t *offsets, const int64_t *sizes,
                                   const int64_t *strides, void *out);

/// Splits `in` along `axis` into `numOutputs` consecutive pieces of
/// sizes[i] (summing to shape[axis]), written to outs[i].
gpipe_rt_status gpipe_rt_cpu_split(gpipe_rt_dtype dtype, const void *in,
                                   const int64_t *shape, int32_t rank,
                                   int64_t axis, const int64_t *sizes,
                                   int32_t numOutputs, void *const *outs);

/// Concatenates `numInputs` tensors of rank `rank` along `axis`; shapes[i]
/// is input i's shape (all equal except along `axis`).
gpipe_rt_status gpipe_rt_cpu_concat(gpipe_rt_dtype dtype, int32_t numInputs,
                                    const void *const *inputs,
                                    const int64_t *const *shapes, int32_t rank,
                                    int64_t axis, void *out);

/// Copies `count` elements: reshape and unsqueeze, which change no data (a
/// no-op when `out == in`; a compiler may alias the buffers instead).
gpipe_rt_status gpipe_rt_cpu_copy(gpipe_rt_dtype dtype, const void *in,
                                  void *out, int64_t count);

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Softmax cross-entropy, mean over rows: logits [..., C] and one label per
/// row (`labelType` i32 or i64, shape = logits without the last dim). Each
/// row's logsumexp is max-subtracted. A label outside [0, C) is reported
/// with its position. `*loss` receives the mean (NaN for zero rows).
gpipe_rt_status gpipe_rt_cpu_cross_entropy_f32(const float *logits,
                                               const int64_t *logitsShape,
                                               int32_t logitsRank,
                                               gpipe_rt_dtype labelType,
                                               const void *labels, float *loss);

/// Mean squared error over `count` elements (NaN for none).
gpipe_rt_status gpipe_rt_cpu_mse_f32(const float *input, const float *target,
                                     int64_t count, float *loss);

//===----------------------------------------------------------------------===//
// Backward (gradient) kernels
//
// The ops reverse-mode autodiff emits. Sums run in double precision in a
// fixed order (stated per kernel) and round to f32 once, so every result is
// bitwise reproducible from run to run.
//===----------------------------------------------------------------------===//

/// nn.reduce_sum: sums `in` over `axes` (`numAxes` sorted, distinct dims
/// below `rank`; none copies). `out` holds the kept dims in order (with or
/// without keep_dims the elements are the same). Each output element adds
/// its inputs in increasing index order of the reduced dims; reducing an
/// empty dim gives 0.
gpipe_rt_status gpipe_rt_cpu_reduce_sum_f32(const float *in,
                                            const int64_t *shape, int32_t rank,
                                            const int64_t *axes,
                                            int32_t numAxes, float *out);

/// nn.insert_slice: `out` = `dest` (shape `destShape`) with the elements at
/// offsets[i] + j * strides[i] (j in [0, sourceShape[i])) of every dim i
/// replaced by `source`; the written positions must lie inside `dest`
/// (strides > 0). `out` may equal `dest`. Any element type.
gpipe_rt_status gpipe_rt_cpu_insert_slice(
    gpipe_rt_dtype dtype, const void *source, const int64_t *sourceShape,
    const void *dest, const int64_t *destShape, int32_t rank,
    const int64_t *offsets, const int64_t *strides, void *out);

/// nn.gather_grad: `out` (shape `outShape`, the gathered table's) is zero
/// plus, for every position of `indices` (row-major order), the matching
/// slice of `grad` (shape outShape[:axis] + indicesShape +
/// outShape[axis+1:]) added at the row the index names. Rows read twice get
/// the sum, accumulated in double in that order. Indices out of
/// [0, outShape[axis]) are reported with their position; `out` is then
/// untouched.
gpipe_rt_status
gpipe_rt_cpu_gather_grad_f32(gpipe_rt_dtype indexType, const void *indices,
                             const int64_t *indicesShape, int32_t indicesRank,
                             const float *grad, const int64_t *gradShape,
                             int32_t gradRank, int64_t axis, float *out,
                             const int64_t *outShape, int32_t outRank);

/// nn.softmax_grad: from y = softmax(x) along `axis` (`output`) and dy
/// (`grad`), dx = y * (dy - sum(dy * y)) with the sum over the axis in
/// double, in increasing index order. All three have shape `shape`; `out`
/// may equal `grad`.
gpipe_rt_status gpipe_rt_cpu_softmax_grad_f32(const float *output,
                                              const float *grad,
                                              const int64_t *shape,
                                              int32_t rank, int64_t axis,
                                              float *out);

/// nn.layer_norm_grad over dims [axis, rank) of `in` (shape `shape`): the
/// row mean and rstd = 1 / sqrt(var + epsilon) are recomputed in double as
/// the forward kernel does; with xhat = (x - mean) * rstd and g = dy *
/// scale, `inputGrad` = rstd * (g - mean(g) - xhat * mean(g * xhat)),
/// `scaleGrad` = sum of dy * xhat and `biasGrad` = sum of dy over the rows
/// (dims [0, axis)), added row by row in order. `scaleGrad` and `biasGrad`
/// have the normalized size and may be null (not computed); `inputGrad` may
/// be null too.
gpipe_rt_status gpipe_rt_cpu_layer_norm_grad_f32(
    const float *in, const int64_t *shape, int32_t rank, int64_t axis,
    const float *scale, const float *grad, float epsilon, float *inputGrad,
    float *scaleGrad, float *biasGrad);

/// nn.gelu_grad: out[i] = grad[i] * (Phi(x) + x * phi(x)) for x = in[i],
/// evaluated in double (Phi the normal CDF, phi its density). `out` may equal
/// `in` or `grad`.
gpipe_rt_status gpipe_rt_cpu_gelu_grad_f32(const float *in, const float *grad,
                                           float *out, int64_t count);

/// nn.cross_entropy_grad: for logits [..., C] (N rows) and one label per
/// row, out = grad * (softmax(logits) - onehot(labels)) / N, the softmax
/// max-subtracted with its sum in double. `out` has the logits' shape and
/// may equal `logits`. Labels out of [0, C) are reported with their
/// position.
gpipe_rt_status gpipe_rt_cpu_cross_entropy_grad_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, float grad, float *out);

/// The same with the scalar `grad` read from memory (one float at `grad`):
/// what compiled code calls, so that it never dereferences a buffer itself
/// (on a GPU the buffer is device memory).
gpipe_rt_status gpipe_rt_cpu_cross_entropy_grad_at_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, const float *grad,
    float *out);

/// out[i] = value for `count` floats (the loss seed of compiled code).
gpipe_rt_status gpipe_rt_cpu_fill_f32(float *out, int64_t count, float value);

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// Plain SGD in place: param[i] = param[i] - lr * grad[i], in f32 without
/// fused multiply-add (the same bits on every target).
gpipe_rt_status gpipe_rt_cpu_sgd_update_f32(float *param, const float *grad,
                                            int64_t count, float lr);

/// Gradient accumulation over micro-batches: acc = grad when `first` is
/// nonzero (a copy, so the sum starts from the first micro-batch's bits),
/// else acc[i] = acc[i] + grad[i] in f32. Accumulating micro-batches
/// 0, 1, ..., M-1 in that order gives the same bits for every partition.
gpipe_rt_status gpipe_rt_cpu_accumulate_f32(float *acc, const float *grad,
                                            int64_t count, int32_t first);

//===----------------------------------------------------------------------===//
// Parameter initialization
//===----------------------------------------------------------------------===//

typedef enum gpipe_rt_init {
  GPIPE_RT_INIT_ZEROS = 0,
  GPIPE_RT_INIT_ONES = 1,
  /// Normal with mean 0 and standard deviation `scale`.
  GPIPE_RT_INIT_NORMAL = 2,
  /// Uniform on [-scale, scale).
  GPIPE_RT_INIT_UNIFORM = 3,
} gpipe_rt_init;

/// Fills `count` floats by `init`. Random draws are counter-based: element i
/// depends only on (seed, stream, i), so a parameter's values do not depend
/// on the order parameters are filled in or on how the model is split.
/// `stream` is usually gpipe_rt_hash_name(parameter name).
gpipe_rt_status gpipe_rt_cpu_fill_init_f32(gpipe_rt_init init, float *out,
                                           int64_t count, double scale,
                                           uint64_t seed, uint64_t stream);

/// 64-bit FNV-1a hash of `size` bytes at `name`.
uint64_t gpipe_rt_hash_name(const char *name, size_t size);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* GPIPE_RUNTIME_CPUKERNELS_H */
