//===- ScheduleFamilies.cpp - The schedule families after 1F1B -----------===//
//
// `buildSchedule`: every generated family by name (GPipe and 1F1B from
// ScheduleGPipe.cpp, the zero-bubble ones from ScheduleZeroBubble.cpp), the
// interleaved 1F1B and DualPipeV generators, each citing its source, and
// `finishOrders`, which completes compute orders into schedules.
//
//===----------------------------------------------------------------------===//

#include "ScheduleInternal.h"

#include "gpipe/Analysis/Schedule.h"
#include "gpipe/Analysis/Timeline.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

using namespace mlir::gpipe;

using namespace mlir::gpipe::detail;

//===----------------------------------------------------------------------===//
// Generators of the families after 1F1B
//===----------------------------------------------------------------------===//

namespace mlir::gpipe::detail {

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

} // namespace mlir::gpipe::detail

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
  // The stages' durations (a recompute: the forward's), and the shortest
  // of `candidates` under them once completed with their sends and
  // receives (at each of `aligns`) among those `fits` accepts; none when
  // every one failed.
  auto stageDurations = [&] {
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
    return durations;
  };
  auto shortest = [&](const std::vector<ComputeOrders> &candidates,
                      std::initializer_list<bool> aligns,
                      const std::function<bool(const Timeline &)> &fits)
      -> std::optional<ScheduleOrError> {
    ActionDurations durations = stageDurations();
    std::optional<ScheduleOrError> best;
    double bestMakespan = 0;
    for (const ComputeOrders &candidate : candidates)
      for (bool align : aligns) {
        if (candidate.empty())
          continue;
        ScheduleOrError built =
            finishOrders(M, placement, candidate, traffic, options, align);
        if (!built.ok())
          continue;
        Timeline timeline = simulate(built.schedule, durations);
        if (!timeline.ok() || !fits(timeline) ||
            (best && timeline.makespan >= bestMakespan))
          continue;
        best = std::move(built);
        bestMakespan = timeline.makespan;
      }
    return best;
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
    // Each with its transfers aligned to moments both ends are between
    // actions, and at their producers' ends (which uneven durations can
    // favour).
    std::optional<ScheduleOrError> best =
        shortest(candidates, {true, false}, [&](const Timeline &timeline) {
          for (int s = 0; s < numStages; ++s)
            if (timeline.peakActivations[s] > limits[s])
              return false;
          return true;
        });
    if (!best) {
      result.error = "zb-auto: no order fits the memory limits";
      return result;
    }
    return std::move(*best);
  }
  case ScheduleFamily::VHalf:
  case ScheduleFamily::VMin: {
    // Qi et al., "Pipeline Parallelism with Controllable Memory" (NeurIPS
    // 2024, arXiv:2405.15362): V-shaped schedules whose every rank holds
    // about a half (V-Half) or a third (V-Min) of 1F1B's peak activations,
    // 2K chunk activations (K micro-batches of a rank's two stages) on
    // 1F1B's rank 0. Their reference implementation places F, I and W
    // greedily under such a per-rank memory limit; so does this: the
    // zero-bubble list scheduler with the V-shape placement and a limit of
    // K - 1 (V-Half) or ceil(2K/3) - 1 (V-Min) chunk activations per rank,
    // at least 2 (a micro-batch holds both of rank 0's stages at once).
    // One below the half and the third: an I holds its micro-batch's
    // activations and its new gradients at once. The shortest of its rule
    // variants under the stages' durations (a recompute: the forward's)
    // wins.
    int limit = family == ScheduleFamily::VHalf ? K - 1 : (2 * K + 2) / 3 - 1;
    limit = std::max(limit, 2);
    std::vector<ComputeOrders> candidates;
    for (int rules = 0; rules < 16; ++rules) {
      ListSchedulerInput in = listInput(/*perStage=*/true);
      in.maxActivations.assign(numStages, M);
      in.maxRankActivations.assign(K, limit);
      in.forwardFirst = rules & 1;
      in.waitForInput = rules & 2;
      in.laterStageFirst = rules & 4;
      in.weightFirst = rules & 8;
      candidates.push_back(runZeroBubbleListScheduler(in));
    }
    std::optional<ScheduleOrError> best =
        shortest(candidates, {true}, [](const Timeline &) { return true; });
    if (!best) {
      result.error = std::string(getScheduleFamilyName(family)) +
                     ": internal error, the generator got stuck";
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
