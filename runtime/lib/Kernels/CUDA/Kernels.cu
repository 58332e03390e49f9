//===- Kernels.cu - CUDA kernels for the nn ops -----------------*- C++ -*-===//
//
// The CUDA backend's kernels behind the C ABI of CUDAKernels.h. Each entry
// point validates its host-side arguments with the checks it shares with its
// CPU counterpart (Common/KernelArgs.h: same checks, same messages, stored
// in this library's own thread-local message that gpipe_rt_cuda_last_error()
// reads), collapses the iteration space on the host into a few dims with
// per-operand strides, and enqueues one or a few kernels on the calling
// thread's current stream; nothing synchronizes.
//
// Determinism: no reduction uses atomics or a launch-dependent order. Row
// statistics run a warp per row (each lane adds its strided elements in
// index order, then a butterfly whose every step is commutative, so all
// lanes agree), sums along a strided axis run a thread per row in index
// order, and whole-tensor sums use one block of a fixed size with a fixed
// tree. Sums are in double where the CPU's are. The only atomic is an
// atomicMin that finds the first out-of-range index for the error record;
// it does not touch any result.
//
// Data-dependent errors: an index or label check kernel records the lowest
// failing position of a launch, and a one-thread kernel queued after it
// moves that into the thread's device-side error record (keeping the first
// error), together with the shapes needed for the message.
// gpipe_rt_cuda_check() reads the record back.
//
// The library builds with --fmad=false, so float expressions round every
// operation as the CPU kernels (built with -ffp-contract=off) do.
//
// The entry points are defined against the prototypes CUDAKernels.h expands
// from Kernels.def: a definition whose parameters differ from the .def's
// conflicts with its C declaration and does not compile.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CUDAKernels.h"

#include "Common/KernelArgs.h"
#include "Common/Remainders.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace gpipe::rt::cuda {
namespace {

using namespace args;

/// Threads per block of every elementwise kernel and of the per-row
/// kernels (8 warps, one row each).
constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
/// Threads of the single-block whole-tensor sums.
constexpr int kSumThreads = 1024;
/// Above this many blocks, kernels loop over their elements.
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// The message of the last failing call on this thread, read by
/// gpipe_rt_cuda_last_error (the CPU kernels keep their own).
thread_local std::string lastError;

/// `name` for the shared checks: its failures go to lastError.
Kernel cudaKernel(const char *name) { return Kernel{name, &lastError}; }

gpipe_rt_status cudaFailure(const Kernel &kernel, const char *what,
                            cudaError_t error) {
  return Error(GPIPE_RT_BLAS_ERROR, kernel)
         << what << " failed: " << cudaGetErrorName(error) << ": "
         << cudaGetErrorString(error);
}

gpipe_rt_status checkCuda(const Kernel &kernel, const char *what,
                          cudaError_t error) {
  if (error != cudaSuccess)
    return cudaFailure(kernel, what, error);
  return GPIPE_RT_SUCCESS;
}

/// Reports a failed kernel launch (bad configuration, no device, ...).
gpipe_rt_status launched(const Kernel &kernel) {
  return checkCuda(kernel, "kernel launch", cudaGetLastError());
}

//===----------------------------------------------------------------------===//
// Iteration plans (StridedPlan, shared with the CPU kernels)
//===----------------------------------------------------------------------===//

/// Offsets (in elements) of every operand at row-major position `flat`.
template <int N>
__device__ __forceinline__ void
planOffsets(const StridedPlan<N> &plan, int64_t flat, int64_t (&offsets)[N]) {
  for (int k = 0; k < N; ++k)
    offsets[k] = 0;
  for (int32_t d = plan.rank - 1; d >= 0; --d) {
    int64_t n = plan.dims[d];
    int64_t i = flat % n;
    flat /= n;
    for (int k = 0; k < N; ++k)
      offsets[k] += i * plan.strides[k][d];
  }
}

#define GPIPE_RT_GRID_LOOP(i, n)                                               \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);    \
       i += int64_t(gridDim.x) * blockDim.x)

unsigned blocksFor(int64_t n) {
  return unsigned(std::min<int64_t>((n + kThreads - 1) / kThreads, kMaxBlocks));
}

unsigned blocksForRows(int64_t rows) {
  return unsigned(std::min<int64_t>(
      (rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kMaxBlocks));
}

//===----------------------------------------------------------------------===//
// Threads' streams, cuBLAS handles and error records
//===----------------------------------------------------------------------===//

/// What an index check kernel needs to phrase its message later.
enum IndexKernel : int32_t {
  kGather = 1,
  kGatherGrad = 2,
  kCrossEntropy = 3,
  kCrossEntropyGrad = 4,
};

struct IndexErrorInfo {
  int32_t kernel = 0;
  /// The shape positions are reported in (indices, or the label rows).
  int32_t rank = 0;
  int64_t dims[kMaxRank] = {};
  /// The indexed tensor (gather's data, gather_grad's result).
  int32_t otherRank = 0;
  int64_t otherDims[kMaxRank] = {};
  int64_t bound = 0;
  int64_t axis = 0;
};

/// A thread's device-side error record (one per device it used).
struct ErrorRecord {
  /// Lowest failing position of the last checked launch; ~0 for none.
  unsigned long long pending;
  int32_t failed;
  int64_t value;
  int64_t position;
  IndexErrorInfo info;
};

ErrorRecord cleanRecord() {
  ErrorRecord r;
  std::memset(&r, 0, sizeof(r));
  r.pending = ~0ull;
  return r;
}

struct DeviceState {
  cublasHandle_t blas = nullptr;
  cudaStream_t blasStream = nullptr;
  ErrorRecord *record = nullptr;
};

struct ThreadState {
  cudaStream_t stream = nullptr;
  std::vector<DeviceState> devices;

  ~ThreadState() {
    for (size_t d = 0; d < devices.size(); ++d) {
      if (!devices[d].blas && !devices[d].record)
        continue;
      if (cudaSetDevice(int(d)) != cudaSuccess)
        continue;
      if (devices[d].blas)
        cublasDestroy(devices[d].blas);
      if (devices[d].record)
        cudaFree(devices[d].record);
    }
  }
};

thread_local ThreadState threadState;

cudaStream_t currentStream() { return threadState.stream; }

gpipe_rt_status deviceState(const Kernel &kernel, DeviceState *&state) {
  int device = 0;
  GPIPE_RT_TRY(checkCuda(kernel, "cudaGetDevice", cudaGetDevice(&device)));
  if (size_t(device) >= threadState.devices.size())
    threadState.devices.resize(size_t(device) + 1);
  state = &threadState.devices[size_t(device)];
  return GPIPE_RT_SUCCESS;
}

const char *blasStatusText(cublasStatus_t status) {
  return cublasGetStatusString(status);
}

/// This thread's cuBLAS handle for the current device, bound to the current
/// stream; created on first use, in full fp32 (no TF32) without atomics.
gpipe_rt_status blasHandle(const Kernel &kernel, cublasHandle_t &handle) {
  DeviceState *state = nullptr;
  GPIPE_RT_TRY(deviceState(kernel, state));
  if (!state->blas) {
    cublasStatus_t status = cublasCreate(&state->blas);
    if (status != CUBLAS_STATUS_SUCCESS) {
      state->blas = nullptr;
      return Error(GPIPE_RT_BLAS_ERROR, kernel)
             << "cublasCreate failed: " << blasStatusText(status);
    }
    cublasSetMathMode(state->blas, CUBLAS_DEFAULT_MATH);
    cublasSetAtomicsMode(state->blas, CUBLAS_ATOMICS_NOT_ALLOWED);
    cublasSetPointerMode(state->blas, CUBLAS_POINTER_MODE_HOST);
    state->blasStream = nullptr;
    cublasSetStream(state->blas, nullptr);
  }
  if (state->blasStream != currentStream()) {
    cublasStatus_t status = cublasSetStream(state->blas, currentStream());
    if (status != CUBLAS_STATUS_SUCCESS)
      return Error(GPIPE_RT_BLAS_ERROR, kernel)
             << "cublasSetStream failed: " << blasStatusText(status);
    state->blasStream = currentStream();
  }
  handle = state->blas;
  return GPIPE_RT_SUCCESS;
}

/// This thread's error record on the current device, allocated and cleared
/// on first use.
gpipe_rt_status errorRecord(const Kernel &kernel, ErrorRecord *&record) {
  DeviceState *state = nullptr;
  GPIPE_RT_TRY(deviceState(kernel, state));
  if (!state->record) {
    void *ptr = nullptr;
    GPIPE_RT_TRY(checkCuda(kernel, "cudaMalloc of the error record",
                           cudaMalloc(&ptr, sizeof(ErrorRecord))));
    // Cleared on this thread's stream and waited for: a plain cudaMemcpy
    // from pageable memory may still be in flight when it returns, and the
    // thread's stream (non-blocking) would not wait for it.
    ErrorRecord clean = cleanRecord();
    cudaError_t error = cudaMemcpyAsync(
        ptr, &clean, sizeof(clean), cudaMemcpyHostToDevice, currentStream());
    if (error == cudaSuccess)
      error = cudaStreamSynchronize(currentStream());
    if (error != cudaSuccess) {
      cudaFree(ptr);
      return cudaFailure(kernel, "clearing the error record", error);
    }
    state->record = static_cast<ErrorRecord *>(ptr);
  }
  record = state->record;
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Stream-ordered scratch memory
//===----------------------------------------------------------------------===//

/// A device buffer allocated and freed in stream order.
class Scratch {
public:
  ~Scratch() {
    if (ptr)
      cudaFreeAsync(ptr, currentStream());
  }
  gpipe_rt_status allocate(const Kernel &kernel, size_t bytes) {
    if (bytes == 0)
      return GPIPE_RT_SUCCESS;
    return checkCuda(kernel, "cudaMallocAsync of scratch memory",
                     cudaMallocAsync(&ptr, bytes, currentStream()));
  }
  template <typename T> T *as() const { return static_cast<T *>(ptr); }

private:
  void *ptr = nullptr;
};

//===----------------------------------------------------------------------===//
// Device helpers
//===----------------------------------------------------------------------===//

__device__ __forceinline__ int64_t loadIndex(const void *indices, bool wide,
                                             int64_t i) {
  return wide ? static_cast<const int64_t *>(indices)[i]
              : int64_t(static_cast<const int32_t *>(indices)[i]);
}

/// Sum over the warp; every step adds a pair of lanes' values both ways
/// round, which addition's commutativity makes equal, so every lane ends
/// with the same bits.
__device__ __forceinline__ double warpSum(double v) {
  for (int s = 16; s > 0; s >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, s);
  return v;
}

/// Max over the warp, ignoring NaN as the CPU's sequential max does.
__device__ __forceinline__ float warpMax(float v) {
  for (int s = 16; s > 0; s >>= 1) {
    float o = __shfl_xor_sync(0xffffffffu, v, s);
    v = o > v ? o : v;
  }
  return v;
}

/// Sum over a block of `Threads` threads in a fixed tree; every thread gets
/// the result.
template <int Threads> __device__ double blockSum(double v, double *shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = Threads / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s)
      shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  double r = shared[0];
  __syncthreads();
  return r;
}

/// Rows handled by a warp-per-row kernel: `row` runs over the warp's rows.
#define GPIPE_RT_WARP_ROWS(row, rows)                                          \
  for (int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;  \
       row < (rows); row += int64_t(gridDim.x) * kWarpsPerBlock)

//===----------------------------------------------------------------------===//
// Index checks
//===----------------------------------------------------------------------===//

__global__ void findBadIndexKernel(const void *indices, bool wide,
                                   int64_t count, int64_t bound,
                                   ErrorRecord *record) {
  GPIPE_RT_GRID_LOOP(i, count) {
    int64_t v = loadIndex(indices, wide, i);
    if (v < 0 || v >= bound)
      atomicMin(&record->pending, (unsigned long long)i);
  }
}

__global__ void recordBadIndexKernel(const void *indices, bool wide,
                                     ErrorRecord *record, IndexErrorInfo info) {
  unsigned long long pending = record->pending;
  if (pending == ~0ull)
    return;
  record->pending = ~0ull;
  if (record->failed)
    return;
  record->failed = 1;
  record->position = int64_t(pending);
  record->value = loadIndex(indices, wide, int64_t(pending));
  record->info = info;
}

/// Enqueues the check that every one of `count` indices lies in [0, bound);
/// the first that does not is reported by gpipe_rt_cuda_check.
gpipe_rt_status checkIndices(const Kernel &kernel, gpipe_rt_dtype type,
                             const void *indices, int64_t count, int64_t bound,
                             const IndexErrorInfo &info) {
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  ErrorRecord *record = nullptr;
  GPIPE_RT_TRY(errorRecord(kernel, record));
  bool wide = type == GPIPE_RT_I64;
  findBadIndexKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(
      indices, wide, count, bound, record);
  GPIPE_RT_TRY(launched(kernel));
  recordBadIndexKernel<<<1, 1, 0, currentStream()>>>(indices, wide, record,
                                                     info);
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void stridedCopyKernel(T *dst, const T *src, StridedPlan<2> plan,
                                  int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    int64_t off[2];
    planOffsets(plan, i, off);
    dst[off[0]] = src[off[1]];
  }
}

/// Copies the `space`-shaped elements at `src` (strides `srcStrides`) to
/// `dst` (strides `dstStrides`), elements of `elemSize` bytes.
gpipe_rt_status stridedCopy(const Kernel &kernel, size_t elemSize,
                            const Shape &space, void *dst,
                            const int64_t *dstStrides, const void *src,
                            const int64_t *srcStrides) {
  if (space.numElements == 0)
    return GPIPE_RT_SUCCESS;
  int64_t strides[2][kMaxRank];
  std::copy(dstStrides, dstStrides + space.rank, strides[0]);
  std::copy(srcStrides, srcStrides + space.rank, strides[1]);
  StridedPlan<2> plan = collapse(space, strides);
  int64_t n = space.numElements;
  unsigned blocks = blocksFor(n);
  cudaStream_t stream = currentStream();
  withBitsType(elemSize, [&](auto zero) {
    using T = decltype(zero);
    stridedCopyKernel<<<blocks, kThreads, 0, stream>>>(
        static_cast<T *>(dst), static_cast<const T *>(src), plan, n);
  });
  return launched(kernel);
}

/// memmove of `bytes` device bytes in stream order (overlap goes through a
/// scratch copy).
gpipe_rt_status moveBytes(const Kernel &kernel, void *dst, const void *src,
                          size_t bytes) {
  if (bytes == 0 || dst == src)
    return GPIPE_RT_SUCCESS;
  const char *d = static_cast<const char *>(dst);
  const char *s = static_cast<const char *>(src);
  bool overlap = d < s + bytes && s < d + bytes;
  cudaStream_t stream = currentStream();
  if (!overlap)
    return checkCuda(
        kernel, "cudaMemcpyAsync",
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  Scratch tmp;
  GPIPE_RT_TRY(tmp.allocate(kernel, bytes));
  GPIPE_RT_TRY(checkCuda(kernel, "cudaMemcpyAsync",
                         cudaMemcpyAsync(tmp.as<void>(), src, bytes,
                                         cudaMemcpyDeviceToDevice, stream)));
  return checkCuda(kernel, "cudaMemcpyAsync",
                   cudaMemcpyAsync(dst, tmp.as<void>(), bytes,
                                   cudaMemcpyDeviceToDevice, stream));
}

//===----------------------------------------------------------------------===//
// Elementwise kernels
//===----------------------------------------------------------------------===//

__global__ void binaryKernel(int op, const float *lhs, const float *rhs,
                             float *out, StridedPlan<3> plan, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    int64_t off[3];
    planOffsets(plan, i, off);
    float a = lhs[off[1]], b = rhs[off[2]], r;
    switch (op) {
    case GPIPE_RT_ADD:
      r = __fadd_rn(a, b);
      break;
    case GPIPE_RT_SUB:
      r = __fsub_rn(a, b);
      break;
    case GPIPE_RT_MUL:
      r = __fmul_rn(a, b);
      break;
    case GPIPE_RT_DIV:
      r = __fdiv_rn(a, b);
      break;
    case GPIPE_RT_MAX:
      r = a != a ? a : b != b ? b : (a < b ? b : a);
      break;
    case GPIPE_RT_MIN:
      r = a != a ? a : b != b ? b : (b < a ? b : a);
      break;
    case GPIPE_RT_REMAINDER:
      r = math::floorRemainder(a, b);
      break;
    case GPIPE_RT_FMOD:
      r = fmodf(a, b);
      break;
    default:
      r = math::floatPower(a, b);
      break;
    }
    out[off[0]] = r;
  }
}

__global__ void binaryI64Kernel(int op, const int64_t *lhs, const int64_t *rhs,
                                int64_t *out, StridedPlan<3> plan, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    int64_t off[3];
    planOffsets(plan, i, off);
    int64_t a = lhs[off[1]], b = rhs[off[2]], r;
    switch (op) {
    case GPIPE_RT_ADD:
      r = int64_t(uint64_t(a) + uint64_t(b));
      break;
    case GPIPE_RT_SUB:
      r = int64_t(uint64_t(a) - uint64_t(b));
      break;
    case GPIPE_RT_MUL:
      r = int64_t(uint64_t(a) * uint64_t(b));
      break;
    case GPIPE_RT_DIV:
      // A zero divisor gives 0 here; the CPU reports it.
      r = b == 0 ? 0 : (a == INT64_MIN && b == -1) ? a : a / b;
      break;
    case GPIPE_RT_MAX:
      r = a < b ? b : a;
      break;
    case GPIPE_RT_POW:
      r = math::integerPower(a, b);
      break;
    case GPIPE_RT_REMAINDER:
      r = b == 0 ? 0 : math::integerRemainder(a, b);
      break;
    case GPIPE_RT_FMOD:
      r = (b == 0 || b == -1) ? 0 : a % b;
      break;
    default:
      r = b < a ? b : a;
      break;
    }
    out[off[0]] = r;
  }
}

__device__ __forceinline__ float sigmoidOf(float x) {
  if (x >= 0.0f)
    return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x)));
  float e = expf(x);
  return __fdiv_rn(e, __fadd_rn(1.0f, e));
}

__global__ void unaryKernel(int op, const float *in, float *out, int64_t n) {
  constexpr float kSqrtHalf = 0.70710678118654752440f;
  GPIPE_RT_GRID_LOOP(i, n) {
    float x = in[i], r;
    switch (op) {
    case GPIPE_RT_NEG:
      r = -x;
      break;
    case GPIPE_RT_RECIPROCAL:
      r = __fdiv_rn(1.0f, x);
      break;
    case GPIPE_RT_SQRT:
      r = __fsqrt_rn(x);
      break;
    case GPIPE_RT_EXP:
      r = expf(x);
      break;
    case GPIPE_RT_LOG:
      r = logf(x);
      break;
    case GPIPE_RT_ERF:
      r = erff(x);
      break;
    case GPIPE_RT_TANH:
      r = tanhf(x);
      break;
    case GPIPE_RT_SIGMOID:
      r = sigmoidOf(x);
      break;
    case GPIPE_RT_RELU:
      r = x < 0.0f ? 0.0f : x;
      break;
    case GPIPE_RT_SIN:
      r = sinf(x);
      break;
    case GPIPE_RT_COS:
      r = cosf(x);
      break;
    case GPIPE_RT_FLOOR:
      r = floorf(x);
      break;
    case GPIPE_RT_CEIL:
      r = ceilf(x);
      break;
    case GPIPE_RT_ROUND:
      r = rintf(x);
      break;
    default: // GELU
      r = __fmul_rn(__fmul_rn(x, 0.5f),
                    __fadd_rn(1.0f, erff(__fmul_rn(x, kSqrtHalf))));
      break;
    }
    out[i] = r;
  }
}

template <typename T>
__global__ void equalKernel(const T *lhs, const T *rhs, uint8_t *out,
                            StridedPlan<3> plan, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    int64_t off[3];
    planOffsets(plan, i, off);
    out[off[0]] = lhs[off[1]] == rhs[off[2]] ? 1 : 0;
  }
}

__global__ void equalBoolKernel(const uint8_t *lhs, const uint8_t *rhs,
                                uint8_t *out, StridedPlan<3> plan, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    int64_t off[3];
    planOffsets(plan, i, off);
    out[off[0]] = (lhs[off[1]] != 0) == (rhs[off[2]] != 0) ? 1 : 0;
  }
}

template <typename T>
__global__ void whereKernel(const uint8_t *cond, const T *x, const T *y, T *out,
                            StridedPlan<4> plan, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    int64_t off[4];
    planOffsets(plan, i, off);
    out[off[0]] = cond[off[1]] ? x[off[2]] : y[off[3]];
  }
}

__global__ void notKernel(const uint8_t *in, uint8_t *out, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) { out[i] = in[i] ? 0 : 1; }
}

/// The value compareKernel orders: booleans (uint8_t) by truth, not by byte
/// value.
template <typename T> __device__ __forceinline__ auto compareKey(T v) {
  if constexpr (std::is_same_v<T, uint8_t>)
    return v != 0;
  else
    return v;
}

template <typename T>
__global__ void compareKernel(int op, const T *lhs, const T *rhs, uint8_t *out,
                              StridedPlan<3> plan, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    int64_t off[3];
    planOffsets(plan, i, off);
    auto a = compareKey(lhs[off[1]]), b = compareKey(rhs[off[2]]);
    bool r;
    switch (op) {
    case GPIPE_RT_CMP_EQ:
      r = a == b;
      break;
    case GPIPE_RT_CMP_NE:
      r = a != b;
      break;
    case GPIPE_RT_CMP_LT:
      r = a < b;
      break;
    case GPIPE_RT_CMP_LE:
      r = a <= b;
      break;
    case GPIPE_RT_CMP_GT:
      r = a > b;
      break;
    default: // GE
      r = a >= b;
      break;
    }
    out[off[0]] = r ? 1 : 0;
  }
}

__global__ void logicalKernel(int op, const uint8_t *lhs, const uint8_t *rhs,
                              uint8_t *out, StridedPlan<3> plan, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    int64_t off[3];
    planOffsets(plan, i, off);
    bool a = lhs[off[1]] != 0, b = rhs[off[2]] != 0, r;
    switch (op) {
    case GPIPE_RT_AND:
      r = a && b;
      break;
    case GPIPE_RT_OR:
      r = a || b;
      break;
    default: // XOR
      r = a != b;
      break;
    }
    out[off[0]] = r ? 1 : 0;
  }
}

/// One term more of a cumulative sum: rounded on its own for f32, wrapping
/// for i64 (held as uint64_t).
__device__ __forceinline__ float cumsumAdd(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ uint64_t cumsumAdd(uint64_t a, uint64_t b) {
  return a + b;
}

/// Cumulative sums over `outer` x `n` x `inner`: a thread per line (the n
/// elements inner apart from o * n * inner + i), summed in order from its
/// first term (its last when `reverse`), as the CPU does.
template <typename T>
__global__ void cumsumKernel(const T *in, T *out, int64_t lines, int64_t n,
                             int64_t inner, bool exclusive, bool reverse) {
  GPIPE_RT_GRID_LOOP(t, lines) {
    int64_t o = t / inner, i = t % inner;
    int64_t start = o * n * inner + i + (reverse ? (n - 1) * inner : 0);
    int64_t step = reverse ? -inner : inner;
    const T *x = in + start;
    T *y = out + start;
    T acc = x[0];
    if (exclusive) {
      // Nothing, the first term, then one more term each.
      y[0] = T(0);
      for (int64_t k = 1; k < n; ++k) {
        T term = x[k * step];
        y[k * step] = acc;
        acc = cumsumAdd(acc, term);
      }
    } else {
      y[0] = acc;
      for (int64_t k = 1; k < n; ++k) {
        acc = cumsumAdd(acc, x[k * step]);
        y[k * step] = acc;
      }
    }
  }
}

/// max then min as selects, as the CPU computes them: a NaN fails both
/// comparisons and stays (fmaxf and fminf would drop it).
__global__ void clipKernel(const float *in, float *out, float lo, float hi,
                           int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    float x = in[i];
    float y = x < lo ? lo : x;
    out[i] = hi < y ? hi : y;
  }
}

__global__ void clipGradKernel(const float *in, const float *grad, float *out,
                               float lo, float hi, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) {
    float x = in[i];
    out[i] = lo < x && x < hi ? grad[i] : 0.0f;
  }
}

template <typename T> struct IntRange;
template <> struct IntRange<int32_t> {
  static constexpr int32_t lo = INT32_MIN, hi = INT32_MAX;
};
template <> struct IntRange<int64_t> {
  static constexpr int64_t lo = INT64_MIN, hi = INT64_MAX;
};

/// Float to integer: NaN is 0, out-of-range values saturate, the rest
/// truncate toward zero.
template <typename T> __device__ __forceinline__ T saturate(double v) {
  if (isnan(v))
    return 0;
  if (v <= double(IntRange<T>::lo))
    return IntRange<T>::lo;
  if (v >= double(IntRange<T>::hi))
    return IntRange<T>::hi;
  return static_cast<T>(v);
}

/// Conversion of the cast kernel; bool (uint8_t) is `x != 0` and reads as
/// 0 or 1.
template <typename Out, typename In>
__device__ __forceinline__ Out convertTo(In v) {
  if constexpr (std::is_same_v<Out, uint8_t>)
    return v != In(0) ? 1 : 0;
  else if constexpr (std::is_same_v<In, uint8_t>)
    return v ? Out(1) : Out(0);
  else if constexpr (std::is_floating_point_v<Out>)
    return static_cast<Out>(v);
  else if constexpr (std::is_floating_point_v<In>)
    return saturate<Out>(double(v));
  else
    return static_cast<Out>(v);
}

template <typename Out, typename In>
__global__ void castKernel(const In *in, Out *out, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) { out[i] = convertTo<Out>(in[i]); }
}

//===----------------------------------------------------------------------===//
// GEMM (cuBLAS)
//===----------------------------------------------------------------------===//

__global__ void scaleMatrixKernel(float *c, int64_t m, int64_t n, int64_t ldc,
                                  int64_t strideC, int64_t batch, float beta) {
  int64_t total = batch * m * n;
  GPIPE_RT_GRID_LOOP(i, total) {
    int64_t j = i % n, rest = i / n;
    int64_t r = rest % m, b = rest / m;
    float *p = c + b * strideC + r * ldc + j;
    *p = beta == 0.0f ? 0.0f : __fmul_rn(beta, *p);
  }
}

/// Set while a _bf16 contraction runs on this thread: deviceSgemm rounds
/// both operands to bf16 and multiplies them in bf16 with fp32
/// accumulation.
thread_local bool bf16Operands = false;

struct Bf16Scope {
  Bf16Scope() { bf16Operands = true; }
  ~Bf16Scope() { bf16Operands = false; }
};

/// Rounds `n` floats to bf16, to nearest even (__float2bfloat16_rn), as the
/// CPU kernels' rounding.
__global__ void toBf16Kernel(const float *in, __nv_bfloat16 *out, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) { out[i] = __float2bfloat16_rn(in[i]); }
}

/// The elements a strided batch of `rows` x `cols` matrices (leading dim
/// `ld`, `stride` apart) spans from its first.
int64_t spanOf(int64_t batch, int64_t stride, int64_t rows, int64_t cols,
               int64_t ld) {
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

/// `batch` row-major products C[M, N] = alpha * op(A) op(B) + beta * C,
/// matrix i at A + i * strideA (and so on). Validates every argument
/// against cuBLAS's int range first, like the CPU's checked sgemm. Under a
/// Bf16Scope: bf16 copies of A and B, cublasGemm(StridedBatched)Ex with
/// fp32 compute and result.
gpipe_rt_status deviceSgemm(const Kernel &kernel, bool transA, bool transB,
                            int64_t m, int64_t n, int64_t k, float alpha,
                            const float *a, int64_t lda, const float *b,
                            int64_t ldb, float beta, float *c, int64_t ldc,
                            int64_t batch = 1, int64_t strideA = 0,
                            int64_t strideB = 0, int64_t strideC = 0) {
  bool empty = false;
  GPIPE_RT_TRY(checkSgemm(kernel, transA, transB, m, n, k, a, lda, b, ldb, c,
                          ldc, batch, empty));
  if (empty)
    return GPIPE_RT_SUCCESS;
  if (k == 0 || alpha == 0.0f) {
    // As on the CPU: beta == 0 overwrites C (NaN included), else C scales.
    scaleMatrixKernel<<<blocksFor(batch * m * n), kThreads, 0,
                        currentStream()>>>(c, m, n, ldc, strideC, batch, beta);
    return launched(kernel);
  }
  cublasHandle_t handle = nullptr;
  GPIPE_RT_TRY(blasHandle(kernel, handle));
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasStatus_t status;
  if (bf16Operands) {
    int64_t spanA = spanOf(batch, strideA, transA ? k : m, transA ? m : k, lda);
    int64_t spanB = spanOf(batch, strideB, transB ? n : k, transB ? k : n, ldb);
    Scratch a16, b16;
    GPIPE_RT_TRY(a16.allocate(kernel, size_t(spanA) * sizeof(__nv_bfloat16)));
    GPIPE_RT_TRY(b16.allocate(kernel, size_t(spanB) * sizeof(__nv_bfloat16)));
    toBf16Kernel<<<blocksFor(spanA), kThreads, 0, currentStream()>>>(
        a, a16.as<__nv_bfloat16>(), spanA);
    toBf16Kernel<<<blocksFor(spanB), kThreads, 0, currentStream()>>>(
        b, b16.as<__nv_bfloat16>(), spanB);
    GPIPE_RT_TRY(launched(kernel));
    if (batch == 1)
      status = cublasGemmEx(handle, opB, opA, int(n), int(m), int(k), &alpha,
                            b16.as<__nv_bfloat16>(), CUDA_R_16BF, int(ldb),
                            a16.as<__nv_bfloat16>(), CUDA_R_16BF, int(lda),
                            &beta, c, CUDA_R_32F, int(ldc), CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT);
    else
      status = cublasGemmStridedBatchedEx(
          handle, opB, opA, int(n), int(m), int(k), &alpha,
          b16.as<__nv_bfloat16>(), CUDA_R_16BF, int(ldb), strideB,
          a16.as<__nv_bfloat16>(), CUDA_R_16BF, int(lda), strideA, &beta, c,
          CUDA_R_32F, int(ldc), strideC, int(batch), CUBLAS_COMPUTE_32F,
          CUBLAS_GEMM_DEFAULT);
  } else if (batch == 1) {
    status = cublasSgemm(handle, opB, opA, int(n), int(m), int(k), &alpha, b,
                         int(ldb), a, int(lda), &beta, c, int(ldc));
  } else {
    status = cublasSgemmStridedBatched(
        handle, opB, opA, int(n), int(m), int(k), &alpha, b, int(ldb), strideB,
        a, int(lda), strideA, &beta, c, int(ldc), strideC, int(batch));
  }
  if (status != CUBLAS_STATUS_SUCCESS)
    return Error(GPIPE_RT_BLAS_ERROR, kernel)
           << "cuBLAS sgemm failed: " << blasStatusText(status) << " (M=" << m
           << ", N=" << n << ", K=" << k << ", batch " << batch << ")";
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Normalization kernels
//===----------------------------------------------------------------------===//

/// Softmax of contiguous rows of `n`, a warp per row.
__global__ void softmaxRowsKernel(const float *in, float *out, int64_t rows,
                                  int64_t n) {
  int lane = threadIdx.x % 32;
  GPIPE_RT_WARP_ROWS(row, rows) {
    const float *x = in + row * n;
    float *y = out + row * n;
    float m = -INFINITY;
    for (int64_t j = lane; j < n; j += 32)
      m = x[j] > m ? x[j] : m;
    m = warpMax(m);
    double sum = 0.0;
    for (int64_t j = lane; j < n; j += 32) {
      float e = expf(__fsub_rn(x[j], m));
      y[j] = e;
      sum += double(e);
    }
    float s = float(warpSum(sum));
    for (int64_t j = lane; j < n; j += 32)
      y[j] = __fdiv_rn(y[j], s);
  }
}

/// Softmax along a strided axis (`n` elements `inner` apart): a thread per
/// row, in index order.
__global__ void softmaxStridedKernel(const float *in, float *out, int64_t outer,
                                     int64_t n, int64_t inner) {
  GPIPE_RT_GRID_LOOP(t, outer * inner) {
    int64_t o = t / inner, i = t % inner;
    const float *x = in + o * n * inner + i;
    float *y = out + o * n * inner + i;
    float m = -INFINITY;
    for (int64_t j = 0; j < n; ++j)
      m = x[j * inner] > m ? x[j * inner] : m;
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      float e = expf(__fsub_rn(x[j * inner], m));
      y[j * inner] = e;
      sum += double(e);
    }
    float s = float(sum);
    for (int64_t j = 0; j < n; ++j)
      y[j * inner] = __fdiv_rn(y[j * inner], s);
  }
}

/// Mean and variance of a row of `n` in double, a warp per row: every lane
/// returns the same bits.
__device__ __forceinline__ void rowMoments(const float *x, int64_t n, int lane,
                                           double &mean, double &var) {
  double sum = 0.0;
  for (int64_t j = lane; j < n; j += 32)
    sum += double(x[j]);
  mean = warpSum(sum) / double(n);
  double sq = 0.0;
  for (int64_t j = lane; j < n; j += 32) {
    double d = double(x[j]) - mean;
    sq += d * d;
  }
  var = warpSum(sq) / double(n);
}

__global__ void layerNormKernel(const float *in, const float *scale,
                                const float *bias, float epsilon, float *out,
                                float *mean, float *rstd, int64_t rows,
                                int64_t n) {
  int lane = threadIdx.x % 32;
  GPIPE_RT_WARP_ROWS(row, rows) {
    const float *x = in + row * n;
    float *y = out + row * n;
    double mu = 0.0, var = 0.0;
    rowMoments(x, n, lane, mu, var);
    float muF = float(mu);
    float rs = float(1.0 / sqrt(var + double(epsilon)));
    for (int64_t j = lane; j < n; j += 32) {
      float v = __fmul_rn(__fmul_rn(__fsub_rn(x[j], muF), rs), scale[j]);
      y[j] = bias ? __fadd_rn(v, bias[j]) : v;
    }
    if (lane == 0) {
      if (mean)
        mean[row] = muF;
      if (rstd)
        rstd[row] = rs;
    }
  }
}

/// layer_norm_grad's per-row part: the input gradient and, for the scale
/// and bias gradients, the row's mean and rstd in double.
__global__ void layerNormGradRowsKernel(const float *in, const float *scale,
                                        const float *grad, float epsilon,
                                        float *inputGrad, double *stats,
                                        int64_t rows, int64_t n) {
  int lane = threadIdx.x % 32;
  GPIPE_RT_WARP_ROWS(row, rows) {
    const float *x = in + row * n;
    const float *dy = grad + row * n;
    double mu = 0.0, var = 0.0;
    rowMoments(x, n, lane, mu, var);
    double rs = 1.0 / sqrt(var + double(epsilon));
    if (stats && lane == 0) {
      stats[2 * row] = mu;
      stats[2 * row + 1] = rs;
    }
    if (!inputGrad)
      continue;
    double sumG = 0.0, sumGX = 0.0;
    for (int64_t j = lane; j < n; j += 32) {
      double xh = (double(x[j]) - mu) * rs;
      double g = double(dy[j]) * double(scale[j]);
      sumG += g;
      sumGX += g * xh;
    }
    double meanG = warpSum(sumG) / double(n);
    double meanGX = warpSum(sumGX) / double(n);
    float *dx = inputGrad + row * n;
    for (int64_t j = lane; j < n; j += 32) {
      double xh = (double(x[j]) - mu) * rs;
      double g = double(dy[j]) * double(scale[j]);
      dx[j] = float(rs * (g - meanG - xh * meanGX));
    }
  }
}

/// layer_norm_grad's scale and bias gradients: a thread per normalized
/// element adds the rows in order.
__global__ void layerNormGradColumnsKernel(const float *in, const float *grad,
                                           const double *stats,
                                           float *scaleGrad, float *biasGrad,
                                           int64_t rows, int64_t n) {
  GPIPE_RT_GRID_LOOP(j, n) {
    double sumScale = 0.0, sumBias = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      double dy = double(grad[r * n + j]);
      if (scaleGrad) {
        double xh = (double(in[r * n + j]) - stats[2 * r]) * stats[2 * r + 1];
        sumScale += dy * xh;
      }
      sumBias += dy;
    }
    if (scaleGrad)
      scaleGrad[j] = float(sumScale);
    if (biasGrad)
      biasGrad[j] = float(sumBias);
  }
}

//===----------------------------------------------------------------------===//
// Indexing kernels
//===----------------------------------------------------------------------===//

template <typename T>
__global__ void gatherKernel(const T *data, const void *indices, bool wide,
                             T *out, int64_t count, int64_t axisDim,
                             int64_t inner, int64_t total) {
  GPIPE_RT_GRID_LOOP(t, total) {
    int64_t k = t % inner, rest = t / inner;
    int64_t i = rest % count, o = rest / count;
    int64_t idx = loadIndex(indices, wide, i);
    if (idx < 0 || idx >= axisDim)
      continue; // reported by the index check
    out[t] = data[(o * axisDim + idx) * inner + k];
  }
}

/// gather_grad: a thread per (outer, inner) column walks the indices in
/// order, so each output element sums its rows in the CPU's order.
__global__ void gatherGradKernel(const void *indices, bool wide,
                                 const float *grad, double *acc, int64_t count,
                                 int64_t axisDim, int64_t inner,
                                 int64_t columns) {
  GPIPE_RT_GRID_LOOP(t, columns) {
    int64_t k = t % inner, o = t / inner;
    for (int64_t i = 0; i < count; ++i) {
      int64_t idx = loadIndex(indices, wide, i);
      if (idx < 0 || idx >= axisDim)
        continue; // reported by the index check
      acc[(o * axisDim + idx) * inner + k] +=
          double(grad[(o * count + i) * inner + k]);
    }
  }
}

__global__ void roundToFloatKernel(const double *in, float *out, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) { out[i] = float(in[i]); }
}

//===----------------------------------------------------------------------===//
// Loss kernels
//===----------------------------------------------------------------------===//

/// Each row's lse - logit[label], a warp per row (0 for a bad label, which
/// the index check reports).
__global__ void crossEntropyRowsKernel(const float *logits, const void *labels,
                                       bool wide, double *rowLoss, int64_t rows,
                                       int64_t classes) {
  int lane = threadIdx.x % 32;
  GPIPE_RT_WARP_ROWS(row, rows) {
    const float *x = logits + row * classes;
    float m = -INFINITY;
    for (int64_t j = lane; j < classes; j += 32)
      m = x[j] > m ? x[j] : m;
    m = warpMax(m);
    double sum = 0.0;
    for (int64_t j = lane; j < classes; j += 32)
      sum += double(expf(__fsub_rn(x[j], m)));
    sum = warpSum(sum);
    if (lane == 0) {
      int64_t label = loadIndex(labels, wide, row);
      bool ok = label >= 0 && label < classes;
      rowLoss[row] = ok ? double(m) + log(sum) - double(x[label]) : 0.0;
    }
  }
}

/// *out = float(sum(values) / divisor): one block, a fixed tree.
__global__ void meanKernel(const double *values, int64_t n, double divisor,
                           float *out) {
  __shared__ double shared[kSumThreads];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kSumThreads)
    acc += values[i];
  double total = blockSum<kSumThreads>(acc, shared);
  if (threadIdx.x == 0)
    *out = float(total / divisor);
}

__global__ void mseKernel(const float *input, const float *target, int64_t n,
                          float *out) {
  __shared__ double shared[kSumThreads];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kSumThreads) {
    double d = double(input[i]) - double(target[i]);
    acc += d * d;
  }
  double total = blockSum<kSumThreads>(acc, shared);
  if (threadIdx.x == 0)
    *out = float(total / double(n));
}

/// `factor` is grad / rows, or, when `gradAt` is set, read from the device
/// as *gradAt / rows (the compiled code's loss seed lives in device memory).
__global__ void crossEntropyGradKernel(const float *logits, const void *labels,
                                       bool wide, float *out, int64_t rows,
                                       int64_t classes, double factor,
                                       const float *gradAt) {
  if (gradAt)
    factor = double(*gradAt) / double(rows);
  int lane = threadIdx.x % 32;
  GPIPE_RT_WARP_ROWS(row, rows) {
    const float *x = logits + row * classes;
    float *dx = out + row * classes;
    float m = -INFINITY;
    for (int64_t j = lane; j < classes; j += 32)
      m = x[j] > m ? x[j] : m;
    m = warpMax(m);
    double sum = 0.0;
    for (int64_t j = lane; j < classes; j += 32)
      sum += double(expf(__fsub_rn(x[j], m)));
    sum = warpSum(sum);
    int64_t label = loadIndex(labels, wide, row);
    for (int64_t j = lane; j < classes; j += 32) {
      double p = double(expf(__fsub_rn(x[j], m))) / sum;
      dx[j] = float((p - (j == label ? 1.0 : 0.0)) * factor);
    }
  }
}

//===----------------------------------------------------------------------===//
// Backward kernels
//===----------------------------------------------------------------------===//

/// reduce_sum, a thread per output element: `kept` maps the output index to
/// the input offset, `reduced` walks the reduced dims in index order.
__global__ void reduceSumKernel(const float *in, float *out,
                                StridedPlan<1> kept, StridedPlan<1> reduced,
                                int64_t outputs, int64_t perOutput) {
  GPIPE_RT_GRID_LOOP(o, outputs) {
    int64_t base[1];
    planOffsets(kept, o, base);
    double acc = 0.0;
    if (perOutput == 0) {
      // A sum over an empty dim.
    } else if (reduced.rank == 0) {
      // 0 + x, as the CPU's sum starts (so -0 becomes +0 there too).
      acc += double(in[base[0]]);
    } else {
      // The innermost reduced dim runs as a plain loop.
      int32_t last = reduced.rank - 1;
      int64_t innerN = reduced.dims[last], innerS = reduced.strides[0][last];
      StridedPlan<1> outerPlan = reduced;
      outerPlan.rank = last;
      int64_t outerN = perOutput / innerN;
      for (int64_t r = 0; r < outerN; ++r) {
        int64_t off[1];
        planOffsets(outerPlan, r, off);
        const float *x = in + base[0] + off[0];
        for (int64_t j = 0; j < innerN; ++j)
          acc += double(x[j * innerS]);
      }
    }
    out[o] = float(acc);
  }
}

/// reduce_sum for few outputs of many inputs: a block per output element,
/// a fixed tree.
__global__ void reduceSumBlockKernel(const float *in, float *out,
                                     StridedPlan<1> kept,
                                     StridedPlan<1> reduced, int64_t outputs,
                                     int64_t perOutput) {
  __shared__ double shared[kThreads];
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    int64_t base[1];
    planOffsets(kept, o, base);
    double acc = 0.0;
    for (int64_t r = threadIdx.x; r < perOutput; r += kThreads) {
      int64_t off[1];
      planOffsets(reduced, r, off);
      acc += double(in[base[0] + off[0]]);
    }
    double total = blockSum<kThreads>(acc, shared);
    if (threadIdx.x == 0)
      out[o] = float(total);
  }
}

/// softmax_grad, a thread per row along the axis, summing in the CPU's
/// order: in index order along a strided axis; along a contiguous one,
/// element j into partial sum j mod 8, the eight combined as
/// ((0 + 4) + (2 + 6)) + ((1 + 5) + (3 + 7)).
__global__ void softmaxGradKernel(const float *output, const float *grad,
                                  float *out, int64_t outer, int64_t n,
                                  int64_t inner) {
  GPIPE_RT_GRID_LOOP(t, outer * inner) {
    int64_t o = t / inner, i = t % inner;
    int64_t base = o * n * inner + i;
    const float *y = output + base;
    const float *dy = grad + base;
    float *dx = out + base;
    double sum = 0.0;
    if (inner == 1) {
      double acc[8] = {};
      for (int64_t j = 0; j < n; ++j)
        acc[j % 8] += double(dy[j]) * double(y[j]);
      sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) +
            ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    } else {
      for (int64_t j = 0; j < n; ++j)
        sum += double(dy[j * inner]) * double(y[j * inner]);
    }
    for (int64_t j = 0; j < n; ++j)
      dx[j * inner] =
          float(double(y[j * inner]) * (double(dy[j * inner]) - sum));
  }
}

__global__ void geluGradKernel(const float *in, const float *grad, float *out,
                               int64_t n) {
  constexpr double kSqrtHalf = 0.70710678118654752440;
  constexpr double kInvSqrtTwoPi = 0.39894228040143267794;
  GPIPE_RT_GRID_LOOP(i, n) {
    double x = in[i];
    double cdf = 0.5 * (1.0 + erf(x * kSqrtHalf));
    double pdf = kInvSqrtTwoPi * exp(-0.5 * x * x);
    out[i] = float(double(grad[i]) * (cdf + x * pdf));
  }
}

//===----------------------------------------------------------------------===//
// Optimizer kernels
//===----------------------------------------------------------------------===//

__global__ void sgdKernel(float *param, const float *grad, int64_t n,
                          float lr) {
  GPIPE_RT_GRID_LOOP(i, n) {
    float step = __fmul_rn(lr, grad[i]);
    param[i] = __fsub_rn(param[i], step);
  }
}

__global__ void sgdDecayKernel(float *param, const float *grad, int64_t n,
                               float lr, float wd) {
  GPIPE_RT_GRID_LOOP(i, n) {
    float p = param[i];
    float g = __fadd_rn(grad[i], __fmul_rn(wd, p));
    param[i] = __fsub_rn(p, __fmul_rn(lr, g));
  }
}

__global__ void momentumKernel(float *param, const float *grad, float *buf,
                               int64_t n, float lr, float mu, float wd,
                               bool first) {
  GPIPE_RT_GRID_LOOP(i, n) {
    float p = param[i];
    float g = grad[i];
    if (wd != 0.0f)
      g = __fadd_rn(g, __fmul_rn(wd, p));
    float b = first ? g : __fadd_rn(__fmul_rn(mu, buf[i]), g);
    buf[i] = b;
    param[i] = __fsub_rn(p, __fmul_rn(lr, b));
  }
}

struct AdamFactors {
  float decay, oneMinusBeta1, beta2, oneMinusBeta2, stepSize, correction2, eps;
};

__global__ void adamwKernel(float *param, const float *grad, float *m, float *v,
                            int64_t n, AdamFactors f) {
  GPIPE_RT_GRID_LOOP(i, n) {
    float g = grad[i];
    float p = __fmul_rn(param[i], f.decay);
    float mi = __fadd_rn(m[i], __fmul_rn(f.oneMinusBeta1, __fsub_rn(g, m[i])));
    float gg = __fmul_rn(g, g);
    float vi =
        __fadd_rn(__fmul_rn(f.beta2, v[i]), __fmul_rn(f.oneMinusBeta2, gg));
    m[i] = mi;
    v[i] = vi;
    float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), f.correction2), f.eps);
    float update = __fmul_rn(f.stepSize, __fdiv_rn(mi, denom));
    param[i] = __fsub_rn(p, update);
  }
}

__global__ void accumulateKernel(float *acc, const float *grad, int64_t n) {
  GPIPE_RT_GRID_LOOP(i, n) { acc[i] = __fadd_rn(acc[i], grad[i]); }
}

//===----------------------------------------------------------------------===//
// Parameter init
//===----------------------------------------------------------------------===//

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

__host__ __device__ __forceinline__ uint64_t mix64(uint64_t x) {
  x += kGoldenGamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__global__ void fillConstantKernel(float *out, int64_t n, float value) {
  GPIPE_RT_GRID_LOOP(i, n) { out[i] = value; }
}

__global__ void fillRandomKernel(float *out, int64_t n, bool uniform,
                                 uint64_t key, double scale) {
  GPIPE_RT_GRID_LOOP(i, n) {
    uint64_t bits = mix64(key + uint64_t(i) * kGoldenGamma);
    if (uniform) {
      double u = double(bits >> 40) * 0x1.0p-24;
      out[i] = float((2.0 * u - 1.0) * scale);
    } else {
      double u1 = double((bits >> 32) + 1) * 0x1.0p-32;
      double u2 = double(bits & 0xFFFFFFFFull) * 0x1.0p-32;
      double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
      out[i] = float(z * scale);
    }
  }
}

IndexErrorInfo indexInfo(IndexKernel kernel, const Shape &positions,
                         const Shape &other, int64_t bound, int64_t axis) {
  IndexErrorInfo info;
  info.kernel = kernel;
  info.rank = positions.rank;
  std::copy(positions.dims, positions.dims + positions.rank, info.dims);
  info.otherRank = other.rank;
  std::copy(other.dims, other.dims + other.rank, info.otherDims);
  info.bound = bound;
  info.axis = axis;
  return info;
}

} // namespace
} // namespace gpipe::rt::cuda

using namespace gpipe::rt::cuda;

//===----------------------------------------------------------------------===//
// Devices, streams and errors
//===----------------------------------------------------------------------===//

extern "C" const char *gpipe_rt_cuda_last_error(void) {
  return lastError.c_str();
}

extern "C" void gpipe_rt_cuda_clear_error(void) { lastError.clear(); }

extern "C" gpipe_rt_status gpipe_rt_cuda_device_count(int32_t *count) {
  Kernel kernel = cudaKernel("device_count");
  if (!count)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "null count";
  int n = 0;
  cudaError_t error = cudaGetDeviceCount(&n);
  if (error != cudaSuccess) {
    *count = 0;
    return cudaFailure(kernel, "cudaGetDeviceCount", error);
  }
  *count = n;
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cuda_set_stream(void *cudaStream) {
  threadState.stream = static_cast<cudaStream_t>(cudaStream);
  return GPIPE_RT_SUCCESS;
}

extern "C" void *gpipe_rt_cuda_get_stream(void) {
  return static_cast<void *>(threadState.stream);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_nccl_version(int32_t *version) {
  Kernel kernel = cudaKernel("nccl_version");
  if (!version)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "null version";
  int v = 0;
  ncclResult_t result = ncclGetVersion(&v);
  if (result != ncclSuccess)
    return Error(GPIPE_RT_BLAS_ERROR, kernel)
           << "ncclGetVersion failed: " << ncclGetErrorString(result);
  *version = v;
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cuda_check(void) {
  Kernel kernel = cudaKernel("check");
  cudaStream_t stream = currentStream();
  GPIPE_RT_TRY(checkCuda(kernel, "waiting for the stream",
                         cudaStreamSynchronize(stream)));
  GPIPE_RT_TRY(checkCuda(kernel, "an earlier kernel", cudaGetLastError()));
  DeviceState *state = nullptr;
  GPIPE_RT_TRY(deviceState(kernel, state));
  if (!state->record)
    return GPIPE_RT_SUCCESS;
  ErrorRecord record;
  GPIPE_RT_TRY(checkCuda(kernel, "reading the error record",
                         cudaMemcpyAsync(&record, state->record, sizeof(record),
                                         cudaMemcpyDeviceToHost, stream)));
  GPIPE_RT_TRY(checkCuda(kernel, "reading the error record",
                         cudaStreamSynchronize(stream)));
  if (!record.failed)
    return GPIPE_RT_SUCCESS;
  ErrorRecord clean = cleanRecord();
  GPIPE_RT_TRY(checkCuda(kernel, "clearing the error record",
                         cudaMemcpyAsync(state->record, &clean, sizeof(clean),
                                         cudaMemcpyHostToDevice, stream)));
  GPIPE_RT_TRY(checkCuda(kernel, "clearing the error record",
                         cudaStreamSynchronize(stream)));
  const IndexErrorInfo &info = record.info;
  Shape positions = shapeOf(info.dims, info.rank);
  Shape indexed = shapeOf(info.otherDims, info.otherRank);
  switch (info.kernel) {
  case kGather:
    return gatherIndexOutOfRange(cudaKernel("gather"), record.value, positions,
                                 record.position, info.axis, indexed);
  case kGatherGrad:
    return gatherGradIndexOutOfRange(cudaKernel("gather_grad"), record.value,
                                     positions, record.position, info.axis,
                                     indexed);
  default:
    return labelOutOfRange(
        cudaKernel(info.kernel == kCrossEntropy ? "cross_entropy"
                                                : "cross_entropy_grad"),
        record.value, positions, record.position, info.bound);
  }
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cuda_binary_f32(
    gpipe_rt_binary_op op, const float *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const float *rhs, const int64_t *rhsShape, int32_t rhsRank,
    float *out, const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel(binaryName(op));
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkBinary(kernel, op, lhs, lhsShape, lhsRank, rhs, rhsShape,
                           rhsRank, out, outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.count;
  binaryKernel<<<blocksFor(n), kThreads, 0, currentStream()>>>(
      int(op), lhs, rhs, out, args.plan, n);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_binary_i64(
    gpipe_rt_binary_op op, const int64_t *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const int64_t *rhs, const int64_t *rhsShape,
    int32_t rhsRank, int64_t *out, const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel(binaryName(op));
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkBinaryI64(kernel, op, lhs, lhsShape, lhsRank, rhs, rhsShape,
                              rhsRank, out, outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.count;
  binaryI64Kernel<<<blocksFor(n), kThreads, 0, currentStream()>>>(
      int(op), lhs, rhs, out, args.plan, n);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_unary_f32(gpipe_rt_unary_op op,
                                                   const float *in, float *out,
                                                   int64_t count) {
  Kernel kernel = cudaKernel("unary");
  GPIPE_RT_TRY(checkUnary(kernel, op, in, out, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  unaryKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(int(op), in,
                                                                  out, count);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_equal(gpipe_rt_dtype dtype, const void *lhs,
                    const int64_t *lhsShape, int32_t lhsRank, const void *rhs,
                    const int64_t *rhsShape, int32_t rhsRank, uint8_t *out,
                    const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel("equal");
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkEqual(kernel, dtype, lhs, lhsShape, lhsRank, rhs, rhsShape,
                          rhsRank, out, outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.count;
  const StridedPlan<3> &plan = args.plan;
  unsigned blocks = blocksFor(n);
  cudaStream_t stream = currentStream();
  auto run = [&](auto zero) {
    using T = decltype(zero);
    equalKernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T *>(lhs), static_cast<const T *>(rhs), out, plan, n);
  };
  switch (dtype) {
  case GPIPE_RT_F32:
    run(float());
    break;
  case GPIPE_RT_F64:
    run(double());
    break;
  case GPIPE_RT_I32:
    run(int32_t());
    break;
  case GPIPE_RT_I64:
    run(int64_t());
    break;
  default: // GPIPE_RT_BOOL; checkEqual rejected every other type.
    equalBoolKernel<<<blocks, kThreads, 0, stream>>>(
        static_cast<const uint8_t *>(lhs), static_cast<const uint8_t *>(rhs),
        out, plan, n);
    break;
  }
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_where(const uint8_t *cond, const int64_t *condShape,
                    int32_t condRank, gpipe_rt_dtype dtype, const void *x,
                    const int64_t *xShape, int32_t xRank, const void *y,
                    const int64_t *yShape, int32_t yRank, void *out,
                    const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel("where");
  WhereArgs args;
  GPIPE_RT_TRY(checkWhere(kernel, cond, condShape, condRank, dtype, x, xShape,
                          xRank, y, yShape, yRank, out, outShape, outRank,
                          args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.count;
  const StridedPlan<4> &plan = args.plan;
  unsigned blocks = blocksFor(n);
  cudaStream_t stream = currentStream();
  auto run = [&](auto zero) {
    using T = decltype(zero);
    whereKernel<T><<<blocks, kThreads, 0, stream>>>(
        cond, static_cast<const T *>(x), static_cast<const T *>(y),
        static_cast<T *>(out), plan, n);
  };
  withBitsType(args.elemSize, run);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_not(const uint8_t *in, uint8_t *out,
                                             int64_t count) {
  Kernel kernel = cudaKernel("not");
  GPIPE_RT_TRY(checkNot(kernel, in, out, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  notKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(in, out, count);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_compare(gpipe_rt_compare_op op, gpipe_rt_dtype dtype,
                      const void *lhs, const int64_t *lhsShape, int32_t lhsRank,
                      const void *rhs, const int64_t *rhsShape, int32_t rhsRank,
                      uint8_t *out, const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel("compare");
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkCompare(kernel, op, dtype, lhs, lhsShape, lhsRank, rhs,
                            rhsShape, rhsRank, out, outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.count;
  const StridedPlan<3> &plan = args.plan;
  unsigned blocks = blocksFor(n);
  cudaStream_t stream = currentStream();
  auto run = [&](auto zero) {
    using T = decltype(zero);
    compareKernel<T><<<blocks, kThreads, 0, stream>>>(
        int(op), static_cast<const T *>(lhs), static_cast<const T *>(rhs), out,
        plan, n);
  };
  switch (dtype) {
  case GPIPE_RT_F32:
    run(float());
    break;
  case GPIPE_RT_F64:
    run(double());
    break;
  case GPIPE_RT_I32:
    run(int32_t());
    break;
  case GPIPE_RT_I64:
    run(int64_t());
    break;
  default: // GPIPE_RT_BOOL; checkCompare rejected every other type.
    run(uint8_t());
    break;
  }
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_logical(
    gpipe_rt_logical_op op, const uint8_t *lhs, const int64_t *lhsShape,
    int32_t lhsRank, const uint8_t *rhs, const int64_t *rhsShape,
    int32_t rhsRank, uint8_t *out, const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel("logical");
  BroadcastArgs<3> args;
  GPIPE_RT_TRY(checkLogical(kernel, op, lhs, lhsShape, lhsRank, rhs, rhsShape,
                            rhsRank, out, outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.count;
  logicalKernel<<<blocksFor(n), kThreads, 0, currentStream()>>>(
      int(op), lhs, rhs, out, args.plan, n);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_cumsum(gpipe_rt_dtype dtype, const void *in, const int64_t *shape,
                     int32_t rank, int64_t axis, int32_t exclusive,
                     int32_t reverse, void *out) {
  Kernel kernel = cudaKernel("cumsum");
  CumsumArgs args;
  GPIPE_RT_TRY(checkCumsum(kernel, dtype, in, shape, rank, axis, out, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t lines = args.outer * args.inner;
  unsigned blocks = blocksFor(lines);
  cudaStream_t stream = currentStream();
  bool excl = exclusive != 0, rev = reverse != 0;
  if (dtype == GPIPE_RT_F32)
    cumsumKernel<<<blocks, kThreads, 0, stream>>>(
        static_cast<const float *>(in), static_cast<float *>(out), lines,
        args.n, args.inner, excl, rev);
  else // GPIPE_RT_I64; checkCumsum rejected the others.
    cumsumKernel<<<blocks, kThreads, 0, stream>>>(
        static_cast<const uint64_t *>(in), static_cast<uint64_t *>(out), lines,
        args.n, args.inner, excl, rev);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_broadcast(gpipe_rt_dtype dtype, const void *in,
                        const int64_t *inShape, int32_t inRank, void *out,
                        const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel("broadcast");
  BroadcastToArgs args;
  GPIPE_RT_TRY(checkBroadcastTo(kernel, dtype, in, inShape, inRank, out,
                                outShape, outRank, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t n = args.count;
  unsigned blocks = blocksFor(n);
  cudaStream_t stream = currentStream();
  withBitsType(args.elemSize, [&](auto zero) {
    using T = decltype(zero);
    stridedCopyKernel<<<blocks, kThreads, 0, stream>>>(
        static_cast<T *>(out), static_cast<const T *>(in), args.plan, n);
  });
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_clip_f32(const float *in, float *out,
                                                  int64_t count, float lo,
                                                  float hi) {
  Kernel kernel = cudaKernel("clip");
  GPIPE_RT_TRY(checkClip(kernel, in, out, count, lo, hi));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  clipKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(in, out, lo,
                                                                 hi, count);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_clip_grad_f32(const float *in, const float *grad, float *out,
                            int64_t count, float lo, float hi) {
  Kernel kernel = cudaKernel("clip_grad");
  GPIPE_RT_TRY(checkClipGrad(kernel, in, grad, out, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  clipGradKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(
      in, grad, out, lo, hi, count);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_cast(gpipe_rt_dtype inType,
                                              const void *in,
                                              gpipe_rt_dtype outType, void *out,
                                              int64_t count) {
  Kernel kernel = cudaKernel("cast");
  GPIPE_RT_TRY(checkCast(kernel, inType, in, outType, out, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  unsigned blocks = blocksFor(count);
  cudaStream_t stream = currentStream();
  withCastType(inType, [&](auto inZero) {
    withCastType(outType, [&](auto outZero) {
      using In = decltype(inZero);
      using Out = decltype(outZero);
      castKernel<Out, In><<<blocks, kThreads, 0, stream>>>(
          static_cast<const In *>(in), static_cast<Out *>(out), count);
    });
  });
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cuda_matmul_f32(const float *lhs, const int64_t *lhsShape,
                         int32_t lhsRank, const float *rhs,
                         const int64_t *rhsShape, int32_t rhsRank,
                         int32_t transLhs, int32_t transRhs, float *out,
                         const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel("matmul");
  MatmulArgs args;
  GPIPE_RT_TRY(checkMatmul(kernel, lhs, lhsShape, lhsRank, rhs, rhsShape,
                           rhsRank, transLhs, transRhs, out, outShape, outRank,
                           args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t m = args.m, n = args.n, k = args.k;
  bool ta = args.transLhs, tb = args.transRhs;
  const StridedPlan<3> &plan = args.plan;
  int64_t ldA = leadingDim(args.lda), ldB = leadingDim(args.ldb),
          ldC = leadingDim(n);
  // A shared rhs and a dense, untransposed lhs: the batch folds into the
  // rows.
  if (args.foldBatch)
    return deviceSgemm(kernel, false, tb, args.batch.numElements * m, n, k,
                       1.0f, lhs, ldA, rhs, ldB, 0.0f, out, ldC);

  // Strided-batched over the innermost batch dim, one call per index of
  // the outer ones.
  int32_t last = plan.rank - 1;
  int64_t outer = 1;
  for (int32_t d = 0; d < last; ++d)
    outer *= plan.dims[d];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off[3] = {0, 0, 0}, rest = o;
    for (int32_t d = last - 1; d >= 0; --d) {
      int64_t i = rest % plan.dims[d];
      rest /= plan.dims[d];
      for (int q = 0; q < 3; ++q)
        off[q] += i * plan.strides[q][d];
    }
    GPIPE_RT_TRY(deviceSgemm(
        kernel, ta, tb, m, n, k, 1.0f, lhs + off[1] * m * k, ldA,
        rhs + off[2] * k * n, ldB, 0.0f, out + off[0] * m * n, ldC,
        plan.dims[last], plan.strides[1][last] * m * k,
        plan.strides[2][last] * k * n, plan.strides[0][last] * m * n));
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_gemm_f32(const float *a, const int64_t *aShape, const float *b,
                       const int64_t *bShape, const float *c,
                       const int64_t *cShape, int32_t cRank, float alpha,
                       float beta, int32_t transA, int32_t transB, float *out,
                       const int64_t *outShape) {
  Kernel kernel = cudaKernel("gemm");
  GemmArgs args;
  GPIPE_RT_TRY(checkGemm(kernel, a, aShape, b, bShape, c, cShape, cRank, beta,
                         transA, transB, out, outShape, args));
  // Validate the sgemm before writing c into the result.
  if (c && !args.cInPlace && fitsBlasInt(args.m) && fitsBlasInt(args.n) &&
      fitsBlasInt(args.k))
    GPIPE_RT_TRY(stridedCopy(kernel, sizeof(float), args.result, out,
                             args.resultStrides, c, args.cStrides));
  return deviceSgemm(kernel, transA, transB, args.m, args.n, args.k, alpha, a,
                     args.lda, b, args.ldb, args.beta, out, args.ldc);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_linear_f32(const float *input, const int64_t *inputShape,
                         int32_t inputRank, const float *weight,
                         const int64_t *weightShape, const float *bias,
                         int32_t transposeWeight, float *out,
                         const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel("linear");
  LinearArgs args;
  GPIPE_RT_TRY(checkLinear(kernel, input, inputShape, inputRank, weight,
                           weightShape, transposeWeight, out, outShape, outRank,
                           args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t rows = args.rows, outF = args.outFeatures;
  if (bias) {
    // Every row of the result starts as the bias.
    Shape space;
    space.rank = 2;
    space.dims[0] = rows;
    space.dims[1] = outF;
    space.numElements = args.count;
    int64_t dst[2] = {outF, 1}, src[2] = {0, 1};
    GPIPE_RT_TRY(
        stridedCopy(kernel, sizeof(float), space, out, dst, bias, src));
  }
  return deviceSgemm(kernel, false, transposeWeight != 0, rows, outF,
                     args.inFeatures, 1.0f, input, leadingDim(args.inFeatures),
                     weight, args.weightLd, bias ? 1.0f : 0.0f, out,
                     leadingDim(outF));
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_matmul_bf16(const float *lhs, const int64_t *lhsShape,
                          int32_t lhsRank, const float *rhs,
                          const int64_t *rhsShape, int32_t rhsRank,
                          int32_t transLhs, int32_t transRhs, float *out,
                          const int64_t *outShape, int32_t outRank) {
  Bf16Scope bf16;
  return gpipe_rt_cuda_matmul_f32(lhs, lhsShape, lhsRank, rhs, rhsShape,
                                  rhsRank, transLhs, transRhs, out, outShape,
                                  outRank);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_gemm_bf16(const float *a, const int64_t *aShape, const float *b,
                        const int64_t *bShape, const float *c,
                        const int64_t *cShape, int32_t cRank, float alpha,
                        float beta, int32_t transA, int32_t transB, float *out,
                        const int64_t *outShape) {
  Bf16Scope bf16;
  return gpipe_rt_cuda_gemm_f32(a, aShape, b, bShape, c, cShape, cRank, alpha,
                                beta, transA, transB, out, outShape);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_linear_bf16(const float *input, const int64_t *inputShape,
                          int32_t inputRank, const float *weight,
                          const int64_t *weightShape, const float *bias,
                          int32_t transposeWeight, float *out,
                          const int64_t *outShape, int32_t outRank) {
  Bf16Scope bf16;
  return gpipe_rt_cuda_linear_f32(input, inputShape, inputRank, weight,
                                  weightShape, bias, transposeWeight, out,
                                  outShape, outRank);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cuda_softmax_f32(const float *in,
                                                     const int64_t *shape,
                                                     int32_t rank, int64_t axis,
                                                     float *out) {
  Kernel kernel = cudaKernel("softmax");
  AxisSplit args;
  GPIPE_RT_TRY(checkSoftmax(kernel, in, shape, rank, axis, out, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  int64_t outer = args.outer, n = args.n, inner = args.inner;
  if (inner == 1)
    softmaxRowsKernel<<<blocksForRows(outer), kThreads, 0, currentStream()>>>(
        in, out, outer, n);
  else
    softmaxStridedKernel<<<blocksFor(outer * inner), kThreads, 0,
                           currentStream()>>>(in, out, outer, n, inner);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_layer_norm_f32(const float *in, const int64_t *shape,
                             int32_t rank, int64_t axis, const float *scale,
                             const float *bias, float epsilon, float *out,
                             float *mean, float *rstd) {
  Kernel kernel = cudaKernel("layer_norm");
  RowSplit args;
  GPIPE_RT_TRY(
      checkLayerNorm(kernel, in, shape, rank, axis, scale, epsilon, out, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  layerNormKernel<<<blocksForRows(args.rows), kThreads, 0, currentStream()>>>(
      in, scale, bias, epsilon, out, mean, rstd, args.rows, args.n);
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Indexing and data movement
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cuda_gather(
    gpipe_rt_dtype dtype, const void *data, const int64_t *dataShape,
    int32_t dataRank, gpipe_rt_dtype indexType, const void *indices,
    const int64_t *indicesShape, int32_t indicesRank, int64_t axis, void *out) {
  Kernel kernel = cudaKernel("gather");
  GatherArgs args;
  GPIPE_RT_TRY(checkGather(kernel, dtype, dataShape, dataRank, indexType,
                           indices, indicesShape, indicesRank, axis, args));
  GPIPE_RT_TRY(checkGatherResult(kernel, data, out, args));
  const Shape &is = args.indices;
  int64_t axisDim = args.axisDim;
  GPIPE_RT_TRY(checkIndices(kernel, indexType, indices, is.numElements, axisDim,
                            indexInfo(kGather, is, args.data, axisDim, axis)));
  int64_t total = args.count;
  if (total == 0)
    return GPIPE_RT_SUCCESS;
  bool wide = indexType == GPIPE_RT_I64;
  unsigned blocks = blocksFor(total);
  cudaStream_t stream = currentStream();
  int64_t count = is.numElements, inner = args.inner;
  auto run = [&](auto zero) {
    using T = decltype(zero);
    gatherKernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T *>(data), indices, wide, static_cast<T *>(out),
        count, axisDim, inner, total);
  };
  withBitsType(args.elemSize, run);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_transpose(gpipe_rt_dtype dtype, const void *in,
                        const int64_t *shape, int32_t rank, const int64_t *perm,
                        void *out) {
  Kernel kernel = cudaKernel("transpose");
  CopyArgs args;
  GPIPE_RT_TRY(checkTranspose(kernel, dtype, in, shape, rank, perm, out, args));
  if (args.space.numElements == 0)
    return GPIPE_RT_SUCCESS;
  return stridedCopy(kernel, args.elemSize, args.space, out, args.dstStrides,
                     in, args.srcStrides);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_slice(gpipe_rt_dtype dtype, const void *in, const int64_t *shape,
                    int32_t rank, const int64_t *offsets, const int64_t *sizes,
                    const int64_t *strides, void *out) {
  Kernel kernel = cudaKernel("slice");
  CopyArgs args;
  GPIPE_RT_TRY(checkSlice(kernel, dtype, in, shape, rank, offsets, sizes,
                          strides, out, args));
  if (args.space.numElements == 0)
    return GPIPE_RT_SUCCESS;
  return stridedCopy(kernel, args.elemSize, args.space, out, args.dstStrides,
                     static_cast<const char *>(in) +
                         size_t(args.base) * args.elemSize,
                     args.srcStrides);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_split(gpipe_rt_dtype dtype, const void *in, const int64_t *shape,
                    int32_t rank, int64_t axis, const int64_t *sizes,
                    int32_t numOutputs, void *const *outs) {
  Kernel kernel = cudaKernel("split");
  PartsArgs args;
  GPIPE_RT_TRY(checkSplit(kernel, dtype, in, shape, rank, axis, sizes,
                          numOutputs, outs, args));
  const char *src = static_cast<const char *>(in);
  for (size_t i = 0; i < args.parts.size(); ++i) {
    const Part &part = args.parts[i];
    GPIPE_RT_TRY(stridedCopy(
        kernel, args.elemSize, part.shape, outs[i], part.strides,
        src + size_t(part.offset) * args.elemSize, args.wholeStrides));
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_concat(gpipe_rt_dtype dtype, int32_t numInputs,
                     const void *const *inputs, const int64_t *const *shapes,
                     int32_t rank, int64_t axis, void *out) {
  Kernel kernel = cudaKernel("concat");
  PartsArgs args;
  GPIPE_RT_TRY(checkConcat(kernel, dtype, numInputs, inputs, shapes, rank, axis,
                           out, args));
  char *dst = static_cast<char *>(out);
  for (size_t i = 0; i < args.parts.size(); ++i) {
    const Part &part = args.parts[i];
    GPIPE_RT_TRY(stridedCopy(kernel, args.elemSize, part.shape,
                             dst + size_t(part.offset) * args.elemSize,
                             args.wholeStrides, inputs[i], part.strides));
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cuda_copy(gpipe_rt_dtype dtype,
                                              const void *in, void *out,
                                              int64_t count) {
  Kernel kernel = cudaKernel("copy");
  size_t elemSize;
  GPIPE_RT_TRY(checkCopy(kernel, dtype, in, out, count, elemSize));
  return moveBytes(kernel, out, in, size_t(count) * elemSize);
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cuda_cross_entropy_f32(const float *logits, const int64_t *logitsShape,
                                int32_t logitsRank, gpipe_rt_dtype labelType,
                                const void *labels, float *loss) {
  Kernel kernel = cudaKernel("cross_entropy");
  LogitsArgs args;
  GPIPE_RT_TRY(checkCrossEntropy(kernel, logitsShape, logitsRank, labelType,
                                 labels, loss, args));
  int64_t rows = args.rows, classes = args.classes;
  GPIPE_RT_TRY(checkPointer(kernel, "logits", logits, args.logits.numElements));
  GPIPE_RT_TRY(checkIndices(
      kernel, labelType, labels, rows, classes,
      indexInfo(kCrossEntropy, args.rowShape, Shape(), classes, 0)));
  Scratch rowLoss;
  GPIPE_RT_TRY(rowLoss.allocate(kernel, size_t(rows) * sizeof(double)));
  cudaStream_t stream = currentStream();
  if (rows > 0) {
    crossEntropyRowsKernel<<<blocksForRows(rows), kThreads, 0, stream>>>(
        logits, labels, labelType == GPIPE_RT_I64, rowLoss.as<double>(), rows,
        classes);
    GPIPE_RT_TRY(launched(kernel));
  }
  meanKernel<<<1, kSumThreads, 0, stream>>>(rowLoss.as<double>(), rows,
                                            double(rows), loss);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_mse_f32(const float *input,
                                                 const float *target,
                                                 int64_t count, float *loss) {
  Kernel kernel = cudaKernel("mse");
  GPIPE_RT_TRY(checkMse(kernel, input, target, count, loss));
  mseKernel<<<1, kSumThreads, 0, currentStream()>>>(input, target, count, loss);
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Backward kernels
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cuda_reduce_sum_f32(const float *in, const int64_t *shape,
                             int32_t rank, const int64_t *axes, int32_t numAxes,
                             float *out) {
  Kernel kernel = cudaKernel("reduce_sum");
  ReduceArgs args;
  GPIPE_RT_TRY(
      checkReduceSum(kernel, in, shape, rank, axes, numAxes, out, args));
  int64_t outputs = args.outputs;
  if (outputs == 0)
    return GPIPE_RT_SUCCESS;
  // The kept and the reduced dims, each with the input's strides.
  const Shape &s = args.input;
  int64_t inStrides[kMaxRank];
  contiguousStrides(s, inStrides);
  Shape keptShape, reducedShape;
  int64_t keptStrides[1][kMaxRank], reducedStrides[1][kMaxRank];
  keptShape.numElements = 1;
  reducedShape.numElements = 1;
  for (int32_t d = 0; d < s.rank; ++d) {
    Shape &part = args.reduced[d] ? reducedShape : keptShape;
    int64_t (&strides)[1][kMaxRank] =
        args.reduced[d] ? reducedStrides : keptStrides;
    strides[0][part.rank] = inStrides[d];
    part.dims[part.rank++] = s.dims[d];
    part.numElements *= s.dims[d];
  }
  int64_t perOutput = reducedShape.numElements;
  StridedPlan<1> keptPlan = collapse(keptShape, keptStrides);
  StridedPlan<1> reducedPlan = collapse(reducedShape, reducedStrides);
  cudaStream_t stream = currentStream();
  if (outputs < 1024 && perOutput > 16384)
    reduceSumBlockKernel<<<unsigned(outputs), kThreads, 0, stream>>>(
        in, out, keptPlan, reducedPlan, outputs, perOutput);
  else
    reduceSumKernel<<<blocksFor(outputs), kThreads, 0, stream>>>(
        in, out, keptPlan, reducedPlan, outputs, perOutput);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_insert_slice(
    gpipe_rt_dtype dtype, const void *source, const int64_t *sourceShape,
    const void *dest, const int64_t *destShape, int32_t rank,
    const int64_t *offsets, const int64_t *strides, void *out) {
  Kernel kernel = cudaKernel("insert_slice");
  InsertSliceArgs args;
  GPIPE_RT_TRY(checkInsertSlice(kernel, dtype, source, sourceShape, dest,
                                destShape, rank, offsets, strides, out, args));
  if (args.destCount == 0)
    return GPIPE_RT_SUCCESS;
  size_t elemSize = args.elemSize;
  GPIPE_RT_TRY(moveBytes(kernel, out, dest, size_t(args.destCount) * elemSize));
  return stridedCopy(kernel, elemSize, args.space,
                     static_cast<char *>(out) + size_t(args.base) * elemSize,
                     args.dstStrides, source, args.srcStrides);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_gather_grad_f32(gpipe_rt_dtype indexType, const void *indices,
                              const int64_t *indicesShape, int32_t indicesRank,
                              const float *grad, const int64_t *gradShape,
                              int32_t gradRank, int64_t axis, float *out,
                              const int64_t *outShape, int32_t outRank) {
  Kernel kernel = cudaKernel("gather_grad");
  GatherGradArgs args;
  GPIPE_RT_TRY(checkGatherGrad(kernel, indexType, indices, indicesShape,
                               indicesRank, gradShape, gradRank, axis, outShape,
                               outRank, args));
  GPIPE_RT_TRY(checkGatherGradResult(kernel, grad, out, args));
  const Shape &is = args.indices, &os = args.result;
  int64_t axisDim = args.axisDim;
  GPIPE_RT_TRY(checkIndices(kernel, indexType, indices, is.numElements, axisDim,
                            indexInfo(kGatherGrad, is, os, axisDim, axis)));
  if (os.numElements == 0)
    return GPIPE_RT_SUCCESS;
  cudaStream_t stream = currentStream();
  Scratch acc;
  size_t bytes = size_t(os.numElements) * sizeof(double);
  GPIPE_RT_TRY(acc.allocate(kernel, bytes));
  GPIPE_RT_TRY(checkCuda(kernel, "cudaMemsetAsync",
                         cudaMemsetAsync(acc.as<void>(), 0, bytes, stream)));
  int64_t columns = args.outer * args.inner;
  if (columns > 0 && is.numElements > 0) {
    gatherGradKernel<<<blocksFor(columns), kThreads, 0, stream>>>(
        indices, indexType == GPIPE_RT_I64, grad, acc.as<double>(),
        is.numElements, axisDim, args.inner, columns);
    GPIPE_RT_TRY(launched(kernel));
  }
  roundToFloatKernel<<<blocksFor(os.numElements), kThreads, 0, stream>>>(
      acc.as<double>(), out, os.numElements);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_softmax_grad_f32(const float *output, const float *grad,
                               const int64_t *shape, int32_t rank, int64_t axis,
                               float *out) {
  Kernel kernel = cudaKernel("softmax_grad");
  AxisSplit args;
  GPIPE_RT_TRY(
      checkSoftmaxGrad(kernel, output, grad, shape, rank, axis, out, args));
  if (args.count == 0)
    return GPIPE_RT_SUCCESS;
  softmaxGradKernel<<<blocksFor(args.outer * args.inner), kThreads, 0,
                      currentStream()>>>(output, grad, out, args.outer, args.n,
                                         args.inner);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_layer_norm_grad_f32(
    const float *in, const int64_t *shape, int32_t rank, int64_t axis,
    const float *scale, const float *grad, float epsilon, float *inputGrad,
    float *scaleGrad, float *biasGrad) {
  Kernel kernel = cudaKernel("layer_norm_grad");
  RowSplit args;
  GPIPE_RT_TRY(checkLayerNormGrad(kernel, in, shape, rank, axis, scale, grad,
                                  epsilon, args));
  int64_t rows = args.rows, n = args.n;
  if (n == 0)
    return GPIPE_RT_SUCCESS;
  cudaStream_t stream = currentStream();
  bool columns = scaleGrad || biasGrad;
  Scratch stats;
  if (columns && scaleGrad)
    GPIPE_RT_TRY(stats.allocate(kernel, size_t(rows) * 2 * sizeof(double)));
  if (rows > 0 && (inputGrad || scaleGrad)) {
    layerNormGradRowsKernel<<<blocksForRows(rows), kThreads, 0, stream>>>(
        in, scale, grad, epsilon, inputGrad, stats.as<double>(), rows, n);
    GPIPE_RT_TRY(launched(kernel));
  }
  if (columns) {
    layerNormGradColumnsKernel<<<blocksFor(n), kThreads, 0, stream>>>(
        in, grad, stats.as<double>(), scaleGrad, biasGrad, rows, n);
    GPIPE_RT_TRY(launched(kernel));
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cuda_gelu_grad_f32(const float *in,
                                                       const float *grad,
                                                       float *out,
                                                       int64_t count) {
  Kernel kernel = cudaKernel("gelu_grad");
  GPIPE_RT_TRY(checkGeluGrad(kernel, in, grad, out, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  geluGradKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(
      in, grad, out, count);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_cross_entropy_grad_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, float grad, float *out) {
  Kernel kernel = cudaKernel("cross_entropy_grad");
  LogitsArgs args;
  GPIPE_RT_TRY(checkCrossEntropyGrad(kernel, logitsShape, logitsRank, labelType,
                                     labels, args));
  GPIPE_RT_TRY(checkCrossEntropyGradResult(kernel, logits, out, args));
  int64_t rows = args.rows, classes = args.classes;
  GPIPE_RT_TRY(checkIndices(
      kernel, labelType, labels, rows, classes,
      indexInfo(kCrossEntropyGrad, args.rowShape, Shape(), classes, 0)));
  if (args.logits.numElements == 0)
    return GPIPE_RT_SUCCESS;
  double factor = double(grad) / double(rows);
  crossEntropyGradKernel<<<blocksForRows(rows), kThreads, 0, currentStream()>>>(
      logits, labels, labelType == GPIPE_RT_I64, out, rows, classes, factor,
      nullptr);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_cross_entropy_grad_at_f32(
    const float *logits, const int64_t *logitsShape, int32_t logitsRank,
    gpipe_rt_dtype labelType, const void *labels, const float *grad,
    float *out) {
  Kernel kernel = cudaKernel("cross_entropy_grad");
  if (!grad)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel) << "null grad";
  LogitsArgs args;
  GPIPE_RT_TRY(checkCrossEntropyGrad(kernel, logitsShape, logitsRank, labelType,
                                     labels, args));
  GPIPE_RT_TRY(checkCrossEntropyGradResult(kernel, logits, out, args));
  int64_t rows = args.rows, classes = args.classes;
  GPIPE_RT_TRY(checkIndices(
      kernel, labelType, labels, rows, classes,
      indexInfo(kCrossEntropyGrad, args.rowShape, Shape(), classes, 0)));
  if (args.logits.numElements == 0)
    return GPIPE_RT_SUCCESS;
  crossEntropyGradKernel<<<blocksForRows(rows), kThreads, 0, currentStream()>>>(
      logits, labels, labelType == GPIPE_RT_I64, out, rows, classes, 0.0, grad);
  return launched(kernel);
}

__global__ void fillKernel(float *out, int64_t n, float value) {
  GPIPE_RT_GRID_LOOP(i, n) { out[i] = value; }
}

extern "C" gpipe_rt_status gpipe_rt_cuda_fill_f32(float *out, int64_t count,
                                                  float value) {
  Kernel kernel = cudaKernel("fill");
  GPIPE_RT_TRY(checkBuffers(kernel, count, {{"out", out}}));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  fillKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(out, count,
                                                                 value);
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cuda_sgd_update_f32(float *param,
                                                        const float *grad,
                                                        int64_t count,
                                                        float lr) {
  Kernel kernel = cudaKernel("sgd_update");
  GPIPE_RT_TRY(checkSgdUpdate(kernel, param, grad, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  sgdKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(param, grad,
                                                                count, lr);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_momentum_update_f32(float *param, const float *grad, float *buf,
                                  int64_t count, float lr, float momentum,
                                  float weightDecay, int64_t step) {
  Kernel kernel = cudaKernel("momentum_update");
  GPIPE_RT_TRY(checkCount(kernel, count));
  if (step < 1)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "step must be 1 or more, got " << step;
  GPIPE_RT_TRY(checkPointer(kernel, "param", param, count));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, count));
  if (momentum != 0.0f)
    GPIPE_RT_TRY(checkPointer(kernel, "momentum buffer", buf, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  cudaStream_t stream = currentStream();
  if (momentum == 0.0f && weightDecay == 0.0f)
    sgdKernel<<<blocksFor(count), kThreads, 0, stream>>>(param, grad, count,
                                                         lr);
  else if (momentum == 0.0f)
    sgdDecayKernel<<<blocksFor(count), kThreads, 0, stream>>>(
        param, grad, count, lr, weightDecay);
  else
    momentumKernel<<<blocksFor(count), kThreads, 0, stream>>>(
        param, grad, buf, count, lr, momentum, weightDecay, step == 1);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_adamw_update_f32(float *param, const float *grad, float *m,
                               float *v, int64_t count, double lr, double beta1,
                               double beta2, double eps, double weightDecay,
                               int64_t step) {
  Kernel kernel = cudaKernel("adamw_update");
  GPIPE_RT_TRY(checkCount(kernel, count));
  if (step < 1)
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "step must be 1 or more, got " << step;
  GPIPE_RT_TRY(checkPointer(kernel, "param", param, count));
  GPIPE_RT_TRY(checkPointer(kernel, "grad", grad, count));
  GPIPE_RT_TRY(checkPointer(kernel, "first moments", m, count));
  GPIPE_RT_TRY(checkPointer(kernel, "second moments", v, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  // The scalar factors in double, rounded to f32 once, as the CPU engine
  // computes them.
  double t = double(step);
  AdamFactors f;
  f.decay = float(1.0 - lr * weightDecay);
  f.oneMinusBeta1 = float(1.0 - beta1);
  f.beta2 = float(beta2);
  f.oneMinusBeta2 = float(1.0 - beta2);
  f.stepSize = float(lr / (1.0 - std::pow(beta1, t)));
  f.correction2 = float(std::sqrt(1.0 - std::pow(beta2, t)));
  f.eps = float(eps);
  adamwKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(
      param, grad, m, v, count, f);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_accumulate_f32(float *acc,
                                                        const float *grad,
                                                        int64_t count,
                                                        int32_t first) {
  Kernel kernel = cudaKernel("accumulate");
  GPIPE_RT_TRY(checkAccumulate(kernel, acc, grad, count));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  if (first)
    return moveBytes(kernel, acc, grad, size_t(count) * sizeof(float));
  accumulateKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(
      acc, grad, count);
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Parameter initialization
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cuda_fill_init_f32(gpipe_rt_init init, float *out, int64_t count,
                            double scale, uint64_t seed, uint64_t stream) {
  Kernel kernel = cudaKernel("fill_init");
  GPIPE_RT_TRY(checkFillInit(kernel, init, out, count, scale));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  if (init == GPIPE_RT_INIT_ZEROS || init == GPIPE_RT_INIT_ONES) {
    fillConstantKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(
        out, count, init == GPIPE_RT_INIT_ONES ? 1.0f : 0.0f);
    return launched(kernel);
  }
  uint64_t key = mix64(seed ^ mix64(stream));
  fillRandomKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(
      out, count, init == GPIPE_RT_INIT_UNIFORM, key, scale);
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

namespace gpipe::rt::cuda {
namespace {

__global__ void dropoutKernel(const float *in, float *out, int64_t n,
                              float ratio, float scale, uint64_t key) {
  GPIPE_RT_GRID_LOOP(i, n) {
    uint64_t bits = mix64(key + uint64_t(i) * kGoldenGamma);
    float u = float(bits >> 40) * 0x1.0p-24f;
    out[i] = u >= ratio ? __fmul_rn(in[i], scale) : 0.0f;
  }
}

} // namespace
} // namespace gpipe::rt::cuda

extern "C" gpipe_rt_status gpipe_rt_cuda_dropout_f32(const float *in,
                                                     float *out, int64_t count,
                                                     float ratio, uint64_t key,
                                                     uint64_t stream) {
  using namespace gpipe::rt::cuda;
  Kernel kernel = cudaKernel("dropout");
  GPIPE_RT_TRY(checkDropout(kernel, in, out, count, ratio));
  if (count == 0)
    return GPIPE_RT_SUCCESS;
  const float scale = float(1.0 / (1.0 - double(ratio)));
  dropoutKernel<<<blocksFor(count), kThreads, 0, currentStream()>>>(
      in, out, count, ratio, scale, mix64(key ^ mix64(stream)));
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch normalization
//
// The same arithmetic as the CPU kernels (lib/Kernels/CPU/ConvKernels.cpp)
// in the same orders wherever a thread owns a whole sum: pooling, col2im,
// the running statistics and the float rounding of every double result give
// the CPU's bits. The convolution's products are cuBLAS's (within float
// rounding of OpenBLAS's) and the per-channel sums of the bias gradient and
// of batch norm run one block per channel with a fixed tree (within double
// rounding of the CPU's sequential sums). No atomics: every result element
// is written by one thread.
//===----------------------------------------------------------------------===//

namespace gpipe::rt::cuda {
namespace {

/// im2col of one image's `channels` channels (Window2d as on the CPU): one
/// thread per entry of the [channels * kh * kw, oh * ow] column matrix.
__global__ void im2colKernel(const float *img, Window2d a, int64_t channels,
                             float *col) {
  int64_t positions = a.oh * a.ow;
  int64_t total = channels * a.kh * a.kw * positions;
  GPIPE_RT_GRID_LOOP(e, total) {
    int64_t p = e % positions, row = e / positions;
    int64_t y = p / a.ow, x = p % a.ow;
    int64_t j = row % a.kw, i = (row / a.kw) % a.kh, c = row / (a.kw * a.kh);
    int64_t r = y * a.strideH - a.padTop + i * a.dilationH;
    int64_t q = x * a.strideW - a.padLeft + j * a.dilationW;
    col[e] = r >= 0 && r < a.h && q >= 0 && q < a.w
                 ? img[(c * a.h + r) * a.w + q]
                 : 0.0f;
  }
}

/// The adjoint of im2col: one thread per image element, summing (from 0,
/// in float) the column entries read from it in the order of the window
/// taps (i, then j), as the CPU's col2im adds them.
__global__ void col2imKernel(const float *col, Window2d a, int64_t channels,
                             float *img) {
  int64_t positions = a.oh * a.ow;
  int64_t total = channels * a.h * a.w;
  GPIPE_RT_GRID_LOOP(e, total) {
    int64_t q = e % a.w, r = (e / a.w) % a.h, c = e / (a.w * a.h);
    float sum = 0.0f;
    for (int64_t i = 0; i < a.kh; ++i) {
      int64_t ty = r + a.padTop - i * a.dilationH;
      if (ty < 0 || ty % a.strideH != 0 || ty / a.strideH >= a.oh)
        continue;
      int64_t y = ty / a.strideH;
      for (int64_t j = 0; j < a.kw; ++j) {
        int64_t tx = q + a.padLeft - j * a.dilationW;
        if (tx < 0 || tx % a.strideW != 0 || tx / a.strideW >= a.ow)
          continue;
        int64_t x = tx / a.strideW;
        sum = __fadd_rn(
            sum, col[((c * a.kh + i) * a.kw + j) * positions + y * a.ow + x]);
      }
    }
    img[e] = sum;
  }
}

/// out[n, o, p] += bias[o] over `count` elements of `channels` x
/// `positions` per image.
__global__ void addChannelBiasKernel(float *out, const float *bias,
                                     int64_t channels, int64_t positions,
                                     int64_t count) {
  GPIPE_RT_GRID_LOOP(e, count) {
    out[e] = __fadd_rn(out[e], bias[(e / positions) % channels]);
  }
}

/// The m = n * inner values of channel `c` of an [n, channels, inner]
/// tensor: value k is image k / inner, position k % inner.
__device__ __forceinline__ int64_t channelAt(int64_t k, int64_t c,
                                             int64_t channels, int64_t inner) {
  return ((k / inner) * channels + c) * inner + k % inner;
}

/// biasGrad[o] = the sum in double of grad over images and positions: one
/// block per channel, a fixed tree.
__global__ void channelSumKernel(const float *grad, int64_t n, int64_t channels,
                                 int64_t inner, float *out) {
  __shared__ double shared[kThreads];
  int64_t c = blockIdx.x;
  int64_t m = n * inner;
  double acc = 0.0;
  for (int64_t k = threadIdx.x; k < m; k += kThreads)
    acc += double(grad[channelAt(k, c, channels, inner)]);
  double total = blockSum<kThreads>(acc, shared);
  if (threadIdx.x == 0)
    out[c] = float(total);
}

/// Max pooling's pick for output (y, x) of `plane`: the first largest input
/// of the window in row-major order, NaN over any number; -1 when the
/// window holds no input position (the CPU's maxPoolArgmax).
__device__ int64_t maxPoolArgmax(const Window2d &a, const float *plane,
                                 int64_t y, int64_t x) {
  int64_t best = -1;
  float bestValue = 0.0f;
  for (int64_t i = 0; i < a.kh; ++i) {
    int64_t r = y * a.strideH - a.padTop + i * a.dilationH;
    if (r < 0 || r >= a.h)
      continue;
    for (int64_t j = 0; j < a.kw; ++j) {
      int64_t q = x * a.strideW - a.padLeft + j * a.dilationW;
      if (q < 0 || q >= a.w)
        continue;
      float v = plane[r * a.w + q];
      if (best < 0 || v > bestValue || (isnan(v) && !isnan(bestValue))) {
        best = r * a.w + q;
        bestValue = v;
      }
    }
  }
  return best;
}

/// Calls fn(y, x) for every output position whose window covers input
/// (r, q), in row-major order of the outputs (dilation `dh`, `dw`).
template <typename Fn>
__device__ __forceinline__ void
forEachCoveringOutput(const Window2d &a, int64_t dh, int64_t dw, int64_t r,
                      int64_t q, Fn &&fn) {
  // Later taps belong to earlier outputs: walk the taps backwards.
  for (int64_t i = a.kh - 1; i >= 0; --i) {
    int64_t ty = r + a.padTop - i * dh;
    if (ty < 0 || ty % a.strideH != 0 || ty / a.strideH >= a.oh)
      continue;
    for (int64_t j = a.kw - 1; j >= 0; --j) {
      int64_t tx = q + a.padLeft - j * dw;
      if (tx < 0 || tx % a.strideW != 0 || tx / a.strideW >= a.ow)
        continue;
      fn(ty / a.strideH, tx / a.strideW);
    }
  }
}

__global__ void maxPoolKernel(const float *in, Window2d a, float *out) {
  GPIPE_RT_GRID_LOOP(e, a.outCount) {
    int64_t x = e % a.ow, y = (e / a.ow) % a.oh, plane = e / (a.ow * a.oh);
    const float *img = in + plane * a.h * a.w;
    int64_t at = maxPoolArgmax(a, img, y, x);
    out[e] = at < 0 ? -INFINITY : img[at];
  }
}

/// One thread per input element: the gradients of the outputs that picked
/// it, added in row-major order of the outputs, as the CPU adds them.
__global__ void maxPoolGradKernel(const float *in, const float *grad,
                                  Window2d a, float *inputGrad) {
  GPIPE_RT_GRID_LOOP(e, a.inCount) {
    int64_t q = e % a.w, r = (e / a.w) % a.h, plane = e / (a.w * a.h);
    const float *img = in + plane * a.h * a.w;
    const float *dy = grad + plane * a.oh * a.ow;
    int64_t self = r * a.w + q;
    float sum = 0.0f;
    forEachCoveringOutput(a, a.dilationH, a.dilationW, r, q,
                          [&](int64_t y, int64_t x) {
                            if (maxPoolArgmax(a, img, y, x) == self)
                              sum = __fadd_rn(sum, dy[y * a.ow + x]);
                          });
    inputGrad[e] = sum;
  }
}

/// avgPoolDivisor of KernelArgs.h, on the device.
__device__ __forceinline__ int64_t deviceAvgPoolDivisor(const Window2d &a,
                                                        int64_t y, int64_t x,
                                                        bool countIncludePad) {
  int64_t h0 = y * a.strideH - a.padTop, w0 = x * a.strideW - a.padLeft;
  int64_t h1 = h0 + a.kh, w1 = w0 + a.kw;
  if (countIncludePad) {
    h1 = min(h1, a.h + a.padBottom);
    w1 = min(w1, a.w + a.padRight);
  } else {
    h0 = max(h0, int64_t(0));
    w0 = max(w0, int64_t(0));
    h1 = min(h1, a.h);
    w1 = min(w1, a.w);
  }
  return max(h1 - h0, int64_t(0)) * max(w1 - w0, int64_t(0));
}

__global__ void avgPoolKernel(const float *in, Window2d a, bool countIncludePad,
                              float *out) {
  GPIPE_RT_GRID_LOOP(e, a.outCount) {
    int64_t x = e % a.ow, y = (e / a.ow) % a.oh, plane = e / (a.ow * a.oh);
    const float *img = in + plane * a.h * a.w;
    double sum = 0.0;
    for (int64_t i = 0; i < a.kh; ++i) {
      int64_t r = y * a.strideH - a.padTop + i;
      if (r < 0 || r >= a.h)
        continue;
      for (int64_t j = 0; j < a.kw; ++j) {
        int64_t q = x * a.strideW - a.padLeft + j;
        if (q >= 0 && q < a.w)
          sum += double(img[r * a.w + q]);
      }
    }
    int64_t divisor = deviceAvgPoolDivisor(a, y, x, countIncludePad);
    out[e] = float(sum / double(divisor));
  }
}

/// One thread per input element: each covering output's gradient over its
/// divisor, added in row-major order of the outputs.
__global__ void avgPoolGradKernel(const float *grad, Window2d a,
                                  bool countIncludePad, float *inputGrad) {
  GPIPE_RT_GRID_LOOP(e, a.inCount) {
    int64_t q = e % a.w, r = (e / a.w) % a.h, plane = e / (a.w * a.h);
    const float *dy = grad + plane * a.oh * a.ow;
    float sum = 0.0f;
    forEachCoveringOutput(a, 1, 1, r, q, [&](int64_t y, int64_t x) {
      int64_t divisor = deviceAvgPoolDivisor(a, y, x, countIncludePad);
      if (divisor > 0)
        sum = __fadd_rn(sum, __fdiv_rn(dy[y * a.ow + x], float(divisor)));
    });
    inputGrad[e] = sum;
  }
}

/// The mean and biased variance of channel `c` (two passes in double, a
/// fixed tree over the block); every thread gets both.
__device__ void channelMoments(const float *x, int64_t n, int64_t channels,
                               int64_t inner, int64_t c, double *shared,
                               double &mean, double &var) {
  int64_t m = n * inner;
  double acc = 0.0;
  for (int64_t k = threadIdx.x; k < m; k += kThreads)
    acc += double(x[channelAt(k, c, channels, inner)]);
  mean = blockSum<kThreads>(acc, shared) / double(m);
  acc = 0.0;
  for (int64_t k = threadIdx.x; k < m; k += kThreads) {
    double d = double(x[channelAt(k, c, channels, inner)]) - mean;
    acc += d * d;
  }
  var = blockSum<kThreads>(acc, shared) / double(m);
}

/// batch_norm: one block per channel.
__global__ void batchNormKernel(const float *in, ChannelSplit s,
                                const float *scale, const float *bias,
                                float epsilon, float *out) {
  __shared__ double shared[kThreads];
  int64_t c = blockIdx.x, m = s.n * s.inner;
  double mean, var;
  channelMoments(in, s.n, s.c, s.inner, c, shared, mean, var);
  double rstd = 1.0 / sqrt(var + double(epsilon));
  double k = double(scale[c]), b = double(bias[c]);
  for (int64_t i = threadIdx.x; i < m; i += kThreads) {
    int64_t at = channelAt(i, c, s.c, s.inner);
    out[at] = float((double(in[at]) - mean) * rstd * k + b);
  }
}

/// batch_norm_grad: one block per channel.
__global__ void batchNormGradKernel(const float *in, ChannelSplit s,
                                    const float *scale, const float *grad,
                                    float epsilon, const float *shift,
                                    float *inputGrad, float *scaleGrad,
                                    float *biasGrad, float *meanStat,
                                    float *varStat) {
  __shared__ double shared[kThreads];
  int64_t c = blockIdx.x, m = s.n * s.inner;
  if (inputGrad || scaleGrad || biasGrad) {
    double mean, var;
    channelMoments(in, s.n, s.c, s.inner, c, shared, mean, var);
    double rstd = 1.0 / sqrt(var + double(epsilon));
    double accDy = 0.0, accDyXhat = 0.0;
    for (int64_t i = threadIdx.x; i < m; i += kThreads) {
      int64_t at = channelAt(i, c, s.c, s.inner);
      accDy += double(grad[at]);
      accDyXhat += double(grad[at]) * ((double(in[at]) - mean) * rstd);
    }
    double sumDy = blockSum<kThreads>(accDy, shared);
    double sumDyXhat = blockSum<kThreads>(accDyXhat, shared);
    if (inputGrad) {
      double k = double(scale[c]) * rstd;
      double meanDy = sumDy / double(m), meanDyXhat = sumDyXhat / double(m);
      for (int64_t i = threadIdx.x; i < m; i += kThreads) {
        int64_t at = channelAt(i, c, s.c, s.inner);
        double xhat = (double(in[at]) - mean) * rstd;
        inputGrad[at] =
            float(k * (double(grad[at]) - meanDy - xhat * meanDyXhat));
      }
    }
    if (threadIdx.x == 0) {
      if (scaleGrad)
        scaleGrad[c] = float(sumDyXhat);
      if (biasGrad)
        biasGrad[c] = float(sumDy);
    }
  }
  if (meanStat || varStat) {
    double center = double(shift[c]);
    double accSum = 0.0, accSquares = 0.0;
    for (int64_t i = threadIdx.x; i < m; i += kThreads) {
      double d = double(in[channelAt(i, c, s.c, s.inner)]) - center;
      accSum += d;
      accSquares += d * d;
    }
    double sum = blockSum<kThreads>(accSum, shared);
    double squares = blockSum<kThreads>(accSquares, shared);
    if (threadIdx.x == 0) {
      if (meanStat)
        meanStat[c] = float(sum);
      if (varStat)
        varStat[c] = float(squares);
    }
  }
}

/// running_stats_update: one thread per channel, the CPU's double formula.
__global__ void runningStatsKernel(float *runningMean, float *runningVar,
                                   const float *meanStat, const float *varStat,
                                   int64_t channels, int64_t count,
                                   double momentum) {
  GPIPE_RT_GRID_LOOP(c, channels) {
    double n = double(count);
    double d = double(meanStat[c]) / n;
    double var = double(varStat[c]) / n - d * d;
    double mean = double(runningMean[c]);
    runningMean[c] = float((1.0 - momentum) * mean + momentum * (mean + d));
    runningVar[c] = float((1.0 - momentum) * double(runningVar[c]) +
                          momentum * var * n / (n - 1.0));
  }
}

/// A 1x1 window with unit strides and no padding reads the image itself.
bool isPointwise(const Window2d &a) {
  return a.kh == 1 && a.kw == 1 && a.strideH == 1 && a.strideW == 1 &&
         a.padTop == 0 && a.padLeft == 0 && a.padBottom == 0 &&
         a.padRight == 0 && a.oh == a.h && a.ow == a.w;
}

} // namespace
} // namespace gpipe::rt::cuda

extern "C" gpipe_rt_status
gpipe_rt_cuda_conv2d_f32(const float *in, const int64_t *inShape,
                         const float *weight, const int64_t *weightShape,
                         const float *bias, const int64_t *strides,
                         const int64_t *pads, const int64_t *dilations,
                         int64_t groups, float *out, const int64_t *outShape) {
  Kernel kernel = cudaKernel("conv2d");
  Window2d a;
  GPIPE_RT_TRY(checkConv2d(kernel, in, inShape, weight, weightShape, bias,
                           strides, pads, dilations, groups, out, outShape, a));
  if (a.outCount == 0)
    return GPIPE_RT_SUCCESS;
  cudaStream_t stream = currentStream();
  int64_t rows = a.groupIn * a.kh * a.kw, positions = a.oh * a.ow;
  bool pointwise = isPointwise(a);
  Scratch col;
  if (!pointwise)
    GPIPE_RT_TRY(col.allocate(kernel, size_t(a.groups * rows * positions) *
                                          sizeof(float)));
  // Per image: im2col of all its channels, then one product per group
  // (strided-batched over the groups).
  for (int64_t n = 0; n < a.n; ++n) {
    const float *img = in + n * a.c * a.h * a.w;
    const float *cols = img;
    if (!pointwise) {
      im2colKernel<<<blocksFor(a.groups * rows * positions), kThreads, 0,
                     stream>>>(img, a, a.c, col.as<float>());
      GPIPE_RT_TRY(launched(kernel));
      cols = col.as<float>();
    }
    GPIPE_RT_TRY(deviceSgemm(
        kernel, false, false, a.groupOut, positions, rows, 1.0f, weight,
        leadingDim(rows), cols, leadingDim(positions), 0.0f,
        out + n * a.outC * positions, leadingDim(positions), a.groups,
        a.groupOut * rows, rows * positions, a.groupOut * positions));
  }
  if (bias) {
    addChannelBiasKernel<<<blocksFor(a.outCount), kThreads, 0, stream>>>(
        out, bias, a.outC, positions, a.outCount);
    GPIPE_RT_TRY(launched(kernel));
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cuda_conv2d_grad_f32(
    const float *in, const int64_t *inShape, const float *weight,
    const int64_t *weightShape, const float *grad, const int64_t *gradShape,
    const int64_t *strides, const int64_t *pads, const int64_t *dilations,
    int64_t groups, float *inputGrad, float *weightGrad, float *biasGrad) {
  Kernel kernel = cudaKernel("conv2d_grad");
  Window2d a;
  GPIPE_RT_TRY(checkConv2dGrad(kernel, in, inShape, weight, weightShape, grad,
                               gradShape, strides, pads, dilations, groups,
                               inputGrad, weightGrad, biasGrad, a));
  cudaStream_t stream = currentStream();
  int64_t rows = a.groupIn * a.kh * a.kw, positions = a.oh * a.ow;
  if (biasGrad && a.outC > 0) {
    channelSumKernel<<<unsigned(a.outC), kThreads, 0, stream>>>(
        grad, a.n, a.outC, positions, biasGrad);
    GPIPE_RT_TRY(launched(kernel));
  }
  bool empty = a.n == 0 || positions == 0;
  if (weightGrad && a.weightCount > 0 && empty) {
    fillConstantKernel<<<blocksFor(a.weightCount), kThreads, 0, stream>>>(
        weightGrad, a.weightCount, 0.0f);
    GPIPE_RT_TRY(launched(kernel));
  }
  if (inputGrad && a.inCount > 0 && empty) {
    fillConstantKernel<<<blocksFor(a.inCount), kThreads, 0, stream>>>(
        inputGrad, a.inCount, 0.0f);
    GPIPE_RT_TRY(launched(kernel));
  }
  bool wantWeight = weightGrad && a.weightCount > 0;
  bool wantInput = inputGrad && a.inCount > 0;
  if (empty || (!wantWeight && !wantInput))
    return GPIPE_RT_SUCCESS;
  bool pointwise = isPointwise(a);
  size_t colBytes = size_t(a.groups * rows * positions) * sizeof(float);
  Scratch col, colGrad;
  if (!pointwise && wantWeight)
    GPIPE_RT_TRY(col.allocate(kernel, colBytes));
  if (!pointwise && wantInput)
    GPIPE_RT_TRY(colGrad.allocate(kernel, colBytes));
  for (int64_t n = 0; n < a.n; ++n) {
    int64_t imgOffset = n * a.c * a.h * a.w;
    const float *dy = grad + n * a.outC * positions;
    if (wantWeight) {
      // weightGrad[group] (+)= dy[group] x cols[group]^T, images in order.
      const float *cols = in + imgOffset;
      if (!pointwise) {
        im2colKernel<<<blocksFor(a.groups * rows * positions), kThreads, 0,
                       stream>>>(in + imgOffset, a, a.c, col.as<float>());
        GPIPE_RT_TRY(launched(kernel));
        cols = col.as<float>();
      }
      GPIPE_RT_TRY(deviceSgemm(
          kernel, false, true, a.groupOut, rows, positions, 1.0f, dy,
          leadingDim(positions), cols, leadingDim(positions),
          n == 0 ? 0.0f : 1.0f, weightGrad, leadingDim(rows), a.groups,
          a.groupOut * positions, rows * positions, a.groupOut * rows));
    }
    if (wantInput) {
      // inputGrad[image] = col2im(weight[group]^T x dy[group]).
      float *target = pointwise ? inputGrad + imgOffset : colGrad.as<float>();
      GPIPE_RT_TRY(deviceSgemm(
          kernel, true, false, rows, positions, a.groupOut, 1.0f, weight,
          leadingDim(rows), dy, leadingDim(positions), 0.0f, target,
          leadingDim(positions), a.groups, a.groupOut * rows,
          a.groupOut * positions, rows * positions));
      if (!pointwise) {
        col2imKernel<<<blocksFor(a.c * a.h * a.w), kThreads, 0, stream>>>(
            colGrad.as<float>(), a, a.c, inputGrad + imgOffset);
        GPIPE_RT_TRY(launched(kernel));
      }
    }
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_max_pool2d_f32(const float *in, const int64_t *inShape,
                             const int64_t *kernelDims, const int64_t *strides,
                             const int64_t *pads, const int64_t *dilations,
                             float *out, const int64_t *outShape) {
  Kernel kernel = cudaKernel("max_pool2d");
  Window2d a;
  GPIPE_RT_TRY(checkMaxPool2d(kernel, in, inShape, kernelDims, strides, pads,
                              dilations, out, outShape, a));
  if (a.outCount == 0)
    return GPIPE_RT_SUCCESS;
  maxPoolKernel<<<blocksFor(a.outCount), kThreads, 0, currentStream()>>>(in, a,
                                                                         out);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_max_pool2d_grad_f32(
    const float *in, const int64_t *inShape, const float *grad,
    const int64_t *gradShape, const int64_t *kernelDims, const int64_t *strides,
    const int64_t *pads, const int64_t *dilations, float *inputGrad) {
  Kernel kernel = cudaKernel("max_pool2d_grad");
  Window2d a;
  GPIPE_RT_TRY(checkMaxPool2dGrad(kernel, in, inShape, grad, gradShape,
                                  kernelDims, strides, pads, dilations,
                                  inputGrad, a));
  if (a.inCount == 0)
    return GPIPE_RT_SUCCESS;
  maxPoolGradKernel<<<blocksFor(a.inCount), kThreads, 0, currentStream()>>>(
      in, grad, a, inputGrad);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_avg_pool2d_f32(const float *in, const int64_t *inShape,
                             const int64_t *kernelDims, const int64_t *strides,
                             const int64_t *pads, int32_t countIncludePad,
                             float *out, const int64_t *outShape) {
  Kernel kernel = cudaKernel("avg_pool2d");
  Window2d a;
  GPIPE_RT_TRY(checkAvgPool2d(kernel, in, inShape, kernelDims, strides, pads,
                              out, outShape, a));
  if (a.outCount == 0)
    return GPIPE_RT_SUCCESS;
  avgPoolKernel<<<blocksFor(a.outCount), kThreads, 0, currentStream()>>>(
      in, a, countIncludePad != 0, out);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_avg_pool2d_grad_f32(
    const float *grad, const int64_t *gradShape, const int64_t *kernelDims,
    const int64_t *strides, const int64_t *pads, int32_t countIncludePad,
    float *inputGrad, const int64_t *inShape) {
  Kernel kernel = cudaKernel("avg_pool2d_grad");
  Window2d a;
  GPIPE_RT_TRY(checkAvgPool2dGrad(kernel, grad, gradShape, kernelDims, strides,
                                  pads, inputGrad, inShape, a));
  if (a.inCount == 0)
    return GPIPE_RT_SUCCESS;
  avgPoolGradKernel<<<blocksFor(a.inCount), kThreads, 0, currentStream()>>>(
      grad, a, countIncludePad != 0, inputGrad);
  return launched(kernel);
}

extern "C" gpipe_rt_status
gpipe_rt_cuda_batch_norm_f32(const float *in, const int64_t *shape,
                             int32_t rank, const float *scale,
                             const float *bias, float epsilon, float *out) {
  Kernel kernel = cudaKernel("batch_norm");
  ChannelSplit s;
  GPIPE_RT_TRY(
      checkBatchNorm(kernel, in, shape, rank, scale, bias, epsilon, out, s));
  if (s.count == 0)
    return GPIPE_RT_SUCCESS;
  if (s.c > int64_t(std::numeric_limits<int32_t>::max()))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "more channels (" << s.c << ") than a grid holds blocks";
  batchNormKernel<<<unsigned(s.c), kThreads, 0, currentStream()>>>(
      in, s, scale, bias, epsilon, out);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_batch_norm_grad_f32(
    const float *in, const int64_t *shape, int32_t rank, const float *scale,
    const float *grad, float epsilon, const float *shift, float *inputGrad,
    float *scaleGrad, float *biasGrad, float *meanStat, float *varStat) {
  Kernel kernel = cudaKernel("batch_norm_grad");
  ChannelSplit s;
  GPIPE_RT_TRY(checkBatchNormGrad(kernel, in, shape, rank, scale, grad, epsilon,
                                  shift, inputGrad, scaleGrad, biasGrad,
                                  meanStat, varStat, s));
  if (s.c == 0)
    return GPIPE_RT_SUCCESS;
  if (s.c > int64_t(std::numeric_limits<int32_t>::max()))
    return Error(GPIPE_RT_INVALID_ARGUMENT, kernel)
           << "more channels (" << s.c << ") than a grid holds blocks";
  // With no values (count 0) the sums are zeros and no input is read.
  batchNormGradKernel<<<unsigned(s.c), kThreads, 0, currentStream()>>>(
      in, s, scale, grad, epsilon, shift, s.count ? inputGrad : nullptr,
      scaleGrad, biasGrad, meanStat, varStat);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_running_stats_update_f32(
    float *runningMean, float *runningVar, const float *meanStat,
    const float *varStat, int64_t channels, int64_t count, double momentum) {
  Kernel kernel = cudaKernel("running_stats_update");
  GPIPE_RT_TRY(checkRunningStatsUpdate(kernel, runningMean, runningVar,
                                       meanStat, varStat, channels, count,
                                       momentum));
  if (channels == 0)
    return GPIPE_RT_SUCCESS;
  runningStatsKernel<<<blocksFor(channels), kThreads, 0, currentStream()>>>(
      runningMean, runningVar, meanStat, varStat, channels, count, momentum);
  return launched(kernel);
}

//===----------------------------------------------------------------------===//
// Fused attention
//===----------------------------------------------------------------------===//

namespace gpipe::rt::cuda {
namespace {

/// AttentionArgs as the device reads it.
struct AttentionDims {
  int64_t count, rows, depth, keys, valueDim;
  int32_t leadingRank;
  int64_t leading[kMaxRank];
  int64_t biasStrides[kMaxRank];
  float scale;

  explicit AttentionDims(const AttentionArgs &a, float scale)
      : count(a.count), rows(a.rows), depth(a.depth), keys(a.keys),
        valueDim(a.valueDim), leadingRank(a.leadingRank), scale(scale) {
    std::copy(a.leading, a.leading + kMaxRank, leading);
    std::copy(a.biasStrides, a.biasStrides + kMaxRank, biasStrides);
  }
};

/// Row t of leading index n: scale * (q_t . k_s) + bias, the dot product
/// summed over D in order (the CPU's order).
__device__ float attentionScore(const AttentionDims &a, const float *q,
                                const float *k, const float *bias, int64_t n,
                                int64_t t, int64_t s) {
  const float *qt = q + (n * a.rows + t) * a.depth;
  const float *ks = k + (n * a.keys + s) * a.depth;
  float dot = 0.0f;
  for (int64_t d = 0; d < a.depth; ++d)
    dot = __fadd_rn(dot, __fmul_rn(qt[d], ks[d]));
  float x = __fmul_rn(dot, a.scale);
  if (bias) {
    int64_t offset = 0, rest = n;
    for (int32_t d = a.leadingRank - 1; d >= 0; --d) {
      offset += (rest % a.leading[d]) * a.biasStrides[d];
      rest /= a.leading[d];
    }
    offset +=
        t * a.biasStrides[a.leadingRank] + s * a.biasStrides[a.leadingRank + 1];
    x = __fadd_rn(x, bias[offset]);
  }
  return x;
}

/// The row's maximum score and sum of e^(score - max) (in double).
__device__ void attentionRowStats(const AttentionDims &a, const float *q,
                                  const float *k, const float *bias, int64_t n,
                                  int64_t t, float &m, float &total) {
  m = -INFINITY;
  for (int64_t s = 0; s < a.keys; ++s)
    m = fmaxf(m, attentionScore(a, q, k, bias, n, t, s));
  double sum = 0.0;
  for (int64_t s = 0; s < a.keys; ++s)
    sum += double(expf(__fsub_rn(attentionScore(a, q, k, bias, n, t, s), m)));
  total = float(sum);
}

__device__ float attentionProbability(const AttentionDims &a, const float *q,
                                      const float *k, const float *bias,
                                      int64_t n, int64_t t, int64_t s, float m,
                                      float total) {
  // Every key masked out: zeros, as on the CPU.
  if (m == -INFINITY)
    return 0.0f;
  return __fdiv_rn(expf(__fsub_rn(attentionScore(a, q, k, bias, n, t, s), m)),
                   total);
}

/// g_t . v_s in order over E.
__device__ float attentionGradDot(const AttentionDims &a, const float *grad,
                                  const float *v, int64_t n, int64_t t,
                                  int64_t s) {
  const float *gt = grad + (n * a.rows + t) * a.valueDim;
  const float *vs = v + (n * a.keys + s) * a.valueDim;
  float dot = 0.0f;
  for (int64_t e = 0; e < a.valueDim; ++e)
    dot = __fadd_rn(dot, __fmul_rn(gt[e], vs[e]));
  return dot;
}

/// One thread per (n, t) row.
__global__ void attentionKernel(AttentionDims a, const float *q, const float *k,
                                const float *v, const float *bias, float *out) {
  GPIPE_RT_GRID_LOOP(row, a.count * a.rows) {
    int64_t n = row / a.rows, t = row % a.rows;
    float m, total;
    attentionRowStats(a, q, k, bias, n, t, m, total);
    float *o = out + row * a.valueDim;
    for (int64_t e = 0; e < a.valueDim; ++e)
      o[e] = 0.0f;
    for (int64_t s = 0; s < a.keys; ++s) {
      float p = attentionProbability(a, q, k, bias, n, t, s, m, total);
      const float *vs = v + (n * a.keys + s) * a.valueDim;
      for (int64_t e = 0; e < a.valueDim; ++e)
        o[e] = __fadd_rn(o[e], __fmul_rn(p, vs[e]));
    }
  }
}

/// One thread per (n, t) row: the row's statistics (max, sum, and
/// sum_s p dp in double) into `stats`, and q's gradient.
__global__ void attentionGradRowsKernel(AttentionDims a, const float *q,
                                        const float *k, const float *v,
                                        const float *bias, const float *grad,
                                        float *stats, float *qGrad) {
  GPIPE_RT_GRID_LOOP(row, a.count * a.rows) {
    int64_t n = row / a.rows, t = row % a.rows;
    float m, total;
    attentionRowStats(a, q, k, bias, n, t, m, total);
    double dot = 0.0;
    for (int64_t s = 0; s < a.keys; ++s)
      dot += double(attentionProbability(a, q, k, bias, n, t, s, m, total)) *
             double(attentionGradDot(a, grad, v, n, t, s));
    float rowDot = float(dot);
    stats[3 * row] = m;
    stats[3 * row + 1] = total;
    stats[3 * row + 2] = rowDot;
    float *dq = qGrad + row * a.depth;
    for (int64_t d = 0; d < a.depth; ++d)
      dq[d] = 0.0f;
    for (int64_t s = 0; s < a.keys; ++s) {
      float p = attentionProbability(a, q, k, bias, n, t, s, m, total);
      float ds = __fmul_rn(
          p, __fsub_rn(attentionGradDot(a, grad, v, n, t, s), rowDot));
      const float *ks = k + (n * a.keys + s) * a.depth;
      for (int64_t d = 0; d < a.depth; ++d)
        dq[d] = __fadd_rn(dq[d], __fmul_rn(ds, ks[d]));
    }
    for (int64_t d = 0; d < a.depth; ++d)
      dq[d] = __fmul_rn(dq[d], a.scale);
  }
}

/// One thread per (n, s) key: k's and v's gradients, the rows in order.
__global__ void attentionGradKeysKernel(AttentionDims a, const float *q,
                                        const float *k, const float *v,
                                        const float *bias, const float *grad,
                                        const float *stats, float *kGrad,
                                        float *vGrad) {
  GPIPE_RT_GRID_LOOP(key, a.count * a.keys) {
    int64_t n = key / a.keys, s = key % a.keys;
    float *dk = kGrad + key * a.depth;
    float *dv = vGrad + key * a.valueDim;
    for (int64_t d = 0; d < a.depth; ++d)
      dk[d] = 0.0f;
    for (int64_t e = 0; e < a.valueDim; ++e)
      dv[e] = 0.0f;
    for (int64_t t = 0; t < a.rows; ++t) {
      const float *st = stats + 3 * (n * a.rows + t);
      float p = attentionProbability(a, q, k, bias, n, t, s, st[0], st[1]);
      float ds =
          __fmul_rn(p, __fsub_rn(attentionGradDot(a, grad, v, n, t, s), st[2]));
      float c = __fmul_rn(a.scale, ds);
      const float *qt = q + (n * a.rows + t) * a.depth;
      for (int64_t d = 0; d < a.depth; ++d)
        dk[d] = __fadd_rn(dk[d], __fmul_rn(c, qt[d]));
      const float *gt = grad + (n * a.rows + t) * a.valueDim;
      for (int64_t e = 0; e < a.valueDim; ++e)
        dv[e] = __fadd_rn(dv[e], __fmul_rn(p, gt[e]));
    }
  }
}

} // namespace
} // namespace gpipe::rt::cuda

extern "C" gpipe_rt_status gpipe_rt_cuda_attention_f32(
    const float *q, const float *k, const float *v, const int64_t *qShape,
    int32_t rank, int64_t keys, int64_t valueDim, const float *bias,
    const int64_t *biasShape, int32_t biasRank, float scale, float *out) {
  Kernel kernel = cudaKernel("attention");
  AttentionArgs args;
  float *outs[1] = {out};
  GPIPE_RT_TRY(checkAttention(kernel, q, k, v, qShape, rank, keys, valueDim,
                              bias, biasShape, biasRank, scale, nullptr, outs,
                              1, args));
  int64_t rows = args.count * args.rows;
  if (rows == 0 || args.valueDim == 0)
    return GPIPE_RT_SUCCESS;
  attentionKernel<<<blocksFor(rows), kThreads, 0, currentStream()>>>(
      AttentionDims(args, scale), q, k, v, args.hasBias ? bias : nullptr, out);
  return launched(kernel);
}

extern "C" gpipe_rt_status gpipe_rt_cuda_attention_grad_f32(
    const float *q, const float *k, const float *v, const int64_t *qShape,
    int32_t rank, int64_t keys, int64_t valueDim, const float *bias,
    const int64_t *biasShape, int32_t biasRank, float scale, const float *grad,
    float *qGrad, float *kGrad, float *vGrad) {
  Kernel kernel = cudaKernel("attention_grad");
  AttentionArgs args;
  float *outs[3] = {qGrad, kGrad, vGrad};
  GPIPE_RT_TRY(checkAttention(kernel, q, k, v, qShape, rank, keys, valueDim,
                              bias, biasShape, biasRank, scale, grad, outs, 3,
                              args));
  int64_t rows = args.count * args.rows, keyRows = args.count * args.keys;
  if (rows == 0 && keyRows == 0)
    return GPIPE_RT_SUCCESS;
  const float *b = args.hasBias ? bias : nullptr;
  AttentionDims dims(args, scale);
  Scratch stats;
  GPIPE_RT_TRY(stats.allocate(kernel, size_t(rows) * 3 * sizeof(float)));
  if (rows > 0) {
    attentionGradRowsKernel<<<blocksFor(rows), kThreads, 0, currentStream()>>>(
        dims, q, k, v, b, grad, stats.as<float>(), qGrad);
    GPIPE_RT_TRY(launched(kernel));
  }
  if (keyRows > 0) {
    attentionGradKeysKernel<<<blocksFor(keyRows), kThreads, 0,
                              currentStream()>>>(
        dims, q, k, v, b, grad, stats.as<float>(), kGrad, vGrad);
    GPIPE_RT_TRY(launched(kernel));
  }
  return GPIPE_RT_SUCCESS;
}
