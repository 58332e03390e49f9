//===- ScheduleVerifierTest.cpp - Schedule verifier tests -------*- C++ -*-===//
//
// Unit tests of `verifySchedule`: it accepts every generated GPipe and 1F1B
// schedule for K in 1..16 and M in 1..64; it rejects the classic 1F1B
// send/send deadlock with the wait cycle in the message; and it rejects every
// one of more than a thousand seeded mutations of valid schedules, each from
// a class of mutation that is argued below to ALWAYS make a valid schedule
// invalid. Also checks the wording of the individual diagnostics.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/ScheduleVerifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace mlir::gpipe;

namespace {

TEST(ScheduleVerifierTest, AcceptsAllGeneratedSchedules) {
  int checked = 0;
  for (int k = 1; k <= 16; ++k) {
    for (int m = 1; m <= 64; ++m) {
      for (bool oneFOneB : {false, true}) {
        Schedule s = oneFOneB ? build1F1BSchedule(k, m, 1 << 20)
                              : buildGPipeSchedule(k, m, 1 << 20);
        VerifyResult result = verifySchedule(s);
        ASSERT_TRUE(result.ok())
            << (oneFOneB ? "1F1B" : "GPipe") << " K=" << k << " M=" << m << "\n"
            << result.getMessage();
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2048);
}

TEST(ScheduleVerifierTest, ValidSummary) {
  VerifyResult result = verifySchedule(buildGPipeSchedule(2, 2, 8));
  EXPECT_TRUE(result.ok());
  EXPECT_TRUE(result.problems.empty());
  EXPECT_EQ(
      result.summary,
      "schedule is valid: 2 ranks, 2 stages, 2 micro-batches, 18 actions");
}

/// Tied copies on stages 0 and 2 of three ranks: one SUM_TIED on ranks 0
/// and 2, right before their steps; the verifier accepts it, and refuses a
/// sum after a step, a second sum and work after the sum.
TEST(ScheduleVerifierTest, TiedSumsComeBeforeTheSteps) {
  Schedule s = insertTiedSums(build1F1BSchedule(3, 4, 64), {true, false, true});
  ASSERT_TRUE(verifySchedule(s).ok()) << verifySchedule(s).getMessage();
  for (int r : {0, 2}) {
    const std::vector<Action> &program = s.ranks[r];
    ASSERT_GE(program.size(), 2u);
    EXPECT_EQ(program[program.size() - 2].kind, ActionKind::SumTied);
    EXPECT_EQ(program[program.size() - 2].stage, r);
    EXPECT_EQ(program.back().kind, ActionKind::Step);
  }
  for (const Action &a : s.ranks[1])
    EXPECT_NE(a.kind, ActionKind::SumTied);
  // Inserting again changes nothing.
  EXPECT_EQ(insertTiedSums(s, {true, false, true}), s);

  Schedule late = s;
  std::swap(late.ranks[0][late.ranks[0].size() - 2], late.ranks[0].back());
  VerifyResult lateResult = verifySchedule(late);
  EXPECT_TRUE(lateResult.has(VerifyProblemKind::Order));
  EXPECT_NE(lateResult.getMessage().find("SUM_TIED comes before the steps"),
            std::string::npos)
      << lateResult.getMessage();

  Schedule twice = s;
  twice.ranks[2].insert(twice.ranks[2].end() - 1,
                        Action::compute(ActionKind::SumTied, 2, -1));
  EXPECT_NE(verifySchedule(twice).getMessage().find("one SUM_TIED per rank"),
            std::string::npos);

  Schedule early = s;
  std::vector<Action> &r0 = early.ranks[0];
  std::rotate(r0.end() - 3, r0.end() - 2, r0.end() - 1);
  EXPECT_NE(verifySchedule(early).getMessage().find(
                "must come after all of the rank's other work"),
            std::string::npos)
      << verifySchedule(early).getMessage();
}

/// Gradient clipping: one CLIP_GRAD on every rank, after its tied sum and
/// before its steps, named by its lowest stage (interleaved: rank 0 holds
/// stages 0 and 3); the verifier refuses a rank without one, a second one,
/// one after a step and work after it.
TEST(ScheduleVerifierTest, ClipGradOnEveryRankBeforeTheSteps) {
  ScheduleOrError built = buildSchedule(ScheduleFamily::Interleaved1F1B, 3, 2,
                                        6, BoundaryTraffic::uniform(6, 64));
  ASSERT_TRUE(built.ok()) << built.error;
  Schedule s = insertGradientClipping(
      insertTiedSums(built.schedule, {true, false, false, false, false, true}));
  ASSERT_TRUE(verifySchedule(s).ok()) << verifySchedule(s).getMessage();
  for (int r = 0; r < 3; ++r) {
    const std::vector<Action> &program = s.ranks[r];
    auto clip = std::find_if(program.begin(), program.end(), [](auto &a) {
      return a.kind == ActionKind::ClipGrad;
    });
    ASSERT_NE(clip, program.end());
    EXPECT_EQ(clip->stage, r);
    EXPECT_EQ(
        std::count_if(program.begin(), program.end(),
                      [](auto &a) { return a.kind == ActionKind::ClipGrad; }),
        1);
    for (auto it = clip + 1; it != program.end(); ++it)
      EXPECT_EQ(it->kind, ActionKind::Step);
    if (r != 1)
      EXPECT_EQ((clip - 1)->kind, ActionKind::SumTied);
  }
  EXPECT_EQ(insertGradientClipping(s), s);

  Schedule missing = s;
  std::vector<Action> &r1 = missing.ranks[1];
  r1.erase(std::find_if(r1.begin(), r1.end(), [](auto &a) {
    return a.kind == ActionKind::ClipGrad;
  }));
  EXPECT_NE(verifySchedule(missing).getMessage().find(
                "rank 1 has no CLIP_GRAD while rank 0 clips"),
            std::string::npos)
      << verifySchedule(missing).getMessage();

  Schedule twice = s;
  twice.ranks[2].insert(twice.ranks[2].end() - 1,
                        Action::compute(ActionKind::ClipGrad, 2, -1));
  EXPECT_NE(verifySchedule(twice).getMessage().find("one CLIP_GRAD per rank"),
            std::string::npos);

  Schedule late = s;
  std::vector<Action> &r2 = late.ranks[2];
  auto clip = std::find_if(r2.begin(), r2.end(), [](auto &a) {
    return a.kind == ActionKind::ClipGrad;
  });
  std::iter_swap(clip, r2.end() - 1);
  EXPECT_NE(verifySchedule(late).getMessage().find(
                "CLIP_GRAD comes before the steps"),
            std::string::npos)
      << verifySchedule(late).getMessage();

  Schedule work = s;
  work.ranks[1].push_back(Action::compute(ActionKind::ReduceGrad, 1, -1));
  EXPECT_FALSE(verifySchedule(work).ok());
}

/// 1F1B with each receive right before its consumer and each send right
/// after its producer: in the steady state stage k sends an activation to
/// k+1 while k+1 sends a gradient to k, and both block.
Schedule naive1F1B(int k, int m) {
  Schedule s = build1F1BSchedule(k, m, 64);
  for (int r = 0; r < k; ++r) {
    std::vector<Action> program;
    for (const Action &a : s.ranks[r]) {
      if (isTransferKind(a.kind))
        continue;
      int mb = a.microbatch;
      if (a.kind == ActionKind::Forward && r > 0)
        program.push_back(
            Action::comm(ActionKind::RecvF, r, mb, r - 1, 64, "f32"));
      if (a.kind == ActionKind::Backward && r + 1 < k)
        program.push_back(
            Action::comm(ActionKind::RecvB, r, mb, r + 1, 64, "f32"));
      program.push_back(a);
      if (a.kind == ActionKind::Forward && r + 1 < k)
        program.push_back(
            Action::comm(ActionKind::SendF, r, mb, r + 1, 64, "f32"));
      if (a.kind == ActionKind::Backward && r > 0)
        program.push_back(
            Action::comm(ActionKind::SendB, r, mb, r - 1, 64, "f32"));
    }
    s.ranks[r] = program;
  }
  return s;
}

TEST(ScheduleVerifierTest, NaiveOneFOneBDeadlocks) {
  VerifyResult result = verifySchedule(naive1F1B(4, 8));
  ASSERT_FALSE(result.ok());
  // Static checks pass: only the simulation finds it.
  EXPECT_FALSE(result.has(VerifyProblemKind::Order));
  EXPECT_FALSE(result.has(VerifyProblemKind::Unmatched));
  ASSERT_TRUE(result.has(VerifyProblemKind::Deadlock));
  EXPECT_EQ(result.problems[0].message,
            "deadlock: rank 2 waits for rank 3 (action 5, 2SEND_F1 to rank "
            "3), rank 3 waits for rank 2 (action 3, 3SEND_B0 to rank 2)");
  EXPECT_EQ(result.problems[1].message,
            "blocked behind the stuck ranks above: rank 0 waits for rank 1 "
            "(action 7, 0SEND_F3 to rank 1), rank 1 waits for rank 2 (action "
            "8, 1SEND_F2 to rank 2)");
  EXPECT_EQ(result.summary, "schedule is invalid: 2 problems (2 deadlock)");
  // The same naive order is fine for GPipe-like shapes without overlap.
  EXPECT_TRUE(verifySchedule(naive1F1B(2, 1)).ok());
}

TEST(ScheduleVerifierTest, UnmatchedMessages) {
  Schedule s = buildGPipeSchedule(2, 4, 64);
  // Drop 0SEND_F0 (rank 0 action 1).
  ASSERT_EQ(toString(s.ranks[0][1]), "0SEND_F0");
  s.ranks[0].erase(s.ranks[0].begin() + 1);
  VerifyResult result = verifySchedule(s);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.problems[0].kind, VerifyProblemKind::Unmatched);
  EXPECT_EQ(result.problems[0].message,
            "rank 1 action 0 (1RECV_F0 from rank 0) has no matching send (no "
            "0SEND_F0 on rank 0)");
  EXPECT_EQ(result.problems[1].message,
            "deadlock: rank 0 waits for rank 1 (action 2, 0SEND_F1 to rank "
            "1), rank 1 waits for rank 0 (action 0, 1RECV_F0 from rank 0)");

  // A receive left over at the end: the partner has finished.
  Schedule extra = buildGPipeSchedule(2, 1, 64);
  extra.ranks[1].insert(extra.ranks[1].end() - 1,
                        Action::comm(ActionKind::RecvF, 1, 0, 0, 64, "f32"));
  result = verifySchedule(extra);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.problems[0].message,
            "rank 0 runs 0SEND_F0 once (action 1) and rank 1 runs 1RECV_F0 2 "
            "times (actions 0 and 4); expected exactly one of each");
  EXPECT_EQ(result.problems[1].message,
            "rank 1 action 4 (1RECV_F0 from rank 0) waits forever: rank 0 has "
            "finished its program without a matching send");
}

TEST(ScheduleVerifierTest, StaticMessages) {
  auto firstProblem = [](const Schedule &s) {
    VerifyResult result = verifySchedule(s);
    return result.problems.empty() ? std::string("<valid>")
                                   : result.problems[0].message;
  };
  Schedule base = buildGPipeSchedule(3, 2, 64);

  Schedule s = base; // receive after the forward that needs it
  ASSERT_EQ(toString(s.ranks[1][0]), "1RECV_F0");
  ASSERT_EQ(toString(s.ranks[1][1]), "1F0");
  std::swap(s.ranks[1][0], s.ranks[1][1]);
  EXPECT_EQ(firstProblem(s), "rank 1 action 0 (1F0) runs before its input "
                             "arrives at rank 1 action 1 (1RECV_F0 from rank "
                             "0)");

  s = base;
  s.ranks[1][0].peer = 2;
  EXPECT_EQ(firstProblem(s), "rank 1 action 0 (1RECV_F0 from rank 2): expected "
                             "peer rank 0, the rank of stage 0");

  s = base;
  s.ranks[0][1].bytes = 65;
  EXPECT_EQ(firstProblem(s),
            "rank 0 action 1 (0SEND_F0 to rank 1) sends 65 bytes of f32 but "
            "rank 1 action 0 (1RECV_F0 from rank 0) receives 64 bytes of f32");

  s = base;
  s.ranks[2].erase(s.ranks[2].begin() + 1); // 2F0
  EXPECT_EQ(firstProblem(s), "stage 2 micro-batch 0 has no forward; its "
                             "first other action is at rank 2 action 3 (2B0)");

  s = base;
  s.ranks[2].push_back(Action::compute(ActionKind::Forward, 2, 1));
  EXPECT_EQ(firstProblem(s),
            "stage 2 micro-batch 1 has 2 forwards (rank 2 actions 3 and 9)");

  s = base; // step before the last backward
  Action step = s.ranks[0].back();
  s.ranks[0].pop_back();
  s.ranks[0].insert(s.ranks[0].end() - 1, step);
  EXPECT_EQ(firstProblem(s), "rank 0 action 7 (0STEP) updates parameters "
                             "before the backward at rank 0 action 8 (0B1)");

  s = base;
  s.ranks[0].push_back(Action::compute(ActionKind::Forward, 1, 0));
  EXPECT_EQ(firstProblem(s), "rank 0 action 9 (1F0): stage 1 runs on rank 1");

  s = base;
  s.ranks[2][0].microbatch = 7;
  EXPECT_EQ(firstProblem(s), "rank 2 action 0 (2RECV_F7 from rank 1): "
                             "micro-batch 7 out of range for 2 micro-batches");

  s = base;
  s.stageToRank = {0, 1};
  EXPECT_EQ(firstProblem(s), "stage map has 2 entries for 3 stages");

  s = base;
  s.ranks.clear();
  EXPECT_EQ(firstProblem(s), "expected at least one rank, got 0");

  s = base; // a send between two stages on one rank
  s.stageToRank = {0, 0, 1};
  s.ranks.pop_back();
  EXPECT_EQ(firstProblem(s), "rank 0 action 1 (0SEND_F0 to rank 1): stages 0 "
                             "and 1 both run on rank 0 and hand data over in "
                             "memory");
}

TEST(ScheduleVerifierTest, HugeClaimedShapeIsRejectedCheaply) {
  // The claimed shape must not size the verifier's tables.
  Schedule s = buildGPipeSchedule(2, 2, 8);
  s.numMicrobatches = 1 << 30;
  VerifyResult result = verifySchedule(s);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.problems[0].message,
            "2 stages x 1073741824 micro-batches need at least 4294967296 "
            "forward and backward actions, the schedule has 18 actions in "
            "all");
  ScheduleOrError full = insertCommunication(s, BoundaryTraffic{});
  EXPECT_EQ(full.error, "2 stages x 1073741824 micro-batches need that many "
                        "forwards, the compute order has 10 actions in all");
  ScheduleOrError parsed = parseCSV("0F0\n", 1 << 30, 1);
  EXPECT_EQ(parsed.error, "expected every one of 1073741824 stages on some "
                          "rank, the schedule has 1 actions in all");
}

TEST(ScheduleVerifierTest, GarbageDoesNotCrash) {
  // Random programs with out-of-range stages, micro-batches and peers: the
  // verifier must report, never crash; a self-peer is a one-rank cycle.
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  int accepted = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    Schedule s;
    s.numStages = pick(1, 4);
    s.numMicrobatches = pick(1, 3);
    int numRanks = pick(1, 4);
    s.ranks.resize(numRanks);
    for (int st = 0; st < s.numStages; ++st)
      s.stageToRank.push_back(pick(-1, numRanks));
    for (std::vector<Action> &program : s.ranks) {
      for (int n = pick(0, 12); n > 0; --n) {
        Action a =
            Action::comm(static_cast<ActionKind>(pick(0, 10)),
                         pick(-1, s.numStages), pick(-1, 3), pick(-1, numRanks),
                         pick(-1, 2), pick(0, 1) ? "f32" : "");
        program.push_back(a);
      }
    }
    VerifyResult result = verifySchedule(s);
    EXPECT_EQ(result.ok(), result.problems.empty());
    EXPECT_FALSE(result.summary.empty());
    accepted += result.ok();
  }
  EXPECT_LT(accepted, 10);

  Schedule self = buildGPipeSchedule(2, 1, 8);
  self.ranks[0][1].peer = 0; // 0SEND_F0 to itself
  VerifyResult result = verifySchedule(self);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.has(VerifyProblemKind::Deadlock)) << result.getMessage();
}

TEST(ScheduleVerifierTest, ReportsAtMostAFewProblems) {
  Schedule s = buildGPipeSchedule(8, 32, 64);
  for (std::vector<Action> &program : s.ranks)
    for (Action &a : program)
      if (isTransferKind(a.kind))
        a.dtype = "f16";
  for (Action &a : s.ranks[3])
    if (isRecvKind(a.kind))
      a.dtype = "f32";
  VerifyResult result = verifySchedule(s);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(static_cast<int>(result.problems.size()), kMaxReportedProblems);
  // Rank 3 receives 32 activations and 32 gradients.
  EXPECT_EQ(result.numProblems, 64);
  EXPECT_EQ(result.summary, "schedule is invalid: 64 problems (64 "
                            "mismatch), first 16 shown");
}

//===----------------------------------------------------------------------===//
// Mutations
//===----------------------------------------------------------------------===//
//
// Each mutation starts from a VALID generated schedule, in which every
// transfer has exactly one send and one receive, every (stage, micro-batch)
// one F and one B, and the rendezvous run completes. Why each class always
// yields an invalid schedule:
//
//  DropComm            the transfer of the dropped send/receive now has 0
//                      sends and 1 receive (or the reverse): unmatched.
//  DuplicateComm       that transfer has 2 sends (or receives) and 1 of the
//                      other: unmatched.
//  ChangeMicrobatch    the transfer (dir, stage, mb) loses its send/receive
//                      and (dir, stage, mb') gets a second one (or mb' is out
//                      of range): unmatched or malformed.
//  ChangePeer          the peer of a send/receive is fixed by the stage map
//                      (the adjacent stage's rank); any other value is
//                      malformed.
//  ChangeBytes/Dtype   the partner keeps the old payload: mismatch.
//  RecvAfterConsumer   a RecvF/RecvB moved right after the F/B that consumes
//                      it: the consumer reads data not yet received: order.
//  SendBeforeProducer  a SendF/SendB moved right before the F/B producing it:
//                      order.
//  SwapSamePeer        two send/receive actions X before Y on rank r, both
//                      with peer p, exchange places. In the valid original
//                      X's rendezvous happens before Y's (r is sequential),
//                      so p's partner of X precedes p's partner of Y in p's
//                      program. After the swap r first waits at Y, whose
//                      partner p reaches only after completing X's partner,
//                      which needs r at X, which r reaches only after Y: a
//                      wait cycle, so the run cannot complete: deadlock. (This
//                      covers swapping a rank's SendF and RecvB pair.)
//  DropCompute         a (stage, mb) loses its only F or B: coverage.
//  DuplicateCompute    a (stage, mb) gets a second F or B: coverage.
//  StepEarly           a Step moved before the last backward of its stage:
//                      order.

enum class Mutation {
  DropComm,
  DuplicateComm,
  ChangeMicrobatch,
  ChangePeer,
  ChangeBytes,
  ChangeDtype,
  RecvAfterConsumer,
  SendBeforeProducer,
  SwapSamePeer,
  DropCompute,
  DuplicateCompute,
  StepEarly,
};
constexpr int kNumMutations = 12;

const char *getMutationName(Mutation mutation) {
  static const char *names[] = {
      "DropComm",          "DuplicateComm",      "ChangeMicrobatch",
      "ChangePeer",        "ChangeBytes",        "ChangeDtype",
      "RecvAfterConsumer", "SendBeforeProducer", "SwapSamePeer",
      "DropCompute",       "DuplicateCompute",   "StepEarly"};
  return names[static_cast<int>(mutation)];
}

struct Mutator {
  std::mt19937 rng;

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

  /// Positions (rank, index) of actions satisfying `pred`.
  template <typename Pred>
  std::vector<std::pair<int, int>> find(const Schedule &s, Pred pred) {
    std::vector<std::pair<int, int>> out;
    for (int r = 0; r < s.getNumRanks(); ++r)
      for (int i = 0, e = static_cast<int>(s.ranks[r].size()); i < e; ++i)
        if (pred(s.ranks[r][i]))
          out.push_back({r, i});
    return out;
  }

  static int indexOf(const std::vector<Action> &program, ActionKind kind,
                     int stage, int mb) {
    for (int i = 0, e = static_cast<int>(program.size()); i < e; ++i)
      if (program[i].kind == kind && program[i].stage == stage &&
          program[i].microbatch == mb)
        return i;
    return -1;
  }

  static void move(std::vector<Action> &program, int from, int to) {
    Action a = program[from];
    program.erase(program.begin() + from);
    program.insert(program.begin() + to, a);
  }

  /// Applies `mutation` to `s`; false if it does not apply to this schedule.
  bool apply(Schedule &s, Mutation mutation) {
    auto comms =
        find(s, [](const Action &a) { return isTransferKind(a.kind); });
    if (comms.empty())
      return false;
    auto [r, i] = comms[pick(static_cast<int>(comms.size()))];
    std::vector<Action> &program = s.ranks[r];
    switch (mutation) {
    case Mutation::DropComm:
      program.erase(program.begin() + i);
      return true;
    case Mutation::DuplicateComm:
      program.insert(program.begin() + i + 1, program[i]);
      return true;
    case Mutation::ChangeMicrobatch: {
      int m = s.numMicrobatches;
      int &mb = program[i].microbatch;
      mb = m == 1 ? 1 : (mb + 1 + pick(m - 1)) % m;
      return true;
    }
    case Mutation::ChangePeer: {
      int old = program[i].peer;
      int peer = old;
      while (peer == old)
        peer = pick(s.getNumRanks() + 2) - 1; // -1 .. numRanks
      program[i].peer = peer;
      return true;
    }
    case Mutation::ChangeBytes:
      program[i].bytes += 1 + pick(1000);
      return true;
    case Mutation::ChangeDtype:
      program[i].dtype = program[i].dtype == "bf16" ? "f32" : "bf16";
      return true;
    case Mutation::RecvAfterConsumer: {
      auto recvs = find(s, [](const Action &a) { return isRecvKind(a.kind); });
      auto [rr, ri] = recvs[pick(static_cast<int>(recvs.size()))];
      std::vector<Action> &p = s.ranks[rr];
      const Action &recv = p[ri];
      int consumer =
          indexOf(p,
                  recv.kind == ActionKind::RecvF ? ActionKind::Forward
                                                 : ActionKind::Backward,
                  recv.stage, recv.microbatch);
      if (consumer < ri)
        return false;        // cannot happen in a valid schedule
      move(p, ri, consumer); // lands right after the consumer
      return true;
    }
    case Mutation::SendBeforeProducer: {
      auto sends = find(s, [](const Action &a) { return isSendKind(a.kind); });
      auto [sr, si] = sends[pick(static_cast<int>(sends.size()))];
      std::vector<Action> &p = s.ranks[sr];
      const Action &send = p[si];
      int producer =
          indexOf(p,
                  send.kind == ActionKind::SendF ? ActionKind::Forward
                                                 : ActionKind::Backward,
                  send.stage, send.microbatch);
      if (producer < 0 || producer > si)
        return false;
      move(p, si, producer); // lands right before the producer
      return true;
    }
    case Mutation::SwapSamePeer: {
      std::vector<int> partners;
      for (int j = 0, e = static_cast<int>(program.size()); j < e; ++j)
        if (j != i && isTransferKind(program[j].kind) &&
            program[j].peer == program[i].peer)
          partners.push_back(j);
      if (partners.empty())
        return false;
      std::swap(program[i],
                program[partners[pick(static_cast<int>(partners.size()))]]);
      return true;
    }
    case Mutation::DropCompute:
    case Mutation::DuplicateCompute: {
      auto computes = find(s, [](const Action &a) {
        return a.kind == ActionKind::Forward || a.kind == ActionKind::Backward;
      });
      auto [cr, ci] = computes[pick(static_cast<int>(computes.size()))];
      std::vector<Action> &p = s.ranks[cr];
      if (mutation == Mutation::DropCompute)
        p.erase(p.begin() + ci);
      else
        p.insert(p.begin() + ci + 1, p[ci]);
      return true;
    }
    case Mutation::StepEarly: {
      int rank = pick(s.getNumRanks());
      std::vector<Action> &p = s.ranks[rank];
      int step = static_cast<int>(p.size()) - 1;
      if (p[step].kind != ActionKind::Step)
        return false;
      int lastBackward = -1;
      for (int j = 0; j < step; ++j)
        if (p[j].kind == ActionKind::Backward)
          lastBackward = j;
      move(p, step, pick(lastBackward + 1)); // somewhere before it
      return true;
    }
    }
    return false;
  }
};

TEST(ScheduleVerifierTest, RejectsEveryMutation) {
  Mutator mutator{std::mt19937(20240611)};
  int rejected = 0;
  int perClass[kNumMutations] = {};
  for (int trial = 0; trial < 1200; ++trial) {
    Mutation mutation = static_cast<Mutation>(trial % kNumMutations);
    int k = 2 + mutator.pick(7);  // 2..8
    int m = 1 + mutator.pick(12); // 1..12
    ScheduleOptions options;
    options.recompute = mutator.pick(4) == 0;
    BoundaryTraffic traffic = BoundaryTraffic::uniform(k, 256);
    Schedule s = mutator.pick(2) ? build1F1BSchedule(k, m, traffic, options)
                                 : buildGPipeSchedule(k, m, traffic, options);
    ASSERT_TRUE(verifySchedule(s).ok());
    Schedule mutated = s;
    if (!mutator.apply(mutated, mutation))
      continue;
    ASSERT_NE(mutated, s);
    VerifyResult result = verifySchedule(mutated);
    ASSERT_FALSE(result.ok())
        << "trial " << trial << " " << getMutationName(mutation) << " K=" << k
        << " M=" << m << " accepted:\n"
        << toCSV(mutated);
    EXPECT_FALSE(result.problems.empty());
    ++rejected;
    ++perClass[static_cast<int>(mutation)];
  }
  EXPECT_GE(rejected, 1000);
  for (int c = 0; c < kNumMutations; ++c)
    EXPECT_GE(perClass[c], 50) << getMutationName(static_cast<Mutation>(c));
}

TEST(ScheduleVerifierTest, SwapSamePeerIsADeadlock) {
  // The argued outcome of SwapSamePeer: swapping a rank's SendF and RecvB
  // (both with the next rank) passes every static check and deadlocks.
  Schedule s = build1F1BSchedule(4, 8, 64);
  std::vector<Action> &rank1 = s.ranks[1];
  int send = -1;
  for (int i = 0; i + 1 < static_cast<int>(rank1.size()); ++i)
    if (rank1[i].kind == ActionKind::SendF &&
        rank1[i + 1].kind == ActionKind::RecvB)
      send = i;
  ASSERT_GE(send, 0);
  std::swap(rank1[send], rank1[send + 1]);
  VerifyResult result = verifySchedule(s);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.problems[0].kind, VerifyProblemKind::Deadlock)
      << result.getMessage();
  EXPECT_NE(result.problems[0].message.find("rank 1 waits for rank 2"),
            std::string::npos)
      << result.getMessage();
}

} // namespace
