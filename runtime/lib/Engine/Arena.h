//===- Arena.h - A rank's arena and the blocks in it ------------*- C++ -*-===//
//
// Internal to the training engine. Each rank the process runs owns one
// arena: the planned bytes plus a guard zone, on the run's device, filled
// with a canary pattern so the bytes the program touched can be measured.
// The engine reads and writes it through a host view (the same memory on
// the CPU, a copy brought in step by Arena::toHost/toDevice between steps
// otherwise). The plan puts every stage's persistent blocks -- parameters,
// gradients, optimizer state -- first; these helpers move them in and out
// by parameter name (results, checkpoints) or packed (MPI gathers).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_TRAIN_ARENA_H
#define GPIPE_RUNTIME_LIB_TRAIN_ARENA_H

#include "gpipe/Runtime/Checkpoint.h"
#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/ModelImage.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpipe::rt {

/// Bytes after each arena that must keep their canary.
constexpr int64_t kGuardBytes = 4096;

/// The canary byte at `offset` of an arena.
uint8_t canaryByte(int64_t offset);

int64_t roundUp(int64_t value, int64_t multiple);

/// The end of a rank's persistent blocks (parameters, gradients, optimizer
/// state), which the plan places first in the arena.
int64_t persistentEnd(const RankPlan &plan, int64_t stateMultiple);

struct AlignedFree {
  void operator()(uint8_t *p) const { std::free(p); }
};
using ArenaPtr = std::unique_ptr<uint8_t, AlignedFree>;

/// A rank's arena: the device memory its program runs on and the engine's
/// host view of it -- the same bytes when the device uses host memory,
/// otherwise a copy brought in step (toHost, toDevice) only between steps.
/// Process 0's copy of another MPI process's rank has the host view only.
class Arena {
public:
  Arena() = default;
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;
  ~Arena() {
    if (deviceMemory)
      device->release(deviceMemory);
  }

  /// `bytes` on `device` (when `onDevice`) with a host view.
  Status allocate(Device &device, int64_t bytes, int64_t alignment,
                  bool onDevice) {
    this->device = &device;
    size = bytes;
    int64_t align = std::max<int64_t>(alignment, 64);
    if (onDevice) {
      void *memory = nullptr;
      Status s = device.allocate(bytes, align, memory);
      if (!s.ok())
        return s;
      deviceMemory = static_cast<uint8_t *>(memory);
      if (device.hostMemory()) {
        host = deviceMemory;
        return Status::success();
      }
    }
    hostCopy.reset(static_cast<uint8_t *>(std::aligned_alloc(
        size_t(align), size_t(roundUp(std::max<int64_t>(bytes, 1), align)))));
    if (!hostCopy)
      return Status::error("cannot allocate " + std::to_string(bytes) +
                           " bytes of host memory");
    host = hostCopy.get();
    return Status::success();
  }
  /// Brings bytes [offset, offset + n) of the device memory into the host
  /// view, or the other way.
  Status toHost(int64_t offset, int64_t n) {
    if (!deviceMemory || host == deviceMemory || n <= 0)
      return Status::success();
    return device->download(host + offset, deviceMemory + offset, n);
  }
  Status toDevice(int64_t offset, int64_t n) {
    if (!deviceMemory || host == deviceMemory || n <= 0)
      return Status::success();
    return device->upload(deviceMemory + offset, host + offset, n);
  }

  Device *device = nullptr;
  /// What the rank's program gets (null for another process's rank).
  uint8_t *deviceMemory = nullptr;
  /// The engine's view.
  uint8_t *host = nullptr;
  int64_t size = 0;

private:
  ArenaPtr hostCopy;
};

/// Allocates rank `plan`'s arena on `device` and fills its host view: the
/// canary in the arena and its guard, the parameters (initial values), the
/// gradients and the optimizer state (zeros). The device gets the bytes
/// later (Arena::toDevice), once a checkpoint may have replaced some.
Status makeArena(const ModelImage &model, const RankPlan &plan, uint64_t seed,
                 Device &device, Arena &arena);

/// The first guard byte of `rank`'s arena that lost its canary, or -1.
int64_t firstChangedGuardByte(const RankPlan &plan, const uint8_t *arena);
/// An error naming the first changed guard byte, if any.
Status checkGuard(const RankPlan &plan, const uint8_t *arena);

/// Copies every parameter's block (params or grads) out of the host views
/// `arenas` (by rank), keyed by parameter name. A tied parameter's copies
/// are one tensor: an error says so if they are not bit for bit the same.
Status collectTensors(const ModelMetadata &meta,
                      const std::vector<uint8_t *> &arenas, bool gradients,
                      std::map<std::string, std::vector<float>> &out);

/// Copies `state`'s parameters and optimizer state into the host views, by
/// name (null views, other processes' ranks, are skipped).
Status restoreState(const ModelMetadata &meta, const TrainingState &state,
                    const std::vector<uint8_t *> &arenas);

/// The optimizer state of every parameter, by "<slot>.<name>".
void collectOptimizerState(const ModelMetadata &meta,
                           const std::vector<uint8_t *> &arenas,
                           const std::vector<std::string> &slots,
                           std::map<std::string, std::vector<float>> &out);

/// A rank's persistent blocks (per stage: parameters, gradients, optimizer
/// state), packed in plan order, and back.
std::vector<uint8_t> packBlocks(const RankPlan &plan, const uint8_t *arena,
                                int64_t stateMultiple);
void unpackBlocks(const RankPlan &plan, uint8_t *arena, int64_t stateMultiple,
                  const std::vector<uint8_t> &bytes);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_LIB_TRAIN_ARENA_H
