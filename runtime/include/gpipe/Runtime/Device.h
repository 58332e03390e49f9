//===- Device.h - Where a pipeline's arenas live and its kernels run -*- C++
//-*-===//
//
// The engine (Engine.h) is the same for every target: it owns threads, the
// step barrier, transfers' rendezvous, data, the optimizer's hyper-parameters,
// checkpoints and every report. What depends on the target -- where the
// arenas are, how bytes get in and out of them, how a rank's work is ordered
// and timed, how values are inspected -- sits behind Device (one per run) and
// RankDevice (one per rank the process runs).
//
// The CPU device runs everything at once on host memory: the engine's view
// of an arena IS the arena, copies are memcpy, inspections answer
// immediately. An asynchronous device (CUDA) enqueues: kernels, copies and
// inspections go onto the rank's streams in program order and the host
// learns the results when the rank's step ends (RankDevice::finishStep),
// which is the one place a rank's thread waits for its device inside a step.
// The engine handles both alike: every inspection result is either ready when
// it is asked for or delivered, in order, by finishStep.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_DEVICE_H
#define GPIPE_RUNTIME_DEVICE_H

#include "gpipe/Runtime/Status.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gpipe::rt {

struct OptimizerConfig;

/// What a look at `count` floats of device memory found.
struct Inspection {
  /// The first value (a loss is a one-float inspection).
  float first = 0.0f;
  /// The index of the first non-finite value and that value, or -1.
  int64_t badIndex = -1;
  float badValue = 0.0f;
};

/// The timing of one action on the device's own clock (asynchronous
/// devices), in nanoseconds from the step's start.
struct ActionTiming {
  int64_t action = 0, beginNs = 0, endNs = 0;
};

class RankDevice {
public:
  virtual ~RankDevice();

  /// On the rank's thread, once, before its first step: binds the thread to
  /// the device (current device, the kernels' stream, library settings);
  /// `blasThreads` >= 1: the threads the rank's host BLAS calls may use.
  virtual Status bind(int64_t blasThreads) = 0;

  /// On the rank's thread at the start of every step.
  virtual Status beginStep() = 0;
  /// Action boundaries, in program order (asynchronous devices record
  /// events to time the action on the device).
  virtual void actionBegin(int64_t action) = 0;
  virtual void actionEnd(int64_t action) = 0;

  /// Puts `bytes` host bytes at device address `dst`: `fill` writes them
  /// into a host buffer (the CPU device passes `dst` itself). `slot` < the
  /// `uploadSlots` the device was made with names the staging buffer, which
  /// stays untouched until the step ends.
  virtual Status upload(void *dst, int64_t bytes, int64_t slot,
                        const std::function<void(uint8_t *)> &fill) = 0;
  /// Synchronous copies inside a step, in the rank's program order (the
  /// mpi transport's staging on devices without host memory): `copyOut`
  /// returns once the bytes the rank's earlier work wrote at `src` are in
  /// `host`; `copyIn` once `host` may be reused.
  virtual Status copyOut(void *host, const void *src, int64_t bytes) = 0;
  virtual Status copyIn(void *dst, const void *host, int64_t bytes) = 0;
  /// Makes the first float at device address `dst` a quiet NaN (tests).
  virtual Status poison(void *dst) = 0;

  /// Inspects `count` floats at device address `src` (a loss, a payload, a
  /// gradient block). Returns true with `out` filled when the answer is
  /// ready now; false when it comes with finishStep, in the order asked.
  virtual bool inspect(const float *src, int64_t count, Inspection &out) = 0;

  /// One optimizer step on device memory (Optimizer.h's applyOptimizer).
  virtual Status optimizerStep(const OptimizerConfig &config, int64_t step,
                               float *params, const float *grads, float *state,
                               int64_t count) = 0;

  /// A batch norm's running statistics after a step, from the step's sums
  /// (Kernels.def, running_stats_update_f32), on device memory.
  virtual Status runningStatsUpdate(float *runningMean, float *runningVar,
                                    const float *meanStat, const float *varStat,
                                    int64_t channels, int64_t count,
                                    double momentum) = 0;

  /// The message of the kernel call that just failed on this thread ("" if
  /// the device keeps none; the engine then reads gpipe_rt_last_error()).
  virtual std::string kernelError() = 0;
  /// Forgets kernel error messages (start of a step).
  virtual void clearKernelError() = 0;

  /// On the rank's thread once the program returned: waits until the
  /// rank's work is done (giving up at `deadline`, or when `aborted` is
  /// set), reports errors the device found while running it, and delivers
  /// the deferred inspections in the order they were asked and, for devices
  /// that time on their own clock, every action's timing.
  virtual Status finishStep(std::chrono::steady_clock::time_point deadline,
                            const std::atomic<bool> &aborted,
                            std::vector<Inspection> &inspections,
                            std::vector<ActionTiming> &timings) = 0;
  /// Whether finishStep delivers timings (busy time and traces then come
  /// from the device's clock, not the host's).
  virtual bool timesOnDevice() const = 0;
  /// On the rank's thread when its step ends without finishStep (the run
  /// is failing): stops what can be stopped (a communicator waiting on a
  /// dead peer) and waits for the rest until `deadline`, so the device's
  /// memory is not freed under running work.
  virtual void abandonStep(std::chrono::steady_clock::time_point deadline) {
    (void)deadline;
  }
};

class Device {
public:
  virtual ~Device();

  /// The kernels the model's code calls: "cpu" or "cuda" (the metadata's
  /// target).
  virtual const char *target() const = 0;
  /// For the run's header: "CPU", "NVIDIA H200 (GPU 0)".
  virtual std::string describe() const = 0;
  /// Whether arenas are host memory (the engine then reads and writes them
  /// directly and never copies).
  virtual bool hostMemory() const = 0;

  /// Device memory for an arena (`bytes` >= 1, aligned to `alignment`),
  /// and its release.
  virtual Status allocate(int64_t bytes, int64_t alignment, void *&ptr) = 0;
  virtual void release(void *ptr) = 0;
  /// Synchronous copies between steps (setup, reports, checkpoints), from
  /// any thread.
  virtual Status upload(void *dst, const void *src, int64_t bytes) = 0;
  virtual Status download(void *dst, const void *src, int64_t bytes) = 0;

  /// The device side of rank `rank`, which may upload into up to
  /// `uploadSlots` staging buffers of `slotBytes` each per step and has
  /// `actions` actions.
  virtual Status makeRank(int64_t rank, int64_t uploadSlots, int64_t slotBytes,
                          int64_t actions,
                          std::unique_ptr<RankDevice> &out) = 0;

  /// The local transport's copy: called by whichever of the two rank
  /// threads reaches the rendezvous second, while the other waits. `bytes`
  /// from `src` (sender's memory) to `dst` (receiver's); when it returns,
  /// the receiver's later work sees the bytes and the sender's later work
  /// may overwrite `src` (on asynchronous devices: in stream order).
  virtual Status copyBetweenRanks(RankDevice &sender, const void *src,
                                  RankDevice &receiver, void *dst,
                                  int64_t bytes) = 0;

  /// One optimizer step from a thread that is not a rank's (the updates a
  /// NonFinitePolicy::Skip step deferred), finished when it returns.
  virtual Status optimizerStep(const OptimizerConfig &config, int64_t step,
                               float *params, const float *grads, float *state,
                               int64_t count) = 0;

  /// A batch norm's running statistics after a step, from the step's sums
  /// (Kernels.def, running_stats_update_f32), on device memory, finished
  /// when it returns.
  virtual Status runningStatsUpdate(float *runningMean, float *runningVar,
                                    const float *meanStat, const float *varStat,
                                    int64_t channels, int64_t count,
                                    double momentum) = 0;

  /// Whether the device speaks the nccl transport, and the calls it needs:
  /// an id process 0 makes and every process receives (over MPI), then the
  /// communicator of `size` processes, then one transfer per send/recv
  /// action, in program order, on the rank's device.
  virtual bool supportsNccl() const { return false; }
  virtual Status ncclUniqueId(std::vector<uint8_t> &id);
  virtual Status ncclInit(const std::vector<uint8_t> &id, int rank, int size,
                          std::chrono::steady_clock::time_point deadline);
  /// Gives up at `deadline` or when `aborted` is set.
  virtual Status ncclTransfer(RankDevice &rank, bool send, void *data,
                              int64_t bytes, int peer,
                              std::chrono::steady_clock::time_point deadline,
                              const std::atomic<bool> &aborted);
  /// Data parallelism: splits the communicator into replica groups (the
  /// processes with the same `color`, the pipeline rank, ordered by `key`,
  /// the replica); once, after ncclInit.
  virtual Status
  ncclReplicaGroup(int color, int key,
                   std::chrono::steady_clock::time_point deadline);
  /// Sums `count` floats at `grads` over the replica group in place
  /// (ncclAllReduce on the rank's communication stream, after its compute
  /// so far; its later compute waits for the sum). NCCL chooses the
  /// reduction order: bitwise repeatable on one machine, not fixed across
  /// cuts as the CPU transports' is.
  virtual Status ncclAllReduce(RankDevice &rank, float *grads, int64_t count,
                               std::chrono::steady_clock::time_point deadline,
                               const std::atomic<bool> &aborted);
};

/// The CPU device (host memory, gpipe_rt_cpu_* kernels).
std::shared_ptr<Device> makeCpuDevice();
/// The CPU kernels behind an asynchronous device's behaviour: separate
/// "device" memory the engine reaches only by copies, staged loads,
/// inspections answered when the step ends, action times from the device.
/// Runs --target cpu models through every path a GPU run takes (tests).
std::shared_ptr<Device> makeEmulatedDevice();

/// Makes the device for models of a target. The engine knows "cpu"; other
/// targets come from a backend module registering theirs (the CUDA one:
/// libgpipe-cuda-backend.so, loaded by loadDeviceBackend).
/// `index` picks among several GPUs.
using DeviceFactory =
    std::function<Status(int index, std::shared_ptr<Device> &out)>;
void registerDevice(const std::string &target, DeviceFactory factory);
/// Whether a device for `target` can be made by this program.
bool haveDevice(const std::string &target);

/// Makes the device of `target` available: nothing for "cpu" or a target
/// already registered; otherwise loads the backend module
/// libgpipe-<target>-backend.so from the folder of the program (or of the
/// library holding the runtime), globally so that the kernels it exports
/// bind in the model libraries loaded after it, and calls its
/// gpipe_rt_register_backend(). A CPU run thus never maps the GPU
/// libraries the module needs. Fails naming the module and why.
Status loadDeviceBackend(const std::string &target);
/// The module loadDeviceBackend would load for `target`, or "" when there
/// is none beside the program.
std::string deviceBackendPath(const std::string &target);
/// Makes it; fails with a message naming what is missing.
Status makeDevice(const std::string &target, int index,
                  std::shared_ptr<Device> &out);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_DEVICE_H
