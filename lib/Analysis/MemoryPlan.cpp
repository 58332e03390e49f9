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
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <tuple>

using namespace mlir::gpipe;

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

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
  case BufferKind::Deferred:
    return "deferred";
  case BufferKind::Output:
    return "output";
  case BufferKind::OutputGrad:
    return "output_grad";
  case BufferKind::InputGrad:
    return "input_grad";
  case BufferKind::Scratch:
    return "scratch";
  case BufferKind::Reduce:
    return "reduce";
  case BufferKind::Tied:
    return "tied";
  case BufferKind::Norm:
    return "norm";
  case BufferKind::StagedOutput:
    return "staged_output";
  case BufferKind::StagedInputGrad:
    return "staged_input_grad";
  }
  return "?";
}

bool mlir::gpipe::isPersistentBuffer(BufferKind kind) {
  return kind == BufferKind::Parameters || kind == BufferKind::Gradients ||
         kind == BufferKind::OptimizerState;
}

bool mlir::gpipe::isKeptActivation(BufferKind kind) {
  return kind == BufferKind::Input || kind == BufferKind::ExtraInput ||
         kind == BufferKind::Saved || kind == BufferKind::Deferred;
}

bool mlir::gpipe::isBoundaryBuffer(BufferKind kind) {
  return kind == BufferKind::Output || kind == BufferKind::OutputGrad ||
         kind == BufferKind::InputGrad || kind == BufferKind::Reduce ||
         kind == BufferKind::Tied || kind == BufferKind::Norm ||
         kind == BufferKind::StagedOutput ||
         kind == BufferKind::StagedInputGrad;
}

int64_t mlir::gpipe::getReduceBufferBytes(int64_t paramBytes,
                                          int64_t replicas) {
  if (replicas <= 1 || paramBytes <= 0)
    return 0;
  int64_t floats = (paramBytes + 3) / 4;
  int64_t share = (floats + replicas - 1) / replicas;
  return (replicas - 1) * share * 4;
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
  case BufferKind::Deferred:
    keptActivations += bytes;
    return;
  case BufferKind::Output:
  case BufferKind::OutputGrad:
  case BufferKind::InputGrad:
  case BufferKind::Reduce:
  case BufferKind::Tied:
  case BufferKind::Norm:
  case BufferKind::StagedOutput:
  case BufferKind::StagedInputGrad:
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

/// Places the non-persistent units in `order` on top of the persistent
/// ones (already at their offsets in `offsets`), each into the smallest gap
/// at or above `floor` among the placed units live at the same time
/// (`overlaps(a, b)` on unit indices). Returns the arena size (at least
/// `floor`). Buffers and slots are placed alike.
template <typename Overlaps>
int64_t placeBestFit(const std::vector<int64_t> &sizes,
                     const std::vector<size_t> &persistent,
                     const std::vector<size_t> &order,
                     std::vector<int64_t> &offsets, Overlaps overlaps,
                     int64_t floor = 0) {
  std::vector<size_t> placed = persistent;
  int64_t arena = floor;
  for (size_t p : persistent)
    arena = std::max(arena, offsets[p] + sizes[p]);
  std::vector<std::pair<int64_t, int64_t>> busy; // (offset, end)
  for (size_t idx : order) {
    int64_t size = sizes[idx];
    if (size == 0) {
      offsets[idx] = 0;
      continue;
    }
    busy.clear();
    for (size_t other : placed)
      if (sizes[other] > 0 && overlaps(idx, other))
        busy.push_back({offsets[other], offsets[other] + sizes[other]});
    std::sort(busy.begin(), busy.end());
    int64_t cursor = floor;
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
  // (offset, end, lastAction) of the buffers live now, sorted by offset
  // (they never overlap: each was placed clear of the others live then),
  // and the same entries by last action, so that expiring them costs
  // O(log live) each rather than a scan of the live set per buffer.
  using Live = std::tuple<int64_t, int64_t, int>;
  using LiveSet = std::multiset<Live>;
  LiveSet live;
  using Expiry = std::pair<int, LiveSet::iterator>;
  auto later = [](const Expiry &a, const Expiry &b) {
    return a.first > b.first;
  };
  std::priority_queue<Expiry, std::vector<Expiry>, decltype(later)> expiries(
      later);
  // The free gaps between live buffers (below the top), by start and by
  // length: a buffer longer than every gap goes on top without a scan, and
  // a fitting one scans the gaps, not the live buffers (far fewer: live
  // buffers mostly sit back to back).
  std::map<int64_t, int64_t> gapsByStart;
  std::multiset<int64_t> gapLengths;
  auto endBefore = [&](LiveSet::iterator it) {
    return it == live.begin() ? int64_t(0) : std::get<1>(*std::prev(it));
  };
  auto addGap = [&](int64_t start, int64_t end) {
    if (end > start) {
      gapsByStart.emplace(start, end - start);
      gapLengths.insert(end - start);
    }
  };
  auto removeGap = [&](int64_t start, int64_t end) {
    if (end > start) {
      gapsByStart.erase(start);
      gapLengths.erase(gapLengths.find(end - start));
    }
  };
  auto insertLive = [&](const Live &entry) {
    auto it = live.insert(entry);
    auto next = std::next(it);
    int64_t before = endBefore(it);
    if (next != live.end()) {
      removeGap(before, std::get<0>(*next));
      addGap(std::get<1>(*it), std::get<0>(*next));
    }
    addGap(before, std::get<0>(*it));
    return it;
  };
  auto eraseLive = [&](LiveSet::iterator it) {
    auto next = std::next(it);
    int64_t before = endBefore(it);
    removeGap(before, std::get<0>(*it));
    if (next != live.end()) {
      removeGap(std::get<1>(*it), std::get<0>(*next));
      addGap(before, std::get<0>(*next));
    }
    live.erase(it);
  };
  for (size_t p : persistent) {
    arena = std::max(arena, offsets[p] + sizes[p]);
    if (sizes[p] > 0)
      insertLive(
          {offsets[p], offsets[p] + sizes[p], std::numeric_limits<int>::max()});
  }
  for (size_t idx : order) {
    const PlannedBuffer &buffer = buffers[idx];
    int64_t size = sizes[idx];
    if (size == 0) {
      offsets[idx] = 0;
      continue;
    }
    while (!expiries.empty() && expiries.top().first < buffer.firstAction) {
      eraseLive(expiries.top().second);
      expiries.pop();
    }
    // The lowest gap that holds it, else the top.
    int64_t top = live.empty() ? 0 : std::get<1>(*live.rbegin());
    int64_t found = -1;
    if (!gapLengths.empty() && *gapLengths.rbegin() >= size) {
      for (const auto &[start, length] : gapsByStart)
        if (length >= size) {
          found = start;
          break;
        }
    }
    offsets[idx] = found >= 0 ? found : top;
    arena = std::max(arena, offsets[idx] + size);
    auto it =
        insertLive({offsets[idx], offsets[idx] + size, buffer.lastAction});
    expiries.push({buffer.lastAction, it});
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
    sizeArena = placeBestFit(sizes, persistent, bySize, sizeOffsets,
                             [&](size_t a, size_t b) {
                               return overlapsInTime(buffers[a], buffers[b]);
                             });

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
  if (!input.parameterOffsets.empty() &&
      input.parameterOffsets.size() != input.stages.size())
    return "parameter offsets name " +
           std::to_string(input.parameterOffsets.size()) +
           " stages, the schedule has " + std::to_string(schedule.numStages);
  for (size_t s = 0; s < input.parameterOffsets.size(); ++s)
    if (input.parameterOffsets[s] < 0 ||
        input.parameterOffsets[s] % input.alignment != 0)
      return "the parameter offset of stage " + std::to_string(s) + " is " +
             std::to_string(input.parameterOffsets[s]) +
             ", expected a multiple of the alignment >= 0";
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
        {"deferred bytes", m.deferredBytes},
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
  // Inference trains nothing: parameters only.
  const bool forwardOnly = schedule.forwardOnly;
  int64_t optimizerFactor =
      forwardOnly ? 0 : getOptimizerStateFactor(input.optimizer);
  for (int s : schedule.getStagesOfRank(r)) {
    int64_t params = input.stages[s].paramBytes;
    for (auto [kind, bytes] :
         {std::pair{BufferKind::Parameters, params},
          std::pair{BufferKind::Gradients, forwardOnly ? 0 : params},
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
  // A buffered send's staging copy, from the first send into it to the end.
  auto stage = [&](const Action &send, BufferKind kind, int i) {
    int copies = input.sendBuffering.getCopies(send);
    if (copies <= 0 || send.microbatch < 0 || send.bytes <= 0)
      return;
    int copy = send.microbatch % copies;
    if (open.count({static_cast<int>(kind), send.stage, copy}))
      return;
    open[{static_cast<int>(kind), send.stage, copy}] = buffers.size();
    buffers.push_back({kind, send.stage, copy, send.bytes, 0, i, last, i});
  };

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
      close(BufferKind::Deferred, s, m, i);
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
          it != open.end()) {
        // Inference: the input dies with its forward, never kept.
        buffers[it->second].keptFromAction = forwardOnly ? i + 1 : i;
        if (forwardOnly) {
          buffers[it->second].lastAction = i;
          open.erase(it);
        }
      }
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
      create(BufferKind::Deferred, s, m, sm.deferredBytes, i);
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
      stage(a, BufferKind::StagedOutput, i);
      break;
    case ActionKind::RecvB:
      create(BufferKind::OutputGrad, s, m, sm.outputBytes, i);
      break;
    case ActionKind::SendB:
      close(BufferKind::InputGrad, s, m, i);
      stage(a, BufferKind::StagedInputGrad, i);
      break;
    case ActionKind::ReduceGrad:
      create(BufferKind::Reduce, s, -1,
             getReduceBufferBytes(sm.paramBytes, input.replicas), i);
      break;
    case ActionKind::Step:
      close(BufferKind::Reduce, s, -1, i);
      break;
    case ActionKind::SumTied:
      create(BufferKind::Tied, s, -1, sm.tiedBytes, i);
      close(BufferKind::Tied, s, -1, i);
      break;
    case ActionKind::ClipGrad:
      create(BufferKind::Norm, s, -1, kGradNormBytes, i);
      close(BufferKind::Norm, s, -1, i);
      break;
    }
  }
  // A verified schedule closes everything; anything left lives to the end.
  return buffers;
}

/// The fewest copies for `members` (buffers of one kind and stage, by index
/// into `buffers`) such that buffers sharing copy mb mod c never overlap in
/// time.
int countCopies(const std::vector<PlannedBuffer> &buffers,
                const std::vector<size_t> &members) {
  // The most live at once: a lower bound, and the answer for FIFO lifetimes.
  std::vector<std::pair<int, int>> events;
  for (size_t m : members) {
    events.push_back({buffers[m].firstAction, +1});
    events.push_back({buffers[m].lastAction + 1, -1});
  }
  std::sort(events.begin(), events.end());
  int live = 0, most = 1;
  for (auto [at, delta] : events) {
    live += delta;
    most = std::max(most, live);
  }
  int n = static_cast<int>(members.size());
  for (int c = most; c < n; ++c) {
    bool ok = true;
    std::map<int, std::vector<size_t>> byCopy;
    for (size_t m : members)
      byCopy[buffers[m].microbatch % c].push_back(m);
    for (auto &[copy, list] : byCopy) {
      std::sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        return buffers[a].firstAction < buffers[b].firstAction;
      });
      int end = -1;
      for (size_t m : list) {
        if (buffers[m].firstAction <= end) {
          ok = false;
          break;
        }
        end = std::max(end, buffers[m].lastAction);
      }
      if (!ok)
        break;
    }
    if (ok)
      return c;
  }
  return std::max(n, 1);
}

/// Whether two sorted lists of disjoint action intervals share an action.
bool intersects(const std::vector<std::pair<int, int>> &x,
                const std::vector<std::pair<int, int>> &y) {
  size_t i = 0, j = 0;
  while (i < x.size() && j < y.size()) {
    if (x[i].second < y[j].first)
      ++i;
    else if (y[j].second < x[i].first)
      ++j;
    else
      return true;
  }
  return false;
}

/// Groups `rank`'s buffers into slots, places the slots in the arena and
/// the buffers at their slot's copy, the non-persistent ones at or above
/// `floor`, the parameters of stage s at `parameterOffsets[s]` when given.
/// Returns the arena size.
int64_t allocateSlots(RankMemoryPlan &rank, int64_t alignment, int64_t floor,
                      const std::vector<int64_t> &parameterOffsets) {
  std::vector<PlannedBuffer> &buffers = rank.buffers;
  // (kind, stage) -> members, in order of first appearance.
  std::map<std::pair<int, int>, size_t> slotOf;
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const PlannedBuffer &b = buffers[i];
    int stage = b.kind == BufferKind::Scratch ? -1 : b.stage;
    auto [it, inserted] =
        slotOf.try_emplace({static_cast<int>(b.kind), stage}, members.size());
    if (inserted) {
      PlannedSlot slot;
      slot.kind = b.kind;
      slot.stage = stage;
      slot.firstAction = b.firstAction;
      slot.lastAction = b.lastAction;
      rank.slots.push_back(slot);
      members.emplace_back();
    }
    PlannedSlot &slot = rank.slots[it->second];
    slot.size = std::max(slot.size, b.bytes);
    slot.firstAction = std::min(slot.firstAction, b.firstAction);
    slot.lastAction = std::max(slot.lastAction, b.lastAction);
    members[it->second].push_back(i);
  }
  // Each slot is live over the union of its buffers' intervals (not their
  // hull): a send buffer and a receive buffer that alternate in 1F1B's
  // steady state never hold data at once and may share bytes.
  std::vector<std::vector<std::pair<int, int>>> live(rank.slots.size());
  std::vector<int64_t> spans(rank.slots.size());
  for (size_t k = 0; k < rank.slots.size(); ++k) {
    PlannedSlot &slot = rank.slots[k];
    bool perMicrobatch =
        !isPersistentBuffer(slot.kind) && slot.kind != BufferKind::Scratch;
    slot.count = perMicrobatch ? countCopies(buffers, members[k]) : 1;
    slot.stride = alignTo(slot.size, alignment);
    spans[k] = alignTo(slot.getSpan(), alignment);
    std::vector<std::pair<int, int>> intervals;
    for (size_t m : members[k])
      intervals.push_back({buffers[m].firstAction, buffers[m].lastAction});
    std::sort(intervals.begin(), intervals.end());
    for (auto [first, last] : intervals) {
      if (!live[k].empty() && first <= live[k].back().second + 1)
        live[k].back().second = std::max(live[k].back().second, last);
      else
        live[k].push_back({first, last});
    }
  }
  auto overlap = [&](size_t a, size_t b) {
    return intersects(live[a], live[b]);
  };
  // Persistent slots packed from 0; then the others, best fit among the
  // slots live at the same time, in two orders (largest first, and first
  // live first), keeping the smaller arena.
  std::vector<size_t> persistent, rest;
  int64_t top = 0;
  std::vector<int64_t> base(rank.slots.size(), 0);
  auto pinned = [&](const PlannedSlot &slot) {
    return slot.kind == BufferKind::Parameters && slot.stage >= 0 &&
           size_t(slot.stage) < parameterOffsets.size();
  };
  for (const PlannedSlot &slot : rank.slots)
    if (pinned(slot))
      top = std::max(top, parameterOffsets[size_t(slot.stage)] +
                              alignTo(slot.getSpan(), alignment));
  for (size_t k = 0; k < rank.slots.size(); ++k) {
    if (pinned(rank.slots[k])) {
      base[k] = parameterOffsets[size_t(rank.slots[k].stage)];
      persistent.push_back(k);
    } else if (isPersistentBuffer(rank.slots[k].kind)) {
      base[k] = top;
      top += spans[k];
      persistent.push_back(k);
    } else {
      rest.push_back(k);
    }
  }
  std::vector<size_t> bySize = rest, byTime = rest;
  std::stable_sort(bySize.begin(), bySize.end(),
                   [&](size_t a, size_t b) { return spans[a] > spans[b]; });
  std::stable_sort(byTime.begin(), byTime.end(), [&](size_t a, size_t b) {
    return rank.slots[a].firstAction < rank.slots[b].firstAction;
  });
  std::vector<int64_t> sizeOffsets = base, timeOffsets = base;
  int64_t sizeArena =
      placeBestFit(spans, persistent, bySize, sizeOffsets, overlap, floor);
  int64_t timeArena =
      placeBestFit(spans, persistent, byTime, timeOffsets, overlap, floor);
  bool useTime = timeArena < sizeArena;
  rank.strategy = useTime ? "time" : "size";
  int64_t arena = useTime ? timeArena : sizeArena;

  // Every buffer on its own, but for the persistent slots (where they are)
  // and the scratch region (one address for every stage function), and
  // slots whose buffers do not have one micro-batch each.
  struct Unit {
    size_t slot;
    std::optional<size_t> buffer; // none: the whole slot
    int64_t size;
    std::vector<std::pair<int, int>> live;
  };
  std::vector<Unit> units;
  std::vector<size_t> unitPersistent, unitRest;
  std::vector<int64_t> unitOffsets;
  std::vector<bool> tabled(rank.slots.size(), false);
  for (size_t k = 0; k < rank.slots.size(); ++k) {
    const PlannedSlot &slot = rank.slots[k];
    std::set<int> microbatches;
    bool distinct = true;
    for (size_t m : members[k])
      distinct &= buffers[m].microbatch >= 0 &&
                  microbatches.insert(buffers[m].microbatch).second;
    bool whole = isPersistentBuffer(slot.kind) ||
                 slot.kind == BufferKind::Scratch || !distinct;
    if (whole) {
      (isPersistentBuffer(slot.kind) ? unitPersistent : unitRest)
          .push_back(units.size());
      units.push_back({k, std::nullopt, spans[k], live[k]});
      unitOffsets.push_back(base[k]);
      continue;
    }
    tabled[k] = true;
    for (size_t m : members[k]) {
      unitRest.push_back(units.size());
      units.push_back({k,
                       m,
                       alignTo(buffers[m].bytes, alignment),
                       {{buffers[m].firstAction, buffers[m].lastAction}}});
      unitOffsets.push_back(0);
    }
  }
  std::vector<int64_t> unitSizes;
  for (const Unit &u : units)
    unitSizes.push_back(u.size);
  auto unitOverlap = [&](size_t a, size_t b) {
    return intersects(units[a].live, units[b].live);
  };
  std::vector<size_t> unitsBySize = unitRest, unitsByTime = unitRest;
  std::stable_sort(
      unitsBySize.begin(), unitsBySize.end(),
      [&](size_t a, size_t b) { return unitSizes[a] > unitSizes[b]; });
  std::stable_sort(
      unitsByTime.begin(), unitsByTime.end(), [&](size_t a, size_t b) {
        return units[a].live.front().first < units[b].live.front().first;
      });
  std::vector<int64_t> unitSizeOffsets = unitOffsets,
                       unitTimeOffsets = unitOffsets;
  int64_t unitSizeArena = placeBestFit(unitSizes, unitPersistent, unitsBySize,
                                       unitSizeOffsets, unitOverlap, floor);
  int64_t unitTimeArena = placeBestFit(unitSizes, unitPersistent, unitsByTime,
                                       unitTimeOffsets, unitOverlap, floor);
  if (std::min(unitSizeArena, unitTimeArena) < arena) {
    bool byTime = unitTimeArena < unitSizeArena;
    const std::vector<int64_t> &chosen =
        byTime ? unitTimeOffsets : unitSizeOffsets;
    rank.strategy = "buffers";
    arena = std::min(unitSizeArena, unitTimeArena);
    for (size_t k = 0; k < rank.slots.size(); ++k)
      if (tabled[k]) {
        PlannedSlot &slot = rank.slots[k];
        int last = 0;
        for (size_t m : members[k])
          last = std::max(last, buffers[m].microbatch);
        slot.count = last + 1;
        slot.table.assign(size_t(slot.count), -1);
      }
    for (size_t u = 0; u < units.size(); ++u) {
      PlannedSlot &slot = rank.slots[units[u].slot];
      if (!units[u].buffer) {
        slot.offset = chosen[u];
        for (size_t m : members[units[u].slot]) {
          int copy = slot.count > 1 ? buffers[m].microbatch % slot.count : 0;
          buffers[m].offset = slot.offset + copy * slot.stride;
        }
        continue;
      }
      PlannedBuffer &buffer = buffers[*units[u].buffer];
      buffer.offset = chosen[u];
      slot.table[size_t(buffer.microbatch)] = chosen[u];
    }
    for (size_t k = 0; k < rank.slots.size(); ++k)
      if (tabled[k]) {
        PlannedSlot &slot = rank.slots[k];
        slot.offset = std::numeric_limits<int64_t>::max();
        for (int64_t at : slot.table)
          if (at >= 0)
            slot.offset = std::min(slot.offset, at);
        // The shortest period of the table is enough: micro-batch m uses
        // copy m mod count.
        for (size_t period = 1; period < slot.table.size(); ++period) {
          bool repeats = true;
          for (size_t c = period; c < slot.table.size() && repeats; ++c)
            repeats = slot.table[c] == slot.table[c % period];
          if (repeats) {
            slot.table.resize(period);
            slot.count = static_cast<int>(period);
            break;
          }
        }
        // A table that says what offset + copy x stride says is dropped.
        bool regular = true;
        for (size_t c = 0; c < slot.table.size(); ++c)
          regular &= slot.table[c] ==
                     slot.offset + static_cast<int64_t>(c) * slot.stride;
        if (regular)
          slot.table.clear();
      }
    return arena;
  }
  for (size_t k = 0; k < rank.slots.size(); ++k) {
    PlannedSlot &slot = rank.slots[k];
    slot.offset = (useTime ? timeOffsets : sizeOffsets)[k];
    for (size_t m : members[k]) {
      int copy = slot.count > 1 ? buffers[m].microbatch % slot.count : 0;
      buffers[m].offset = slot.offset + copy * slot.stride;
    }
  }
  return arena;
}

} // namespace

MemoryPlan mlir::gpipe::planMemory(const Schedule &schedule,
                                   const MemoryPlanInput &input) {
  MemoryPlan plan;
  plan.error = checkInput(schedule, input);
  if (!plan.ok())
    return plan;
  VerifyResult verified =
      input.verified ? VerifyResult() : verifySchedule(schedule);
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
    rank.arenaBytes = allocateSlots(
        rank, input.alignment,
        size_t(r) < input.reservedBytes.size()
            ? alignTo(input.reservedBytes[size_t(r)], input.alignment)
            : 0,
        input.parameterOffsets);
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
