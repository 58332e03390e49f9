//===- Schedule.cpp - Pipeline schedules ------------------------*- C++ -*-===//
//
// Implements the plain-data schedule helpers, the GPipe and 1F1B generators,
// `insertCommunication` (which turns per-rank compute orders into complete
// programs whose sends and receives cannot deadlock under blocking rendezvous,
// by projecting one global, simulated event order onto the ranks), and the
// PyTorch-compatible CSV writer and reader.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Schedule.h"

#include <algorithm>
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
         stageToRank == other.stageToRank && ranks == other.ranks;
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
  if (options.forwardTicks < 1 || options.backwardTicks < 1 ||
      options.recomputeTicks < 1) {
    result.error = "placement durations must be positive, got forward " +
                   std::to_string(options.forwardTicks) + ", backward " +
                   std::to_string(options.backwardTicks) + ", recompute " +
                   std::to_string(options.recomputeTicks);
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
                {true, s - 1, mb, producer.first, producer.second});
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
                {false, s, mb, producer.first, producer.second});
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
  auto ticksOf = [&](ActionKind kind) -> int64_t {
    switch (kind) {
    case ActionKind::Forward:
      return options.forwardTicks;
    case ActionKind::Backward:
      return options.backwardTicks;
    case ActionKind::BackwardInput:
    case ActionKind::BackwardWeight:
      return std::max<int64_t>(1, options.backwardTicks / 2);
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
        end[r][i] = ready + ticksOf(programs[r][i].kind);
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
  for (int r = 0; r < numRanks; ++r)
    for (int i = 0, e = static_cast<int>(programs[r].size()); i < e; ++i)
      events[r].push_back({EventKey{start[r][i], 1, r, i, 0}, programs[r][i]});
  for (const Transfer &t : transfers) {
    int64_t tick = end[t.producerRank][t.producerIndex];
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

void appendBackward(std::vector<Action> &program, int stage, int mb,
                    const ScheduleOptions &options) {
  if (options.recompute)
    program.push_back(Action::compute(ActionKind::Recompute, stage, mb));
  program.push_back(Action::compute(ActionKind::Backward, stage, mb));
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

} // namespace

Schedule mlir::gpipe::buildGPipeSchedule(int numStages, int numMicrobatches,
                                         const BoundaryTraffic &traffic,
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
  return finish(std::move(schedule), traffic, options);
}

Schedule mlir::gpipe::buildGPipeSchedule(int numStages, int numMicrobatches,
                                         int64_t boundaryBytes) {
  return buildGPipeSchedule(numStages, numMicrobatches,
                            BoundaryTraffic::uniform(numStages, boundaryBytes));
}

Schedule mlir::gpipe::build1F1BSchedule(int numStages, int numMicrobatches,
                                        const BoundaryTraffic &traffic,
                                        const ScheduleOptions &options) {
  Schedule schedule = makeComputeSkeleton(numStages, numMicrobatches);
  for (int k = 0, e = schedule.getNumRanks(); k < e; ++k) {
    std::vector<Action> &program = schedule.ranks[k];
    int warmup = std::min(numStages - k - 1, numMicrobatches);
    for (int mb = 0; mb < warmup; ++mb)
      program.push_back(Action::compute(ActionKind::Forward, k, mb));
    for (int i = 0; i + warmup < numMicrobatches; ++i) {
      program.push_back(Action::compute(ActionKind::Forward, k, warmup + i));
      appendBackward(program, k, i, options);
    }
    for (int mb = numMicrobatches - warmup; mb < numMicrobatches; ++mb)
      appendBackward(program, k, mb, options);
    program.push_back(Action::step(k));
  }
  return finish(std::move(schedule), traffic, options);
}

Schedule mlir::gpipe::build1F1BSchedule(int numStages, int numMicrobatches,
                                        int64_t boundaryBytes) {
  return build1F1BSchedule(numStages, numMicrobatches,
                           BoundaryTraffic::uniform(numStages, boundaryBytes));
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
      {"F", ActionKind::Forward},       {"B", ActionKind::Backward},
      {"I", ActionKind::BackwardInput}, {"W", ActionKind::BackwardWeight},
      {"R", ActionKind::Recompute},     {"SEND_F", ActionKind::SendF},
      {"RECV_F", ActionKind::RecvF},    {"SEND_B", ActionKind::SendB},
      {"RECV_B", ActionKind::RecvB},    {"REDUCE_GRAD", ActionKind::ReduceGrad},
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
