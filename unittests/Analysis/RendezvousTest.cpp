//===- RendezvousTest.cpp - Rendezvous run tests ----------------*- C++ -*-===//
//
// Unit tests of `runRendezvous`, the blocking send/receive run the schedule
// verifier and the timeline share: a generated schedule runs to the end with
// every transfer met once, in program order on each rank; two ranks that
// both send first stop at their sends; a transfer to a rank out of range or
// to itself never completes. Buffered sends: the same two ranks finish with
// one staging copy each; a send waits for its copy's last payload to be
// received; and every generated family that finishes under rendezvous
// finishes with any copies (the implication the verifier's proof rests on).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Rendezvous.h"
#include "gpipe/Analysis/ScheduleVerifier.h"

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

/// Both ranks send first, then receive: stuck under rendezvous.
Schedule sendSend() {
  Schedule s;
  s.numStages = 2;
  s.numMicrobatches = 1;
  s.stageToRank = {0, 1};
  s.ranks = {{Action::compute(ActionKind::Forward, 0, 0),
              Action::comm(ActionKind::SendF, 0, 0, 1, 64, "f32"),
              Action::comm(ActionKind::RecvB, 0, 0, 1, 64, "f32")},
             {Action::comm(ActionKind::SendB, 1, 0, 0, 64, "f32"),
              Action::comm(ActionKind::RecvF, 1, 0, 0, 64, "f32")}};
  return s;
}

TEST(RendezvousTest, SendSendStops) {
  // Rank 0 sends activation 0 while rank 1 sends the gradient of 0 first.
  Schedule s = sendSend();
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

TEST(RendezvousTest, BufferedSendsGoOnAlone) {
  Schedule s = sendSend();
  SendBuffering buffering;
  buffering.setCopies(ActionKind::SendF, 0, 1);
  buffering.setCopies(ActionKind::SendB, 1, 1);
  EXPECT_TRUE(buffering.any());
  int sends = 0, receives = 0;
  RendezvousObserver observer;
  observer.onSend = [&](int r, int i) {
    EXPECT_TRUE(isSendKind(s.ranks[r][i].kind));
    ++sends;
  };
  observer.onReceive = [&](int r, int i, int p, int j) {
    EXPECT_TRUE(isRendezvousPartner(s.ranks[r][i], r, s.ranks[p][j], p));
    ++receives;
  };
  observer.onTransfer = [&](int, int, int, int) { ADD_FAILURE(); };
  EXPECT_TRUE(runRendezvous(s, observer, buffering).allFinished(s));
  EXPECT_EQ(sends, 2);
  EXPECT_EQ(receives, 2);
  // One slot buffered is enough: rank 1's send waits for rank 0's receive,
  // which rank 0 reaches after its buffered send.
  SendBuffering forwardOnly;
  forwardOnly.setCopies(ActionKind::SendF, 0, 1);
  EXPECT_TRUE(runRendezvous(s, {}, forwardOnly).allFinished(s));
  EXPECT_EQ(forwardOnly.getRankBytes(s, 0), 64);
  EXPECT_EQ(forwardOnly.getRankBytes(s, 1), 0);
}

TEST(RendezvousTest, BufferedSendWaitsForItsCopy) {
  // Rank 0 sends micro-batches 0 and 1; rank 1 receives 1 first. With one
  // copy both payloads need copy 0, so the second send waits for the
  // receive of the first, which waits behind the receive of the second.
  Schedule s;
  s.numStages = 2;
  s.numMicrobatches = 2;
  s.stageToRank = {0, 1};
  s.ranks = {{Action::comm(ActionKind::SendF, 0, 0, 1, 64, "f32"),
              Action::comm(ActionKind::SendF, 0, 1, 1, 64, "f32")},
             {Action::comm(ActionKind::RecvF, 1, 1, 0, 64, "f32"),
              Action::comm(ActionKind::RecvF, 1, 0, 0, 64, "f32")}};
  SendBuffering one, two;
  one.setCopies(ActionKind::SendF, 0, 1);
  two.setCopies(ActionKind::SendF, 0, 2);
  EXPECT_EQ(runRendezvous(s, {}, one).stoppedAt, (std::vector<int>{1, 0}));
  EXPECT_TRUE(runRendezvous(s, {}, two).allFinished(s));
  EXPECT_EQ(two.getRankBytes(s, 0), 128);
}

TEST(RendezvousTest, BufferedRunFinishesWhereRendezvousDoes) {
  for (ScheduleFamily family : getScheduleFamilies())
    for (int K = 1; K <= 4; ++K)
      for (int M : {4, 8}) {
        int V = getDefaultVirtualStages(family);
        ScheduleOrError built = buildSchedule(
            family, K, V, M, BoundaryTraffic::uniform(K * V, 256));
        if (!built.ok())
          continue;
        const Schedule &s = built.schedule;
        ASSERT_TRUE(runRendezvous(s).allFinished(s));
        for (int copies : {1, 2, 3}) {
          SendBuffering buffering;
          for (int stage = 0; stage < s.numStages; ++stage) {
            // Some slots buffered, some not: every mix must finish.
            buffering.setCopies(ActionKind::SendF, stage,
                                stage % 2 ? copies : 0);
            buffering.setCopies(ActionKind::SendB, stage, copies);
          }
          EXPECT_TRUE(runRendezvous(s, {}, buffering).allFinished(s))
              << getScheduleFamilyName(family) << " K=" << K << " M=" << M
              << " copies " << copies;
        }
      }
}

} // namespace
