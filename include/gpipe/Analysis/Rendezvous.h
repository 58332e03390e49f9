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
// Buffered sends (SendBuffering): a send whose slot has c > 0 staging
// copies puts micro-batch m's payload into copy m mod c and completes on its
// own, once that copy's previous payload has been received; its receive
// completes on its own once the payload is there. A slot with no copies
// keeps the rendezvous.
//
// Why one proof covers both. Every step of the run is persistent: a
// rendezvous pair stays matched until it happens, a deposited payload stays
// until its receive takes it, and a free copy stays free until its own
// rank's next send fills it. So whatever order the ranks move in, they end
// in the same place (the run is confluent), and a schedule that finishes
// under rendezvous finishes with any copies: replay the rendezvous run, each
// rendezvous becoming a send straight followed by its receive; the copy a
// send needs was freed when the receive of its previous payload, which the
// same rank sent earlier, happened together with that send. The verifier
// proves rendezvous, so its proof holds for every transport, buffered or
// not (`BufferedRunFinishesWhereRendezvousDoes` checks the implication on
// every generated family).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_RENDEZVOUS_H
#define GPIPE_ANALYSIS_RENDEZVOUS_H

#include "gpipe/Analysis/Schedule.h"

#include <functional>
#include <tuple>
#include <utility>
#include <vector>

namespace mlir::gpipe {

/// Whether `a` on rank `ra` and `b` on rank `rb` are the two ends of one
/// transfer: each names the other's rank as its peer, they carry the same
/// micro-batch, and one is the send and the other the receive of the same
/// boundary and direction (SEND_F of stage s with RECV_F of stage s + 1,
/// SEND_B of stage s + 1 with RECV_B of stage s).
bool isRendezvousPartner(const Action &a, int ra, const Action &b, int rb);

/// Buffered sends: per stage, the staging copies of its SEND_F (the
/// stage's output) and of its SEND_B (its input's gradient) slots; missing
/// entries are 0, a rendezvous.
struct SendBuffering {
  std::vector<int> forward, backward;

  /// The copies of (sendKind, stage)'s slot.
  int getCopies(ActionKind sendKind, int stage) const;
  /// The copies of the slot `send` (a SEND_F or SEND_B) goes through.
  int getCopies(const Action &send) const {
    return getCopies(send.kind, send.stage);
  }
  /// The staging copy `send` (with copies) fills: (forward, stage,
  /// micro-batch mod copies).
  std::tuple<bool, int, int> getCopyKey(const Action &send) const {
    return {send.kind == ActionKind::SendF, send.stage,
            send.microbatch % getCopies(send)};
  }
  /// Sets the copies of (kind, stage)'s slot, growing the tables.
  void setCopies(ActionKind sendKind, int stage, int copies);
  /// Whether any slot has a copy.
  bool any() const;
  /// The staging copies of every slot of `rank` together, each
  /// `traffic`-sized: the bytes its arena holds for them.
  int64_t getRankBytes(const Schedule &schedule, int rank) const;
};

/// The send slots of `schedule`: the (SEND_F or SEND_B, stage) of its
/// sends, each once, in stage order (forward first).
std::vector<std::pair<ActionKind, int>> getSendSlots(const Schedule &schedule);

/// What a run reports as it goes, in the order it happens. Any may be
/// empty.
struct RendezvousObserver {
  /// Action `index` of `rank`, not a transfer, completes.
  std::function<void(int rank, int index)> onAction;
  /// Transfer action `index` of `rank` meets its partner, action `peerIndex`
  /// of `peer`; both complete.
  std::function<void(int rank, int index, int peer, int peerIndex)> onTransfer;
  /// Buffered: send `index` of `rank` puts its payload into a staging copy
  /// and completes.
  std::function<void(int rank, int index)> onSend;
  /// Buffered: receive `index` of `rank` takes the payload send `peerIndex`
  /// of `peer` put into a staging copy, and completes; the copy is free.
  std::function<void(int rank, int index, int peer, int peerIndex)> onReceive;
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
/// round-robin, each as far as it can go, with `buffering`'s staging copies
/// (none: every transfer a rendezvous). A transfer whose peer is out of
/// range or the rank itself never completes. Needs only the programs: the
/// stage map and the actions' stages are not checked.
RendezvousResult runRendezvous(const Schedule &schedule,
                               const RendezvousObserver &observer = {},
                               const SendBuffering &buffering = {});

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_RENDEZVOUS_H
