/*===- CUDAKernels.h - CUDA kernels for the nn ops ----------------*- C -*-===*\
|*                                                                            *|
|* The CUDA backend's kernels: one `gpipe_rt_cuda_*` entry point for every    *|
|* `gpipe_rt_cpu_*` kernel of CPUKernels.h, with the same parameter list and  *|
|* the same semantics, validation and messages. Tensor data pointers are      *|
|* DEVICE pointers; shapes, permutations, offsets, sizes, strides, axes and   *|
|* the arrays of pointers of split and concat are HOST arrays (the pointers   *|
|* they hold are device pointers). The scalar losses of cross_entropy and mse *|
|* are written to device memory.                                              *|
|*                                                                            *|
|* Execution is asynchronous: a kernel validates its arguments on the host,   *|
|* enqueues its work on the calling thread's current stream (see              *|
|* gpipe_rt_cuda_set_stream) and returns without waiting for the device.      *|
|* A success status therefore means "validated and enqueued". Errors that     *|
|* depend on tensor data (an index or label out of range) are detected on the *|
|* device, recorded in a per-thread device-side error record, and reported by *|
|* the next gpipe_rt_cuda_check() on that thread, which synchronizes the      *|
|* stream; the outputs of the failing kernel then hold unspecified values.    *|
|*                                                                            *|
|* Float math is fp32 and matches the CPU kernels: exact operations (add,     *|
|* sub, mul, div, sqrt, reciprocal, comparisons, casts, data movement, SGD,   *|
|* accumulation, momentum, AdamW) give the same bits; GEMMs use cuBLAS in     *|
|* full fp32 (no TF32); reductions accumulate in double like the CPU. Every   *|
|* reduction has a fixed order that depends only on the shapes (no atomics),  *|
|* so results are bitwise reproducible from run to run on a given GPU model   *|
|* and toolkit.                                                               *|
|*                                                                            *|
|* Messages of failing calls go to a thread-local string of this library,     *|
|* read with gpipe_rt_cuda_last_error() (gpipe_rt_last_error() belongs to the *|
|* CPU kernels and does not see them). Failures of the CUDA runtime or cuBLAS *|
|* (no device, a failed launch or allocation) return GPIPE_RT_BLAS_ERROR with *|
|* the CUDA error string in the message.                                      *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GPIPE_RUNTIME_CUDAKERNELS_H
#define GPIPE_RUNTIME_CUDAKERNELS_H

#include "gpipe/Runtime/CPUKernels.h"

#ifdef __cplusplus
extern "C" {
#endif

//===----------------------------------------------------------------------===//
// Devices, streams and errors
//===----------------------------------------------------------------------===//

/// The message of the last failing gpipe_rt_cuda_* call on this thread (""
/// if none). Valid until the next failing call on the same thread.
const char *gpipe_rt_cuda_last_error(void);

/// Clears this thread's last CUDA-kernel error message.
void gpipe_rt_cuda_clear_error(void);

/// The number of CUDA devices. Without a driver or a device, `*count` is 0
/// and the call fails with the CUDA error string in the message.
gpipe_rt_status gpipe_rt_cuda_device_count(int32_t *count);

/// Makes `cudaStream` (a cudaStream_t; null is the legacy default stream)
/// the calling thread's current stream: every later kernel and cuBLAS call
/// of this thread is enqueued on it. Each host thread starts on the default
/// stream.
gpipe_rt_status gpipe_rt_cuda_set_stream(void *cudaStream);

/// The calling thread's current stream (a cudaStream_t).
void *gpipe_rt_cuda_get_stream(void);

/// Waits for the calling thread's current stream, then reports (and clears)
/// the first error the device recorded since the last check: an out-of-range
/// index or label (GPIPE_RT_OUT_OF_RANGE, the message naming the kernel, the
/// value and its position, like the CPU kernels'), or an asynchronous CUDA
/// failure (GPIPE_RT_BLAS_ERROR). The data-dependent checks are deferred to
/// this call so that kernels never synchronize: call it where a step's
/// results are consumed on the host (the loss, at the latest).
gpipe_rt_status gpipe_rt_cuda_check(void);

/// The version of the NCCL library linked in (NCCL_VERSION_CODE form, e.g.
/// 22705 for 2.27.5). The collective transport that will use NCCL is not
/// there yet.
gpipe_rt_status gpipe_rt_cuda_nccl_version(int32_t *version);

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// gpipe_rt_cpu_binary_f32. Add, sub, mul and div give the CPU's bits; pow
/// agrees within a few ulp (CUDA's powf).
gpipe_rt_status gpipe_rt_cuda_binary_f32(
    gpipe_rt_binary_op op, const float *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const float *rhs, const int64_t *rhsShape, int32_t rhsRank,
    float *out, const int64_t *outShape, int32_t outRank);

/// gpipe_rt_cpu_unary_f32. Neg, reciprocal, sqrt and relu give the CPU's
/// bits; the transcendental ops agree within a few ulp (CUDA's libdevice).
gpipe_rt_status gpipe_rt_cuda_unary_f32(gpipe_rt_unary_op op, const float *in,
                                        float *out, int64_t count);

/// gpipe_rt_cpu_equal.
gpipe_rt_status gpipe_rt_cuda_equal(gpipe_rt_dtype dtype, const void *lhs,
                                    const int64_t *lhsShape, int32_t lhsRank,
                                    const void *rhs, const int64_t *rhsShape,
                                    int32_t rhsRank, uint8_t *out,
                                    const int64_t *outShape, int32_t outRank);

/// gpipe_rt_cpu_where.
gpipe_rt_status gpipe_rt_cuda_where(const uint8_t *cond,
                                    const int64_t *condShape, int32_t condRank,
                                    gpipe_rt_dtype dtype, const void *x,
                                    const int64_t *xShape, int32_t xRank,
                                    const void *y, const int64_t *yShape,
                                    int32_t yRank, void *out,
                                    const int64_t *outShape, int32_t outRank);

/// gpipe_rt_cpu_not.
gpipe_rt_status gpipe_rt_cuda_not(const uint8_t *in, uint8_t *out,
                                  int64_t count);

/// gpipe_rt_cpu_cast (the same truncation, saturation and NaN rules).
gpipe_rt_status gpipe_rt_cuda_cast(gpipe_rt_dtype inType, const void *in,
                                   gpipe_rt_dtype outType, void *out,
                                   int64_t count);

//===----------------------------------------------------------------------===//
// Contractions (cuBLAS sgemm, fp32 without TF32)
//===----------------------------------------------------------------------===//

/// gpipe_rt_cpu_matmul_f32.
gpipe_rt_status
gpipe_rt_cuda_matmul_f32(const float *lhs, const int64_t *lhsShape,
                         int32_t lhsRank, const float *rhs,
                         const int64_t *rhsShape, int32_t rhsRank, float *out,
                         const int64_t *outShape, int32_t outRank);

/// gpipe_rt_cpu_gemm_f32; `c` is a device pointer (or null).
gpipe_rt_status gpipe_rt_cuda_gemm_f32(const float *a, const int64_t *aShape,
                                       const float *b, const int64_t *bShape,
                                       const float *c, const int64_t *cShape,
                                       int32_t cRank, float alpha, float beta,
                                       int32_t transA, int32_t transB,
                                       float *out, const int64_t *outShape);

/// gpipe_rt_cpu_linear_f32; `bias` is a device pointer (or null).
gpipe_rt_status
gpipe_rt_cuda_linear_f32(const float *input, const int64_t *inputShape,
                         int32_t inputRank, const float *weight,
                         const int64_t *weightShape, const float *bias,
                         int32_t transposeWeight, float *out,
                         const int64_t *outShape, int32_t outRank);

/// The bf16 contractions (CPUKernels.h): both operands rounded to bf16 on
/// the device (round to nearest even, as the CPU kernels), cuBLAS with
/// bf16 inputs and fp32 accumulation and result (tensor cores). The bf16
/// copies of the operands live in stream-ordered scratch memory while the
/// GEMM runs.
gpipe_rt_status
gpipe_rt_cuda_matmul_bf16(const float *lhs, const int64_t *lhsShape,
                          int32_t lhsRank, const float *rhs,
                          const int64_t *rhsShape, int32_t rhsRank, float *out,
                          const int64_t *outShape, int32_t outRank);
gpipe_rt_status gpipe_rt_cuda_gemm_bf16(const float *a, const int64_t *aShape,
                                        const float *b, const int64_t *bShape,
                                        const float *c, const int64_t *cShape,
                                        int32_t cRank, float alpha, float beta,
                                        int32_t transA, int32_t transB,
                                        float *out, const int64_t *outShape);
gpipe_rt_status
gpipe_rt_cuda_linear_bf16(const float *input, const int64_t *inputShape,
                          int32_t inputRank, const float *weight,
                          const int64_t *weightShape, const float *bias,
                          int32_t transposeWeight, float *out,
                          const int64_t *outShape, int32_t outRank);

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// gpipe_rt_cpu_softmax_f32. The sum along the axis runs in double, in a
/// fixed order (a warp per row when the axis is innermost, else one thread
/// per row in index order).
gpipe_rt_status gpipe_rt_cuda_softmax_f32(const float *in, const int64_t *shape,
                                          int32_t rank, int64_t axis,
                                          float *out);

/// gpipe_rt_cpu_layer_norm_f32; `mean` and `rstd` are device pointers (or
/// null). Row statistics run in double, a warp per row in a fixed order.
gpipe_rt_status gpipe_rt_cuda_layer_norm_f32(const float *in,
                                             const int64_t *shape, int32_t rank,
                                             int64_t axis, const float *scale,
                                             const float *bias, float epsilon,
                                             float *out, float *mean,
                                             float *rstd);

//===----------------------------------------------------------------------===//
// Indexing and data movement (any element type)
//===----------------------------------------------------------------------===//

/// gpipe_rt_cpu_gather. Out-of-range indices are reported by
/// gpipe_rt_cuda_check (the first position in row-major order).
gpipe_rt_status gpipe_rt_cuda_gather(
    gpipe_rt_dtype dtype, const void *data, const int64_t *dataShape,
    int32_t dataRank, gpipe_rt_dtype indexType, const void *indices,
    const int64_t *indicesShape, int32_t indicesRank, int64_t axis, void *out);

/// gpipe_rt_cpu_transpose.
gpipe_rt_status gpipe_rt_cuda_transpose(gpipe_rt_dtype dtype, const void *in,
                                        const int64_t *shape, int32_t rank,
                                        const int64_t *perm, void *out);

/// gpipe_rt_cpu_slice.
gpipe_rt_status gpipe_rt_cuda_slice(gpipe_rt_dtype dtype, const void *in,
                                    const int64_t *shape, int32_t rank,
                                    const int64_t *offsets,
                                    const int64_t *sizes,
                                    const int64_t *strides, void *out);

/// gpipe_rt_cpu_split; `outs` is a host array of device pointers.
gpipe_rt_status gpipe_rt_cuda_split(gpipe_rt_dtype dtype, const void *in,
                                    const int64_t *shape, int32_t rank,
                                    int64_t axis, const int64_t *sizes,
                                    int32_t numOutputs, void *const *outs);

/// gpipe_rt_cpu_concat; `inputs` is a host array of device pointers and
/// `shapes` a host array of host shapes.
gpipe_rt_status gpipe_rt_cuda_concat(gpipe_rt_dtype dtype, int32_t numInputs,
                                     const void *const *inputs,
                                     const int64_t *const *shapes,
                                     int32_t rank, int64_t axis, void *out);

/// gpipe_rt_cpu_copy (overlapping buffers are allowed, as with memmove).
gpipe_rt_status gpipe_rt_cuda_copy(gpipe_rt_dtype dtype, const void *in,
                                   void *out, int64_t count);

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// gpipe_rt_cpu_cross_entropy_f32; `*loss` is device memory. Labels out of
/// range are reported by gpipe_rt_cuda_check. The mean over rows is a fixed
/// tree of double partial sums.
gpipe_rt_status gpipe_rt_cuda_cross_entropy_f32(const float *logits,
                                                const int64_t *logitsShape,
                                                int32_t logitsRank,
                                                gpipe_rt_dtype labelType,
                                                const void *labels,
                                                float *loss);

/// gpipe_rt_cpu_mse_f32; `*loss` is device memory.
gpipe_rt_status gpipe_rt_cuda_mse_f32(const float *input, const float *target,
                                      int64_t count, float *loss);

//===----------------------------------------------------------------------===//
// Backward (gradient) kernels
//===----------------------------------------------------------------------===//

/// gpipe_rt_cpu_reduce_sum_f32. Each output element adds its inputs in
/// increasing index order in double, one thread per output element, which
/// gives the CPU's bits; only when there are fewer than 1024 outputs of
/// more than 16384 inputs each does a block of 256 threads add each
/// output's inputs in a fixed tree instead (within 1e-5 of the CPU).
gpipe_rt_status gpipe_rt_cuda_reduce_sum_f32(const float *in,
                                             const int64_t *shape, int32_t rank,
                                             const int64_t *axes,
                                             int32_t numAxes, float *out);

/// gpipe_rt_cpu_insert_slice.
gpipe_rt_status gpipe_rt_cuda_insert_slice(
    gpipe_rt_dtype dtype, const void *source, const int64_t *sourceShape,
    const void *dest, const int64_t *destShape, int32_t rank,
    const int64_t *offsets, const int64_t *strides, void *out);

/// gpipe_rt_cpu_gather_grad_f32. One thread per (outer, inner) column walks
/// the indices in order and adds into a double scratch buffer, so rows read
/// twice sum in the CPU's order (the same bits). Out-of-range indices are
/// reported by gpipe_rt_cuda_check.
gpipe_rt_status
gpipe_rt_cuda_gather_grad_f32(gpipe_rt_dtype indexType, const void *indices,
                              const int64_t *indicesShape, int32_t indicesRank,
                              const float *grad, const int64_t *gradShape,
                              int32_t gradRank, int64_t axis, float *out,
                              const int64_t *outShape, int32_t outRank);

/// gpipe_rt_cpu_softmax_grad_f32 (one thread per row, the CPU's order).
gpipe_rt_status gpipe_rt_cuda_softmax_grad_f32(const float *output,
                                               const float *grad,
                                               const int64_t *shape,
                                               int32_t rank, int64_t axis,
                                               float *out);

/// gpipe_rt_cpu_layer_norm_grad_f32. `scaleGrad` and `biasGrad` add the
/// rows in order, one thread per normalized element.
gpipe_rt_status gpipe_rt_cuda_layer_norm_grad_f32(
    const float *in, const int64_t *shape, int32_t rank, int64_t axis,
    const float *scale, const float *grad, float epsilon, float *inputGrad,
    float *scaleGrad, float *biasGrad);

/// gpipe_rt_cpu_gelu_grad_f32 (double math; CUDA's erf and exp).
gpipe_rt_status gpipe_rt_cuda_gelu_grad_f32(const float *in, const float *grad,
                                            float *out, int64_t count);

/// gpipe_rt_cpu_cross_entropy_grad_f32; `grad` is a host scalar. Labels out
/// of range are reported by gpipe_rt_cuda_check.
gpipe_rt_status gpipe_rt_cuda_cross_entropy_grad_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, float grad, float *out);

/// gpipe_rt_cpu_cross_entropy_grad_at_f32: `grad` is one float in device
/// memory, read by the kernel.
gpipe_rt_status gpipe_rt_cuda_cross_entropy_grad_at_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, const float *grad,
    float *out);

/// gpipe_rt_cpu_fill_f32 on device memory.
gpipe_rt_status gpipe_rt_cuda_fill_f32(float *out, int64_t count, float value);

//===----------------------------------------------------------------------===//
// Optimizer updates
//
// The updates of the training engine's optimizers (lib/Train/Optimizer.cpp),
// per element in f32 with every operation rounded on its own (no fused
// multiply-add), in the CPU's order: the results are the CPU's bits.
//===----------------------------------------------------------------------===//

/// gpipe_rt_cpu_sgd_update_f32: param[i] = param[i] - lr * grad[i].
gpipe_rt_status gpipe_rt_cuda_sgd_update_f32(float *param, const float *grad,
                                             int64_t count, float lr);

/// SGD with momentum and weight decay (PyTorch semantics): g = grad +
/// weightDecay * param (when weightDecay != 0); buf = g at `step` 1, else
/// momentum * buf + g; param -= lr * buf. With momentum 0 `buf` may be null
/// and the update is param -= lr * g (plain SGD with weight decay).
gpipe_rt_status gpipe_rt_cuda_momentum_update_f32(float *param,
                                                  const float *grad,
                                                  float *buf, int64_t count,
                                                  float lr, float momentum,
                                                  float weightDecay,
                                                  int64_t step);

/// AdamW (decoupled weight decay, bias-corrected moments) at `step` (1 for
/// the first): the scalar factors are computed in double on the host as the
/// CPU engine does; `m` and `v` are the first and second moments.
gpipe_rt_status gpipe_rt_cuda_adamw_update_f32(float *param, const float *grad,
                                               float *m, float *v,
                                               int64_t count, double lr,
                                               double beta1, double beta2,
                                               double eps, double weightDecay,
                                               int64_t step);

/// gpipe_rt_cpu_accumulate_f32.
gpipe_rt_status gpipe_rt_cuda_accumulate_f32(float *acc, const float *grad,
                                             int64_t count, int32_t first);

//===----------------------------------------------------------------------===//
// Parameter initialization
//===----------------------------------------------------------------------===//

/// gpipe_rt_cpu_fill_init_f32: the same counter-based draws (zeros, ones and
/// uniform give the CPU's bits; normal agrees within an ulp, CUDA's log and
/// cos).
gpipe_rt_status gpipe_rt_cuda_fill_init_f32(gpipe_rt_init init, float *out,
                                            int64_t count, double scale,
                                            uint64_t seed, uint64_t stream);

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* GPIPE_RUNTIME_CUDAKERNELS_H */
