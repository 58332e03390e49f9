//===- CUDADevice.h - The CUDA device of the training engine ---*- C++ -*-===//
//
// Device.h's device for models compiled with --target cuda: arenas in
// cudaMalloc'ed memory of one GPU, each rank's kernels on its own compute
// stream, transfers between ranks on the same GPU as device-to-device copies
// ordered by events, transfers between processes through NCCL on a
// communication stream ordered by events, and the host waiting for a rank's
// GPU work only when the rank's step ends.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_CUDADEVICE_H
#define GPIPE_RUNTIME_CUDADEVICE_H

#include "gpipe/Runtime/Device.h"

namespace gpipe::rt {

/// The CUDA device on GPU `index`; fails with a clear message when there is
/// no usable GPU (no driver, no device) or `index` is past the last one.
Status makeCudaDevice(int index, std::shared_ptr<Device> &out);

/// Registers makeCudaDevice for "cuda" (Device.h's registry).
void registerCudaDevice();

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_CUDADEVICE_H
