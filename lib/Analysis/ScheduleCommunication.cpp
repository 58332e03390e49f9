//===- ScheduleCommunication.cpp - Sends and receives of a schedule -------===//
//
// `insertCommunication`: turns per-rank compute orders into complete programs
// whose sends and receives cannot deadlock under blocking rendezvous, by
// projecting one global, simulated event order onto the ranks.
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

/// "" if every duration in `options` is usable, else the problem.
std::string
mlir::gpipe::detail::checkDurations(const ScheduleOptions &options) {
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

ScheduleOrError
mlir::gpipe::insertCommunication(const Schedule &computeOrder,
                                 const BoundaryTraffic &traffic,
                                 const ScheduleOptions &options) {
  ScheduleOrError result;
  if (std::string error = detail::checkDurations(options); !error.empty()) {
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
