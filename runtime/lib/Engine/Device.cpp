//===- Device.cpp - The CPU device and the device registry -----*- C++ -*-===//
//
// The CPU device: arenas are aligned host memory, every call acts at once
// (gpipe_rt_cpu_* kernels already ran when a callback sees their results),
// inspections answer immediately and the local transport's copy is one
// memcpy. Other devices (CUDA) are registered by the programs built with
// them.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Optimizer.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <map>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace gpipe::rt {

RankDevice::~RankDevice() = default;
Device::~Device() = default;

namespace {
Status noNccl(const Device &device) {
  return Status::error(std::string("the nccl transport needs a CUDA model; "
                                   "this one runs on ") +
                       device.target());
}
} // namespace

Status Device::ncclUniqueId(std::vector<uint8_t> &) { return noNccl(*this); }
Status Device::ncclInit(const std::vector<uint8_t> &, int, int,
                        std::chrono::steady_clock::time_point) {
  return noNccl(*this);
}
Status Device::ncclTransfer(RankDevice &, bool, void *, int64_t, int,
                            std::chrono::steady_clock::time_point,
                            const std::atomic<bool> &) {
  return noNccl(*this);
}
Status Device::ncclReplicaGroup(int, int,
                                std::chrono::steady_clock::time_point) {
  return noNccl(*this);
}
Status Device::ncclAllReduce(RankDevice &, float *, int64_t,
                             std::chrono::steady_clock::time_point,
                             const std::atomic<bool> &) {
  return noNccl(*this);
}

namespace {

/// The index of the first NaN or infinity of src[0, count), or -1. Every
/// payload and every gradient buffer passes here once a step, so blocks are
/// scanned without a branch per element (a float is non-finite when its
/// exponent bits are all ones, and then adding one to the exponent carries
/// into the sign bit); only a block with a non-finite value is searched.
int64_t firstNonFinite(const float *src, int64_t count) {
  constexpr int64_t kBlock = 4096;
  constexpr uint32_t kExponent = 0x7f800000u, kExponentOne = 0x00800000u;
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    int64_t end = std::min(count, begin + kBlock);
    uint32_t carried = 0;
    for (int64_t i = begin; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, src + i, sizeof bits);
      carried |= (bits & kExponent) + kExponentOne;
    }
    if (!(carried & 0x80000000u))
      continue;
    for (int64_t i = begin; i < end; ++i)
      if (!std::isfinite(src[i]))
        return i;
  }
  return -1;
}

/// The CPU kernel behind both CPU devices' runningStatsUpdate.
Status cpuRunningStatsUpdate(float *runningMean, float *runningVar,
                             const float *meanStat, const float *varStat,
                             int64_t channels, int64_t count, double momentum) {
  if (gpipe_rt_cpu_running_stats_update_f32(runningMean, runningVar, meanStat,
                                            varStat, channels, count,
                                            momentum) != GPIPE_RT_SUCCESS)
    return Status::error(std::string("running statistics: ") +
                         gpipe_rt_last_error());
  return Status::success();
}

class CpuRank final : public RankDevice {
public:
  Status bind(int64_t blasThreads) override {
    // The count is the kernels' pool's, one per process (the engine gives
    // every rank the same); the calls are serialized.
    static std::mutex blasMutex;
    std::lock_guard<std::mutex> lock(blasMutex);
    gpipe_rt_cpu_set_blas_threads(int32_t(std::max<int64_t>(blasThreads, 1)));
    return Status::success();
  }
  Status beginStep() override { return Status::success(); }
  void actionBegin(int64_t) override {}
  void actionEnd(int64_t) override {}
  Status upload(void *dst, int64_t, int64_t,
                const std::function<void(uint8_t *)> &fill) override {
    fill(static_cast<uint8_t *>(dst));
    return Status::success();
  }
  Status copyOut(void *host, const void *src, int64_t bytes) override {
    if (bytes > 0)
      std::memcpy(host, src, size_t(bytes));
    return Status::success();
  }
  Status copyIn(void *dst, const void *host, int64_t bytes) override {
    return copyOut(dst, host, bytes);
  }
  Status poison(void *dst) override {
    static_cast<float *>(dst)[0] = std::numeric_limits<float>::quiet_NaN();
    return Status::success();
  }
  bool inspect(const float *src, int64_t count, Inspection &out) override {
    out = Inspection();
    if (count > 0)
      out.first = src[0];
    out.badIndex = firstNonFinite(src, count);
    if (out.badIndex >= 0)
      out.badValue = src[out.badIndex];
    return true;
  }
  Status optimizerStep(const OptimizerConfig &config, int64_t step,
                       float *params, const float *grads, float *state,
                       int64_t count) override {
    return applyOptimizer(config, step, params, grads, state, count);
  }
  Status runningStatsUpdate(float *runningMean, float *runningVar,
                            const float *meanStat, const float *varStat,
                            int64_t channels, int64_t count,
                            double momentum) override {
    return cpuRunningStatsUpdate(runningMean, runningVar, meanStat, varStat,
                                 channels, count, momentum);
  }
  std::string kernelError() override { return std::string(); }
  void clearKernelError() override {}
  Status finishStep(std::chrono::steady_clock::time_point,
                    const std::atomic<bool> &, std::vector<Inspection> &,
                    std::vector<ActionTiming> &) override {
    return Status::success();
  }
  bool timesOnDevice() const override { return false; }
};

class CpuDevice final : public Device {
public:
  const char *target() const override { return "cpu"; }
  std::string describe() const override { return "CPU"; }
  bool hostMemory() const override { return true; }
  Status allocate(int64_t bytes, int64_t alignment, void *&ptr) override {
    int64_t align = std::max<int64_t>(alignment, 64);
    int64_t total = (std::max<int64_t>(bytes, 1) + align - 1) / align * align;
    ptr = std::aligned_alloc(size_t(align), size_t(total));
    if (!ptr)
      return Status::error("cannot allocate " + std::to_string(bytes) +
                           " bytes of host memory");
    return Status::success();
  }
  void release(void *ptr) override { std::free(ptr); }
  Status upload(void *dst, const void *src, int64_t bytes) override {
    if (dst != src && bytes > 0)
      std::memcpy(dst, src, size_t(bytes));
    return Status::success();
  }
  Status download(void *dst, const void *src, int64_t bytes) override {
    return upload(dst, src, bytes);
  }
  Status makeRank(int64_t, int64_t, int64_t, int64_t,
                  std::unique_ptr<RankDevice> &out) override {
    out = std::make_unique<CpuRank>();
    return Status::success();
  }
  Status copyBetweenRanks(RankDevice &, const void *src, RankDevice &,
                          void *dst, int64_t bytes) override {
    if (bytes > 0)
      std::memcpy(dst, src, size_t(bytes));
    return Status::success();
  }
  Status optimizerStep(const OptimizerConfig &config, int64_t step,
                       float *params, const float *grads, float *state,
                       int64_t count) override {
    return applyOptimizer(config, step, params, grads, state, count);
  }
  Status runningStatsUpdate(float *runningMean, float *runningVar,
                            const float *meanStat, const float *varStat,
                            int64_t channels, int64_t count,
                            double momentum) override {
    return cpuRunningStatsUpdate(runningMean, runningVar, meanStat, varStat,
                                 channels, count, momentum);
  }
};

/// The CPU kernels behind the interface of an asynchronous device: arenas
/// are memory the engine may not read directly (every exchange goes through
/// upload/download), loads go through staging slots, inspections are
/// answered when the step ends and action times come from finishStep --
/// what a GPU run does, on any machine.
class EmulatedRank final : public RankDevice {
public:
  EmulatedRank(int64_t slots, int64_t slotBytes)
      : slots(slots), slotBytes(slotBytes),
        staging(size_t(std::max<int64_t>(slots * slotBytes, 0))) {}
  Status bind(int64_t blasThreads) override { return cpu.bind(blasThreads); }
  Status beginStep() override {
    answers.clear();
    timings.clear();
    start = std::chrono::steady_clock::now();
    return Status::success();
  }
  void actionBegin(int64_t action) override {
    timings.push_back({action, sinceStart(), -1});
  }
  void actionEnd(int64_t action) override {
    if (!timings.empty() && timings.back().action == action)
      timings.back().endNs = sinceStart();
  }
  Status upload(void *dst, int64_t bytes, int64_t slot,
                const std::function<void(uint8_t *)> &fill) override {
    if (slot < 0 || slot >= slots || bytes > slotBytes)
      return Status::error("upload of " + std::to_string(bytes) +
                           " bytes into staging slot " + std::to_string(slot));
    uint8_t *host = staging.data() + slot * slotBytes;
    fill(host);
    if (bytes > 0)
      std::memcpy(dst, host, size_t(bytes));
    return Status::success();
  }
  Status copyOut(void *host, const void *src, int64_t bytes) override {
    return cpu.copyOut(host, src, bytes);
  }
  Status copyIn(void *dst, const void *host, int64_t bytes) override {
    return cpu.copyIn(dst, host, bytes);
  }
  Status poison(void *dst) override { return cpu.poison(dst); }
  bool inspect(const float *src, int64_t count, Inspection &out) override {
    Inspection answer;
    cpu.inspect(src, count, answer);
    answers.push_back(answer);
    (void)out;
    return false;
  }
  Status optimizerStep(const OptimizerConfig &config, int64_t step,
                       float *params, const float *grads, float *state,
                       int64_t count) override {
    return cpu.optimizerStep(config, step, params, grads, state, count);
  }
  Status runningStatsUpdate(float *runningMean, float *runningVar,
                            const float *meanStat, const float *varStat,
                            int64_t channels, int64_t count,
                            double momentum) override {
    return cpu.runningStatsUpdate(runningMean, runningVar, meanStat, varStat,
                                  channels, count, momentum);
  }
  std::string kernelError() override { return std::string(); }
  void clearKernelError() override {}
  Status finishStep(std::chrono::steady_clock::time_point,
                    const std::atomic<bool> &,
                    std::vector<Inspection> &inspections,
                    std::vector<ActionTiming> &out) override {
    inspections = answers;
    out.clear();
    for (const ActionTiming &t : timings)
      if (t.endNs >= 0)
        out.push_back(t);
    return Status::success();
  }
  bool timesOnDevice() const override { return true; }

private:
  int64_t sinceStart() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now() - start)
        .count();
  }
  CpuRank cpu;
  int64_t slots, slotBytes;
  std::vector<uint8_t> staging;
  std::vector<Inspection> answers;
  std::vector<ActionTiming> timings;
  std::chrono::steady_clock::time_point start;
};

class EmulatedDevice final : public Device {
public:
  const char *target() const override { return "cpu"; }
  std::string describe() const override {
    return "CPU (emulating an asynchronous device)";
  }
  bool hostMemory() const override { return false; }
  Status allocate(int64_t bytes, int64_t alignment, void *&ptr) override {
    return cpu.allocate(bytes, alignment, ptr);
  }
  void release(void *ptr) override { cpu.release(ptr); }
  Status upload(void *dst, const void *src, int64_t bytes) override {
    return cpu.upload(dst, src, bytes);
  }
  Status download(void *dst, const void *src, int64_t bytes) override {
    return cpu.download(dst, src, bytes);
  }
  Status makeRank(int64_t, int64_t uploadSlots, int64_t slotBytes, int64_t,
                  std::unique_ptr<RankDevice> &out) override {
    out = std::make_unique<EmulatedRank>(uploadSlots, slotBytes);
    return Status::success();
  }
  Status copyBetweenRanks(RankDevice &a, const void *src, RankDevice &b,
                          void *dst, int64_t bytes) override {
    return cpu.copyBetweenRanks(a, src, b, dst, bytes);
  }
  Status optimizerStep(const OptimizerConfig &config, int64_t step,
                       float *params, const float *grads, float *state,
                       int64_t count) override {
    return cpu.optimizerStep(config, step, params, grads, state, count);
  }
  Status runningStatsUpdate(float *runningMean, float *runningVar,
                            const float *meanStat, const float *varStat,
                            int64_t channels, int64_t count,
                            double momentum) override {
    return cpu.runningStatsUpdate(runningMean, runningVar, meanStat, varStat,
                                  channels, count, momentum);
  }

private:
  CpuDevice cpu;
};

std::mutex registryMutex;
std::map<std::string, DeviceFactory> &registry() {
  static std::map<std::string, DeviceFactory> factories;
  return factories;
}

} // namespace

std::shared_ptr<Device> makeCpuDevice() {
  return std::make_shared<CpuDevice>();
}

std::shared_ptr<Device> makeEmulatedDevice() {
  return std::make_shared<EmulatedDevice>();
}

void registerDevice(const std::string &target, DeviceFactory factory) {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry()[target] = std::move(factory);
}

bool haveDevice(const std::string &target) {
  std::lock_guard<std::mutex> lock(registryMutex);
  return target == "cpu" || registry().count(target);
}

namespace {
/// The folders a backend module is looked for in: the running program's,
/// then that of the object holding this code (the same when the runtime is
/// linked statically).
std::vector<std::string> backendFolders() {
  std::vector<std::string> folders;
  auto add = [&](const std::string &file) {
    size_t slash = file.rfind('/');
    if (slash == std::string::npos)
      return;
    std::string folder = file.substr(0, slash);
    if (std::find(folders.begin(), folders.end(), folder) == folders.end())
      folders.push_back(folder);
  };
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0)
    add(std::string(exe, size_t(n)));
  Dl_info info;
  if (::dladdr(reinterpret_cast<void *>(&loadDeviceBackend), &info) &&
      info.dli_fname) {
    char resolved[PATH_MAX];
    if (::realpath(info.dli_fname, resolved))
      add(resolved);
  }
  return folders;
}

std::string backendFileName(const std::string &target) {
  return "libgpipe-" + target + "-backend.so";
}

/// Whether `target` can name a backend module file (letters and digits).
bool plainTargetName(const std::string &target) {
  return !target.empty() &&
         std::all_of(target.begin(), target.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c));
         });
}

std::string missingBackendMessage(const std::string &target) {
  return "the model was compiled for --target " + target +
         " but this program was built without that backend" +
         (target == "cuda" ? std::string(" (configure with "
                                         "-DGPIPE_ENABLE_CUDA=ON on a machine "
                                         "with the CUDA toolkit and NCCL, or "
                                         "recompile the model with --target "
                                         "cpu)")
                           : std::string()) +
         (plainTargetName(target)
              ? "; no " + backendFileName(target) + " beside it"
              : std::string());
}
} // namespace

std::string deviceBackendPath(const std::string &target) {
  for (const std::string &folder : backendFolders()) {
    std::string path = folder + "/" + backendFileName(target);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      return path;
  }
  return "";
}

Status loadDeviceBackend(const std::string &target) {
  static std::mutex loading;
  std::lock_guard<std::mutex> once(loading);
  if (haveDevice(target))
    return Status::success();
  // Target names come from model metadata: only plain names form a file
  // name.
  if (!plainTargetName(target))
    return Status::error(missingBackendMessage(target));
  std::string path = deviceBackendPath(target);
  if (path.empty())
    return Status::error(missingBackendMessage(target));
  dlerror();
  void *module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!module) {
    const char *why = dlerror();
    return Status::error("cannot load the " + target + " backend " + path +
                         ": " + (why ? why : "unknown error") +
                         " (its libraries must be on the library path)");
  }
  auto registerBackend = reinterpret_cast<void (*)(void)>(
      ::dlsym(module, "gpipe_rt_register_backend"));
  if (!registerBackend)
    return Status::error(path + " is not a gpipe backend module: it lacks "
                                "gpipe_rt_register_backend");
  // The module stays loaded: the device and the models use its code.
  registerBackend();
  if (!haveDevice(target))
    return Status::error(path + " did not register a device for --target " +
                         target);
  return Status::success();
}

Status makeDevice(const std::string &target, int index,
                  std::shared_ptr<Device> &out) {
  if (target == "cpu") {
    out = makeCpuDevice();
    return Status::success();
  }
  if (Status s = loadDeviceBackend(target); !s.ok())
    return s;
  DeviceFactory factory;
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto it = registry().find(target);
    if (it != registry().end())
      factory = it->second;
  }
  if (!factory)
    return Status::error(missingBackendMessage(target));
  return factory(index, out);
}

} // namespace gpipe::rt
