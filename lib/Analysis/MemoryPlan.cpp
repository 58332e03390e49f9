//===- MemoryPlan.cpp - Per-rank arena memory planning ----------*- C++ -*-===//
//
// Implements the memory planner: buffer lifetimes from each rank's program
// (see MemoryPlan.h for which buffer lives from which action to which), the
// exact peak of live bytes and its breakdown, and the offline interval
// allocation of all buffers of a rank into one arena.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/MemoryPlan.h"

#include "gpipe/Analysis/Partition.h"
#include "gpipe/Analysis/ScheduleVerifier.h"

#include <algorithm>
#include <limits>
#include <set>
#include <cstdio>
#include <map>
#include <numeric>
#include <tuple>

using namespace mlir::gpipe;

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

std::optional<OptimizerKind>
mlir::gpipe::parseOptimizerKind(std::string_view name) {
  std::string lower(name);
  for (char &c : lower)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return ::gpipe::abi::parseOptimizerKind(lower);
}

const char *mlir::gpipe::getBufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Parameters:
    return "params";
  case BufferKind::Gradients:
    return "grads";
  case BufferKind::OptimizerState:
    return "optimizer";
  case BufferKind::Input:
    return "input";
  case BufferKind::ExtraInput:
    return "extra";
  case BufferKind::Saved:
    return "saved";
  case BufferKind::Output:
    return "output";
  case BufferKind::OutputGrad:
    return "output_grad";
  case BufferKind::InputGrad:
    return "input_grad";
  case BufferKind::Scratch:
    return "scratch";
  }
  return "?";
}

bool mlir::gpipe::isPersistentBuffer(BufferKind kind) {
  return kind == BufferKind::Parameters || kind == BufferKind::Gradients ||
         kind == BufferKind::OptimizerState;
}

bool mlir::gpipe::isKeptActivation(BufferKind kind) {
  return kind == BufferKind::Input || kind == BufferKind::ExtraInput ||
         kind == BufferKind::Saved;
}

bool mlir::gpipe::isBoundaryBuffer(BufferKind kind) {
  return kind == BufferKind::Output || kind == BufferKind::OutputGrad ||
         kind == BufferKind::InputGrad;
}

void MemoryBreakdown::add(const PlannedBuffer &buffer, int action) {
  int64_t bytes = buffer.bytes;
  if (buffer.kind == BufferKind::Input && action < buffer.keptFromAction) {
    boundary += bytes; // received, waiting for its forward
    return;
  }
  switch (buffer.kind) {
  case BufferKind::Parameters:
    parameters += bytes;
    return;
  case BufferKind::Gradients:
    gradients += bytes;
    return;
  case BufferKind::OptimizerState:
    optimizerState += bytes;
    return;
  case BufferKind::Input:
  case BufferKind::ExtraInput:
  case BufferKind::Saved:
    keptActivations += bytes;
    return;
  case BufferKind::Output:
  case BufferKind::OutputGrad:
  case BufferKind::InputGrad:
    boundary += bytes;
    return;
  case BufferKind::Scratch:
    scratch += bytes;
    return;
  }
}

std::vector<const PlannedBuffer *>
RankMemoryPlan::getLiveBuffers(int action) const {
  std::vector<const PlannedBuffer *> live;
  for (const PlannedBuffer &b : buffers)
    if (b.isLiveAt(action))
      live.push_back(&b);
  return live;
}

double RankMemoryPlan::getArenaOverhead() const {
  if (peakBytes <= 0)
    return 0;
  return static_cast<double>(arenaBytes) / static_cast<double>(peakBytes) - 1.0;
}

//===----------------------------------------------------------------------===//
// Liveness inside a function
//===----------------------------------------------------------------------===//

int64_t mlir::gpipe::getPeakLiveBytes(const std::vector<LiveRange> &ranges) {
  std::vector<std::pair<int64_t, int64_t>> events; // (point, delta)
  events.reserve(2 * ranges.size());
  for (const LiveRange &r : ranges) {
    if (r.bytes == 0)
      continue;
    events.push_back({r.def, r.bytes});
    events.push_back(
        {static_cast<int64_t>(std::max(r.lastUse, r.def)) + 1, -r.bytes});
  }
  std::sort(events.begin(), events.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  int64_t live = 0, peak = 0;
  for (size_t i = 0; i < events.size();) {
    size_t j = i;
    for (; j < events.size() && events[j].first == events[i].first; ++j)
      live += events[j].second;
    peak = std::max(peak, live);
    i = j;
  }
  return peak;
}

//===----------------------------------------------------------------------===//
// Allocation
//===----------------------------------------------------------------------===//

namespace {

int64_t alignTo(int64_t bytes, int64_t alignment) {
  if (bytes <= 0)
    return 0;
  return (bytes + alignment - 1) / alignment * alignment;
}

bool overlapsInTime(const PlannedBuffer &a, const PlannedBuffer &b) {
  return a.firstAction <= b.lastAction && b.firstAction <= a.lastAction;
}

/// Places the non-persistent buffers in `order` on top of the persistent
/// ones (already at their offsets in `offsets`), each into the smallest gap
/// among the placed buffers live at the same time. Returns the arena size.
int64_t placeBestFit(const std::vector<PlannedBuffer> &buffers,
                     const std::vector<int64_t> &sizes,
                     const std::vector<size_t> &persistent,
                     const std::vector<size_t> &order,
                     std::vector<int64_t> &offsets) {
  std::vector<size_t> placed = persistent;
  int64_t arena = 0;
  for (size_t p : persistent)
    arena = std::max(arena, offsets[p] + sizes[p]);
  std::vector<std::pair<int64_t, int64_t>> busy; // (offset, end)
  for (size_t idx : order) {
    const PlannedBuffer &buffer = buffers[idx];
    int64_t size = sizes[idx];
    if (size == 0) {
      offsets[idx] = 0;
      continue;
    }
    busy.clear();
    for (size_t other : placed)
      if (sizes[other] > 0 && overlapsInTime(buffer, buffers[other]))
        busy.push_back({offsets[other], offsets[other] + sizes[other]});
    std::sort(busy.begin(), busy.end());
    int64_t cursor = 0;
    int64_t best = -1, bestGap = 0;
    for (const auto &[begin, end] : busy) {
      if (begin > cursor) {
        int64_t gap = begin - cursor;
        if (gap >= size && (best < 0 || gap < bestGap)) {
          best = cursor;
          bestGap = gap;
        }
      }
      cursor = std::max(cursor, end);
    }
    offsets[idx] = best >= 0 ? best : cursor;
    arena = std::max(arena, offsets[idx] + size);
    placed.push_back(idx);
  }
  return arena;
}

/// Time-ordered first fit as a sweep: in order of
/// first action, a placed buffer overlaps the next one exactly when it is
/// still live at that buffer's first action, so only the live set (kept
/// sorted by offset; expired buffers leave it) is searched. Same offsets,
/// O(n * live) instead of O(n^2): stage functions of large models have
/// thousands of short-lived values.
int64_t placeByTime(const std::vector<PlannedBuffer> &buffers,
                    const std::vector<int64_t> &sizes,
                    const std::vector<size_t> &persistent,
                    const std::vector<size_t> &order,
                    std::vector<int64_t> &offsets) {
  int64_t arena = 0;
  // (offset, end, lastAction) of the buffers live now, sorted by offset.
  std::multiset<std::tuple<int64_t, int64_t, int>> live;
  for (size_t p : persistent) {
    arena = std::max(arena, offsets[p] + sizes[p]);
    if (sizes[p] > 0)
      live.insert({offsets[p], offsets[p] + sizes[p],
                    std::numeric_limits<int>::max()});
  }
  for (size_t idx : order) {
    const PlannedBuffer &buffer = buffers[idx];
    int64_t size = sizes[idx];
    if (size == 0) {
      offsets[idx] = 0;
      continue;
    }
    for (auto it = live.begin(); it != live.end();)
      it = std::get<2>(*it) < buffer.firstAction ? live.erase(it)
                                                 : std::next(it);
    int64_t cursor = 0, found = -1;
    for (const auto &[begin, end, last] : live) {
      if (begin > cursor && begin - cursor >= size) {
        found = cursor;
        break;
      }
      cursor = std::max(cursor, end);
    }
    offsets[idx] = found >= 0 ? found : cursor;
    arena = std::max(arena, offsets[idx] + size);
    live.insert({offsets[idx], offsets[idx] + size, buffer.lastAction});
  }
  return arena;
}

/// Above this many buffers the largest-first best fit (quadratic) is not
/// tried; the time-ordered first fit alone places them.
constexpr size_t kMaxBuffersForBestFit = 4096;

} // namespace

int64_t mlir::gpipe::allocateArena(std::vector<PlannedBuffer> &buffers,
                                   int64_t alignment, std::string *strategy) {
  if (alignment < 1)
    alignment = 1;
  size_t n = buffers.size();
  std::vector<int64_t> sizes(n);
  for (size_t i = 0; i < n; ++i)
    sizes[i] = alignTo(buffers[i].bytes, alignment);

  std::vector<int64_t> offsets(n, 0);
  std::vector<size_t> persistent, rest;
  int64_t top = 0;
  for (size_t i = 0; i < n; ++i) {
    if (isPersistentBuffer(buffers[i].kind)) {
      persistent.push_back(i);
      offsets[i] = top;
      top += sizes[i];
    } else {
      rest.push_back(i);
    }
  }

  // Largest first, best fit.
  std::vector<size_t> bySize = rest;
  std::stable_sort(bySize.begin(), bySize.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b])
      return sizes[a] > sizes[b];
    return buffers[a].firstAction < buffers[b].firstAction;
  });
  std::vector<int64_t> sizeOffsets = offsets;
  int64_t sizeArena = std::numeric_limits<int64_t>::max();
  if (rest.size() <= kMaxBuffersForBestFit)
    sizeArena =
        placeBestFit(buffers, sizes, persistent, bySize, sizeOffsets);

  // In order of creation, first fit.
  std::vector<size_t> byTime = rest;
  std::stable_sort(byTime.begin(), byTime.end(), [&](size_t a, size_t b) {
    if (buffers[a].firstAction != buffers[b].firstAction)
      return buffers[a].firstAction < buffers[b].firstAction;
    return sizes[a] > sizes[b];
  });
  std::vector<int64_t> timeOffsets = offsets;
  int64_t timeArena =
      placeByTime(buffers, sizes, persistent, byTime, timeOffsets);

  bool useTime = timeArena < sizeArena;
  const std::vector<int64_t> &chosen = useTime ? timeOffsets : sizeOffsets;
  for (size_t i = 0; i < n; ++i)
    buffers[i].offset = chosen[i];
  if (strategy)
    *strategy = useTime ? "time" : "size";
  return useTime ? timeArena : sizeArena;
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

namespace {

std::string checkInput(const Schedule &schedule, const MemoryPlanInput &input) {
  if (static_cast<int>(input.stages.size()) != schedule.numStages)
    return "memory sizes cover " + std::to_string(input.stages.size()) +
           " stages, the schedule has " + std::to_string(schedule.numStages);
  if (input.alignment < 1 || (input.alignment & (input.alignment - 1)) != 0)
    return "alignment " + std::to_string(input.alignment) +
           " is not a power of two";
  for (size_t s = 0; s < input.stages.size(); ++s) {
    const StageMemory &m = input.stages[s];
    std::pair<const char *, int64_t> fields[] = {
        {"parameter bytes", m.paramBytes},
        {"input bytes", m.inputBytes},
        {"extra input bytes", m.extraInputBytes},
        {"output bytes", m.outputBytes},
        {"saved bytes", m.savedBytes},
        {"forward scratch", m.forwardScratch},
        {"backward scratch", m.backwardScratch},
        {"backward-input scratch", m.backwardInputScratch.value_or(0)},
        {"backward-weight scratch", m.backwardWeightScratch.value_or(0)},
    };
    for (const auto &[name, value] : fields)
      if (value < 0)
        return std::string(name) + " of stage " + std::to_string(s) + " is " +
               std::to_string(value) + ", expected >= 0";
  }
  return "";
}

/// Builds the buffers of rank `r` with their action intervals.
std::vector<PlannedBuffer> collectBuffers(const Schedule &schedule,
                                          const MemoryPlanInput &input, int r) {
  const std::vector<Action> &program = schedule.ranks[r];
  int numStages = schedule.numStages;
  int last = std::max(static_cast<int>(program.size()) - 1, 0);
  std::vector<PlannedBuffer> buffers;
  int64_t optimizerFactor = getOptimizerStateFactor(input.optimizer);
  for (int s : schedule.getStagesOfRank(r)) {
    int64_t params = input.stages[s].paramBytes;
    for (auto [kind, bytes] :
         {std::pair{BufferKind::Parameters, params},
          std::pair{BufferKind::Gradients, params},
          std::pair{BufferKind::OptimizerState, optimizerFactor * params}})
      if (bytes > 0)
        buffers.push_back({kind, s, -1, bytes, 0, 0, last, 0});
  }

  using Key = std::tuple<int, int, int>;
  std::map<Key, size_t> open;
  auto create = [&](BufferKind kind, int stage, int mb, int64_t bytes,
                    int action) {
    if (bytes <= 0)
      return;
    open[{static_cast<int>(kind), stage, mb}] = buffers.size();
    buffers.push_back({kind, stage, mb, bytes, 0, action, last, action});
  };
  auto close = [&](BufferKind kind, int stage, int mb, int action) {
    auto it = open.find({static_cast<int>(kind), stage, mb});
    if (it == open.end())
      return;
    buffers[it->second].lastAction = action;
    open.erase(it);
  };
  auto scratch = [&](int stage, int mb, int64_t bytes, int action) {
    if (bytes > 0)
      buffers.push_back(
          {BufferKind::Scratch, stage, mb, bytes, 0, action, action, action});
  };
  auto onRank = [&](int stage) {
    return stage >= 0 && stage < numStages && schedule.stageToRank[stage] == r;
  };
  bool keepSaved = input.remat == RematPolicy::None;

  for (int i = 0; i < static_cast<int>(program.size()); ++i) {
    const Action &a = program[i];
    int s = a.stage, m = a.microbatch;
    if (s < 0 || s >= numStages)
      continue;
    const StageMemory &sm = input.stages[s];
    auto closeKept = [&] {
      close(BufferKind::Input, s, m, i);
      close(BufferKind::ExtraInput, s, m, i);
      close(BufferKind::Saved, s, m, i);
      close(BufferKind::OutputGrad, s, m, i);
    };
    auto produceInputGrad = [&] {
      if (s == 0)
        return;
      if (onRank(s - 1))
        create(BufferKind::OutputGrad, s - 1, m,
               input.stages[s - 1].outputBytes, i);
      else
        create(BufferKind::InputGrad, s, m, sm.inputBytes, i);
    };
    switch (a.kind) {
    case ActionKind::Forward:
      if (s == 0)
        create(BufferKind::Input, s, m, sm.inputBytes, i);
      if (auto it = open.find({static_cast<int>(BufferKind::Input), s, m});
          it != open.end())
        buffers[it->second].keptFromAction = i;
      create(BufferKind::ExtraInput, s, m, sm.extraInputBytes, i);
      if (keepSaved)
        create(BufferKind::Saved, s, m, sm.savedBytes, i);
      if (s + 1 < numStages) {
        if (onRank(s + 1))
          create(BufferKind::Input, s + 1, m, input.stages[s + 1].inputBytes,
                 i);
        else
          create(BufferKind::Output, s, m, sm.outputBytes, i);
      }
      scratch(s, m, sm.forwardScratch, i);
      break;
    case ActionKind::Recompute:
      scratch(s, m, sm.forwardScratch, i);
      break;
    case ActionKind::Backward:
      produceInputGrad();
      scratch(s, m, sm.backwardScratch, i);
      closeKept();
      break;
    case ActionKind::BackwardInput:
      produceInputGrad();
      scratch(s, m, sm.backwardInputScratch.value_or(sm.backwardScratch), i);
      break;
    case ActionKind::BackwardWeight:
      scratch(s, m, sm.backwardWeightScratch.value_or(sm.backwardScratch), i);
      closeKept();
      break;
    case ActionKind::RecvF:
      create(BufferKind::Input, s, m, sm.inputBytes, i);
      break;
    case ActionKind::SendF:
      close(BufferKind::Output, s, m, i);
      break;
    case ActionKind::RecvB:
      create(BufferKind::OutputGrad, s, m, sm.outputBytes, i);
      break;
    case ActionKind::SendB:
      close(BufferKind::InputGrad, s, m, i);
      break;
    case ActionKind::ReduceGrad:
    case ActionKind::Step:
      break;
    }
  }
  // A verified schedule closes everything; anything left lives to the end.
  return buffers;
}

} // namespace

MemoryPlan mlir::gpipe::planMemory(const Schedule &schedule,
                                   const MemoryPlanInput &input) {
  MemoryPlan plan;
  plan.error = checkInput(schedule, input);
  if (!plan.ok())
    return plan;
  VerifyResult verified = verifySchedule(schedule);
  if (!verified.ok()) {
    plan.error =
        "cannot plan an invalid schedule: " + verified.summary +
        (verified.problems.empty() ? std::string()
                                   : "; " + verified.problems.front().message);
    return plan;
  }

  int numStages = schedule.numStages;
  for (int r = 0; r < schedule.getNumRanks(); ++r) {
    RankMemoryPlan rank;
    rank.buffers = collectBuffers(schedule, input, r);
    int n = static_cast<int>(schedule.ranks[r].size());

    // Live bytes per action (difference arrays), exact and aligned, and kept
    // micro-batches per stage.
    std::vector<int64_t> live(n + 2, 0), aligned(n + 2, 0);
    std::vector<std::vector<int>> kept(numStages);
    for (const PlannedBuffer &b : rank.buffers) {
      live[b.firstAction] += b.bytes;
      live[b.lastAction + 1] -= b.bytes;
      int64_t size = alignTo(b.bytes, input.alignment);
      aligned[b.firstAction] += size;
      aligned[b.lastAction + 1] -= size;
      if (b.kind == BufferKind::Input && b.keptFromAction <= b.lastAction) {
        std::vector<int> &count = kept[b.stage];
        if (count.empty())
          count.assign(n + 2, 0);
        ++count[b.keptFromAction];
        --count[b.lastAction + 1];
      }
    }
    int64_t current = 0, currentAligned = 0;
    for (int i = 0; i < n; ++i) {
      current += live[i];
      currentAligned += aligned[i];
      if (current > rank.peakBytes || rank.peakAction < 0) {
        rank.peakBytes = current;
        rank.peakAction = i;
      }
      rank.alignedPeakBytes = std::max(rank.alignedPeakBytes, currentAligned);
    }
    rank.peakKeptMicrobatches.assign(numStages, 0);
    for (int s = 0; s < numStages; ++s) {
      int count = 0;
      for (size_t i = 0; i < kept[s].size(); ++i) {
        count += kept[s][i];
        rank.peakKeptMicrobatches[s] =
            std::max(rank.peakKeptMicrobatches[s], count);
      }
    }
    if (rank.peakAction >= 0)
      for (const PlannedBuffer &b : rank.buffers)
        if (b.isLiveAt(rank.peakAction))
          rank.atPeak.add(b, rank.peakAction);
    rank.arenaBytes =
        allocateArena(rank.buffers, input.alignment, &rank.strategy);
    plan.ranks.push_back(std::move(rank));
  }
  return plan;
}

//===----------------------------------------------------------------------===//
// Description
//===----------------------------------------------------------------------===//

std::string mlir::gpipe::describeMemoryPlan(const Schedule &schedule,
                                            const MemoryPlan &plan) {
  if (!plan.ok())
    return "memory plan: " + plan.error + "\n";
  std::string out;
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    const RankMemoryPlan &rank = plan.ranks[r];
    std::string stages;
    for (int s : schedule.getStagesOfRank(static_cast<int>(r)))
      stages += (stages.empty() ? "" : ", ") + std::to_string(s);
    char overhead[32];
    std::snprintf(overhead, sizeof(overhead), "%.1f%%",
                  100.0 * rank.getArenaOverhead());
    out += "rank " + std::to_string(r) + " (stage" +
           (schedule.getStagesOfRank(static_cast<int>(r)).size() == 1 ? " "
                                                                      : "s ") +
           stages + "): arena " + formatBytes(rank.arenaBytes) + " (" +
           std::to_string(rank.arenaBytes) + " B), peak " +
           formatBytes(rank.peakBytes) + " (" + std::to_string(rank.peakBytes) +
           " B), arena overhead " + overhead + "\n";
    const MemoryBreakdown &b = rank.atPeak;
    std::string at = "-";
    if (rank.peakAction >= 0 &&
        rank.peakAction < static_cast<int>(schedule.ranks[r].size()))
      at = toString(schedule.ranks[r][rank.peakAction]);
    out += "  at peak (action " + std::to_string(rank.peakAction) + ", " + at +
           "): params " + formatBytes(b.parameters) + ", grads " +
           formatBytes(b.gradients) + ", optimizer " +
           formatBytes(b.optimizerState) + ", kept activations " +
           formatBytes(b.keptActivations) + ", scratch " +
           formatBytes(b.scratch) + ", boundary " + formatBytes(b.boundary) +
           "\n";
  }
  return out;
}
