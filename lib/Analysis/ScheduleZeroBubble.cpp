//===- ScheduleZeroBubble.cpp - Zero-bubble schedules --------------------===//
//
// The zero-bubble list scheduler (ZB-H1, ZB-H2, zb-auto: a backward split
// into its input (I) and weight (W) halves, placed by a simulated list
// schedule) and ZB-V, each citing its source.
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

namespace mlir::gpipe::detail {

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
                                         int64_t *makespan) {
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
    // Whether the rank's limit lets it run the F of micro-batch nextF[s] on
    // its stage s (ranks of two stages: ListSchedulerInput). A micro-batch
    // the rank started on its first stage takes a slot on its second stage
    // before it frees any (its Ws come after its Fs), in micro-batch order:
    // a new micro-batch starts only while a slot stays free for the oldest
    // one still to come to the second stage, which therefore always can,
    // finishes and frees its slots; then the next oldest can go on.
    auto rankRoom = [&](int s) {
      if (in.maxRankActivations.empty())
        return true;
      const std::vector<int> &own = stagesOf[r];
      int held = 0;
      for (int t : own)
        held += nextF[t] - nextW[t];
      int reserved = 0;
      if (s == own.front())
        for (size_t i = 1; i < own.size(); ++i)
          reserved += nextF[own[i]] < nextF[own.front()] ? 1 : 0;
      return held + 1 + reserved <= in.maxRankActivations[r];
    };
    auto tryForward = [&] {
      for (int s : stagesOf[r]) {
        int m = nextF[s];
        bool warmupLeft = nextI[s] > 0 ||
                          s >= static_cast<int>(in.warmupForwards.size()) ||
                          nextF[s] < in.warmupForwards[s];
        if (m < M && warmupLeft && nextF[s] - nextW[s] < in.maxActivations[s] &&
            rankRoom(s) && (s == 0 || isDone(endF[s - 1][m], now)))
          consider(ActionKind::Forward, s, m);
      }
    };
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
    auto tryWeight = [&] {
      for (int s : stagesOf[r]) {
        int m = nextW[s];
        if (m < nextI[s] && isDone(endI[s][m], now) &&
            !(in.waitForInput && inputArrivesBefore(now + in.weightTicks[s])))
          consider(ActionKind::BackwardWeight, s, m);
      }
    };
    // With weightFirst, a W that can run goes before any F.
    auto tryForwardOrWeight = [&] {
      if (in.weightFirst)
        tryWeight();
      if (stage < 0)
        tryForward();
    };
    if (in.forwardFirst) {
      tryForwardOrWeight();
      if (stage < 0)
        tryInput();
    } else {
      tryInput();
      if (stage < 0)
        tryForwardOrWeight();
    }
    if (stage < 0)
      tryWeight();
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

} // namespace mlir::gpipe::detail
