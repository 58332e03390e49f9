//===- Rendezvous.cpp - Blocking-rendezvous run of a schedule ---*- C++ -*-===//
//
// Implements `runRendezvous`, the one simulation of blocking send/receive
// pairs that the schedule verifier and the timeline simulator share, and the
// partner test it pairs transfers with.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Rendezvous.h"

using namespace mlir::gpipe;

bool mlir::gpipe::isRendezvousPartner(const Action &a, int ra, const Action &b,
                                      int rb) {
  if (a.peer != rb || b.peer != ra || a.microbatch != b.microbatch)
    return false;
  switch (a.kind) {
  case ActionKind::SendF:
    return b.kind == ActionKind::RecvF && b.stage == a.stage + 1;
  case ActionKind::RecvF:
    return b.kind == ActionKind::SendF && b.stage + 1 == a.stage;
  case ActionKind::SendB:
    return b.kind == ActionKind::RecvB && b.stage + 1 == a.stage;
  case ActionKind::RecvB:
    return b.kind == ActionKind::SendB && b.stage == a.stage + 1;
  default:
    return false;
  }
}

bool RendezvousResult::allFinished(const Schedule &schedule) const {
  for (int r = 0, e = schedule.getNumRanks(); r < e; ++r)
    if (!isFinished(schedule, r))
      return false;
  return true;
}

RendezvousResult
mlir::gpipe::runRendezvous(const Schedule &schedule,
                           const RendezvousObserver &observer) {
  int numRanks = schedule.getNumRanks();
  RendezvousResult result;
  std::vector<int> &pc = result.stoppedAt;
  pc.assign(numRanks, 0);
  auto done = [&](int r) {
    return pc[r] == static_cast<int>(schedule.ranks[r].size());
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < numRanks; ++r) {
      while (!done(r)) {
        int i = pc[r];
        const Action &a = schedule.ranks[r][i];
        if (!isTransferKind(a.kind)) {
          if (observer.onAction)
            observer.onAction(r, i);
          ++pc[r];
          progress = true;
          continue;
        }
        int p = a.peer;
        if (p < 0 || p >= numRanks || p == r || done(p))
          break;
        int j = pc[p];
        if (!isRendezvousPartner(a, r, schedule.ranks[p][j], p))
          break;
        if (observer.onTransfer)
          observer.onTransfer(r, i, p, j);
        ++pc[r];
        ++pc[p];
        progress = true;
      }
    }
  }
  return result;
}
