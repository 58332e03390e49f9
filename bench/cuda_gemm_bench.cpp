//===- cuda_gemm_bench.cpp - cuBLAS GEMMs at model shapes -------*- C++ -*-===//
//
// Part of the GPU check (scripts/gpu-check.sh): times the CUDA kernel
// library's linear layer (one cuBLAS sgemm per call, gpipe_rt_cuda_linear_f32)
// at the GEMM shapes of a GPT block (width W, sequence T, micro-batch b:
// the QKV, attention-output, MLP-up and MLP-down projections, forward) and
// a large square GEMM whose rate is the ceiling measured in the same run,
// and prints TFLOP/s and the ratio to the ceiling for each. fp32, TF32 off
// (the library's default math), CUDA events around 20 timed calls after 3
// warm-up calls. Exits 2 with the reason when there is no usable GPU.
// Usage: cuda_gemm_bench [--width W] [--seq T] [--microbatch b]
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CUDAKernels.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Shape {
  const char *name;
  int64_t rows, in, out;
};

/// Seconds per linear call [rows, in] x [out, in]^T, or a negative value
/// after printing why.
double timeLinear(const Shape &s) {
  float *x = nullptr, *w = nullptr, *y = nullptr;
  size_t xBytes = size_t(s.rows * s.in) * 4, wBytes = size_t(s.out * s.in) * 4,
         yBytes = size_t(s.rows * s.out) * 4;
  if (cudaMalloc(&x, xBytes) != cudaSuccess ||
      cudaMalloc(&w, wBytes) != cudaSuccess ||
      cudaMalloc(&y, yBytes) != cudaSuccess) {
    std::fprintf(stderr, "cuda_gemm_bench: cannot allocate %s\n", s.name);
    return -1;
  }
  cudaMemset(x, 0, xBytes);
  cudaMemset(w, 0, wBytes);
  int64_t xShape[2] = {s.rows, s.in}, wShape[2] = {s.out, s.in},
          yShape[2] = {s.rows, s.out};
  auto call = [&] {
    return gpipe_rt_cuda_linear_f32(x, xShape, 2, w, wShape, nullptr, 1, y,
                                    yShape, 2);
  };
  for (int i = 0; i < 3; ++i)
    if (call() != GPIPE_RT_SUCCESS) {
      std::fprintf(stderr, "cuda_gemm_bench: %s: %s\n", s.name,
                   gpipe_rt_cuda_last_error());
      return -1;
    }
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaStream_t stream = static_cast<cudaStream_t>(gpipe_rt_cuda_get_stream());
  cudaEventRecord(start, stream);
  const int calls = 20;
  for (int i = 0; i < calls; ++i)
    call();
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(x);
  cudaFree(w);
  cudaFree(y);
  return double(ms) * 1e-3 / calls;
}

} // namespace

int main(int argc, char **argv) {
  int64_t width = 2048, seq = 1024, micro = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--width")
      width = value;
    else if (flag == "--seq")
      seq = value;
    else if (flag == "--microbatch")
      micro = value;
  }
  int32_t devices = 0;
  if (gpipe_rt_cuda_device_count(&devices) != GPIPE_RT_SUCCESS || devices < 1) {
    std::printf("cuda_gemm_bench: no usable GPU: %s\n",
                devices < 1 && *gpipe_rt_cuda_last_error()
                    ? gpipe_rt_cuda_last_error()
                    : "no device");
    return 2;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int64_t rows = seq * micro;
  std::vector<Shape> shapes = {
      {"ceiling 8192^3", 8192, 8192, 8192}, {"qkv", rows, width, 3 * width},
      {"attn out", rows, width, width},     {"mlp up", rows, width, 4 * width},
      {"mlp down", rows, 4 * width, width},
  };
  std::printf("cuBLAS fp32 GEMMs on %s (GPT block: width %lld, %lld tokens "
              "per micro-batch)\n",
              prop.name, (long long)width, (long long)rows);
  std::printf("  %-16s %8s %8s %8s %10s %8s\n", "gemm", "M", "K", "N",
              "TFLOP/s", "ceiling");
  double ceiling = 0;
  bool ok = true;
  for (const Shape &s : shapes) {
    double seconds = timeLinear(s);
    if (seconds <= 0) {
      ok = false;
      continue;
    }
    double tflops =
        2.0 * double(s.rows) * double(s.in) * double(s.out) / seconds * 1e-12;
    if (ceiling == 0)
      ceiling = tflops;
    std::printf("  %-16s %8lld %8lld %8lld %10.1f %8.2f\n", s.name,
                (long long)s.rows, (long long)s.in, (long long)s.out, tflops,
                tflops / ceiling);
  }
  return ok ? 0 : 1;
}
