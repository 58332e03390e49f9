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
//   mpi    one process per rank under mpirun; synchronous MPI sends (the
//          rendezvous the schedule verifier assumes), device memory staged
//          through the host;
//   nccl   one process and one GPU per rank; ncclSend / ncclRecv on the
//          rank's communication stream (the CUDA device's, Device.h), its
//          communicator bootstrapped over MPI.
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

namespace gpipe::rt {

class Device;
class RankDevice;
struct ModelMetadata;

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
  /// The rank's device side (its streams, its staging copies).
  RankDevice *device = nullptr;
};

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
  /// work sees them and the sender's may overwrite its buffer (in stream
  /// order on asynchronous devices); false when the transfer failed, after
  /// recording why with RunControl::failRank, or when the run was aborting.
  virtual bool transfer(const Transfer &t) = 0;

  /// Wakes every transfer waiting in the transport (the run aborted).
  virtual void wake() {}
};

/// Rank threads of one process. `timeoutSeconds` bounds every wait.
std::unique_ptr<Transport> makeLocalTransport(RunControl &run, Device &device,
                                              int64_t numRanks,
                                              double timeoutSeconds);
/// One process per rank under mpirun (MPI initialized, Engine.h).
std::unique_ptr<Transport> makeMpiTransport(RunControl &run, Device &device,
                                            double timeoutSeconds);
/// As mpi, with payloads moved device to device by the device's NCCL.
std::unique_ptr<Transport> makeNcclTransport(RunControl &run, Device &device,
                                             double timeoutSeconds);

/// "1.5", or "0.25": a timeout in the messages of failed waits.
std::string formatSeconds(double seconds);
/// The message of a run that stopped because another process failed with
/// `message` (Engine.h isRemoteFailure recognizes it).
std::string remoteFailure(const std::string &message);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_TRANSPORT_H
