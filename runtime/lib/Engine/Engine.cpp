//===- Engine.cpp - Running compiled pipelines on threads -------*- C++ -*-===//
//
// The engine behind gpipe-run and the runtime side of Program.h's
// callbacks. Engine::run allocates one arena per rank (once, aligned, with a
// guard zone after it; arena and guard are filled with a canary pattern and
// the parameters, gradients and optimizer state are put in place), starts
// one thread per rank and drives the steps: the main thread releases a step,
// every rank runs its program once, and the main thread waits at the step
// barrier, then checks the guard zones, sums the losses, computes the step's
// metrics and releases the next step.
//
// Transfers ("local" transport) rendezvous with a single copy: the side that
// arrives second copies the sender's buffer into the receiver's and wakes
// the first; both return once the bytes are in place. Every wait has the
// run's timeout and also watches the shared abort flag: the first error
// (a timeout, a kernel error, a misused callback) is recorded with the rank,
// stage, micro-batch and action it happened in, sets the flag and wakes
// every waiter; gpipe_rt_action_begin then returns nonzero everywhere, the
// programs return, the threads end and run() returns the error.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Engine.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Checkpoint.h"
#include "gpipe/Runtime/Device.h"

#include "Arena.h"
#include "Transport/Mpi.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace gpipe::rt {
class RunState;
} // namespace gpipe::rt

namespace {
using Clock = std::chrono::steady_clock;

/// One action as it ran, in nanoseconds since the run started.
struct RecordedAction {
  int64_t step, action, beginNs, endNs;
};
} // namespace

/// A rank's view of the run (Program.h): its plan, its arena and what it is
/// doing in the current step. Only the rank's own thread touches it during a
/// step; the main thread reads it at the step barrier.
struct gpipe_rt_rank {
  gpipe::rt::RunState *run = nullptr;
  int64_t index = 0;
  const gpipe::rt::RankPlan *plan = nullptr;
  /// The arena on the device (what the program gets).
  uint8_t *arena = nullptr;
  /// The device side of the rank (null for other processes' ranks).
  gpipe::rt::RankDevice *device = nullptr;
  /// Inspections the device answers when the step ends, in the order they
  /// were asked: what to do with each answer.
  std::vector<std::function<int32_t(const gpipe::rt::Inspection &)>> deferred;
  /// When the current step started (the engine's clock).
  int64_t stepStartNs = 0;
  /// Set while the device's deferred answers are handled (finishStep).
  bool finishing = false;
  /// The mpi transport's host copy of device-memory payloads.
  std::vector<uint8_t> staging;

  /// The current step, from 0.
  int64_t step = 0;
  /// The action begin expects next, the one running (-1 between actions)
  /// and the last one begun.
  int64_t nextAction = 0, current = -1, lastBegun = -1;
  int64_t actionBeginNs = 0;
  /// Compute time of the current step.
  int64_t busyNs = 0;
  /// Stopped by fault injection.
  bool dead = false;
  /// Per stage the rank holds (plan order): optimizer steps taken, and the
  /// step the optimizer last ran in.
  std::vector<int64_t> optimizerSteps, lastStepped;
  /// The current step's losses by micro-batch.
  std::vector<double> losses;
  std::vector<char> lossReported;
  std::vector<RecordedAction> events;
  /// The flight recorder: the last kFlightRecorderSize actions begun (end
  /// -1 while running), oldest first once full.
  std::vector<RecordedAction> recent;
  size_t recentNext = 0;
  /// NonFinitePolicy::Skip: the updates of this step, applied after the
  /// step if every rank finished it cleanly.
  struct PendingUpdate {
    size_t local;
    float *params;
    const float *grads;
    float *state;
    int64_t count;
  };
  std::vector<PendingUpdate> pending;
};

namespace gpipe::rt {
namespace {


/// The MPI transport's flight recorder for SIGTERM (mpirun tearing the job
/// down after a process died): the rank thread renders its recorder into
/// one buffer after every action and flips; the handler writes the current
/// one with write(2), which is async-signal-safe.
char flightText[2][4096];
std::atomic<size_t> flightLength[2];
std::atomic<int> flightCurrent{-1};

extern "C" void onTerminate(int) {
  int current = flightCurrent.load();
  static const char head[] =
      "gpipe-run: terminated while the job goes down; ";
  ssize_t ignored = ::write(2, head, sizeof head - 1);
  if (current >= 0)
    ignored = ::write(2, flightText[current], flightLength[current].load());
  ignored = ::write(2, "\n", 1);
  (void)ignored;
  ::_exit(1);
}

void publishFlightRecorder(const std::string &text) {
  int next = flightCurrent.load() == 0 ? 1 : 0;
  size_t n = std::min(text.size(), sizeof flightText[0]);
  std::memcpy(flightText[next], text.data(), n);
  flightLength[next].store(n);
  flightCurrent.store(next);
}

/// How a run that stopped because another process failed says so.
const std::string kRemoteFailure = "stopped because another process failed: ";

/// Actions the flight recorder keeps per rank.
constexpr size_t kFlightRecorderSize = 6;

/// "12 us", "3.4 ms", "1.25 s".
std::string formatDuration(int64_t ns) {
  char buf[32];
  if (ns < 1'000'000)
    std::snprintf(buf, sizeof buf, "%.0f us", double(ns) * 1e-3);
  else if (ns < 1'000'000'000)
    std::snprintf(buf, sizeof buf, "%.1f ms", double(ns) * 1e-6);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", double(ns) * 1e-9);
  return buf;
}

std::string floatText(float value) {
  return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

std::string formatSeconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", seconds);
  if (std::fabs(std::strtod(buf, nullptr) - seconds) > 1e-9)
    std::snprintf(buf, sizeof buf, "%.3g", seconds);
  return buf;
}

/// Where a non-finite value was found, in the order values flow through a
/// step: payloads leaving forwards by stage ascending (a loss with its last
/// stage's forward), payloads leaving backwards by stage descending, then
/// gradient blocks by stage descending; micro-batch next. Of several reports
/// in a step the smallest is where the value appeared (the rest follow from
/// it), whichever rank noticed first.
struct NonFiniteSite {
  int64_t phase = 0, position = 0, mb = 0;
  static NonFiniteSite forward(int64_t stage, int64_t mb) {
    return {0, stage, mb};
  }
  static NonFiniteSite backward(int64_t stage, int64_t mb) {
    return {1, -stage, mb};
  }
  static NonFiniteSite gradients(int64_t stage) { return {2, -stage, 0}; }
  bool operator<(const NonFiniteSite &o) const {
    return std::tie(phase, position, mb) < std::tie(o.phase, o.position, o.mb);
  }
};

/// One pending transfer of the local transport, keyed by (sender, receiver,
/// tag).
struct Slot {
  bool sendPosted = false, recvPosted = false;
  const void *sendData = nullptr;
  void *recvData = nullptr;
  /// The first side's byte count, action and rank.
  int64_t bytes = 0, action = 0, rank = 0;
  bool copying = false, done = false, failed = false;
};

} // namespace

/// Everything one Engine::run shares between its threads.
class RunState {
public:
  RunState(const ModelImage &model, const RunOptions &options)
      : model(model), meta(model.metadata()), options(options),
        timeoutNs(int64_t(options.timeoutSeconds * 1e9)), start(Clock::now()) {}

  const ModelImage &model;
  const ModelMetadata &meta;
  const RunOptions &options;
  /// TransportKind::Mpi and Nccl: this process runs only rank `me`, and
  /// process 0 gathers; Nccl: transfers go through the device's NCCL.
  bool mpi = false, nccl = false;
  int me = 0;
  /// Where the arenas live and the kernels run.
  Device *device = nullptr;
  OptimizerConfig optimizer;
  const Dataset *data = nullptr;
  int64_t timeoutNs;
  Clock::time_point start;
  std::vector<gpipe_rt_rank> ranks;

  std::mutex mu;
  std::condition_variable mainCv;
  std::vector<std::unique_ptr<std::condition_variable>> rankCvs;
  std::atomic<bool> aborted{false};
  /// (step from 1 or 0 for none, message); the first is the run's error.
  std::vector<std::pair<int64_t, std::string>> errors;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Slot> slots;
  /// The last step the main thread released (-1 before the first).
  int64_t released = -1;
  std::vector<char> finished;
  int64_t finishedCount = 0, lastFinishNs = 0;
  /// When any rank last began or ended an action.
  std::atomic<int64_t> lastProgressNs{0};

  int64_t nowNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                                start)
        .count();
  }

  /// Records an error and aborts the run; `mu` must be held.
  void failLocked(int64_t step, std::string message) {
    errors.push_back({step, std::move(message)});
    if (!aborted.exchange(true)) {
      mainCv.notify_all();
      for (auto &cv : rankCvs)
        cv->notify_all();
    }
  }

  void fail(int64_t step, std::string message) {
    std::lock_guard<std::mutex> lock(mu);
    failLocked(step, std::move(message));
  }

  void fail(const gpipe_rt_rank *rank, std::string message) {
    fail(rank->step + 1, std::move(message));
  }

  /// "rank 1 (stage 1, micro-batch 3, recv forward from rank 0)".
  std::string where(const gpipe_rt_rank *rank, int64_t action) const {
    std::string s = "rank " + std::to_string(rank->index);
    if (action < 0 || action >= int64_t(rank->plan->actions.size()))
      return s + (action < 0 ? std::string(" (between actions)")
                             : " (action " + std::to_string(action) + ")");
    const ActionSpec &a = rank->plan->actions[size_t(action)];
    s += " (stage " + std::to_string(a.stage);
    if (a.mb >= 0)
      s += ", micro-batch " + std::to_string(a.mb);
    s += ", ";
    s += actionKindName(a.kind);
    if (a.isTransfer())
      s += std::string(" ") + abi::getDirectionName(a.direction()) +
           (a.isSend() ? " to rank " : " from rank ") + std::to_string(a.peer);
    return s + ")";
  }

  /// The action a callback outside begin/end is attributed to.
  static int64_t currentAction(const gpipe_rt_rank *rank) {
    return rank->current >= 0 ? rank->current : rank->lastBegun;
  }

  /// A non-finite value found at `rank`: stops the run at once (returns 1)
  /// when the policy is Stop and the value was seen as it appeared;
  /// otherwise marks the step (returns 0): Skip drops the step's updates,
  /// and Stop with checks a device answered at the end of the step stops
  /// the run at the step barrier, naming the earliest site.
  int32_t nonFinite(gpipe_rt_rank *rank, NonFiniteSite site,
                    std::string message) {
    if (options.onNonFinite == NonFinitePolicy::Stop && !rank->finishing) {
      fail(rank, message);
      return 1;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (nonFiniteMessage.empty() || site < nonFiniteSite) {
      nonFiniteSite = site;
      nonFiniteMessage = std::move(message);
    }
    return 0;
  }
  /// NaN injection (tests): whether `rank` is at the injected step and
  /// micro-batch.
  bool nanDue(const gpipe_rt_rank *rank, int64_t mb, int64_t bytes) const {
    const std::optional<NanInjection> &nan = options.injectNan;
    return nan && nan->rank == rank->index && nan->step == rank->step + 1 &&
           nan->mb == mb && bytes >= 4;
  }
  /// Poisons the received payload at device address `data` when due.
  int32_t maybeInjectNan(gpipe_rt_rank *rank, int64_t mb, void *data,
                         int64_t bytes) {
    if (!nanDue(rank, mb, bytes))
      return 0;
    Status s = rank->device->poison(data);
    if (s.ok())
      return 0;
    fail(rank, where(rank, currentAction(rank)) + ": " + s.message());
    return 1;
  }
  /// Asks the rank's device about `count` floats at `src`; `handle` gets
  /// the answer now or when the step ends. Returns what `handle` returned
  /// (0 when deferred).
  int32_t inspect(gpipe_rt_rank *rank, const float *src, int64_t count,
                  std::function<int32_t(const Inspection &)> handle) {
    Inspection result;
    if (rank->device->inspect(src, count, result))
      return handle(result);
    rank->deferred.push_back(std::move(handle));
    return 0;
  }
  /// The earliest non-finite value of the current step.
  std::string nonFiniteMessage;
  NonFiniteSite nonFiniteSite;

  /// The flight recorder of `rank` as one line.
  std::string flightRecorder(const gpipe_rt_rank *rank) const;

  int32_t transfer(gpipe_rt_rank *rank, int64_t action, bool isSend,
                   const void *sendData, void *recvData, int64_t bytes);
  /// transfer's movement of the bytes, by the run's transport.
  int32_t deliver(gpipe_rt_rank *rank, int64_t action, const ActionSpec &a,
                  bool isSend, const void *sendData, void *recvData,
                  int64_t bytes);
  int32_t actionBegin(gpipe_rt_rank *rank, int64_t action);
  void actionEnd(gpipe_rt_rank *rank, int64_t action);
  int32_t load(gpipe_rt_rank *rank, bool labels, int64_t mb, void *data,
               int64_t bytes);
  int32_t reportLoss(gpipe_rt_rank *rank, int64_t mb, const float *loss);
  int32_t optimizerStep(gpipe_rt_rank *rank, int64_t stage, float *params,
                        const float *grads, float *state, int64_t count);
  int32_t kernelError(gpipe_rt_rank *rank, int64_t site, int32_t status);
  void rankMain(gpipe_rt_rank *rank);
  /// Waits for the rank's device at the end of its step and handles what
  /// it reports; false when the run is failing.
  bool finishStep(gpipe_rt_rank *rank);
};

//===----------------------------------------------------------------------===//
// Callbacks
//===----------------------------------------------------------------------===//

int32_t RunState::actionBegin(gpipe_rt_rank *rank, int64_t action) {
  if (aborted.load(std::memory_order_relaxed) || rank->dead)
    return 1;
  if (options.fault && options.fault->rank == rank->index &&
      options.fault->step == rank->step + 1 &&
      options.fault->action == action) {
    switch (options.fault->mode) {
    case FaultInjection::Mode::Kill:
      std::fflush(nullptr);
      std::raise(SIGKILL);
      break;
    case FaultInjection::Mode::Stall:
      // Hangs like a stuck computation: no progress, no messages, until
      // the run is torn down.
      while (!aborted.load())
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      break;
    case FaultInjection::Mode::Stop:
      break;
    }
    rank->dead = true;
    return 1;
  }
  int64_t numActions = int64_t(rank->plan->actions.size());
  if (action < 0 || action >= numActions) {
    fail(rank, where(rank, currentAction(rank)) + ": action " +
                   std::to_string(action) + " began but the program has " +
                   std::to_string(numActions) + " actions");
    return 1;
  }
  if (rank->current >= 0 || action != rank->nextAction) {
    fail(rank, where(rank, action) + ": action " + std::to_string(action) +
                   " began " +
                   (rank->current >= 0
                        ? "while action " + std::to_string(rank->current) +
                              " was still running"
                        : "when action " + std::to_string(rank->nextAction) +
                              " was due (actions run in order)"));
    return 1;
  }
  rank->current = rank->lastBegun = action;
  rank->nextAction = action + 1;
  rank->actionBeginNs = nowNs();
  RecordedAction entry{rank->step, action, rank->actionBeginNs, -1};
  if (rank->recent.size() < kFlightRecorderSize) {
    rank->recent.push_back(entry);
  } else {
    rank->recent[rank->recentNext] = entry;
    rank->recentNext = (rank->recentNext + 1) % kFlightRecorderSize;
  }
  if (mpi)
    publishFlightRecorder(flightRecorder(rank));
  lastProgressNs.store(rank->actionBeginNs, std::memory_order_relaxed);
  rank->device->actionBegin(action);
  return 0;
}

void RunState::actionEnd(gpipe_rt_rank *rank, int64_t action) {
  if (aborted.load(std::memory_order_relaxed) || rank->dead)
    return;
  if (action != rank->current) {
    fail(rank,
         where(rank, currentAction(rank)) + ": action " +
             std::to_string(action) + " ended but " +
             (rank->current >= 0 ? "action " + std::to_string(rank->current) +
                                       " is the one running"
                                 : std::string("no action is running")));
    return;
  }
  rank->device->actionEnd(action);
  int64_t end = nowNs();
  lastProgressNs.store(end, std::memory_order_relaxed);
  const ActionSpec &a = rank->plan->actions[size_t(action)];
  // Devices that time on their own clock report busy time and the trace
  // when the step ends.
  if (!rank->device->timesOnDevice()) {
    if (isComputeAction(a.kind))
      rank->busyNs += end - rank->actionBeginNs;
    if (options.recordTrace)
      rank->events.push_back({rank->step, action, rank->actionBeginNs, end});
  }
  if (!rank->recent.empty()) {
    size_t newest = rank->recent.size() < kFlightRecorderSize
                        ? rank->recent.size() - 1
                        : (rank->recentNext + kFlightRecorderSize - 1) %
                              kFlightRecorderSize;
    rank->recent[newest].endNs = end;
  }
  rank->current = -1;
  if (mpi)
    publishFlightRecorder(flightRecorder(rank));
}

int32_t RunState::transfer(gpipe_rt_rank *rank, int64_t action, bool isSend,
                           const void *sendData, void *recvData,
                           int64_t bytes) {
  if (aborted.load(std::memory_order_relaxed))
    return 1;
  const char *callback = isSend ? "gpipe_rt_send" : "gpipe_rt_recv";
  int64_t numActions = int64_t(rank->plan->actions.size());
  if (action < 0 || action >= numActions) {
    fail(rank, where(rank, currentAction(rank)) + ": " + callback +
                   " for action " + std::to_string(action) +
                   " of a program with " + std::to_string(numActions) +
                   " actions");
    return 1;
  }
  const ActionSpec &a = rank->plan->actions[size_t(action)];
  if (isSend ? !a.isSend() : !a.isRecv()) {
    fail(rank, where(rank, action) + ": " + callback + " on a " +
                   actionKindName(a.kind) + " action");
    return 1;
  }
  if (bytes < 0 || (bytes > 0 && !(isSend ? sendData : recvData))) {
    fail(rank, where(rank, action) + ": " + callback + " of " +
                   std::to_string(bytes) + " bytes at a null pointer");
    return 1;
  }
  const bool f32 = a.payload == GPIPE_RT_F32;
  const bool forward = a.direction() == Direction::Forward;
  if (isSend && f32 && bytes > 0) {
    std::string at = where(rank, action);
    if (inspect(rank, static_cast<const float *>(sendData), bytes / 4,
                [this, rank, at, &a, forward](const Inspection &r) -> int32_t {
                  if (r.badIndex < 0)
                    return 0;
                  return nonFinite(
                      rank,
                      forward
                          ? NonFiniteSite::forward(a.stage, a.mb)
                          : NonFiniteSite::backward(a.stage, a.mb),
                      at + ": non-finite " +
                                (forward ? "activation" : "gradient") +
                                " (" + floatText(r.badValue) + " at element " +
                                std::to_string(r.badIndex) + ") leaving stage " +
                                std::to_string(a.stage) + " for micro-batch " +
                                std::to_string(a.mb));
                }))
      return 1;
  }
  if (deliver(rank, action, a, isSend, sendData, recvData, bytes) != 0)
    return 1;
  if (!isSend && forward && f32)
    return maybeInjectNan(rank, a.mb, recvData, bytes);
  return 0;
}

int32_t RunState::deliver(gpipe_rt_rank *rank, int64_t action,
                          const ActionSpec &a, bool isSend,
                          const void *sendData, void *recvData,
                          int64_t bytes) {
  if (nccl) {
    Status s = device->ncclTransfer(
        *rank->device, isSend,
        isSend ? const_cast<void *>(sendData) : recvData, bytes, int(a.peer),
        Clock::now() + std::chrono::nanoseconds(timeoutNs), aborted);
    if (!s.ok()) {
      fail(rank, where(rank, action) + ": " + s.message());
      return 1;
    }
    return 0;
  }
  if (mpi) {
    Clock::time_point deadline =
        Clock::now() + std::chrono::nanoseconds(timeoutNs);
    std::string abortMessage;
    // Device memory goes through a host copy (the rank's staging buffer).
    const bool staged = !device->hostMemory() && bytes > 0;
    std::vector<uint8_t> &staging = rank->staging;
    if (staged && staging.size() < size_t(bytes))
      staging.resize(size_t(bytes));
    if (staged && isSend) {
      Status s = rank->device->copyOut(staging.data(), sendData, bytes);
      if (!s.ok()) {
        fail(rank, where(rank, action) + ": " + s.message());
        return 1;
      }
    }
    mpi::Wait w =
        isSend ? mpi::send(staged ? staging.data() : sendData, bytes,
                           int(a.peer), int(a.tag), deadline, abortMessage)
               : mpi::recv(staged ? staging.data() : recvData, bytes,
                           int(a.peer), int(a.tag), deadline, abortMessage);
    if (w == mpi::Wait::Done) {
      if (staged && !isSend) {
        Status s = rank->device->copyIn(recvData, staging.data(), bytes);
        if (!s.ok()) {
          fail(rank, where(rank, action) + ": " + s.message());
          return 1;
        }
      }
      return 0;
    }
    fail(rank, w == mpi::Wait::Aborted
                   ? kRemoteFailure + abortMessage
                   : where(rank, action) + ": " +
                         (isSend ? "no receiver" : "no message") + " after " +
                         formatSeconds(options.timeoutSeconds) +
                         " s; the peer may have died or stalled");
    return 1;
  }
  auto key = isSend ? std::make_tuple(rank->index, a.peer, a.tag)
                    : std::make_tuple(a.peer, rank->index, a.tag);
  std::unique_lock<std::mutex> lock(mu);
  if (aborted)
    return 1;
  Slot &slot = slots[key];
  bool peerWaiting = isSend ? slot.recvPosted : slot.sendPosted;
  if (peerWaiting) {
    // Arrived second: check the sizes, copy, wake the peer.
    gpipe_rt_rank *peer = &ranks[size_t(slot.rank)];
    if (slot.bytes != bytes) {
      int64_t sendBytes = isSend ? bytes : slot.bytes;
      int64_t recvBytes = isSend ? slot.bytes : bytes;
      std::string sender =
          isSend ? where(rank, action) : where(peer, slot.action);
      std::string receiver =
          isSend ? where(peer, slot.action) : where(rank, action);
      slot.failed = slot.done = true;
      rankCvs[size_t(slot.rank)]->notify_all();
      failLocked(rank->step + 1,
                 where(rank, action) + ": transfer size mismatch: " + sender +
                     " sends " + std::to_string(sendBytes) + " bytes but " +
                     receiver + " receives " + std::to_string(recvBytes));
      return 1;
    }
    void *dst = isSend ? slot.recvData : recvData;
    const void *src = isSend ? sendData : slot.sendData;
    slot.copying = true;
    lock.unlock();
    Status copied = Status::success();
    if (bytes > 0)
      copied = isSend ? device->copyBetweenRanks(*rank->device, src,
                                                 *peer->device, dst, bytes)
                      : device->copyBetweenRanks(*peer->device, src,
                                                 *rank->device, dst, bytes);
    lock.lock();
    slot.copying = false;
    slot.done = true;
    slot.failed = !copied.ok();
    rankCvs[size_t(slot.rank)]->notify_all();
    if (!copied.ok()) {
      failLocked(rank->step + 1,
                 where(rank, action) + ": copy between ranks: " +
                     copied.message());
      return 1;
    }
    return 0;
  }
  // Arrived first: post the buffer and wait for the peer to copy.
  if (isSend) {
    slot.sendPosted = true;
    slot.sendData = sendData;
  } else {
    slot.recvPosted = true;
    slot.recvData = recvData;
  }
  slot.bytes = bytes;
  slot.action = action;
  slot.rank = rank->index;
  std::condition_variable &cv = *rankCvs[size_t(rank->index)];
  Clock::time_point deadline =
      Clock::now() + std::chrono::nanoseconds(timeoutNs);
  for (;;) {
    if (slot.done) {
      bool failed = slot.failed;
      slots.erase(key);
      return failed ? 1 : 0;
    }
    if (!slot.copying) {
      if (aborted) {
        slots.erase(key);
        return 1;
      }
      if (Clock::now() >= deadline) {
        slots.erase(key);
        failLocked(rank->step + 1, where(rank, action) + ": " +
                                       (isSend ? "no receiver" : "no message") +
                                       " after " +
                                       formatSeconds(options.timeoutSeconds) +
                                       " s; the peer may have died or stalled");
        return 1;
      }
      cv.wait_until(lock, deadline);
    } else {
      // The peer is copying into or out of our buffer: wait for it to
      // finish whatever happens, the buffer must not go away under it.
      cv.wait(lock);
    }
  }
}

int32_t RunState::load(gpipe_rt_rank *rank, bool labels, int64_t mb, void *out,
                       int64_t bytes) {
  if (aborted.load(std::memory_order_relaxed))
    return 1;
  const char *callback =
      labels ? "gpipe_rt_load_labels" : "gpipe_rt_load_input";
  std::string at = where(rank, currentAction(rank)) + ": " + callback;
  if (labels && !meta.labels) {
    fail(rank, at + ": the model has no labels");
    return 1;
  }
  const TensorSpec &spec = labels ? *meta.labels : meta.input;
  if (mb < 0 || mb >= meta.microbatches) {
    fail(rank, at + ": micro-batch " + std::to_string(mb) + " is outside [0, " +
                   std::to_string(meta.microbatches) + ")");
    return 1;
  }
  int64_t rows = meta.microBatchSize();
  int64_t sampleBytes = spec.sampleBytes();
  if (bytes != rows * sampleBytes || (bytes > 0 && !out)) {
    fail(rank, at + ": asked for " + std::to_string(bytes) +
                   " bytes, one micro-batch is " +
                   std::to_string(rows * sampleBytes) + " bytes (" +
                   std::to_string(rows) + " samples of " +
                   std::to_string(sampleBytes) + ")");
    return 1;
  }
  uint64_t n = uint64_t(data->numSamples());
  uint64_t first = uint64_t(rank->step) * uint64_t(meta.batchSize()) +
                   uint64_t(mb) * uint64_t(rows);
  const bool poison = !labels && spec.dtype == GPIPE_RT_F32 &&
                      nanDue(rank, mb, bytes);
  // One staging slot per (input or labels, micro-batch) and step.
  int64_t slot = (labels ? meta.microbatches : 0) + mb;
  Status s = rank->device->upload(out, bytes, slot, [&](uint8_t *dst) {
    for (int64_t j = 0; j < rows; ++j) {
      int64_t sample = int64_t((first + uint64_t(j)) % n);
      if (labels)
        data->copyLabels(sample, dst + j * sampleBytes);
      else
        data->copyInput(sample, dst + j * sampleBytes);
    }
    if (poison)
      reinterpret_cast<float *>(dst)[0] =
          std::numeric_limits<float>::quiet_NaN();
  });
  if (!s.ok()) {
    fail(rank, at + ": " + s.message());
    return 1;
  }
  return 0;
}

int32_t RunState::reportLoss(gpipe_rt_rank *rank, int64_t mb,
                             const float *loss) {
  if (aborted.load(std::memory_order_relaxed))
    return 1;
  std::string at = where(rank, currentAction(rank)) + ": gpipe_rt_report_loss";
  if (mb < 0 || mb >= meta.microbatches || !loss) {
    fail(rank, at + (loss ? ": micro-batch " + std::to_string(mb) +
                                " is outside [0, " +
                                std::to_string(meta.microbatches) + ")"
                          : std::string(": null loss")));
    return 1;
  }
  if (rank->lossReported[size_t(mb)]) {
    fail(rank, at + ": micro-batch " + std::to_string(mb) +
                   "'s loss was already reported this step");
    return 1;
  }
  rank->lossReported[size_t(mb)] = 1;
  int64_t action = currentAction(rank);
  std::string where = this->where(rank, action);
  int64_t stage = action >= 0 ? rank->plan->actions[size_t(action)].stage : 0;
  return inspect(rank, loss, 1,
                 [this, rank, mb, where, stage](const Inspection &r) -> int32_t {
                   rank->losses[size_t(mb)] = double(r.first);
                   if (r.badIndex < 0)
                     return 0;
                   return nonFinite(rank, NonFiniteSite::forward(stage, mb),
                                    where + ": non-finite loss (" +
                                              floatText(r.first) +
                                              ") of micro-batch " +
                                              std::to_string(mb));
                 });
}

int32_t RunState::optimizerStep(gpipe_rt_rank *rank, int64_t stage,
                                float *params, const float *grads, float *state,
                                int64_t count) {
  if (aborted.load(std::memory_order_relaxed))
    return 1;
  std::string at =
      where(rank, currentAction(rank)) + ": gpipe_rt_optimizer_step";
  const std::vector<StagePlan> &stages = rank->plan->stages;
  size_t local = 0;
  while (local < stages.size() && stages[local].stage != stage)
    ++local;
  if (local == stages.size()) {
    fail(rank, at + ": the rank does not hold stage " + std::to_string(stage));
    return 1;
  }
  const StagePlan &plan = stages[local];
  if (count != plan.paramBytes / 4) {
    fail(rank, at + ": " + std::to_string(count) + " parameters, stage " +
                   std::to_string(stage) + " has " +
                   std::to_string(plan.paramBytes / 4));
    return 1;
  }
  if (count > 0 &&
      (reinterpret_cast<uint8_t *>(params) != rank->arena + plan.paramsOffset ||
       reinterpret_cast<const uint8_t *>(grads) !=
           rank->arena + plan.gradsOffset)) {
    fail(rank, at +
                   ": parameters or gradients are not at the planned "
                   "params_offset " +
                   std::to_string(plan.paramsOffset) + " / grads_offset " +
                   std::to_string(plan.gradsOffset));
    return 1;
  }
  if (count > 0 && optimizer.stateMultiple() > 0 &&
      reinterpret_cast<uint8_t *>(state) != rank->arena + plan.stateOffset) {
    fail(rank, at +
                   ": the optimizer state is not at the planned "
                   "state_offset " +
                   std::to_string(plan.stateOffset));
    return 1;
  }
  if (rank->lastStepped[local] == rank->step) {
    fail(rank, at + ": stage " + std::to_string(stage) +
                   " already stepped this step");
    return 1;
  }
  rank->lastStepped[local] = rank->step;
  std::string where = this->where(rank, currentAction(rank));
  if (inspect(rank, grads, count,
              [this, rank, &plan, where, stage](const Inspection &r) -> int32_t {
                if (r.badIndex < 0)
                  return 0;
                std::string name = "?";
                for (const ParamSlot &slot : plan.params)
                  if (r.badIndex * 4 >= slot.offset &&
                      r.badIndex * 4 < slot.offset + slot.elements * 4)
                    name = slot.name;
                return nonFinite(rank, NonFiniteSite::gradients(stage),
                                 where + ": non-finite gradient (" +
                                           floatText(r.badValue) +
                                           ") of parameter '" + name +
                                           "' on stage " +
                                           std::to_string(stage));
              }))
    return 1;
  if (options.onNonFinite == NonFinitePolicy::Skip) {
    // Applied after the step, if every rank finished it cleanly.
    rank->pending.push_back({local, params, grads, state, count});
    return 0;
  }
  int64_t t = ++rank->optimizerSteps[local];
  Status s = rank->device->optimizerStep(
      optimizer, t, params, grads, optimizer.stateMultiple() ? state : nullptr,
      count);
  if (!s.ok()) {
    fail(rank, at + ": " + s.message());
    return 1;
  }
  return 0;
}

int32_t RunState::kernelError(gpipe_rt_rank *rank, int64_t site,
                              int32_t status) {
  const char *library =
      model.libraryLastError ? model.libraryLastError() : nullptr;
  const char *own = gpipe_rt_last_error();
  std::string fromDevice = rank->device->kernelError();
  std::string message =
      !fromDevice.empty()   ? fromDevice
      : library && *library ? library
      : own && *own         ? own
                    : "kernel failed with status " + std::to_string(status);
  std::string at = where(rank, currentAction(rank)) + ": ";
  if (site >= 0 && site < int64_t(meta.sites.size())) {
    const KernelSite &k = meta.sites[size_t(site)];
    at += k.op;
    if (!k.loc.empty())
      at += " at " + k.loc;
    if (!k.function.empty())
      at += " in " + (k.function[0] == '@' ? k.function : "@" + k.function);
    at += ": ";
  } else {
    at += "kernel site " + std::to_string(site) + ": ";
  }
  if (!aborted.load())
    fail(rank, at + message);
  return status ? status : 1;
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

std::string RunState::flightRecorder(const gpipe_rt_rank *rank) const {
  std::string line = "rank " + std::to_string(rank->index) + " last actions:";
  if (rank->recent.empty())
    return line + " none";
  size_t n = rank->recent.size();
  size_t first = n < kFlightRecorderSize ? 0 : rank->recentNext;
  int64_t now = nowNs();
  for (size_t i = 0; i < n; ++i) {
    const RecordedAction &e = rank->recent[(first + i) % n];
    const ActionSpec &a = rank->plan->actions[size_t(e.action)];
    line += i ? "; " : " ";
    line += "step " + std::to_string(e.step + 1) + " #" +
            std::to_string(e.action) + " " + actionKindName(a.kind);
    if (a.isTransfer())
      line += std::string(" ") + abi::getDirectionName(a.direction()) +
              (a.isSend() ? " to " : " from ") + "rank " +
              std::to_string(a.peer);
    line += " (stage " + std::to_string(a.stage);
    if (a.mb >= 0)
      line += ", mb " + std::to_string(a.mb);
    line += e.endNs >= 0
                ? ", " + formatDuration(e.endNs - e.beginNs) + ")"
                : ", unfinished after " + formatDuration(now - e.beginNs) + ")";
  }
  return line;
}

void RunState::rankMain(gpipe_rt_rank *rank) {
  if (Status s = rank->device->bind(); !s.ok()) {
    fail(options.resume ? options.resume->step + 1 : 1,
         "rank " + std::to_string(rank->index) + ": " + s.message());
    return;
  }
  gpipe_model_rank_fn fn = model.rankFunction(rank->index);
  std::condition_variable &cv = *rankCvs[size_t(rank->index)];
  size_t numActions = rank->plan->actions.size();
  int64_t startStep = options.resume ? options.resume->step : 0;
  for (int64_t step = startStep; step < options.steps; ++step) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return released >= step || aborted; });
      if (aborted)
        return;
    }
    rank->step = step;
    rank->nextAction = 0;
    rank->current = rank->lastBegun = -1;
    rank->busyNs = 0;
    rank->pending.clear();
    rank->deferred.clear();
    std::fill(rank->lossReported.begin(), rank->lossReported.end(), 0);
    gpipe_rt_clear_error();
    if (model.libraryClearError)
      model.libraryClearError();
    rank->device->clearKernelError();
    rank->stepStartNs = nowNs();
    if (Status s = rank->device->beginStep(); !s.ok()) {
      fail(rank, "rank " + std::to_string(rank->index) + ": " + s.message());
      return;
    }

    // A step that ends without finishStep leaves the device's work to
    // stop or drain before the thread (and then the arenas) go away.
    struct Abandon {
      RunState &run;
      gpipe_rt_rank *rank;
      bool armed = true;
      ~Abandon() {
        if (armed)
          rank->device->abandonStep(
              Clock::now() + std::chrono::nanoseconds(run.timeoutNs));
      }
    } abandon{*this, rank};
    int32_t rc = fn(rank, rank->arena);
    if (rank->dead || aborted)
      return;
    if (rc != 0) {
      fail(rank, where(rank, currentAction(rank)) + ": " + rank->plan->symbol +
                     " returned " + std::to_string(rc) +
                     " without reporting an error");
      return;
    }
    if (rank->current >= 0 || rank->nextAction != int64_t(numActions)) {
      fail(rank, "rank " + std::to_string(rank->index) + ": " +
                     rank->plan->symbol + " returned after beginning " +
                     std::to_string(rank->nextAction) + " of its " +
                     std::to_string(numActions) + " actions" +
                     (rank->current >= 0
                          ? " (action " + std::to_string(rank->current) +
                                " never ended)"
                          : std::string()));
      return;
    }
    if (!finishStep(rank))
      return;
    abandon.armed = false;
    std::lock_guard<std::mutex> lock(mu);
    finished[size_t(rank->index)] = 1;
    ++finishedCount;
    lastFinishNs = nowNs();
    mainCv.notify_all();
  }
}

bool RunState::finishStep(gpipe_rt_rank *rank) {
  std::vector<Inspection> inspections;
  std::vector<ActionTiming> timings;
  Status s = rank->device->finishStep(
      Clock::now() + std::chrono::nanoseconds(timeoutNs), aborted, inspections,
      timings);
  if (aborted)
    return false;
  if (!s.ok()) {
    fail(rank, "rank " + std::to_string(rank->index) + ": " + s.message());
    return false;
  }
  if (inspections.size() != rank->deferred.size()) {
    fail(rank, "rank " + std::to_string(rank->index) + ": the device answered " +
                   std::to_string(inspections.size()) + " of " +
                   std::to_string(rank->deferred.size()) + " inspections");
    return false;
  }
  rank->finishing = true;
  for (size_t i = 0; i < inspections.size(); ++i)
    if (rank->deferred[i](inspections[i]) != 0) {
      rank->finishing = false;
      return false;
    }
  rank->finishing = false;
  if (rank->device->timesOnDevice()) {
    rank->busyNs = 0;
    for (const ActionTiming &t : timings) {
      if (t.action < 0 || t.action >= int64_t(rank->plan->actions.size()))
        continue;
      if (isComputeAction(rank->plan->actions[size_t(t.action)].kind))
        rank->busyNs += t.endNs - t.beginNs;
      if (options.recordTrace)
        rank->events.push_back({rank->step, t.action,
                                rank->stepStartNs + t.beginNs,
                                rank->stepStartNs + t.endNs});
    }
  }
  return true;
}

} // namespace gpipe::rt

//===----------------------------------------------------------------------===//
// The C ABI
//===----------------------------------------------------------------------===//

using gpipe::rt::RunState;

extern "C" int32_t gpipe_rt_action_begin(gpipe_rt_rank *rank, int64_t action) {
  return rank->run->actionBegin(rank, action);
}

extern "C" void gpipe_rt_action_end(gpipe_rt_rank *rank, int64_t action) {
  rank->run->actionEnd(rank, action);
}

extern "C" int32_t gpipe_rt_send(gpipe_rt_rank *rank, int64_t action,
                                 const void *data, int64_t bytes) {
  return rank->run->transfer(rank, action, true, data, nullptr, bytes);
}

extern "C" int32_t gpipe_rt_recv(gpipe_rt_rank *rank, int64_t action,
                                 void *data, int64_t bytes) {
  return rank->run->transfer(rank, action, false, nullptr, data, bytes);
}

extern "C" int32_t gpipe_rt_load_input(gpipe_rt_rank *rank, int64_t microbatch,
                                       void *data, int64_t bytes) {
  return rank->run->load(rank, false, microbatch, data, bytes);
}

extern "C" int32_t gpipe_rt_load_labels(gpipe_rt_rank *rank, int64_t microbatch,
                                        void *data, int64_t bytes) {
  return rank->run->load(rank, true, microbatch, data, bytes);
}

extern "C" int32_t gpipe_rt_report_loss(gpipe_rt_rank *rank, int64_t microbatch,
                                        const float *loss) {
  return rank->run->reportLoss(rank, microbatch, loss);
}

extern "C" int32_t gpipe_rt_optimizer_step(gpipe_rt_rank *rank, int64_t stage,
                                           float *params, const float *grads,
                                           float *state, int64_t count) {
  return rank->run->optimizerStep(rank, stage, params, grads, state, count);
}

extern "C" int32_t gpipe_rt_kernel_error(gpipe_rt_rank *rank, int64_t site,
                                         int32_t status) {
  return rank->run->kernelError(rank, site, status);
}

//===----------------------------------------------------------------------===//
// Engine::run
//===----------------------------------------------------------------------===//

namespace gpipe::rt {
namespace {

Status checkRunOptions(const ModelMetadata &meta, const RunOptions &options) {
  if (options.steps < 1)
    return Status::error("the number of steps must be at least 1");
  if (!(options.timeoutSeconds > 0) || !std::isfinite(options.timeoutSeconds) ||
      options.timeoutSeconds > 1e6)
    return Status::error("the timeout must be positive seconds");
  if (const std::optional<FaultInjection> &f = options.fault) {
    if (f->rank < 0 || f->rank >= meta.numRanks())
      return Status::error("fault injection: rank " + std::to_string(f->rank) +
                           " is outside [0, " +
                           std::to_string(meta.numRanks()) + ")");
    int64_t first = options.resume ? options.resume->step + 1 : 1;
    if (f->step < first || f->step > options.steps)
      return Status::error("fault injection: step " + std::to_string(f->step) +
                           " is outside [" + std::to_string(first) + ", " +
                           std::to_string(options.steps) + "]");
    int64_t actions = int64_t(meta.ranks[size_t(f->rank)].actions.size());
    if (f->action < 0 || f->action >= actions)
      return Status::error("fault injection: rank " + std::to_string(f->rank) +
                           " has actions [0, " + std::to_string(actions) +
                           "), not " + std::to_string(f->action));
  }
  return Status::success();
}

/// The checkpoint name of the optimizer state `config` keeps.
std::string stateKindName(const OptimizerConfig &config) {
  if (config.kind == OptimizerKind::Adam)
    return "adam";
  return config.stateMultiple() > 0 ? "momentum" : "sgd";
}

/// Appends / reads plain values for the per-step exchange.
template <typename T> void put(std::vector<uint8_t> &out, const T &value) {
  const uint8_t *p = reinterpret_cast<const uint8_t *>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}
template <typename T> T take(const std::vector<uint8_t> &in, size_t &at) {
  T value{};
  if (at + sizeof(T) <= in.size())
    std::memcpy(&value, in.data() + at, sizeof(T));
  at += sizeof(T);
  return value;
}

std::string unfinishedRanks(const std::vector<char> &finished) {
  std::string list;
  int count = 0;
  for (size_t r = 0; r < finished.size(); ++r)
    if (!finished[r]) {
      list += (list.empty() ? "" : ", ") + std::to_string(r);
      ++count;
    }
  return (count == 1 ? "rank " : "ranks ") + list;
}

} // namespace

Status Engine::run(const RunOptions &options, RunResult &result) {
  result = RunResult();
  const ModelMetadata &meta = model.metadata();
  Status s = checkRunOptions(meta, options);
  if (!s.ok())
    return s;
  RunState state(model, options);
  std::shared_ptr<Device> devicePtr = options.device;
  if (!devicePtr) {
    s = makeDevice(meta.target, 0, devicePtr);
    if (!s.ok())
      return s;
  }
  if (meta.target != devicePtr->target())
    return Status::error("the model was compiled for --target " + meta.target +
                         " but the run's device is " + devicePtr->describe() +
                         " (--target " + devicePtr->target() + ")");
  Device &device = *devicePtr;
  state.device = &device;
  result.deviceDescription = device.describe();
  s = resolveOptimizer(meta, options.optimizer, state.optimizer);
  if (!s.ok())
    return s;
  result.optimizer = state.optimizer;

  std::shared_ptr<const Dataset> data = options.dataset;
  if (!data) {
    std::unique_ptr<Dataset> loaded;
    s = options.dataPath.empty()
            ? makeBuiltinDataset(meta, options.seed, loaded)
            : loadDataset(options.dataPath, meta, loaded);
    if (!s.ok())
      return s;
    data = std::move(loaded);
  }
  if (data->numSamples() < 1)
    return Status::error("the data holds no samples");
  state.data = data.get();
  result.dataDescription = data->describe();

  int64_t numRanks = meta.numRanks();
  state.nccl = options.transport == TransportKind::Nccl;
  state.mpi = options.transport == TransportKind::Mpi || state.nccl;
  if (state.mpi) {
    if (!mpi::isActive())
      return Status::error("the mpi transport needs MPI initialized "
                           "(gpipe-run --transport mpi under mpirun)");
    if (mpi::size() != numRanks)
      return Status::error("mpirun started " + std::to_string(mpi::size()) +
                           " processes but the model has " +
                           std::to_string(numRanks) +
                           " ranks; run mpirun -np " +
                           std::to_string(numRanks));
    state.me = mpi::rank();
    for (const RankPlan &plan : meta.ranks)
      for (const ActionSpec &a : plan.actions)
        if (a.tag > mpi::maxTransferTag())
          return Status::error(
              "transfer tag " + std::to_string(a.tag) + " of rank " +
              std::to_string(plan.rank) + " exceeds this MPI's largest tag " +
              std::to_string(mpi::maxTransferTag()) +
              " (too many stages x micro-batches for the mpi transport)");
    struct sigaction action {};
    action.sa_handler = onTerminate;
    sigaction(SIGTERM, &action, nullptr);
  }
  if (state.nccl) {
    // The communicator: process 0 makes its id, MPI carries it to the
    // others (a leading 1 byte, or 0 and process 0's error).
    if (!device.supportsNccl())
      return Status::error("the nccl transport needs a model compiled with "
                           "--target cuda; this one runs on " +
                           device.describe());
    std::vector<uint8_t> id;
    if (state.me == 0) {
      s = device.ncclUniqueId(id);
      if (s.ok())
        id.insert(id.begin(), uint8_t(1));
      else {
        id.assign(s.message().begin(), s.message().end());
        id.insert(id.begin(), uint8_t(0));
      }
    }
    Clock::time_point deadline =
        Clock::now() + std::chrono::nanoseconds(state.timeoutNs);
    std::string abortMessage;
    mpi::Wait w = mpi::broadcast(id, deadline, abortMessage);
    if (w != mpi::Wait::Done)
      return Status::error(w == mpi::Wait::Aborted
                               ? kRemoteFailure + abortMessage
                               : "the NCCL id did not arrive from process 0 "
                                 "within the timeout");
    if (id.empty() || id[0] != 1)
      return Status::error(
          "process 0 could not start NCCL: " +
          (id.empty() ? std::string("no reply")
                      : std::string(id.begin() + 1, id.end())));
    id.erase(id.begin());
    s = device.ncclInit(id, state.me, int(numRanks), deadline);
    if (!s.ok())
      return Status::error("process " + std::to_string(state.me) + ": " +
                           s.message());
  }
  const bool root = !state.mpi || state.me == 0;
  // The ranks this process runs; MPI process 0 also keeps copies of the
  // other ranks' arenas, filled when it gathers their blocks.
  auto isLocal = [&](int64_t r) { return !state.mpi || r == state.me; };
  const int64_t numLocal = state.mpi ? 1 : numRanks;
  // The arenas, and the engine's host view of each (null for ranks this
  // process neither runs nor collects).
  std::vector<std::unique_ptr<Arena>> arenas(static_cast<size_t>(numRanks));
  std::vector<uint8_t *> views(static_cast<size_t>(numRanks), nullptr);
  for (int64_t r = 0; r < numRanks; ++r) {
    if (!root && !isLocal(r))
      continue;
    arenas[size_t(r)] = std::make_unique<Arena>();
    Arena &arena = *arenas[size_t(r)];
    if (!isLocal(r)) {
      // Process 0's copy of another process's rank holds only what it
      // gathers: the persistent blocks.
      int64_t end =
          persistentEnd(meta.ranks[size_t(r)], meta.stateMultiple());
      s = arena.allocate(device, end, meta.alignment, /*onDevice=*/false);
      if (!s.ok())
        return Status::error("rank " + std::to_string(r) +
                             "'s parameters on process 0: " + s.message());
      std::memset(arena.host, 0, size_t(end));
    } else {
      s = makeArena(model, meta.ranks[size_t(r)], options.seed, device,
                    arena);
      if (!s.ok())
        return s;
    }
    views[size_t(r)] = arena.host;
  }
  // Brings the local ranks' persistent blocks into the host views.
  auto blocksToHost = [&]() -> Status {
    for (int64_t r = 0; r < numRanks; ++r)
      if (isLocal(r)) {
        Status t = arenas[size_t(r)]->toHost(
            0, persistentEnd(meta.ranks[size_t(r)], meta.stateMultiple()));
        if (!t.ok())
          return t;
      }
    return Status::success();
  };
  // MPI: every other process's blocks into process 0's copies.
  // Also brings this process's blocks to its host views first.
  auto gatherBlocks = [&](int64_t step) -> bool {
    if (Status t = blocksToHost(); !t.ok()) {
      state.fail(step, t.message());
      return false;
    }
    if (!state.mpi)
      return true;
    std::vector<uint8_t> mine = packBlocks(
        meta.ranks[size_t(state.me)], views[size_t(state.me)],
        meta.stateMultiple());
    std::vector<std::vector<uint8_t>> all;
    std::string abortMessage;
    mpi::Wait w = mpi::gather(
        mine, all, Clock::now() + std::chrono::nanoseconds(state.timeoutNs),
        abortMessage);
    if (w != mpi::Wait::Done) {
      state.fail(step, w == mpi::Wait::Aborted
                           ? kRemoteFailure + abortMessage
                           : "parameters did not reach rank 0 within the "
                             "timeout");
      return false;
    }
    if (root)
      for (int64_t r = 1; r < numRanks; ++r)
        unpackBlocks(meta.ranks[size_t(r)], views[size_t(r)],
                     meta.stateMultiple(), all[size_t(r)]);
    return true;
  };
  const int64_t startStep = options.resume ? options.resume->step : 0;
  if (options.resume) {
    if (optimizerStateSlots(options.resume->optimizer) !=
        optimizerStateSlots(stateKindName(state.optimizer)))
      return Status::error("the checkpoint holds optimizer state for " +
                           options.resume->optimizer + ", this run uses " +
                           stateKindName(state.optimizer));
    s = restoreState(meta, *options.resume, views);
    if (!s.ok())
      return s;
  }
  // The initial arenas onto the device, and each local rank's device side.
  std::vector<std::unique_ptr<RankDevice>> rankDevices(static_cast<size_t>(numRanks));
  {
    int64_t slotBytes = meta.microBatchSize() * meta.input.sampleBytes();
    if (meta.labels)
      slotBytes = std::max(slotBytes,
                           meta.microBatchSize() * meta.labels->sampleBytes());
    for (int64_t r = 0; r < numRanks; ++r) {
      if (!isLocal(r))
        continue;
      s = arenas[size_t(r)]->toDevice(0, arenas[size_t(r)]->size);
      if (!s.ok())
        return Status::error("rank " + std::to_string(r) + ": " + s.message());
      s = device.makeRank(r, 2 * meta.microbatches, slotBytes,
                          int64_t(meta.ranks[size_t(r)].actions.size()),
                          rankDevices[size_t(r)]);
      if (!s.ok())
        return Status::error("rank " + std::to_string(r) + ": " + s.message());
    }
  }
  state.ranks.resize(size_t(numRanks));
  for (int64_t r = 0; r < numRanks; ++r) {
    gpipe_rt_rank &rank = state.ranks[size_t(r)];
    rank.run = &state;
    rank.index = r;
    rank.plan = &meta.ranks[size_t(r)];
    rank.arena = arenas[size_t(r)] ? arenas[size_t(r)]->deviceMemory : nullptr;
    rank.device = rankDevices[size_t(r)].get();
    rank.optimizerSteps.assign(rank.plan->stages.size(),
                               options.resume ? options.resume->optimizerSteps
                                              : 0);
    rank.lastStepped.assign(rank.plan->stages.size(), -1);
    rank.losses.assign(size_t(meta.microbatches), 0.0);
    rank.lossReported.assign(size_t(meta.microbatches), 0);
    if (options.recordTrace)
      rank.events.reserve(std::min<size_t>(
          size_t(options.steps) * rank.plan->actions.size(), size_t(1) << 20));
    state.rankCvs.push_back(std::make_unique<std::condition_variable>());
  }
  state.finished.assign(size_t(numRanks), 0);
  if (options.onStart && root)
    options.onStart(state.optimizer, *data);

  gpipe_rt_cpu_set_blas_threads(1);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < numRanks; ++r)
    if (isLocal(r))
      threads.emplace_back(
          [&state, r] { state.rankMain(&state.ranks[size_t(r)]); });

  // Per rank: compute and wall time over the steps the bubble counts.
  std::vector<int64_t> busyTotal(size_t(numRanks), 0);
  int64_t wallTotal = 0;
  const int64_t batch = meta.batchSize();
  // Steps the bubble counts: all but the first when there are several.
  auto counted = [&](int64_t step) {
    return options.steps - startStep == 1 || step > startStep;
  };
  for (int64_t step = startStep; step < options.steps; ++step) {
    int64_t stepStart;
    {
      std::unique_lock<std::mutex> lock(state.mu);
      for (int64_t r = 0; r < numRanks; ++r)
        state.finished[size_t(r)] = !isLocal(r);
      state.finishedCount = 0;
      stepStart = state.nowNs();
      state.released = step;
      for (auto &cv : state.rankCvs)
        cv->notify_all();
      // The barrier: all ranks finish, or one fails, or the stragglers take
      // longer than the timeout after the first rank finished. While no rank
      // has finished, ranks waiting on transfers time out by themselves;
      // the main thread only steps in when nothing at all happened for
      // twice the timeout (every rank died or hangs in a computation).
      state.lastProgressNs.store(stepStart);
      while (state.finishedCount < numLocal && !state.aborted) {
        int64_t now = state.nowNs();
        bool anyFinished = state.finishedCount > 0;
        int64_t deadline =
            anyFinished ? state.lastFinishNs + state.timeoutNs
                        : state.lastProgressNs.load() + 2 * state.timeoutNs;
        if (now >= deadline) {
          std::string ranks = unfinishedRanks(state.finished);
          std::string stepName = "step " + std::to_string(step + 1);
          state.failLocked(
              0, anyFinished
                     ? ranks + " did not finish " + stepName + " within " +
                           formatSeconds(options.timeoutSeconds) +
                           " s after the other ranks; it may have died or "
                           "stalled"
                     : ranks + " did not finish " + stepName +
                           " and no rank made progress for " +
                           formatSeconds(2 * options.timeoutSeconds) +
                           " s; a rank may have died or stalled");
          break;
        }
        state.mainCv.wait_for(lock, std::chrono::nanoseconds(std::min<int64_t>(
                                        deadline - now, 100'000'000)));
      }
      if (state.aborted)
        break;
    }
    if (state.mpi) {
      // Process 0 learns every rank's step (busy time, losses, non-finite
      // values); everyone learns whether the step's updates apply.
      const gpipe_rt_rank &mine = state.ranks[size_t(state.me)];
      std::vector<uint8_t> record;
      put(record, mine.busyNs);
      for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
        put(record, uint8_t(mine.lossReported[size_t(mb)]));
        put(record, mine.losses[size_t(mb)]);
      }
      if (!state.nonFiniteMessage.empty()) {
        put(record, state.nonFiniteSite);
        record.insert(record.end(), state.nonFiniteMessage.begin(),
                      state.nonFiniteMessage.end());
      }
      std::vector<std::vector<uint8_t>> all;
      std::string abortMessage;
      Clock::time_point deadline =
          Clock::now() + std::chrono::nanoseconds(state.timeoutNs);
      mpi::Wait w = mpi::gather(record, all, deadline, abortMessage);
      if (w == mpi::Wait::Done && root) {
        for (int64_t r = 1; r < numRanks; ++r) {
          gpipe_rt_rank &rank = state.ranks[size_t(r)];
          const std::vector<uint8_t> &in = all[size_t(r)];
          size_t at = 0;
          rank.busyNs = take<int64_t>(in, at);
          for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
            rank.lossReported[size_t(mb)] = char(take<uint8_t>(in, at));
            rank.losses[size_t(mb)] = take<double>(in, at);
          }
          if (at + sizeof(NonFiniteSite) < in.size()) {
            NonFiniteSite site = take<NonFiniteSite>(in, at);
            if (state.nonFiniteMessage.empty() || site < state.nonFiniteSite) {
              state.nonFiniteSite = site;
              state.nonFiniteMessage.assign(in.begin() + long(at), in.end());
            }
          }
        }
      }
      std::vector<uint8_t> decision(state.nonFiniteMessage.begin(),
                                    state.nonFiniteMessage.end());
      if (w == mpi::Wait::Done)
        w = mpi::broadcast(decision, deadline, abortMessage);
      if (w != mpi::Wait::Done) {
        state.fail(step + 1, w == mpi::Wait::Aborted
                                 ? kRemoteFailure + abortMessage
                                 : "the step's records did not reach rank 0 "
                                   "within the timeout; a rank may have died "
                                   "or stalled");
        break;
      }
      state.nonFiniteMessage.assign(decision.begin(), decision.end());
      // The step ends when the last process has finished it.
      state.lastFinishNs = state.nowNs();
    }
    // Stop: a non-finite value a device reported at the end of the step
    // (process 0 names it; the others stop because of it).
    if (options.onNonFinite == NonFinitePolicy::Stop &&
        !state.nonFiniteMessage.empty()) {
      state.fail(step + 1, root ? state.nonFiniteMessage
                                : kRemoteFailure + state.nonFiniteMessage);
      break;
    }
    int64_t wall = std::max<int64_t>(state.lastFinishNs - stepStart, 1);
    StepMetrics metrics;
    metrics.step = step + 1;
    metrics.seconds = double(wall) * 1e-9;
    metrics.samplesPerSecond = double(batch) / metrics.seconds;
    for (int64_t r = 0; r < numRanks; ++r) {
      const gpipe_rt_rank &rank = state.ranks[size_t(r)];
      metrics.busyFraction.push_back(double(rank.busyNs) / double(wall));
      if (counted(step))
        busyTotal[size_t(r)] += rank.busyNs;
      if (!isLocal(r))
        continue;
      s = arenas[size_t(r)]->toHost(rank.plan->arenaBytes, kGuardBytes);
      if (s.ok())
        s = checkGuard(*rank.plan, views[size_t(r)]);
      if (!s.ok()) {
        state.fail(step + 1, s.message());
        break;
      }
    }
    if (state.aborted)
      break;
    if (counted(step))
      wallTotal += wall;

    // The loss: micro-batch losses in order, summed in double, over M.
    double sum = 0.0;
    int64_t reported = 0, missing = -1;
    for (int64_t mb = 0; mb < meta.microbatches; ++mb) {
      int64_t reporters = 0;
      for (const gpipe_rt_rank &rank : state.ranks)
        if (rank.lossReported[size_t(mb)]) {
          ++reporters;
          sum += rank.losses[size_t(mb)];
        }
      if (reporters > 1) {
        state.fail(step + 1, "micro-batch " + std::to_string(mb) +
                                 "'s loss was reported by more than one rank");
        break;
      }
      reported += reporters;
      if (!reporters && missing < 0)
        missing = mb;
    }
    if (state.aborted)
      break;
    if (reported > 0 && missing >= 0) {
      state.fail(step + 1, "the loss of micro-batch " +
                               std::to_string(missing) + " was never reported");
      break;
    }
    metrics.loss = reported ? sum / double(meta.microbatches)
                            : std::numeric_limits<double>::quiet_NaN();
    if (step == startStep) {
      if (!gatherBlocks(step + 1))
        break;
      if (root)
        collectTensors(meta, views, /*gradients=*/true,
                       result.firstGradients);
    }

    // NonFinitePolicy::Skip: the step's updates, all or none.
    if (options.onNonFinite == NonFinitePolicy::Skip) {
      if (!state.nonFiniteMessage.empty()) {
        result.skippedSteps.push_back("step " + std::to_string(step + 1) +
                                      ": " + state.nonFiniteMessage +
                                      "; the step's updates were skipped");
        state.nonFiniteMessage.clear();
      } else {
        for (gpipe_rt_rank &rank : state.ranks)
          for (const auto &u : rank.pending) {
            int64_t t = ++rank.optimizerSteps[u.local];
            s = device.optimizerStep(state.optimizer, t, u.params, u.grads,
                               state.optimizer.stateMultiple() ? u.state
                                                               : nullptr,
                               u.count);
            if (!s.ok())
              break;
          }
        if (!s.ok()) {
          state.fail(step + 1, s.message());
          break;
        }
      }
    }
    result.steps.push_back(metrics);
    if (options.onStep)
      options.onStep(metrics);

    // A checkpoint between steps: every rank waits at the barrier.
    bool due = options.checkpoint && options.checkpointEvery > 0 &&
               ((step + 1) % options.checkpointEvery == 0 ||
                step + 1 == options.steps);
    if (due) {
      if (!gatherBlocks(step + 1))
        break;
      std::string checkpointError;
      if (root) {
        TrainingState saved;
        saved.step = step + 1;
        saved.seed = options.seed;
        saved.optimizer = stateKindName(state.optimizer);
        saved.source = meta.source;
        for (const gpipe_rt_rank &rank : state.ranks)
          if (isLocal(rank.index))
            for (int64_t t : rank.optimizerSteps)
              saved.optimizerSteps = std::max(saved.optimizerSteps, t);
        collectTensors(meta, views, /*gradients=*/false, saved.parameters);
        collectOptimizerState(meta, views,
                              optimizerStateSlots(saved.optimizer),
                              saved.optimizerState);
        s = options.checkpoint(saved);
        if (!s.ok())
          checkpointError = s.message();
      }
      if (state.mpi) {
        // Everyone learns how the write went; the others wait while process
        // 0 writes, so their deadline allows for slow storage.
        std::vector<uint8_t> verdict(checkpointError.begin(),
                                     checkpointError.end());
        std::string abortMessage;
        mpi::Wait w = mpi::broadcast(
            verdict,
            Clock::now() + std::chrono::nanoseconds(state.timeoutNs) +
                std::chrono::minutes(10),
            abortMessage);
        if (w != mpi::Wait::Done) {
          state.fail(step + 1, w == mpi::Wait::Aborted
                                   ? kRemoteFailure + abortMessage
                                   : "process 0 did not finish writing the "
                                     "checkpoint in time");
          break;
        }
        checkpointError.assign(verdict.begin(), verdict.end());
      }
      if (!checkpointError.empty()) {
        state.fail(step + 1, "checkpoint: " + checkpointError);
        break;
      }
    }
  }
  for (std::thread &t : threads)
    t.join();
  result.totalSeconds = double(state.nowNs()) * 1e-9;

  if (!state.errors.empty()) {
    for (const gpipe_rt_rank &rank : state.ranks)
      if (isLocal(rank.index))
        result.flightRecorder.push_back(state.flightRecorder(&rank));
    const auto &[step, message] = state.errors.front();
    std::string text =
        step > 0 ? "step " + std::to_string(step) + ": " + message : message;
    return Status::error(text);
  }

  double busyMean = 0.0;
  for (int64_t r = 0; r < numRanks; ++r)
    busyMean +=
        double(busyTotal[size_t(r)]) / double(std::max<int64_t>(wallTotal, 1));
  result.measuredBubble = 1.0 - busyMean / double(numRanks);

  // Each process measures its own arenas and keeps its own trace; MPI
  // process 0 gathers both.
  std::vector<uint8_t> record;
  for (int64_t r = 0; r < numRanks; ++r) {
    if (!isLocal(r))
      continue;
    const RankPlan &plan = meta.ranks[size_t(r)];
    s = arenas[size_t(r)]->toHost(0, arenas[size_t(r)]->size);
    if (!s.ok())
      return Status::error("rank " + std::to_string(r) + ": " + s.message());
    const uint8_t *arena = views[size_t(r)];
    s = checkGuard(plan, arena);
    if (!s.ok())
      return s;
    int64_t top = plan.arenaBytes;
    while (top > 0 && arena[top - 1] == canaryByte(top - 1))
      --top;
    ArenaReport report;
    report.rank = r;
    report.plannedBytes = plan.arenaBytes;
    report.peakBytes = plan.peakBytes;
    report.measuredBytes = roundUp(top, meta.alignment);
    result.arenas.push_back(report);
    put(record, report.measuredBytes);
    const gpipe_rt_rank &rank = state.ranks[size_t(r)];
    if (options.recordTrace)
      for (const RecordedAction &e : rank.events) {
        result.trace.push_back({rank.index, e.step, e.action,
                                double(e.beginNs) * 1e-3,
                                double(e.endNs) * 1e-3});
        put(record, e);
      }
  }
  if (state.mpi) {
    std::vector<std::vector<uint8_t>> all;
    std::string abortMessage;
    mpi::Wait w = mpi::gather(
        record, all, Clock::now() + std::chrono::nanoseconds(state.timeoutNs),
        abortMessage);
    if (w != mpi::Wait::Done)
      return Status::error(w == mpi::Wait::Aborted
                               ? kRemoteFailure + abortMessage
                               : "the run's reports did not reach rank 0 "
                                 "within the timeout");
    if (root)
      for (int64_t r = 1; r < numRanks; ++r) {
        const std::vector<uint8_t> &in = all[size_t(r)];
        size_t at = 0;
        ArenaReport report;
        report.rank = r;
        report.plannedBytes = meta.ranks[size_t(r)].arenaBytes;
        report.peakBytes = meta.ranks[size_t(r)].peakBytes;
        report.measuredBytes = take<int64_t>(in, at);
        result.arenas.push_back(report);
        while (at + sizeof(RecordedAction) <= in.size()) {
          RecordedAction e = take<RecordedAction>(in, at);
          result.trace.push_back({r, e.step, e.action,
                                  double(e.beginNs) * 1e-3,
                                  double(e.endNs) * 1e-3});
        }
      }
    if (!gatherBlocks(0)) {
      const auto &[step, message] = state.errors.front();
      return Status::error(message);
    }
  }
  if (root)
    collectTensors(meta, views, /*gradients=*/false, result.finalParameters);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Fault specs and output files
//===----------------------------------------------------------------------===//

Status parseFaultInjection(std::string_view spec, FaultInjection &fault) {
  fault = FaultInjection();
  bool haveRank = false;
  std::string text(spec);
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "mode") {
      if (value == "stop")
        fault.mode = FaultInjection::Mode::Stop;
      else if (value == "stall")
        fault.mode = FaultInjection::Mode::Stall;
      else if (value == "kill")
        fault.mode = FaultInjection::Mode::Kill;
      else
        return Status::error("bad fault spec '" + text + "': mode must be "
                             "stop, stall or kill, got '" + value + "'");
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
      continue;
    }
    char *end = nullptr;
    errno = 0;
    long long parsed =
        value.empty() ? 0 : std::strtoll(value.c_str(), &end, 10);
    if (eq == std::string::npos || value.empty() || *end || errno)
      return Status::error("bad fault spec '" + text +
                           "': expected "
                           "rank=R[,step=S][,action=A][,mode=M] with "
                           "integers");
    if (key == "rank") {
      fault.rank = parsed;
      haveRank = true;
    } else if (key == "step") {
      fault.step = parsed;
    } else if (key == "action") {
      fault.action = parsed;
    } else {
      return Status::error("bad fault spec '" + text + "': unknown key '" +
                           key + "' (expected rank, step, action, mode)");
    }
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  if (!haveRank)
    return Status::error("bad fault spec '" + text + "': rank=R is required");
  return Status::success();
}

Status
writeParameterTensors(const std::string &path, const ModelMetadata &metadata,
                      const std::map<std::string, std::vector<float>> &tensors,
                      const std::map<std::string, std::string> &extra) {
  std::vector<SafeTensorRef> refs;
  for (const ParameterSpec &p : metadata.parameters) {
    auto it = tensors.find(p.name);
    if (it == tensors.end() || int64_t(it->second.size()) != p.elements)
      return Status::error(path + ": no values for parameter '" + p.name + "'");
    refs.push_back({p.name, SafeTensorsDType::F32, p.shape, it->second.data(),
                    it->second.size() * 4});
  }
  std::map<std::string, std::string> fileMeta = extra;
  if (!metadata.source.empty())
    fileMeta["source"] = metadata.source;
  return writeSafeTensors(path, refs, fileMeta);
}

Status writeChromeTrace(const std::string &path, const ModelMetadata &metadata,
                        const RunResult &result) {
  using Json = nlohmann::json;
  Json events = Json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", "gpipe " + metadata.source}}}});
  for (const RankPlan &rank : metadata.ranks)
    events.push_back(
        {{"name", "thread_name"},
         {"ph", "M"},
         {"pid", 0},
         {"tid", rank.rank},
         {"args", {{"name", "rank " + std::to_string(rank.rank)}}}});
  for (const TraceEvent &e : result.trace) {
    const ActionSpec &a =
        metadata.ranks[size_t(e.rank)].actions[size_t(e.action)];
    std::string mb = std::to_string(a.mb), stage = std::to_string(a.stage);
    std::string name;
    switch (a.kind) {
    case ActionKind::Forward:
      name = "F" + mb + " s" + stage;
      break;
    case ActionKind::Backward:
      name = "B" + mb + " s" + stage;
      break;
    case ActionKind::BackwardInput:
      name = "BI" + mb + " s" + stage;
      break;
    case ActionKind::BackwardWeight:
      name = "BW" + mb + " s" + stage;
      break;
    case ActionKind::Recompute:
      name = "R" + mb + " s" + stage;
      break;
    case ActionKind::SendF:
    case ActionKind::SendB:
      name = "send mb" + mb;
      break;
    case ActionKind::RecvF:
    case ActionKind::RecvB:
      name = "recv mb" + mb;
      break;
    case ActionKind::ReduceGrad:
      name = "reduce s" + stage;
      break;
    case ActionKind::Step:
      name = "step";
      break;
    }
    Json args = {{"stage", a.stage},
                 {"mb", a.mb},
                 {"step", e.step + 1},
                 {"action", e.action}};
    if (a.isTransfer()) {
      args["peer"] = a.peer;
      args["bytes"] = a.bytes;
    }
    events.push_back({{"name", name},
                      {"cat", actionKindName(a.kind)},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", e.rank},
                      {"ts", e.beginUs},
                      {"dur", e.endUs - e.beginUs},
                      {"args", std::move(args)}});
  }
  Json root = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  std::string text =
      root.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return Status::error("cannot write " + path + ": " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok &= std::fclose(f) == 0;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return Status::error("cannot write " + path + ": " + std::strerror(err));
  }
  return Status::success();
}

void ensureSingleThreadedBlas(char **argv) {
  const char *value = std::getenv("OPENBLAS_NUM_THREADS");
  if (value && std::string(value) == "1")
    return;
  if (setenv("OPENBLAS_NUM_THREADS", "1", 1) != 0)
    return;
  execv("/proc/self/exe", argv);
  // Could not re-execute (no /proc): carry on with the pool as it is.
}

Status initializeMpi(int *argc, char ***argv) {
  return mpi::initialize(argc, argv);
}

int mpiRank() { return mpi::isActive() ? mpi::rank() : 0; }
int mpiSize() { return mpi::isActive() ? mpi::size() : 1; }

void finalizeMpi() { mpi::finalize(); }

bool isRemoteFailure(const std::string &message) {
  return message.find(kRemoteFailure) != std::string::npos;
}

void abortMpiJob(const std::string &message, bool announce) {
  if (mpi::isActive()) {
    if (announce)
      mpi::announceFailure(message);
    // Let the others receive the announcement and print their flight
    // recorders before the job goes down.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    mpi::abortJob();
  }
  std::exit(1);
}

Status checkSameOnEveryProcess(const std::string &value,
                              const std::string &what,
                              double timeoutSeconds) {
  if (!mpi::isActive() || mpi::size() == 1)
    return Status::success();
  std::vector<uint8_t> mine(value.begin(), value.end());
  std::vector<std::vector<uint8_t>> all;
  std::string abortMessage;
  Clock::time_point deadline =
      Clock::now() + std::chrono::nanoseconds(int64_t(timeoutSeconds * 1e9));
  mpi::Wait w = mpi::gather(mine, all, deadline, abortMessage);
  std::string verdict;
  if (w == mpi::Wait::Done && mpi::rank() == 0)
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r] != mine) {
        verdict = "processes disagree on " + what + ": process 0 has '" +
                  value + "', process " + std::to_string(r) + " has '" +
                  std::string(all[r].begin(), all[r].end()) + "'";
        break;
      }
  std::vector<uint8_t> bytes(verdict.begin(), verdict.end());
  if (w == mpi::Wait::Done)
    w = mpi::broadcast(bytes, deadline, abortMessage);
  if (w != mpi::Wait::Done)
    return Status::error(w == mpi::Wait::Aborted
                             ? kRemoteFailure + abortMessage
                             : "processes could not compare " + what +
                                   " within the timeout");
  if (!bytes.empty())
    return Status::error(std::string(bytes.begin(), bytes.end()));
  return Status::success();
}

} // namespace gpipe::rt
