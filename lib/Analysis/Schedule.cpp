//===- Schedule.cpp - Pipeline schedules ------------------------*- C++ -*-===//
//
// Implements the plain-data schedule helpers, the GPipe and 1F1B generators,
// the generated families after 1F1B (interleaved 1F1B, ZB-H1/H2, ZB-V,
// DualPipeV and the zero-bubble heuristic, each citing its source),
// `insertCommunication` (which turns per-rank compute orders into complete
// programs whose sends and receives cannot deadlock under blocking rendezvous,
// by projecting one global, simulated event order onto the ranks), and the
// PyTorch-compatible CSV writer and reader.
//
//===----------------------------------------------------------------------===//

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

Schedule mlir::gpipe::insertTiedSums(const Schedule &schedule,
                                     const std::vector<bool> &holdsTied) {
  Schedule out = schedule;
  for (std::vector<Action> &program : out.ranks) {
    std::vector<Action> kept;
    kept.reserve(program.size() + 1);
    int named = -1;
    for (const Action &a : program) {
      if (a.kind == ActionKind::SumTied)
        continue;
      kept.push_back(a);
      if (a.stage >= 0 && size_t(a.stage) < holdsTied.size() &&
          holdsTied[size_t(a.stage)] && (named < 0 || a.stage < named))
        named = a.stage;
    }
    if (named >= 0) {
      auto firstStep =
          std::find_if(kept.begin(), kept.end(), [](const Action &a) {
            return a.kind == ActionKind::Step;
          });
      kept.insert(firstStep, Action::compute(ActionKind::SumTied, named, -1));
    }
    program = std::move(kept);
  }
  return out;
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
// insertCommunication
//===----------------------------------------------------------------------===//

namespace {

/// Checks what every schedule needs before its actions can be indexed: sizes,
/// the stage map, and each action's stage, rank and micro-batch. Returns an
/// empty string or the first problem.
std::string checkShape(const Schedule &schedule) {
  int numStages = schedule.numStages;
  int numMicrobatches = schedule.numMicrobatches;
  int numRanks = schedule.getNumRanks();
  if (numStages < 1)
    return "expected at least one stage, got " + std::to_string(numStages);
  if (numMicrobatches < 1)
    return "expected at least one micro-batch, got " +
           std::to_string(numMicrobatches);
  if (numRanks < 1)
    return "expected at least one rank, got 0";
  if (static_cast<int>(schedule.stageToRank.size()) != numStages)
    return "stage map has " + std::to_string(schedule.stageToRank.size()) +
           " entries for " + std::to_string(numStages) + " stages";
  for (int s = 0; s < numStages; ++s) {
    int rank = schedule.stageToRank[s];
    if (rank < 0 || rank >= numRanks)
      return "stage " + std::to_string(s) + " maps to rank " +
             std::to_string(rank) + ", out of range for " +
             std::to_string(numRanks) + " ranks";
  }
  for (int r = 0; r < numRanks; ++r) {
    const std::vector<Action> &program = schedule.ranks[r];
    for (int i = 0, e = static_cast<int>(program.size()); i < e; ++i) {
      const Action &action = program[i];
      auto where = [&] {
        return "rank " + std::to_string(r) + " action " + std::to_string(i) +
               " (" + toString(action) + ")";
      };
      if (action.stage < 0 || action.stage >= numStages)
        return where() + ": stage " + std::to_string(action.stage) +
               " out of range for " + std::to_string(numStages) + " stages";
      if (schedule.stageToRank[action.stage] != r)
        return where() + ": stage " + std::to_string(action.stage) +
               " runs on rank " +
               std::to_string(schedule.stageToRank[action.stage]);
      if (hasMicrobatch(action.kind)) {
        if (action.microbatch < 0 || action.microbatch >= numMicrobatches)
          return where() + ": micro-batch " +
                 std::to_string(action.microbatch) + " out of range for " +
                 std::to_string(numMicrobatches) + " micro-batches";
      } else if (action.microbatch != -1) {
        return where() + ": expected no micro-batch";
      }
    }
  }
  return "";
}

/// "" if every duration in `options` is usable, else the problem.
std::string checkDurations(const ScheduleOptions &options) {
  if (options.forwardTicks < 1 || options.backwardTicks < 1 ||
      options.recomputeTicks < 1) {
    return "placement durations must be positive, got forward " +
           std::to_string(options.forwardTicks) + ", backward " +
           std::to_string(options.backwardTicks) + ", recompute " +
           std::to_string(options.recomputeTicks);
  }
  if (options.inputTicks < 0 || options.weightTicks < 0) {
    return "placement durations must be positive (or 0: half the "
           "backward), got input " +
           std::to_string(options.inputTicks) + ", weight " +
           std::to_string(options.weightTicks);
  }
  for (const auto &[name, perStage] :
       {std::pair<const char *, const std::vector<int64_t> *>{
            "forward", &options.stageForwardTicks},
        {"input", &options.stageInputTicks},
        {"weight", &options.stageWeightTicks}}) {
    for (size_t s = 0; s < perStage->size(); ++s) {
      if ((*perStage)[s] < 1) {
        return "placement durations must be positive, got " +
               std::string(name) + " " + std::to_string((*perStage)[s]) +
               " for stage " + std::to_string(s);
      }
    }
  }
  return "";
}

/// Identifies the compute action of (kind, stage, micro-batch).
int computeSlot(ActionKind kind, int stage, int microbatch,
                int numMicrobatches) {
  int kindIndex = 0;
  switch (kind) {
  case ActionKind::Forward:
    kindIndex = 0;
    break;
  case ActionKind::Backward:
    kindIndex = 1;
    break;
  case ActionKind::BackwardInput:
    kindIndex = 2;
    break;
  case ActionKind::BackwardWeight:
    kindIndex = 3;
    break;
  default:
    kindIndex = 4;
    break;
  }
  return (stage * numMicrobatches + microbatch) * 5 + kindIndex;
}

/// A transfer across a cross-rank boundary that `insertCommunication` places.
struct Transfer {
  bool forward; ///< activation (true) or gradient (false)
  int boundary; ///< between stage `boundary` and `boundary + 1`
  int microbatch;
  int producerRank; ///< the producing action's rank and index in its program
  int producerIndex;
  int consumerRank; ///< the consuming action's rank and index
  int consumerIndex;
};

/// A position in the global event order: (tick, class, tie-break...). Class
/// 0 is a transfer, 1 a compute action, so a transfer precedes a compute
/// action starting at the same tick.
using EventKey = std::tuple<int64_t, int, int, int, int>;

} // namespace

ScheduleOrError
mlir::gpipe::insertCommunication(const Schedule &computeOrder,
                                 const BoundaryTraffic &traffic,
                                 const ScheduleOptions &options) {
  ScheduleOrError result;
  if (std::string error = checkDurations(options); !error.empty()) {
    result.error = error;
    return result;
  }
  if (std::string error = checkShape(computeOrder); !error.empty()) {
    result.error = error;
    return result;
  }
  int numStages = computeOrder.numStages;
  int numMicrobatches = computeOrder.numMicrobatches;
  int numRanks = computeOrder.getNumRanks();

  // Drop any sends and receives: they are placed from scratch.
  std::vector<std::vector<Action>> programs(numRanks);
  for (int r = 0; r < numRanks; ++r)
    for (const Action &action : computeOrder.ranks[r])
      if (!isTransferKind(action.kind))
        programs[r].push_back(action);

  // Every (stage, micro-batch) needs a forward: bound the tables below by
  // the input rather than by the claimed shape.
  int64_t numComputeActions = 0;
  for (const std::vector<Action> &program : programs)
    numComputeActions += static_cast<int64_t>(program.size());
  if (static_cast<int64_t>(numStages) * numMicrobatches > numComputeActions) {
    result.error = std::to_string(numStages) + " stages x " +
                   std::to_string(numMicrobatches) +
                   " micro-batches need that many forwards, the compute "
                   "order has " +
                   std::to_string(numComputeActions) + " actions in all";
    return result;
  }

  // Locate every compute action; each may appear once.
  std::vector<std::pair<int, int>> where(
      static_cast<size_t>(numStages) * numMicrobatches * 5, {-1, -1});
  for (int r = 0; r < numRanks; ++r) {
    for (int i = 0, e = static_cast<int>(programs[r].size()); i < e; ++i) {
      const Action &action = programs[r][i];
      if (!isComputeKind(action.kind))
        continue;
      std::pair<int, int> &slot = where[computeSlot(
          action.kind, action.stage, action.microbatch, numMicrobatches)];
      if (slot.first >= 0) {
        result.error = "rank " + std::to_string(r) + " runs " +
                       toString(action) + " twice (actions " +
                       std::to_string(slot.second) + " and " +
                       std::to_string(i) + " after dropping sends/receives)";
        return result;
      }
      slot = {r, i};
    }
  }
  auto find = [&](ActionKind kind, int stage, int mb) {
    return where[computeSlot(kind, stage, mb, numMicrobatches)];
  };
  // The action producing the gradient stage `stage` sends upstream.
  auto findGradProducer = [&](int stage, int mb) {
    std::pair<int, int> full = find(ActionKind::Backward, stage, mb);
    return full.first >= 0 ? full : find(ActionKind::BackwardInput, stage, mb);
  };

  // Dependencies of each action (rank, index) on other actions.
  std::vector<std::vector<std::vector<std::pair<int, int>>>> deps(numRanks);
  std::vector<Transfer> transfers;
  for (int r = 0; r < numRanks; ++r) {
    deps[r].resize(programs[r].size());
    for (int i = 0, e = static_cast<int>(programs[r].size()); i < e; ++i) {
      const Action &action = programs[r][i];
      int s = action.stage, mb = action.microbatch;
      auto need = [&](std::pair<int, int> producer, const Action &missing) {
        if (producer.first < 0) {
          result.error = "rank " + std::to_string(r) + " action " +
                         std::to_string(i) + " (" + toString(action) +
                         ") needs " + toString(missing) +
                         ", which no rank runs";
          return false;
        }
        deps[r][i].push_back(producer);
        return true;
      };
      bool ok = true;
      switch (action.kind) {
      case ActionKind::Forward:
        if (s > 0) {
          std::pair<int, int> producer = find(ActionKind::Forward, s - 1, mb);
          ok = need(producer, Action::compute(ActionKind::Forward, s - 1, mb));
          if (ok && producer.first != r)
            transfers.push_back(
                {true, s - 1, mb, producer.first, producer.second, r, i});
        }
        break;
      case ActionKind::Recompute:
        ok = need(find(ActionKind::Forward, s, mb),
                  Action::compute(ActionKind::Forward, s, mb));
        break;
      case ActionKind::Backward:
      case ActionKind::BackwardInput: {
        ok = need(find(ActionKind::Forward, s, mb),
                  Action::compute(ActionKind::Forward, s, mb));
        std::pair<int, int> remat = find(ActionKind::Recompute, s, mb);
        if (ok && remat.first >= 0)
          deps[r][i].push_back(remat);
        if (ok && s + 1 < numStages) {
          std::pair<int, int> producer = findGradProducer(s + 1, mb);
          ok = need(producer, Action::compute(ActionKind::Backward, s + 1, mb));
          if (ok && producer.first != r)
            transfers.push_back(
                {false, s, mb, producer.first, producer.second, r, i});
        }
        break;
      }
      case ActionKind::BackwardWeight:
        ok = need(find(ActionKind::BackwardInput, s, mb),
                  Action::compute(ActionKind::BackwardInput, s, mb));
        break;
      default:
        break;
      }
      if (!ok)
        return result;
    }
  }

  // Run the compute orders with unbounded buffering to give every action a
  // start tick. A rank runs its next action once all its producers ended.
  std::vector<std::vector<int64_t>> start(numRanks), end(numRanks);
  std::vector<int> pc(numRanks, 0);
  std::vector<int64_t> freeAt(numRanks, 0);
  for (int r = 0; r < numRanks; ++r) {
    start[r].assign(programs[r].size(), -1);
    end[r].assign(programs[r].size(), -1);
  }
  auto ticksOf = [&](const Action &action) -> int64_t {
    switch (action.kind) {
    case ActionKind::Forward:
      return options.getForwardTicks(action.stage);
    case ActionKind::Backward:
      return options.getBackwardTicks(action.stage);
    case ActionKind::BackwardInput:
      return options.getInputTicks(action.stage);
    case ActionKind::BackwardWeight:
      return options.getWeightTicks(action.stage);
    case ActionKind::Recompute:
      return options.recomputeTicks;
    default:
      return 1;
    }
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < numRanks; ++r) {
      while (pc[r] < static_cast<int>(programs[r].size())) {
        int i = pc[r];
        int64_t ready = freeAt[r];
        bool blocked = false;
        for (auto [pr, pi] : deps[r][i]) {
          if (end[pr][pi] < 0) {
            blocked = true;
            break;
          }
          ready = std::max(ready, end[pr][pi]);
        }
        if (blocked)
          break;
        start[r][i] = ready;
        end[r][i] = ready + ticksOf(programs[r][i]);
        freeAt[r] = end[r][i];
        ++pc[r];
        progress = true;
      }
    }
  }
  // Stuck: prefer naming an action that waits for a later one on its own
  // rank (the root cause), else the first stuck rank.
  for (bool sameRankOnly : {true, false}) {
    for (int r = 0; r < numRanks; ++r) {
      if (pc[r] == static_cast<int>(programs[r].size()))
        continue;
      int i = pc[r];
      for (auto [pr, pi] : deps[r][i]) {
        if (end[pr][pi] >= 0 || (sameRankOnly && pr != r))
          continue;
        result.error =
            "compute order cannot run: rank " + std::to_string(r) + " action " +
            std::to_string(i) + " (" + toString(programs[r][i]) +
            ") waits for " + toString(programs[pr][pi]) + " (rank " +
            std::to_string(pr) + " action " + std::to_string(pi) + ")" +
            (pr == r ? ", which comes later on the same rank"
                     : ", which never runs");
        return result;
      }
    }
  }

  // Project the global event order onto the ranks.
  std::vector<std::vector<std::pair<EventKey, Action>>> events(numRanks);
  // A Step goes after every transfer of its rank: a transfer placed late
  // (alignTransfers) may fall after the simulated start of the update, and
  // nothing may follow the update. Steps need nothing from other ranks, so
  // moving them to the end keeps the global order an execution.
  for (int r = 0; r < numRanks; ++r)
    for (int i = 0, e = static_cast<int>(programs[r].size()); i < e; ++i) {
      int64_t tick = programs[r][i].kind == ActionKind::Step
                         ? std::numeric_limits<int64_t>::max()
                         : start[r][i];
      events[r].push_back({EventKey{tick, 1, r, i, 0}, programs[r][i]});
    }
  // Whether `rank` runs no action across `tick` (none starts before and
  // ends after it).
  auto isFree = [&](int rank, int64_t tick) {
    const std::vector<int64_t> &starts = start[rank];
    auto after = std::lower_bound(starts.begin(), starts.end(), tick);
    if (after == starts.begin())
      return true;
    return end[rank][(after - starts.begin()) - 1] <= tick;
  };
  // With `alignTransfers`: the first tick in [producer end, consumer start]
  // at which neither end runs an action, so that neither waits for the other
  // at the rendezvous; the producer's end if there is none.
  auto getAlignedTick = [&](const Transfer &t) {
    int64_t first = end[t.producerRank][t.producerIndex];
    int64_t last = start[t.consumerRank][t.consumerIndex];
    auto isAligned = [&](int64_t tick) {
      return isFree(t.producerRank, tick) && isFree(t.consumerRank, tick);
    };
    if (isAligned(first))
      return first;
    // The candidates in between are the ends of either side's actions, in
    // increasing order (each rank's ends increase along its program).
    const std::vector<int64_t> &a = end[t.producerRank];
    const std::vector<int64_t> &b = end[t.consumerRank];
    auto i = std::upper_bound(a.begin(), a.end(), first);
    auto j = std::upper_bound(b.begin(), b.end(), first);
    while (true) {
      int64_t tick = last;
      if (i != a.end())
        tick = std::min(tick, *i);
      if (j != b.end())
        tick = std::min(tick, *j);
      if (isAligned(tick))
        return tick;
      if (tick >= last)
        return first;
      while (i != a.end() && *i <= tick)
        ++i;
      while (j != b.end() && *j <= tick)
        ++j;
    }
  };
  for (const Transfer &t : transfers) {
    int64_t tick = options.alignTransfers
                       ? getAlignedTick(t)
                       : end[t.producerRank][t.producerIndex];
    EventKey key{tick, 0, t.boundary, t.forward ? 0 : 1, t.microbatch};
    int upstream = computeOrder.stageToRank[t.boundary];
    int downstream = computeOrder.stageToRank[t.boundary + 1];
    int64_t bytes = traffic.getBytes(t.boundary);
    if (t.forward) {
      events[upstream].push_back(
          {key, Action::comm(ActionKind::SendF, t.boundary, t.microbatch,
                             downstream, bytes, traffic.dtype)});
      events[downstream].push_back(
          {key, Action::comm(ActionKind::RecvF, t.boundary + 1, t.microbatch,
                             upstream, bytes, traffic.dtype)});
    } else {
      events[downstream].push_back(
          {key, Action::comm(ActionKind::SendB, t.boundary + 1, t.microbatch,
                             upstream, bytes, traffic.dtype)});
      events[upstream].push_back(
          {key, Action::comm(ActionKind::RecvB, t.boundary, t.microbatch,
                             downstream, bytes, traffic.dtype)});
    }
  }
  result.schedule.numStages = numStages;
  result.schedule.numMicrobatches = numMicrobatches;
  result.schedule.stageToRank = computeOrder.stageToRank;
  result.schedule.ranks.resize(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    // Keys are unique, so the order is total.
    std::vector<std::pair<EventKey, int>> order;
    order.reserve(events[r].size());
    for (int i = 0, e = static_cast<int>(events[r].size()); i < e; ++i)
      order.push_back({events[r][i].first, i});
    std::sort(order.begin(), order.end());
    result.schedule.ranks[r].reserve(order.size());
    for (const auto &entry : order)
      result.schedule.ranks[r].push_back(
          std::move(events[r][entry.second].second));
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Generators
//===----------------------------------------------------------------------===//

namespace {

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
                       const ScheduleOptions &options, bool split = false) {
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

} // namespace

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

constexpr std::pair<ScheduleFamily, const char *> kFamilyNames[] = {
    {ScheduleFamily::GPipe, "gpipe"},
    {ScheduleFamily::OneFOneB, "1f1b"},
    {ScheduleFamily::Interleaved1F1B, "interleaved-1f1b"},
    {ScheduleFamily::ZBH1, "zb-h1"},
    {ScheduleFamily::ZBH2, "zb-h2"},
    {ScheduleFamily::ZBV, "zbv"},
    {ScheduleFamily::DualPipeV, "dualpipev"},
    {ScheduleFamily::ZBAuto, "zb-auto"},
};

bool usesVShape(ScheduleFamily family, int virtualStages) {
  return virtualStages == 2 && (family == ScheduleFamily::ZBV ||
                                family == ScheduleFamily::DualPipeV ||
                                family == ScheduleFamily::ZBAuto);
}

} // namespace

std::vector<ScheduleFamily> mlir::gpipe::getScheduleFamilies() {
  std::vector<ScheduleFamily> families;
  for (const auto &entry : kFamilyNames)
    families.push_back(entry.first);
  return families;
}

const char *mlir::gpipe::getScheduleFamilyName(ScheduleFamily family) {
  for (const auto &[value, name] : kFamilyNames)
    if (value == family)
      return name;
  return "unknown";
}

bool mlir::gpipe::parseScheduleFamily(std::string_view name,
                                      ScheduleFamily &family) {
  for (const auto &[value, text] : kFamilyNames) {
    if (name == text) {
      family = value;
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
    if (virtualStages != 2)
      return name +
             " needs exactly 2 virtual stages per rank (V-shape "
             "placement), got " +
             std::to_string(virtualStages);
    return "";
  case ScheduleFamily::DualPipeV:
    if (virtualStages != 2)
      return name +
             " needs exactly 2 virtual stages per rank (V-shape "
             "placement), got " +
             std::to_string(virtualStages);
    if (numMicrobatches < 2 * numRanks - 1)
      return name +
             " needs at least 2K-1 = " + std::to_string(2 * numRanks - 1) +
             " micro-batches for " + std::to_string(numRanks) +
             " ranks (its steady phase runs M-2K+r+1 times on rank r), got " +
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

//===----------------------------------------------------------------------===//
// Generators of the families after 1F1B
//===----------------------------------------------------------------------===//

namespace {

/// Per-rank compute orders of F, B, I and W actions (no R, no Step): what the
/// generators below produce; `finishOrders` completes them.
using ComputeOrders = std::vector<std::vector<Action>>;

/// Adds a Recompute before every B and I (when `options.recompute`) and each
/// rank's Steps, in increasing stage order, at the end of its program; then
/// places the sends and receives, aligned (`alignTransfers`).
ScheduleOrError finishOrders(int numMicrobatches, std::vector<int> stageToRank,
                             const ComputeOrders &orders,
                             const BoundaryTraffic &traffic,
                             const ScheduleOptions &options,
                             bool alignTransfers = true) {
  Schedule computeOrder;
  computeOrder.numStages = static_cast<int>(stageToRank.size());
  computeOrder.numMicrobatches = numMicrobatches;
  computeOrder.stageToRank = std::move(stageToRank);
  computeOrder.ranks.resize(orders.size());
  for (int r = 0, e = static_cast<int>(orders.size()); r < e; ++r) {
    std::vector<Action> &program = computeOrder.ranks[r];
    for (const Action &action : orders[r]) {
      if (options.recompute && (action.kind == ActionKind::Backward ||
                                action.kind == ActionKind::BackwardInput))
        program.push_back(Action::compute(ActionKind::Recompute, action.stage,
                                          action.microbatch));
      program.push_back(action);
    }
    for (int stage : computeOrder.getStagesOfRank(r))
      program.push_back(Action::step(stage));
  }
  ScheduleOptions placement = options;
  placement.alignTransfers = alignTransfers;
  return insertCommunication(computeOrder, traffic, placement);
}

/// Interleaved 1F1B, after Narayanan et al., "Efficient Large-Scale Language
/// Model Training on GPU Clusters Using Megatron-LM" (SC 2021), section 2.2.
/// Rank r holds stages v*K + r (v < V, "model chunks"). Micro-batches go in
/// groups of K; every rank runs its forwards group by group, within a group
/// chunk 0 for the group's micro-batches, then chunk 1, ..., and its
/// backwards in the same order with the chunks reversed. Rank r first runs
/// 2(K-r-1) + (V-1)K warm-up forwards, so that the forward its first backward
/// depends on has run, then alternates one forward and one backward, then
/// drains the remaining backwards. That is Megatron's schedule, which needs
/// M % K == 0. Other M: the last group takes the remainder (K + M mod K
/// micro-batches; a single group of M when M < 2K, with (V-1)M in the
/// warm-up instead), since a group smaller than K would reach the next chunk
/// before the last rank has produced its input; and a backward also waits
/// for 2(K-r-1) forwards after its micro-batch's last-chunk forward (the
/// round trip through the ranks after r; automatic in full groups). Any
/// M >= 1 then gives an order that runs: checked for every K <= 16, V <= 5,
/// M <= 64 (the unit tests verify K <= 8, V <= 3, M <= 16); should some
/// other shape not, `insertCommunication` reports it rather than placing
/// transfers. The bubble is (K-1) forward+backward durations of one chunk
/// per rank, 1/V of 1F1B's for the same work per rank.
ComputeOrders buildInterleavedOrders(int numRanks, int virtualStages,
                                     int numMicrobatches) {
  int K = numRanks, V = virtualStages, M = numMicrobatches;
  // The (chunk, micro-batch) sequences every rank follows.
  std::vector<std::pair<int, int>> forwards, backwards;
  for (int first = 0, last = 0; first < M; first = last) {
    // The last group takes the remainder: K + (M mod K) micro-batches.
    last = M - first < 2 * K ? M : first + K;
    for (int v = 0; v < V; ++v)
      for (int mb = first; mb < last; ++mb)
        forwards.push_back({v, mb});
    for (int v = V - 1; v >= 0; --v)
      for (int mb = first; mb < last; ++mb)
        backwards.push_back({v, mb});
  }
  int total = static_cast<int>(forwards.size());
  int firstGroup = M < 2 * K ? M : K;
  // Per micro-batch, the index of its last-chunk forward in `forwards`.
  std::vector<int> lastChunkForward(M, 0);
  for (int i = 0; i < total; ++i)
    if (forwards[i].first == V - 1)
      lastChunkForward[forwards[i].second] = i;
  ComputeOrders orders(K);
  for (int r = 0; r < K; ++r) {
    std::vector<Action> &order = orders[r];
    auto forward = [&](int i) {
      order.push_back(Action::compute(
          ActionKind::Forward, forwards[i].first * K + r, forwards[i].second));
    };
    auto backward = [&](int i) {
      order.push_back(Action::compute(ActionKind::Backward,
                                      backwards[i].first * K + r,
                                      backwards[i].second));
    };
    int warmup = std::min(total, 2 * (K - r - 1) + (V - 1) * firstGroup);
    // Backward i runs after forward warmup + i (1F1B) and, when the last
    // group is larger than K, no earlier than 2(K-r-1) forwards after the
    // last-chunk forward of its micro-batch (the round trip through the
    // ranks after r), which full groups give by themselves.
    int done = 0;
    for (int i = 0; i < total; ++i) {
      int needed =
          std::min(total, std::max(warmup + i + 1,
                                   lastChunkForward[backwards[i].second] + 1 +
                                       2 * (K - r - 1)));
      while (done < needed)
        forward(done++);
      backward(i);
    }
  }
  return orders;
}

/// What the zero-bubble list scheduler works from: the stage map, per-stage
/// durations of F, I and W (all >= 1) and per-stage activation limits (>= 1).
struct ListSchedulerInput {
  int numMicrobatches = 0;
  std::vector<int> stageToRank;
  std::vector<int64_t> forwardTicks, inputTicks, weightTicks;
  std::vector<int> maxActivations;
  /// Per stage, the most forwards it runs before its first I (its warm-up),
  /// on top of `maxActivations`; empty or a missing entry: no such limit.
  std::vector<int> warmupForwards;
  /// Prefer an F to an I when both can run.
  bool forwardFirst = false;
  /// Leave a W for later when an I of the rank becomes ready before it
  /// would end.
  bool waitForInput = false;
  /// Among a rank's stages: the later stage first (true), or the lowest
  /// micro-batch first, then the later stage (false).
  bool laterStageFirst = false;
};

/// The zero-bubble list scheduler, after Qi et al., "Zero Bubble Pipeline
/// Parallelism" (ICLR 2024, arXiv:2401.10241): its handcrafted schedules
/// ZB-H1 and ZB-H2 (section 2) follow from the rules below with uniform
/// durations and their memory limits, and its automatic scheduling heuristic
/// (section 3) is these rules with measured per-stage durations.
///
/// Every rank's order is built by simulating all ranks together: whenever a
/// rank is idle at time t, it picks, among the actions whose inputs exist at
/// t, an I (the input gradient: the critical path towards stage 0), else an F
/// (while its stage holds fewer activations than its limit and, before its
/// first I, has run fewer forwards than its warm-up limit; a stage holds a
/// micro-batch's activations from its F until its W), else a W (which frees
/// memory and fills time the rank would otherwise idle); `forwardFirst`
/// tries the F before the I (1F1B's steady phase: one forward, then one
/// backward), and `waitForInput` leaves a W for later when the input
/// gradient of the rank's next I is already scheduled to arrive before the W
/// would end (the paper's W fills a gap only where it fits). Among several
/// stages of a rank, the lowest micro-batch first, then the later stage (or,
/// `laterStageFirst`, the later stage; zb-auto tries both). If nothing is
/// ready, the rank waits until the next action anywhere ends. Per stage, F, I
/// and W each run in micro-batch order.
///
/// Memory is counted as Timeline counts it: a micro-batch's activations are
/// held from its F until its W. ZB-H1 (section 2.1) keeps the PEAK over all
/// ranks at 1F1B's, K micro-batches (1F1B's rank 0), but lets every rank
/// hold that many: rank r runs 1F1B's K - r warm-up forwards, then F before
/// I, and defers up to r Ws into what would be 1F1B's cool-down bubble. With
/// uniform durations, M >= K, W <= min(F, I) and F <= 2I every rank idles
/// the paper's (K-1)(F+I-W) (1F1B: (K-1)(F+I+W)); checked for K <= 16,
/// M <= 40 and F, I, W <= 5. With a forward more than twice an input
/// gradient it idles up to a few F more. A per-rank limit of K - r would force
/// the last rank to run F, I, W strictly in turn and leave (K-1)(F+I). ZB-H2
/// (section 2.2) lets rank r hold 2K-1-r: with F = I = W its makespan is the
/// lower bound (K-1)F + M(F+I+W) of any one-stage-per-rank schedule.
///
/// It cannot get stuck with limits >= 1: the last stage's I only needs its
/// own F; stage s can always run the I (or W) of the oldest micro-batch it
/// holds once stage s+1 has, and a stage that holds nothing may run an F
/// (a warm-up limit only stops Fs while the stage holds some). A W left
/// for later waits for an end tick that is already scheduled.
/// An empty result means it did (an internal error).
ComputeOrders runZeroBubbleListScheduler(const ListSchedulerInput &in,
                                         int64_t *makespan = nullptr) {
  int numStages = static_cast<int>(in.stageToRank.size());
  int M = in.numMicrobatches;
  int numRanks = 0;
  for (int rank : in.stageToRank)
    numRanks = std::max(numRanks, rank + 1);
  std::vector<std::vector<int>> stagesOf(numRanks);
  for (int s = 0; s < numStages; ++s)
    stagesOf[in.stageToRank[s]].push_back(s);

  // End ticks of scheduled F and I actions; -1 while unscheduled.
  std::vector<std::vector<int64_t>> endF(numStages,
                                         std::vector<int64_t>(M, -1));
  std::vector<std::vector<int64_t>> endI = endF;
  std::vector<int> nextF(numStages, 0), nextI(numStages, 0),
      nextW(numStages, 0);
  std::vector<int64_t> clock(numRanks, 0);
  // A rank that found nothing to do and no later end tick to wait for waits
  // until some rank schedules an action.
  std::vector<bool> blocked(numRanks, false);
  std::vector<int> left(numRanks, 0);
  for (int s = 0; s < numStages; ++s)
    left[in.stageToRank[s]] += 3 * M;
  std::set<int64_t> endTicks;
  ComputeOrders orders(numRanks);
  auto isDone = [](int64_t end, int64_t now) { return end >= 0 && end <= now; };

  while (true) {
    // The idle rank with the earliest clock decides next; anything another
    // rank starts later ends after that clock, so its view is complete.
    int r = -1;
    bool anyLeft = false;
    for (int k = 0; k < numRanks; ++k) {
      anyLeft = anyLeft || left[k] > 0;
      if (left[k] > 0 && !blocked[k] && (r < 0 || clock[k] < clock[r]))
        r = k;
    }
    if (!anyLeft)
      break;
    if (r < 0)
      return {};
    int64_t now = clock[r];
    ActionKind kind = ActionKind::Step;
    int stage = -1, mb = -1;
    auto consider = [&](ActionKind candidateKind, int s, int m) {
      bool better =
          in.laterStageFirst ? s > stage : m < mb || (m == mb && s > stage);
      if (stage < 0 || better) {
        kind = candidateKind;
        stage = s;
        mb = m;
      }
    };
    auto tryInput = [&] {
      for (int s : stagesOf[r]) {
        int m = nextI[s];
        if (m < nextF[s] && isDone(endF[s][m], now) &&
            (s + 1 == numStages || isDone(endI[s + 1][m], now)))
          consider(ActionKind::BackwardInput, s, m);
      }
    };
    auto tryForward = [&] {
      for (int s : stagesOf[r]) {
        int m = nextF[s];
        bool warmupLeft = nextI[s] > 0 ||
                          s >= static_cast<int>(in.warmupForwards.size()) ||
                          nextF[s] < in.warmupForwards[s];
        if (m < M && warmupLeft && nextF[s] - nextW[s] < in.maxActivations[s] &&
            (s == 0 || isDone(endF[s - 1][m], now)))
          consider(ActionKind::Forward, s, m);
      }
    };
    if (in.forwardFirst) {
      tryForward();
      if (stage < 0)
        tryInput();
    } else {
      tryInput();
      if (stage < 0)
        tryForward();
    }
    // Whether an I of this rank becomes ready before `until`: its input
    // gradient is already scheduled to arrive then.
    auto inputArrivesBefore = [&](int64_t until) {
      for (int s : stagesOf[r]) {
        int m = nextI[s];
        if (m < nextF[s] && s + 1 < numStages && endI[s + 1][m] > now &&
            endI[s + 1][m] < until && endF[s][m] >= 0 && endF[s][m] < until)
          return true;
      }
      return false;
    };
    if (stage < 0) {
      for (int s : stagesOf[r]) {
        int m = nextW[s];
        if (m < nextI[s] && isDone(endI[s][m], now) &&
            !(in.waitForInput && inputArrivesBefore(now + in.weightTicks[s])))
          consider(ActionKind::BackwardWeight, s, m);
      }
    }
    if (stage < 0) {
      // Wait for the next action anywhere to end.
      auto next = endTicks.upper_bound(now);
      if (next == endTicks.end())
        blocked[r] = true;
      else
        clock[r] = *next;
      continue;
    }
    int64_t duration = kind == ActionKind::Forward ? in.forwardTicks[stage]
                       : kind == ActionKind::BackwardInput
                           ? in.inputTicks[stage]
                           : in.weightTicks[stage];
    int64_t end = now + duration;
    orders[r].push_back(Action::compute(kind, stage, mb));
    if (kind == ActionKind::Forward) {
      endF[stage][mb] = end;
      ++nextF[stage];
    } else if (kind == ActionKind::BackwardInput) {
      endI[stage][mb] = end;
      ++nextI[stage];
    } else {
      ++nextW[stage];
    }
    endTicks.insert(end);
    clock[r] = end;
    --left[r];
    blocked.assign(numRanks, false);
  }
  if (makespan)
    *makespan = endTicks.empty() ? 0 : *endTicks.rbegin();
  return orders;
}

/// ZB-V, after Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024),
/// section 6, in the form PyTorch's ScheduleZBVZeroBubble builds: V-shape
/// placement, rank r holds chunk 0 = stage r and chunk 1 = stage 2K-1-r.
/// The schedule is built for N = max(M, 2K-1) micro-batches and the actions
/// of micro-batches >= M are dropped (they only ever depend on their own
/// micro-batch on earlier stages, so what stays still runs). Rank r:
/// warm-up 2(K-r)-1 chunk-0 forwards, then r pairs (chunk-1 F, chunk-0 F),
/// then K-r triples (chunk-1 F, I, W); the steady phase repeats (chunk-0 F
/// while any are left, chunk-0 I, W, chunk-1 F, I, W) until both chunks have
/// run N forwards; the cool-down runs r pairs (chunk-0 I, chunk-1 I), then
/// K-r pairs (chunk-0 I, the oldest pending chunk-0 W), then the pending
/// chunk-1 Ws, then the pending chunk-0 Ws. Peak memory matches 1F1B's (2K
/// chunk activations, i.e. K micro-batches of the whole rank, on rank 0).
ComputeOrders buildZBVOrders(int numRanks, int numMicrobatches) {
  int K = numRanks, M = numMicrobatches;
  int N = std::max(M, 2 * K - 1);
  ComputeOrders orders(K);
  for (int r = 0; r < K; ++r) {
    int chunk0 = r, chunk1 = 2 * K - 1 - r;
    int f0 = 0, f1 = 0, b0 = 0, b1 = 0;
    std::vector<Action> &order = orders[r];
    auto add = [&](ActionKind kind, int stage, int mb) {
      if (mb < M)
        order.push_back(Action::compute(kind, stage, mb));
    };
    for (int i = 0; i < 2 * (K - r) - 1; ++i)
      add(ActionKind::Forward, chunk0, f0++);
    for (int i = 0; i < r; ++i) {
      add(ActionKind::Forward, chunk1, f1++);
      add(ActionKind::Forward, chunk0, f0++);
    }
    for (int i = 0; i < K - r; ++i) {
      add(ActionKind::Forward, chunk1, f1++);
      add(ActionKind::BackwardInput, chunk1, b1);
      add(ActionKind::BackwardWeight, chunk1, b1++);
    }
    while (f1 < f0 || f0 < N) {
      if (f0 < N)
        add(ActionKind::Forward, chunk0, f0++);
      add(ActionKind::BackwardInput, chunk0, b0);
      add(ActionKind::BackwardWeight, chunk0, b0++);
      add(ActionKind::Forward, chunk1, f1++);
      add(ActionKind::BackwardInput, chunk1, b1);
      add(ActionKind::BackwardWeight, chunk1, b1++);
    }
    int w0 = b0, w1 = b1;
    for (int i = 0; i < r; ++i) {
      add(ActionKind::BackwardInput, chunk0, b0++);
      add(ActionKind::BackwardInput, chunk1, b1++);
    }
    for (int i = 0; i < K - r; ++i) {
      add(ActionKind::BackwardInput, chunk0, b0++);
      add(ActionKind::BackwardWeight, chunk0, w0++);
    }
    while (w1 < b1)
      add(ActionKind::BackwardWeight, chunk1, w1++);
    while (w0 < b0)
      add(ActionKind::BackwardWeight, chunk0, w0++);
  }
  return orders;
}

/// DualPipeV: DeepSeek-AI, "DeepSeek-V3 Technical Report" (arXiv:2412.19437),
/// section 3.2.1 (DualPipe), in the V-shaped single-copy form PyTorch's
/// ScheduleDualPipeV defines (V-shape placement). PyTorch asks for M >= 2K;
/// every step count below is >= 0 from M = 2K-1 on, and the result verifies
/// there too, so that is the limit here. Rank r, chunk 0 =
/// stage r, chunk 1 = stage 2K-1-r; every action takes the next micro-batch
/// of its stage and kind; a B (full backward) counts as that micro-batch's I
/// and W; an I queues its W, and "W" below runs the oldest queued W (if
/// any). The overlapped forward+backward pairs of the original run here as
/// the forward, then the full backward. Steps:
///   1. 2(K-r-1) chunk-0 F;
///   2. r+1 times: chunk-0 F, chunk-1 F;
///   3. K-r-1 times: chunk-1 I, W, chunk-1 F;
///   4. M-2K+r+1 times: chunk-0 F + chunk-1 B (on the last rank the first of
///      them not overlapped: same order here), chunk-1 F + chunk-0 B;
///   5. K-r-1 times: chunk-1 B, then chunk-1 F + chunk-0 B;
///   6. r+1 times: a chunk-1 then a chunk-0 backward, full until the middle
///      iteration, split (I) from there: at iteration (r+1)/2 odd ranks
///      split both, even ranks from the chunk-0 one on;
///   7. K-r-1 times: W, then a chunk-0 backward (split if step 6 switched);
///   8. r+1 times: W.
/// The queue pops Ws in I order, so each stage's Ws run in micro-batch order
/// and after its full backwards (which cover its earlier micro-batches).
ComputeOrders buildDualPipeVOrders(int numRanks, int numMicrobatches) {
  int K = numRanks, M = numMicrobatches;
  ComputeOrders orders(K);
  for (int r = 0; r < K; ++r) {
    int chunk0 = r, chunk1 = 2 * K - 1 - r;
    std::vector<Action> &order = orders[r];
    // Next micro-batch per stage of F and of backward (B or I).
    std::map<int, int> nextF, nextB;
    std::deque<std::pair<int, int>> pendingW;
    auto forward = [&](int stage) {
      order.push_back(
          Action::compute(ActionKind::Forward, stage, nextF[stage]++));
    };
    auto backward = [&](int stage, bool split) {
      int mb = nextB[stage]++;
      order.push_back(Action::compute(
          split ? ActionKind::BackwardInput : ActionKind::Backward, stage, mb));
      if (split)
        pendingW.push_back({stage, mb});
    };
    auto weight = [&] {
      if (pendingW.empty())
        return;
      order.push_back(Action::compute(ActionKind::BackwardWeight,
                                      pendingW.front().first,
                                      pendingW.front().second));
      pendingW.pop_front();
    };
    for (int i = 0; i < 2 * (K - r - 1); ++i)
      forward(chunk0);
    for (int i = 0; i < r + 1; ++i) {
      forward(chunk0);
      forward(chunk1);
    }
    for (int i = 0; i < K - r - 1; ++i) {
      backward(chunk1, /*split=*/true);
      weight();
      forward(chunk1);
    }
    for (int i = 0; i < M - 2 * K + r + 1; ++i) {
      forward(chunk0);
      backward(chunk1, /*split=*/false);
      forward(chunk1);
      backward(chunk0, /*split=*/false);
    }
    for (int i = 0; i < K - r - 1; ++i) {
      backward(chunk1, /*split=*/false);
      forward(chunk1);
      backward(chunk0, /*split=*/false);
    }
    bool split = false;
    int middle = (r + 1) / 2;
    for (int i = 0; i < r + 1; ++i) {
      if (i == middle && r % 2 == 1)
        split = true;
      backward(chunk1, split);
      if (i == middle && r % 2 == 0)
        split = true;
      backward(chunk0, split);
    }
    for (int i = 0; i < K - r - 1; ++i) {
      weight();
      backward(chunk0, split);
    }
    for (int i = 0; i < r + 1; ++i)
      weight();
  }
  return orders;
}

} // namespace

ScheduleOrError mlir::gpipe::buildSchedule(ScheduleFamily family, int numRanks,
                                           int virtualStages,
                                           int numMicrobatches,
                                           const BoundaryTraffic &traffic,
                                           const ScheduleOptions &options) {
  ScheduleOrError result;
  result.error =
      checkScheduleShape(family, numRanks, virtualStages, numMicrobatches);
  if (!result.ok())
    return result;
  result.error = checkDurations(options);
  if (!result.ok())
    return result;
  int K = numRanks, V = virtualStages, M = numMicrobatches;
  std::vector<int> placement = getSchedulePlacement(family, K, V);
  int numStages = static_cast<int>(placement.size());

  // Uniform durations for the handcrafted zero-bubble schedules, per-stage
  // ones for zb-auto; a recompute runs right before its I.
  auto listInput = [&](bool perStage) {
    ListSchedulerInput in;
    in.numMicrobatches = M;
    in.stageToRank = placement;
    for (int s = 0; s < numStages; ++s) {
      int stage = perStage ? s : -1;
      in.forwardTicks.push_back(options.getForwardTicks(stage));
      in.inputTicks.push_back(options.getInputTicks(stage) +
                              (options.recompute ? options.recomputeTicks : 0));
      in.weightTicks.push_back(options.getWeightTicks(stage));
    }
    return in;
  };
  ComputeOrders orders;
  switch (family) {
  case ScheduleFamily::GPipe:
    return insertCommunication(makeGPipeOrder(K, M, options), traffic, options);
  case ScheduleFamily::OneFOneB:
    return insertCommunication(make1F1BOrder(K, M, options), traffic, options);
  case ScheduleFamily::Interleaved1F1B:
    orders = buildInterleavedOrders(K, V, M);
    break;
  case ScheduleFamily::ZBH1:
  case ScheduleFamily::ZBH2: {
    // ZB-H1 lets every rank hold K activations (counted until W), 1F1B's
    // peak over all ranks (its rank 0), with 1F1B's K - r warm-up forwards
    // on rank r and the F before the I after them, so that rank r defers up
    // to r Ws into the cool-down (Qi et al., section 2.1); a W waits when it
    // would delay an I.
    // ZB-H2 lets rank r hold 2K-1-r: rank 0 the 2K-1 forwards that fit
    // before its first input gradient can arrive (the paper's (2p-1) M_B
    // peak), and each later rank K-1 more than in 1F1B, which lets it defer
    // its Ws past its last I so that the input gradients reach rank 0
    // without a stall: with uniform durations the makespan is the lower
    // bound (K-1)F + M(F+I+W) of any one-stage-per-rank schedule.
    ListSchedulerInput in = listInput(/*perStage=*/false);
    in.forwardFirst = in.waitForInput = family == ScheduleFamily::ZBH1;
    for (int s = 0; s < numStages; ++s) {
      if (family == ScheduleFamily::ZBH1) {
        in.maxActivations.push_back(K);
        in.warmupForwards.push_back(K - s);
      } else {
        in.maxActivations.push_back(2 * K - 1 - s);
      }
    }
    orders = runZeroBubbleListScheduler(in);
    break;
  }
  case ScheduleFamily::ZBAuto: {
    // A search over candidate orders, each completed with its sends and
    // receives (two placements) and simulated with the per-stage durations
    // under blocking rendezvous; the shortest that keeps every stage within its
    // memory limit wins (ties: the first). Candidates: the list scheduler with
    // the automatic rules and with ZB-H1's (F before I after the warm-up,
    // a W left for later when an I is due), with several stages per rank
    // also the later stage first; and a plain order that the list
    // scheduler's greedy choices can miss when the durations are uneven:
    // ZB-H1's and ZB-H2's orders and 1F1B with each B split into I then W
    // (V = 1), ZB-V's order (V = 2).
    // The default limit is 1F1B's peak memory on the rank that holds the
    // most (Qi et al.'s memory limit): K micro-batches on every rank with
    // one stage per rank, numStages - s per stage with the V-shape (ZB-V's
    // peaks, which equal 1F1B's).
    std::vector<int> limits;
    for (int s = 0; s < numStages; ++s) {
      bool given = s < static_cast<int>(options.maxActivations.size()) &&
                   options.maxActivations[s] >= 1;
      limits.push_back(given    ? options.maxActivations[s]
                       : V == 1 ? K
                                : numStages - s);
    }
    // The greedy rules can do worse with more memory (an early W that
    // delays a forward the next rank waits for): each runs under the limit
    // and under 1F1B's per-stage warm-up depth too.
    std::vector<int> tighter = limits;
    for (int s = 0; s < numStages; ++s)
      tighter[s] = std::min(tighter[s], numStages - s);
    std::vector<ComputeOrders> candidates;
    ListSchedulerInput in = listInput(/*perStage=*/true);
    for (const std::vector<int> &limit : {limits, tighter})
      for (bool h1Rules : {false, true}) {
        in.maxActivations = limit;
        in.forwardFirst = in.waitForInput = h1Rules;
        // ZB-H1's rules come with 1F1B's warm-up.
        in.warmupForwards.clear();
        if (h1Rules && V == 1)
          for (int s = 0; s < numStages; ++s)
            in.warmupForwards.push_back(K - s);
        for (bool laterFirst : {false, true}) {
          if (laterFirst && V == 1)
            continue;
          in.laterStageFirst = laterFirst;
          candidates.push_back(runZeroBubbleListScheduler(in));
        }
      }
    if (V == 1) {
      // ZB-H1's and ZB-H2's own orders (built for uniform durations); the
      // memory check below drops what exceeds the limits.
      for (bool h1 : {true, false}) {
        ListSchedulerInput uniform = listInput(/*perStage=*/false);
        uniform.forwardFirst = uniform.waitForInput = h1;
        for (int s = 0; s < numStages; ++s) {
          uniform.maxActivations.push_back(h1 ? K : 2 * K - 1 - s);
          if (h1)
            uniform.warmupForwards.push_back(K - s);
        }
        candidates.push_back(runZeroBubbleListScheduler(uniform));
      }
      // finishOrders adds the Recomputes and the Steps.
      Schedule split = make1F1BOrder(K, M, ScheduleOptions(), /*split=*/true);
      for (std::vector<Action> &program : split.ranks)
        program.pop_back();
      candidates.push_back(std::move(split.ranks));
    } else {
      candidates.push_back(buildZBVOrders(K, M));
    }
    ActionDurations durations =
        ActionDurations::uniform(numStages, 1.0, 2.0, 0.0);
    for (int s = 0; s < numStages; ++s) {
      double f = static_cast<double>(options.getForwardTicks(s));
      durations.set(ActionKind::Forward, s, f);
      durations.set(ActionKind::Recompute, s, f);
      durations.set(ActionKind::BackwardInput, s,
                    static_cast<double>(options.getInputTicks(s)));
      durations.set(ActionKind::BackwardWeight, s,
                    static_cast<double>(options.getWeightTicks(s)));
      durations.set(ActionKind::Backward, s,
                    static_cast<double>(options.getBackwardTicks(s)));
    }
    // Each with its transfers aligned to moments both ends are between
    // actions, and at their producers' ends (which uneven durations can
    // favour).
    std::optional<ScheduleOrError> best;
    double bestMakespan = 0;
    for (const ComputeOrders &candidate : candidates)
      for (bool align : {true, false}) {
        if (candidate.empty())
          continue;
        ScheduleOrError built =
            finishOrders(M, placement, candidate, traffic, options, align);
        if (!built.ok())
          continue;
        Timeline timeline = simulate(built.schedule, durations);
        if (!timeline.ok())
          continue;
        bool fits = true;
        for (int s = 0; s < numStages; ++s)
          fits &= timeline.peakActivations[s] <= limits[s];
        if (!fits || (best && timeline.makespan >= bestMakespan))
          continue;
        best = std::move(built);
        bestMakespan = timeline.makespan;
      }
    if (!best) {
      result.error = "zb-auto: no order fits the memory limits";
      return result;
    }
    return std::move(*best);
  }
  case ScheduleFamily::ZBV:
    orders = buildZBVOrders(K, M);
    break;
  case ScheduleFamily::DualPipeV:
    orders = buildDualPipeVOrders(K, M);
    break;
  }
  if (orders.empty()) {
    result.error = std::string(getScheduleFamilyName(family)) +
                   ": internal error, the generator got stuck";
    return result;
  }
  return finishOrders(M, std::move(placement), orders, traffic, options);
}

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
  case ScheduleFamily::ZBAuto:
    return std::nullopt;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// CSV
//===----------------------------------------------------------------------===//

std::string mlir::gpipe::toCSV(const Schedule &schedule) {
  std::string text;
  for (const std::vector<Action> &program : schedule.ranks) {
    for (size_t i = 0; i < program.size(); ++i) {
      if (i)
        text += ',';
      text += toString(program[i]);
    }
    text += '\n';
  }
  return text;
}

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

/// Parses a non-negative decimal of at most 9 digits; -1 if it is not one.
int parseSmallInt(std::string_view digits) {
  if (digits.empty() || digits.size() > 9)
    return -1;
  int value = 0;
  for (char c : digits) {
    if (!isDigit(c))
      return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

bool parseKindName(std::string_view name, ActionKind &kind) {
  static const std::pair<const char *, ActionKind> kNames[] = {
      {"F", ActionKind::Forward},
      {"B", ActionKind::Backward},
      {"I", ActionKind::BackwardInput},
      {"W", ActionKind::BackwardWeight},
      {"R", ActionKind::Recompute},
      {"SEND_F", ActionKind::SendF},
      {"RECV_F", ActionKind::RecvF},
      {"SEND_B", ActionKind::SendB},
      {"RECV_B", ActionKind::RecvB},
      {"REDUCE_GRAD", ActionKind::ReduceGrad},
      {"SUM_TIED", ActionKind::SumTied},
      {"STEP", ActionKind::Step},
  };
  for (const auto &[text, value] : kNames) {
    if (name == text) {
      kind = value;
      return true;
    }
  }
  return false;
}

/// PyTorch action types that have no effect in gpipe's model: the reader
/// accepts them (checking stage and micro-batch like any other cell) and
/// drops them. UNSHARD and RESHARD gather and free FSDP-sharded parameters,
/// which only FSDP does; a stage's parameters are never sharded here.
/// WAIT_SEND_F and WAIT_SEND_B wait for an asynchronous send to finish; here
/// a send finishes at the rendezvous with its receive. WAIT_REDUCE_GRAD waits
/// for an asynchronous REDUCE_GRAD; here REDUCE_GRAD is complete when it
/// returns. Sets `withMicrobatch` to whether the spelling carries one.
bool parseIgnoredKindName(std::string_view name, bool &withMicrobatch) {
  static const std::pair<const char *, bool> kNames[] = {
      {"UNSHARD", false},    {"RESHARD", false},          {"WAIT_SEND_F", true},
      {"WAIT_SEND_B", true}, {"WAIT_REDUCE_GRAD", false},
  };
  for (const auto &[text, value] : kNames) {
    if (name == text) {
      withMicrobatch = value;
      return true;
    }
  }
  return false;
}

/// PyTorch's composite cell `(<action>;<action>...)OVERLAP_F_B`: compute
/// actions the library may overlap (DualPipeV pairs one stage's forward with
/// another's backward). The reader replaces it by its sub-actions in order.
constexpr std::string_view kOverlapSuffix = "OVERLAP_F_B";

} // namespace

ScheduleOrError mlir::gpipe::parseCSV(std::string_view text, int numStages,
                                      int numMicrobatches,
                                      const BoundaryTraffic &traffic) {
  ScheduleOrError result;
  if (numStages < 1) {
    result.error =
        "expected at least one stage, got " + std::to_string(numStages);
    return result;
  }
  if (numMicrobatches < 1) {
    result.error = "expected at least one micro-batch, got " +
                   std::to_string(numMicrobatches);
    return result;
  }

  // Split into lines; a final newline does not start another rank.
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    if (eol == std::string_view::npos) {
      lines.push_back(text);
      break;
    }
    lines.push_back(text.substr(0, eol));
    text.remove_prefix(eol + 1);
  }
  if (lines.empty()) {
    result.error = "expected one line per rank, got an empty schedule";
    return result;
  }

  struct Cell {
    Action action;
    int column;
  };
  int numRanks = static_cast<int>(lines.size());
  std::vector<std::vector<Cell>> cells(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    std::string_view line = lines[r];
    int column = 0;
    // The sub-actions of a composite cell not read yet, in order; they are
    // read as cells of the composite's column.
    std::vector<std::string_view> subCells;
    for (bool more = true; more || !subCells.empty();) {
      std::string_view cell;
      bool isSubCell = !subCells.empty();
      if (isSubCell) {
        cell = trim(subCells.front());
        subCells.erase(subCells.begin());
      } else {
        ++column;
        size_t comma = line.find(',');
        std::string_view raw = line.substr(0, comma);
        more = comma != std::string_view::npos;
        if (more)
          line.remove_prefix(comma + 1);
        cell = trim(raw);
        if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"')
          cell = trim(cell.substr(1, cell.size() - 2));
      }
      if (cell.empty())
        continue;
      std::string where = "line " + std::to_string(r + 1) + " (rank " +
                          std::to_string(r) + ") column " +
                          std::to_string(column) + ": ";
      std::string quoted = "'" + std::string(cell) + "'";
      if (cell.front() == '(') {
        size_t close = cell.find(')');
        if (isSubCell || close == std::string_view::npos ||
            cell.substr(close + 1) != kOverlapSuffix) {
          result.error = where + "malformed composite action " + quoted +
                         ", expected (<action>;<action>)" +
                         std::string(kOverlapSuffix);
          return result;
        }
        std::string_view inner = cell.substr(1, close - 1);
        if (trim(inner).empty()) {
          result.error =
              where + "composite action " + quoted + " holds no action";
          return result;
        }
        for (bool moreSub = true; moreSub;) {
          size_t semicolon = inner.find(';');
          subCells.push_back(inner.substr(0, semicolon));
          moreSub = semicolon != std::string_view::npos;
          if (moreSub)
            inner.remove_prefix(semicolon + 1);
        }
        continue;
      }
      size_t kindBegin = 0;
      while (kindBegin < cell.size() && isDigit(cell[kindBegin]))
        ++kindBegin;
      size_t kindEnd = kindBegin;
      while (kindEnd < cell.size() &&
             ((cell[kindEnd] >= 'A' && cell[kindEnd] <= 'Z') ||
              cell[kindEnd] == '_'))
        ++kindEnd;
      std::string_view stageText = cell.substr(0, kindBegin);
      std::string_view kindText = cell.substr(kindBegin, kindEnd - kindBegin);
      std::string_view mbText = cell.substr(kindEnd);
      if (stageText.empty() || kindText.empty()) {
        result.error = where + "malformed action " + quoted +
                       ", expected <stage><type><micro-batch> such as '1F0'";
        return result;
      }
      ActionKind kind = ActionKind::Forward;
      bool withMicrobatch = false, ignored = false;
      if (parseKindName(kindText, kind)) {
        withMicrobatch = hasMicrobatch(kind);
      } else if (parseIgnoredKindName(kindText, withMicrobatch)) {
        ignored = true;
      } else {
        result.error = where + "unknown action type '" + std::string(kindText) +
                       "' in " + quoted;
        return result;
      }
      if (isSubCell && (ignored || !isComputeKind(kind))) {
        result.error = where + "action " + quoted +
                       " in a composite action, expected a compute action";
        return result;
      }
      int stage = parseSmallInt(stageText);
      if (stage < 0 || stage >= numStages) {
        result.error = where + "stage " + std::string(stageText) + " in " +
                       quoted + " out of range for " +
                       std::to_string(numStages) + " stages";
        return result;
      }
      int mb = -1;
      if (withMicrobatch) {
        if (mbText.empty()) {
          result.error = where + "action " + quoted + " needs a micro-batch";
          return result;
        }
        mb = parseSmallInt(mbText);
        if (mb < 0) {
          result.error = where + "malformed micro-batch '" +
                         std::string(mbText) + "' in " + quoted;
          return result;
        }
        if (mb >= numMicrobatches) {
          result.error = where + "micro-batch " + std::to_string(mb) + " in " +
                         quoted + " out of range for " +
                         std::to_string(numMicrobatches) + " micro-batches";
          return result;
        }
      } else if (!mbText.empty()) {
        result.error = where + "action " + quoted + " takes no micro-batch";
        return result;
      }
      if ((kind == ActionKind::SendF || kind == ActionKind::RecvB) &&
          stage == numStages - 1) {
        result.error = where + quoted + " talks to the stage after the last";
        return result;
      }
      if ((kind == ActionKind::RecvF || kind == ActionKind::SendB) &&
          stage == 0) {
        result.error = where + quoted + " talks to the stage before the first";
        return result;
      }
      if (ignored)
        continue;
      cells[r].push_back({Action::compute(kind, stage, mb), column});
    }
  }

  // Infer the stage map: each stage on exactly one rank.
  size_t numCells = 0;
  for (const std::vector<Cell> &row : cells)
    numCells += row.size();
  if (static_cast<size_t>(numStages) > numCells) {
    result.error = "expected every one of " + std::to_string(numStages) +
                   " stages on some rank, the schedule has " +
                   std::to_string(numCells) + " actions in all";
    return result;
  }
  std::vector<int> stageToRank(numStages, -1), firstColumn(numStages, 0);
  for (int r = 0; r < numRanks; ++r) {
    for (const Cell &cell : cells[r]) {
      int s = cell.action.stage;
      if (stageToRank[s] < 0) {
        stageToRank[s] = r;
        firstColumn[s] = cell.column;
      } else if (stageToRank[s] != r) {
        result.error = "stage " + std::to_string(s) + " appears on rank " +
                       std::to_string(stageToRank[s]) + " (line " +
                       std::to_string(stageToRank[s] + 1) + " column " +
                       std::to_string(firstColumn[s]) + ") and on rank " +
                       std::to_string(r) + " (line " + std::to_string(r + 1) +
                       " column " + std::to_string(cell.column) + ")";
        return result;
      }
    }
  }
  for (int s = 0; s < numStages; ++s) {
    if (stageToRank[s] < 0) {
      result.error = "stage " + std::to_string(s) + " appears on no rank";
      return result;
    }
  }

  Schedule &schedule = result.schedule;
  schedule.numStages = numStages;
  schedule.numMicrobatches = numMicrobatches;
  schedule.stageToRank = stageToRank;
  schedule.ranks.resize(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    for (Cell &cell : cells[r]) {
      Action &action = cell.action;
      if (isTransferKind(action.kind)) {
        bool towardsNext = action.kind == ActionKind::SendF ||
                           action.kind == ActionKind::RecvB;
        int other = towardsNext ? action.stage + 1 : action.stage - 1;
        action.peer = stageToRank[other];
        action.bytes = traffic.getBytes(std::min(action.stage, other));
        action.dtype = traffic.dtype;
      }
      schedule.ranks[r].push_back(std::move(action));
    }
  }
  return result;
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
  case ScheduleFamily::ZBAuto:
    return true;
  }
  return false;
}

int mlir::gpipe::getDefaultVirtualStages(ScheduleFamily family) {
  return family == ScheduleFamily::Interleaved1F1B ||
                 family == ScheduleFamily::ZBV ||
                 family == ScheduleFamily::DualPipeV
             ? 2
             : 1;
}
