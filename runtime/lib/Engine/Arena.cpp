//===- Arena.cpp - A rank's arena and the blocks in it ----------*- C++ -*-===//
//
// See Arena.h.
//
//===----------------------------------------------------------------------===//

#include "Arena.h"
#include "gpipe/Runtime/CPUKernels.h"

#include <algorithm>
#include <cstring>

namespace gpipe::rt {

uint8_t canaryByte(int64_t offset) {
  uint32_t x = uint32_t(offset) * 0x9E3779B1u;
  return uint8_t((x >> 24) ^ 0xA5u);
}

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

int64_t persistentEnd(const RankPlan &plan, int64_t stateMultiple) {
  int64_t end = 0;
  for (const StagePlan &stage : plan.stages) {
    end = std::max(end, stage.paramsOffset + stage.paramBytes);
    // An inference plan has no gradients nor state (offset -1).
    if (stage.gradsOffset >= 0)
      end = std::max(end, stage.gradsOffset + stage.paramBytes);
    if (stateMultiple && stage.stateOffset >= 0)
      end = std::max(end, stage.stateOffset + stage.paramBytes * stateMultiple);
  }
  return end;
}

Status makeArena(const ModelImage &model, const RankPlan &plan, uint64_t seed,
                 Device &device, Arena &arena) {
  const ModelMetadata &meta = model.metadata();
  Status s = arena.allocate(device, plan.arenaBytes + kGuardBytes,
                            meta.alignment, /*onDevice=*/true);
  if (!s.ok())
    return Status::error("rank " + std::to_string(plan.rank) +
                         ": cannot allocate its arena of " +
                         std::to_string(plan.arenaBytes) + " bytes on " +
                         device.describe() + ": " + s.message());
  uint8_t *base = arena.host;
  for (int64_t i = 0; i < plan.arenaBytes + kGuardBytes; ++i)
    base[i] = canaryByte(i);
  int64_t multiple = meta.stateMultiple();
  for (const StagePlan &stage : plan.stages) {
    if (stage.paramBytes == 0)
      continue;
    // An inference plan has no gradients nor state (offset -1).
    if (stage.gradsOffset >= 0)
      std::memset(base + stage.gradsOffset, 0, size_t(stage.paramBytes));
    if (multiple && stage.stateOffset >= 0)
      std::memset(base + stage.stateOffset, 0,
                  size_t(stage.paramBytes * multiple));
    for (const ParamSlot &slot : stage.params) {
      const ParameterSpec &p = meta.parameters[slot.parameter];
      float *dst =
          reinterpret_cast<float *>(base + stage.paramsOffset + slot.offset);
      if (p.elements == 0)
        continue;
      if (p.init == ParamInit::Data) {
        std::memcpy(dst, model.data() + p.dataOffset, size_t(p.elements) * 4);
        continue;
      }
      gpipe_rt_init kind = p.init == ParamInit::Zeros  ? GPIPE_RT_INIT_ZEROS
                           : p.init == ParamInit::Ones ? GPIPE_RT_INIT_ONES
                           : p.init == ParamInit::Normal
                               ? GPIPE_RT_INIT_NORMAL
                               : GPIPE_RT_INIT_UNIFORM;
      if (gpipe_rt_cpu_fill_init_f32(
              kind, dst, p.elements, p.scale, seed,
              gpipe_rt_hash_name(p.name.data(), p.name.size())) !=
          GPIPE_RT_SUCCESS)
        return Status::error("parameter '" + p.name +
                             "': " + gpipe_rt_last_error());
    }
  }
  return Status::success();
}

int64_t firstChangedGuardByte(const RankPlan &plan, const uint8_t *arena) {
  for (int64_t i = plan.arenaBytes; i < plan.arenaBytes + kGuardBytes; ++i)
    if (arena[i] != canaryByte(i))
      return i;
  return -1;
}

Status checkGuard(const RankPlan &plan, const uint8_t *arena) {
  int64_t changed = firstChangedGuardByte(plan, arena);
  if (changed < 0)
    return Status::success();
  return Status::error("rank " + std::to_string(plan.rank) +
                       " wrote past its planned arena of " +
                       std::to_string(plan.arenaBytes) + " bytes (byte " +
                       std::to_string(changed) + " changed)");
}

Status collectTensors(const ModelMetadata &meta,
                      const std::vector<uint8_t *> &arenas, bool gradients,
                      std::map<std::string, std::vector<float>> &out) {
  out.clear();
  for (const RankPlan &rank : meta.ranks)
    for (const StagePlan &stage : rank.stages)
      for (const ParamSlot &slot : stage.params) {
        // Running statistics have sums in their gradient slots, not
        // gradients.
        if (gradients &&
            (slot.offset >= stage.trainableBytes || stage.gradsOffset < 0))
          continue;
        const uint8_t *src =
            arenas[size_t(rank.rank)] +
            (gradients ? stage.gradsOffset : stage.paramsOffset) + slot.offset;
        auto [it, first] = out.try_emplace(slot.name);
        std::vector<float> &v = it->second;
        if (!first) {
          // Another copy of a tied parameter: the same bits.
          if (slot.elements &&
              std::memcmp(v.data(), src, size_t(slot.elements) * 4) != 0)
            return Status::error(
                "the copies of tied parameter '" + slot.name + "' differ (" +
                (gradients ? "gradients" : "values") +
                "): its copies' gradients were not summed before the step");
          continue;
        }
        v.resize(size_t(slot.elements));
        if (slot.elements)
          std::memcpy(v.data(), src, size_t(slot.elements) * 4);
      }
  return Status::success();
}

Status restoreState(const ModelMetadata &meta, const TrainingState &state,
                    const std::vector<uint8_t *> &arenas) {
  std::vector<std::string> slots = optimizerStateSlots(state.optimizer);
  for (const RankPlan &rank : meta.ranks)
    for (const StagePlan &stage : rank.stages)
      for (const ParamSlot &slot : stage.params) {
        uint8_t *arena = arenas[size_t(rank.rank)];
        if (!arena) // another process's rank
          continue;
        auto p = state.parameters.find(slot.name);
        if (p == state.parameters.end() ||
            int64_t(p->second.size()) != slot.elements)
          return Status::error("the checkpoint lacks parameter '" + slot.name +
                               "'");
        if (slot.elements)
          std::memcpy(arena + stage.paramsOffset + slot.offset,
                      p->second.data(), size_t(slot.elements) * 4);
        // An inference plan keeps no optimizer state (offset -1).
        for (size_t k = 0; stage.stateOffset >= 0 && k < slots.size(); ++k) {
          auto v = state.optimizerState.find(slots[k] + "." + slot.name);
          if (v == state.optimizerState.end() ||
              int64_t(v->second.size()) != slot.elements)
            return Status::error("the checkpoint lacks optimizer state '" +
                                 slots[k] + "." + slot.name + "'");
          if (slot.elements)
            std::memcpy(arena + stage.stateOffset +
                            int64_t(k) * stage.paramBytes + slot.offset,
                        v->second.data(), size_t(slot.elements) * 4);
        }
      }
  return Status::success();
}

void collectOptimizerState(const ModelMetadata &meta,
                           const std::vector<uint8_t *> &arenas,
                           const std::vector<std::string> &slots,
                           std::map<std::string, std::vector<float>> &out) {
  out.clear();
  for (const RankPlan &rank : meta.ranks)
    for (const StagePlan &stage : rank.stages)
      for (const ParamSlot &slot : stage.params)
        for (size_t k = 0; stage.stateOffset >= 0 && k < slots.size(); ++k) {
          const uint8_t *src = arenas[size_t(rank.rank)] + stage.stateOffset +
                               int64_t(k) * stage.paramBytes + slot.offset;
          std::vector<float> &v = out[slots[k] + "." + slot.name];
          v.resize(size_t(slot.elements));
          if (slot.elements)
            std::memcpy(v.data(), src, size_t(slot.elements) * 4);
        }
}

std::vector<uint8_t> packBlocks(const RankPlan &plan, const uint8_t *arena,
                                int64_t stateMultiple) {
  std::vector<uint8_t> bytes;
  for (const StagePlan &stage : plan.stages) {
    auto append = [&](int64_t offset, int64_t size) {
      if (size > 0 && offset >= 0)
        bytes.insert(bytes.end(), arena + offset, arena + offset + size);
    };
    append(stage.paramsOffset, stage.paramBytes);
    append(stage.gradsOffset, stage.paramBytes);
    if (stateMultiple)
      append(stage.stateOffset, stage.paramBytes * stateMultiple);
  }
  return bytes;
}

void unpackBlocks(const RankPlan &plan, uint8_t *arena, int64_t stateMultiple,
                  const std::vector<uint8_t> &bytes) {
  size_t at = 0;
  for (const StagePlan &stage : plan.stages) {
    auto take = [&](int64_t offset, int64_t size) {
      if (size > 0 && offset >= 0 && at + size_t(size) <= bytes.size()) {
        std::memcpy(arena + offset, bytes.data() + at, size_t(size));
        at += size_t(size);
      }
    };
    take(stage.paramsOffset, stage.paramBytes);
    take(stage.gradsOffset, stage.paramBytes);
    if (stateMultiple)
      take(stage.stateOffset, stage.paramBytes * stateMultiple);
  }
}

} // namespace gpipe::rt
