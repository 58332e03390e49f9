//===- CUDAKernelsTest.cpp - CUDA kernels against the CPU ones -*- C++ -*-===//
//
// Every CUDA kernel on random inputs (small shapes, broadcasting and strided
// cases) against its CPU counterpart: bitwise where the operation is exact
// or rounds the same way (data movement, casts, add/sub/mul/div, ordered
// double sums, optimizer updates), within a relative 1e-5 for GEMMs and
// reductions whose order differs, within a few ulp for CUDA's transcendental
// functions. Each CUDA kernel runs twice and must give the same bits both
// times. Data-dependent errors (indices, labels) must come back from
// gpipe_rt_cuda_check with the CPU's message.
//
// Tests that need a GPU skip with the CUDA error when none is usable;
// argument validation, which never touches the device, and the device
// query itself run everywhere.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/CUDAKernels.h"
#include "gpipe/Runtime/Optimizer.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace gpipe::rt::test;

//===----------------------------------------------------------------------===//
// Device access
//===----------------------------------------------------------------------===//

/// Why no GPU is usable ("" when one is).
const std::string &cudaUnavailable() {
  static const std::string reason = [] {
    int32_t count = 0;
    if (gpipe_rt_cuda_device_count(&count) != GPIPE_RT_SUCCESS)
      return std::string(gpipe_rt_cuda_last_error());
    if (count == 0)
      return std::string("the CUDA runtime reports 0 devices");
    cudaError_t error = cudaFree(nullptr);
    if (error != cudaSuccess)
      return std::string(cudaGetErrorString(error));
    return std::string();
  }();
  return reason;
}

#define REQUIRE_CUDA()                                                         \
  do {                                                                         \
    if (!cudaUnavailable().empty())                                            \
      GTEST_SKIP() << "no CUDA device: " << cudaUnavailable();                 \
  } while (false)

/// Device memory holding a copy of a host vector (or uninitialized bytes).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes(bytes) {
    if (bytes) {
      EXPECT_EQ(cudaMalloc(&ptr, bytes), cudaSuccess);
      // A pattern no kernel writes by accident; finished before the buffer
      // is used on any stream.
      EXPECT_EQ(cudaMemset(ptr, 0xA5, bytes), cudaSuccess);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
  }
  template <typename T> static DeviceBuffer of(const std::vector<T> &host) {
    DeviceBuffer buffer(host.size() * sizeof(T));
    if (buffer.bytes) {
      EXPECT_EQ(cudaMemcpy(buffer.ptr, host.data(), buffer.bytes,
                           cudaMemcpyHostToDevice),
                cudaSuccess);
    }
    return buffer;
  }
  DeviceBuffer(DeviceBuffer &&other) noexcept { swap(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    swap(other);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr)
      cudaFree(ptr);
  }

  template <typename T = void> T *get() const { return static_cast<T *>(ptr); }

  /// The contents, after the queued work finished without a device error.
  template <typename T> std::vector<T> read() const {
    EXPECT_EQ(gpipe_rt_cuda_check(), GPIPE_RT_SUCCESS)
        << gpipe_rt_cuda_last_error();
    std::vector<T> host(bytes / sizeof(T));
    if (bytes) {
      EXPECT_EQ(cudaMemcpy(host.data(), ptr, bytes, cudaMemcpyDeviceToHost),
                cudaSuccess);
    }
    return host;
  }

private:
  void swap(DeviceBuffer &other) {
    std::swap(ptr, other.ptr);
    std::swap(bytes, other.bytes);
  }
  void *ptr = nullptr;
  size_t bytes = 0;
};

/// Runs `launch` (which writes `count` elements of T to the pointer it is
/// given) twice into fresh buffers; both runs must succeed and agree bit for
/// bit. Returns the first run's result.
template <typename T>
std::vector<T> runTwice(size_t count,
                        const std::function<gpipe_rt_status(T *)> &launch) {
  std::vector<T> first;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer out(count * sizeof(T));
    EXPECT_EQ(launch(out.get<T>()), GPIPE_RT_SUCCESS)
        << gpipe_rt_cuda_last_error();
    std::vector<T> got = out.read<T>();
    if (run == 0) {
      first = got;
      continue;
    }
    if (count > 0) {
      EXPECT_EQ(std::memcmp(first.data(), got.data(), count * sizeof(T)), 0)
          << "two runs of the same CUDA kernel differ";
    }
  }
  return first;
}

//===----------------------------------------------------------------------===//
// Comparisons
//===----------------------------------------------------------------------===//

bool sameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

bool sameFloat(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

/// Bit-for-bit equality (any NaN equals any NaN: the CPU's and the GPU's
/// default NaNs differ in sign).
template <typename T>
void expectSame(const std::vector<T> &got, const std::vector<T> &want,
                const std::string &what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      ASSERT_TRUE(sameFloat(got[i], want[i]))
          << what << " element " << i << ": CUDA " << got[i] << ", CPU "
          << want[i];
    else
      ASSERT_EQ(+got[i], +want[i]) << what << " element " << i;
  }
}

/// |got - want| <= atol + rtol * |want|; NaNs and infinities must match.
void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double rtol, double atol, const std::string &what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(want[i]) || !std::isfinite(got[i])) {
      ASSERT_TRUE(sameFloat(got[i], want[i]))
          << what << " element " << i << ": CUDA " << got[i] << ", CPU "
          << want[i];
      continue;
    }
    ASSERT_LE(std::abs(double(got[i]) - double(want[i])),
              atol + rtol * std::abs(double(want[i])))
        << what << " element " << i << ": CUDA " << got[i] << ", CPU "
        << want[i];
  }
}

/// Relative 1e-5 of the largest magnitude of the result: for sums whose
/// order differs.
void expectCloseToScale(const std::vector<float> &got,
                        const std::vector<float> &want,
                        const std::string &what = "") {
  double scale = 0;
  for (float v : want)
    scale = std::max(scale, std::abs(double(v)));
  expectClose(got, want, 1e-5, 1e-5 * scale + 1e-7, what);
}

int64_t ulpDistance(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  int64_t la = ia < 0 ? int64_t(INT32_MIN) - ia : ia;
  int64_t lb = ib < 0 ? int64_t(INT32_MIN) - ib : ib;
  return std::abs(la - lb);
}

void expectUlps(const std::vector<float> &got, const std::vector<float> &want,
                int64_t maxUlps, const std::string &what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) || std::isnan(got[i])) {
      ASSERT_TRUE(sameFloat(got[i], want[i])) << what << " element " << i;
      continue;
    }
    ASSERT_LE(ulpDistance(got[i], want[i]), maxUlps)
        << what << " element " << i << ": CUDA " << got[i] << ", CPU "
        << want[i];
  }
}

Shape broadcastOf(const Shape &a, const Shape &b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    size_t lead = out.size() - i;
    int64_t da = lead <= a.size() ? a[a.size() - lead] : 1;
    int64_t db = lead <= b.size() ? b[b.size() - lead] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> randomIndices(int64_t n, int64_t bound, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(0, bound - 1);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t &x : v)
    x = dist(gen);
  return v;
}

std::vector<int32_t> narrow(const std::vector<int64_t> &v) {
  return std::vector<int32_t>(v.begin(), v.end());
}

std::vector<uint8_t> randomBytes(int64_t n, uint32_t seed, int values = 3) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (uint8_t &x : v)
    x = uint8_t(gen() % unsigned(values));
  return v;
}

const int64_t *dataOf(const Shape &s) { return s.empty() ? nullptr : s.data(); }

//===----------------------------------------------------------------------===//
// Device, stream and NCCL queries (no GPU needed)
//===----------------------------------------------------------------------===//

TEST(CUDARuntime, DeviceCountReportsWhyNot) {
  int32_t count = -1;
  gpipe_rt_status status = gpipe_rt_cuda_device_count(&count);
  if (status == GPIPE_RT_SUCCESS) {
    EXPECT_GE(count, 0);
  } else {
    EXPECT_EQ(count, 0);
    EXPECT_NE(std::string(gpipe_rt_cuda_last_error()), "");
  }
  EXPECT_EQ(gpipe_rt_cuda_device_count(nullptr), GPIPE_RT_INVALID_ARGUMENT);
}

TEST(CUDARuntime, NcclIsLinked) {
  int32_t version = 0;
  ASSERT_EQ(gpipe_rt_cuda_nccl_version(&version), GPIPE_RT_SUCCESS)
      << gpipe_rt_cuda_last_error();
  EXPECT_GT(version, 0);
}

TEST(CUDARuntime, StreamIsPerThread) {
  void *fake = reinterpret_cast<void *>(uintptr_t(0x1234));
  EXPECT_EQ(gpipe_rt_cuda_get_stream(), nullptr);
  EXPECT_EQ(gpipe_rt_cuda_set_stream(fake), GPIPE_RT_SUCCESS);
  EXPECT_EQ(gpipe_rt_cuda_get_stream(), fake);
  EXPECT_EQ(gpipe_rt_cuda_set_stream(nullptr), GPIPE_RT_SUCCESS);
  EXPECT_EQ(gpipe_rt_cuda_get_stream(), nullptr);
}

//===----------------------------------------------------------------------===//
// Argument validation: the CPU's statuses and messages (no GPU needed)
//===----------------------------------------------------------------------===//

/// Both calls must fail with the same status and message.
void expectSameFailure(gpipe_rt_status cpu, gpipe_rt_status cuda) {
  EXPECT_NE(cpu, GPIPE_RT_SUCCESS);
  EXPECT_EQ(cuda, cpu);
  EXPECT_EQ(std::string(gpipe_rt_cuda_last_error()),
            std::string(gpipe_rt_last_error()));
}

TEST(CUDAValidation, ElementwiseAndCasts) {
  Shape a{2, 3}, b{4}, out{2, 3};
  expectSameFailure(
      gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, nullptr, a.data(), 2, nullptr,
                              b.data(), 1, nullptr, out.data(), 2),
      gpipe_rt_cuda_binary_f32(GPIPE_RT_ADD, nullptr, a.data(), 2, nullptr,
                               b.data(), 1, nullptr, out.data(), 2));
  Shape c{3}, wrong{3, 3};
  expectSameFailure(
      gpipe_rt_cpu_binary_f32(GPIPE_RT_MUL, nullptr, a.data(), 2, nullptr,
                              c.data(), 1, nullptr, wrong.data(), 2),
      gpipe_rt_cuda_binary_f32(GPIPE_RT_MUL, nullptr, a.data(), 2, nullptr,
                               c.data(), 1, nullptr, wrong.data(), 2));
  expectSameFailure(
      gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, nullptr, a.data(), 2, nullptr,
                              c.data(), 1, nullptr, out.data(), 2),
      gpipe_rt_cuda_binary_f32(GPIPE_RT_ADD, nullptr, a.data(), 2, nullptr,
                               c.data(), 1, nullptr, out.data(), 2));
  expectSameFailure(
      gpipe_rt_cpu_unary_f32(gpipe_rt_unary_op(99), nullptr, nullptr, 0),
      gpipe_rt_cuda_unary_f32(gpipe_rt_unary_op(99), nullptr, nullptr, 0));
  expectSameFailure(
      gpipe_rt_cpu_unary_f32(GPIPE_RT_EXP, nullptr, nullptr, -1),
      gpipe_rt_cuda_unary_f32(GPIPE_RT_EXP, nullptr, nullptr, -1));
  expectSameFailure(
      gpipe_rt_cpu_cast(GPIPE_RT_F16, nullptr, GPIPE_RT_F32, nullptr, 0),
      gpipe_rt_cuda_cast(GPIPE_RT_F16, nullptr, GPIPE_RT_F32, nullptr, 0));
  expectSameFailure(
      gpipe_rt_cpu_equal(GPIPE_RT_F16, nullptr, a.data(), 2, nullptr, a.data(),
                         2, nullptr, a.data(), 2),
      gpipe_rt_cuda_equal(GPIPE_RT_F16, nullptr, a.data(), 2, nullptr, a.data(),
                          2, nullptr, a.data(), 2));
  expectSameFailure(gpipe_rt_cpu_not(nullptr, nullptr, 3),
                    gpipe_rt_cuda_not(nullptr, nullptr, 3));
  expectSameFailure(
      gpipe_rt_cpu_unary_f32(gpipe_rt_unary_op(GPIPE_RT_ROUND + 1), nullptr,
                             nullptr, 0),
      gpipe_rt_cuda_unary_f32(gpipe_rt_unary_op(GPIPE_RT_ROUND + 1), nullptr,
                              nullptr, 0));
  uint8_t byte = 0;
  float one = 1.0f;
  expectSameFailure(
      gpipe_rt_cpu_compare(gpipe_rt_compare_op(6), GPIPE_RT_F32, &one, nullptr,
                           0, &one, nullptr, 0, &byte, nullptr, 0),
      gpipe_rt_cuda_compare(gpipe_rt_compare_op(6), GPIPE_RT_F32, &one, nullptr,
                            0, &one, nullptr, 0, &byte, nullptr, 0));
  expectSameFailure(
      gpipe_rt_cpu_compare(GPIPE_RT_CMP_LT, GPIPE_RT_BF16, nullptr, a.data(), 2,
                           nullptr, a.data(), 2, nullptr, a.data(), 2),
      gpipe_rt_cuda_compare(GPIPE_RT_CMP_LT, GPIPE_RT_BF16, nullptr, a.data(),
                            2, nullptr, a.data(), 2, nullptr, a.data(), 2));
  expectSameFailure(
      gpipe_rt_cpu_compare(GPIPE_RT_CMP_GE, GPIPE_RT_I64, nullptr, a.data(), 2,
                           nullptr, b.data(), 1, nullptr, out.data(), 2),
      gpipe_rt_cuda_compare(GPIPE_RT_CMP_GE, GPIPE_RT_I64, nullptr, a.data(), 2,
                            nullptr, b.data(), 1, nullptr, out.data(), 2));
  expectSameFailure(
      gpipe_rt_cpu_logical(gpipe_rt_logical_op(3), &byte, nullptr, 0, &byte,
                           nullptr, 0, &byte, nullptr, 0),
      gpipe_rt_cuda_logical(gpipe_rt_logical_op(3), &byte, nullptr, 0, &byte,
                            nullptr, 0, &byte, nullptr, 0));
  expectSameFailure(
      gpipe_rt_cpu_logical(GPIPE_RT_AND, nullptr, a.data(), 2, nullptr,
                           c.data(), 1, nullptr, out.data(), 2),
      gpipe_rt_cuda_logical(GPIPE_RT_AND, nullptr, a.data(), 2, nullptr,
                            c.data(), 1, nullptr, out.data(), 2));
  expectSameFailure(
      gpipe_rt_cpu_cumsum(GPIPE_RT_F64, nullptr, a.data(), 2, 0, 0, 0, nullptr),
      gpipe_rt_cuda_cumsum(GPIPE_RT_F64, nullptr, a.data(), 2, 0, 0, 0,
                           nullptr));
  expectSameFailure(gpipe_rt_cpu_cumsum(gpipe_rt_dtype(42), nullptr, a.data(),
                                        2, 0, 0, 0, nullptr),
                    gpipe_rt_cuda_cumsum(gpipe_rt_dtype(42), nullptr, a.data(),
                                         2, 0, 0, 0, nullptr));
  expectSameFailure(
      gpipe_rt_cpu_cumsum(GPIPE_RT_F32, nullptr, a.data(), 2, 2, 0, 0, nullptr),
      gpipe_rt_cuda_cumsum(GPIPE_RT_F32, nullptr, a.data(), 2, 2, 0, 0,
                           nullptr));
  expectSameFailure(gpipe_rt_cpu_cumsum(GPIPE_RT_I64, nullptr, a.data(), 2, -1,
                                        1, 1, nullptr),
                    gpipe_rt_cuda_cumsum(GPIPE_RT_I64, nullptr, a.data(), 2, -1,
                                         1, 1, nullptr));
  expectSameFailure(
      gpipe_rt_cpu_cumsum(GPIPE_RT_F32, nullptr, a.data(), 2, 1, 0, 0, &one),
      gpipe_rt_cuda_cumsum(GPIPE_RT_F32, nullptr, a.data(), 2, 1, 0, 0, &one));
  expectSameFailure(
      gpipe_rt_cpu_cumsum(GPIPE_RT_F32, &one, a.data(), 2, 1, 1, 0, nullptr),
      gpipe_rt_cuda_cumsum(GPIPE_RT_F32, &one, a.data(), 2, 1, 1, 0, nullptr));
  expectSameFailure(gpipe_rt_cpu_broadcast(GPIPE_RT_F32, nullptr, a.data(), 2,
                                           nullptr, wrong.data(), 2),
                    gpipe_rt_cuda_broadcast(GPIPE_RT_F32, nullptr, a.data(), 2,
                                            nullptr, wrong.data(), 2));
  expectSameFailure(gpipe_rt_cpu_broadcast(gpipe_rt_dtype(42), nullptr,
                                           c.data(), 1, nullptr, out.data(), 2),
                    gpipe_rt_cuda_broadcast(gpipe_rt_dtype(42), nullptr,
                                            c.data(), 1, nullptr, out.data(),
                                            2));
  expectSameFailure(gpipe_rt_cpu_broadcast(GPIPE_RT_F32, nullptr, c.data(), 1,
                                           nullptr, out.data(), 2),
                    gpipe_rt_cuda_broadcast(GPIPE_RT_F32, nullptr, c.data(), 1,
                                            nullptr, out.data(), 2));
  expectSameFailure(gpipe_rt_cpu_clip_f32(nullptr, nullptr, 0, 1.0f, 0.0f),
                    gpipe_rt_cuda_clip_f32(nullptr, nullptr, 0, 1.0f, 0.0f));
  expectSameFailure(gpipe_rt_cpu_clip_f32(nullptr, nullptr, 4, 0.0f, 6.0f),
                    gpipe_rt_cuda_clip_f32(nullptr, nullptr, 4, 0.0f, 6.0f));
  expectSameFailure(
      gpipe_rt_cpu_clip_grad_f32(nullptr, nullptr, nullptr, 2, 0.0f, 6.0f),
      gpipe_rt_cuda_clip_grad_f32(nullptr, nullptr, nullptr, 2, 0.0f, 6.0f));
  Shape big{int64_t(1) << 40, int64_t(1) << 40};
  expectSameFailure(gpipe_rt_cpu_where(nullptr, big.data(), 2, GPIPE_RT_F32,
                                       nullptr, a.data(), 2, nullptr, a.data(),
                                       2, nullptr, a.data(), 2),
                    gpipe_rt_cuda_where(nullptr, big.data(), 2, GPIPE_RT_F32,
                                        nullptr, a.data(), 2, nullptr, a.data(),
                                        2, nullptr, a.data(), 2));
}

TEST(CUDAValidation, Contractions) {
  Shape a{2, 3}, b{4, 5}, out{2, 5};
  expectSameFailure(
      gpipe_rt_cpu_matmul_f32(nullptr, a.data(), 2, nullptr, b.data(), 2, 0, 0,
                              nullptr, out.data(), 2),
      gpipe_rt_cuda_matmul_f32(nullptr, a.data(), 2, nullptr, b.data(), 2, 0, 0,
                               nullptr, out.data(), 2));
  Shape b2{3, 5}, out2{3, 5};
  expectSameFailure(gpipe_rt_cpu_gemm_f32(nullptr, a.data(), nullptr, b2.data(),
                                          nullptr, nullptr, 0, 1.0f, 0.0f, 0, 0,
                                          nullptr, out2.data()),
                    gpipe_rt_cuda_gemm_f32(nullptr, a.data(), nullptr,
                                           b2.data(), nullptr, nullptr, 0, 1.0f,
                                           0.0f, 0, 0, nullptr, out2.data()));
  Shape in{2, 4}, w{3, 5}, res{2, 5};
  expectSameFailure(
      gpipe_rt_cpu_linear_f32(nullptr, in.data(), 2, nullptr, w.data(), nullptr,
                              0, nullptr, res.data(), 2),
      gpipe_rt_cuda_linear_f32(nullptr, in.data(), 2, nullptr, w.data(),
                               nullptr, 0, nullptr, res.data(), 2));
}

TEST(CUDAValidation, NormalizationAndMovement) {
  Shape s{2, 3, 4};
  expectSameFailure(
      gpipe_rt_cpu_softmax_f32(nullptr, s.data(), 3, 3, nullptr),
      gpipe_rt_cuda_softmax_f32(nullptr, s.data(), 3, 3, nullptr));
  expectSameFailure(
      gpipe_rt_cpu_layer_norm_f32(nullptr, s.data(), 3, 1, nullptr, nullptr,
                                  -1.0f, nullptr, nullptr, nullptr),
      gpipe_rt_cuda_layer_norm_f32(nullptr, s.data(), 3, 1, nullptr, nullptr,
                                   -1.0f, nullptr, nullptr, nullptr));
  Shape perm{0, 0, 1};
  expectSameFailure(gpipe_rt_cpu_transpose(GPIPE_RT_F32, nullptr, s.data(), 3,
                                           perm.data(), nullptr),
                    gpipe_rt_cuda_transpose(GPIPE_RT_F32, nullptr, s.data(), 3,
                                            perm.data(), nullptr));
  Shape off{0, 2, 0}, sizes{1, 2, 1}, strides{1, 1, 1};
  expectSameFailure(
      gpipe_rt_cpu_slice(GPIPE_RT_F32, nullptr, s.data(), 3, off.data(),
                         sizes.data(), strides.data(), nullptr),
      gpipe_rt_cuda_slice(GPIPE_RT_F32, nullptr, s.data(), 3, off.data(),
                          sizes.data(), strides.data(), nullptr));
  Shape parts{1, 1};
  void *outs[2] = {nullptr, nullptr};
  expectSameFailure(gpipe_rt_cpu_split(GPIPE_RT_F32, nullptr, s.data(), 3, 1,
                                       parts.data(), 2, outs),
                    gpipe_rt_cuda_split(GPIPE_RT_F32, nullptr, s.data(), 3, 1,
                                        parts.data(), 2, outs));
  Shape other{2, 5, 5};
  const int64_t *shapes[2] = {s.data(), other.data()};
  const void *inputs[2] = {nullptr, nullptr};
  expectSameFailure(
      gpipe_rt_cpu_concat(GPIPE_RT_F32, 2, inputs, shapes, 3, 1, nullptr),
      gpipe_rt_cuda_concat(GPIPE_RT_F32, 2, inputs, shapes, 3, 1, nullptr));
  expectSameFailure(
      gpipe_rt_cpu_copy(gpipe_rt_dtype(42), nullptr, nullptr, 1),
      gpipe_rt_cuda_copy(gpipe_rt_dtype(42), nullptr, nullptr, 1));
  Shape idx{3};
  expectSameFailure(
      gpipe_rt_cpu_gather(GPIPE_RT_F32, nullptr, s.data(), 3, GPIPE_RT_F32,
                          nullptr, idx.data(), 1, 0, nullptr),
      gpipe_rt_cuda_gather(GPIPE_RT_F32, nullptr, s.data(), 3, GPIPE_RT_F32,
                           nullptr, idx.data(), 1, 0, nullptr));
  Shape dest{2, 2, 4}, at{0, 0, 0}, step{1, 1, 1};
  expectSameFailure(gpipe_rt_cpu_insert_slice(GPIPE_RT_F32, nullptr, s.data(),
                                              nullptr, dest.data(), 3,
                                              at.data(), step.data(), nullptr),
                    gpipe_rt_cuda_insert_slice(
                        GPIPE_RT_F32, nullptr, s.data(), nullptr, dest.data(),
                        3, at.data(), step.data(), nullptr));
}

TEST(CUDAValidation, LossesAndBackward) {
  Shape logits{4, 5};
  expectSameFailure(
      gpipe_rt_cpu_cross_entropy_f32(nullptr, logits.data(), 2, GPIPE_RT_I64,
                                     nullptr, nullptr),
      gpipe_rt_cuda_cross_entropy_f32(nullptr, logits.data(), 2, GPIPE_RT_I64,
                                      nullptr, nullptr));
  expectSameFailure(
      gpipe_rt_cpu_cross_entropy_grad_f32(nullptr, logits.data(), 0,
                                          GPIPE_RT_I64, nullptr, 1.0f, nullptr),
      gpipe_rt_cuda_cross_entropy_grad_f32(
          nullptr, logits.data(), 0, GPIPE_RT_I64, nullptr, 1.0f, nullptr));
  expectSameFailure(gpipe_rt_cpu_mse_f32(nullptr, nullptr, 0, nullptr),
                    gpipe_rt_cuda_mse_f32(nullptr, nullptr, 0, nullptr));
  Shape s{2, 3, 4}, axes{1, 0};
  expectSameFailure(gpipe_rt_cpu_reduce_sum_f32(nullptr, s.data(), 3,
                                                axes.data(), 2, nullptr),
                    gpipe_rt_cuda_reduce_sum_f32(nullptr, s.data(), 3,
                                                 axes.data(), 2, nullptr));
  Shape idx{3}, grad{2, 4}, out{5, 4};
  expectSameFailure(gpipe_rt_cpu_gather_grad_f32(
                        GPIPE_RT_I64, nullptr, idx.data(), 1, nullptr,
                        grad.data(), 2, 0, nullptr, out.data(), 2),
                    gpipe_rt_cuda_gather_grad_f32(
                        GPIPE_RT_I64, nullptr, idx.data(), 1, nullptr,
                        grad.data(), 2, 0, nullptr, out.data(), 2));
  expectSameFailure(
      gpipe_rt_cpu_softmax_grad_f32(nullptr, nullptr, s.data(), 3, -1, nullptr),
      gpipe_rt_cuda_softmax_grad_f32(nullptr, nullptr, s.data(), 3, -1,
                                     nullptr));
  expectSameFailure(gpipe_rt_cpu_layer_norm_grad_f32(nullptr, s.data(), 3, 4,
                                                     nullptr, nullptr, 1e-5f,
                                                     nullptr, nullptr, nullptr),
                    gpipe_rt_cuda_layer_norm_grad_f32(
                        nullptr, s.data(), 3, 4, nullptr, nullptr, 1e-5f,
                        nullptr, nullptr, nullptr));
  expectSameFailure(gpipe_rt_cpu_gelu_grad_f32(nullptr, nullptr, nullptr, 2),
                    gpipe_rt_cuda_gelu_grad_f32(nullptr, nullptr, nullptr, 2));
  expectSameFailure(gpipe_rt_cpu_sgd_update_f32(nullptr, nullptr, 2, 0.1f),
                    gpipe_rt_cuda_sgd_update_f32(nullptr, nullptr, 2, 0.1f));
  expectSameFailure(gpipe_rt_cpu_accumulate_f32(nullptr, nullptr, -2, 0),
                    gpipe_rt_cuda_accumulate_f32(nullptr, nullptr, -2, 0));
  expectSameFailure(
      gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, nullptr, 0, -1.0, 1, 2),
      gpipe_rt_cuda_fill_init_f32(GPIPE_RT_INIT_NORMAL, nullptr, 0, -1.0, 1,
                                  2));
  expectSameFailure(
      gpipe_rt_cpu_fill_init_f32(gpipe_rt_init(9), nullptr, 0, 1.0, 1, 2),
      gpipe_rt_cuda_fill_init_f32(gpipe_rt_init(9), nullptr, 0, 1.0, 1, 2));
  EXPECT_EQ(gpipe_rt_cuda_momentum_update_f32(nullptr, nullptr, nullptr, 0,
                                              0.1f, 0.9f, 0.0f, 0),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(gpipe_rt_cuda_adamw_update_f32(nullptr, nullptr, nullptr, nullptr,
                                           4, 1e-3, 0.9, 0.999, 1e-8, 0.0, 1),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpipe_rt_cuda_last_error()), "");
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

const std::vector<std::pair<Shape, Shape>> kBroadcastCases = {
    {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {4}},
    {{2, 1, 4}, {3, 1}},    {{}, {5}},
    {{1}, {2, 3}},          {{3, 1, 5}, {1, 4, 1}},
    {{6, 70}, {6, 1}},      {{2, 0, 3}, {1, 3}},
};

TEST(CUDAKernels, Binary) {
  REQUIRE_CUDA();
  uint32_t seed = 1;
  for (auto [ls, rs] : kBroadcastCases) {
    Shape os = broadcastOf(ls, rs);
    for (int op = GPIPE_RT_ADD; op <= GPIPE_RT_FMOD; ++op) {
      bool pow = op == GPIPE_RT_POW;
      std::vector<float> lhs =
          randomFloats(numel(ls), seed++, pow ? 0.1f : -2, pow ? 3.0f : 2);
      std::vector<float> rhs = randomFloats(numel(rs), seed++);
      std::vector<float> want(size_t(numel(os)));
      ASSERT_EQ(gpipe_rt_cpu_binary_f32(gpipe_rt_binary_op(op), lhs.data(),
                                        dataOf(ls), rankOf(ls), rhs.data(),
                                        dataOf(rs), rankOf(rs), want.data(),
                                        dataOf(os), rankOf(os)),
                GPIPE_RT_SUCCESS);
      DeviceBuffer dl = DeviceBuffer::of(lhs), dr = DeviceBuffer::of(rhs);
      std::vector<float> got = runTwice<float>(want.size(), [&](float *out) {
        return gpipe_rt_cuda_binary_f32(gpipe_rt_binary_op(op), dl.get<float>(),
                                        dataOf(ls), rankOf(ls), dr.get<float>(),
                                        dataOf(rs), rankOf(rs), out, dataOf(os),
                                        rankOf(os));
      });
      std::string what = "op " + std::to_string(op);
      if (pow)
        expectUlps(got, want, 4, what);
      else
        expectSame(got, want, what);
    }
  }
}

TEST(CUDAKernels, BinaryInPlace) {
  REQUIRE_CUDA();
  Shape s{3, 5};
  std::vector<float> a = randomFloats(15, 7), b = randomFloats(15, 8);
  std::vector<float> want(15);
  gpipe_rt_cpu_binary_f32(GPIPE_RT_SUB, a.data(), s.data(), 2, b.data(),
                          s.data(), 2, want.data(), s.data(), 2);
  DeviceBuffer da = DeviceBuffer::of(a), db = DeviceBuffer::of(b);
  ASSERT_EQ(gpipe_rt_cuda_binary_f32(GPIPE_RT_SUB, da.get<float>(), s.data(), 2,
                                     db.get<float>(), s.data(), 2,
                                     da.get<float>(), s.data(), 2),
            GPIPE_RT_SUCCESS);
  expectSame(da.read<float>(), want);
}

TEST(CUDAKernels, Unary) {
  REQUIRE_CUDA();
  std::vector<float> in = randomFloats(1000, 11, -4.0f, 4.0f);
  in[0] = 0.0f;
  in[1] = -0.0f;
  in[2] = INFINITY;
  in[3] = -INFINITY;
  in[4] = NAN;
  in[5] = 1e-30f;
  in[6] = 88.0f;
  in[7] = -100.0f;
  DeviceBuffer din = DeviceBuffer::of(in);
  for (int op = GPIPE_RT_NEG; op <= GPIPE_RT_COS; ++op) {
    std::vector<float> want(in.size());
    ASSERT_EQ(gpipe_rt_cpu_unary_f32(gpipe_rt_unary_op(op), in.data(),
                                     want.data(), int64_t(in.size())),
              GPIPE_RT_SUCCESS);
    std::vector<float> got = runTwice<float>(in.size(), [&](float *out) {
      return gpipe_rt_cuda_unary_f32(gpipe_rt_unary_op(op), din.get<float>(),
                                     out, int64_t(in.size()));
    });
    std::string what = "op " + std::to_string(op);
    bool exact = op == GPIPE_RT_NEG || op == GPIPE_RT_RECIPROCAL ||
                 op == GPIPE_RT_SQRT || op == GPIPE_RT_RELU;
    if (exact)
      expectSame(got, want, what);
    else
      expectClose(got, want, 1e-5, 2e-6, what);
  }
}

TEST(CUDAKernels, Equal) {
  REQUIRE_CUDA();
  uint32_t seed = 20;
  for (auto [ls, rs] : kBroadcastCases) {
    Shape os = broadcastOf(ls, rs);
    size_t n = size_t(numel(os));
    auto check = [&](gpipe_rt_dtype dtype, const void *lhs, const void *rhs,
                     size_t elem) {
      std::vector<uint8_t> want(n);
      ASSERT_EQ(gpipe_rt_cpu_equal(dtype, lhs, dataOf(ls), rankOf(ls), rhs,
                                   dataOf(rs), rankOf(rs), want.data(),
                                   dataOf(os), rankOf(os)),
                GPIPE_RT_SUCCESS);
      DeviceBuffer dl(size_t(numel(ls)) * elem), dr(size_t(numel(rs)) * elem);
      cudaMemcpy(dl.get(), lhs, size_t(numel(ls)) * elem,
                 cudaMemcpyHostToDevice);
      cudaMemcpy(dr.get(), rhs, size_t(numel(rs)) * elem,
                 cudaMemcpyHostToDevice);
      std::vector<uint8_t> got = runTwice<uint8_t>(n, [&](uint8_t *out) {
        return gpipe_rt_cuda_equal(dtype, dl.get(), dataOf(ls), rankOf(ls),
                                   dr.get(), dataOf(rs), rankOf(rs), out,
                                   dataOf(os), rankOf(os));
      });
      expectSame(got, want, gpipe_rt_dtype_name(dtype));
    };
    std::vector<int64_t> li = randomIndices(numel(ls), 3, seed++);
    std::vector<int64_t> ri = randomIndices(numel(rs), 3, seed++);
    std::vector<float> lf(li.begin(), li.end()), rf(ri.begin(), ri.end());
    std::vector<double> ld(li.begin(), li.end()), rd(ri.begin(), ri.end());
    std::vector<int32_t> l32 = narrow(li), r32 = narrow(ri);
    std::vector<uint8_t> lb = randomBytes(numel(ls), seed++),
                         rb = randomBytes(numel(rs), seed++);
    check(GPIPE_RT_F32, lf.data(), rf.data(), 4);
    check(GPIPE_RT_F64, ld.data(), rd.data(), 8);
    check(GPIPE_RT_I32, l32.data(), r32.data(), 4);
    check(GPIPE_RT_I64, li.data(), ri.data(), 8);
    check(GPIPE_RT_BOOL, lb.data(), rb.data(), 1);
  }
}

/// Copies `bytes` host bytes into a new device buffer.
DeviceBuffer deviceCopy(const void *host, size_t bytes) {
  DeviceBuffer buffer(bytes);
  if (bytes) {
    EXPECT_EQ(cudaMemcpy(buffer.get(), host, bytes, cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  return buffer;
}

TEST(CUDAKernels, Compare) {
  REQUIRE_CUDA();
  uint32_t seed = 120;
  for (auto [ls, rs] : kBroadcastCases) {
    Shape os = broadcastOf(ls, rs);
    size_t n = size_t(numel(os));
    auto check = [&](gpipe_rt_dtype dtype, const void *lhs, const void *rhs,
                     size_t elem) {
      DeviceBuffer dl = deviceCopy(lhs, size_t(numel(ls)) * elem);
      DeviceBuffer dr = deviceCopy(rhs, size_t(numel(rs)) * elem);
      for (int op = GPIPE_RT_CMP_EQ; op <= GPIPE_RT_CMP_GE; ++op) {
        std::vector<uint8_t> want(n);
        ASSERT_EQ(gpipe_rt_cpu_compare(gpipe_rt_compare_op(op), dtype, lhs,
                                       dataOf(ls), rankOf(ls), rhs, dataOf(rs),
                                       rankOf(rs), want.data(), dataOf(os),
                                       rankOf(os)),
                  GPIPE_RT_SUCCESS);
        std::vector<uint8_t> got = runTwice<uint8_t>(n, [&](uint8_t *out) {
          return gpipe_rt_cuda_compare(
              gpipe_rt_compare_op(op), dtype, dl.get(), dataOf(ls), rankOf(ls),
              dr.get(), dataOf(rs), rankOf(rs), out, dataOf(os), rankOf(os));
        });
        expectSame(got, want,
                   std::string(gpipe_rt_dtype_name(dtype)) + " op " +
                       std::to_string(op));
      }
    };
    // Three values, so that every predicate sees ties; NaNs among the
    // floats.
    std::vector<int64_t> li = randomIndices(numel(ls), 3, seed++);
    std::vector<int64_t> ri = randomIndices(numel(rs), 3, seed++);
    std::vector<float> lf(li.begin(), li.end()), rf(ri.begin(), ri.end());
    for (size_t i = 0; i < lf.size(); i += 5)
      lf[i] = NAN;
    for (size_t i = 2; i < rf.size(); i += 7)
      rf[i] = NAN;
    std::vector<double> ld(lf.begin(), lf.end()), rd(rf.begin(), rf.end());
    std::vector<int32_t> l32 = narrow(li), r32 = narrow(ri);
    std::vector<uint8_t> lb = randomBytes(numel(ls), seed++),
                         rb = randomBytes(numel(rs), seed++);
    check(GPIPE_RT_F32, lf.data(), rf.data(), 4);
    check(GPIPE_RT_F64, ld.data(), rd.data(), 8);
    check(GPIPE_RT_I32, l32.data(), r32.data(), 4);
    check(GPIPE_RT_I64, li.data(), ri.data(), 8);
    check(GPIPE_RT_BOOL, lb.data(), rb.data(), 1);
  }
}

TEST(CUDAKernels, Logical) {
  REQUIRE_CUDA();
  uint32_t seed = 140;
  for (auto [ls, rs] : kBroadcastCases) {
    Shape os = broadcastOf(ls, rs);
    size_t n = size_t(numel(os));
    std::vector<uint8_t> lhs = randomBytes(numel(ls), seed++),
                         rhs = randomBytes(numel(rs), seed++);
    DeviceBuffer dl = DeviceBuffer::of(lhs), dr = DeviceBuffer::of(rhs);
    for (int op = GPIPE_RT_AND; op <= GPIPE_RT_XOR; ++op) {
      std::vector<uint8_t> want(n);
      ASSERT_EQ(gpipe_rt_cpu_logical(gpipe_rt_logical_op(op), lhs.data(),
                                     dataOf(ls), rankOf(ls), rhs.data(),
                                     dataOf(rs), rankOf(rs), want.data(),
                                     dataOf(os), rankOf(os)),
                GPIPE_RT_SUCCESS);
      std::vector<uint8_t> got = runTwice<uint8_t>(n, [&](uint8_t *out) {
        return gpipe_rt_cuda_logical(gpipe_rt_logical_op(op), dl.get<uint8_t>(),
                                     dataOf(ls), rankOf(ls), dr.get<uint8_t>(),
                                     dataOf(rs), rankOf(rs), out, dataOf(os),
                                     rankOf(os));
      });
      expectSame(got, want, "op " + std::to_string(op));
    }
  }
}

TEST(CUDAKernels, Cumsum) {
  REQUIRE_CUDA();
  const std::vector<Shape> shapes = {{3, 4, 5}, {6, 70}, {2, 1, 300}, {0, 3}};
  uint32_t seed = 150;
  for (const Shape &s : shapes) {
    size_t n = size_t(numel(s));
    std::vector<float> xf = randomFloats(numel(s), seed++, -4.0f, 4.0f);
    for (size_t i = 0; i < xf.size(); i += 7)
      xf[i] = -0.0f;
    for (size_t i = 3; i < xf.size(); i += 11)
      xf[i] *= 1e7f;
    std::vector<int64_t> xi = randomIndices(numel(s), 1000, seed++);
    for (size_t i = 0; i < xi.size(); i += 5)
      xi[i] = std::numeric_limits<int64_t>::max() - int64_t(i);
    DeviceBuffer df = DeviceBuffer::of(xf), di = DeviceBuffer::of(xi);
    for (int64_t axis = 0; axis < rankOf(s); ++axis) {
      for (int flags = 0; flags < 4; ++flags) {
        int32_t exclusive = flags & 1, reverse = (flags >> 1) & 1;
        std::string what = ::testing::PrintToString(s) + " axis " +
                           std::to_string(axis) + " flags " +
                           std::to_string(flags);
        std::vector<float> wantF(n);
        ASSERT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, xf.data(), s.data(),
                                      rankOf(s), axis, exclusive, reverse,
                                      wantF.data()),
                  GPIPE_RT_SUCCESS);
        expectSame(runTwice<float>(n,
                                   [&](float *out) {
                                     return gpipe_rt_cuda_cumsum(
                                         GPIPE_RT_F32, df.get(), s.data(),
                                         rankOf(s), axis, exclusive, reverse,
                                         out);
                                   }),
                   wantF, "f32 " + what);
        std::vector<int64_t> wantI(n);
        ASSERT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_I64, xi.data(), s.data(),
                                      rankOf(s), axis, exclusive, reverse,
                                      wantI.data()),
                  GPIPE_RT_SUCCESS);
        expectSame(runTwice<int64_t>(n,
                                     [&](int64_t *out) {
                                       return gpipe_rt_cuda_cumsum(
                                           GPIPE_RT_I64, di.get(), s.data(),
                                           rankOf(s), axis, exclusive, reverse,
                                           out);
                                     }),
                   wantI, "i64 " + what);
      }
    }
  }
}

TEST(CUDAKernels, Broadcast) {
  REQUIRE_CUDA();
  struct Case {
    Shape in, out;
  };
  std::vector<Case> cases = {{{3}, {2, 3}},
                             {{2, 1}, {2, 3}},
                             {{}, {4, 2}},
                             {{1, 3, 1}, {2, 3, 4}},
                             {{6, 70}, {6, 70}},
                             {{1}, {0, 1}},
                             {{4, 1, 6}, {3, 4, 5, 6}}};
  uint32_t seed = 160;
  for (const Case &c : cases) {
    size_t n = size_t(numel(c.out));
    for (gpipe_rt_dtype dtype :
         {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_BOOL, GPIPE_RT_BF16}) {
      size_t elem = gpipe_rt_dtype_size(dtype);
      std::vector<uint8_t> in =
          randomBytes(numel(c.in) * int64_t(elem), seed++, 256);
      std::vector<uint8_t> want(n * elem);
      ASSERT_EQ(gpipe_rt_cpu_broadcast(dtype, in.data(), dataOf(c.in),
                                       rankOf(c.in), want.data(), dataOf(c.out),
                                       rankOf(c.out)),
                GPIPE_RT_SUCCESS);
      DeviceBuffer din = DeviceBuffer::of(in);
      std::vector<uint8_t> got = runTwice<uint8_t>(n * elem, [&](uint8_t *o) {
        return gpipe_rt_cuda_broadcast(dtype, din.get(), dataOf(c.in),
                                       rankOf(c.in), o, dataOf(c.out),
                                       rankOf(c.out));
      });
      expectSame(got, want, gpipe_rt_dtype_name(dtype));
    }
  }
}

TEST(CUDAKernels, ClipAndClipGrad) {
  REQUIRE_CUDA();
  std::vector<float> in = randomFloats(1000, 170, -8.0f, 8.0f);
  std::vector<float> grad = randomFloats(1000, 171);
  in[0] = NAN;
  in[1] = INFINITY;
  in[2] = -INFINITY;
  in[3] = 0.0f;
  in[4] = -0.0f;
  in[5] = 6.0f;
  DeviceBuffer din = DeviceBuffer::of(in), dg = DeviceBuffer::of(grad);
  const std::vector<std::pair<float, float>> bounds = {
      {0.0f, 6.0f}, {-1.5f, 2.25f}, {3.0f, 3.0f}};
  for (auto [lo, hi] : bounds) {
    std::string what = std::to_string(lo) + " " + std::to_string(hi);
    std::vector<float> want(in.size()), wantGrad(in.size());
    ASSERT_EQ(gpipe_rt_cpu_clip_f32(in.data(), want.data(), int64_t(in.size()),
                                    lo, hi),
              GPIPE_RT_SUCCESS);
    ASSERT_EQ(gpipe_rt_cpu_clip_grad_f32(in.data(), grad.data(),
                                         wantGrad.data(), int64_t(in.size()),
                                         lo, hi),
              GPIPE_RT_SUCCESS);
    expectSame(runTwice<float>(in.size(),
                               [&](float *out) {
                                 return gpipe_rt_cuda_clip_f32(
                                     din.get<float>(), out, int64_t(in.size()),
                                     lo, hi);
                               }),
               want, "clip " + what);
    expectSame(runTwice<float>(in.size(),
                               [&](float *out) {
                                 return gpipe_rt_cuda_clip_grad_f32(
                                     din.get<float>(), dg.get<float>(), out,
                                     int64_t(in.size()), lo, hi);
                               }),
               wantGrad, "clip_grad " + what);
  }
}

TEST(CUDAKernels, Where) {
  REQUIRE_CUDA();
  struct Case {
    Shape cond, x, y;
  };
  std::vector<Case> cases = {
      {{2, 1, 4}, {3, 1}, {2, 3, 4}}, {{}, {2, 3}, {3}}, {{5, 6}, {5, 6}, {}}};
  uint32_t seed = 40;
  for (const Case &c : cases) {
    Shape os = broadcastOf(broadcastOf(c.cond, c.x), c.y);
    size_t n = size_t(numel(os));
    std::vector<uint8_t> cond = randomBytes(numel(c.cond), seed++);
    DeviceBuffer dc = DeviceBuffer::of(cond);
    for (gpipe_rt_dtype dtype :
         {GPIPE_RT_F32, GPIPE_RT_I64, GPIPE_RT_BOOL, GPIPE_RT_BF16}) {
      size_t elem = gpipe_rt_dtype_size(dtype);
      std::vector<uint8_t> x =
          randomBytes(numel(c.x) * int64_t(elem), seed++, 256);
      std::vector<uint8_t> y =
          randomBytes(numel(c.y) * int64_t(elem), seed++, 256);
      std::vector<uint8_t> want(n * elem);
      ASSERT_EQ(gpipe_rt_cpu_where(cond.data(), dataOf(c.cond), rankOf(c.cond),
                                   dtype, x.data(), dataOf(c.x), rankOf(c.x),
                                   y.data(), dataOf(c.y), rankOf(c.y),
                                   want.data(), dataOf(os), rankOf(os)),
                GPIPE_RT_SUCCESS);
      DeviceBuffer dx = DeviceBuffer::of(x), dy = DeviceBuffer::of(y);
      std::vector<uint8_t> got = runTwice<uint8_t>(n * elem, [&](uint8_t *o) {
        return gpipe_rt_cuda_where(dc.get<uint8_t>(), dataOf(c.cond),
                                   rankOf(c.cond), dtype, dx.get(), dataOf(c.x),
                                   rankOf(c.x), dy.get(), dataOf(c.y),
                                   rankOf(c.y), o, dataOf(os), rankOf(os));
      });
      expectSame(got, want, gpipe_rt_dtype_name(dtype));
    }
  }
}

TEST(CUDAKernels, NotAndCast) {
  REQUIRE_CUDA();
  std::vector<uint8_t> bytes = randomBytes(300, 50, 256);
  std::vector<uint8_t> want(bytes.size());
  gpipe_rt_cpu_not(bytes.data(), want.data(), int64_t(bytes.size()));
  DeviceBuffer db = DeviceBuffer::of(bytes);
  expectSame(runTwice<uint8_t>(bytes.size(),
                               [&](uint8_t *out) {
                                 return gpipe_rt_cuda_not(
                                     db.get<uint8_t>(), out,
                                     int64_t(bytes.size()));
                               }),
             want);

  // Inputs of every type, with the corner cases of the conversions.
  std::vector<double> values = {
      0.0,  -0.0,     1.0,       -1.0,         2.7,           -2.7,    0.5,
      -0.5, 3e9,      -3e9,      1e20,         -1e20,         9.3e18,  -9.3e18,
      NAN,  INFINITY, -INFINITY, 2147483647.0, -2147483648.0, 65536.25};
  std::vector<float> f32(values.begin(), values.end());
  std::vector<int64_t> i64 = {0,
                              1,
                              -1,
                              7,
                              INT64_MAX,
                              INT64_MIN,
                              INT32_MAX,
                              INT32_MIN,
                              int64_t(1) << 40,
                              -(int64_t(1) << 53) - 1,
                              123456789,
                              -987654321,
                              2,
                              3,
                              4,
                              5,
                              6,
                              8,
                              9,
                              10};
  std::vector<int32_t> i32 = {
      0, 1, -1, INT32_MAX, INT32_MIN, 16777217, -16777217, 5,  6,  7,
      8, 9, 10, 11,        12,        13,       14,        15, 16, 17};
  std::vector<uint8_t> b1 = {0, 1, 2, 255, 0, 1, 0, 1, 9, 0,
                             0, 1, 2, 3,   0, 1, 0, 1, 0, 7};
  size_t n = values.size();
  struct Input {
    gpipe_rt_dtype type;
    const void *data;
  };
  std::vector<Input> inputs = {{GPIPE_RT_F32, f32.data()},
                               {GPIPE_RT_F64, values.data()},
                               {GPIPE_RT_I32, i32.data()},
                               {GPIPE_RT_I64, i64.data()},
                               {GPIPE_RT_BOOL, b1.data()}};
  for (const Input &in : inputs) {
    size_t inSize = gpipe_rt_dtype_size(in.type);
    DeviceBuffer din(n * inSize);
    cudaMemcpy(din.get(), in.data, n * inSize, cudaMemcpyHostToDevice);
    for (const Input &outType : inputs) {
      size_t outSize = gpipe_rt_dtype_size(outType.type);
      std::vector<uint8_t> want(n * outSize);
      ASSERT_EQ(gpipe_rt_cpu_cast(in.type, in.data, outType.type, want.data(),
                                  int64_t(n)),
                GPIPE_RT_SUCCESS);
      std::vector<uint8_t> got =
          runTwice<uint8_t>(n * outSize, [&](uint8_t *out) {
            return gpipe_rt_cuda_cast(in.type, din.get(), outType.type, out,
                                      int64_t(n));
          });
      std::string what = std::string(gpipe_rt_dtype_name(in.type)) + " to " +
                         gpipe_rt_dtype_name(outType.type);
      for (size_t i = 0; i < n; ++i) {
        if (outType.type == GPIPE_RT_F32) {
          float g, w;
          std::memcpy(&g, &got[i * 4], 4);
          std::memcpy(&w, &want[i * 4], 4);
          ASSERT_TRUE(sameFloat(g, w)) << what << " element " << i;
        } else if (outType.type == GPIPE_RT_F64) {
          double g, w;
          std::memcpy(&g, &got[i * 8], 8);
          std::memcpy(&w, &want[i * 8], 8);
          ASSERT_TRUE(sameFloat(g, w)) << what << " element " << i;
        } else {
          ASSERT_EQ(std::memcmp(&got[i * outSize], &want[i * outSize], outSize),
                    0)
              << what << " element " << i;
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

TEST(CUDAKernels, Matmul) {
  REQUIRE_CUDA();
  std::vector<std::pair<Shape, Shape>> cases = {{{3, 4}, {4, 5}},
                                                {{2, 3, 4}, {4, 5}},
                                                {{2, 1, 3, 4}, {3, 4, 5}},
                                                {{5, 3, 4}, {5, 4, 2}},
                                                {{1, 3, 4}, {2, 4, 5}},
                                                {{2, 3, 16}, {1, 16, 7}},
                                                {{4, 2, 3, 6}, {1, 2, 6, 3}},
                                                {{3, 0}, {0, 4}},
                                                {{33, 65}, {65, 17}}};
  uint32_t seed = 60;
  for (auto [ls, rs] : cases) {
    Shape lb(ls.begin(), ls.end() - 2), rb(rs.begin(), rs.end() - 2);
    Shape os = broadcastOf(lb, rb);
    os.push_back(ls[ls.size() - 2]);
    os.push_back(rs.back());
    std::vector<float> lhs = randomFloats(numel(ls), seed++);
    std::vector<float> rhs = randomFloats(numel(rs), seed++);
    std::vector<float> want(size_t(numel(os)));
    ASSERT_EQ(gpipe_rt_cpu_matmul_f32(lhs.data(), ls.data(), rankOf(ls),
                                      rhs.data(), rs.data(), rankOf(rs), 0, 0,
                                      want.data(), os.data(), rankOf(os)),
              GPIPE_RT_SUCCESS)
        << lastError();
    DeviceBuffer dl = DeviceBuffer::of(lhs), dr = DeviceBuffer::of(rhs);
    std::vector<float> got = runTwice<float>(want.size(), [&](float *out) {
      return gpipe_rt_cuda_matmul_f32(dl.get<float>(), ls.data(), rankOf(ls),
                                      dr.get<float>(), rs.data(), rankOf(rs), 0,
                                      0, out, os.data(), rankOf(os));
    });
    expectCloseToScale(got, want, "matmul case " + std::to_string(seed));
  }
}

TEST(CUDAKernels, Gemm) {
  REQUIRE_CUDA();
  const int64_t m = 5, n = 7, k = 6;
  std::vector<Shape> cShapes = {{}, {n}, {m, 1}, {m, n}};
  uint32_t seed = 80;
  for (int transA = 0; transA < 2; ++transA) {
    for (int transB = 0; transB < 2; ++transB) {
      Shape as = transA ? Shape{k, m} : Shape{m, k};
      Shape bs = transB ? Shape{n, k} : Shape{k, n};
      Shape os{m, n};
      std::vector<float> a = randomFloats(m * k, seed++);
      std::vector<float> b = randomFloats(k * n, seed++);
      DeviceBuffer da = DeviceBuffer::of(a), db = DeviceBuffer::of(b);
      for (int withC = 0; withC <= int(cShapes.size()); ++withC) {
        const Shape *cs = withC ? &cShapes[size_t(withC - 1)] : nullptr;
        std::vector<float> c =
            cs ? randomFloats(numel(*cs), seed++) : std::vector<float>();
        DeviceBuffer dc = DeviceBuffer::of(c);
        std::vector<float> want(size_t(m * n));
        ASSERT_EQ(gpipe_rt_cpu_gemm_f32(a.data(), as.data(), b.data(),
                                        bs.data(), cs ? c.data() : nullptr,
                                        cs ? dataOf(*cs) : nullptr,
                                        cs ? rankOf(*cs) : 0, 1.5f, 0.5f,
                                        transA, transB, want.data(), os.data()),
                  GPIPE_RT_SUCCESS);
        std::vector<float> got = runTwice<float>(want.size(), [&](float *out) {
          return gpipe_rt_cuda_gemm_f32(
              da.get<float>(), as.data(), db.get<float>(), bs.data(),
              cs ? dc.get<float>() : nullptr, cs ? dataOf(*cs) : nullptr,
              cs ? rankOf(*cs) : 0, 1.5f, 0.5f, transA, transB, out, os.data());
        });
        expectCloseToScale(got, want,
                           "gemm transA " + std::to_string(transA) +
                               " transB " + std::to_string(transB) + " c " +
                               std::to_string(withC));
      }
    }
  }
  // K = 0: the result is beta * c exactly.
  Shape as{3, 0}, bs{0, 4}, os{3, 4}, cs{4};
  std::vector<float> c = randomFloats(4, 99);
  std::vector<float> want(12);
  ASSERT_EQ(gpipe_rt_cpu_gemm_f32(nullptr, as.data(), nullptr, bs.data(),
                                  c.data(), cs.data(), 1, 1.0f, 2.0f, 0, 0,
                                  want.data(), os.data()),
            GPIPE_RT_SUCCESS);
  DeviceBuffer dc = DeviceBuffer::of(c);
  expectSame(runTwice<float>(12,
                             [&](float *out) {
                               return gpipe_rt_cuda_gemm_f32(
                                   nullptr, as.data(), nullptr, bs.data(),
                                   dc.get<float>(), cs.data(), 1, 1.0f, 2.0f, 0,
                                   0, out, os.data());
                             }),
             want);
}

TEST(CUDAKernels, Linear) {
  REQUIRE_CUDA();
  Shape in{2, 3, 4};
  std::vector<float> x = randomFloats(numel(in), 100);
  std::vector<float> bias = randomFloats(5, 101);
  DeviceBuffer dx = DeviceBuffer::of(x), dbias = DeviceBuffer::of(bias);
  for (int transpose = 0; transpose < 2; ++transpose) {
    Shape ws = transpose ? Shape{5, 4} : Shape{4, 5};
    std::vector<float> w = randomFloats(20, 102 + uint32_t(transpose));
    DeviceBuffer dw = DeviceBuffer::of(w);
    Shape os{2, 3, 5};
    for (int withBias = 0; withBias < 2; ++withBias) {
      std::vector<float> want(size_t(numel(os)));
      ASSERT_EQ(gpipe_rt_cpu_linear_f32(x.data(), in.data(), 3, w.data(),
                                        ws.data(),
                                        withBias ? bias.data() : nullptr,
                                        transpose, want.data(), os.data(), 3),
                GPIPE_RT_SUCCESS);
      std::vector<float> got = runTwice<float>(want.size(), [&](float *out) {
        return gpipe_rt_cuda_linear_f32(dx.get<float>(), in.data(), 3,
                                        dw.get<float>(), ws.data(),
                                        withBias ? dbias.get<float>() : nullptr,
                                        transpose, out, os.data(), 3);
      });
      expectCloseToScale(got, want);
    }
  }
}

TEST(CUDAKernels, Bf16Contractions) {
  // The CUDA bf16 kernels round the operands as the CPU's do; only the
  // fp32 accumulation order may differ.
  REQUIRE_CUDA();
  Shape in{4, 16, 64}, ws{96, 64}, os{4, 16, 96};
  std::vector<float> x = randomFloats(numel(in), 110);
  std::vector<float> w = randomFloats(numel(ws), 111);
  std::vector<float> bias = randomFloats(96, 112);
  DeviceBuffer dx = DeviceBuffer::of(x), dw = DeviceBuffer::of(w),
               dbias = DeviceBuffer::of(bias);
  std::vector<float> want(size_t(numel(os)));
  ASSERT_EQ(gpipe_rt_cpu_linear_bf16(x.data(), in.data(), 3, w.data(),
                                     ws.data(), bias.data(), 1, want.data(),
                                     os.data(), 3),
            GPIPE_RT_SUCCESS);
  std::vector<float> got = runTwice<float>(want.size(), [&](float *out) {
    return gpipe_rt_cuda_linear_bf16(dx.get<float>(), in.data(), 3,
                                     dw.get<float>(), ws.data(),
                                     dbias.get<float>(), 1, out, os.data(), 3);
  });
  expectCloseToScale(got, want);

  Shape a{64, 64}, b{96, 64}, c{64, 96};
  std::vector<float> wantGemm(size_t(numel(c)));
  ASSERT_EQ(gpipe_rt_cpu_gemm_bf16(x.data(), a.data(), w.data(), b.data(),
                                   nullptr, nullptr, 0, 0.5f, 0.0f, 0, 1,
                                   wantGemm.data(), c.data()),
            GPIPE_RT_SUCCESS);
  std::vector<float> gotGemm = runTwice<float>(wantGemm.size(), [&](float *o) {
    return gpipe_rt_cuda_gemm_bf16(dx.get<float>(), a.data(), dw.get<float>(),
                                   b.data(), nullptr, nullptr, 0, 0.5f, 0.0f, 0,
                                   1, o, c.data());
  });
  expectCloseToScale(gotGemm, wantGemm);

  // Batched, both operands batched (a strided cuBLAS batch).
  Shape l{4, 16, 16}, r{4, 16, 24}, o{4, 16, 24};
  std::vector<float> wantMm(size_t(numel(o)));
  ASSERT_EQ(gpipe_rt_cpu_matmul_bf16(x.data(), l.data(), 3, w.data(), r.data(),
                                     3, 0, 0, wantMm.data(), o.data(), 3),
            GPIPE_RT_SUCCESS);
  std::vector<float> gotMm = runTwice<float>(wantMm.size(), [&](float *out) {
    return gpipe_rt_cuda_matmul_bf16(dx.get<float>(), l.data(), 3,
                                     dw.get<float>(), r.data(), 3, 0, 0, out,
                                     o.data(), 3);
  });
  expectCloseToScale(gotMm, wantMm);

  // And it is bf16: fp32 on the same data differs.
  std::vector<float> fp32 = runTwice<float>(want.size(), [&](float *out) {
    return gpipe_rt_cuda_linear_f32(dx.get<float>(), in.data(), 3,
                                    dw.get<float>(), ws.data(),
                                    dbias.get<float>(), 1, out, os.data(), 3);
  });
  EXPECT_NE(fp32, got);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

TEST(CUDAKernels, Softmax) {
  REQUIRE_CUDA();
  std::vector<std::pair<Shape, int64_t>> cases = {
      {{3, 4, 5}, 0}, {{3, 4, 5}, 1}, {{3, 4, 5}, 2},
      {{7, 100}, 1},  {{}, 0},        {{2, 1000}, 1}};
  uint32_t seed = 120;
  for (auto [s, axis] : cases) {
    std::vector<float> x = randomFloats(numel(s), seed++, -8.0f, 8.0f);
    std::vector<float> want(x.size());
    ASSERT_EQ(gpipe_rt_cpu_softmax_f32(x.data(), dataOf(s), rankOf(s), axis,
                                       want.data()),
              GPIPE_RT_SUCCESS);
    DeviceBuffer dx = DeviceBuffer::of(x);
    std::vector<float> got = runTwice<float>(x.size(), [&](float *out) {
      return gpipe_rt_cuda_softmax_f32(dx.get<float>(), dataOf(s), rankOf(s),
                                       axis, out);
    });
    expectClose(got, want, 1e-5, 1e-8, "axis " + std::to_string(axis));
    // In place.
    ASSERT_EQ(gpipe_rt_cuda_softmax_f32(dx.get<float>(), dataOf(s), rankOf(s),
                                        axis, dx.get<float>()),
              GPIPE_RT_SUCCESS);
    expectSame(dx.read<float>(), got, "in place");
  }
}

TEST(CUDAKernels, LayerNorm) {
  REQUIRE_CUDA();
  std::vector<std::pair<Shape, int64_t>> cases = {
      {{4, 6, 5}, 1}, {{4, 6, 5}, 2}, {{3, 300}, 1}, {{2, 3}, 0}};
  uint32_t seed = 140;
  for (auto [s, axis] : cases) {
    int64_t rows = 1, n = 1;
    for (size_t d = 0; d < s.size(); ++d)
      (int64_t(d) < axis ? rows : n) *= s[d];
    std::vector<float> x = randomFloats(numel(s), seed++, -3.0f, 5.0f);
    std::vector<float> scale = randomFloats(n, seed++, 0.5f, 1.5f);
    std::vector<float> bias = randomFloats(n, seed++);
    DeviceBuffer dx = DeviceBuffer::of(x), dscale = DeviceBuffer::of(scale),
                 dbias = DeviceBuffer::of(bias);
    for (int withBias = 0; withBias < 2; ++withBias) {
      std::vector<float> want(x.size()), mean(static_cast<size_t>(rows)),
          rstd(static_cast<size_t>(rows));
      ASSERT_EQ(gpipe_rt_cpu_layer_norm_f32(
                    x.data(), s.data(), rankOf(s), axis, scale.data(),
                    withBias ? bias.data() : nullptr, 1e-5f, want.data(),
                    mean.data(), rstd.data()),
                GPIPE_RT_SUCCESS);
      DeviceBuffer dmean(size_t(rows) * 4), drstd(size_t(rows) * 4);
      std::vector<float> got = runTwice<float>(x.size(), [&](float *out) {
        return gpipe_rt_cuda_layer_norm_f32(
            dx.get<float>(), s.data(), rankOf(s), axis, dscale.get<float>(),
            withBias ? dbias.get<float>() : nullptr, 1e-5f, out,
            dmean.get<float>(), drstd.get<float>());
      });
      expectClose(got, want, 1e-5, 1e-5, "layer_norm");
      expectClose(dmean.read<float>(), mean, 1e-6, 1e-7, "mean");
      expectClose(drstd.read<float>(), rstd, 1e-6, 0, "rstd");
    }
  }
}

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

TEST(CUDAKernels, Gather) {
  REQUIRE_CUDA();
  struct Case {
    Shape data, indices;
    int64_t axis;
    gpipe_rt_dtype dtype, indexType;
  };
  std::vector<Case> cases = {{{5, 4}, {2, 3}, 0, GPIPE_RT_F32, GPIPE_RT_I64},
                             {{3, 5, 2}, {4}, 1, GPIPE_RT_F32, GPIPE_RT_I32},
                             {{6}, {}, 0, GPIPE_RT_I64, GPIPE_RT_I64},
                             {{2, 7}, {3, 2}, 1, GPIPE_RT_BOOL, GPIPE_RT_I32},
                             {{50, 8}, {40}, 0, GPIPE_RT_BF16, GPIPE_RT_I64}};
  uint32_t seed = 160;
  for (const Case &c : cases) {
    size_t elem = gpipe_rt_dtype_size(c.dtype);
    std::vector<uint8_t> data =
        randomBytes(numel(c.data) * int64_t(elem), seed++, 256);
    std::vector<int64_t> idx64 =
        randomIndices(numel(c.indices), c.data[size_t(c.axis)], seed++);
    std::vector<int32_t> idx32 = narrow(idx64);
    const void *idx = c.indexType == GPIPE_RT_I64
                          ? static_cast<const void *>(idx64.data())
                          : static_cast<const void *>(idx32.data());
    size_t idxBytes = idx64.size() * gpipe_rt_dtype_size(c.indexType);
    int64_t outCount =
        numel(c.data) / c.data[size_t(c.axis)] * numel(c.indices);
    std::vector<uint8_t> want(size_t(outCount) * elem);
    ASSERT_EQ(gpipe_rt_cpu_gather(c.dtype, data.data(), c.data.data(),
                                  rankOf(c.data), c.indexType, idx,
                                  dataOf(c.indices), rankOf(c.indices), c.axis,
                                  want.data()),
              GPIPE_RT_SUCCESS);
    DeviceBuffer dd = DeviceBuffer::of(data), di(idxBytes);
    cudaMemcpy(di.get(), idx, idxBytes, cudaMemcpyHostToDevice);
    std::vector<uint8_t> got = runTwice<uint8_t>(want.size(), [&](uint8_t *o) {
      return gpipe_rt_cuda_gather(
          c.dtype, dd.get(), c.data.data(), rankOf(c.data), c.indexType,
          di.get(), dataOf(c.indices), rankOf(c.indices), c.axis, o);
    });
    expectSame(got, want);
  }
}

TEST(CUDAKernels, OutOfRangeIndicesComeBackFromCheck) {
  REQUIRE_CUDA();
  Shape ds{5, 4}, is{2, 3};
  std::vector<float> data = randomFloats(20, 170);
  std::vector<int64_t> idx = {0, 1, 2, 3, 7, -1};
  std::vector<float> cpuOut(24);
  ASSERT_EQ(gpipe_rt_cpu_gather(GPIPE_RT_F32, data.data(), ds.data(), 2,
                                GPIPE_RT_I64, idx.data(), is.data(), 2, 0,
                                cpuOut.data()),
            GPIPE_RT_OUT_OF_RANGE);
  DeviceBuffer dd = DeviceBuffer::of(data), di = DeviceBuffer::of(idx),
               dout(24 * 4);
  ASSERT_EQ(gpipe_rt_cuda_gather(GPIPE_RT_F32, dd.get(), ds.data(), 2,
                                 GPIPE_RT_I64, di.get(), is.data(), 2, 0,
                                 dout.get()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(gpipe_rt_cuda_check(), GPIPE_RT_OUT_OF_RANGE);
  EXPECT_EQ(std::string(gpipe_rt_cuda_last_error()), lastError());
  // Reported once: the record is clear again.
  EXPECT_EQ(gpipe_rt_cuda_check(), GPIPE_RT_SUCCESS);

  // gather_grad, then a label error: the first one wins.
  Shape gs{2, 3, 4}, os{5, 4};
  std::vector<float> grad = randomFloats(24, 171);
  std::vector<float> cpuGrad(20);
  ASSERT_EQ(gpipe_rt_cpu_gather_grad_f32(GPIPE_RT_I64, idx.data(), is.data(), 2,
                                         grad.data(), gs.data(), 3, 0,
                                         cpuGrad.data(), os.data(), 2),
            GPIPE_RT_OUT_OF_RANGE);
  std::string gradMessage = lastError();
  DeviceBuffer dg = DeviceBuffer::of(grad), dgo(20 * 4);
  ASSERT_EQ(gpipe_rt_cuda_gather_grad_f32(GPIPE_RT_I64, di.get(), is.data(), 2,
                                          dg.get<float>(), gs.data(), 3, 0,
                                          dgo.get<float>(), os.data(), 2),
            GPIPE_RT_SUCCESS);
  Shape ls{3, 4};
  std::vector<float> logits = randomFloats(12, 172);
  std::vector<int32_t> labels = {1, 2, 4};
  DeviceBuffer dlog = DeviceBuffer::of(logits), dlab = DeviceBuffer::of(labels),
               dloss(4);
  ASSERT_EQ(gpipe_rt_cuda_cross_entropy_f32(dlog.get<float>(), ls.data(), 2,
                                            GPIPE_RT_I32, dlab.get(),
                                            dloss.get<float>()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(gpipe_rt_cuda_check(), GPIPE_RT_OUT_OF_RANGE);
  EXPECT_EQ(std::string(gpipe_rt_cuda_last_error()), gradMessage);

  for (int grad = 0; grad < 2; ++grad) {
    float loss = 0;
    std::vector<float> cpuDx(12);
    gpipe_rt_status cpu =
        grad ? gpipe_rt_cpu_cross_entropy_grad_f32(logits.data(), ls.data(), 2,
                                                   GPIPE_RT_I32, labels.data(),
                                                   1.0f, cpuDx.data())
             : gpipe_rt_cpu_cross_entropy_f32(logits.data(), ls.data(), 2,
                                              GPIPE_RT_I32, labels.data(),
                                              &loss);
    ASSERT_EQ(cpu, GPIPE_RT_OUT_OF_RANGE);
    DeviceBuffer ddx(12 * 4);
    gpipe_rt_status cuda =
        grad
            ? gpipe_rt_cuda_cross_entropy_grad_f32(dlog.get<float>(), ls.data(),
                                                   2, GPIPE_RT_I32, dlab.get(),
                                                   1.0f, ddx.get<float>())
            : gpipe_rt_cuda_cross_entropy_f32(dlog.get<float>(), ls.data(), 2,
                                              GPIPE_RT_I32, dlab.get(),
                                              dloss.get<float>());
    ASSERT_EQ(cuda, GPIPE_RT_SUCCESS);
    EXPECT_EQ(gpipe_rt_cuda_check(), GPIPE_RT_OUT_OF_RANGE);
    EXPECT_EQ(std::string(gpipe_rt_cuda_last_error()), lastError());
  }
}

TEST(CUDAKernels, Transpose) {
  REQUIRE_CUDA();
  Shape s{2, 3, 4};
  std::vector<Shape> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                              {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  uint32_t seed = 180;
  for (gpipe_rt_dtype dtype :
       {GPIPE_RT_BOOL, GPIPE_RT_BF16, GPIPE_RT_F32, GPIPE_RT_F64}) {
    size_t elem = gpipe_rt_dtype_size(dtype);
    std::vector<uint8_t> in =
        randomBytes(numel(s) * int64_t(elem), seed++, 256);
    DeviceBuffer din = DeviceBuffer::of(in);
    for (const Shape &perm : perms) {
      std::vector<uint8_t> want(in.size());
      ASSERT_EQ(gpipe_rt_cpu_transpose(dtype, in.data(), s.data(), 3,
                                       perm.data(), want.data()),
                GPIPE_RT_SUCCESS);
      expectSame(runTwice<uint8_t>(in.size(),
                                   [&](uint8_t *out) {
                                     return gpipe_rt_cuda_transpose(
                                         dtype, din.get(), s.data(), 3,
                                         perm.data(), out);
                                   }),
                 want);
    }
  }
}

TEST(CUDAKernels, SliceAndInsertSlice) {
  REQUIRE_CUDA();
  Shape s{5, 6, 7}, off{1, 0, 2}, sizes{2, 3, 2}, strides{2, 2, 3};
  std::vector<float> in = randomFloats(numel(s), 190);
  std::vector<float> want(size_t(numel(sizes)));
  ASSERT_EQ(gpipe_rt_cpu_slice(GPIPE_RT_F32, in.data(), s.data(), 3, off.data(),
                               sizes.data(), strides.data(), want.data()),
            GPIPE_RT_SUCCESS);
  DeviceBuffer din = DeviceBuffer::of(in);
  expectSame(runTwice<float>(want.size(),
                             [&](float *out) {
                               return gpipe_rt_cuda_slice(
                                   GPIPE_RT_F32, din.get(), s.data(), 3,
                                   off.data(), sizes.data(), strides.data(),
                                   out);
                             }),
             want);

  std::vector<float> src = randomFloats(numel(sizes), 191);
  DeviceBuffer dsrc = DeviceBuffer::of(src);
  std::vector<float> inserted(in.size());
  ASSERT_EQ(gpipe_rt_cpu_insert_slice(GPIPE_RT_F32, src.data(), sizes.data(),
                                      in.data(), s.data(), 3, off.data(),
                                      strides.data(), inserted.data()),
            GPIPE_RT_SUCCESS);
  expectSame(runTwice<float>(in.size(),
                             [&](float *out) {
                               return gpipe_rt_cuda_insert_slice(
                                   GPIPE_RT_F32, dsrc.get(), sizes.data(),
                                   din.get(), s.data(), 3, off.data(),
                                   strides.data(), out);
                             }),
             inserted);
  // In place (out == dest).
  ASSERT_EQ(gpipe_rt_cuda_insert_slice(GPIPE_RT_F32, dsrc.get(), sizes.data(),
                                       din.get(), s.data(), 3, off.data(),
                                       strides.data(), din.get()),
            GPIPE_RT_SUCCESS);
  expectSame(din.read<float>(), inserted);
}

TEST(CUDAKernels, SplitAndConcat) {
  REQUIRE_CUDA();
  Shape s{4, 6};
  std::vector<float> in = randomFloats(24, 200);
  DeviceBuffer din = DeviceBuffer::of(in);
  for (int64_t axis = 0; axis < 2; ++axis) {
    Shape sizes = axis ? Shape{1, 3, 2} : Shape{2, 0, 2};
    std::vector<std::vector<float>> want(3);
    std::vector<DeviceBuffer> pieces;
    void *cpuOuts[3], *cudaOuts[3];
    for (size_t i = 0; i < 3; ++i) {
      int64_t count = 24 / s[size_t(axis)] * sizes[i];
      want[i].resize(size_t(count));
      pieces.emplace_back(size_t(count) * 4);
      cpuOuts[i] = count ? want[i].data() : nullptr;
      cudaOuts[i] = pieces[i].get();
    }
    ASSERT_EQ(gpipe_rt_cpu_split(GPIPE_RT_F32, in.data(), s.data(), 2, axis,
                                 sizes.data(), 3, cpuOuts),
              GPIPE_RT_SUCCESS);
    ASSERT_EQ(gpipe_rt_cuda_split(GPIPE_RT_F32, din.get(), s.data(), 2, axis,
                                  sizes.data(), 3, cudaOuts),
              GPIPE_RT_SUCCESS)
        << gpipe_rt_cuda_last_error();
    for (size_t i = 0; i < 3; ++i)
      expectSame(pieces[i].read<float>(), want[i], "split piece");

    // Concatenating the pieces gives the input back.
    std::vector<Shape> shapes(3, s);
    const int64_t *shapePtrs[3];
    const void *inputs[3];
    for (size_t i = 0; i < 3; ++i) {
      shapes[i][size_t(axis)] = sizes[i];
      shapePtrs[i] = shapes[i].data();
      inputs[i] = pieces[i].get();
    }
    std::vector<float> got = runTwice<float>(24, [&](float *out) {
      return gpipe_rt_cuda_concat(GPIPE_RT_F32, 3, inputs, shapePtrs, 2, axis,
                                  out);
    });
    expectSame(got, in, "concat");
  }
}

TEST(CUDAKernels, Copy) {
  REQUIRE_CUDA();
  std::vector<int64_t> v = randomIndices(10, 1000, 210);
  DeviceBuffer d = DeviceBuffer::of(v);
  expectSame(runTwice<int64_t>(10,
                               [&](int64_t *out) {
                                 return gpipe_rt_cuda_copy(GPIPE_RT_I64,
                                                           d.get(), out, 10);
                               }),
             v);
  // Overlapping ranges behave as memmove, both ways.
  std::vector<int64_t> want = v;
  ASSERT_EQ(gpipe_rt_cpu_copy(GPIPE_RT_I64, want.data(), want.data() + 3, 6),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cuda_copy(GPIPE_RT_I64, d.get<int64_t>(),
                               d.get<int64_t>() + 3, 6),
            GPIPE_RT_SUCCESS);
  expectSame(d.read<int64_t>(), want);
  ASSERT_EQ(gpipe_rt_cpu_copy(GPIPE_RT_I64, want.data() + 2, want.data(), 7),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cuda_copy(GPIPE_RT_I64, d.get<int64_t>() + 2,
                               d.get<int64_t>(), 7),
            GPIPE_RT_SUCCESS);
  expectSame(d.read<int64_t>(), want);
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

TEST(CUDAKernels, CrossEntropyAndGrad) {
  REQUIRE_CUDA();
  std::vector<std::pair<Shape, gpipe_rt_dtype>> cases = {
      {{6, 10}, GPIPE_RT_I64},
      {{2, 3, 40}, GPIPE_RT_I32},
      {{5, 1000}, GPIPE_RT_I64},
      {{0, 4}, GPIPE_RT_I64}};
  uint32_t seed = 220;
  for (auto [s, labelType] : cases) {
    int64_t classes = s.back(), rows = numel(s) / std::max<int64_t>(1, classes);
    if (classes == 0)
      rows = 0;
    std::vector<float> logits = randomFloats(numel(s), seed++, -6.0f, 6.0f);
    std::vector<int64_t> l64 = randomIndices(rows, classes, seed++);
    std::vector<int32_t> l32 = narrow(l64);
    const void *labels = labelType == GPIPE_RT_I64
                             ? static_cast<const void *>(l64.data())
                             : static_cast<const void *>(l32.data());
    size_t labelBytes = size_t(rows) * gpipe_rt_dtype_size(labelType);
    float want = 0;
    ASSERT_EQ(gpipe_rt_cpu_cross_entropy_f32(logits.data(), s.data(), rankOf(s),
                                             labelType, labels, &want),
              GPIPE_RT_SUCCESS);
    DeviceBuffer dlog = DeviceBuffer::of(logits), dlab(labelBytes);
    if (labelBytes)
      cudaMemcpy(dlab.get(), labels, labelBytes, cudaMemcpyHostToDevice);
    std::vector<float> got = runTwice<float>(1, [&](float *loss) {
      return gpipe_rt_cuda_cross_entropy_f32(
          dlog.get<float>(), s.data(), rankOf(s), labelType, dlab.get(), loss);
    });
    expectClose(got, {want}, 1e-5, 1e-7, "loss");

    std::vector<float> wantGrad(logits.size());
    ASSERT_EQ(gpipe_rt_cpu_cross_entropy_grad_f32(logits.data(), s.data(),
                                                  rankOf(s), labelType, labels,
                                                  1.5f, wantGrad.data()),
              GPIPE_RT_SUCCESS);
    std::vector<float> gotGrad = runTwice<float>(logits.size(), [&](float *o) {
      return gpipe_rt_cuda_cross_entropy_grad_f32(dlog.get<float>(), s.data(),
                                                  rankOf(s), labelType,
                                                  dlab.get(), 1.5f, o);
    });
    expectClose(gotGrad, wantGrad, 1e-5, 1e-8, "grad");

    // The seed read from device memory (what compiled code calls) gives
    // the same bits as the seed passed by value.
    DeviceBuffer seedAt = DeviceBuffer::of(std::vector<float>{1.5f});
    std::vector<float> gotAt = runTwice<float>(logits.size(), [&](float *o) {
      return gpipe_rt_cuda_cross_entropy_grad_at_f32(
          dlog.get<float>(), s.data(), rankOf(s), labelType, dlab.get(),
          seedAt.get<float>(), o);
    });
    expectSame(gotAt, gotGrad, "grad with the seed in device memory");
  }
}

TEST(CUDAKernels, Mse) {
  REQUIRE_CUDA();
  for (int64_t count :
       {int64_t(0), int64_t(1), int64_t(1000), int64_t(100000)}) {
    std::vector<float> a = randomFloats(count, 230),
                       b = randomFloats(count, 231);
    float want = 0;
    ASSERT_EQ(gpipe_rt_cpu_mse_f32(a.data(), b.data(), count, &want),
              GPIPE_RT_SUCCESS);
    DeviceBuffer da = DeviceBuffer::of(a), db = DeviceBuffer::of(b);
    std::vector<float> got = runTwice<float>(1, [&](float *loss) {
      return gpipe_rt_cuda_mse_f32(da.get<float>(), db.get<float>(), count,
                                   loss);
    });
    expectClose(got, {want}, 1e-5, 0, "count " + std::to_string(count));
  }
}

//===----------------------------------------------------------------------===//
// Backward kernels
//===----------------------------------------------------------------------===//

TEST(CUDAKernels, ReduceSum) {
  REQUIRE_CUDA();
  // One thread per output in index order: the CPU's bits.
  Shape s{3, 4, 5};
  std::vector<float> x = randomFloats(numel(s), 240, -100.0f, 100.0f);
  x[0] = -0.0f; // A sum starts from +0, also a sum of one element.
  DeviceBuffer dx = DeviceBuffer::of(x);
  for (uint32_t mask = 0; mask < 8; ++mask) {
    Shape axes;
    int64_t outputs = 1;
    for (int32_t d = 0; d < 3; ++d) {
      if (mask & (1u << d))
        axes.push_back(d);
      else
        outputs *= s[size_t(d)];
    }
    std::vector<float> want(static_cast<size_t>(outputs));
    ASSERT_EQ(gpipe_rt_cpu_reduce_sum_f32(x.data(), s.data(), 3, dataOf(axes),
                                          rankOf(axes), want.data()),
              GPIPE_RT_SUCCESS);
    expectSame(runTwice<float>(want.size(),
                               [&](float *out) {
                                 return gpipe_rt_cuda_reduce_sum_f32(
                                     dx.get<float>(), s.data(), 3, dataOf(axes),
                                     rankOf(axes), out);
                               }),
               want, "mask " + std::to_string(mask));
  }
  // Few outputs of many inputs: a block per output, close to the CPU.
  Shape big{3, 20000};
  Shape last{1};
  std::vector<float> y = randomFloats(numel(big), 241);
  std::vector<float> want(3);
  ASSERT_EQ(gpipe_rt_cpu_reduce_sum_f32(y.data(), big.data(), 2, last.data(), 1,
                                        want.data()),
            GPIPE_RT_SUCCESS);
  DeviceBuffer dy = DeviceBuffer::of(y);
  std::vector<float> got = runTwice<float>(3, [&](float *out) {
    return gpipe_rt_cuda_reduce_sum_f32(dy.get<float>(), big.data(), 2,
                                        last.data(), 1, out);
  });
  // The bound: 1e-5 of the sum of magnitudes (about 20000 for [-2, 2]).
  expectClose(got, want, 0, 1e-5 * 20000);
  // Reducing an empty dim gives zeros.
  Shape empty{3, 0, 2}, middle{1};
  expectSame(runTwice<float>(6,
                             [&](float *out) {
                               return gpipe_rt_cuda_reduce_sum_f32(
                                   nullptr, empty.data(), 3, middle.data(), 1,
                                   out);
                             }),
             std::vector<float>(6, 0.0f));
}

TEST(CUDAKernels, GatherGrad) {
  REQUIRE_CUDA();
  struct Case {
    Shape out, indices;
    int64_t axis;
    gpipe_rt_dtype indexType;
  };
  std::vector<Case> cases = {{{5, 4}, {2, 3}, 0, GPIPE_RT_I64},
                             {{3, 5, 2}, {4}, 1, GPIPE_RT_I32},
                             {{7}, {30}, 0, GPIPE_RT_I64},
                             {{20, 16}, {8, 50}, 0, GPIPE_RT_I32}};
  uint32_t seed = 250;
  for (const Case &c : cases) {
    Shape gs(c.out.begin(), c.out.begin() + c.axis);
    gs.insert(gs.end(), c.indices.begin(), c.indices.end());
    gs.insert(gs.end(), c.out.begin() + c.axis + 1, c.out.end());
    std::vector<float> grad = randomFloats(numel(gs), seed++, -50.0f, 50.0f);
    std::vector<int64_t> i64 =
        randomIndices(numel(c.indices), c.out[size_t(c.axis)], seed++);
    std::vector<int32_t> i32 = narrow(i64);
    const void *idx = c.indexType == GPIPE_RT_I64
                          ? static_cast<const void *>(i64.data())
                          : static_cast<const void *>(i32.data());
    size_t idxBytes = i64.size() * gpipe_rt_dtype_size(c.indexType);
    std::vector<float> want(size_t(numel(c.out)));
    ASSERT_EQ(gpipe_rt_cpu_gather_grad_f32(
                  c.indexType, idx, c.indices.data(), rankOf(c.indices),
                  grad.data(), gs.data(), rankOf(gs), c.axis, want.data(),
                  c.out.data(), rankOf(c.out)),
              GPIPE_RT_SUCCESS);
    DeviceBuffer dg = DeviceBuffer::of(grad), di(idxBytes);
    cudaMemcpy(di.get(), idx, idxBytes, cudaMemcpyHostToDevice);
    expectSame(runTwice<float>(want.size(),
                               [&](float *out) {
                                 return gpipe_rt_cuda_gather_grad_f32(
                                     c.indexType, di.get(), c.indices.data(),
                                     rankOf(c.indices), dg.get<float>(),
                                     gs.data(), rankOf(gs), c.axis, out,
                                     c.out.data(), rankOf(c.out));
                               }),
               want);
  }
}

// Fused attention and its gradient against the CPU kernels, with a causal
// -inf mask and with a bias broadcast over the heads; the same bits on
// every run.
TEST(CUDAKernels, AttentionAndGrad) {
  REQUIRE_CUDA();
  struct Case {
    Shape q;
    int64_t keys, valueDim;
    Shape bias;
  };
  std::vector<Case> cases = {{{2, 3, 6, 8}, 6, 8, {6, 6}},
                             {{2, 3, 5, 4}, 7, 3, {2, 1, 5, 7}},
                             {{4, 9, 16}, 9, 16, {}}};
  uint32_t seed = 990;
  for (const Case &c : cases) {
    int32_t rank = int32_t(c.q.size());
    Shape ks = c.q, vs = c.q, os = c.q;
    ks[rank - 2] = c.keys;
    vs[rank - 2] = c.keys;
    vs[rank - 1] = c.valueDim;
    os[rank - 1] = c.valueDim;
    std::vector<float> q = randomFloats(numel(c.q), seed++),
                       k = randomFloats(numel(ks), seed++),
                       v = randomFloats(numel(vs), seed++),
                       g = randomFloats(numel(os), seed++),
                       bias = randomFloats(numel(c.bias), seed++);
    if (c.bias.size() == 2)
      for (int64_t t = 0; t < c.bias[0]; ++t)
        for (int64_t j = t + 1; j < c.bias[1]; ++j)
          bias[size_t(t * c.bias[1] + j)] =
              -std::numeric_limits<float>::infinity();
    const float *b = c.bias.empty() ? nullptr : bias.data();
    int32_t biasRank = int32_t(c.bias.size());
    std::vector<float> want(size_t(numel(os))), wq(q.size()), wk(k.size()),
        wv(v.size());
    ASSERT_EQ(gpipe_rt_cpu_attention_f32(
                  q.data(), k.data(), v.data(), c.q.data(), rank, c.keys,
                  c.valueDim, b, c.bias.data(), biasRank, 0.25f, want.data()),
              GPIPE_RT_SUCCESS);
    ASSERT_EQ(gpipe_rt_cpu_attention_grad_f32(
                  q.data(), k.data(), v.data(), c.q.data(), rank, c.keys,
                  c.valueDim, b, c.bias.data(), biasRank, 0.25f, g.data(),
                  wq.data(), wk.data(), wv.data()),
              GPIPE_RT_SUCCESS);
    DeviceBuffer dq = DeviceBuffer::of(q), dk = DeviceBuffer::of(k),
                 dv = DeviceBuffer::of(v), dg = DeviceBuffer::of(g),
                 db = DeviceBuffer::of(bias);
    const float *devBias = c.bias.empty() ? nullptr : db.get<float>();
    expectClose(runTwice<float>(want.size(),
                                [&](float *out) {
                                  return gpipe_rt_cuda_attention_f32(
                                      dq.get<float>(), dk.get<float>(),
                                      dv.get<float>(), c.q.data(), rank, c.keys,
                                      c.valueDim, devBias, c.bias.data(),
                                      biasRank, 0.25f, out);
                                }),
                want, 1e-5, 1e-6, "attention");
    DeviceBuffer gq(q.size() * sizeof(float)), gk(k.size() * sizeof(float)),
        gv(v.size() * sizeof(float));
    ASSERT_EQ(gpipe_rt_cuda_attention_grad_f32(
                  dq.get<float>(), dk.get<float>(), dv.get<float>(), c.q.data(),
                  rank, c.keys, c.valueDim, devBias, c.bias.data(), biasRank,
                  0.25f, dg.get<float>(), gq.get<float>(), gk.get<float>(),
                  gv.get<float>()),
              GPIPE_RT_SUCCESS)
        << gpipe_rt_cuda_last_error();
    expectClose(gq.read<float>(), wq, 1e-4, 1e-6, "q grad");
    expectClose(gk.read<float>(), wk, 1e-4, 1e-6, "k grad");
    expectClose(gv.read<float>(), wv, 1e-4, 1e-6, "v grad");
  }
}

TEST(CUDAKernels, SoftmaxGrad) {
  REQUIRE_CUDA();
  std::vector<std::pair<Shape, int64_t>> cases = {
      {{3, 4, 5}, 0}, {{3, 4, 5}, 1}, {{3, 4, 5}, 2}, {{6, 300}, 1}};
  uint32_t seed = 260;
  for (auto [s, axis] : cases) {
    std::vector<float> x = randomFloats(numel(s), seed++);
    std::vector<float> y(x.size());
    gpipe_rt_cpu_softmax_f32(x.data(), s.data(), rankOf(s), axis, y.data());
    std::vector<float> dy = randomFloats(numel(s), seed++);
    std::vector<float> want(x.size());
    ASSERT_EQ(gpipe_rt_cpu_softmax_grad_f32(y.data(), dy.data(), s.data(),
                                            rankOf(s), axis, want.data()),
              GPIPE_RT_SUCCESS);
    DeviceBuffer dY = DeviceBuffer::of(y), dDy = DeviceBuffer::of(dy);
    // A thread per row in index order: the CPU's bits.
    expectSame(runTwice<float>(want.size(),
                               [&](float *out) {
                                 return gpipe_rt_cuda_softmax_grad_f32(
                                     dY.get<float>(), dDy.get<float>(),
                                     s.data(), rankOf(s), axis, out);
                               }),
               want, "axis " + std::to_string(axis));
  }
}

TEST(CUDAKernels, LayerNormGrad) {
  REQUIRE_CUDA();
  std::vector<std::pair<Shape, int64_t>> cases = {
      {{4, 6, 5}, 1}, {{4, 6, 5}, 2}, {{3, 300}, 1}, {{0, 5}, 1}};
  uint32_t seed = 270;
  for (auto [s, axis] : cases) {
    int64_t rows = 1, n = 1;
    for (size_t d = 0; d < s.size(); ++d)
      (int64_t(d) < axis ? rows : n) *= s[d];
    std::vector<float> x = randomFloats(numel(s), seed++, -3.0f, 5.0f);
    std::vector<float> scale = randomFloats(n, seed++, 0.5f, 1.5f);
    std::vector<float> dy = randomFloats(numel(s), seed++);
    std::vector<float> dx(x.size()), ds(static_cast<size_t>(n)),
        db(static_cast<size_t>(n));
    ASSERT_EQ(gpipe_rt_cpu_layer_norm_grad_f32(
                  x.data(), s.data(), rankOf(s), axis, scale.data(), dy.data(),
                  1e-5f, dx.data(), ds.data(), db.data()),
              GPIPE_RT_SUCCESS);
    DeviceBuffer dX = DeviceBuffer::of(x), dS = DeviceBuffer::of(scale),
                 dDy = DeviceBuffer::of(dy);
    DeviceBuffer gotDs(size_t(n) * 4), gotDb(size_t(n) * 4);
    std::vector<float> gotDx = runTwice<float>(x.size(), [&](float *out) {
      return gpipe_rt_cuda_layer_norm_grad_f32(
          dX.get<float>(), s.data(), rankOf(s), axis, dS.get<float>(),
          dDy.get<float>(), 1e-5f, out, gotDs.get<float>(), gotDb.get<float>());
    });
    expectClose(gotDx, dx, 1e-5, 1e-5, "input grad");
    expectCloseToScale(gotDs.read<float>(), ds, "scale grad");
    // The bias gradient adds dy row by row in double, as the CPU does.
    expectSame(gotDb.read<float>(), db, "bias grad");
    // Only the bias gradient.
    DeviceBuffer onlyDb(size_t(n) * 4);
    ASSERT_EQ(gpipe_rt_cuda_layer_norm_grad_f32(
                  dX.get<float>(), s.data(), rankOf(s), axis, dS.get<float>(),
                  dDy.get<float>(), 1e-5f, nullptr, nullptr,
                  onlyDb.get<float>()),
              GPIPE_RT_SUCCESS);
    expectSame(onlyDb.read<float>(), db, "bias grad alone");
  }
}

TEST(CUDAKernels, GeluGrad) {
  REQUIRE_CUDA();
  std::vector<float> x = randomFloats(2000, 280, -6.0f, 6.0f);
  std::vector<float> g = randomFloats(2000, 281);
  std::vector<float> want(x.size());
  ASSERT_EQ(gpipe_rt_cpu_gelu_grad_f32(x.data(), g.data(), want.data(),
                                       int64_t(x.size())),
            GPIPE_RT_SUCCESS);
  DeviceBuffer dx = DeviceBuffer::of(x), dg = DeviceBuffer::of(g);
  std::vector<float> got = runTwice<float>(x.size(), [&](float *out) {
    return gpipe_rt_cuda_gelu_grad_f32(dx.get<float>(), dg.get<float>(), out,
                                       int64_t(x.size()));
  });
  // Double math rounded once: at most an ulp from CUDA's erf and exp.
  expectUlps(got, want, 1);
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

TEST(CUDAKernels, SgdAndAccumulate) {
  REQUIRE_CUDA();
  const int64_t n = 1000;
  std::vector<float> p = randomFloats(n, 290), g = randomFloats(n, 291);
  std::vector<float> want = p;
  gpipe_rt_cpu_sgd_update_f32(want.data(), g.data(), n, 0.037f);
  DeviceBuffer dp = DeviceBuffer::of(p), dg = DeviceBuffer::of(g);
  ASSERT_EQ(
      gpipe_rt_cuda_sgd_update_f32(dp.get<float>(), dg.get<float>(), n, 0.037f),
      GPIPE_RT_SUCCESS);
  expectSame(dp.read<float>(), want);

  std::vector<float> acc(size_t(n), 0.0f);
  DeviceBuffer dacc = DeviceBuffer::of(acc);
  for (int micro = 0; micro < 3; ++micro) {
    std::vector<float> grad = randomFloats(n, 300 + uint32_t(micro));
    gpipe_rt_cpu_accumulate_f32(acc.data(), grad.data(), n, micro == 0);
    DeviceBuffer dgrad = DeviceBuffer::of(grad);
    ASSERT_EQ(gpipe_rt_cuda_accumulate_f32(dacc.get<float>(),
                                           dgrad.get<float>(), n, micro == 0),
              GPIPE_RT_SUCCESS);
  }
  expectSame(dacc.read<float>(), acc);
}

/// Three steps of the engine's optimizer against the CUDA update.
void checkOptimizer(const gpipe::rt::OptimizerConfig &config) {
  const int64_t n = 777;
  std::vector<float> params = randomFloats(n, 310);
  std::vector<float> state(size_t(n * 2), 0.0f);
  DeviceBuffer dp = DeviceBuffer::of(params), ds = DeviceBuffer::of(state);
  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<float> grads = randomFloats(n, 320 + uint32_t(step));
    gpipe::rt::Status status = gpipe::rt::applyOptimizer(
        config, step, params.data(), grads.data(), state.data(), n);
    ASSERT_TRUE(status.ok()) << status.message();
    DeviceBuffer dg = DeviceBuffer::of(grads);
    gpipe_rt_status cuda;
    if (config.kind == gpipe::rt::OptimizerKind::Adam)
      cuda = gpipe_rt_cuda_adamw_update_f32(
          dp.get<float>(), dg.get<float>(), ds.get<float>(),
          ds.get<float>() + n, n, config.lr, config.beta1, config.beta2,
          config.eps, config.weightDecay, step);
    else
      cuda = gpipe_rt_cuda_momentum_update_f32(
          dp.get<float>(), dg.get<float>(), ds.get<float>(), n,
          float(config.lr), float(config.momentum), float(config.weightDecay),
          step);
    ASSERT_EQ(cuda, GPIPE_RT_SUCCESS) << gpipe_rt_cuda_last_error();
    expectSame(dp.read<float>(), params,
               "params at step " + std::to_string(step));
  }
  if (config.stateMultiple() > 0) {
    std::vector<float> got = ds.read<float>();
    got.resize(size_t(n * config.stateMultiple()));
    state.resize(got.size());
    expectSame(got, state, "optimizer state");
  }
}

TEST(CUDAKernels, Optimizers) {
  REQUIRE_CUDA();
  using gpipe::rt::OptimizerConfig;
  using gpipe::rt::OptimizerKind;
  OptimizerConfig sgd;
  sgd.kind = OptimizerKind::SGD;
  sgd.lr = 0.05;
  checkOptimizer(sgd);
  sgd.weightDecay = 0.01;
  checkOptimizer(sgd);
  OptimizerConfig momentum;
  momentum.kind = OptimizerKind::Momentum;
  momentum.lr = 0.05;
  momentum.momentum = 0.9;
  checkOptimizer(momentum);
  momentum.weightDecay = 0.02;
  checkOptimizer(momentum);
  OptimizerConfig adam;
  adam.kind = OptimizerKind::Adam;
  adam.lr = 1e-3;
  adam.weightDecay = 0.01;
  checkOptimizer(adam);
  adam.weightDecay = 0.0;
  adam.lr = 0.3;
  checkOptimizer(adam);
}

//===----------------------------------------------------------------------===//
// Parameter initialization and streams
//===----------------------------------------------------------------------===//

TEST(CUDAKernels, FillInit) {
  REQUIRE_CUDA();
  const int64_t n = 5000;
  for (int init = GPIPE_RT_INIT_ZEROS; init <= GPIPE_RT_INIT_UNIFORM; ++init) {
    std::vector<float> want(static_cast<size_t>(n));
    ASSERT_EQ(gpipe_rt_cpu_fill_init_f32(gpipe_rt_init(init), want.data(), n,
                                         0.5, 42, 4242),
              GPIPE_RT_SUCCESS);
    std::vector<float> got = runTwice<float>(size_t(n), [&](float *out) {
      return gpipe_rt_cuda_fill_init_f32(gpipe_rt_init(init), out, n, 0.5, 42,
                                         4242);
    });
    if (init == GPIPE_RT_INIT_NORMAL)
      expectUlps(got, want, 2, "normal");
    else
      expectSame(got, want, "init " + std::to_string(init));
  }
}

TEST(CUDAKernels, Dropout) {
  REQUIRE_CUDA();
  std::vector<float> in = randomFloats(5000, 12, -3.0f, 3.0f);
  DeviceBuffer din = DeviceBuffer::of(in);
  for (float ratio : {0.0f, 0.1f, 0.5f, 0.9f}) {
    std::vector<float> want(in.size());
    ASSERT_EQ(gpipe_rt_cpu_dropout_f32(in.data(), want.data(),
                                       int64_t(in.size()), ratio, 77, 5),
              GPIPE_RT_SUCCESS);
    std::vector<float> got = runTwice<float>(in.size(), [&](float *out) {
      return gpipe_rt_cuda_dropout_f32(din.get<float>(), out,
                                       int64_t(in.size()), ratio, 77, 5);
    });
    expectSame(got, want, "dropout " + std::to_string(ratio));
  }
}

TEST(CUDAKernels, Fill) {
  REQUIRE_CUDA();
  for (int64_t n : {0, 1, 4097}) {
    std::vector<float> want(static_cast<size_t>(n));
    ASSERT_EQ(gpipe_rt_cpu_fill_f32(want.data(), n, -2.5f), GPIPE_RT_SUCCESS);
    std::vector<float> got = runTwice<float>(size_t(n), [&](float *out) {
      return gpipe_rt_cuda_fill_f32(out, n, -2.5f);
    });
    expectSame(got, want, "fill of " + std::to_string(n));
  }
}

TEST(CUDAKernels, RunsOnTheThreadsStream) {
  REQUIRE_CUDA();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  ASSERT_EQ(gpipe_rt_cuda_set_stream(stream), GPIPE_RT_SUCCESS);
  Shape a{64, 32}, b{32, 16}, o{64, 16};
  std::vector<float> x = randomFloats(64 * 32, 330), w = randomFloats(512, 331);
  std::vector<float> want(64 * 16);
  gpipe_rt_cpu_matmul_f32(x.data(), a.data(), 2, w.data(), b.data(), 2, 0, 0,
                          want.data(), o.data(), 2);
  DeviceBuffer dx = DeviceBuffer::of(x), dw = DeviceBuffer::of(w),
               dout(want.size() * 4), dsum(16 * 4);
  ASSERT_EQ(gpipe_rt_cuda_matmul_f32(dx.get<float>(), a.data(), 2,
                                     dw.get<float>(), b.data(), 2, 0, 0,
                                     dout.get<float>(), o.data(), 2),
            GPIPE_RT_SUCCESS);
  Shape rows{0};
  ASSERT_EQ(gpipe_rt_cuda_reduce_sum_f32(dout.get<float>(), o.data(), 2,
                                         rows.data(), 1, dsum.get<float>()),
            GPIPE_RT_SUCCESS);
  // read() checks (and so waits for) the thread's stream.
  expectCloseToScale(dout.read<float>(), want);
  std::vector<float> wantSum(16);
  gpipe_rt_cpu_reduce_sum_f32(want.data(), o.data(), 2, rows.data(), 1,
                              wantSum.data());
  expectCloseToScale(dsum.read<float>(), wantSum);
  ASSERT_EQ(gpipe_rt_cuda_set_stream(nullptr), GPIPE_RT_SUCCESS);
  cudaStreamDestroy(stream);
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch normalization
//===----------------------------------------------------------------------===//

TEST(CUDAValidation, ConvPoolAndBatchNorm) {
  Shape in{1, 4, 6, 6}, w{4, 2, 3, 3}, out{1, 4, 4, 4}, badOut{1, 4, 5, 4};
  int64_t s[2] = {1, 1}, zero[2] = {0, 1}, p[4] = {0, 0, 0, 0},
          negPad[4] = {0, 0, -1, 0}, d[2] = {1, 1}, k[2] = {3, 3};
  expectSameFailure(
      gpipe_rt_cpu_conv2d_f32(nullptr, in.data(), nullptr, w.data(), nullptr,
                              zero, p, d, 2, nullptr, out.data()),
      gpipe_rt_cuda_conv2d_f32(nullptr, in.data(), nullptr, w.data(), nullptr,
                               zero, p, d, 2, nullptr, out.data()));
  expectSameFailure(
      gpipe_rt_cpu_conv2d_f32(nullptr, in.data(), nullptr, w.data(), nullptr, s,
                              p, d, 3, nullptr, out.data()),
      gpipe_rt_cuda_conv2d_f32(nullptr, in.data(), nullptr, w.data(), nullptr,
                               s, p, d, 3, nullptr, out.data()));
  expectSameFailure(gpipe_rt_cpu_conv2d_grad_f32(
                        nullptr, in.data(), nullptr, w.data(), nullptr,
                        badOut.data(), s, p, d, 2, nullptr, nullptr, nullptr),
                    gpipe_rt_cuda_conv2d_grad_f32(
                        nullptr, in.data(), nullptr, w.data(), nullptr,
                        badOut.data(), s, p, d, 2, nullptr, nullptr, nullptr));
  expectSameFailure(gpipe_rt_cpu_max_pool2d_f32(nullptr, in.data(), k, s,
                                                negPad, d, nullptr, out.data()),
                    gpipe_rt_cuda_max_pool2d_f32(nullptr, in.data(), k, s,
                                                 negPad, d, nullptr,
                                                 out.data()));
  expectSameFailure(
      gpipe_rt_cpu_max_pool2d_grad_f32(nullptr, in.data(), nullptr, out.data(),
                                       k, s, p, d, nullptr),
      gpipe_rt_cuda_max_pool2d_grad_f32(nullptr, in.data(), nullptr, out.data(),
                                        k, s, p, d, nullptr));
  expectSameFailure(gpipe_rt_cpu_avg_pool2d_f32(nullptr, in.data(), k, s, p, 0,
                                                nullptr, badOut.data()),
                    gpipe_rt_cuda_avg_pool2d_f32(nullptr, in.data(), k, s, p, 0,
                                                 nullptr, badOut.data()));
  expectSameFailure(
      gpipe_rt_cpu_avg_pool2d_grad_f32(nullptr, out.data(), zero, s, p, 1,
                                       nullptr, in.data()),
      gpipe_rt_cuda_avg_pool2d_grad_f32(nullptr, out.data(), zero, s, p, 1,
                                        nullptr, in.data()));
  Shape vec{4};
  expectSameFailure(gpipe_rt_cpu_batch_norm_f32(nullptr, vec.data(), 1, nullptr,
                                                nullptr, 1e-5f, nullptr),
                    gpipe_rt_cuda_batch_norm_f32(nullptr, vec.data(), 1,
                                                 nullptr, nullptr, 1e-5f,
                                                 nullptr));
  expectSameFailure(gpipe_rt_cpu_batch_norm_grad_f32(
                        nullptr, in.data(), 4, nullptr, nullptr, 1e-5f, nullptr,
                        nullptr, nullptr, nullptr, nullptr, nullptr),
                    gpipe_rt_cuda_batch_norm_grad_f32(
                        nullptr, in.data(), 4, nullptr, nullptr, 1e-5f, nullptr,
                        nullptr, nullptr, nullptr, nullptr, nullptr));
  expectSameFailure(gpipe_rt_cpu_running_stats_update_f32(
                        nullptr, nullptr, nullptr, nullptr, 0, 1, 0.1),
                    gpipe_rt_cuda_running_stats_update_f32(
                        nullptr, nullptr, nullptr, nullptr, 0, 1, 0.1));
}

/// A convolution: input, output channels, kernel, strides, pads [top, left,
/// bottom, right], dilations, groups, and whether a bias is added.
struct ConvConfig {
  Shape in;
  int64_t outC;
  int64_t k[2], s[2], p[4], d[2];
  int64_t groups;
  bool bias;

  /// Floor-mode output sizes, or ceil mode.
  Shape outShape(bool ceilMode = false) const {
    Shape out{in[0], outC, 0, 0};
    for (int a = 0; a < 2; ++a) {
      int64_t span = in[2 + a] + p[a] + p[a + 2] - ((k[a] - 1) * d[a] + 1);
      int64_t o = (ceilMode ? (span + s[a] - 1) / s[a] : span / s[a]) + 1;
      if (ceilMode && (o - 1) * s[a] >= in[2 + a] + p[a])
        --o;
      out[size_t(2 + a)] = o;
    }
    return out;
  }
};

const std::vector<ConvConfig> kConvConfigs = {
    {{2, 3, 9, 7}, 4, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {{2, 4, 8, 6}, 6, {3, 3}, {2, 2}, {0, 1, 2, 1}, {1, 1}, 2, false},
    {{1, 3, 9, 10}, 3, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 3, true},
    {{2, 5, 5, 4}, 3, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true},
    {{1, 2, 11, 13}, 4, {7, 7}, {2, 2}, {3, 3, 3, 3}, {1, 1}, 1, true},
    {{3, 16, 12, 12}, 32, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
};

TEST(CUDAKernels, Conv2dAndGrad) {
  REQUIRE_CUDA();
  uint32_t seed = 400;
  for (const ConvConfig &c : kConvConfigs) {
    Shape w{c.outC, c.in[1] / c.groups, c.k[0], c.k[1]};
    Shape out = c.outShape();
    std::vector<float> x = randomFloats(numel(c.in), seed++);
    std::vector<float> wv = randomFloats(numel(w), seed++);
    std::vector<float> b = randomFloats(c.outC, seed++);
    std::vector<float> dy = randomFloats(numel(out), seed++);
    const float *bias = c.bias ? b.data() : nullptr;
    std::vector<float> want(size_t(numel(out))), wantDx(x.size()),
        wantDw(wv.size()), wantDb(size_t(c.outC));
    ASSERT_EQ(gpipe_rt_cpu_conv2d_f32(x.data(), c.in.data(), wv.data(),
                                      w.data(), bias, c.s, c.p, c.d, c.groups,
                                      want.data(), out.data()),
              GPIPE_RT_SUCCESS)
        << gpipe_rt_last_error();
    ASSERT_EQ(gpipe_rt_cpu_conv2d_grad_f32(x.data(), c.in.data(), wv.data(),
                                           w.data(), dy.data(), out.data(), c.s,
                                           c.p, c.d, c.groups, wantDx.data(),
                                           wantDw.data(), wantDb.data()),
              GPIPE_RT_SUCCESS)
        << gpipe_rt_last_error();
    DeviceBuffer dX = DeviceBuffer::of(x), dW = DeviceBuffer::of(wv),
                 dB = DeviceBuffer::of(b), dDy = DeviceBuffer::of(dy);
    std::vector<float> got = runTwice<float>(want.size(), [&](float *o) {
      return gpipe_rt_cuda_conv2d_f32(dX.get<float>(), c.in.data(),
                                      dW.get<float>(), w.data(),
                                      c.bias ? dB.get<float>() : nullptr, c.s,
                                      c.p, c.d, c.groups, o, out.data());
    });
    expectCloseToScale(got, want, "conv2d");
    DeviceBuffer gotDw(wv.size() * 4), gotDb(b.size() * 4);
    std::vector<float> gotDx = runTwice<float>(x.size(), [&](float *o) {
      return gpipe_rt_cuda_conv2d_grad_f32(
          dX.get<float>(), c.in.data(), dW.get<float>(), w.data(),
          dDy.get<float>(), out.data(), c.s, c.p, c.d, c.groups, o,
          gotDw.get<float>(), gotDb.get<float>());
    });
    expectCloseToScale(gotDx, wantDx, "conv2d input grad");
    expectCloseToScale(gotDw.read<float>(), wantDw, "conv2d weight grad");
    expectCloseToScale(gotDb.read<float>(), wantDb, "conv2d bias grad");
  }
}

/// An image's results on the GPU are the same bits alone and in a batch.
TEST(CUDAKernels, Conv2dImageIndependentOfBatch) {
  REQUIRE_CUDA();
  ConvConfig c = kConvConfigs[1];
  Shape w{c.outC, c.in[1] / c.groups, c.k[0], c.k[1]};
  ConvConfig one = c, four = c;
  one.in[0] = 1;
  four.in[0] = 4;
  Shape outOne = one.outShape(), outFour = four.outShape();
  std::vector<float> x4 = randomFloats(numel(four.in), 410);
  std::vector<float> wv = randomFloats(numel(w), 411);
  int64_t img = numel(one.in), imgOut = numel(outOne);
  std::vector<float> x1(x4.begin() + 3 * img, x4.begin() + 4 * img);
  DeviceBuffer dX1 = DeviceBuffer::of(x1), dX4 = DeviceBuffer::of(x4),
               dW = DeviceBuffer::of(wv);
  std::vector<float> y1 = runTwice<float>(size_t(imgOut), [&](float *o) {
    return gpipe_rt_cuda_conv2d_f32(dX1.get<float>(), one.in.data(),
                                    dW.get<float>(), w.data(), nullptr, c.s,
                                    c.p, c.d, c.groups, o, outOne.data());
  });
  std::vector<float> y4 =
      runTwice<float>(size_t(numel(outFour)), [&](float *o) {
        return gpipe_rt_cuda_conv2d_f32(dX4.get<float>(), four.in.data(),
                                        dW.get<float>(), w.data(), nullptr, c.s,
                                        c.p, c.d, c.groups, o, outFour.data());
      });
  expectSame(y1, std::vector<float>(y4.begin() + 3 * imgOut, y4.end()),
             "image 3 of 4");
}

TEST(CUDAKernels, Pool2dAndGrad) {
  REQUIRE_CUDA();
  struct PoolConfig {
    Shape in;
    int64_t k[2], s[2], p[4], d[2];
    bool ceilMode;
  };
  const std::vector<PoolConfig> configs = {
      {{2, 3, 6, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
      {{2, 2, 7, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {{1, 2, 8, 7}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
      {{2, 1, 5, 6}, {2, 3}, {2, 2}, {1, 0, 0, 2}, {1, 1}, true},
      {{1, 2, 9, 8}, {3, 2}, {1, 2}, {1, 0, 1, 1}, {2, 2}, true},
  };
  uint32_t seed = 420;
  for (const PoolConfig &pc : configs) {
    ConvConfig geometry{pc.in,
                        pc.in[1],
                        {pc.k[0], pc.k[1]},
                        {pc.s[0], pc.s[1]},
                        {pc.p[0], pc.p[1], pc.p[2], pc.p[3]},
                        {pc.d[0], pc.d[1]},
                        1,
                        false};
    Shape out = geometry.outShape(pc.ceilMode);
    std::vector<float> x = randomFloats(numel(pc.in), seed++);
    // Ties: a few repeated values.
    for (size_t i = 0; i < x.size(); i += 5)
      x[i] = 0.5f;
    std::vector<float> dy = randomFloats(numel(out), seed++);
    DeviceBuffer dX = DeviceBuffer::of(x), dDy = DeviceBuffer::of(dy);
    std::vector<float> want(size_t(numel(out))), wantDx(x.size());
    ASSERT_EQ(gpipe_rt_cpu_max_pool2d_f32(x.data(), pc.in.data(), pc.k, pc.s,
                                          pc.p, pc.d, want.data(), out.data()),
              GPIPE_RT_SUCCESS)
        << gpipe_rt_last_error();
    ASSERT_EQ(gpipe_rt_cpu_max_pool2d_grad_f32(x.data(), pc.in.data(),
                                               dy.data(), out.data(), pc.k,
                                               pc.s, pc.p, pc.d, wantDx.data()),
              GPIPE_RT_SUCCESS)
        << gpipe_rt_last_error();
    expectSame(runTwice<float>(want.size(),
                               [&](float *o) {
                                 return gpipe_rt_cuda_max_pool2d_f32(
                                     dX.get<float>(), pc.in.data(), pc.k, pc.s,
                                     pc.p, pc.d, o, out.data());
                               }),
               want, "max_pool2d");
    expectSame(runTwice<float>(x.size(),
                               [&](float *o) {
                                 return gpipe_rt_cuda_max_pool2d_grad_f32(
                                     dX.get<float>(), pc.in.data(),
                                     dDy.get<float>(), out.data(), pc.k, pc.s,
                                     pc.p, pc.d, o);
                               }),
               wantDx, "max_pool2d_grad");
    if (pc.d[0] != 1 || pc.d[1] != 1)
      continue; // average pooling has no dilations
    for (int32_t includePad : {0, 1}) {
      ASSERT_EQ(gpipe_rt_cpu_avg_pool2d_f32(x.data(), pc.in.data(), pc.k, pc.s,
                                            pc.p, includePad, want.data(),
                                            out.data()),
                GPIPE_RT_SUCCESS)
          << gpipe_rt_last_error();
      ASSERT_EQ(gpipe_rt_cpu_avg_pool2d_grad_f32(dy.data(), out.data(), pc.k,
                                                 pc.s, pc.p, includePad,
                                                 wantDx.data(), pc.in.data()),
                GPIPE_RT_SUCCESS)
          << gpipe_rt_last_error();
      expectSame(runTwice<float>(want.size(),
                                 [&](float *o) {
                                   return gpipe_rt_cuda_avg_pool2d_f32(
                                       dX.get<float>(), pc.in.data(), pc.k,
                                       pc.s, pc.p, includePad, o, out.data());
                                 }),
                 want, "avg_pool2d");
      expectSame(runTwice<float>(x.size(),
                                 [&](float *o) {
                                   return gpipe_rt_cuda_avg_pool2d_grad_f32(
                                       dDy.get<float>(), out.data(), pc.k, pc.s,
                                       pc.p, includePad, o, pc.in.data());
                                 }),
                 wantDx, "avg_pool2d_grad");
    }
  }
}

TEST(CUDAKernels, BatchNormAndGrad) {
  REQUIRE_CUDA();
  uint32_t seed = 440;
  for (const Shape &s :
       {Shape{4, 3, 5, 6}, Shape{2, 5}, Shape{8, 16, 20, 20}, Shape{0, 3, 2}}) {
    int64_t c = s[1];
    std::vector<float> x = randomFloats(numel(s), seed++, -3.0f, 5.0f);
    std::vector<float> dy = randomFloats(numel(s), seed++);
    std::vector<float> scale = randomFloats(c, seed++, 0.5f, 1.5f);
    std::vector<float> bias = randomFloats(c, seed++);
    std::vector<float> shift = randomFloats(c, seed++);
    size_t nc = static_cast<size_t>(c);
    std::vector<float> want(x.size()), wantDx(x.size()), wantDs(nc), wantDb(nc),
        wantMean(nc), wantVar(nc);
    ASSERT_EQ(gpipe_rt_cpu_batch_norm_f32(x.data(), s.data(), rankOf(s),
                                          scale.data(), bias.data(), 1e-5f,
                                          want.data()),
              GPIPE_RT_SUCCESS)
        << gpipe_rt_last_error();
    ASSERT_EQ(gpipe_rt_cpu_batch_norm_grad_f32(
                  x.data(), s.data(), rankOf(s), scale.data(), dy.data(), 1e-5f,
                  shift.data(), wantDx.data(), wantDs.data(), wantDb.data(),
                  wantMean.data(), wantVar.data()),
              GPIPE_RT_SUCCESS)
        << gpipe_rt_last_error();
    DeviceBuffer dX = DeviceBuffer::of(x), dDy = DeviceBuffer::of(dy),
                 dS = DeviceBuffer::of(scale), dB = DeviceBuffer::of(bias),
                 dShift = DeviceBuffer::of(shift);
    std::vector<float> got = runTwice<float>(x.size(), [&](float *o) {
      return gpipe_rt_cuda_batch_norm_f32(dX.get<float>(), s.data(), rankOf(s),
                                          dS.get<float>(), dB.get<float>(),
                                          1e-5f, o);
    });
    expectClose(got, want, 1e-5, 1e-5, "batch_norm");
    DeviceBuffer ds(nc * 4), db(nc * 4), mean(nc * 4), var(nc * 4);
    std::vector<float> gotDx = runTwice<float>(x.size(), [&](float *o) {
      return gpipe_rt_cuda_batch_norm_grad_f32(
          dX.get<float>(), s.data(), rankOf(s), dS.get<float>(),
          dDy.get<float>(), 1e-5f, dShift.get<float>(), o, ds.get<float>(),
          db.get<float>(), mean.get<float>(), var.get<float>());
    });
    expectCloseToScale(gotDx, wantDx, "batch_norm_grad input");
    expectCloseToScale(ds.read<float>(), wantDs, "batch_norm_grad scale");
    expectCloseToScale(db.read<float>(), wantDb, "batch_norm_grad bias");
    expectCloseToScale(mean.read<float>(), wantMean, "mean stat");
    expectCloseToScale(var.read<float>(), wantVar, "var stat");
  }
}

TEST(CUDAKernels, RunningStatsUpdate) {
  REQUIRE_CUDA();
  const int64_t channels = 300;
  std::vector<float> mean = randomFloats(channels, 450);
  std::vector<float> var = randomFloats(channels, 451, 0.5f, 2.0f);
  std::vector<float> meanStat = randomFloats(channels, 452, -5.0f, 5.0f);
  std::vector<float> varStat = randomFloats(channels, 453, 30.0f, 60.0f);
  std::vector<float> wantMean = mean, wantVar = var;
  ASSERT_EQ(gpipe_rt_cpu_running_stats_update_f32(
                wantMean.data(), wantVar.data(), meanStat.data(),
                varStat.data(), channels, 24, 0.1),
            GPIPE_RT_SUCCESS)
      << gpipe_rt_last_error();
  DeviceBuffer dMean = DeviceBuffer::of(mean), dVar = DeviceBuffer::of(var),
               dMs = DeviceBuffer::of(meanStat),
               dVs = DeviceBuffer::of(varStat);
  ASSERT_EQ(gpipe_rt_cuda_running_stats_update_f32(
                dMean.get<float>(), dVar.get<float>(), dMs.get<float>(),
                dVs.get<float>(), channels, 24, 0.1),
            GPIPE_RT_SUCCESS)
      << gpipe_rt_cuda_last_error();
  // The same double formula, rounded once: the CPU's bits.
  expectSame(dMean.read<float>(), wantMean, "running mean");
  expectSame(dVar.read<float>(), wantVar, "running var");
}

} // namespace
