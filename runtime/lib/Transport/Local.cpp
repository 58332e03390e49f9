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
// Buffered sends (Transfer::staging): a send waits until its staging copy
// is free (the copy's last payload received), copies its bytes into it and
// returns; the receiver copies out of the staging copy, frees it and wakes
// the sender's rank (a receiver already waiting is served by the sender,
// out of the staging copy too). So a buffered payload always takes the same
// two copies, whatever the timing. With arenas outside host memory every
// send stays a rendezvous.
//
// Data parallelism: the D replicas' workers of one rank meet per stage. Each
// copies the other replicas' pieces of its share into its Reduce buffer and
// sums the share (sumShare, replica order); once all have summed, each
// copies the other shares from their owners. Two waits, no extra memory.
//
// Every wait has the run's timeout and watches the run's abort flag. A
// failure is recorded with the run before the peer is woken, so the peer
// never sees a failed transfer without the run knowing why; it is recorded
// without this transport's lock held, since recording it wakes every waiter
// (wake() takes the lock).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/ModelMetadata.h"
#include "gpipe/Runtime/Transport.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
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
  /// A buffered send: `data` is its staging copy; the sender has gone on
  /// (`filling` while it still copies into it).
  bool buffered = false, filling = false;
};

class LocalTransport final : public Transport {
public:
  LocalTransport(RunControl &run, Device &device, int64_t numRanks,
                 double timeoutSeconds)
      : run(run), device(device), timeoutSeconds(timeoutSeconds),
        timeout(std::chrono::nanoseconds(int64_t(timeoutSeconds * 1e9))) {
    for (int64_t r = 0; r < numRanks; ++r)
      rankCvs.push_back(std::make_unique<std::condition_variable>());
    wakeups = std::make_unique<std::atomic<uint32_t>[]>(size_t(numRanks));
    // Spinning only pays when every rank thread has a core of its own.
    unsigned cores = std::thread::hardware_concurrency();
    spin = cores > 0 && uint64_t(numRanks) <= cores;
  }

  const char *name() const override { return "local"; }
  bool distributed() const override { return false; }
  Status start(const ModelMetadata &meta, Device &) override {
    replicas = meta.dataParallel;
    if (replicas > 1 && !device.hostMemory())
      return Status::error(
          "data parallelism on rank threads (--transport local) needs the "
          "arenas in host memory; run a " +
          meta.target + " model with --transport nccl under mpirun");
    return Status::success();
  }
  bool transfer(const Transfer &t) override;
  void wake() override {
    // Taking the lock orders the abort flag before every waiter's next
    // check: each waiter is either before its check or inside its wait
    // (or spinning, and then it sees the abort flag or the wake-up).
    {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t r = 0; r < rankCvs.size(); ++r)
        notifyRank(int64_t(r));
    }
    reduceCv.notify_all();
  }
  bool startReduction(const Reduction &r) override;
  bool finishReduction(int64_t worker, int64_t stage) override;
  bool finishSends(int64_t rank) override;

private:
  /// One side of a transfer, as `deliver` needs it.
  struct End {
    int64_t rank = 0, action = 0, bytes = 0;
    void *data = nullptr;
    RankDevice *device = nullptr;
  };
  static End endOf(const Transfer &t, void *data) {
    return {t.rank, t.action, t.bytes, data, t.device};
  }
  static End endOf(const Slot &s) {
    return {s.rank, s.action, s.bytes, s.data, s.device};
  }
  /// Copies `from`'s bytes into `to`'s buffer once both name the same
  /// size; call it without the lock. A failure is recorded as rank `at`'s
  /// action `action` (a size mismatch naming both sides, a failed copy as
  /// `what`) before it is returned.
  Status deliver(int64_t at, int64_t action, const End &from, const End &to,
                 const char *what) {
    if (from.bytes != to.bytes) {
      run.failRank(at, run.where(at, action) + ": transfer size mismatch: " +
                           run.where(from.rank, from.action) + " sends " +
                           std::to_string(from.bytes) + " bytes but " +
                           run.where(to.rank, to.action) + " receives " +
                           std::to_string(to.bytes));
      return Status::error("size mismatch");
    }
    Status copied = Status::success();
    if (from.bytes > 0)
      copied = device.copyBetweenRanks(*from.device, from.data, *to.device,
                                       to.data, from.bytes);
    if (!copied.ok())
      run.failRank(at, run.where(at, action) + ": " + what + ": " +
                           copied.message());
    return copied;
  }
  /// A buffered send: puts `t`'s bytes into its staging copy (free, as
  /// `slot` is posted by nobody) and returns. Called and returns with the
  /// lock held.
  bool deposit(std::unique_lock<std::mutex> &lock, const Transfer &t,
               Slot &slot);
  /// A receive whose send is buffered in `slot`: waits until the sender has
  /// filled the staging copy, copies out, frees the copy.
  bool takeBuffered(std::unique_lock<std::mutex> &lock, const Transfer &t,
                    Slot &slot);
  /// Waits on rank `t.rank`'s condition variable until `ready()` (true),
  /// the deadline or an abort (false; a timeout is recorded as `what`). A
  /// template: a std::function of the predicate could allocate per wait.
  template <typename Ready>
  bool waitRank(std::unique_lock<std::mutex> &lock, const Transfer &t,
                Clock::time_point deadline, Ready ready, const char *what) {
    std::condition_variable &cv = *rankCvs[size_t(t.rank)];
    while (!ready()) {
      if (run.aborted())
        return false;
      if (Clock::now() >= deadline) {
        lock.unlock();
        run.failRank(t.rank, run.where(t.rank, t.action) + ": " + what +
                                 " after " + formatSeconds(timeoutSeconds) +
                                 " s; the peer may have died or stalled");
        lock.lock();
        return false;
      }
      cv.wait_until(lock, deadline);
    }
    return true;
  }
  /// Per staging copy, the rank whose payload it holds until received, or
  /// -1 when free. Entries stay: after the first step nothing allocates.
  std::map<const void *, int64_t> stagingOwner;
  bool stagingBusy(const void *copy) const {
    auto it = stagingOwner.find(copy);
    return it != stagingOwner.end() && it->second >= 0;
  }

  /// One stage's reduction of the current step over a rank's replicas.
  struct Group {
    std::vector<Reduction> parts;
    std::vector<char> present;
    int64_t started = 0, summed = 0, done = 0;
    /// Counts completed reductions: the last replica done moves it on.
    uint64_t generation = 0;
  };
  /// Waits on reduceCv until `ready`, the deadline or an abort; on a
  /// timeout records `r`'s failure, naming `waitingFor()`.
  bool waitReduction(std::unique_lock<std::mutex> &lock, const Reduction &r,
                     const std::function<bool()> &ready,
                     const std::function<std::string()> &waitingFor);

  int64_t replicas = 1;
  /// A worker's reduction of a stage, between its start and its finish.
  struct Started {
    Reduction reduction;
    bool active = false;
  };
  /// By (rank, stage); and the started reductions by (worker, stage). The
  /// entries are reset, not erased, between steps: after the first step a
  /// reduction allocates nothing.
  std::map<std::pair<int64_t, int64_t>, Group> groups;
  std::map<std::pair<int64_t, int64_t>, Started> started;
  std::condition_variable reduceCv;

  RunControl &run;
  Device &device;
  double timeoutSeconds;
  Clock::duration timeout;
  std::mutex mu;
  std::vector<std::unique_ptr<std::condition_variable>> rankCvs;
  /// Per rank, bumped (under `mu`) whenever its condition variable is
  /// notified: what a spinning waiter watches without the lock.
  std::unique_ptr<std::atomic<uint32_t>[]> wakeups;
  bool spin = false;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Slot> slots;

  /// Notifies rank `r`'s waiters (with `mu` held).
  void notifyRank(int64_t r) {
    wakeups[size_t(r)].fetch_add(1, std::memory_order_release);
    rankCvs[size_t(r)]->notify_all();
  }
  /// Before blocking: waits up to ~20 us with `lock` released for rank
  /// `r`'s next notification. A peer's copy on another core usually ends
  /// within that; blocking and being woken costs tens of microseconds.
  void spinBriefly(std::unique_lock<std::mutex> &lock, int64_t r) {
    if (!spin)
      return;
    uint32_t seen = wakeups[size_t(r)].load(std::memory_order_acquire);
    lock.unlock();
    Clock::time_point until = Clock::now() + std::chrono::microseconds(20);
    while (wakeups[size_t(r)].load(std::memory_order_acquire) == seen &&
           !run.aborted().load(std::memory_order_relaxed) &&
           Clock::now() < until)
      cpuRelax();
    lock.lock();
  }
  static void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
};

bool LocalTransport::transfer(const Transfer &t) {
  const std::atomic<bool> &aborted = run.aborted();
  auto key = t.send ? std::make_tuple(t.rank, t.peer, t.tag)
                    : std::make_tuple(t.peer, t.rank, t.tag);
  std::unique_lock<std::mutex> lock(mu);
  if (aborted)
    return false;
  // Slots are reset, not erased, when a transfer completes: tags repeat
  // every step, so after the first step a transfer allocates nothing.
  Slot &slot = slots[key];
  if (!t.send && slot.sendPosted && slot.buffered)
    return takeBuffered(lock, t, slot);
  if (t.send && t.staging && t.bytes > 0 && device.hostMemory()) {
    // Its staging copy may still hold an earlier payload (this step's
    // micro-batch m - copies, or the last step's m): wait for its receive.
    if (!waitRank(
            lock, t, Clock::now() + timeout,
            [&] { return !stagingBusy(t.staging); },
            "its staging copy was still not received"))
      return false;
    return deposit(lock, t, slot);
  }
  bool peerWaiting = t.send ? slot.recvPosted : slot.sendPosted;
  if (peerWaiting) {
    // Arrived second: check the sizes, copy, wake the peer. While the slot
    // is marked copying the peer waits whatever happens, so a failure is
    // recorded (without the lock) before the peer learns of it.
    int64_t peerRank = slot.rank;
    slot.copying = true;
    End mine = endOf(t, t.data), theirs = endOf(slot);
    lock.unlock();
    Status copied = deliver(t.rank, t.action, t.send ? mine : theirs,
                            t.send ? theirs : mine, "copy between ranks");
    lock.lock();
    slot.copying = false;
    slot.done = true;
    slot.failed = !copied.ok();
    notifyRank(peerRank);
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
  bool spun = false;
  for (;;) {
    if (slot.done) {
      bool failed = slot.failed;
      slot = Slot();
      return !failed;
    }
    if (!slot.copying) {
      if (aborted) {
        slot = Slot();
        return false;
      }
      if (Clock::now() >= deadline) {
        slot = Slot();
        lock.unlock();
        run.failRank(t.rank, run.where(t.rank, t.action) + ": " +
                                 (t.send ? "no receiver" : "no message") +
                                 " after " + formatSeconds(timeoutSeconds) +
                                 " s; the peer may have died or stalled");
        return false;
      }
      if (!spun) {
        spun = true;
        spinBriefly(lock, t.rank);
        continue;
      }
      cv.wait_until(lock, deadline);
    } else {
      // The peer is copying into or out of our buffer: wait for it to
      // finish whatever happens, the buffer must not go away under it.
      cv.wait(lock);
    }
  }
}

bool LocalTransport::deposit(std::unique_lock<std::mutex> &lock,
                             const Transfer &t, Slot &slot) {
  stagingOwner[t.staging] = t.rank;
  // A receiver already waiting gets the payload now, through the staging
  // copy all the same: the same copies whatever the timing, and the plan's
  // staging bytes are the ones used. It waits while the slot is copying.
  const bool receiverWaiting = slot.recvPosted;
  const Slot receiver = slot;
  if (receiverWaiting) {
    slot.copying = true;
  } else {
    slot.sendPosted = true;
    slot.buffered = slot.filling = true;
    slot.data = t.staging;
    slot.device = t.device;
    slot.bytes = t.bytes;
    slot.action = t.action;
    slot.rank = t.rank;
  }
  lock.unlock();
  End staged = endOf(t, t.staging);
  Status copied = deliver(t.rank, t.action, endOf(t, t.data), staged,
                          "copy into the staging copy");
  if (copied.ok() && receiverWaiting)
    copied = deliver(t.rank, t.action, staged, endOf(receiver),
                     "copy between ranks");
  lock.lock();
  if (receiverWaiting) {
    stagingOwner[t.staging] = -1;
    slot.copying = false;
    slot.done = true;
    slot.failed = !copied.ok();
    notifyRank(receiver.rank);
  } else {
    slot.filling = false;
    slot.failed = !copied.ok();
    notifyRank(t.peer);
  }
  return copied.ok();
}

bool LocalTransport::takeBuffered(std::unique_lock<std::mutex> &lock,
                                  const Transfer &t, Slot &slot) {
  Clock::time_point deadline = Clock::now() + timeout;
  // The sender copies into the staging copy with the lock released.
  if (!waitRank(
          lock, t, deadline, [&] { return !slot.filling; },
          "the sender was still filling its staging copy"))
    return false;
  if (slot.failed)
    return false; // the sender recorded why
  Slot taken = slot;
  slot = Slot();
  lock.unlock();
  Status copied = deliver(t.rank, t.action, endOf(taken), endOf(t, t.data),
                          "copy out of the sender's staging copy");
  lock.lock();
  stagingOwner[taken.data] = -1;
  notifyRank(taken.rank);
  return copied.ok();
}

bool LocalTransport::finishSends(int64_t rank) {
  std::unique_lock<std::mutex> lock(mu);
  Transfer t;
  t.rank = rank;
  t.action = -1;
  auto none = [&] {
    for (const auto &[copy, owner] : stagingOwner)
      if (owner == rank)
        return false;
    return true;
  };
  return waitRank(lock, t, Clock::now() + timeout, none,
                  "a payload it sent was still not received at the step's "
                  "end");
}

bool LocalTransport::waitReduction(
    std::unique_lock<std::mutex> &lock, const Reduction &r,
    const std::function<bool()> &ready,
    const std::function<std::string()> &waitingFor) {
  const std::atomic<bool> &aborted = run.aborted();
  Clock::time_point deadline = Clock::now() + timeout;
  while (!ready()) {
    if (aborted)
      return false;
    if (Clock::now() >= deadline) {
      std::string message = run.where(r.worker, r.action) +
                            ": the gradient all-reduce waited " +
                            formatSeconds(timeoutSeconds) + " s for " +
                            waitingFor() + "; it may have died or stalled";
      lock.unlock();
      run.failRank(r.worker, message);
      lock.lock();
      return false;
    }
    reduceCv.wait_until(lock, deadline);
  }
  return true;
}

bool LocalTransport::startReduction(const Reduction &r) {
  std::unique_lock<std::mutex> lock(mu);
  if (run.aborted())
    return false;
  Group &g = groups[{r.rank, r.stage}];
  if (g.parts.empty()) {
    g.parts.resize(size_t(replicas));
    g.present.assign(size_t(replicas), 0);
  }
  Started &mine = started[{r.worker, r.stage}];
  if (g.present[size_t(r.replica)] || mine.active) {
    std::string message = run.where(r.worker, r.action) +
                          ": the stage's gradients are already being reduced "
                          "this step";
    lock.unlock();
    run.failRank(r.worker, message);
    return false;
  }
  mine.reduction = r;
  mine.active = true;
  g.parts[size_t(r.replica)] = r;
  g.present[size_t(r.replica)] = 1;
  ++g.started;
  reduceCv.notify_all();
  return true;
}

bool LocalTransport::finishReduction(int64_t worker, int64_t stage) {
  std::unique_lock<std::mutex> lock(mu);
  auto it = started.find({worker, stage});
  if (it == started.end() || !it->second.active)
    return false;
  const Reduction r = it->second.reduction;
  it->second.active = false;
  Group &g = groups[{r.rank, r.stage}];
  const size_t D = size_t(replicas);
  // Every replica has begun: their gradients are final.
  if (!waitReduction(
          lock, r, [&] { return g.started == replicas; },
          [&] {
            std::string list;
            for (size_t j = 0; j < D; ++j)
              if (!g.present[j])
                list += (list.empty() ? "replica " : ", ") + std::to_string(j);
            return list;
          }))
    return false;
  for (const Reduction &p : g.parts)
    if (p.count != r.count) {
      std::string message = run.where(r.worker, r.action) + ": " +
                            std::to_string(r.count) +
                            " gradients to reduce, another replica has " +
                            std::to_string(p.count);
      lock.unlock();
      run.failRank(r.worker, message);
      return false;
    }
  // Nobody writes the parts until every replica is done with them.
  const std::vector<Reduction> &parts = g.parts;
  lock.unlock();

  // This replica's share: the others' pieces into the Reduce buffer (its
  // whole span written, the tail of a short last share zeroed), summed.
  const int64_t share = getReduceShare(r.count, replicas);
  auto range = [&](int64_t d) {
    return getReduceShareRange(r.count, replicas, d);
  };
  auto [lo, hi] = range(r.replica);
  for (size_t j = 0, slot = 0; j < D; ++j) {
    if (int64_t(j) == r.replica)
      continue;
    float *piece = r.scratch + int64_t(slot++) * share;
    std::memcpy(piece, parts[j].grads + lo, size_t(hi - lo) * 4);
    std::memset(piece + (hi - lo), 0, size_t(share - (hi - lo)) * 4);
  }
  sumShare(r.grads, r.scratch, replicas, r.replica, r.count);

  lock.lock();
  ++g.summed;
  reduceCv.notify_all();
  if (!waitReduction(
          lock, r, [&] { return g.summed == replicas; },
          [] { return std::string("the other replicas' sums"); }))
    return false;
  lock.unlock();
  // The other shares from the replicas that summed them.
  for (size_t c = 0; c < D; ++c) {
    if (int64_t(c) == r.replica)
      continue;
    auto [clo, chi] = range(int64_t(c));
    std::memcpy(r.grads + clo, parts[c].grads + clo, size_t(chi - clo) * 4);
  }
  lock.lock();
  // Returns once no replica reads these gradients any more, so that the
  // caller may change them (the tied copies' sum does, in place).
  uint64_t generation = g.generation;
  if (++g.done == replicas) {
    g.started = g.summed = g.done = 0;
    std::fill(g.present.begin(), g.present.end(), 0);
    ++g.generation;
    reduceCv.notify_all();
    return true;
  }
  return waitReduction(
      lock, r, [&] { return g.generation != generation; },
      [] { return std::string("the other replicas to take their shares"); });
}

} // namespace

std::unique_ptr<Transport> makeLocalTransport(RunControl &run, Device &device,
                                              int64_t numRanks,
                                              double timeoutSeconds) {
  return std::make_unique<LocalTransport>(run, device, numRanks,
                                          timeoutSeconds);
}

} // namespace gpipe::rt
