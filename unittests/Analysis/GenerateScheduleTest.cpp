//===- GenerateScheduleTest.cpp - Generated schedule families ---*- C++ -*-===//
//
// Unit tests of `buildSchedule` and the schedule families after 1F1B: the
// placements, family names, shape checks, and for every family and every
// (K, V, M) with K in {1,2,3,4,8}, V in {1,2,3}, M in 1..16 either a clear
// rejection or a schedule that verifies and keeps the ordering rules the
// compiler's bitwise guarantee depends on (per stage, forwards and
// gradient-accumulating actions in increasing micro-batch order, one F and
// one B or I + W per (stage, micro-batch), Steps last), with and without
// recompute. Then simulated bubbles and peak activations at K=4 and K=8 with
// uniform costs (F = I = W = 1, B = 2), the per-rank idle times against the
// closed forms of `getClosedFormIdleTime` over shapes and durations, and a
// printed table of bubbles and peaks.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Schedule.h"
#include "gpipe/Analysis/ScheduleVerifier.h"
#include "gpipe/Analysis/Timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace mlir::gpipe;

namespace {

std::string shapeName(ScheduleFamily family, int k, int v, int m) {
  return std::string(getScheduleFamilyName(family)) +
         " K=" + std::to_string(k) + " V=" + std::to_string(v) +
         " M=" + std::to_string(m);
}

ScheduleOrError build(ScheduleFamily family, int k, int v, int m,
                      const ScheduleOptions &options = {}) {
  return buildSchedule(family, k, v, m, BoundaryTraffic::uniform(k * v, 64),
                       options);
}

/// The ordering rules of a generated schedule; "" or the first violation.
std::string checkOrdering(const Schedule &s, bool recompute) {
  int numStages = s.numStages, M = s.numMicrobatches;
  std::vector<int> nextF(numStages, 0), nextAccumulate(numStages, 0);
  // Per (stage, mb): B, I, W, R counts.
  std::vector<std::vector<std::array<int, 4>>> seen(
      numStages, std::vector<std::array<int, 4>>(M, {0, 0, 0, 0}));
  std::vector<int> steps(numStages, 0);
  for (int r = 0; r < s.getNumRanks(); ++r) {
    std::vector<Action> compute;
    for (const Action &a : s.ranks[r])
      if (!isTransferKind(a.kind))
        compute.push_back(a);
    bool inSteps = false;
    for (size_t i = 0; i < compute.size(); ++i) {
      const Action &a = compute[i];
      std::string where = "rank " + std::to_string(r) + " " + toString(a);
      if (a.kind == ActionKind::Step) {
        inSteps = true;
        ++steps[a.stage];
        continue;
      }
      if (inSteps)
        return where + " after a Step";
      switch (a.kind) {
      case ActionKind::Forward:
        if (a.microbatch != nextF[a.stage])
          return where + ": forward out of micro-batch order";
        ++nextF[a.stage];
        break;
      case ActionKind::Backward:
      case ActionKind::BackwardWeight:
        if (a.microbatch != nextAccumulate[a.stage])
          return where + ": gradient accumulation out of micro-batch order";
        ++nextAccumulate[a.stage];
        ++seen[a.stage][a.microbatch][a.kind == ActionKind::Backward ? 0 : 2];
        break;
      case ActionKind::BackwardInput:
        ++seen[a.stage][a.microbatch][1];
        break;
      case ActionKind::Recompute: {
        ++seen[a.stage][a.microbatch][3];
        if (i + 1 >= compute.size() ||
            (compute[i + 1].kind != ActionKind::Backward &&
             compute[i + 1].kind != ActionKind::BackwardInput) ||
            compute[i + 1].stage != a.stage ||
            compute[i + 1].microbatch != a.microbatch)
          return where + ": recompute not right before its B or I";
        break;
      }
      default:
        return where + ": unexpected action";
      }
    }
    if (!inSteps)
      return "rank " + std::to_string(r) + " has no Step";
  }
  for (int st = 0; st < numStages; ++st) {
    if (steps[st] != 1)
      return "stage " + std::to_string(st) + " has " +
             std::to_string(steps[st]) + " Steps";
    if (nextF[st] != M)
      return "stage " + std::to_string(st) + " runs " +
             std::to_string(nextF[st]) + " forwards";
    for (int m = 0; m < M; ++m) {
      auto [b, in, w, rc] = seen[st][m];
      bool full = b == 1 && in == 0 && w == 0;
      bool split = b == 0 && in == 1 && w == 1;
      if (!full && !split)
        return "stage " + std::to_string(st) + " mb " + std::to_string(m) +
               " has B/I/W counts " + std::to_string(b) + "/" +
               std::to_string(in) + "/" + std::to_string(w);
      if (rc != (recompute ? 1 : 0))
        return "stage " + std::to_string(st) + " mb " + std::to_string(m) +
               " has " + std::to_string(rc) + " recomputes";
    }
  }
  return "";
}

/// Whether every backward of `s` is split (I + W) or every one is full (B).
int countKind(const Schedule &s, ActionKind kind) {
  int n = 0;
  for (const auto &program : s.ranks)
    for (const Action &a : program)
      n += a.kind == kind;
  return n;
}

/// The makespan of `s`'s compute actions with buffered transfers (a send
/// never waits; a consumer starts once its producer has ended) and the
/// durations F, I, W (B = I + W, R = F): what the compute orders allow,
/// without the rendezvous waits `simulate` also charges.
double bufferedMakespan(const Schedule &s, double f, double in, double w) {
  int numStages = s.numStages, M = s.numMicrobatches;
  // End of F and of the gradient producer (B or I) per (stage, mb).
  std::vector<std::vector<double>> endF(numStages, std::vector<double>(M, -1));
  std::vector<std::vector<double>> endGrad = endF;
  std::vector<size_t> pc(s.getNumRanks(), 0);
  std::vector<double> clock(s.getNumRanks(), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < s.getNumRanks(); ++r) {
      for (; pc[r] < s.ranks[r].size(); ++pc[r]) {
        const Action &a = s.ranks[r][pc[r]];
        if (!isComputeKind(a.kind))
          continue;
        double ready = clock[r];
        if (a.kind == ActionKind::Forward && a.stage > 0) {
          if (endF[a.stage - 1][a.microbatch] < 0)
            break;
          ready = std::max(ready, endF[a.stage - 1][a.microbatch]);
        }
        bool grad = a.kind == ActionKind::Backward ||
                    a.kind == ActionKind::BackwardInput;
        if (grad && a.stage + 1 < numStages) {
          if (endGrad[a.stage + 1][a.microbatch] < 0)
            break;
          ready = std::max(ready, endGrad[a.stage + 1][a.microbatch]);
        }
        double duration = a.kind == ActionKind::Forward         ? f
                          : a.kind == ActionKind::Backward      ? in + w
                          : a.kind == ActionKind::Recompute     ? f
                          : a.kind == ActionKind::BackwardInput ? in
                                                                : w;
        clock[r] = ready + duration;
        if (a.kind == ActionKind::Forward)
          endF[a.stage][a.microbatch] = clock[r];
        if (grad)
          endGrad[a.stage][a.microbatch] = clock[r];
        progress = true;
      }
    }
  }
  double makespan = 0;
  for (double c : clock)
    makespan = std::max(makespan, c);
  return makespan;
}

/// The most chunk activations `rank` holds at once (forwards whose B, or W
/// of a split backward, has not run), over all its stages.
int getRankPeak(const Schedule &s, int rank) {
  int held = 0, peak = 0;
  for (const Action &a : s.ranks[rank]) {
    if (a.kind == ActionKind::Forward)
      peak = std::max(peak, ++held);
    else if (a.kind == ActionKind::Backward ||
             a.kind == ActionKind::BackwardWeight)
      --held;
  }
  return peak;
}

Timeline simulateUniform(const Schedule &s) {
  // F = 1, B = 2, so I = W = 1; free transfers.
  return simulate(s, ActionDurations::uniform(s.numStages, 1, 2));
}

TEST(GenerateScheduleTest, Placements) {
  EXPECT_EQ(getInterleavedPlacement(4, 2),
            (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(getInterleavedPlacement(3, 1), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(getVShapePlacement(4), (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(getVShapePlacement(1), (std::vector<int>{0, 0}));
  EXPECT_TRUE(getInterleavedPlacement(0, 2).empty());
  EXPECT_TRUE(getInterleavedPlacement(2, 0).empty());
  EXPECT_TRUE(getVShapePlacement(0).empty());
  // The generated schedules use them.
  auto zbv = build(ScheduleFamily::ZBV, 4, 2, 8);
  auto dual = build(ScheduleFamily::DualPipeV, 4, 2, 8);
  auto inter = build(ScheduleFamily::Interleaved1F1B, 4, 2, 8);
  auto inter3 = build(ScheduleFamily::Interleaved1F1B, 4, 3, 8);
  auto autoV = build(ScheduleFamily::ZBAuto, 4, 2, 8);
  ASSERT_TRUE(zbv.ok() && dual.ok() && inter.ok() && inter3.ok() && autoV.ok());
  EXPECT_EQ(zbv.schedule.stageToRank, getVShapePlacement(4));
  EXPECT_EQ(dual.schedule.stageToRank, getVShapePlacement(4));
  EXPECT_EQ(autoV.schedule.stageToRank, getVShapePlacement(4));
  EXPECT_EQ(inter.schedule.stageToRank, getInterleavedPlacement(4, 2));
  EXPECT_EQ(inter3.schedule.stageToRank, getInterleavedPlacement(4, 3));
  EXPECT_EQ(getSchedulePlacement(ScheduleFamily::ZBAuto, 3, 1),
            (std::vector<int>{0, 1, 2}));
}

TEST(GenerateScheduleTest, Names) {
  std::vector<std::string> names;
  for (ScheduleFamily family : getScheduleFamilies()) {
    names.push_back(getScheduleFamilyName(family));
    ScheduleFamily parsed;
    ASSERT_TRUE(parseScheduleFamily(names.back(), parsed));
    EXPECT_EQ(parsed, family);
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2",
                       "zbv", "dualpipev", "zb-auto", "v-half", "v-min"}));
  ScheduleFamily unused;
  EXPECT_FALSE(parseScheduleFamily("ZBV", unused));
  EXPECT_FALSE(parseScheduleFamily("", unused));
  EXPECT_FALSE(parseScheduleFamily("interleaved", unused));
}

TEST(GenerateScheduleTest, ShapeMessages) {
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::Interleaved1F1B, 4, 1, 8),
            "interleaved-1f1b needs at least 2 virtual stages per rank, got 1 "
            "(use 1f1b for 1)");
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::ZBV, 4, 3, 8),
            "zbv needs exactly 2 virtual stages per rank (V-shape placement), "
            "got 3");
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::DualPipeV, 4, 2, 6),
            "dualpipev needs at least 2K-1 = 7 micro-batches for 4 ranks (its "
            "steady phase runs M-2K+r+1 times on rank r), got 6");
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::DualPipeV, 4, 2, 7), "");
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::ZBH1, 4, 2, 8),
            "zb-h1 needs exactly 1 virtual stage per rank (one stage per "
            "rank), got 2");
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::ZBAuto, 4, 3, 8),
            "zb-auto needs 1 or 2 virtual stages per rank (2: V-shape "
            "placement), got 3");
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::GPipe, 0, 1, 8),
            "gpipe needs at least 1 rank, got 0");
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::OneFOneB, 2, 1, 0),
            "1f1b needs at least 1 micro-batch, got 0");
  EXPECT_EQ(checkScheduleShape(ScheduleFamily::ZBH2, 2, 0, 4),
            "zb-h2 needs at least 1 virtual stage per rank, got 0");
  ScheduleOrError rejected = build(ScheduleFamily::ZBV, 4, 1, 8);
  EXPECT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error, checkScheduleShape(ScheduleFamily::ZBV, 4, 1, 8));
  EXPECT_TRUE(rejected.schedule.ranks.empty());
  // Bad durations come back from insertCommunication.
  ScheduleOptions bad;
  bad.weightTicks = -1;
  ScheduleOrError badTicks = build(ScheduleFamily::ZBH1, 2, 1, 4, bad);
  EXPECT_FALSE(badTicks.ok());
  EXPECT_NE(badTicks.error.find("weight -1"), std::string::npos)
      << badTicks.error;
}

TEST(GenerateScheduleTest, EveryShapeVerifiesAndKeepsOrder) {
  int accepted = 0;
  for (ScheduleFamily family : getScheduleFamilies()) {
    for (int k : {1, 2, 3, 4, 8}) {
      for (int v : {1, 2, 3}) {
        for (int m = 1; m <= 16; ++m) {
          std::string name = shapeName(family, k, v, m);
          std::string shape = checkScheduleShape(family, k, v, m);
          for (bool recompute : {false, true}) {
            ScheduleOptions options;
            options.recompute = recompute;
            ScheduleOrError built = build(family, k, v, m, options);
            if (!shape.empty()) {
              EXPECT_EQ(built.error, shape) << name;
              continue;
            }
            ASSERT_TRUE(built.ok()) << name << ": " << built.error;
            const Schedule &s = built.schedule;
            EXPECT_EQ(s.numStages, k * v) << name;
            EXPECT_EQ(s.getNumRanks(), k) << name;
            EXPECT_EQ(s.stageToRank, getSchedulePlacement(family, k, v))
                << name;
            VerifyResult verified = verifySchedule(s);
            ASSERT_TRUE(verified.ok())
                << name << " recompute=" << recompute << "\n"
                << verified.getMessage() << "\n"
                << toCSV(s);
            std::string order = checkOrdering(s, recompute);
            EXPECT_EQ(order, "") << name << " recompute=" << recompute << "\n"
                                 << toCSV(s);
            // Which backward each family uses.
            int full = countKind(s, ActionKind::Backward);
            int split = countKind(s, ActionKind::BackwardInput);
            switch (family) {
            case ScheduleFamily::GPipe:
            case ScheduleFamily::OneFOneB:
            case ScheduleFamily::Interleaved1F1B:
              EXPECT_EQ(split, 0) << name;
              break;
            case ScheduleFamily::ZBH1:
            case ScheduleFamily::ZBH2:
            case ScheduleFamily::ZBV:
            case ScheduleFamily::VHalf:
            case ScheduleFamily::VMin:
            case ScheduleFamily::ZBAuto:
              EXPECT_EQ(full, 0) << name;
              break;
            case ScheduleFamily::DualPipeV:
              break;
            }
            accepted += !recompute;
          }
        }
      }
    }
  }
  EXPECT_GT(accepted, 0);
}

TEST(GenerateScheduleTest, GPipeAnd1F1BMatchTheExistingBuilders) {
  for (int k : {1, 2, 4, 8}) {
    for (int m = 1; m <= 16; ++m) {
      for (bool recompute : {false, true}) {
        ScheduleOptions options;
        options.recompute = recompute;
        BoundaryTraffic traffic = BoundaryTraffic::uniform(k, 64);
        ScheduleOrError g =
            buildSchedule(ScheduleFamily::GPipe, k, 1, m, traffic, options);
        ScheduleOrError o =
            buildSchedule(ScheduleFamily::OneFOneB, k, 1, m, traffic, options);
        ASSERT_TRUE(g.ok() && o.ok());
        EXPECT_EQ(g.schedule, buildGPipeSchedule(k, m, traffic, options));
        EXPECT_EQ(o.schedule, build1F1BSchedule(k, m, traffic, options));
      }
    }
  }
}

TEST(GenerateScheduleTest, SplitDurationsDefaultToHalfTheBackward) {
  ScheduleOptions options;
  EXPECT_EQ(options.getInputTicks(0), 1);
  EXPECT_EQ(options.getWeightTicks(3), 1);
  EXPECT_EQ(options.getBackwardTicks(0), 2);
  options.backwardTicks = 6;
  EXPECT_EQ(options.getInputTicks(0), 3);
  options.inputTicks = 4;
  options.weightTicks = 2;
  EXPECT_EQ(options.getInputTicks(0), 4);
  EXPECT_EQ(options.getWeightTicks(0), 2);
  options.stageWeightTicks = {5, 7};
  EXPECT_EQ(options.getWeightTicks(1), 7);
  EXPECT_EQ(options.getWeightTicks(2), 2);
  EXPECT_EQ(options.getBackwardTicks(1), 4 + 7);
  EXPECT_EQ(options.getMaxActivations(1, 4), 3);
  options.maxActivations = {2, 0};
  EXPECT_EQ(options.getMaxActivations(0, 4), 2);
  EXPECT_EQ(options.getMaxActivations(1, 4), 3);
}

TEST(GenerateScheduleTest, Bubbles) {
  // K = 4, M = 8, uniform F = I = W = 1 (B = 2), free transfers.
  auto bubble = [](ScheduleFamily family, int v) {
    ScheduleOrError built = build(family, 4, v, 8);
    EXPECT_TRUE(built.ok()) << built.error;
    Timeline t = simulateUniform(built.schedule);
    EXPECT_TRUE(t.ok()) << t.error;
    return t;
  };
  Timeline ofob = bubble(ScheduleFamily::OneFOneB, 1);
  Timeline h1 = bubble(ScheduleFamily::ZBH1, 1);
  Timeline h2 = bubble(ScheduleFamily::ZBH2, 1);
  Timeline inter = bubble(ScheduleFamily::Interleaved1F1B, 2);
  Timeline zbv = bubble(ScheduleFamily::ZBV, 2);
  // 1F1B: (K-1)(F+B) idle per rank: 9 of 33.
  EXPECT_DOUBLE_EQ(ofob.makespan, 33);
  EXPECT_NEAR(ofob.bubbleFraction, 9.0 / 33, 1e-12);
  // No one-stage-per-rank schedule beats makespan (K-1)F + M(F+I+W) = 27:
  // the last rank starts at (K-1)F at the earliest and has M(F+I+W) of
  // work. So the smallest possible bubble is 3/27 = 0.111 = 0.407 x 1F1B's.
  // ZB-H2 reaches it.
  EXPECT_DOUBLE_EQ(h2.makespan, 27);
  EXPECT_LE(h2.bubbleFraction, 0.41 * ofob.bubbleFraction);
  // ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024,
  // section 2.1): 1F1B's warm-up, and every rank may hold K micro-batches
  // until W (1F1B's rank-0 peak), so the later ranks defer Ws into 1F1B's
  // cool-down bubble. The paper's (K-1)(F+I-W) = 3 idle per rank: makespan
  // 27 (with F = I = W the same as ZB-H2's), under rendezvous and with
  // buffered transfers alike.
  EXPECT_DOUBLE_EQ(h1.makespan, 27);
  EXPECT_DOUBLE_EQ(
      bufferedMakespan(build(ScheduleFamily::ZBH1, 4, 1, 8).schedule, 1, 1, 1),
      27);
  EXPECT_NEAR(h1.bubbleFraction, 3.0 / 27, 1e-12);
  // The bubble time ratio, idle time per rank of ZB-H1 over 1F1B's: the
  // paper's (K-1)(F+I-W) / ((K-1)(F+I+W)) = 1/3. The blocking-rendezvous
  // simulation adds no wait here: every transfer is placed where both ends
  // are between actions.
  double work = 8 * 3;
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(h1.busy[r], work);
    EXPECT_DOUBLE_EQ(ofob.busy[r], work);
  }
  EXPECT_NEAR((h1.makespan - work) / (ofob.makespan - work), 1.0 / 3, 1e-12);
  // K = 8, M = 16: 7 idle per rank against 1F1B's 21, makespan 55 (69);
  // every rank holds 8 micro-batches at its peak, 1F1B's rank 0.
  Timeline h1At8 =
      simulateUniform(build(ScheduleFamily::ZBH1, 8, 1, 16).schedule);
  ASSERT_TRUE(h1At8.ok());
  EXPECT_DOUBLE_EQ(h1At8.makespan, 55);
  EXPECT_EQ(h1At8.peakActivations, std::vector<int>(8, 8));
  // Interleaved, V = 2: per rank (K-1)(F+B) of one chunk idle, the same
  // time as 1F1B's but against twice the work (each rank runs 2 stages of F
  // = 1, B = 2): 9 of 57, 0.58 x 1F1B's fraction; the idle time per unit of
  // work is 1/V of 1F1B's (Megatron's (K-1)/(V M)), which is its bound.
  EXPECT_DOUBLE_EQ(inter.makespan, 57);
  EXPECT_LE(inter.bubbleFraction, 0.58 * ofob.bubbleFraction);
  double idlePerWork1F1B = ofob.makespan / 24 - 1;
  double idlePerWorkInter = inter.makespan / 48 - 1;
  EXPECT_NEAR(idlePerWorkInter, idlePerWork1F1B / 2, 1e-12);
  // ZB-V: the V-shape's lower bound (K-1)F + 2M(F+I+W) = 51.
  EXPECT_DOUBLE_EQ(zbv.makespan, 51);
  // DualPipeV's compute orders reach it too with buffered transfers; under
  // rendezvous some of its sends wait for a receiver inside a backward.
  Schedule dual = build(ScheduleFamily::DualPipeV, 4, 2, 8).schedule;
  EXPECT_DOUBLE_EQ(bufferedMakespan(dual, 1, 1, 1), 51);
  EXPECT_LE(simulateUniform(dual).makespan, 54);
  // Interleaved at K = 8, M = 16: Megatron's (K-1)(F+B) idle per rank with
  // buffered transfers, 21 + 96; rendezvous costs some more.
  Schedule inter8 = build(ScheduleFamily::Interleaved1F1B, 8, 2, 16).schedule;
  EXPECT_DOUBLE_EQ(bufferedMakespan(inter8, 1, 1, 1), 117);
  Timeline ofob8 =
      simulateUniform(build(ScheduleFamily::OneFOneB, 8, 1, 16).schedule);
  EXPECT_LT(simulateUniform(inter8).bubbleFraction, ofob8.bubbleFraction);
}

TEST(GenerateScheduleTest, H1ReachesThePaperWhenWeightGradientsAreCheap) {
  // F = 2, I = 2, W = 1, K = 4, M = 8: the paper's (K-1)(F+I-W) = 9 idle
  // per rank, makespan 40 + 9 = 49 (1F1B: 40 + (K-1)(F+I+W) = 55). ZB-H2
  // gets no further: the bound (K-1)F + M(F+I+W) = 46 would need the last
  // rank to defer 7 Ws, more than H2's K activations there.
  ScheduleOptions options;
  options.forwardTicks = 2;
  options.inputTicks = 2;
  options.weightTicks = 1;
  ActionDurations durations = ActionDurations::uniform(4, 2, 3);
  for (int s = 0; s < 4; ++s) {
    durations.set(ActionKind::BackwardInput, s, 2);
    durations.set(ActionKind::BackwardWeight, s, 1);
  }
  Schedule h1 = build(ScheduleFamily::ZBH1, 4, 1, 8, options).schedule;
  Schedule h2 = build(ScheduleFamily::ZBH2, 4, 1, 8, options).schedule;
  Schedule ofob = build(ScheduleFamily::OneFOneB, 4, 1, 8, options).schedule;
  Timeline t1 = simulate(h1, durations);
  Timeline t2 = simulate(h2, durations);
  Timeline to = simulate(ofob, durations);
  ASSERT_TRUE(t1.ok() && t2.ok() && to.ok());
  EXPECT_DOUBLE_EQ(t1.makespan, 49);
  EXPECT_DOUBLE_EQ(bufferedMakespan(h1, 2, 2, 1), 49);
  EXPECT_DOUBLE_EQ(t2.makespan, 49);
  EXPECT_DOUBLE_EQ(to.makespan, 55);
  // Bubble time ratio (K-1)(F+I-W) / ((K-1)(F+I+W)) = 3/5.
  EXPECT_NEAR((t1.makespan - 40) / (to.makespan - 40), 3.0 / 5, 1e-12);
  EXPECT_EQ(getClosedFormIdleTime(ScheduleFamily::ZBH1, 4, 1, 8, 2, 2, 1),
            std::optional<double>(9));
}

TEST(GenerateScheduleTest, ClosedFormIdleTime) {
  // Per-rank idle time, makespan minus a rank's work V M (F+I+W), against
  // getClosedFormIdleTime wherever it has a value: simulated under
  // rendezvous, and with buffered transfers (what the compute orders allow)
  // for interleaved 1F1B, whose rendezvous may add waits (K=8 M=16 above).
  const double costs[][3] = {{1, 1, 1}, {2, 2, 1}, {1, 2, 1}, {2, 1, 1},
                             {3, 3, 1}, {2, 2, 2}, {3, 2, 2}, {5, 7, 3}};
  int compared = 0;
  for (ScheduleFamily family : getScheduleFamilies()) {
    for (int k : {1, 2, 3, 4, 8}) {
      for (int v : {1, 2, 3}) {
        for (int m = 1; m <= 16; ++m) {
          if (!checkScheduleShape(family, k, v, m).empty()) {
            EXPECT_FALSE(getClosedFormIdleTime(family, k, v, m, 1, 1, 1));
            continue;
          }
          for (const auto &c : costs) {
            double f = c[0], in = c[1], w = c[2];
            std::optional<double> idle =
                getClosedFormIdleTime(family, k, v, m, f, in, w);
            if (!idle)
              continue;
            std::string name =
                shapeName(family, k, v, m) + " F=" + std::to_string(c[0]) +
                " I=" + std::to_string(c[1]) + " W=" + std::to_string(c[2]);
            ScheduleOptions options;
            options.forwardTicks = c[0];
            options.inputTicks = c[1];
            options.weightTicks = c[2];
            options.backwardTicks = c[1] + c[2];
            ScheduleOrError built = build(family, k, v, m, options);
            ASSERT_TRUE(built.ok()) << name << ": " << built.error;
            double work = v * m * (f + in + w);
            double buffered = bufferedMakespan(built.schedule, f, in, w);
            EXPECT_DOUBLE_EQ(buffered - work, *idle) << name;
            if (family != ScheduleFamily::Interleaved1F1B) {
              ActionDurations durations =
                  ActionDurations::uniform(k * v, f, in + w);
              for (int s = 0; s < k * v; ++s) {
                durations.set(ActionKind::BackwardInput, s, in);
                durations.set(ActionKind::BackwardWeight, s, w);
              }
              Timeline t = simulate(built.schedule, durations);
              ASSERT_TRUE(t.ok()) << name << ": " << t.error;
              EXPECT_DOUBLE_EQ(t.makespan - work, *idle) << name;
            }
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 1000);
  // The closed forms at K = 4, M = 8, F = I = W = 1.
  auto idle = [](ScheduleFamily family, int v) {
    return getClosedFormIdleTime(family, 4, v, 8, 1, 1, 1);
  };
  EXPECT_EQ(idle(ScheduleFamily::GPipe, 1), std::optional<double>(9));
  EXPECT_EQ(idle(ScheduleFamily::OneFOneB, 1), std::optional<double>(9));
  EXPECT_EQ(idle(ScheduleFamily::Interleaved1F1B, 2), std::optional<double>(9));
  EXPECT_EQ(idle(ScheduleFamily::ZBH1, 1), std::optional<double>(3));
  EXPECT_EQ(idle(ScheduleFamily::ZBH2, 1), std::optional<double>(3));
  EXPECT_EQ(idle(ScheduleFamily::ZBV, 2), std::optional<double>(3));
  EXPECT_FALSE(idle(ScheduleFamily::DualPipeV, 2));
  EXPECT_FALSE(idle(ScheduleFamily::ZBAuto, 1));
  // 1F1B's bubble fraction is GPipe's (K-1)/(M+K-1).
  EXPECT_NEAR(9.0 / (9 + 24), getIdealBubbleFraction(4, 8), 1e-12);
  // ZB-H1's bubble time is a third of 1F1B's with F = I = W.
  EXPECT_NEAR(*idle(ScheduleFamily::ZBH1, 1) /
                  *idle(ScheduleFamily::OneFOneB, 1),
              1.0 / 3, 1e-12);
  // Where the closed forms do not apply: ZB-H1 with W > min(F, I), F > 2I
  // or M < K, ZB-H2 and ZB-V with unequal durations, interleaved 1F1B with M
  // not a multiple of K, and durations that are not positive.
  EXPECT_FALSE(getClosedFormIdleTime(ScheduleFamily::ZBH1, 4, 1, 8, 1, 1, 2));
  EXPECT_FALSE(getClosedFormIdleTime(ScheduleFamily::ZBH1, 4, 1, 3, 1, 1, 1));
  EXPECT_FALSE(getClosedFormIdleTime(ScheduleFamily::ZBH1, 4, 1, 8, 3, 1, 1));
  EXPECT_FALSE(getClosedFormIdleTime(ScheduleFamily::ZBH2, 4, 1, 8, 2, 2, 1));
  EXPECT_FALSE(getClosedFormIdleTime(ScheduleFamily::ZBV, 4, 2, 8, 2, 2, 1));
  EXPECT_FALSE(getClosedFormIdleTime(ScheduleFamily::ZBV, 4, 2, 6, 1, 1, 1));
  EXPECT_FALSE(
      getClosedFormIdleTime(ScheduleFamily::Interleaved1F1B, 4, 2, 6, 1, 1, 1));
  EXPECT_FALSE(
      getClosedFormIdleTime(ScheduleFamily::OneFOneB, 4, 1, 8, 0, 1, 1));
}

TEST(GenerateScheduleTest, PeakActivations) {
  for (int k : {2, 4, 8}) {
    for (int m : {1, 2, 3, 8, 16}) {
      Timeline ofob =
          simulateUniform(build(ScheduleFamily::OneFOneB, k, 1, m).schedule);
      Timeline h1 =
          simulateUniform(build(ScheduleFamily::ZBH1, k, 1, m).schedule);
      Timeline h2 =
          simulateUniform(build(ScheduleFamily::ZBH2, k, 1, m).schedule);
      ASSERT_TRUE(ofob.ok() && h1.ok() && h2.ok());
      // ZB-H1: at most K on every rank, 1F1B's peak over all ranks (its
      // rank 0: min(K, M)); with M >= K every rank reaches it.
      int h1Max = *std::max_element(h1.peakActivations.begin(),
                                    h1.peakActivations.end());
      int ofobMax = *std::max_element(ofob.peakActivations.begin(),
                                      ofob.peakActivations.end());
      EXPECT_EQ(h1Max, ofobMax) << "K=" << k << " M=" << m;
      EXPECT_EQ(ofobMax, std::min(k, m)) << "K=" << k << " M=" << m;
      for (int r = 0; r < k; ++r) {
        EXPECT_LE(h1.peakActivations[r], k) << "K=" << k << " M=" << m;
        if (m >= k) {
          EXPECT_EQ(h1.peakActivations[r], k) << "K=" << k << " M=" << m;
        }
      }
      for (int r = 0; r < k; ++r)
        EXPECT_LE(h2.peakActivations[r], 2 * k - 1 - r);
    }
  }
  // Megatron's interleaved schedule: rank 0 runs 2(K-1) + (V-1)K warm-up
  // forwards and one more before its first backward, VK + K - 1 chunk
  // activations at its peak, i.e. K + (K-1)/V micro-batches of its whole
  // model part: 1F1B's K times (1 + (K-1)/(K V)), the factor Korthikanti et
  // al. ("Reducing Activation Recomputation in Large Transformer Models",
  // 2022) give for the interleaved schedule. K=4, V=2, M=8:
  // 11 chunk activations on rank 0 at once = 5.5 micro-batches vs 1F1B's
  // 4. (Per stage, apart: 8 on stage 0, 4 on stage 4.)
  Timeline inter =
      simulateUniform(build(ScheduleFamily::Interleaved1F1B, 4, 2, 8).schedule);
  ASSERT_TRUE(inter.ok());
  EXPECT_EQ(inter.peakActivations, (std::vector<int>{8, 8, 7, 5, 4, 4, 3, 1}));
  EXPECT_EQ(
      getRankPeak(build(ScheduleFamily::Interleaved1F1B, 4, 2, 8).schedule, 0),
      11);
  for (int k : {2, 4, 8}) {
    for (int v : {2, 3}) {
      Schedule s = build(ScheduleFamily::Interleaved1F1B, k, v, 2 * k).schedule;
      EXPECT_EQ(getRankPeak(s, 0), v * k + k - 1) << "K=" << k << " V=" << v;
      // 1F1B's rank 0: K.
      EXPECT_EQ(
          getRankPeak(build(ScheduleFamily::OneFOneB, k, 1, 2 * k).schedule, 0),
          k);
    }
  }
  // ZB-V holds 2K chunk activations on every rank (K micro-batches of a
  // rank's whole model part, 1F1B's rank-0 peak; Qi et al., section 6);
  // DualPipeV one more.
  for (int k : {2, 4, 8}) {
    Schedule zbv = build(ScheduleFamily::ZBV, k, 2, 2 * k).schedule;
    Schedule dual = build(ScheduleFamily::DualPipeV, k, 2, 2 * k).schedule;
    for (int r = 0; r < k; ++r) {
      EXPECT_EQ(getRankPeak(zbv, r), 2 * k) << "K=" << k << " rank " << r;
      EXPECT_EQ(getRankPeak(dual, r), 2 * k + 1) << "K=" << k << " rank " << r;
    }
  }
  // ZB-V and DualPipeV: stage s holds at most 2K - s (rank 0: 2K chunk
  // activations in all, 1F1B's K micro-batches of its whole model part).
  for (ScheduleFamily family :
       {ScheduleFamily::ZBV, ScheduleFamily::DualPipeV}) {
    Timeline t = simulateUniform(build(family, 4, 2, 8).schedule);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t.peakActivations, (std::vector<int>{8, 7, 6, 5, 4, 3, 2, 1}));
  }
}

TEST(GenerateScheduleTest, ZBAutoFollowsCostsAndMemoryLimits) {
  // Per-stage costs: a slow last stage (the loss) and a fast first one.
  for (int v : {1, 2}) {
    for (int m : {1, 3, 8, 13}) {
      int k = 4, numStages = k * v;
      ScheduleOptions options;
      for (int s = 0; s < numStages; ++s) {
        options.stageForwardTicks.push_back(s + 1 == numStages ? 3 : 1 + s % 2);
        options.stageInputTicks.push_back(s + 1 == numStages ? 4 : 2);
        options.stageWeightTicks.push_back(1 + s % 3);
        options.maxActivations.push_back(1 + s % 3);
      }
      for (bool recompute : {false, true}) {
        options.recompute = recompute;
        ScheduleOrError built = build(ScheduleFamily::ZBAuto, k, v, m, options);
        ASSERT_TRUE(built.ok()) << built.error;
        ASSERT_TRUE(verifySchedule(built.schedule).ok());
        EXPECT_EQ(checkOrdering(built.schedule, recompute), "");
        Timeline t = simulateUniform(built.schedule);
        ASSERT_TRUE(t.ok());
        for (int s = 0; s < numStages; ++s)
          EXPECT_LE(t.peakActivations[s], 1 + s % 3) << "stage " << s;
      }
    }
  }
  // The default limit is ZB-H1's, 1F1B's peak on every rank (K): zb-auto
  // reaches ZB-H1's makespan (27) with at most K on each rank.
  ScheduleOrError byDefault = build(ScheduleFamily::ZBAuto, 4, 1, 8);
  ASSERT_TRUE(byDefault.ok());
  Timeline defaultTimeline = simulateUniform(byDefault.schedule);
  ASSERT_TRUE(defaultTimeline.ok());
  EXPECT_DOUBLE_EQ(defaultTimeline.makespan, 27);
  for (int peak : defaultTimeline.peakActivations)
    EXPECT_LE(peak, 4);
  // 1F1B's per-rank K - r is tighter: the last rank holds one micro-batch
  // and must run F, I, W in turn, its last I ends at (K-1)F + (M-1)(F+I+W)
  // + F+I = 26 at the earliest, rank 0's at 29, and its W at 30; zb-auto
  // reaches that bound.
  ScheduleOptions perRank;
  perRank.maxActivations = {4, 3, 2, 1};
  ScheduleOrError tight = build(ScheduleFamily::ZBAuto, 4, 1, 8, perRank);
  ASSERT_TRUE(tight.ok());
  Timeline tightTimeline = simulateUniform(tight.schedule);
  ASSERT_TRUE(tightTimeline.ok());
  EXPECT_DOUBLE_EQ(tightTimeline.makespan, 30);
  EXPECT_EQ(tightTimeline.peakActivations, (std::vector<int>{4, 3, 2, 1}));
  // More memory on the last stages lets it defer Ws like ZB-H2.
  ScheduleOptions roomy;
  roomy.maxActivations = {7, 6, 5, 4};
  ScheduleOrError deferred = build(ScheduleFamily::ZBAuto, 4, 1, 8, roomy);
  ASSERT_TRUE(deferred.ok());
  EXPECT_DOUBLE_EQ(simulateUniform(deferred.schedule).makespan, 27);
}

TEST(GenerateScheduleTest, Table) {
  for (auto [k, m] : {std::pair{4, 8}, std::pair{8, 16}}) {
    std::printf("K=%d M=%d, F=I=W=1 (B=2), free transfers\n", k, m);
    std::printf("%-18s %2s %8s %9s %8s %9s  %s\n", "family", "V", "makespan",
                "bubble", "buffered", "bubble", "peak per rank  | per stage");
    for (ScheduleFamily family : getScheduleFamilies()) {
      for (int v : {1, 2}) {
        if (!checkScheduleShape(family, k, v, m).empty())
          continue;
        ScheduleOrError built = build(family, k, v, m);
        ASSERT_TRUE(built.ok()) << built.error;
        Timeline t = simulateUniform(built.schedule);
        ASSERT_TRUE(t.ok()) << t.error;
        std::string peaks;
        for (int r = 0; r < k; ++r)
          peaks += (peaks.empty() ? "" : " ") +
                   std::to_string(getRankPeak(built.schedule, r));
        peaks += "  |";
        for (int p : t.peakActivations)
          peaks += " " + std::to_string(p);
        double buffered = bufferedMakespan(built.schedule, 1, 1, 1);
        double work = 3.0 * m * v;
        std::printf("%-18s %2d %8g %9.4f %8g %9.4f  %s\n",
                    getScheduleFamilyName(family), v, t.makespan,
                    t.bubbleFraction, buffered, 1 - work / buffered,
                    peaks.c_str());
      }
    }
  }
}

} // namespace

// Qi et al., "Pipeline Parallelism with Controllable Memory": on uniform
// stages V-Half holds about half of 1F1B's peak activations on every rank,
// V-Min about a third. 1F1B's rank 0 holds K micro-batches of a rank's
// layers; a V-shaped rank's stage is half of them. V-Min's limit is at
// least 2 stages (a micro-batch holds both of rank 0's at once), so at
// K = 2 it is V-Half's.
TEST(GenerateScheduleTest, VHalfAndVMinHoldAHalfAndAThirdOf1F1B) {
  for (int k : {2, 3, 4, 6, 8})
    for (int m : {k, 2 * k, 16}) {
      BoundaryTraffic traffic = BoundaryTraffic::uniform(k, 64);
      ScheduleOrError oneF =
          buildSchedule(ScheduleFamily::OneFOneB, k, 1, m, traffic, {});
      ASSERT_TRUE(oneF.ok()) << oneF.error;
      int base = 0;
      for (int r = 0; r < k; ++r)
        base = std::max(base, getRankPeak(oneF.schedule, r));
      EXPECT_EQ(base, std::min(k, m));
      for (auto [family, bound] :
           {std::pair<ScheduleFamily, double>{ScheduleFamily::VHalf, 0.55},
            {ScheduleFamily::VMin, k == 2 ? 0.55 : 0.40}}) {
        ScheduleOrError v = buildSchedule(family, k, 2, m, traffic, {});
        ASSERT_TRUE(v.ok()) << v.error;
        int peak = 0;
        for (int r = 0; r < k; ++r)
          peak = std::max(peak, getRankPeak(v.schedule, r));
        double ratio = 0.5 * peak / base;
        EXPECT_LE(ratio, bound)
            << getScheduleFamilyName(family) << " K=" << k << " M=" << m << ": "
            << peak << " stages of half a rank against " << base;
        // Exported as CSV, it reads back as itself.
        std::string csv = toCSV(v.schedule);
        ScheduleOrError parsed = parseCSV(csv, 2 * k, m, traffic);
        ASSERT_TRUE(parsed.ok()) << parsed.error;
        EXPECT_TRUE(verifySchedule(parsed.schedule).ok());
        EXPECT_EQ(toCSV(parsed.schedule), csv);
      }
    }
}
