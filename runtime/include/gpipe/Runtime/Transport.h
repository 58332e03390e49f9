//===- Transport.h - How ranks exchange activations and gradients -*- C++
//-*-===//
//
// The engine (Engine.h) runs a rank's program and answers its callbacks; a
// Transport moves the bytes of the program's sends and receives between
// ranks. Beside the Device (Device.h: where arenas live and kernels run)
// it is the other half of what changes between runs of the same model:
//
//   local  every rank a thread of this process; a send and its receive,
//          matched by (sender, receiver, tag), rendezvous and the side that
//          arrives second makes the single copy (Device::copyBetweenRanks);
//          a buffered send that finds no receiver copies into its staging
//          copy and goes on, the receiver copies out;
//   mpi    one process per rank under mpirun; synchronous MPI sends (the
//          rendezvous the schedule verifier assumes), device memory staged
//          through the host; a buffered send copies into its staging copy
//          and posts a nonblocking send from it;
//   nccl   one process and one GPU per rank; ncclSend / ncclRecv on the
//          rank's communication stream (the CUDA device's, Device.h), its
//          communicator bootstrapped over MPI.
//
// With data parallelism (D replicas of the K-rank pipeline, K x D workers;
// worker w is rank w mod K of replica w / K) a transport also sums each
// stage's gradients over the replicas that hold it: a Reduction, started
// by the stage's gpipe.reduce_grad and finished before its step. Every
// element is summed in replica order, g0 + g1 + ... + g(D-1), so the sum is
// bitwise the same run to run and whatever the stages' cut: each replica
// sums its 1/D share of the gradients (the others' pieces of it collected
// in the plan's Reduce buffer), then the shares go to every replica.
//
// Buffered sends. A send whose slot the memory plan gave staging copies
// (Transfer::staging, in the sender's arena) may return before the receiver
// has the bytes: its payload waits in the copy, which the next send into
// the same copy first waits to be free (Rendezvous.h: the schedule
// verifier's rendezvous proof covers this). A transport may also treat it
// as a rendezvous (nccl does). A rank's step ends only once its buffered
// sends have been received (finishSends).
//
// Every transfer gives up at the run's timeout and when the run aborts. A
// transport reports a failure through its RunControl before the transfer
// returns false, so the first error a run records is the real one.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_TRANSPORT_H
#define GPIPE_RUNTIME_TRANSPORT_H

#include "gpipe/Runtime/Status.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace gpipe::rt {

class Device;
class RankDevice;
struct ModelMetadata;

/// How ranks exchange activations and gradients (RunOptions::transport).
enum class TransportKind {
  /// One thread per rank in this process.
  Local,
  /// One process per rank under mpirun (MPI rank = pipeline rank); process
  /// 0 gathers metrics, gradients and parameters for printing and saving.
  Mpi,
  /// As Mpi, but activations and gradients travel device to device through
  /// NCCL (CUDA models; one GPU per process).
  Nccl,
};

/// What a transport needs from the run it serves.
class RunControl {
public:
  virtual ~RunControl();
  /// Set once the run fails; every wait watches it.
  virtual const std::atomic<bool> &aborted() const = 0;
  /// Records an error of rank `rank`'s current step and aborts the run (the
  /// first error recorded is the run's). Callable from any thread, also
  /// while the transport holds its own locks.
  virtual void failRank(int64_t rank, std::string message) = 0;
  /// Names an action for messages: "rank 1 (stage 1, micro-batch 3, recv
  /// forward from rank 0)".
  virtual std::string where(int64_t rank, int64_t action) const = 0;
};

/// One send or receive as a rank's program asked for it, already checked
/// against the rank's plan (kind, size, pointers).
struct Transfer {
  /// The rank that asked and the action it is in.
  int64_t rank = 0, action = 0;
  /// The other side and the metadata's tag (Vocabulary.h getTransferTag).
  int64_t peer = 0, tag = 0;
  bool send = false;
  /// The payload in the rank's arena (device memory): read by a send,
  /// written by a receive.
  void *data = nullptr;
  int64_t bytes = 0;
  /// A send with staging copies: the copy of its micro-batch (`bytes` of
  /// the rank's arena), which may hold the payload until the receiver takes
  /// it. Null: a rendezvous.
  void *staging = nullptr;
  /// The rank's device side (its streams, its staging copies).
  RankDevice *device = nullptr;
};

/// One stage's gradient all-reduce over the data-parallel replicas, as a
/// worker's gpipe.reduce_grad asked for it.
struct Reduction {
  /// The worker that asked and the action it is in.
  int64_t worker = 0, action = 0;
  /// The stage, and the worker's pipeline rank and replica.
  int64_t stage = 0, rank = 0, replica = 0;
  /// `count` gradients (device memory, summed in place) and the plan's
  /// Reduce buffer: (D-1) x getReduceShare(count, D) floats.
  float *grads = nullptr, *scratch = nullptr;
  int64_t count = 0;
  RankDevice *device = nullptr;
};

/// The floats of each replica's share of `count` gradients: ceil(count/D).
/// Replica d sums elements [d x share, min(count, (d+1) x share)).
int64_t getReduceShare(int64_t count, int64_t replicas);
/// Replica `replica`'s share of `count` gradients: [begin, end).
std::pair<int64_t, int64_t> getReduceShareRange(int64_t count, int64_t replicas,
                                                int64_t replica);

/// Replica `replica`'s sum of its share, in replica order: `mine` is its
/// own gradients (the share is summed into them), `others` the D-1 other
/// replicas' pieces of the share, `share` floats apart, in replica order
/// without this one. The one summation order every transport uses.
void sumShare(float *mine, const float *others, int64_t replicas,
              int64_t replica, int64_t count);

class Transport {
public:
  virtual ~Transport();

  /// "local", "mpi", "nccl".
  virtual const char *name() const = 0;
  /// Whether each rank is its own process (mpi, nccl): this process then
  /// runs only rank processRank() and process 0 gathers reports.
  virtual bool distributed() const = 0;
  virtual int processRank() const { return 0; }

  /// Once, before any rank starts: checks the model against the transport
  /// and builds what every process shares (the nccl communicator).
  virtual Status start(const ModelMetadata &meta, Device &device) = 0;

  /// Moves one transfer's bytes. Returns true once the receiver's later
  /// work sees them (a buffered send: once they are in its staging copy)
  /// and the sender's may overwrite its buffer (in stream order on
  /// asynchronous devices); false when the transfer failed, after recording
  /// why with RunControl::failRank, or when the run was aborting.
  virtual bool transfer(const Transfer &t) = 0;

  /// At the end of `rank`'s step: waits, with the run's timeout, until
  /// every payload it left in a staging copy has been received. False when
  /// that failed, after recording why.
  virtual bool finishSends(int64_t rank) {
    (void)rank;
    return true;
  }

  /// Wakes every transfer waiting in the transport (the run aborted).
  virtual void wake() {}

  /// Data parallelism: starts `r` and returns (the reduction proceeds while
  /// the worker goes on with its program); false when it failed, after
  /// recording why. Transports without data parallelism fail it.
  virtual bool startReduction(const Reduction &r);
  /// Lets the worker's started reductions and buffered sends advance (at
  /// every action boundary).
  virtual void progress(int64_t worker) { (void)worker; }
  /// Waits, with the run's timeout, until the worker's reduction of
  /// `stage` is complete: its gradients are the sum over the replicas, and
  /// no replica reads them any more (the caller may change them).
  virtual bool finishReduction(int64_t worker, int64_t stage);
};

/// Rank threads of one process. `timeoutSeconds` bounds every wait.
std::unique_ptr<Transport> makeLocalTransport(RunControl &run, Device &device,
                                              int64_t numRanks,
                                              double timeoutSeconds);
/// One process per rank under mpirun (MPI initialized, MpiSession.h).
std::unique_ptr<Transport> makeMpiTransport(RunControl &run, Device &device,
                                            double timeoutSeconds);
/// As mpi, with payloads moved device to device by the device's NCCL.
std::unique_ptr<Transport> makeNcclTransport(RunControl &run, Device &device,
                                             double timeoutSeconds);

/// "1.5", or "0.25": a timeout in the messages of failed waits.
std::string formatSeconds(double seconds);
/// The message of a run that stopped because another process failed with
/// `message` (isRemoteFailure recognizes it).
std::string remoteFailure(const std::string &message);
/// Whether `message` (a run's error) reports another process's failure
/// rather than this one's.
bool isRemoteFailure(const std::string &message);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_TRANSPORT_H
