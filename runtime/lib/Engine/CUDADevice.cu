//===- CUDADevice.cu - The CUDA device of the training engine -*- C++ -*-===//
//
// Device.h for --target cuda models (CUDADevice.h).
//
// Every rank the process runs gets, on its GPU, a compute stream (the
// kernels' stream: gpipe_rt_cuda_set_stream), a communication stream (NCCL),
// two ordering events, one timing event per action boundary and pinned
// staging for the data it loads. Within a step the host only enqueues:
//
//   * loads: the engine fills a pinned slot, one async copy to the arena;
//   * inspections (losses, payloads leaving a stage, gradient blocks): a
//     probe kernel writes the first value and the first non-finite index
//     into a device record; the records come back when the step ends;
//   * shared-GPU transfers (local transport): the thread completing the
//     rendezvous makes the receiver's communication stream wait for both
//     compute streams' "ready" events, copies device to device on it,
//     records "done" there and makes both compute streams wait for "done"
//     (the planner may reuse the sent buffer after the send). Every stream
//     stays in program order; neither host thread waits for the GPU;
//   * NCCL transfers: the communication stream waits for the compute
//     stream's "ready" event, runs ncclSend/ncclRecv, records "done", and
//     the compute stream waits for it. Transfers are enqueued in each rank's
//     program order on one communicator and one stream, so the pairs meet in
//     the order the schedule verifier proved deadlock-free under rendezvous;
//     every other wait only points back to earlier work of the same rank.
//
// finishStep is the one host wait inside a step: it polls both streams
// against the run's deadline, the abort flag and NCCL's asynchronous error,
// aborting the communicator when a peer died or stalled, then reads the
// kernels' device-side error record, the inspection records and the action
// timings.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CUDADevice.h"
#include "gpipe/Runtime/CUDAKernels.h"
#include "gpipe/Runtime/Optimizer.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpipe::rt {
namespace {

using Clock = std::chrono::steady_clock;

Status cudaError(const char *what, cudaError_t error) {
  return Status::error(std::string(what) + ": " + cudaGetErrorName(error) +
                       " (" + cudaGetErrorString(error) + ")");
}

#define GPIPE_CUDA_TRY(what, call)                                             \
  do {                                                                         \
    cudaError_t gpipeError = (call);                                           \
    if (gpipeError != cudaSuccess)                                             \
      return cudaError(what, gpipeError);                                      \
  } while (0)

Status ncclError(const char *what, ncclResult_t result) {
  return Status::error(std::string(what) + ": " + ncclGetErrorString(result));
}

//===----------------------------------------------------------------------===//
// The probe kernels
//===----------------------------------------------------------------------===//

/// What a probe found (Device.h's Inspection, as the device writes it).
struct ProbeRecord {
  unsigned long long badIndex; // ~0 when every value is finite
  float first;
  float badValue;
};

constexpr int kProbeThreads = 256;
constexpr int kProbeMaxBlocks = 1024;

/// The lowest index of a non-finite value, by atomicMin: the minimum does
/// not depend on the order the blocks run in.
__global__ void probeScan(const float *src, int64_t count, ProbeRecord *rec) {
  unsigned long long mine = ~0ull;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    if (!isfinite(src[i])) {
      mine = (unsigned long long)i;
      break; // the first in this thread's (increasing) sequence
    }
  __shared__ unsigned long long lowest[kProbeThreads];
  lowest[threadIdx.x] = mine;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half && lowest[threadIdx.x + half] < lowest[threadIdx.x])
      lowest[threadIdx.x] = lowest[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0 && lowest[0] != ~0ull)
    atomicMin(&rec->badIndex, lowest[0]);
}

__global__ void probeFinish(const float *src, int64_t count, ProbeRecord *rec) {
  rec->first = count > 0 ? src[0] : 0.0f;
  rec->badValue = rec->badIndex != ~0ull ? src[rec->badIndex] : 0.0f;
}

//===----------------------------------------------------------------------===//
// Ranks
//===----------------------------------------------------------------------===//

class CudaDevice;

class CudaRank final : public RankDevice {
public:
  CudaRank(CudaDevice &device, int gpu, int64_t rank, int64_t slots,
           int64_t slotBytes, int64_t actions)
      : device(device), gpu(gpu), rank(rank), slots(slots),
        slotBytes(slotBytes), actions(actions), capacity(2 * actions + 8) {}
  ~CudaRank() override;

  /// The kernels run on the GPU; no host BLAS to size.
  Status bind(int64_t blasThreads) override;
  Status beginStep() override;
  void actionBegin(int64_t action) override { mark(action, 0); }
  void actionEnd(int64_t action) override { mark(action, 1); }
  Status upload(void *dst, int64_t bytes, int64_t slot,
                const std::function<void(uint8_t *)> &fill) override;
  Status copyOut(void *host, const void *src, int64_t bytes) override {
    return copyNow(host, src, bytes, cudaMemcpyDeviceToHost);
  }
  Status copyIn(void *dst, const void *host, int64_t bytes) override {
    return copyNow(dst, host, bytes, cudaMemcpyHostToDevice);
  }
  Status poison(void *dst) override;
  bool inspect(const float *src, int64_t count, Inspection &out) override;
  Status optimizerStep(const OptimizerConfig &config, int64_t step,
                       float *params, const float *grads, float *state,
                       int64_t count) override;
  Status runningStatsUpdate(float *runningMean, float *runningVar,
                            const float *meanStat, const float *varStat,
                            int64_t channels, int64_t count,
                            double momentum) override;
  std::string kernelError() override {
    const char *m = gpipe_rt_cuda_last_error();
    return m ? m : "";
  }
  void clearKernelError() override { gpipe_rt_cuda_clear_error(); }
  Status finishStep(Clock::time_point deadline,
                    const std::atomic<bool> &aborted,
                    std::vector<Inspection> &inspections,
                    std::vector<ActionTiming> &timings) override;
  bool timesOnDevice() const override { return true; }
  void abandonStep(Clock::time_point deadline) override;

  CudaDevice &device;
  const int gpu;
  const int64_t rank, slots, slotBytes, actions, capacity;
  cudaStream_t compute = nullptr, comm = nullptr;
  /// Ordering events (no timing): this rank's data is ready to leave; a
  /// transfer into or out of this rank is done.
  cudaEvent_t ready = nullptr, done = nullptr;

private:
  void mark(int64_t action, int end);
  /// An async copy on the compute stream, waited for.
  Status copyNow(void *dst, const void *src, int64_t bytes,
                 cudaMemcpyKind kind);

  /// The first error of the step that a void call (actionBegin) met.
  std::string pendingError;
  cudaEvent_t stepStart = nullptr;
  /// Per action: begin and end timing events, and the step they were
  /// last recorded in.
  std::vector<cudaEvent_t> timing;
  std::vector<int64_t> recordedBegin, recordedEnd;
  int64_t step = -1;
  uint8_t *staging = nullptr;
  /// Probe records on the device, read back when the step ends.
  ProbeRecord *records = nullptr;
  std::vector<ProbeRecord> hostRecords;
  int64_t probes = 0;
};

//===----------------------------------------------------------------------===//
// The device
//===----------------------------------------------------------------------===//

class CudaDevice final : public Device {
public:
  explicit CudaDevice(int gpu) : gpu(gpu) {}
  ~CudaDevice() override {
    // The job is over: abort releases the communicator without waiting for
    // peers, which may already have exited (or died: then destroying it
    // could wait forever).
    if (comm || group)
      cudaSetDevice(gpu);
    if (group)
      ncclCommAbort(group);
    if (comm)
      ncclCommAbort(comm);
  }

  Status open() {
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess || count == 0)
      return Status::error(
          "no usable CUDA GPU for this --target cuda model: " +
          (error != cudaSuccess ? std::string(cudaGetErrorName(error)) + " (" +
                                      cudaGetErrorString(error) + ")"
                                : std::string("the driver reports no device")) +
          "; run it on a machine with an NVIDIA GPU, or recompile with "
          "--target cpu");
    if (gpu < 0 || gpu >= count)
      return Status::error("GPU " + std::to_string(gpu) +
                           " was asked for but this machine has " +
                           std::to_string(count) + " GPU" +
                           (count == 1 ? "" : "s") +
                           " (more ranks than GPUs: the nccl transport needs "
                           "one GPU per process)");
    cudaDeviceProp props;
    GPIPE_CUDA_TRY("cudaGetDeviceProperties",
                   cudaGetDeviceProperties(&props, gpu));
    name = props.name;
    GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
    // Keep the stream-ordered scratch (bf16 operand copies, reductions'
    // temporaries) in the pool between steps instead of returning it to
    // the driver at every synchronization.
    cudaMemPool_t pool = nullptr;
    GPIPE_CUDA_TRY("cudaDeviceGetDefaultMemPool",
                   cudaDeviceGetDefaultMemPool(&pool, gpu));
    uint64_t keep = UINT64_MAX;
    GPIPE_CUDA_TRY(
        "cudaMemPoolSetAttribute",
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    return Status::success();
  }

  const char *target() const override { return "cuda"; }
  std::string describe() const override {
    return name + " (GPU " + std::to_string(gpu) + ")";
  }
  bool hostMemory() const override { return false; }

  Status allocate(int64_t bytes, int64_t alignment, void *&ptr) override {
    // cudaMalloc returns 256-byte aligned memory.
    if (alignment > 256 || (alignment & (alignment - 1)))
      return Status::error("an alignment of " + std::to_string(alignment) +
                           " bytes is more than cudaMalloc's 256");
    GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
    cudaError_t error = cudaMalloc(&ptr, size_t(std::max<int64_t>(bytes, 1)));
    if (error != cudaSuccess) {
      size_t freeBytes = 0, totalBytes = 0;
      cudaMemGetInfo(&freeBytes, &totalBytes);
      cudaGetLastError();
      return Status::error("cudaMalloc of " + std::to_string(bytes) +
                           " bytes failed (" + cudaGetErrorString(error) +
                           "; " + std::to_string(freeBytes) + " of " +
                           std::to_string(totalBytes) + " bytes free)");
    }
    return Status::success();
  }
  void release(void *ptr) override {
    cudaSetDevice(gpu);
    cudaFree(ptr);
  }
  Status upload(void *dst, const void *src, int64_t bytes) override {
    GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
    GPIPE_CUDA_TRY("copying to the GPU",
                   cudaMemcpy(dst, src, size_t(bytes), cudaMemcpyHostToDevice));
    // From pageable memory the copy may still be in flight when cudaMemcpy
    // returns; the ranks' non-blocking streams would not wait for it.
    GPIPE_CUDA_TRY("waiting for the copy to the GPU",
                   cudaStreamSynchronize(nullptr));
    return Status::success();
  }
  Status download(void *dst, const void *src, int64_t bytes) override {
    GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
    GPIPE_CUDA_TRY("copying from the GPU",
                   cudaMemcpy(dst, src, size_t(bytes), cudaMemcpyDeviceToHost));
    return Status::success();
  }
  Status makeRank(int64_t rank, int64_t uploadSlots, int64_t slotBytes,
                  int64_t actions, std::unique_ptr<RankDevice> &out) override {
    out = std::make_unique<CudaRank>(*this, gpu, rank, uploadSlots, slotBytes,
                                     actions);
    return Status::success();
  }

  Status copyBetweenRanks(RankDevice &senderBase, const void *src,
                          RankDevice &receiverBase, void *dst,
                          int64_t bytes) override {
    auto &sender = static_cast<CudaRank &>(senderBase);
    auto &receiver = static_cast<CudaRank &>(receiverBase);
    GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
    // The copy runs on the receiver's communication stream once the
    // sender's data is ready and the receiver has reached the receive (its
    // buffer is free); both compute streams then wait for it.
    GPIPE_CUDA_TRY("recording the sender's event",
                   cudaEventRecord(sender.ready, sender.compute));
    GPIPE_CUDA_TRY("recording the receiver's event",
                   cudaEventRecord(receiver.ready, receiver.compute));
    GPIPE_CUDA_TRY("ordering the copy after the sender",
                   cudaStreamWaitEvent(receiver.comm, sender.ready, 0));
    GPIPE_CUDA_TRY("ordering the copy after the receiver",
                   cudaStreamWaitEvent(receiver.comm, receiver.ready, 0));
    GPIPE_CUDA_TRY("the device-to-device copy",
                   cudaMemcpyAsync(dst, src, size_t(bytes),
                                   cudaMemcpyDeviceToDevice, receiver.comm));
    GPIPE_CUDA_TRY("recording the copy's event",
                   cudaEventRecord(receiver.done, receiver.comm));
    GPIPE_CUDA_TRY("ordering the receiver after the copy",
                   cudaStreamWaitEvent(receiver.compute, receiver.done, 0));
    GPIPE_CUDA_TRY("ordering the sender after the copy",
                   cudaStreamWaitEvent(sender.compute, receiver.done, 0));
    return Status::success();
  }

  Status optimizerStep(const OptimizerConfig &config, int64_t step,
                       float *params, const float *grads, float *state,
                       int64_t count) override {
    GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
    void *previous = gpipe_rt_cuda_get_stream();
    gpipe_rt_cuda_set_stream(nullptr);
    Status s = update(config, step, params, grads, state, count);
    bool checked = s.ok() && gpipe_rt_cuda_check() == GPIPE_RT_SUCCESS;
    std::string failure =
        checked || !s.ok() ? std::string() : gpipe_rt_cuda_last_error();
    gpipe_rt_cuda_set_stream(previous);
    if (!failure.empty())
      return Status::error("optimizer: " + failure);
    return s;
  }

  Status runningStatsUpdate(float *runningMean, float *runningVar,
                            const float *meanStat, const float *varStat,
                            int64_t channels, int64_t count,
                            double momentum) override {
    GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
    void *previous = gpipe_rt_cuda_get_stream();
    gpipe_rt_cuda_set_stream(nullptr);
    Status s = updateRunningStats(runningMean, runningVar, meanStat, varStat,
                                  channels, count, momentum);
    bool checked = s.ok() && gpipe_rt_cuda_check() == GPIPE_RT_SUCCESS;
    std::string failure =
        checked || !s.ok() ? std::string() : gpipe_rt_cuda_last_error();
    gpipe_rt_cuda_set_stream(previous);
    if (!failure.empty())
      return Status::error("running statistics: " + failure);
    return s;
  }

  /// Enqueues the running-statistics update on the thread's current stream.
  static Status updateRunningStats(float *runningMean, float *runningVar,
                                   const float *meanStat, const float *varStat,
                                   int64_t channels, int64_t count,
                                   double momentum) {
    if (gpipe_rt_cuda_running_stats_update_f32(
            runningMean, runningVar, meanStat, varStat, channels, count,
            momentum) != GPIPE_RT_SUCCESS)
      return Status::error(std::string("running statistics: ") +
                           gpipe_rt_cuda_last_error());
    return Status::success();
  }

  /// Enqueues the update on the thread's current stream: the CUDA
  /// counterparts of applyOptimizer's cases, with its float conversions.
  static Status update(const OptimizerConfig &config, int64_t step,
                       float *params, const float *grads, float *state,
                       int64_t count) {
    gpipe_rt_status status;
    if (config.kind == OptimizerKind::Adam)
      status = gpipe_rt_cuda_adamw_update_f32(
          params, grads, state, state ? state + count : nullptr, count,
          config.lr, config.beta1, config.beta2, config.eps, config.weightDecay,
          step);
    else if (config.momentum == 0.0 && config.weightDecay == 0.0)
      status =
          gpipe_rt_cuda_sgd_update_f32(params, grads, count, float(config.lr));
    else
      status = gpipe_rt_cuda_momentum_update_f32(
          params, grads, config.momentum != 0.0 ? state : nullptr, count,
          float(config.lr), float(config.momentum), float(config.weightDecay),
          step);
    if (status != GPIPE_RT_SUCCESS)
      return Status::error(std::string("optimizer: ") +
                           gpipe_rt_cuda_last_error());
    return Status::success();
  }

  //===--------------------------------------------------------------------===//
  // NCCL
  //===--------------------------------------------------------------------===//

  bool supportsNccl() const override { return true; }

  Status ncclUniqueId(std::vector<uint8_t> &id) override {
    ::ncclUniqueId unique;
    ncclResult_t result = ncclGetUniqueId(&unique);
    if (result != ncclSuccess)
      return ncclError("ncclGetUniqueId", result);
    const uint8_t *bytes = reinterpret_cast<const uint8_t *>(&unique);
    id.assign(bytes, bytes + sizeof unique);
    return Status::success();
  }

  Status ncclInit(const std::vector<uint8_t> &id, int rank, int size,
                  Clock::time_point deadline) override {
    ::ncclUniqueId unique;
    if (id.size() != sizeof unique)
      return Status::error("the NCCL id has " + std::to_string(id.size()) +
                           " bytes, expected " + std::to_string(sizeof unique));
    std::memcpy(&unique, id.data(), sizeof unique);
    GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
    // Non-blocking, so that a peer that never joins is a timeout, not a
    // hang.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t result =
        ncclCommInitRankConfig(&comm, size, unique, rank, &config);
    if (result != ncclSuccess && result != ncclInProgress) {
      comm = nullptr;
      return ncclError("ncclCommInitRankConfig", result);
    }
    return settle("joining the NCCL communicator", deadline, nullptr);
  }

  /// Waits until the communicator's last call finished (non-blocking
  /// communicators return ncclInProgress), failing at `deadline`, when
  /// `aborted` is set or on an asynchronous NCCL error; the communicator
  /// is aborted then.
  Status settle(const char *what, Clock::time_point deadline,
                const std::atomic<bool> *aborted) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t result = ncclCommGetAsyncError(comm, &state);
      if (result != ncclSuccess)
        state = result;
      if (state == ncclSuccess)
        return Status::success();
      if (state != ncclInProgress)
        return ncclError(what, state);
      bool stopping = aborted && aborted->load();
      if (stopping || Clock::now() >= deadline) {
        abortComm();
        return Status::error(std::string(what) +
                             (stopping ? ": the run is stopping"
                                       : ": timed out; a peer may have died "
                                         "or stalled") +
                             " (NCCL communicator aborted)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  /// NCCL's asynchronous error, or success.
  Status asyncError() {
    if (!comm)
      return Status::success();
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t result = ncclCommGetAsyncError(comm, &state);
        result != ncclSuccess)
      state = result;
    if (state == ncclSuccess || state == ncclInProgress)
      return Status::success();
    return ncclError("NCCL", state);
  }
  void abortComm() {
    if (comm) {
      ncclCommAbort(comm);
      comm = nullptr;
    }
  }

  Status ncclTransfer(RankDevice &rankBase, bool send, void *data,
                      int64_t bytes, int peer, Clock::time_point deadline,
                      const std::atomic<bool> &aborted) override {
    auto &r = static_cast<CudaRank &>(rankBase);
    if (!comm)
      return Status::error("the NCCL communicator is not open");
    GPIPE_CUDA_TRY("ordering the transfer after the compute stream",
                   cudaEventRecord(r.ready, r.compute));
    GPIPE_CUDA_TRY("ordering the transfer after the compute stream",
                   cudaStreamWaitEvent(r.comm, r.ready, 0));
    ncclResult_t result =
        send ? ncclSend(data, size_t(bytes), ncclUint8, peer, comm, r.comm)
             : ncclRecv(data, size_t(bytes), ncclUint8, peer, comm, r.comm);
    if (result != ncclSuccess && result != ncclInProgress) {
      return ncclError(send ? "ncclSend" : "ncclRecv", result);
    }
    // Enqueuing finishes quickly; the transfer itself is waited for at the
    // end of the step.
    Status s = settle(send ? "ncclSend" : "ncclRecv", deadline, &aborted);
    if (!s.ok())
      return s;
    GPIPE_CUDA_TRY("ordering the compute stream after the transfer",
                   cudaEventRecord(r.done, r.comm));
    GPIPE_CUDA_TRY("ordering the compute stream after the transfer",
                   cudaStreamWaitEvent(r.compute, r.done, 0));
    return Status::success();
  }

  Status ncclReplicaGroup(int color, int key,
                          Clock::time_point deadline) override {
    if (!comm)
      return Status::error("the NCCL communicator is not open");
    if (group)
      return Status::success();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t result = ncclCommSplit(comm, color, key, &group, &config);
    if (result != ncclSuccess && result != ncclInProgress) {
      group = nullptr;
      return ncclError("ncclCommSplit", result);
    }
    std::swap(comm, group);
    Status s = settle("splitting the NCCL communicator into replica groups",
                      deadline, nullptr);
    std::swap(comm, group);
    return s;
  }

  Status ncclAllReduce(RankDevice &rankBase, float *grads, int64_t count,
                       Clock::time_point deadline,
                       const std::atomic<bool> &aborted) override {
    auto &r = static_cast<CudaRank &>(rankBase);
    if (!group)
      return Status::error("the NCCL replica group is not open");
    GPIPE_CUDA_TRY("ordering the all-reduce after the compute stream",
                   cudaEventRecord(r.ready, r.compute));
    GPIPE_CUDA_TRY("ordering the all-reduce after the compute stream",
                   cudaStreamWaitEvent(r.comm, r.ready, 0));
    ncclResult_t result = ::ncclAllReduce(grads, grads, size_t(count),
                                          ncclFloat, ncclSum, group, r.comm);
    if (result != ncclSuccess && result != ncclInProgress)
      return ncclError("ncclAllReduce", result);
    std::swap(comm, group);
    Status s = settle("ncclAllReduce", deadline, &aborted);
    std::swap(comm, group);
    if (!s.ok())
      return s;
    GPIPE_CUDA_TRY("ordering the compute stream after the all-reduce",
                   cudaEventRecord(r.done, r.comm));
    GPIPE_CUDA_TRY("ordering the compute stream after the all-reduce",
                   cudaStreamWaitEvent(r.compute, r.done, 0));
    return Status::success();
  }

  const int gpu;
  std::string name;
  ncclComm_t comm = nullptr;
  /// The replica group's communicator (data parallelism).
  ncclComm_t group = nullptr;
};

//===----------------------------------------------------------------------===//
// CudaRank
//===----------------------------------------------------------------------===//

CudaRank::~CudaRank() {
  cudaSetDevice(gpu);
  for (cudaEvent_t e : timing)
    cudaEventDestroy(e);
  for (cudaEvent_t e : {ready, done, stepStart})
    if (e)
      cudaEventDestroy(e);
  for (cudaStream_t s : {compute, comm})
    if (s)
      cudaStreamDestroy(s);
  if (staging)
    cudaFreeHost(staging);
  if (records)
    cudaFree(records);
}

Status CudaRank::bind(int64_t) {
  GPIPE_CUDA_TRY("cudaSetDevice", cudaSetDevice(gpu));
  GPIPE_CUDA_TRY("creating the compute stream",
                 cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  GPIPE_CUDA_TRY("creating the communication stream",
                 cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  GPIPE_CUDA_TRY("creating events",
                 cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  GPIPE_CUDA_TRY("creating events",
                 cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  GPIPE_CUDA_TRY("creating events", cudaEventCreate(&stepStart));
  timing.assign(size_t(2 * actions), nullptr);
  for (cudaEvent_t &e : timing)
    GPIPE_CUDA_TRY("creating timing events", cudaEventCreate(&e));
  recordedBegin.assign(size_t(actions), -1);
  recordedEnd.assign(size_t(actions), -1);
  if (slots > 0 && slotBytes > 0)
    GPIPE_CUDA_TRY("allocating pinned staging",
                   cudaMallocHost(reinterpret_cast<void **>(&staging),
                                  size_t(slots * slotBytes)));
  GPIPE_CUDA_TRY("allocating probe records",
                 cudaMalloc(reinterpret_cast<void **>(&records),
                            size_t(capacity) * sizeof(ProbeRecord)));
  hostRecords.resize(size_t(capacity));
  if (gpipe_rt_cuda_set_stream(compute) != GPIPE_RT_SUCCESS)
    return Status::error(gpipe_rt_cuda_last_error());
  return Status::success();
}

Status CudaRank::beginStep() {
  ++step;
  probes = 0;
  pendingError.clear();
  GPIPE_CUDA_TRY("recording the step's start",
                 cudaEventRecord(stepStart, compute));
  return Status::success();
}

void CudaRank::mark(int64_t action, int end) {
  if (action < 0 || action >= actions)
    return;
  cudaError_t error =
      cudaEventRecord(timing[size_t(2 * action + end)], compute);
  if (error != cudaSuccess) {
    if (pendingError.empty())
      pendingError = cudaError("recording a timing event", error).message();
    return;
  }
  (end ? recordedEnd : recordedBegin)[size_t(action)] = step;
}

Status CudaRank::upload(void *dst, int64_t bytes, int64_t slot,
                        const std::function<void(uint8_t *)> &fill) {
  if (slot < 0 || slot >= slots || bytes > slotBytes)
    return Status::error("upload of " + std::to_string(bytes) +
                         " bytes into staging slot " + std::to_string(slot) +
                         " (" + std::to_string(slots) + " slots of " +
                         std::to_string(slotBytes) + " bytes)");
  uint8_t *host = staging + slot * slotBytes;
  fill(host);
  GPIPE_CUDA_TRY("copying data to the GPU",
                 cudaMemcpyAsync(dst, host, size_t(bytes),
                                 cudaMemcpyHostToDevice, compute));
  return Status::success();
}

Status CudaRank::copyNow(void *dst, const void *src, int64_t bytes,
                         cudaMemcpyKind kind) {
  const char *what = kind == cudaMemcpyDeviceToHost ? "copying from the GPU"
                                                    : "copying to the GPU";
  GPIPE_CUDA_TRY(what, cudaMemcpyAsync(dst, src, size_t(bytes), kind, compute));
  GPIPE_CUDA_TRY(what, cudaStreamSynchronize(compute));
  return Status::success();
}

Status CudaRank::poison(void *dst) {
  static const float kNaN = std::numeric_limits<float>::quiet_NaN();
  GPIPE_CUDA_TRY("poisoning a payload",
                 cudaMemcpyAsync(dst, &kNaN, sizeof kNaN,
                                 cudaMemcpyHostToDevice, compute));
  return Status::success();
}

bool CudaRank::inspect(const float *src, int64_t count, Inspection &out) {
  if (probes >= capacity) {
    if (pendingError.empty())
      pendingError =
          "more than " + std::to_string(capacity) + " inspections in one step";
    ++probes;
    return false;
  }
  ProbeRecord *deviceRec = records + probes++;
  cudaError_t error = cudaMemsetAsync(&deviceRec->badIndex, 0xff,
                                      sizeof deviceRec->badIndex, compute);
  if (error == cudaSuccess && count > 0) {
    int64_t blocks = std::min<int64_t>(
        (count + kProbeThreads - 1) / kProbeThreads, kProbeMaxBlocks);
    probeScan<<<unsigned(blocks), kProbeThreads, 0, compute>>>(src, count,
                                                               deviceRec);
    error = cudaGetLastError();
  }
  if (error == cudaSuccess) {
    probeFinish<<<1, 1, 0, compute>>>(src, count, deviceRec);
    error = cudaGetLastError();
  }
  if (error != cudaSuccess && pendingError.empty())
    pendingError = cudaError("inspecting values", error).message();
  (void)out;
  return false;
}

Status CudaRank::optimizerStep(const OptimizerConfig &config, int64_t step,
                               float *params, const float *grads, float *state,
                               int64_t count) {
  return CudaDevice::update(config, step, params, grads, state, count);
}

Status CudaRank::runningStatsUpdate(float *runningMean, float *runningVar,
                                    const float *meanStat, const float *varStat,
                                    int64_t channels, int64_t count,
                                    double momentum) {
  return CudaDevice::updateRunningStats(runningMean, runningVar, meanStat,
                                        varStat, channels, count, momentum);
}

void CudaRank::abandonStep(Clock::time_point deadline) {
  if (!compute)
    return;
  bool busy = false;
  for (cudaStream_t stream : {comm, compute})
    busy |= cudaStreamQuery(stream) == cudaErrorNotReady;
  if (!busy)
    return;
  // A transfer whose peer is gone never completes: abort the communicator
  // (its kernels then end), and wait for the rest of the work.
  device.abortComm();
  for (cudaStream_t stream : {comm, compute})
    while (cudaStreamQuery(stream) == cudaErrorNotReady &&
           Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
}

Status CudaRank::finishStep(Clock::time_point deadline,
                            const std::atomic<bool> &aborted,
                            std::vector<Inspection> &inspections,
                            std::vector<ActionTiming> &timings) {
  // Poll rather than block: a peer that died leaves NCCL waiting forever.
  for (cudaStream_t stream : {comm, compute}) {
    for (;;) {
      cudaError_t state = cudaStreamQuery(stream);
      if (state == cudaSuccess)
        break;
      if (state != cudaErrorNotReady)
        return cudaError("the step's GPU work failed", state);
      if (Status s = device.asyncError(); !s.ok()) {
        device.abortComm();
        return s;
      }
      if (aborted.load()) {
        device.abortComm();
        return Status::error("aborted");
      }
      if (Clock::now() >= deadline) {
        device.abortComm();
        return Status::error("the step's GPU work did not finish within the "
                             "timeout; a peer may have died or stalled, or a "
                             "kernel hangs");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  if (!pendingError.empty())
    return Status::error(pendingError);
  if (gpipe_rt_cuda_check() != GPIPE_RT_SUCCESS)
    return Status::error(gpipe_rt_cuda_last_error());
  if (probes > 0)
    GPIPE_CUDA_TRY("reading the step's inspections",
                   cudaMemcpy(hostRecords.data(), records,
                              size_t(probes) * sizeof(ProbeRecord),
                              cudaMemcpyDeviceToHost));
  inspections.clear();
  for (int64_t i = 0; i < probes; ++i) {
    const ProbeRecord &rec = hostRecords[size_t(i)];
    Inspection in;
    in.first = rec.first;
    in.badIndex = rec.badIndex == ~0ull ? -1 : int64_t(rec.badIndex);
    in.badValue = rec.badValue;
    inspections.push_back(in);
  }
  timings.clear();
  for (int64_t a = 0; a < actions; ++a) {
    if (recordedBegin[size_t(a)] != step || recordedEnd[size_t(a)] != step)
      continue;
    float beginMs = 0.0f, endMs = 0.0f;
    GPIPE_CUDA_TRY(
        "reading a timing event",
        cudaEventElapsedTime(&beginMs, stepStart, timing[size_t(2 * a)]));
    GPIPE_CUDA_TRY(
        "reading a timing event",
        cudaEventElapsedTime(&endMs, stepStart, timing[size_t(2 * a + 1)]));
    timings.push_back(
        {a, int64_t(double(beginMs) * 1e6), int64_t(double(endMs) * 1e6)});
  }
  return Status::success();
}

} // namespace

Status makeCudaDevice(int index, std::shared_ptr<Device> &out) {
  auto device = std::make_shared<CudaDevice>(index);
  Status s = device->open();
  if (!s.ok())
    return s;
  out = std::move(device);
  return Status::success();
}

void registerCudaDevice() { registerDevice("cuda", makeCudaDevice); }

} // namespace gpipe::rt

/// The backend module's entry point (Device.h's loadDeviceBackend).
extern "C" __attribute__((visibility("default"))) void
gpipe_rt_register_backend() {
  gpipe::rt::registerCudaDevice();
}
