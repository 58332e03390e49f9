//===- RendezvousTest.cpp - Rendezvous run tests ----------------*- C++ -*-===//
//
// Unit tests of `runRendezvous`, the blocking send/receive run the schedule
// verifier and the timeline share: a generated schedule runs to the end with
// every transfer met once, in program order on each rank; two ranks that
// both send first stop at their sends; a transfer to a rank out of range or
// to itself never completes.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Rendezvous.h"

#include <gtest/gtest.h>

using namespace mlir::gpipe;

namespace {

TEST(RendezvousTest, GeneratedScheduleFinishes) {
  Schedule s = build1F1BSchedule(4, 8, 64);
  std::vector<int> next(s.getNumRanks(), 0);
  int actions = 0, transfers = 0;
  RendezvousObserver observer;
  observer.onAction = [&](int r, int i) {
    EXPECT_EQ(i, next[r]++);
    EXPECT_FALSE(isTransferKind(s.ranks[r][i].kind));
    ++actions;
  };
  observer.onTransfer = [&](int r, int i, int p, int j) {
    EXPECT_EQ(i, next[r]++);
    EXPECT_EQ(j, next[p]++);
    EXPECT_TRUE(isRendezvousPartner(s.ranks[r][i], r, s.ranks[p][j], p));
    ++transfers;
  };
  RendezvousResult result = runRendezvous(s, observer);
  EXPECT_TRUE(result.allFinished(s));
  int total = 0;
  for (const std::vector<Action> &program : s.ranks)
    total += static_cast<int>(program.size());
  EXPECT_EQ(actions + 2 * transfers, total);
}

TEST(RendezvousTest, SendSendStops) {
  // Rank 0 sends activation 0 while rank 1 sends the gradient of 0 first.
  Schedule s;
  s.numStages = 2;
  s.numMicrobatches = 1;
  s.stageToRank = {0, 1};
  s.ranks = {{Action::compute(ActionKind::Forward, 0, 0),
              Action::comm(ActionKind::SendF, 0, 0, 1, 64, "f32"),
              Action::comm(ActionKind::RecvB, 0, 0, 1, 64, "f32")},
             {Action::comm(ActionKind::SendB, 1, 0, 0, 64, "f32"),
              Action::comm(ActionKind::RecvF, 1, 0, 0, 64, "f32")}};
  RendezvousResult result = runRendezvous(s);
  EXPECT_FALSE(result.allFinished(s));
  EXPECT_EQ(result.stoppedAt, (std::vector<int>{1, 0}));
}

TEST(RendezvousTest, BadPeerNeverCompletes) {
  Schedule s;
  s.numStages = 1;
  s.numMicrobatches = 1;
  s.stageToRank = {0};
  s.ranks = {{Action::comm(ActionKind::SendF, 0, 0, 0, 64, "f32")},
             {Action::comm(ActionKind::RecvF, 1, 0, 7, 64, "f32")}};
  RendezvousResult result = runRendezvous(s);
  EXPECT_EQ(result.stoppedAt, (std::vector<int>{0, 0}));
  EXPECT_TRUE(isRendezvousPartner(
      Action::comm(ActionKind::SendB, 2, 3, 1, 8, "f32"), 2,
      Action::comm(ActionKind::RecvB, 1, 3, 2, 8, "f32"), 1));
  EXPECT_FALSE(isRendezvousPartner(
      Action::comm(ActionKind::SendB, 2, 3, 1, 8, "f32"), 2,
      Action::comm(ActionKind::RecvB, 1, 4, 2, 8, "f32"), 1));
}

} // namespace
