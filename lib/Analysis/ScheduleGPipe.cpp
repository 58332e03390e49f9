//===- ScheduleGPipe.cpp - GPipe and 1F1B schedules ----------------------===//
//
// The GPipe (all forwards, then all backwards) and 1F1B (one forward, one
// backward in the steady state) compute orders and their complete
// schedules.
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
// Generators
//===----------------------------------------------------------------------===//

namespace mlir::gpipe::detail {

Schedule makeComputeSkeleton(int numStages, int numMicrobatches) {
  Schedule schedule;
  schedule.numStages = numStages;
  schedule.numMicrobatches = numMicrobatches;
  if (numStages < 1 || numMicrobatches < 1)
    return schedule;
  schedule.ranks.resize(numStages);
  for (int s = 0; s < numStages; ++s)
    schedule.stageToRank.push_back(s);
  return schedule;
}

/// A backward of (stage, mb): B, or I then W when `split`; a Recompute
/// first under the stage remat policy.
void appendBackward(std::vector<Action> &program, int stage, int mb,
                    const ScheduleOptions &options, bool split = false) {
  if (options.recompute)
    program.push_back(Action::compute(ActionKind::Recompute, stage, mb));
  if (!split) {
    program.push_back(Action::compute(ActionKind::Backward, stage, mb));
    return;
  }
  program.push_back(Action::compute(ActionKind::BackwardInput, stage, mb));
  program.push_back(Action::compute(ActionKind::BackwardWeight, stage, mb));
}

Schedule finish(Schedule computeOrder, const BoundaryTraffic &traffic,
                const ScheduleOptions &options) {
  if (computeOrder.ranks.empty())
    return computeOrder;
  ScheduleOrError full = insertCommunication(computeOrder, traffic, options);
  if (!full.ok()) {
    // Only reachable with bad placement durations in `options`; return the
    // skeleton without ranks, which the verifier rejects.
    computeOrder.ranks.clear();
    computeOrder.stageToRank.clear();
    return computeOrder;
  }
  return std::move(full.schedule);
}

/// GPipe's compute orders (see `buildGPipeSchedule`).
Schedule makeGPipeOrder(int numStages, int numMicrobatches,
                        const ScheduleOptions &options) {
  Schedule schedule = makeComputeSkeleton(numStages, numMicrobatches);
  for (int k = 0, e = schedule.getNumRanks(); k < e; ++k) {
    std::vector<Action> &program = schedule.ranks[k];
    for (int mb = 0; mb < numMicrobatches; ++mb)
      program.push_back(Action::compute(ActionKind::Forward, k, mb));
    for (int mb = 0; mb < numMicrobatches; ++mb)
      appendBackward(program, k, mb, options);
    program.push_back(Action::step(k));
  }
  return schedule;
}

/// 1F1B's compute orders (see `build1F1BSchedule`).
Schedule make1F1BOrder(int numStages, int numMicrobatches,
                       const ScheduleOptions &options, bool split) {
  Schedule schedule = makeComputeSkeleton(numStages, numMicrobatches);
  for (int k = 0, e = schedule.getNumRanks(); k < e; ++k) {
    std::vector<Action> &program = schedule.ranks[k];
    int warmup = std::min(numStages - k - 1, numMicrobatches);
    for (int mb = 0; mb < warmup; ++mb)
      program.push_back(Action::compute(ActionKind::Forward, k, mb));
    for (int i = 0; i + warmup < numMicrobatches; ++i) {
      program.push_back(Action::compute(ActionKind::Forward, k, warmup + i));
      appendBackward(program, k, i, options, split);
    }
    for (int mb = numMicrobatches - warmup; mb < numMicrobatches; ++mb)
      appendBackward(program, k, mb, options, split);
    program.push_back(Action::step(k));
  }
  return schedule;
}

} // namespace mlir::gpipe::detail

using namespace mlir::gpipe::detail;

Schedule mlir::gpipe::buildGPipeSchedule(int numStages, int numMicrobatches,
                                         const BoundaryTraffic &traffic,
                                         const ScheduleOptions &options) {
  return finish(makeGPipeOrder(numStages, numMicrobatches, options), traffic,
                options);
}

Schedule mlir::gpipe::buildForwardSchedule(int numStages, int numMicrobatches,
                                           const BoundaryTraffic &traffic,
                                           const ScheduleOptions &options) {
  Schedule order = makeComputeSkeleton(numStages, numMicrobatches);
  for (int k = 0, e = order.getNumRanks(); k < e; ++k)
    for (int mb = 0; mb < numMicrobatches; ++mb)
      order.ranks[k].push_back(Action::compute(ActionKind::Forward, k, mb));
  Schedule schedule = finish(std::move(order), traffic, options);
  schedule.forwardOnly = true;
  return schedule;
}

Schedule mlir::gpipe::buildForwardSchedule(const std::vector<int> &stageToRank,
                                           int numMicrobatches,
                                           const BoundaryTraffic &traffic,
                                           const ScheduleOptions &options) {
  Schedule order;
  order.numStages = static_cast<int>(stageToRank.size());
  order.numMicrobatches = numMicrobatches;
  order.forwardOnly = true;
  int numRanks = 0;
  for (int rank : stageToRank) {
    if (rank < 0)
      return order;
    numRanks = std::max(numRanks, rank + 1);
  }
  if (numRanks == 0 || numMicrobatches < 1)
    return order;
  order.stageToRank = stageToRank;
  order.ranks.resize(numRanks);
  for (int mb = 0; mb < numMicrobatches; ++mb)
    for (int s = 0; s < order.numStages; ++s)
      order.ranks[stageToRank[s]].push_back(
          Action::compute(ActionKind::Forward, s, mb));
  Schedule schedule = finish(std::move(order), traffic, options);
  schedule.forwardOnly = true;
  return schedule;
}

Schedule mlir::gpipe::buildGPipeSchedule(int numStages, int numMicrobatches,
                                         int64_t boundaryBytes) {
  return buildGPipeSchedule(numStages, numMicrobatches,
                            BoundaryTraffic::uniform(numStages, boundaryBytes));
}

Schedule mlir::gpipe::build1F1BSchedule(int numStages, int numMicrobatches,
                                        const BoundaryTraffic &traffic,
                                        const ScheduleOptions &options) {
  return finish(make1F1BOrder(numStages, numMicrobatches, options), traffic,
                options);
}

Schedule mlir::gpipe::build1F1BSchedule(int numStages, int numMicrobatches,
                                        int64_t boundaryBytes) {
  return build1F1BSchedule(numStages, numMicrobatches,
                           BoundaryTraffic::uniform(numStages, boundaryBytes));
}
