//===- Rendezvous.cpp - Blocking-rendezvous run of a schedule ---*- C++ -*-===//
//
// Implements `runRendezvous`, the one simulation of blocking send/receive
// pairs that the schedule verifier and the timeline simulator share, and the
// partner test it pairs transfers with.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Rendezvous.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

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

int SendBuffering::getCopies(ActionKind sendKind, int stage) const {
  const std::vector<int> &table =
      sendKind == ActionKind::SendF ? forward : backward;
  if (!isSendKind(sendKind) || stage < 0 ||
      stage >= static_cast<int>(table.size()))
    return 0;
  return std::max(table[stage], 0);
}

void SendBuffering::setCopies(ActionKind sendKind, int stage, int copies) {
  if (!isSendKind(sendKind) || stage < 0)
    return;
  std::vector<int> &table = sendKind == ActionKind::SendF ? forward : backward;
  if (stage >= static_cast<int>(table.size()))
    table.resize(stage + 1, 0);
  table[stage] = copies;
}

bool SendBuffering::any() const {
  for (const std::vector<int> *table : {&forward, &backward})
    for (int copies : *table)
      if (copies > 0)
        return true;
  return false;
}

int64_t SendBuffering::getRankBytes(const Schedule &schedule, int rank) const {
  if (rank < 0 || rank >= schedule.getNumRanks())
    return 0;
  // One entry per slot: the largest payload any of its sends carries.
  std::map<std::pair<bool, int>, std::pair<int, int64_t>> slots;
  for (const Action &a : schedule.ranks[rank]) {
    int copies = getCopies(a);
    if (copies <= 0)
      continue;
    auto &slot = slots[{a.kind == ActionKind::SendF, a.stage}];
    slot.first = copies;
    slot.second = std::max(slot.second, a.bytes);
  }
  int64_t bytes = 0;
  for (const auto &entry : slots)
    bytes += entry.second.first * entry.second.second;
  return bytes;
}

std::vector<std::pair<ActionKind, int>>
mlir::gpipe::getSendSlots(const Schedule &schedule) {
  std::vector<std::pair<ActionKind, int>> slots;
  for (const std::vector<Action> &program : schedule.ranks)
    for (const Action &a : program)
      if (isSendKind(a.kind) && a.stage >= 0)
        slots.push_back({a.kind, a.stage});
  std::sort(slots.begin(), slots.end(), [](auto x, auto y) {
    return std::make_pair(x.second, static_cast<int>(x.first)) <
           std::make_pair(y.second, static_cast<int>(y.first));
  });
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  return slots;
}

RendezvousResult mlir::gpipe::runRendezvous(const Schedule &schedule,
                                            const RendezvousObserver &observer,
                                            const SendBuffering &buffering) {
  int numRanks = schedule.getNumRanks();
  RendezvousResult result;
  std::vector<int> &pc = result.stoppedAt;
  pc.assign(numRanks, 0);
  auto done = [&](int r) {
    return pc[r] == static_cast<int>(schedule.ranks[r].size());
  };
  // Buffered payloads waiting for their receive, by (forward, sending
  // stage, micro-batch, sender, receiver): the send's index. And the
  // staging copies holding one, by (forward, sending stage, copy).
  using PayloadKey = std::tuple<bool, int, int, int, int>;
  std::map<PayloadKey, int> deposited;
  std::set<std::tuple<bool, int, int>> occupied;
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
        if (p < 0 || p >= numRanks || p == r)
          break;
        if (isSendKind(a.kind) && buffering.getCopies(a) > 0 &&
            a.microbatch >= 0) {
          // Into its staging copy once the copy's last payload is gone.
          if (!occupied.insert(buffering.getCopyKey(a)).second)
            break;
          deposited[{a.kind == ActionKind::SendF, a.stage, a.microbatch, r,
                     p}] = i;
          if (observer.onSend)
            observer.onSend(r, i);
          ++pc[r];
          progress = true;
          continue;
        }
        if (isRecvKind(a.kind)) {
          bool forward = a.kind == ActionKind::RecvF;
          int sender = forward ? a.stage - 1 : a.stage + 1;
          auto it = deposited.find({forward, sender, a.microbatch, p, r});
          if (it != deposited.end()) {
            int j = it->second;
            occupied.erase(buffering.getCopyKey(schedule.ranks[p][j]));
            deposited.erase(it);
            if (observer.onReceive)
              observer.onReceive(r, i, p, j);
            ++pc[r];
            progress = true;
            continue;
          }
        }
        if (done(p))
          break;
        int j = pc[p];
        const Action &partner = schedule.ranks[p][j];
        // A buffered send never meets its receive.
        if (!isRendezvousPartner(a, r, partner, p) ||
            buffering.getCopies(isSendKind(a.kind) ? a : partner) > 0)
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
