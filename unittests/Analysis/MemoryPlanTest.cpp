//===- MemoryPlanTest.cpp - Memory planner tests ----------------*- C++ -*-===//
//
// Unit tests of the memory planner: hand-computed live bytes of small GPipe
// and interleaved schedules, kept micro-batches (GPipe keeps M stage inputs at
// its peak, 1F1B at most K-k on stage k), the L x K x M sweep of the
// activation term against GPipe's O(N + (L/K)(N/M)), and the allocator:
// no two buffers live at one action overlap in the arena, on random
// schedules (split backwards, recomputes, several stages per rank).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/MemoryPlan.h"
#include "gpipe/Analysis/ScheduleVerifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>

using namespace mlir::gpipe;

namespace {

std::string cells(const std::vector<Action> &program) {
  std::string text;
  for (const Action &a : program)
    text += (text.empty() ? "" : ",") + toString(a);
  return text;
}

/// Live bytes of `rank` at every action, by brute force over its buffers.
std::vector<int64_t> liveBytes(const RankMemoryPlan &rank, int numActions) {
  std::vector<int64_t> live(numActions, 0);
  for (int i = 0; i < numActions; ++i)
    for (const PlannedBuffer &b : rank.buffers)
      if (b.isLiveAt(i))
        live[i] += b.bytes;
  return live;
}

const PlannedBuffer *findBuffer(const RankMemoryPlan &rank, BufferKind kind,
                                int stage, int mb) {
  for (const PlannedBuffer &b : rank.buffers)
    if (b.kind == kind && b.stage == stage && b.microbatch == mb)
      return &b;
  return nullptr;
}

int64_t alignUp(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// Checks the invariants every plan must satisfy: buffers within their
/// program, aligned offsets, no two buffers live at one action overlapping,
/// the arena covering every buffer, peak and breakdown matching a brute-force
/// recount, arena >= aligned peak >= peak.
void checkPlan(const Schedule &schedule, const MemoryPlan &plan,
               int64_t alignment, const std::string &what) {
  ASSERT_TRUE(plan.ok()) << what << ": " << plan.error;
  ASSERT_EQ(static_cast<int>(plan.ranks.size()), schedule.getNumRanks());
  for (int r = 0; r < schedule.getNumRanks(); ++r) {
    const RankMemoryPlan &rank = plan.ranks[r];
    int n = static_cast<int>(schedule.ranks[r].size());
    int64_t top = 0;
    for (const PlannedBuffer &b : rank.buffers) {
      EXPECT_GT(b.bytes, 0) << what;
      EXPECT_LE(0, b.firstAction) << what;
      EXPECT_LE(b.firstAction, b.lastAction) << what;
      EXPECT_LT(b.lastAction, n) << what;
      EXPECT_EQ(b.offset % alignment, 0) << what;
      top = std::max(top, b.offset + alignUp(b.bytes, alignment));
    }
    EXPECT_EQ(rank.arenaBytes, top) << what << " rank " << r;
    for (size_t i = 0; i < rank.buffers.size(); ++i) {
      for (size_t j = i + 1; j < rank.buffers.size(); ++j) {
        const PlannedBuffer &a = rank.buffers[i], &b = rank.buffers[j];
        bool together =
            a.firstAction <= b.lastAction && b.firstAction <= a.lastAction;
        if (!together)
          continue;
        bool apart = a.offset + alignUp(a.bytes, alignment) <= b.offset ||
                     b.offset + alignUp(b.bytes, alignment) <= a.offset;
        EXPECT_TRUE(apart) << what << " rank " << r << ": "
                           << getBufferKindName(a.kind) << "(" << a.stage << ","
                           << a.microbatch << ") at " << a.offset << " and "
                           << getBufferKindName(b.kind) << "(" << b.stage << ","
                           << b.microbatch << ") at " << b.offset;
      }
    }
    std::vector<int64_t> live = liveBytes(rank, n);
    int64_t peak =
        live.empty() ? 0 : *std::max_element(live.begin(), live.end());
    EXPECT_EQ(rank.peakBytes, peak) << what << " rank " << r;
    if (!live.empty()) {
      EXPECT_EQ(live[rank.peakAction], peak);
      EXPECT_EQ(std::find(live.begin(), live.end(), peak) - live.begin(),
                rank.peakAction);
    }
    EXPECT_EQ(rank.atPeak.getTotal(), rank.peakBytes) << what;
    EXPECT_GE(rank.alignedPeakBytes, rank.peakBytes) << what;
    EXPECT_GE(rank.arenaBytes, rank.alignedPeakBytes) << what;
  }
}

//===----------------------------------------------------------------------===//
// Hand-computed plans
//===----------------------------------------------------------------------===//

MemoryPlanInput twoStageInput() {
  MemoryPlanInput input;
  input.alignment = 1;
  StageMemory s0;
  s0.paramBytes = 1000;
  s0.inputBytes = 100;
  s0.outputBytes = 200;
  s0.forwardScratch = 300;
  s0.backwardScratch = 500;
  StageMemory s1;
  s1.paramBytes = 2000;
  s1.inputBytes = 200;
  s1.extraInputBytes = 8; // labels
  s1.outputBytes = 4;     // the loss: no buffer on the last stage
  s1.forwardScratch = 50;
  s1.backwardScratch = 700;
  input.stages = {s0, s1};
  return input;
}

TEST(MemoryPlanTest, HandComputedGPipe) {
  Schedule schedule = buildGPipeSchedule(2, 2, 200);
  ASSERT_EQ(cells(schedule.ranks[0]),
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0STEP");
  ASSERT_EQ(cells(schedule.ranks[1]),
            "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1,1STEP");
  MemoryPlanInput input = twoStageInput();
  MemoryPlan plan = planMemory(schedule, input);
  checkPlan(schedule, plan, 1, "gpipe K=2 M=2");

  // Rank 0: params + grads 2000 throughout.
  //   F0 in0 out0 scr 2600 | SF0 2300 | F1 in0 in1 out1 scr 2700 |
  //   SF1 2400 | RB0 in0 in1 og0 2400 | B0 in0 in1 og0 scr 2900 |
  //   RB1 in1 og1 2300 | B1 in1 og1 scr 2800 | STEP 2000
  const RankMemoryPlan &r0 = plan.ranks[0];
  EXPECT_EQ(liveBytes(r0, 9),
            (std::vector<int64_t>{2600, 2300, 2700, 2400, 2400, 2900, 2300,
                                  2800, 2000}));
  EXPECT_EQ(r0.peakBytes, 2900);
  EXPECT_EQ(r0.peakAction, 5);
  EXPECT_EQ(r0.atPeak.parameters, 1000);
  EXPECT_EQ(r0.atPeak.gradients, 1000);
  EXPECT_EQ(r0.atPeak.optimizerState, 0);
  EXPECT_EQ(r0.atPeak.keptActivations, 200);
  EXPECT_EQ(r0.atPeak.scratch, 500);
  EXPECT_EQ(r0.atPeak.boundary, 200);
  EXPECT_EQ(r0.peakKeptMicrobatches, (std::vector<int>{2, 0}));
  const PlannedBuffer *in1 = findBuffer(r0, BufferKind::Input, 0, 1);
  ASSERT_TRUE(in1);
  EXPECT_EQ(in1->firstAction, 2); // F1: stage 0 loads its data
  EXPECT_EQ(in1->lastAction, 7);  // B1
  const PlannedBuffer *out0 = findBuffer(r0, BufferKind::Output, 0, 0);
  ASSERT_TRUE(out0);
  EXPECT_EQ(out0->firstAction, 0);
  EXPECT_EQ(out0->lastAction, 1);
  EXPECT_FALSE(findBuffer(r0, BufferKind::InputGrad, 0, 0)); // stage 0

  // Rank 1: 4000 persistent. RF0 4200 | F0 in0 ex0 scr 4258 | RF1 4408 |
  //   F1 4466 | B0 in0 ex0 in1 ex1 ig0 scr 5316 | SB0 4408 | B1 5108 |
  //   SB1 4200 | STEP 4000
  const RankMemoryPlan &r1 = plan.ranks[1];
  EXPECT_EQ(liveBytes(r1, 9),
            (std::vector<int64_t>{4200, 4258, 4408, 4466, 5316, 4408, 5108,
                                  4200, 4000}));
  EXPECT_EQ(r1.peakBytes, 5316);
  EXPECT_EQ(r1.atPeak.keptActivations, 2 * (200 + 8));
  EXPECT_EQ(r1.atPeak.boundary, 200);
  EXPECT_EQ(r1.atPeak.scratch, 700);
  EXPECT_FALSE(findBuffer(r1, BufferKind::Output, 1, 0)); // last stage
  EXPECT_FALSE(findBuffer(r1, BufferKind::OutputGrad, 1, 0));

  // Adam: two moments per parameter byte; momentum one.
  input.optimizer = OptimizerKind::Adam;
  MemoryPlan adam = planMemory(schedule, input);
  checkPlan(schedule, adam, 1, "adam");
  EXPECT_EQ(adam.ranks[0].peakBytes, 2900 + 2000);
  EXPECT_EQ(adam.ranks[1].peakBytes, 5316 + 4000);
  EXPECT_EQ(adam.ranks[1].atPeak.optimizerState, 4000);
  input.optimizer = OptimizerKind::Momentum;
  EXPECT_EQ(planMemory(schedule, input).ranks[1].peakBytes, 5316 + 2000);

  // Remat none: 1000 saved bytes per micro-batch of stage 0 from F to B.
  input.optimizer = OptimizerKind::SGD;
  input.remat = RematPolicy::None;
  input.stages[0].savedBytes = 1000;
  MemoryPlan none = planMemory(schedule, input);
  checkPlan(schedule, none, 1, "remat none");
  EXPECT_EQ(none.ranks[0].peakBytes, 2900 + 2000);
  EXPECT_EQ(none.ranks[0].atPeak.keptActivations, 200 + 2000);
  // ... and nothing with remat stage.
  input.remat = RematPolicy::Stage;
  EXPECT_EQ(planMemory(schedule, input).ranks[0].peakBytes, 2900);
}

TEST(MemoryPlanTest, HandComputedOneFOneB) {
  // K=2, M=3: rank 0 runs F0 F1 then B0 F2 B1 B2.
  Schedule schedule = build1F1BSchedule(2, 3, 200);
  MemoryPlanInput input = twoStageInput();
  input.stages.resize(2);
  MemoryPlan plan = planMemory(schedule, input);
  checkPlan(schedule, plan, 1, "1f1b K=2 M=3");
  EXPECT_EQ(plan.ranks[0].peakKeptMicrobatches, (std::vector<int>{2, 0}));
  EXPECT_EQ(plan.ranks[1].peakKeptMicrobatches, (std::vector<int>{0, 1}));
  // Rank 1 receives micro-batch 1 before the backward of micro-batch 0:
  // 1RECV_F0 1F0 1RECV_F1 1B0 1SEND_B0 1F1 ... It keeps one micro-batch (in
  // + ex) and holds one received input (a receive buffer) at its peak:
  // 4000 + in + ex + received in + ig + scr.
  ASSERT_EQ(cells(schedule.ranks[1]).substr(0, 34),
            "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0");
  const RankMemoryPlan &r1 = plan.ranks[1];
  EXPECT_EQ(r1.peakBytes, 4000 + 200 + 8 + 200 + 200 + 700);
  EXPECT_EQ(r1.peakAction, 3);
  EXPECT_EQ(r1.atPeak.keptActivations, 208);
  EXPECT_EQ(r1.atPeak.boundary, 400);
  const PlannedBuffer *received = findBuffer(r1, BufferKind::Input, 1, 1);
  ASSERT_TRUE(received);
  EXPECT_EQ(received->firstAction, 2);
  EXPECT_EQ(received->keptFromAction, 5);
  EXPECT_FALSE(received->isKeptAt(3));
  EXPECT_TRUE(received->isKeptAt(5));
  // Rank 0 peaks at a backward with two inputs kept.
  EXPECT_EQ(plan.ranks[0].peakBytes, 2000 + 2 * 100 + 200 + 500);
}

TEST(MemoryPlanTest, HandOverOnOneRank) {
  // Both stages on rank 0: the output of stage 0 is the input of stage 1 and
  // the input gradient of stage 1 is the output gradient of stage 0.
  Schedule order;
  order.numStages = 2;
  order.numMicrobatches = 2;
  order.stageToRank = {0, 0};
  order.ranks.resize(1);
  for (auto [kind, stage] :
       {std::pair{ActionKind::Forward, 0}, std::pair{ActionKind::Forward, 1},
        std::pair{ActionKind::Backward, 1}, std::pair{ActionKind::Backward, 0}})
    for (int mb = 0; mb < 2; ++mb)
      order.ranks[0].push_back(Action::compute(kind, stage, mb));
  order.ranks[0].push_back(Action::step(1));
  order.ranks[0].push_back(Action::step(0));
  ScheduleOrError full =
      insertCommunication(order, BoundaryTraffic::uniform(2, 200));
  ASSERT_TRUE(full.ok()) << full.error;
  const Schedule &schedule = full.schedule;
  ASSERT_EQ(cells(schedule.ranks[0]),
            "0F0,0F1,1F0,1F1,1B0,1B1,0B0,0B1,1STEP,0STEP");
  MemoryPlan plan = planMemory(schedule, twoStageInput());
  checkPlan(schedule, plan, 1, "hand-over");
  const RankMemoryPlan &r = plan.ranks[0];
  for (const PlannedBuffer &b : r.buffers) {
    EXPECT_NE(b.kind, BufferKind::Output);
    EXPECT_NE(b.kind, BufferKind::InputGrad);
  }
  const PlannedBuffer *in = findBuffer(r, BufferKind::Input, 1, 1);
  ASSERT_TRUE(in);
  EXPECT_EQ(in->firstAction, 1); // 0F1 writes it
  EXPECT_EQ(in->lastAction, 5);  // 1B1 reads it last
  const PlannedBuffer *og = findBuffer(r, BufferKind::OutputGrad, 0, 0);
  ASSERT_TRUE(og);
  EXPECT_EQ(og->firstAction, 4); // 1B0 writes it
  EXPECT_EQ(og->lastAction, 6);  // 0B0 reads it
  // Persistent 6000; at 1B0: in(0,0) in(0,1) in(1,0) in(1,1) ex(1,0)
  // ex(1,1) og(0,0) scr 700.
  EXPECT_EQ(r.peakBytes, 6000 + 200 + 400 + 16 + 200 + 700);
  EXPECT_EQ(r.peakAction, 4);
}

TEST(MemoryPlanTest, SplitBackwardKeepsUntilWeightHalf) {
  Schedule order;
  order.numStages = 2;
  order.numMicrobatches = 1;
  order.stageToRank = {0, 1};
  order.ranks = {
      {Action::compute(ActionKind::Forward, 0, 0),
       Action::compute(ActionKind::BackwardInput, 0, 0),
       Action::compute(ActionKind::BackwardWeight, 0, 0), Action::step(0)},
      {Action::compute(ActionKind::Forward, 1, 0),
       Action::compute(ActionKind::BackwardInput, 1, 0),
       Action::compute(ActionKind::BackwardWeight, 1, 0), Action::step(1)}};
  ScheduleOrError full =
      insertCommunication(order, BoundaryTraffic::uniform(2, 200));
  ASSERT_TRUE(full.ok()) << full.error;
  const Schedule &schedule = full.schedule;
  ASSERT_EQ(cells(schedule.ranks[1]), "1RECV_F0,1F0,1I0,1SEND_B0,1W0,1STEP");
  MemoryPlanInput input = twoStageInput();
  input.stages[1].backwardInputScratch = 400;
  input.stages[1].backwardWeightScratch = 300;
  MemoryPlan plan = planMemory(schedule, input);
  checkPlan(schedule, plan, 1, "split");
  const RankMemoryPlan &r1 = plan.ranks[1];
  const PlannedBuffer *in = findBuffer(r1, BufferKind::Input, 1, 0);
  ASSERT_TRUE(in);
  EXPECT_EQ(in->lastAction, 4); // W
  const PlannedBuffer *ig = findBuffer(r1, BufferKind::InputGrad, 1, 0);
  ASSERT_TRUE(ig);
  EXPECT_EQ(ig->firstAction, 2); // I
  EXPECT_EQ(ig->lastAction, 3);  // SEND_B
  EXPECT_EQ(liveBytes(r1, 6),
            (std::vector<int64_t>{4200, 4258, 4808, 4408, 4508, 4000}));
}

//===----------------------------------------------------------------------===//
// Kept micro-batches: GPipe M, 1F1B at most K - k
//===----------------------------------------------------------------------===//

MemoryPlanInput uniformInput(int numStages, int64_t activation,
                             int64_t forwardScratch, int64_t backwardScratch) {
  MemoryPlanInput input;
  input.alignment = 1;
  for (int s = 0; s < numStages; ++s) {
    StageMemory m;
    m.paramBytes = 4096;
    m.inputBytes = activation;
    m.outputBytes = activation;
    m.forwardScratch = forwardScratch;
    m.backwardScratch = backwardScratch;
    input.stages.push_back(m);
  }
  return input;
}

/// Inputs of `stage` kept (forward run, backward not) at `action`.
int countKeptInputs(const RankMemoryPlan &rank, int stage, int action) {
  int count = 0;
  for (const PlannedBuffer *b : rank.getLiveBuffers(action))
    count += b->kind == BufferKind::Input && b->stage == stage &&
             b->isKeptAt(action);
  return count;
}

/// Input buffers of `stage` live at `action`, kept or received.
int countInputBuffers(const RankMemoryPlan &rank, int stage, int action) {
  int count = 0;
  for (const PlannedBuffer *b : rank.getLiveBuffers(action))
    count += b->kind == BufferKind::Input && b->stage == stage;
  return count;
}

TEST(MemoryPlanTest, GPipeKeepsMOneFOneBKeepsKMinusK) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 16; ++m) {
      MemoryPlanInput input = uniformInput(k, 256, 256, 1024);
      Schedule gpipe = buildGPipeSchedule(k, m, 256);
      Schedule ofob = build1F1BSchedule(k, m, 256);
      MemoryPlan g = planMemory(gpipe, input);
      MemoryPlan o = planMemory(ofob, input);
      ASSERT_TRUE(g.ok() && o.ok()) << g.error << o.error;
      for (int s = 0; s < k; ++s) {
        const RankMemoryPlan &gr = g.ranks[s], &orank = o.ranks[s];
        // GPipe: all M inputs are kept at the peak (the first backward).
        EXPECT_EQ(gr.peakKeptMicrobatches[s], m);
        EXPECT_EQ(countKeptInputs(gr, s, gr.peakAction), m)
            << "K=" << k << " M=" << m << " stage " << s;
        EXPECT_EQ(gr.atPeak.keptActivations, int64_t{256} * m);
        // 1F1B: never more than K - k kept; with the input received ahead
        // of its forward, at most K - k + 1 <= K input buffers in all.
        EXPECT_LE(orank.peakKeptMicrobatches[s], k - s);
        EXPECT_EQ(orank.peakKeptMicrobatches[s], std::min(k - s, m))
            << "K=" << k << " M=" << m << " stage " << s;
        int buffers = 0;
        for (int i = 0; i < static_cast<int>(ofob.ranks[s].size()); ++i) {
          EXPECT_LE(countKeptInputs(orank, s, i), k - s);
          buffers = std::max(buffers, countInputBuffers(orank, s, i));
        }
        EXPECT_LE(buffers, std::min(k - s + (s > 0), m));
        EXPECT_LE(buffers, k);
        EXPECT_LE(orank.atPeak.keptActivations, int64_t{256} * (k - s));
        EXPECT_LE(orank.peakBytes, gr.peakBytes);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// The activation term against the paper's O(N + (L/K)(N/M))
//===----------------------------------------------------------------------===//

/// The working sets of a stage of `n` identical layers whose activations are
/// `a` bytes per micro-batch, by the same liveness measure the compiler
/// applies to the stage functions. Forward: x_i = layer_i(x_{i-1}) for i =
/// 1..n at program points 1..n; x_0 is the argument and x_n the output (both
/// in their own buffers). Backward with remat=stage: recompute x_1..x_{n-1}
/// at points 1..n-1, each kept until the backward of the layer that reads it;
/// then for i = n..1 at point 2n-i: g_{i-1} = layer_i'(x_{i-1}, g_i), g_n
/// the output-gradient argument, g_0 the input gradient (its own buffer).
std::pair<int64_t, int64_t> chainScratch(int n, int64_t a) {
  std::vector<LiveRange> forward;
  for (int i = 1; i < n; ++i)
    forward.push_back({a, i, i + 1});
  std::vector<LiveRange> backward;
  auto backwardPoint = [&](int layer) { return 2 * n - layer; };
  for (int i = 1; i < n; ++i) // x_i is read by the backward of layer i+1
    backward.push_back({a, i, backwardPoint(i + 1)});
  for (int i = n; i >= 2; --i) // g_{i-1} is read by the backward of layer i-1
    backward.push_back({a, backwardPoint(i), backwardPoint(i - 1)});
  return {getPeakLiveBytes(forward), getPeakLiveBytes(backward)};
}

TEST(MemoryPlanTest, ChainScratchIsLayersTimesActivation) {
  for (int n = 1; n <= 12; ++n) {
    auto [forward, backward] = chainScratch(n, 100);
    EXPECT_EQ(forward, n == 1 ? 0 : n == 2 ? 100 : 200);
    EXPECT_EQ(backward, n == 1 ? 0 : 100 * n) << n;
  }
}

TEST(MemoryPlanTest, ActivationSweepFollowsPaper) {
  // N: the bytes of one layer's activation for the whole mini-batch (batch
  // x per-sample activation). M micro-batches of N/M; K stages of L/K
  // layers. GPipe with remat=stage keeps the M stage inputs (M x N/M = N)
  // and one backward's working set ((L/K) x N/M): N + (L/K)(N/M).
  const int64_t batch = 64, perSample = 256, n = batch * perSample;
  std::printf("%4s %3s %3s %10s %10s %10s %10s %10s %10s %10s\n", "L", "K", "M",
              "N", "kept", "scratch", "act", "paper", "1f1b act", "none act");
  int rows = 0;
  for (int l : {4, 8, 16, 32}) {
    for (int k : {1, 2, 4, 8}) {
      if (k > l)
        continue;
      for (int m : {1, 2, 4, 8, 16}) {
        int perStage = l / k;
        int64_t a = n / m;
        auto [forwardScratch, backwardScratch] = chainScratch(perStage, a);
        // A one-layer stage still holds its gradient step's result.
        if (perStage == 1)
          backwardScratch = a;
        MemoryPlanInput input =
            uniformInput(k, a, forwardScratch, backwardScratch);
        for (StageMemory &sm : input.stages)
          sm.savedBytes = (perStage - 1) * a; // remat none keeps x_1..x_{n-1}
        Schedule gpipe = buildGPipeSchedule(k, m, a);
        MemoryPlan plan = planMemory(gpipe, input);
        checkPlan(gpipe, plan, 1, "sweep");
        int64_t paper = n + int64_t{perStage} * (n / m);
        for (int s = 0; s < k; ++s) {
          const MemoryBreakdown &b = plan.ranks[s].atPeak;
          EXPECT_EQ(b.keptActivations, n)
              << "L=" << l << " K=" << k << " M=" << m << " stage " << s;
          EXPECT_EQ(b.scratch, backwardScratch);
          EXPECT_EQ(b.keptActivations + b.scratch, paper)
              << "L=" << l << " K=" << k << " M=" << m;
          // Boundary buffers at the peak: the gradient received and the one
          // to send, N/M each (one on the first and the last stage).
          int boundaries = (s > 0) + (s + 1 < k);
          EXPECT_EQ(b.boundary, boundaries * a);
          EXPECT_EQ(b.parameters, 4096);
        }
        // 1F1B: min(K - s, M) inputs instead of M.
        Schedule ofob = build1F1BSchedule(k, m, a);
        MemoryPlan o = planMemory(ofob, input);
        checkPlan(ofob, o, 1, "sweep 1f1b");
        const MemoryBreakdown &o0 = o.ranks[0].atPeak;
        EXPECT_EQ(o0.keptActivations, std::min(k, m) * a);
        EXPECT_LE(o0.keptActivations + o0.scratch, paper);
        // Remat none: every layer's activation of every micro-batch, L/K x N.
        input.remat = RematPolicy::None;
        MemoryPlan none = planMemory(gpipe, input);
        checkPlan(gpipe, none, 1, "sweep none");
        const MemoryBreakdown &n0 = none.ranks[0].atPeak;
        EXPECT_EQ(n0.keptActivations, int64_t{perStage} * n);
        const MemoryBreakdown &b0 = plan.ranks[0].atPeak;
        std::printf("%4d %3d %3d %10lld %10lld %10lld %10lld %10lld %10lld "
                    "%10lld\n",
                    l, k, m, static_cast<long long>(n),
                    static_cast<long long>(b0.keptActivations),
                    static_cast<long long>(b0.scratch),
                    static_cast<long long>(b0.keptActivations + b0.scratch),
                    static_cast<long long>(paper),
                    static_cast<long long>(o0.keptActivations + o0.scratch),
                    static_cast<long long>(n0.keptActivations + n0.scratch));
        ++rows;
      }
    }
  }
  EXPECT_EQ(rows, 4 * 5 + 4 * 5 + 4 * 5 + 4 * 5 - 5); // K=8 > L=4 skipped
}

//===----------------------------------------------------------------------===//
// Allocator
//===----------------------------------------------------------------------===//

TEST(MemoryPlanTest, PeakLiveBytes) {
  EXPECT_EQ(getPeakLiveBytes({}), 0);
  EXPECT_EQ(getPeakLiveBytes({{10, 0, 0}}), 10);
  // [0,2] and [2,3] meet at 2; [3,4] does not meet [0,2].
  EXPECT_EQ(getPeakLiveBytes({{10, 0, 2}, {20, 2, 3}, {40, 3, 4}}), 60);
  EXPECT_EQ(getPeakLiveBytes({{10, 0, 1}, {20, 2, 3}, {5, 5, 5}}), 20);
}

PlannedBuffer buffer(int64_t bytes, int first, int last) {
  PlannedBuffer b;
  b.kind = BufferKind::Scratch;
  b.bytes = bytes;
  b.firstAction = first;
  b.lastAction = last;
  return b;
}

TEST(MemoryPlanTest, AllocatorReusesFreedSpace) {
  // a [0,1] 100, b [2,3] 100, c [0,3] 50: a and b share an offset.
  std::vector<PlannedBuffer> buffers = {buffer(100, 0, 1), buffer(100, 2, 3),
                                        buffer(50, 0, 3)};
  std::string strategy;
  EXPECT_EQ(allocateArena(buffers, 1, &strategy), 150);
  EXPECT_EQ(strategy, "size");
  EXPECT_EQ(buffers[0].offset, buffers[1].offset);
  // Best fit: P [0,70) and R [135,180) die at action 2 and leave holes of
  // 70 and 45 bytes between Q and S; T (40 bytes, from action 3) takes the
  // 45-byte hole.
  std::vector<PlannedBuffer> holes = {buffer(70, 0, 2), buffer(65, 0, 9),
                                      buffer(45, 0, 2), buffer(44, 0, 9),
                                      buffer(40, 3, 9)};
  EXPECT_EQ(allocateArena(holes, 1, &strategy), 224);
  EXPECT_EQ(strategy, "size");
  EXPECT_EQ(holes[0].offset, 0);
  EXPECT_EQ(holes[1].offset, 70);
  EXPECT_EQ(holes[2].offset, 135);
  EXPECT_EQ(holes[3].offset, 180);
  EXPECT_EQ(holes[4].offset, 135);
  // Persistent buffers are packed first from offset 0.
  std::vector<PlannedBuffer> mixed = {buffer(10, 0, 0), buffer(64, 0, 5)};
  mixed[1].kind = BufferKind::Parameters;
  EXPECT_EQ(allocateArena(mixed, 64), 128);
  EXPECT_EQ(mixed[1].offset, 0);
  EXPECT_EQ(mixed[0].offset, 64);
}

/// A random valid compute order: a random topological execution of the
/// pipeline's dependencies, each action appended to its stage's rank.
Schedule randomComputeOrder(std::mt19937 &rng, int numStages, int numRanks,
                            int numMicrobatches, bool split, bool remat) {
  Schedule order;
  order.numStages = numStages;
  order.numMicrobatches = numMicrobatches;
  for (int s = 0; s < numStages; ++s)
    order.stageToRank.push_back(s % numRanks);
  order.ranks.resize(numRanks);
  int mbs = numMicrobatches;
  // done[kind][stage][mb]: 0 F, 1 R, 2 B or I, 3 W.
  std::vector<std::vector<std::vector<bool>>> done(
      4, std::vector<std::vector<bool>>(numStages, std::vector<bool>(mbs)));
  std::vector<Action> ready;
  for (;;) {
    ready.clear();
    for (int s = 0; s < numStages; ++s) {
      for (int m = 0; m < mbs; ++m) {
        if (!done[0][s][m]) {
          if (s == 0 || done[0][s - 1][m])
            ready.push_back(Action::compute(ActionKind::Forward, s, m));
          continue;
        }
        if (remat && !done[1][s][m]) {
          ready.push_back(Action::compute(ActionKind::Recompute, s, m));
          continue;
        }
        if (!done[2][s][m]) {
          if (s + 1 == numStages || done[2][s + 1][m])
            ready.push_back(Action::compute(split ? ActionKind::BackwardInput
                                                  : ActionKind::Backward,
                                            s, m));
          continue;
        }
        if (split && !done[3][s][m])
          ready.push_back(Action::compute(ActionKind::BackwardWeight, s, m));
      }
    }
    if (ready.empty())
      break;
    const Action &a =
        ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng)];
    int slot = a.kind == ActionKind::Forward          ? 0
               : a.kind == ActionKind::Recompute      ? 1
               : a.kind == ActionKind::BackwardWeight ? 3
                                                      : 2;
    done[slot][a.stage][a.microbatch] = true;
    order.ranks[order.stageToRank[a.stage]].push_back(a);
  }
  for (int s = numStages - 1; s >= 0; --s)
    order.ranks[order.stageToRank[s]].push_back(Action::step(s));
  return order;
}

TEST(MemoryPlanTest, RandomSchedulesNeverOverlap) {
  std::mt19937 rng(20240611);
  int planned = 0, numRanks = 0, optimal = 0;
  double worst = 0, total = 0;
  for (int trial = 0; trial < 400; ++trial) {
    int ranks = std::uniform_int_distribution<int>(1, 4)(rng);
    int perRank = std::uniform_int_distribution<int>(1, 2)(rng);
    int numStages = ranks * perRank;
    int mbs = std::uniform_int_distribution<int>(1, 6)(rng);
    bool split = rng() % 3 == 0, remat = rng() % 4 == 0;
    Schedule order =
        randomComputeOrder(rng, numStages, ranks, mbs, split, remat);
    std::vector<int64_t> boundary;
    for (int b = 0; b + 1 < numStages; ++b)
      boundary.push_back(std::uniform_int_distribution<int64_t>(1, 500)(rng));
    BoundaryTraffic traffic;
    traffic.bytes = boundary;
    ScheduleOrError full = insertCommunication(order, traffic);
    ASSERT_TRUE(full.ok()) << full.error;
    ASSERT_TRUE(verifySchedule(full.schedule).ok());
    MemoryPlanInput input;
    const int64_t alignments[] = {1, 8, 64, 256};
    input.alignment = alignments[rng() % 4];
    input.remat = rng() % 2 ? RematPolicy::None : RematPolicy::Stage;
    input.optimizer = static_cast<OptimizerKind>(rng() % 3);
    auto size = [&](int64_t max) {
      return std::uniform_int_distribution<int64_t>(0, max)(rng);
    };
    for (int s = 0; s < numStages; ++s) {
      StageMemory m;
      m.paramBytes = size(5000);
      m.inputBytes = s == 0 ? size(500) : boundary[s - 1];
      m.outputBytes = s + 1 < numStages ? boundary[s] : 4;
      m.extraInputBytes = s + 1 == numStages ? size(64) : 0;
      m.savedBytes = size(2000);
      m.forwardScratch = size(3000);
      m.backwardScratch = size(6000);
      if (split) {
        m.backwardInputScratch = size(4000);
        m.backwardWeightScratch = size(4000);
      }
      input.stages.push_back(m);
    }
    MemoryPlan plan = planMemory(full.schedule, input);
    checkPlan(full.schedule, plan, input.alignment,
              "trial " + std::to_string(trial));
    // Every buffer that is created is freed by its consumer, so only
    // persistent buffers reach the last action (the final STEP).
    for (int r = 0; r < full.schedule.getNumRanks(); ++r) {
      int last = static_cast<int>(full.schedule.ranks[r].size()) - 1;
      for (const PlannedBuffer &b : plan.ranks[r].buffers) {
        if (!isPersistentBuffer(b.kind)) {
          EXPECT_LT(b.lastAction, last) << getBufferKindName(b.kind);
        }
      }
    }
    for (const RankMemoryPlan &r : plan.ranks) {
      double overhead = r.alignedPeakBytes > 0
                            ? static_cast<double>(r.arenaBytes) /
                                      static_cast<double>(r.alignedPeakBytes) -
                                  1.0
                            : 0.0;
      worst = std::max(worst, overhead);
      total += overhead;
      ++numRanks;
      optimal += r.arenaBytes == r.alignedPeakBytes;
    }
    ++planned;
  }
  EXPECT_EQ(planned, 400);
  std::printf("random schedules: %d ranks, arena = aligned peak on %d, mean "
              "overhead %.2f%%, worst %.2f%%\n",
              numRanks, optimal, 100 * total / numRanks, 100 * worst);
}

TEST(MemoryPlanTest, ArenaCloseToPeakOnGeneratedSchedules) {
  // On the generated schedules the allocator should reach the aligned peak
  // (the lower bound) or come within a few percent of it.
  double worst = 0;
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 32; m *= 2) {
      for (bool ofob : {false, true}) {
        MemoryPlanInput input = uniformInput(k, 1 << 12, 3 << 12, 9 << 12);
        input.alignment = 64;
        Schedule s = ofob ? build1F1BSchedule(k, m, 1 << 12)
                          : buildGPipeSchedule(k, m, 1 << 12);
        MemoryPlan plan = planMemory(s, input);
        checkPlan(s, plan, 64, "generated");
        for (const RankMemoryPlan &r : plan.ranks)
          worst = std::max(
              worst,
              static_cast<double>(r.arenaBytes) / r.alignedPeakBytes - 1.0);
      }
    }
  }
  EXPECT_LE(worst, 0.05);
  std::printf("worst arena overhead over the aligned peak: %.2f%%\n",
              100 * worst);
}

// Schedules with several stages per rank keep micro-batches in no
// first-in first-out order; a slot's copies then reserve their bytes while
// any of them is live. The planner places every buffer on its own where
// that gives the smaller arena, records each slot's table (copy -> offset)
// and stays sound; the arena comes within 15% of the aligned peak (13%;
// the slots alone: up to 38%).
TEST(MemoryPlanTest, BuffersOnTheirOwnWhereSlotsWaste) {
  double worst = 0;
  int tabled = 0;
  for (ScheduleFamily family : {ScheduleFamily::Interleaved1F1B,
                                ScheduleFamily::ZBV, ScheduleFamily::DualPipeV,
                                ScheduleFamily::VHalf, ScheduleFamily::VMin}) {
    for (int k = 2; k <= 4; ++k) {
      int v = 2, m = 8;
      ScheduleOrError built = buildSchedule(
          family, k, v, m, BoundaryTraffic::uniform(k * v, 1 << 12));
      ASSERT_TRUE(built.ok()) << built.error;
      MemoryPlanInput input = uniformInput(k * v, 1 << 12, 3 << 12, 9 << 12);
      for (StageMemory &stage : input.stages) {
        stage.savedBytes = 16 << 12;
        stage.deferredBytes = 8 << 12;
      }
      input.remat = RematPolicy::None;
      input.alignment = 64;
      MemoryPlan plan = planMemory(built.schedule, input);
      std::string what = std::string(getScheduleFamilyName(family)) +
                         " K=" + std::to_string(k);
      checkPlan(built.schedule, plan, 64, what);
      for (const RankMemoryPlan &r : plan.ranks) {
        worst = std::max(
            worst,
            static_cast<double>(r.arenaBytes) / r.alignedPeakBytes - 1.0);
        if (r.strategy != "buffers")
          continue;
        ++tabled;
        // Every buffer sits where its slot's table says.
        for (const PlannedBuffer &b : r.buffers) {
          auto slot = std::find_if(
              r.slots.begin(), r.slots.end(), [&](const PlannedSlot &s) {
                return s.kind == b.kind &&
                       s.stage ==
                           (b.kind == BufferKind::Scratch ? -1 : b.stage);
              });
          ASSERT_NE(slot, r.slots.end());
          if (slot->table.empty())
            continue;
          ASSERT_EQ(static_cast<int>(slot->table.size()), slot->count);
          EXPECT_EQ(b.offset, slot->table[b.microbatch % slot->count]) << what;
          EXPECT_GE(b.offset, slot->offset) << what;
          EXPECT_LE(b.offset + b.bytes, slot->offset + slot->getSpan()) << what;
        }
      }
    }
  }
  EXPECT_GT(tabled, 0);
  EXPECT_LE(worst, 0.15);
  std::printf("worst arena overhead over the aligned peak: %.2f%%\n",
              100 * worst);
}

//===----------------------------------------------------------------------===//
// Errors and names
//===----------------------------------------------------------------------===//

TEST(MemoryPlanTest, LargeSchedule) {
  // K = 8, M = 256: about 1,500 buffers per rank.
  MemoryPlanInput input = uniformInput(8, 1 << 12, 3 << 12, 9 << 12);
  Schedule s = build1F1BSchedule(8, 256, 1 << 12);
  MemoryPlan plan = planMemory(s, input);
  ASSERT_TRUE(plan.ok()) << plan.error;
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(plan.ranks[r].peakKeptMicrobatches[r], 8 - r);
    EXPECT_EQ(plan.ranks[r].arenaBytes, plan.ranks[r].alignedPeakBytes);
  }
}

TEST(MemoryPlanTest, Errors) {
  Schedule schedule = buildGPipeSchedule(2, 2, 200);
  MemoryPlanInput input = twoStageInput();
  input.stages.pop_back();
  EXPECT_EQ(planMemory(schedule, input).error,
            "memory sizes cover 1 stages, the schedule has 2");
  input = twoStageInput();
  input.stages[1].backwardScratch = -1;
  EXPECT_EQ(planMemory(schedule, input).error,
            "backward scratch of stage 1 is -1, expected >= 0");
  input = twoStageInput();
  input.alignment = 48;
  EXPECT_EQ(planMemory(schedule, input).error,
            "alignment 48 is not a power of two");
  input = twoStageInput();
  Schedule broken = schedule;
  broken.ranks[1].erase(broken.ranks[1].begin() + 4); // 1B0
  MemoryPlan plan = planMemory(broken, input);
  EXPECT_FALSE(plan.ok());
  EXPECT_EQ(plan.error.rfind("cannot plan an invalid schedule: ", 0), 0u)
      << plan.error;
  EXPECT_TRUE(plan.ranks.empty());
}

// Buffered sends: each staging copy is a boundary buffer from the first
// send into it to the end of the program, one per copy; unbuffered slots
// have none. The plan stays sound (checkPlan) on every family.
TEST(MemoryPlanTest, StagingCopiesLiveFromTheirFirstSendToTheEnd) {
  Schedule schedule = build1F1BSchedule(2, 4, 200);
  MemoryPlanInput input = twoStageInput();
  input.sendBuffering.setCopies(ActionKind::SendF, 0, 2);
  MemoryPlan plan = planMemory(schedule, input);
  checkPlan(schedule, plan, input.alignment, "1f1b buffered");
  const RankMemoryPlan &rank0 = plan.ranks[0];
  int last = static_cast<int>(schedule.ranks[0].size()) - 1;
  for (int copy = 0; copy < 2; ++copy) {
    const PlannedBuffer *staged =
        findBuffer(rank0, BufferKind::StagedOutput, 0, copy);
    ASSERT_NE(staged, nullptr) << copy;
    EXPECT_EQ(staged->bytes, 200);
    EXPECT_EQ(staged->lastAction, last);
    const Action &first = schedule.ranks[0][staged->firstAction];
    EXPECT_EQ(first.kind, ActionKind::SendF);
    EXPECT_EQ(first.microbatch, copy);
  }
  EXPECT_EQ(findBuffer(rank0, BufferKind::StagedOutput, 0, 2), nullptr);
  EXPECT_EQ(findBuffer(plan.ranks[1], BufferKind::StagedInputGrad, 1, 0),
            nullptr);
  auto slot = std::find_if(
      rank0.slots.begin(), rank0.slots.end(),
      [](const PlannedSlot &s) { return s.kind == BufferKind::StagedOutput; });
  ASSERT_NE(slot, rank0.slots.end());
  EXPECT_EQ(slot->count, 2);
  EXPECT_EQ(slot->stage, 0);
  EXPECT_TRUE(isBoundaryBuffer(BufferKind::StagedInputGrad));
  // The copies add to the end of the program what they hold.
  MemoryPlan unbuffered = planMemory(schedule, twoStageInput());
  EXPECT_GE(rank0.peakBytes, unbuffered.ranks[0].peakBytes);
  for (ScheduleFamily family : getScheduleFamilies()) {
    int V = getDefaultVirtualStages(family);
    ScheduleOrError built =
        buildSchedule(family, 3, V, 6, BoundaryTraffic::uniform(3 * V, 96));
    ASSERT_TRUE(built.ok()) << built.error;
    MemoryPlanInput uniform = uniformInput(3 * V, 96, 64, 128);
    for (int stage = 0; stage < 3 * V; ++stage) {
      uniform.sendBuffering.setCopies(ActionKind::SendF, stage, 1 + stage % 2);
      uniform.sendBuffering.setCopies(ActionKind::SendB, stage, 1);
    }
    checkPlan(built.schedule, planMemory(built.schedule, uniform),
              uniform.alignment, getScheduleFamilyName(family));
  }
}

TEST(MemoryPlanTest, Names) {
  EXPECT_EQ(parseOptimizerKind("sgd"), OptimizerKind::SGD);
  EXPECT_EQ(parseOptimizerKind("sgd-momentum"), OptimizerKind::Momentum);
  EXPECT_EQ(parseOptimizerKind("SGD-Momentum"), std::nullopt);
  EXPECT_EQ(parseOptimizerKind("momentum"), OptimizerKind::Momentum);
  EXPECT_EQ(parseOptimizerKind("adamw"), OptimizerKind::Adam);
  EXPECT_EQ(parseOptimizerKind("lamb"), std::nullopt);
  EXPECT_EQ(getOptimizerStateFactor(OptimizerKind::SGD), 0);
  EXPECT_EQ(getOptimizerStateFactor(OptimizerKind::Momentum), 1);
  EXPECT_EQ(getOptimizerStateFactor(OptimizerKind::Adam), 2);
  EXPECT_STREQ(getBufferKindName(BufferKind::OutputGrad), "output_grad");
  EXPECT_STREQ(getBufferKindName(BufferKind::StagedOutput), "staged_output");
  EXPECT_STREQ(getBufferKindName(BufferKind::StagedInputGrad),
               "staged_input_grad");
  EXPECT_TRUE(isKeptActivation(BufferKind::Saved));
  EXPECT_TRUE(isBoundaryBuffer(BufferKind::InputGrad));
  EXPECT_FALSE(isPersistentBuffer(BufferKind::Scratch));
}

TEST(MemoryPlanTest, Description) {
  Schedule schedule = buildGPipeSchedule(2, 2, 200);
  MemoryPlan plan = planMemory(schedule, twoStageInput());
  std::string text = describeMemoryPlan(schedule, plan);
  EXPECT_NE(text.find("rank 0 (stage 0): arena"), std::string::npos) << text;
  EXPECT_NE(text.find("peak 2.8 KiB (2900 B)"), std::string::npos) << text;
  EXPECT_NE(text.find("at peak (action 5, 0B0)"), std::string::npos) << text;
}

} // namespace

// Inference: GPipe's forward half. The verifier takes the forwards alone and
// refuses anything else; the plan holds parameters and receive buffers, no
// gradients, optimizer state or kept activations.
TEST(MemoryPlanTest, ForwardOnlySchedule) {
  Schedule schedule =
      buildForwardSchedule(2, 3, BoundaryTraffic::uniform(2, 256));
  ASSERT_TRUE(schedule.forwardOnly);
  EXPECT_EQ(cells(schedule.ranks[0]), "0F0,0SEND_F0,0F1,0SEND_F1,0F2,0SEND_F2");
  EXPECT_EQ(cells(schedule.ranks[1]), "1RECV_F0,1F0,1RECV_F1,1F1,1RECV_F2,1F2");
  VerifyResult verified = verifySchedule(schedule);
  EXPECT_TRUE(verified.ok()) << verified.getMessage();

  MemoryPlanInput input;
  input.optimizer = OptimizerKind::Adam;
  input.alignment = 1;
  for (int s = 0; s < 2; ++s) {
    StageMemory m;
    m.paramBytes = 1000;
    m.inputBytes = 256;
    m.outputBytes = s == 0 ? 256 : 0;
    m.forwardScratch = 100;
    m.backwardScratch = 5000; // no backward runs
    input.stages.push_back(m);
  }
  MemoryPlan plan = planMemory(schedule, input);
  ASSERT_TRUE(plan.ok()) << plan.error;
  for (const RankMemoryPlan &rank : plan.ranks) {
    for (const PlannedBuffer &b : rank.buffers) {
      EXPECT_NE(b.kind, BufferKind::Gradients);
      EXPECT_NE(b.kind, BufferKind::OptimizerState);
      EXPECT_FALSE(b.isKeptAt(b.firstAction) || b.isKeptAt(b.lastAction));
    }
    EXPECT_EQ(rank.atPeak.keptActivations, 0);
    EXPECT_EQ(rank.atPeak.gradients + rank.atPeak.optimizerState, 0);
  }
  // Rank 0 at its forward: parameters, the data micro-batch, the output
  // waiting for its send and the working set.
  EXPECT_EQ(plan.ranks[0].peakBytes, 1000 + 256 + 256 + 100);
  // Rank 1: parameters, the received input and the working set.
  EXPECT_EQ(plan.ranks[1].peakBytes, 1000 + 256 + 100);

  // A backward in a forward-only schedule is refused.
  Schedule withBackward = schedule;
  withBackward.ranks[1].push_back(Action::compute(ActionKind::Backward, 1, 0));
  VerifyResult refused = verifySchedule(withBackward);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(
      refused.getMessage().find("has no place in a forward-only schedule"),
      std::string::npos)
      << refused.getMessage();
}

// An evaluation pipeline's forward half on a training placement (several
// stages per rank): every (stage, micro-batch) runs one forward, the
// verifier proves it free of deadlock for the interleaved and V-shaped
// placements, and the plan pins each stage's parameters where asked and
// places every other buffer above the reserve.
TEST(MemoryPlanTest, ForwardOnlyOnAPlacement) {
  std::vector<std::vector<int>> placements;
  for (int K = 1; K <= 4; ++K) {
    placements.push_back(getVShapePlacement(K));
    for (int V = 1; V <= 3; ++V)
      placements.push_back(getInterleavedPlacement(K, V));
  }
  for (const std::vector<int> &placement : placements)
    for (int M = 1; M <= 5; ++M) {
      int numStages = int(placement.size());
      Schedule schedule = buildForwardSchedule(
          placement, M, BoundaryTraffic::uniform(numStages, 64));
      ASSERT_TRUE(schedule.forwardOnly);
      EXPECT_EQ(schedule.stageToRank, placement);
      VerifyResult verified = verifySchedule(schedule);
      EXPECT_TRUE(verified.ok())
          << numStages << " stages, M " << M << ": " << verified.getMessage();
    }

  // Interleaved K = 2, V = 2: rank 0 holds stages 0 and 2, rank 1 stages 1
  // and 3. Parameters pinned at training-like offsets (with gaps where
  // gradients would be), the rest above a reserve of 10000 bytes.
  Schedule schedule = buildForwardSchedule(getInterleavedPlacement(2, 2), 2,
                                           BoundaryTraffic::uniform(4, 64));
  MemoryPlanInput input;
  input.alignment = 1;
  for (int s = 0; s < 4; ++s) {
    StageMemory m;
    m.paramBytes = 1000;
    m.inputBytes = 64;
    m.outputBytes = s == 3 ? 0 : 64;
    m.forwardScratch = 100;
    input.stages.push_back(m);
  }
  input.parameterOffsets = {0, 0, 2000, 2000};
  input.reservedBytes = {10000, 10000};
  MemoryPlan plan = planMemory(schedule, input);
  ASSERT_TRUE(plan.ok()) << plan.error;
  for (const RankMemoryPlan &rank : plan.ranks)
    for (const PlannedSlot &slot : rank.slots) {
      if (slot.kind == BufferKind::Parameters)
        EXPECT_EQ(slot.offset, slot.stage < 2 ? 0 : 2000);
      else if (slot.getSpan() > 0)
        EXPECT_GE(slot.offset, 10000) << getBufferKindName(slot.kind);
    }
  // A list of offsets that does not name every stage is refused.
  input.parameterOffsets = {0, 0};
  EXPECT_FALSE(planMemory(schedule, input).ok());
}
