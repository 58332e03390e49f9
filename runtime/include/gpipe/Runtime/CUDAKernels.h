/*===- CUDAKernels.h - CUDA kernels for the nn ops ----------------*- C -*-===*\
|*                                                                            *|
|* The CUDA backend's kernels: one `gpipe_rt_cuda_<name>` entry point for    *|
|* every entry of Kernels.def, device-only ones included, with the parameter  *|
|* list the .def gives and the semantics, validation and messages of the CPU  *|
|* kernels (the .def notes where CUDA differs). Tensor data pointers are      *|
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

#include "gpipe/Runtime/Kernels.h"

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

/// The kernels of Kernels.def, the device-only ones included.
#define GPIPE_RT_ARG(role, type, name) type name
#define GPIPE_RT_KERNEL(name, ret, args) ret gpipe_rt_cuda_##name args;
#define GPIPE_RT_DEVICE_KERNEL(name, ret, args) ret gpipe_rt_cuda_##name args;
#include "gpipe/Runtime/Kernels.def"

#ifdef __cplusplus
} // extern "C"
#endif

#endif /* GPIPE_RUNTIME_CUDAKERNELS_H */
