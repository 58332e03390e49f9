//===- Rendezvous.h - Blocking-rendezvous run of a schedule -----*- C++ -*-===//
//
// Runs every rank's program of a schedule in order under blocking rendezvous
// semantics: an action that is not a transfer completes on its own; a send
// or a receive completes only together with its partner (the matching
// receive or send, at the head of the peer rank's program). The run goes
// until every rank has finished or none can move. The schedule verifier uses
// it to prove that no rank waits forever (and, from where the ranks stopped,
// to name the wait cycles); the timeline simulator uses it to time each
// action. One run, two observers: both see the same execution. Plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_RENDEZVOUS_H
#define GPIPE_ANALYSIS_RENDEZVOUS_H

#include "gpipe/Analysis/Schedule.h"

#include <functional>
#include <vector>

namespace mlir::gpipe {

/// Whether `a` on rank `ra` and `b` on rank `rb` are the two ends of one
/// transfer: each names the other's rank as its peer, they carry the same
/// micro-batch, and one is the send and the other the receive of the same
/// boundary and direction (SEND_F of stage s with RECV_F of stage s + 1,
/// SEND_B of stage s + 1 with RECV_B of stage s).
bool isRendezvousPartner(const Action &a, int ra, const Action &b, int rb);

/// What a run reports as it goes, in the order it happens. Either may be
/// empty.
struct RendezvousObserver {
  /// Action `index` of `rank`, not a transfer, completes.
  std::function<void(int rank, int index)> onAction;
  /// Transfer action `index` of `rank` meets its partner, action `peerIndex`
  /// of `peer`; both complete.
  std::function<void(int rank, int index, int peer, int peerIndex)> onTransfer;
};

/// Where a run stopped.
struct RendezvousResult {
  /// Per rank, the index of the action it stopped at: its program's size
  /// when it finished, else the send or receive it waits in.
  std::vector<int> stoppedAt;

  /// Whether `rank` ran its whole program.
  bool isFinished(const Schedule &schedule, int rank) const {
    return stoppedAt[rank] == static_cast<int>(schedule.ranks[rank].size());
  }
  /// Whether every rank ran its whole program.
  bool allFinished(const Schedule &schedule) const;
};

/// Runs `schedule`'s programs as described in the file comment, ranks taken
/// round-robin, each as far as it can go. A transfer whose peer is out of
/// range or the rank itself never completes. Needs only the programs: the
/// stage map and the actions' stages are not checked.
RendezvousResult runRendezvous(const Schedule &schedule,
                               const RendezvousObserver &observer = {});

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_RENDEZVOUS_H
