//===- MpiTransport.cpp - One process per rank under mpirun ----*- C++ -*-===//
//
// The mpi transport: pipeline rank r is MPI process r. A send is a
// synchronous MPI send (complete once the receiver matched it: the
// rendezvous the schedule verifier assumes), a receive an MPI receive, both
// tagged with the metadata's transfer tag and polled against the run's
// timeout and against other processes' failure announcements (Mpi.h). A
// device whose arenas are not host memory stages payloads through a host
// buffer of the rank's, copied in program order.
//
// Buffered sends (Transfer::staging, host arenas only): the payload is
// copied into its staging copy and sent from there by a standard-mode
// nonblocking send; the next send into that copy, and the step's end
// (finishSends), wait for it to complete.
//
// The nccl transport (NcclTransport.cpp) shares the process layout and its
// checks.
//
//===----------------------------------------------------------------------===//

#include "MpiTransport.h"

#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/ModelMetadata.h"

#include "Transport/Mpi.h"

#include <chrono>
#include <cstring>
#include <map>

namespace gpipe::rt {

Status checkMpiProcesses(const ModelMetadata &meta) {
  int64_t numRanks = meta.numRanks(), numWorkers = meta.numWorkers();
  if (!mpi::isActive())
    return Status::error("the mpi transport needs MPI initialized "
                         "(gpipe-run --transport mpi under mpirun)");
  if (mpi::size() != numWorkers)
    return Status::error(
        "mpirun started " + std::to_string(mpi::size()) +
        " processes but the model has " + std::to_string(numRanks) + " ranks" +
        (meta.dataParallel > 1
             ? " x " + std::to_string(meta.dataParallel) + " replicas"
             : std::string()) +
        "; run mpirun -np " + std::to_string(numWorkers));
  for (const RankPlan &plan : meta.ranks)
    for (const ActionSpec &a : plan.actions)
      if (a.tag > mpi::maxTransferTag())
        return Status::error(
            "transfer tag " + std::to_string(a.tag) + " of rank " +
            std::to_string(plan.rank) + " exceeds this MPI's largest tag " +
            std::to_string(mpi::maxTransferTag()) +
            " (too many stages x micro-batches for the mpi transport)");
  return Status::success();
}

namespace {

class MpiTransport final : public Transport {
public:
  MpiTransport(RunControl &run, Device &device, double timeoutSeconds)
      : run(run), device(device), timeoutSeconds(timeoutSeconds) {}

  const char *name() const override { return "mpi"; }
  bool distributed() const override { return true; }
  int processRank() const override { return mpi::rank(); }
  Status start(const ModelMetadata &meta, Device &) override {
    if (Status s = checkMpiProcesses(meta); !s.ok())
      return s;
    replicas = meta.dataParallel;
    if (replicas > 1 && !device.hostMemory())
      return Status::error("data parallelism over --transport mpi needs the "
                           "arenas in host memory; run a " +
                           meta.target + " model with --transport nccl");
    if (replicas > 1)
      return mpi::makeReplicaGroup(int(mpi::rank() % meta.numRanks()),
                                   int(mpi::rank() / meta.numRanks()));
    return Status::success();
  }
  bool transfer(const Transfer &t) override;
  bool startReduction(const Reduction &r) override;
  void progress(int64_t) override {
    for (auto &[stage, pending] : reductions)
      if (pending.active)
        pending.op->test();
    for (auto &[copy, message] : posted)
      message->test();
  }
  bool finishReduction(int64_t worker, int64_t stage) override;
  bool finishSends(int64_t rank) override;

private:
  /// Waits for the message last sent from staging copy `copy`; records a
  /// failure at `t` (a timeout naming `what`).
  bool waitPosted(mpi::PostedSend &posted, const Transfer &t, const char *what);
  /// The buffered sends' messages, by staging copy; kept between steps.
  std::map<const void *, std::unique_ptr<mpi::PostedSend>> posted;
  /// The transfer each staging copy last carried, for messages.
  std::map<const void *, Transfer> postedBy;

  struct Pending {
    Reduction request;
    std::unique_ptr<mpi::Reduce> op;
    bool active = false;
  };
  int64_t replicas = 1;
  /// This process's reductions, by stage; kept between steps (restarted in
  /// place: a step allocates nothing).
  std::map<int64_t, Pending> reductions;

  RunControl &run;
  Device &device;
  double timeoutSeconds;
  /// The host copy of device-memory payloads (this process's one rank).
  std::vector<uint8_t> staging;
};

bool MpiTransport::waitPosted(mpi::PostedSend &message, const Transfer &t,
                              const char *what) {
  std::string abortMessage;
  mpi::Wait w =
      message.wait(mpi::Clock::now() +
                       std::chrono::nanoseconds(int64_t(timeoutSeconds * 1e9)),
                   abortMessage);
  if (w == mpi::Wait::Done)
    return true;
  run.failRank(t.rank, w == mpi::Wait::Aborted
                           ? remoteFailure(abortMessage)
                           : run.where(t.rank, t.action) + ": " + what +
                                 " after " + formatSeconds(timeoutSeconds) +
                                 " s; the peer may have died or stalled");
  return false;
}

bool MpiTransport::finishSends(int64_t rank) {
  for (auto &[copy, message] : posted)
    if (!message->test() &&
        !waitPosted(*message, postedBy[copy],
                    "its payload was still not received at the step's end"))
      return false;
  (void)rank;
  return true;
}

bool MpiTransport::transfer(const Transfer &t) {
  mpi::Clock::time_point deadline =
      mpi::Clock::now() +
      std::chrono::nanoseconds(int64_t(timeoutSeconds * 1e9));
  std::string abortMessage;
  if (t.send && t.staging && t.bytes > 0 && device.hostMemory()) {
    std::unique_ptr<mpi::PostedSend> &message = posted[t.staging];
    if (!message)
      message = std::make_unique<mpi::PostedSend>();
    // The copy's last payload must have left before it is overwritten.
    if (!message->test() &&
        !waitPosted(*message, t,
                    "its staging copy's last payload was still not received"))
      return false;
    std::memcpy(t.staging, t.data, size_t(t.bytes));
    message->start(t.staging, t.bytes, int(t.peer), int(t.tag));
    postedBy[t.staging] = t;
    return true;
  }
  // Device memory goes through a host copy.
  const bool staged = !device.hostMemory() && t.bytes > 0;
  if (staged && staging.size() < size_t(t.bytes))
    staging.resize(size_t(t.bytes));
  if (staged && t.send) {
    Status s = t.device->copyOut(staging.data(), t.data, t.bytes);
    if (!s.ok()) {
      run.failRank(t.rank, run.where(t.rank, t.action) + ": " + s.message());
      return false;
    }
  }
  void *buffer = staged ? staging.data() : t.data;
  mpi::Wait w = t.send ? mpi::send(buffer, t.bytes, int(t.peer), int(t.tag),
                                   deadline, abortMessage)
                       : mpi::recv(buffer, t.bytes, int(t.peer), int(t.tag),
                                   deadline, abortMessage);
  if (w == mpi::Wait::Done) {
    if (staged && !t.send) {
      Status s = t.device->copyIn(t.data, staging.data(), t.bytes);
      if (!s.ok()) {
        run.failRank(t.rank, run.where(t.rank, t.action) + ": " + s.message());
        return false;
      }
    }
    return true;
  }
  run.failRank(t.rank, w == mpi::Wait::Aborted
                           ? remoteFailure(abortMessage)
                           : run.where(t.rank, t.action) + ": " +
                                 (t.send ? "no receiver" : "no message") +
                                 " after " + formatSeconds(timeoutSeconds) +
                                 " s; the peer may have died or stalled");
  return false;
}

bool MpiTransport::startReduction(const Reduction &r) {
  Pending &pending = reductions[r.stage];
  Status s =
      pending.active
          ? Status::error("the stage's gradients are already being "
                          "reduced this step")
          : mpi::Reduce::start(r.grads, r.scratch, r.count, int(replicas),
                               int(r.replica), r.stage, pending.op);
  if (!s.ok()) {
    run.failRank(r.worker, run.where(r.worker, r.action) + ": " + s.message());
    return false;
  }
  pending.request = r;
  pending.active = true;
  return true;
}

bool MpiTransport::finishReduction(int64_t, int64_t stage) {
  auto it = reductions.find(stage);
  if (it == reductions.end() || !it->second.active)
    return false;
  Pending &pending = it->second;
  pending.active = false;
  const Reduction &r = pending.request;
  std::string abortMessage, missing;
  mpi::Wait w =
      pending.op->wait(mpi::Clock::now() + std::chrono::nanoseconds(
                                               int64_t(timeoutSeconds * 1e9)),
                       abortMessage, missing);
  if (w == mpi::Wait::Done)
    return true;
  run.failRank(r.worker,
               w == mpi::Wait::Aborted
                   ? remoteFailure(abortMessage)
                   : run.where(r.worker, r.action) +
                         ": the gradient all-reduce got nothing from " +
                         missing + " after " + formatSeconds(timeoutSeconds) +
                         " s; its process may have died or stalled");
  return false;
}

} // namespace

std::unique_ptr<Transport> makeMpiTransport(RunControl &run, Device &device,
                                            double timeoutSeconds) {
  return std::make_unique<MpiTransport>(run, device, timeoutSeconds);
}

} // namespace gpipe::rt
