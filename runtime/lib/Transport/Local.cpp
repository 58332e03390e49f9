//===- Local.cpp - Rank threads of one process rendezvous ------*- C++ -*-===//
//
// The local transport: every rank is a thread of this process. A send and
// its receive are matched by (sender, receiver, tag); whichever arrives
// first posts its buffer and waits, the second checks the sizes, copies the
// sender's bytes into the receiver's buffer (Device::copyBetweenRanks: one
// copy) and wakes the first; both return once the bytes are in place. This
// is exactly the rendezvous the schedule verifier proved the schedule
// deadlock-free under.
//
// Every wait has the run's timeout and watches the run's abort flag. A
// failure is recorded with the run before the peer is woken, so the peer
// never sees a failed transfer without the run knowing why; it is recorded
// without this transport's lock held, since recording it wakes every waiter
// (wake() takes the lock).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/Transport.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace gpipe::rt {
namespace {

using Clock = std::chrono::steady_clock;

/// One pending transfer, keyed by (sender, receiver, tag).
struct Slot {
  bool sendPosted = false, recvPosted = false;
  void *data = nullptr;
  /// The first side's device, byte count, action and rank.
  RankDevice *device = nullptr;
  int64_t bytes = 0, action = 0, rank = 0;
  bool copying = false, done = false, failed = false;
};

class LocalTransport final : public Transport {
public:
  LocalTransport(RunControl &run, Device &device, int64_t numRanks,
                 double timeoutSeconds)
      : run(run), device(device), timeoutSeconds(timeoutSeconds),
        timeout(std::chrono::nanoseconds(int64_t(timeoutSeconds * 1e9))) {
    for (int64_t r = 0; r < numRanks; ++r)
      rankCvs.push_back(std::make_unique<std::condition_variable>());
  }

  const char *name() const override { return "local"; }
  bool distributed() const override { return false; }
  Status start(const ModelMetadata &, Device &) override {
    return Status::success();
  }
  bool transfer(const Transfer &t) override;
  void wake() override {
    // Taking the lock orders the abort flag before every waiter's next
    // check: each waiter is either before its check or inside its wait.
    { std::lock_guard<std::mutex> lock(mu); }
    for (auto &cv : rankCvs)
      cv->notify_all();
  }

private:
  RunControl &run;
  Device &device;
  double timeoutSeconds;
  Clock::duration timeout;
  std::mutex mu;
  std::vector<std::unique_ptr<std::condition_variable>> rankCvs;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Slot> slots;
};

bool LocalTransport::transfer(const Transfer &t) {
  const std::atomic<bool> &aborted = run.aborted();
  auto key = t.send ? std::make_tuple(t.rank, t.peer, t.tag)
                    : std::make_tuple(t.peer, t.rank, t.tag);
  std::unique_lock<std::mutex> lock(mu);
  if (aborted)
    return false;
  Slot &slot = slots[key];
  bool peerWaiting = t.send ? slot.recvPosted : slot.sendPosted;
  if (peerWaiting) {
    // Arrived second: check the sizes, copy, wake the peer. While the slot
    // is marked copying the peer waits whatever happens, so a failure is
    // recorded (without the lock) before the peer learns of it.
    int64_t peerRank = slot.rank;
    slot.copying = true;
    Status copied = Status::success();
    if (slot.bytes != t.bytes) {
      int64_t sendBytes = t.send ? t.bytes : slot.bytes;
      int64_t recvBytes = t.send ? slot.bytes : t.bytes;
      std::string mine = run.where(t.rank, t.action);
      std::string theirs = run.where(slot.rank, slot.action);
      lock.unlock();
      run.failRank(t.rank, mine + ": transfer size mismatch: " +
                               (t.send ? mine : theirs) + " sends " +
                               std::to_string(sendBytes) + " bytes but " +
                               (t.send ? theirs : mine) + " receives " +
                               std::to_string(recvBytes));
      copied = Status::error("size mismatch");
    } else {
      void *dst = t.send ? slot.data : t.data;
      const void *src = t.send ? t.data : slot.data;
      RankDevice &sender = t.send ? *t.device : *slot.device;
      RankDevice &receiver = t.send ? *slot.device : *t.device;
      lock.unlock();
      if (t.bytes > 0)
        copied = device.copyBetweenRanks(sender, src, receiver, dst, t.bytes);
      if (!copied.ok())
        run.failRank(t.rank, run.where(t.rank, t.action) +
                                 ": copy between ranks: " + copied.message());
    }
    lock.lock();
    slot.copying = false;
    slot.done = true;
    slot.failed = !copied.ok();
    rankCvs[size_t(peerRank)]->notify_all();
    return copied.ok();
  }
  // Arrived first: post the buffer and wait for the peer to copy.
  if (t.send)
    slot.sendPosted = true;
  else
    slot.recvPosted = true;
  slot.data = t.data;
  slot.device = t.device;
  slot.bytes = t.bytes;
  slot.action = t.action;
  slot.rank = t.rank;
  std::condition_variable &cv = *rankCvs[size_t(t.rank)];
  Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (slot.done) {
      bool failed = slot.failed;
      slots.erase(key);
      return !failed;
    }
    if (!slot.copying) {
      if (aborted) {
        slots.erase(key);
        return false;
      }
      if (Clock::now() >= deadline) {
        slots.erase(key);
        lock.unlock();
        run.failRank(t.rank, run.where(t.rank, t.action) + ": " +
                                 (t.send ? "no receiver" : "no message") +
                                 " after " + formatSeconds(timeoutSeconds) +
                                 " s; the peer may have died or stalled");
        return false;
      }
      cv.wait_until(lock, deadline);
    } else {
      // The peer is copying into or out of our buffer: wait for it to
      // finish whatever happens, the buffer must not go away under it.
      cv.wait(lock);
    }
  }
}

} // namespace

std::unique_ptr<Transport> makeLocalTransport(RunControl &run, Device &device,
                                              int64_t numRanks,
                                              double timeoutSeconds) {
  return std::make_unique<LocalTransport>(run, device, numRanks,
                                          timeoutSeconds);
}

} // namespace gpipe::rt
