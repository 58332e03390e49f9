//===- ScheduleTest.cpp - Pipeline schedule tests ---------------*- C++ -*-===//
//
// Unit tests of the schedule data model: the GPipe and 1F1B generators (shape,
// warm-up, identical compute actions in another order), communication
// placement for interleaved, split-backward and compute-only schedules, and
// the PyTorch-compatible CSV writer and reader (round trips, PyTorch files,
// malformed cells).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Schedule.h"
#include "gpipe/Analysis/ScheduleVerifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

using namespace mlir::gpipe;

namespace {

/// The compute actions of a schedule as a sorted multiset.
std::vector<std::tuple<int, int, int, int>>
computeMultiset(const Schedule &schedule) {
  std::vector<std::tuple<int, int, int, int>> actions;
  for (int r = 0; r < schedule.getNumRanks(); ++r)
    for (const Action &a : schedule.ranks[r])
      if (isComputeKind(a.kind) || a.kind == ActionKind::Step)
        actions.push_back({r, static_cast<int>(a.kind), a.stage, a.microbatch});
  std::sort(actions.begin(), actions.end());
  return actions;
}

std::vector<Action> computeOnly(const std::vector<Action> &program) {
  std::vector<Action> out;
  for (const Action &a : program)
    if (!isTransferKind(a.kind))
      out.push_back(a);
  return out;
}

std::string cells(const std::vector<Action> &program) {
  std::string text;
  for (const Action &a : program)
    text += (text.empty() ? "" : ",") + toString(a);
  return text;
}

TEST(ScheduleTest, ActionSpelling) {
  EXPECT_EQ(toString(Action::compute(ActionKind::Forward, 0, 3)), "0F3");
  EXPECT_EQ(toString(Action::compute(ActionKind::Backward, 2, 0)), "2B0");
  EXPECT_EQ(toString(Action::compute(ActionKind::BackwardInput, 1, 4)), "1I4");
  EXPECT_EQ(toString(Action::compute(ActionKind::BackwardWeight, 1, 4)), "1W4");
  EXPECT_EQ(toString(Action::compute(ActionKind::Recompute, 1, 2)), "1R2");
  EXPECT_EQ(toString(Action::step(3)), "3STEP");
  EXPECT_EQ(toString(Action::reduceGrad(3)), "3REDUCE_GRAD");
  Action send = Action::comm(ActionKind::SendF, 1, 3, 2, 64, "f32");
  EXPECT_EQ(toString(send), "1SEND_F3");
  EXPECT_EQ(describe(send), "1SEND_F3 to rank 2");
  EXPECT_EQ(describe(Action::comm(ActionKind::RecvB, 0, 2, 1, 64, "f32")),
            "0RECV_B2 from rank 1");
}

TEST(ScheduleTest, GPipeShape) {
  Schedule s = buildGPipeSchedule(3, 4, 128);
  ASSERT_EQ(s.numStages, 3);
  ASSERT_EQ(s.numMicrobatches, 4);
  EXPECT_EQ(s.stageToRank, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(s.getNumRanks(), 3);
  // Fill-drain: all forwards, then all backwards, then the step.
  EXPECT_EQ(cells(computeOnly(s.ranks[1])),
            "1F0,1F1,1F2,1F3,1B0,1B1,1B2,1B3,1STEP");
  // Rank 0: a send after each forward, a receive before each backward.
  EXPECT_EQ(cells(s.ranks[0]), "0F0,0SEND_F0,0F1,0SEND_F1,0F2,0SEND_F2,0F3,"
                               "0SEND_F3,0RECV_B0,0B0,0RECV_B1,0B1,0RECV_B2,"
                               "0B2,0RECV_B3,0B3,0STEP");
  for (const Action &a : s.ranks[1]) {
    if (a.kind == ActionKind::SendF || a.kind == ActionKind::RecvB) {
      EXPECT_EQ(a.peer, 2);
    }
    if (a.kind == ActionKind::RecvF || a.kind == ActionKind::SendB) {
      EXPECT_EQ(a.peer, 0);
    }
    if (isTransferKind(a.kind)) {
      EXPECT_EQ(a.bytes, 128);
      EXPECT_EQ(a.dtype, "f32");
    } else {
      EXPECT_EQ(a.peer, -1);
    }
  }
  EXPECT_EQ(s.ranks[2].back(), Action::step(2));
}

TEST(ScheduleTest, OneFOneBShape) {
  Schedule s = build1F1BSchedule(4, 8, 64);
  // Warm-up of K-k-1 forwards, then alternate, then drain.
  EXPECT_EQ(cells(computeOnly(s.ranks[0])),
            "0F0,0F1,0F2,0F3,0B0,0F4,0B1,0F5,0B2,0F6,0B3,0F7,0B4,0B5,0B6,0B7,"
            "0STEP");
  EXPECT_EQ(cells(computeOnly(s.ranks[2])),
            "2F0,2F1,2B0,2F2,2B1,2F3,2B2,2F4,2B3,2F5,2B4,2F6,2B5,2F7,2B6,2B7,"
            "2STEP");
  EXPECT_EQ(cells(computeOnly(s.ranks[3])),
            "3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,3F4,3B4,3F5,3B5,3F6,3B6,3F7,3B7,"
            "3STEP");
  // Fewer micro-batches than the warm-up: min(K-k-1, M) forwards.
  Schedule few = build1F1BSchedule(4, 2, 64);
  EXPECT_EQ(cells(computeOnly(few.ranks[0])), "0F0,0F1,0B0,0B1,0STEP");
}

TEST(ScheduleTest, OneFOneBSteadyStateExchangeOrder) {
  // On every boundary the activation crosses before the gradient: the
  // upstream rank sends F then receives B, the downstream rank receives F
  // then sends B, so the two ends agree (no send/send standoff).
  Schedule s = build1F1BSchedule(4, 8, 64);
  std::string rank1 = cells(s.ranks[1]);
  EXPECT_NE(rank1.find("1F3,1SEND_F3,1RECV_B1,1B1,1RECV_F4,1SEND_B1,1F4"),
            std::string::npos)
      << rank1;
  std::string rank0 = cells(s.ranks[0]);
  EXPECT_NE(rank0.find("0F4,0SEND_F4,0RECV_B1,0B1"), std::string::npos)
      << rank0;
}

TEST(ScheduleTest, SameComputeActionsForAllShapes) {
  for (int k = 1; k <= 16; ++k) {
    for (int m = 1; m <= 64; m += (m < 8 ? 1 : 7)) {
      Schedule gpipe = buildGPipeSchedule(k, m, 16);
      Schedule ofob = build1F1BSchedule(k, m, 16);
      auto a = computeMultiset(gpipe);
      ASSERT_EQ(a, computeMultiset(ofob)) << "K=" << k << " M=" << m;
      // One F and one B per (stage, micro-batch) plus one step per stage.
      EXPECT_EQ(static_cast<int>(a.size()), k * (2 * m + 1));
      // Only the order differs (for K > 1).
      if (k > 1 && m > 1) {
        EXPECT_NE(gpipe.ranks, ofob.ranks);
      }
    }
  }
}

TEST(ScheduleTest, RecomputeOption) {
  ScheduleOptions options;
  options.recompute = true;
  Schedule s =
      build1F1BSchedule(3, 4, BoundaryTraffic::uniform(3, 32), options);
  EXPECT_EQ(cells(computeOnly(s.ranks[2])),
            "2F0,2R0,2B0,2F1,2R1,2B1,2F2,2R2,2B2,2F3,2R3,2B3,2STEP");
  Schedule g =
      buildGPipeSchedule(3, 4, BoundaryTraffic::uniform(3, 32), options);
  EXPECT_EQ(computeMultiset(s), computeMultiset(g));
  EXPECT_TRUE(verifySchedule(s).ok()) << verifySchedule(s).getMessage();
  EXPECT_TRUE(verifySchedule(g).ok()) << verifySchedule(g).getMessage();
}

TEST(ScheduleTest, PerBoundaryTraffic) {
  BoundaryTraffic traffic;
  traffic.bytes = {100, 200};
  traffic.dtype = "bf16";
  Schedule s = buildGPipeSchedule(3, 2, traffic);
  for (const std::vector<Action> &program : s.ranks) {
    for (const Action &a : program) {
      if (!isTransferKind(a.kind))
        continue;
      int boundary =
          (a.kind == ActionKind::SendF || a.kind == ActionKind::RecvB)
              ? a.stage
              : a.stage - 1;
      EXPECT_EQ(a.bytes, boundary == 0 ? 100 : 200) << describe(a);
      EXPECT_EQ(a.dtype, "bf16");
    }
  }
  EXPECT_TRUE(verifySchedule(s).ok());
}

TEST(ScheduleTest, BadShapesGiveEmptySchedules) {
  EXPECT_EQ(buildGPipeSchedule(0, 4, 8).getNumRanks(), 0);
  EXPECT_EQ(build1F1BSchedule(4, 0, 8).getNumRanks(), 0);
  EXPECT_EQ(build1F1BSchedule(-3, 2, 8).getNumRanks(), 0);
  EXPECT_FALSE(verifySchedule(buildGPipeSchedule(0, 4, 8)).ok());
  ScheduleOptions bad;
  bad.forwardTicks = 0;
  EXPECT_EQ(buildGPipeSchedule(2, 2, BoundaryTraffic::uniform(2, 8), bad)
                .getNumRanks(),
            0);
}

//===----------------------------------------------------------------------===//
// insertCommunication: shapes the generators do not make yet
//===----------------------------------------------------------------------===//

/// Interleaved GPipe: 2*R stages, stage s on rank s % R, each rank runs its
/// first stage's forwards, its second's, then backwards in reverse.
Schedule interleavedComputeOrder(int numRanks, int numMicrobatches) {
  Schedule s;
  s.numStages = 2 * numRanks;
  s.numMicrobatches = numMicrobatches;
  for (int st = 0; st < s.numStages; ++st)
    s.stageToRank.push_back(st % numRanks);
  s.ranks.resize(numRanks);
  for (int r = 0; r < numRanks; ++r) {
    for (int st : {r, r + numRanks})
      for (int mb = 0; mb < numMicrobatches; ++mb)
        s.ranks[r].push_back(Action::compute(ActionKind::Forward, st, mb));
    for (int st : {r + numRanks, r})
      for (int mb = 0; mb < numMicrobatches; ++mb)
        s.ranks[r].push_back(Action::compute(ActionKind::Backward, st, mb));
    s.ranks[r].push_back(Action::step(r + numRanks));
    s.ranks[r].push_back(Action::step(r));
  }
  return s;
}

TEST(ScheduleTest, InterleavedCommunication) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (int m = 1; m <= 6; ++m) {
      ScheduleOrError full =
          insertCommunication(interleavedComputeOrder(ranks, m),
                              BoundaryTraffic::uniform(2 * ranks, 8));
      ASSERT_TRUE(full.ok()) << full.error;
      VerifyResult v = verifySchedule(full.schedule);
      EXPECT_TRUE(v.ok()) << "R=" << ranks << " M=" << m << "\n"
                          << v.getMessage();
    }
  }
  // Two stages on one rank hand over in memory: no send/receive at all.
  ScheduleOrError one = insertCommunication(interleavedComputeOrder(1, 3),
                                            BoundaryTraffic::uniform(2, 8));
  ASSERT_TRUE(one.ok());
  for (const Action &a : one.schedule.ranks[0])
    EXPECT_FALSE(isTransferKind(a.kind)) << describe(a);
  // With two ranks, stage 1 (rank 1) feeds stage 2 (rank 0) back.
  ScheduleOrError two = insertCommunication(interleavedComputeOrder(2, 2),
                                            BoundaryTraffic::uniform(4, 8));
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two.schedule.getStagesOfRank(0), (std::vector<int>{0, 2}));
  std::string rank0 = cells(two.schedule.ranks[0]);
  EXPECT_NE(rank0.find("2RECV_F0"), std::string::npos) << rank0;
}

TEST(ScheduleTest, SplitBackwardCommunication) {
  // Zero-bubble style 1F1B: the backward split into I (sends the gradient
  // upstream) and W, with every W deferred to the drain.
  for (int k = 1; k <= 6; ++k) {
    for (int m = 1; m <= 8; ++m) {
      Schedule order = build1F1BSchedule(k, m, 0);
      for (std::vector<Action> &program : order.ranks) {
        std::vector<Action> split, weights;
        for (const Action &a : computeOnly(program)) {
          if (a.kind == ActionKind::Backward) {
            split.push_back(Action::compute(ActionKind::BackwardInput, a.stage,
                                            a.microbatch));
            weights.push_back(Action::compute(ActionKind::BackwardWeight,
                                              a.stage, a.microbatch));
          } else if (a.kind == ActionKind::Step) {
            split.insert(split.end(), weights.begin(), weights.end());
            split.push_back(Action::reduceGrad(a.stage));
            split.push_back(a);
          } else {
            split.push_back(a);
          }
        }
        program = split;
      }
      ScheduleOrError full =
          insertCommunication(order, BoundaryTraffic::uniform(k, 8));
      ASSERT_TRUE(full.ok()) << full.error;
      VerifyResult v = verifySchedule(full.schedule);
      EXPECT_TRUE(v.ok()) << "K=" << k << " M=" << m << "\n" << v.getMessage();
      // The gradient goes upstream right after I, before any W.
      if (k > 1) {
        std::string rank1 = cells(full.schedule.ranks[1]);
        EXPECT_LT(rank1.find("1SEND_B0"), rank1.find("1W0")) << rank1;
      }
    }
  }
}

TEST(ScheduleTest, InsertCommunicationErrors) {
  Schedule order = buildGPipeSchedule(2, 2, 0);
  for (std::vector<Action> &program : order.ranks)
    program = computeOnly(program);

  Schedule swapped = order; // B before its F on the same rank
  std::swap(swapped.ranks[1][0], swapped.ranks[1][2]);
  ScheduleOrError result =
      insertCommunication(swapped, BoundaryTraffic::uniform(2, 8));
  EXPECT_EQ(result.error,
            "compute order cannot run: rank 1 action 0 (1B0) waits for 1F0 "
            "(rank 1 action 2), which comes later on the same rank");

  Schedule missing = order;
  missing.ranks[0].erase(missing.ranks[0].begin()); // drop 0F0
  result = insertCommunication(missing, BoundaryTraffic::uniform(2, 8));
  EXPECT_EQ(result.error,
            "rank 0 action 1 (0B0) needs 0F0, which no rank runs");

  Schedule twice = order;
  twice.ranks[0].insert(twice.ranks[0].begin(),
                        Action::compute(ActionKind::Forward, 0, 1));
  result = insertCommunication(twice, BoundaryTraffic::uniform(2, 8));
  EXPECT_EQ(result.error, "rank 0 runs 0F1 twice (actions 0 and 2 after "
                          "dropping sends/receives)");

  Schedule wrongRank = order;
  wrongRank.ranks[0].push_back(Action::compute(ActionKind::Forward, 1, 0));
  result = insertCommunication(wrongRank, BoundaryTraffic::uniform(2, 8));
  EXPECT_EQ(result.error, "rank 0 action 5 (1F0): stage 1 runs on rank 1");

  Schedule badMap = order;
  badMap.stageToRank = {0, 5};
  result = insertCommunication(badMap, BoundaryTraffic::uniform(2, 8));
  EXPECT_EQ(result.error, "stage 1 maps to rank 5, out of range for 2 ranks");

  ScheduleOptions options;
  options.backwardTicks = -1;
  result = insertCommunication(order, BoundaryTraffic::uniform(2, 8), options);
  EXPECT_EQ(result.error, "placement durations must be positive, got forward "
                          "1, backward -1, recompute 1");
}

TEST(ScheduleTest, PlacementIsDeadlockFreeForAnyTicks) {
  // The placement durations only move sends and receives around; every
  // choice must still verify.
  for (int64_t f : {1, 3}) {
    for (int64_t b : {1, 2, 5}) {
      ScheduleOptions options;
      options.forwardTicks = f;
      options.backwardTicks = b;
      options.recompute = b == 5;
      for (int k = 2; k <= 8; ++k) {
        for (int m = 1; m <= 12; ++m) {
          BoundaryTraffic traffic = BoundaryTraffic::uniform(k, 4);
          VerifyResult g =
              verifySchedule(buildGPipeSchedule(k, m, traffic, options));
          VerifyResult o =
              verifySchedule(build1F1BSchedule(k, m, traffic, options));
          ASSERT_TRUE(g.ok()) << g.getMessage();
          ASSERT_TRUE(o.ok()) << o.getMessage();
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// CSV
//===----------------------------------------------------------------------===//

TEST(ScheduleTest, CSVFormat) {
  Schedule s = buildGPipeSchedule(2, 2, 8);
  EXPECT_EQ(toCSV(s), "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,"
                      "0STEP\n"
                      "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1,"
                      "1STEP\n");
}

TEST(ScheduleTest, CSVRoundTrip) {
  for (int k = 1; k <= 8; ++k) {
    for (int m = 1; m <= 16; m += 3) {
      BoundaryTraffic traffic = BoundaryTraffic::uniform(k, 4096);
      ScheduleOptions options;
      options.recompute = m % 2 == 0;
      for (const Schedule &s : {buildGPipeSchedule(k, m, traffic, options),
                                build1F1BSchedule(k, m, traffic, options)}) {
        ScheduleOrError parsed = parseCSV(toCSV(s), k, m, traffic);
        ASSERT_TRUE(parsed.ok()) << parsed.error;
        EXPECT_EQ(parsed.schedule, s) << "K=" << k << " M=" << m;
      }
    }
  }
  // Interleaved and split backward round-trip too (stage map inferred).
  ScheduleOrError inter = insertCommunication(interleavedComputeOrder(2, 3),
                                              BoundaryTraffic::uniform(4, 8));
  ASSERT_TRUE(inter.ok());
  ScheduleOrError parsed =
      parseCSV(toCSV(inter.schedule), 4, 3, BoundaryTraffic::uniform(4, 8));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(parsed.schedule, inter.schedule);
  EXPECT_EQ(parsed.schedule.stageToRank, (std::vector<int>{0, 1, 0, 1}));
}

TEST(ScheduleTest, CSVFromPyTorch) {
  // A compute-only dump as PyTorch writes it (idle slots are empty cells,
  // CRLF line ends), completed with sends and receives and verified.
  std::string text = "0F0,0F1,,0B0,,0B1\r\n"
                     ",1F0,1B0,1F1,1B1,\r\n";
  ScheduleOrError parsed = parseCSV(text, 2, 2);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(cells(parsed.schedule.ranks[0]), "0F0,0F1,0B0,0B1");
  EXPECT_EQ(cells(parsed.schedule.ranks[1]), "1F0,1B0,1F1,1B1");
  // No steps in PyTorch's compute-only format.
  for (std::vector<Action> &program : parsed.schedule.ranks)
    program.push_back(Action::step(program.front().stage));
  ScheduleOrError full =
      insertCommunication(parsed.schedule, BoundaryTraffic::uniform(2, 64));
  ASSERT_TRUE(full.ok()) << full.error;
  EXPECT_TRUE(verifySchedule(full.schedule).ok());

  // A dump with communication: peers come from the stage map.
  ScheduleOrError comms = parseCSV("0F0,0SEND_F0,0RECV_B0,0B0,0STEP\n"
                                   "1RECV_F0,1F0,1B0,1SEND_B0,1STEP\n",
                                   2, 1, BoundaryTraffic::uniform(2, 12));
  ASSERT_TRUE(comms.ok()) << comms.error;
  EXPECT_EQ(comms.schedule.ranks[0][1],
            Action::comm(ActionKind::SendF, 0, 0, 1, 12, "f32"));
  EXPECT_EQ(comms.schedule.ranks[1][0],
            Action::comm(ActionKind::RecvF, 1, 0, 0, 12, "f32"));
  EXPECT_TRUE(verifySchedule(comms.schedule).ok())
      << verifySchedule(comms.schedule).getMessage();

  // I/W and REDUCE_GRAD spellings.
  ScheduleOrError split = parseCSV("0F0,0I0,0W0,0REDUCE_GRAD,0STEP\n", 1, 1);
  ASSERT_TRUE(split.ok()) << split.error;
  EXPECT_EQ(cells(split.schedule.ranks[0]), "0F0,0I0,0W0,0REDUCE_GRAD,0STEP");
  EXPECT_TRUE(verifySchedule(split.schedule).ok())
      << verifySchedule(split.schedule).getMessage();
}

TEST(ScheduleTest, CSVErrors) {
  auto error = [](std::string_view text, int k = 2, int m = 2) {
    return parseCSV(text, k, m).error;
  };
  EXPECT_EQ(error("0F0,0X1\n1F0\n"),
            "line 1 (rank 0) column 2: unknown action type 'X' in '0X1'");
  EXPECT_EQ(error("0F0\n1F0,  F1\n"),
            "line 2 (rank 1) column 2: malformed action 'F1', expected "
            "<stage><type><micro-batch> such as '1F0'");
  EXPECT_EQ(error("0F0\n1F0,1f1\n"),
            "line 2 (rank 1) column 2: malformed action '1f1', expected "
            "<stage><type><micro-batch> such as '1F0'");
  EXPECT_EQ(error("0F0,,7F0\n1F0\n"),
            "line 1 (rank 0) column 3: stage 7 in '7F0' out of range for 2 "
            "stages");
  EXPECT_EQ(error("0F0,0F2\n1F0\n"),
            "line 1 (rank 0) column 2: micro-batch 2 in '0F2' out of range for "
            "2 micro-batches");
  EXPECT_EQ(error("0F\n1F0\n"),
            "line 1 (rank 0) column 1: action '0F' needs a micro-batch");
  EXPECT_EQ(error("0F0,0STEP1\n1F0\n"),
            "line 1 (rank 0) column 2: action '0STEP1' takes no micro-batch");
  EXPECT_EQ(error("0F0,0F1x\n1F0\n"),
            "line 1 (rank 0) column 2: malformed micro-batch '1x' in '0F1x'");
  EXPECT_EQ(error("0F0,0F99999999999\n1F0\n"),
            "line 1 (rank 0) column 2: malformed micro-batch '99999999999' in "
            "'0F99999999999'");
  EXPECT_EQ(error("0F0,0RECV_F0\n1F0\n"),
            "line 1 (rank 0) column 2: '0RECV_F0' talks to the stage before "
            "the first");
  EXPECT_EQ(error("0F0\n1F0,1SEND_F0\n"),
            "line 2 (rank 1) column 2: '1SEND_F0' talks to the stage after "
            "the last");
  EXPECT_EQ(error("0F0,1F0\n1F1\n"),
            "stage 1 appears on rank 0 (line 1 column 2) and on rank 1 (line 2 "
            "column 1)");
  EXPECT_EQ(error("0F0,0F1\n"), "stage 1 appears on no rank");
  EXPECT_EQ(error(""), "expected one line per rank, got an empty schedule");
  EXPECT_EQ(error("0F0\n", 0, 1), "expected at least one stage, got 0");
  EXPECT_EQ(error("0F0\n", 1, 0), "expected at least one micro-batch, got 0");
  // Spaces and quotes around cells are fine.
  EXPECT_EQ(error(" 0F0 , \"0F1\"\n1F0\n"), "");
}

} // namespace
