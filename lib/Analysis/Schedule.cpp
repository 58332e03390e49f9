//===- Schedule.cpp - Pipeline schedules ------------------------*- C++ -*-===//
//
// Implements the plain-data schedule helpers (actions, schedules, their
// options), the placements and the table of schedule families, and the
// closed-form bubbles. The rest of Schedule.h is split by family and job:
//   ScheduleGPipe.cpp          GPipe and 1F1B
//   ScheduleZeroBubble.cpp     the zero-bubble list scheduler, ZB-V
//   ScheduleFamilies.cpp       buildSchedule, interleaved 1F1B, DualPipeV
//   ScheduleCommunication.cpp  insertCommunication
//   ScheduleCSV.cpp            the CSV writer and reader
// with what they share in ScheduleInternal.h.
//
//===----------------------------------------------------------------------===//

#include "ScheduleInternal.h"

#include "gpipe/Analysis/Schedule.h"
#include "gpipe/Analysis/Timeline.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

using namespace mlir::gpipe;

//===----------------------------------------------------------------------===//
// Actions
//===----------------------------------------------------------------------===//

Action Action::compute(ActionKind kind, int stage, int microbatch) {
  Action action;
  action.kind = kind;
  action.stage = stage;
  action.microbatch = microbatch;
  return action;
}

Action Action::comm(ActionKind kind, int stage, int microbatch, int peer,
                    int64_t bytes, std::string dtype) {
  Action action = compute(kind, stage, microbatch);
  action.peer = peer;
  action.bytes = bytes;
  action.dtype = std::move(dtype);
  return action;
}

Action Action::step(int stage) { return compute(ActionKind::Step, stage, -1); }

Schedule mlir::gpipe::insertGradientReductions(const Schedule &schedule) {
  Schedule out = schedule;
  for (std::vector<Action> &program : out.ranks) {
    std::vector<Action> kept;
    kept.reserve(program.size());
    for (const Action &a : program)
      if (a.kind != ActionKind::ReduceGrad)
        kept.push_back(a);
    // The position of each stage's last backward piece.
    std::map<int, size_t> lastBackward;
    for (size_t i = 0; i < kept.size(); ++i)
      if (kept[i].kind == ActionKind::Backward ||
          kept[i].kind == ActionKind::BackwardWeight)
        lastBackward[kept[i].stage] = i;
    std::vector<std::vector<int>> after(kept.size());
    for (auto [stage, at] : lastBackward)
      after[at].push_back(stage);
    program.clear();
    for (size_t i = 0; i < kept.size(); ++i) {
      program.push_back(kept[i]);
      for (int stage : after[i])
        program.push_back(Action::compute(ActionKind::ReduceGrad, stage, -1));
    }
  }
  return out;
}

/// Adds one action of `kind` (dropping any already there) to each rank that
/// runs a stage `holds` accepts, named by the lowest such stage, right
/// before the rank's first STEP (at the end without one).
template <typename Holds>
static Schedule insertBeforeSteps(const Schedule &schedule, ActionKind kind,
                                  Holds holds) {
  Schedule out = schedule;
  for (std::vector<Action> &program : out.ranks) {
    std::vector<Action> kept;
    kept.reserve(program.size() + 1);
    int named = -1;
    for (const Action &a : program) {
      if (a.kind == kind)
        continue;
      kept.push_back(a);
      if (a.stage >= 0 && holds(a.stage) && (named < 0 || a.stage < named))
        named = a.stage;
    }
    if (named >= 0) {
      auto firstStep =
          std::find_if(kept.begin(), kept.end(), [](const Action &a) {
            return a.kind == ActionKind::Step;
          });
      kept.insert(firstStep, Action::compute(kind, named, -1));
    }
    program = std::move(kept);
  }
  return out;
}

Schedule mlir::gpipe::insertTiedSums(const Schedule &schedule,
                                     const std::vector<bool> &holdsTied) {
  return insertBeforeSteps(schedule, ActionKind::SumTied, [&](int stage) {
    return size_t(stage) < holdsTied.size() && holdsTied[size_t(stage)];
  });
}

Schedule mlir::gpipe::insertGradientClipping(const Schedule &schedule) {
  // SUM_TIED, inserted first, stays ahead of it.
  return insertBeforeSteps(schedule, ActionKind::ClipGrad,
                           [](int) { return true; });
}

Action Action::reduceGrad(int stage) {
  return compute(ActionKind::ReduceGrad, stage, -1);
}

bool Action::operator==(const Action &other) const {
  return kind == other.kind && stage == other.stage &&
         microbatch == other.microbatch && peer == other.peer &&
         bytes == other.bytes && dtype == other.dtype;
}

std::string mlir::gpipe::toString(const Action &action) {
  std::string text = std::to_string(action.stage);
  text += getActionKindName(action.kind);
  if (hasMicrobatch(action.kind) || action.microbatch >= 0)
    text += std::to_string(action.microbatch);
  return text;
}

std::string mlir::gpipe::describe(const Action &action) {
  std::string text = toString(action);
  if (isSendKind(action.kind))
    text += " to rank " + std::to_string(action.peer);
  else if (isRecvKind(action.kind))
    text += " from rank " + std::to_string(action.peer);
  return text;
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

int Schedule::getRankOfStage(int stage) const {
  if (stage < 0 || stage >= static_cast<int>(stageToRank.size()))
    return -1;
  return stageToRank[stage];
}

std::vector<int> Schedule::getStagesOfRank(int rank) const {
  std::vector<int> stages;
  for (int s = 0, e = static_cast<int>(stageToRank.size()); s < e; ++s)
    if (stageToRank[s] == rank)
      stages.push_back(s);
  return stages;
}

bool Schedule::operator==(const Schedule &other) const {
  return numStages == other.numStages &&
         numMicrobatches == other.numMicrobatches &&
         stageToRank == other.stageToRank && ranks == other.ranks &&
         forwardOnly == other.forwardOnly;
}

BoundaryTraffic BoundaryTraffic::uniform(int numStages, int64_t bytes,
                                         std::string dtype) {
  BoundaryTraffic traffic;
  traffic.bytes.assign(numStages > 1 ? numStages - 1 : 0, bytes);
  traffic.dtype = std::move(dtype);
  return traffic;
}

int64_t BoundaryTraffic::getBytes(int boundary) const {
  if (boundary < 0 || boundary >= static_cast<int>(bytes.size()))
    return 0;
  return bytes[boundary];
}

//===----------------------------------------------------------------------===//
// ScheduleOptions
//===----------------------------------------------------------------------===//

namespace {

/// The per-stage entry of `perStage` if there is one, else `uniform`.
int64_t getStageTicks(const std::vector<int64_t> &perStage, int stage,
                      int64_t uniform) {
  if (stage >= 0 && stage < static_cast<int>(perStage.size()))
    return perStage[stage];
  return uniform;
}

} // namespace

int64_t ScheduleOptions::getForwardTicks(int stage) const {
  return getStageTicks(stageForwardTicks, stage, forwardTicks);
}

int64_t ScheduleOptions::getInputTicks(int stage) const {
  int64_t half = std::max<int64_t>(1, backwardTicks / 2);
  return getStageTicks(stageInputTicks, stage, inputTicks ? inputTicks : half);
}

int64_t ScheduleOptions::getWeightTicks(int stage) const {
  int64_t half = std::max<int64_t>(1, backwardTicks / 2);
  return getStageTicks(stageWeightTicks, stage,
                       weightTicks ? weightTicks : half);
}

int64_t ScheduleOptions::getBackwardTicks(int stage) const {
  if (stageInputTicks.empty() && stageWeightTicks.empty())
    return backwardTicks;
  return getInputTicks(stage) + getWeightTicks(stage);
}

int ScheduleOptions::getMaxActivations(int stage, int numStages) const {
  if (stage >= 0 && stage < static_cast<int>(maxActivations.size()) &&
      maxActivations[stage] >= 1)
    return maxActivations[stage];
  return std::max(1, numStages - stage);
}

//===----------------------------------------------------------------------===//
// Placements and schedule families
//===----------------------------------------------------------------------===//

std::vector<int> mlir::gpipe::getInterleavedPlacement(int numRanks,
                                                      int virtualStages) {
  std::vector<int> stageToRank;
  if (numRanks < 1 || virtualStages < 1)
    return stageToRank;
  for (int s = 0, e = numRanks * virtualStages; s < e; ++s)
    stageToRank.push_back(s % numRanks);
  return stageToRank;
}

std::vector<int> mlir::gpipe::getVShapePlacement(int numRanks) {
  std::vector<int> stageToRank;
  if (numRanks < 1)
    return stageToRank;
  stageToRank.resize(2 * numRanks);
  for (int r = 0; r < numRanks; ++r) {
    stageToRank[r] = r;
    stageToRank[2 * numRanks - 1 - r] = r;
  }
  return stageToRank;
}

namespace {

struct FamilyInfo {
  ScheduleFamily family;
  const char *name;
};

constexpr FamilyInfo kFamilies[] = {
#define GPIPE_SCHEDULE_FAMILY(kind, name, help) {ScheduleFamily::kind, name},
#include "gpipe/Analysis/ScheduleFamilies.def"
};

bool usesVShape(ScheduleFamily family, int virtualStages) {
  return virtualStages == 2 &&
         (family == ScheduleFamily::ZBV ||
          family == ScheduleFamily::DualPipeV ||
          family == ScheduleFamily::VHalf || family == ScheduleFamily::VMin ||
          family == ScheduleFamily::ZBAuto);
}

} // namespace

std::vector<ScheduleFamily> mlir::gpipe::getScheduleFamilies() {
  std::vector<ScheduleFamily> families;
  for (const FamilyInfo &info : kFamilies)
    families.push_back(info.family);
  return families;
}

const char *mlir::gpipe::getScheduleFamilyName(ScheduleFamily family) {
  for (const FamilyInfo &info : kFamilies)
    if (info.family == family)
      return info.name;
  return "unknown";
}

bool mlir::gpipe::parseScheduleFamily(std::string_view name,
                                      ScheduleFamily &family) {
  for (const FamilyInfo &info : kFamilies) {
    if (name == info.name) {
      family = info.family;
      return true;
    }
  }
  return false;
}

std::vector<int> mlir::gpipe::getSchedulePlacement(ScheduleFamily family,
                                                   int numRanks,
                                                   int virtualStages) {
  if (usesVShape(family, virtualStages))
    return getVShapePlacement(numRanks);
  return getInterleavedPlacement(numRanks, virtualStages);
}

std::string mlir::gpipe::checkScheduleShape(ScheduleFamily family, int numRanks,
                                            int virtualStages,
                                            int numMicrobatches) {
  std::string name = getScheduleFamilyName(family);
  if (numRanks < 1)
    return name + " needs at least 1 rank, got " + std::to_string(numRanks);
  if (virtualStages < 1)
    return name + " needs at least 1 virtual stage per rank, got " +
           std::to_string(virtualStages);
  if (numMicrobatches < 1)
    return name + " needs at least 1 micro-batch, got " +
           std::to_string(numMicrobatches);
  switch (family) {
  case ScheduleFamily::GPipe:
  case ScheduleFamily::OneFOneB:
  case ScheduleFamily::ZBH1:
  case ScheduleFamily::ZBH2:
    if (virtualStages != 1)
      return name +
             " needs exactly 1 virtual stage per rank (one stage per "
             "rank), got " +
             std::to_string(virtualStages);
    return "";
  case ScheduleFamily::Interleaved1F1B:
    if (virtualStages < 2)
      return name + " needs at least 2 virtual stages per rank, got " +
             std::to_string(virtualStages) + " (use 1f1b for 1)";
    return "";
  case ScheduleFamily::ZBV:
  case ScheduleFamily::DualPipeV:
  case ScheduleFamily::VHalf:
  case ScheduleFamily::VMin:
    if (virtualStages != 2)
      return name +
             " needs exactly 2 virtual stages per rank (V-shape "
             "placement), got " +
             std::to_string(virtualStages);
    if (family == ScheduleFamily::DualPipeV &&
        numMicrobatches < 2 * numRanks - 1)
      return name +
             " needs at least 2K-1 = " + std::to_string(2 * numRanks - 1) +
             " micro-batches for " + std::to_string(numRanks) +
             " ranks (its steady phase runs M-2K+r+1 times on rank r), got " +
             std::to_string(numMicrobatches);
    if ((family == ScheduleFamily::VHalf || family == ScheduleFamily::VMin) &&
        numMicrobatches < numRanks)
      return name + " needs at least K = " + std::to_string(numRanks) +
             " micro-batches for " + std::to_string(numRanks) +
             " ranks (below that 1F1B holds fewer than K and there is no "
             "memory to save), got " +
             std::to_string(numMicrobatches);
    return "";
  case ScheduleFamily::ZBAuto:
    if (virtualStages > 2)
      return name +
             " needs 1 or 2 virtual stages per rank (2: V-shape "
             "placement), got " +
             std::to_string(virtualStages);
    return "";
  }
  return "unknown schedule family";
}

bool mlir::gpipe::usesSplitBackward(ScheduleFamily family) {
  switch (family) {
  case ScheduleFamily::GPipe:
  case ScheduleFamily::OneFOneB:
  case ScheduleFamily::Interleaved1F1B:
    return false;
  case ScheduleFamily::ZBH1:
  case ScheduleFamily::ZBH2:
  case ScheduleFamily::ZBV:
  case ScheduleFamily::DualPipeV:
  case ScheduleFamily::VHalf:
  case ScheduleFamily::VMin:
  case ScheduleFamily::ZBAuto:
    return true;
  }
  return false;
}

int mlir::gpipe::getDefaultVirtualStages(ScheduleFamily family) {
  return family == ScheduleFamily::Interleaved1F1B ||
                 family == ScheduleFamily::ZBV ||
                 family == ScheduleFamily::DualPipeV ||
                 family == ScheduleFamily::VHalf ||
                 family == ScheduleFamily::VMin
             ? 2
             : 1;
}

//===----------------------------------------------------------------------===//
// Closed-form bubbles
//===----------------------------------------------------------------------===//

std::optional<double> mlir::gpipe::getClosedFormIdleTime(
    ScheduleFamily family, int numRanks, int virtualStages, int numMicrobatches,
    double forward, double input, double weight) {
  if (!checkScheduleShape(family, numRanks, virtualStages, numMicrobatches)
           .empty() ||
      !(forward > 0) || !(input > 0) || !(weight > 0))
    return std::nullopt;
  double K = numRanks, F = forward, I = input, W = weight;
  bool uniform = F == I && I == W;
  switch (family) {
  case ScheduleFamily::GPipe:
  case ScheduleFamily::OneFOneB:
    return (K - 1) * (F + I + W);
  case ScheduleFamily::Interleaved1F1B:
    if (numMicrobatches % numRanks != 0)
      return std::nullopt;
    return (K - 1) * (F + I + W);
  case ScheduleFamily::ZBH1:
    if (numMicrobatches < numRanks || W > std::min(F, I) || F > 2 * I)
      return std::nullopt;
    return (K - 1) * (F + I - W);
  case ScheduleFamily::ZBH2:
    if (numMicrobatches < numRanks || !uniform)
      return std::nullopt;
    return (K - 1) * F;
  case ScheduleFamily::ZBV:
    if (numMicrobatches < 2 * numRanks - 1 || !uniform)
      return std::nullopt;
    return (K - 1) * F;
  case ScheduleFamily::DualPipeV:
  case ScheduleFamily::VHalf:
  case ScheduleFamily::VMin:
  case ScheduleFamily::ZBAuto:
    return std::nullopt;
  }
  return std::nullopt;
}
