//===- Mpi.h - The MPI transport's primitives -------------------*- C++ -*-===//
//
// What the engine needs from MPI when every pipeline rank is its own process
// (`gpipe-run --transport mpi` under mpirun): point-to-point transfers that
// give up at a deadline or when another process announced a failure, that
// announcement itself, and gathers to process 0 that cannot hang on a dead
// peer. Every wait is a nonblocking operation polled against the deadline.
// Internal to the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_TRANSPORT_MPI_H
#define GPIPE_RUNTIME_LIB_TRANSPORT_MPI_H

#include "gpipe/Runtime/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpipe::rt::mpi {

using Clock = std::chrono::steady_clock;

/// Initializes MPI with MPI_THREAD_SERIALIZED support (the rank thread and
/// the main thread call MPI, never at the same time).
Status initialize(int *argc, char ***argv);
/// MPI_Finalize, when initialized.
void finalize();
/// MPI_Abort of the whole job with exit code 1.
[[noreturn]] void abortJob();

/// Whether MPI was initialized (by initialize()).
bool isActive();
/// This process's rank and the world's size.
int rank();
int size();

/// How a wait ended.
enum class Wait { Done, Timeout, Aborted };

/// The largest tag transfers may use (the few above are the transport's).
int maxTransferTag();

/// A synchronous send (completes once the receiver has matched it: the
/// rendezvous the schedule verifier assumes) / a receive of exactly `bytes`.
/// Messages of any size (sent in pieces MPI's int counts can carry); a
/// receive of another size than expected is reported as Aborted with the
/// sizes in `abortMessage`. `abortMessage` receives another process's
/// failure when Aborted.
Wait send(const void *data, int64_t bytes, int peer, int tag,
          Clock::time_point deadline, std::string &abortMessage);
Wait recv(void *data, int64_t bytes, int peer, int tag,
          Clock::time_point deadline, std::string &abortMessage);

/// A buffered send's message: a standard-mode nonblocking send of a
/// staging copy (in pieces MPI's int counts can carry), complete once MPI
/// no longer reads the copy. One per staging copy, restarted in place.
class PostedSend {
public:
  PostedSend();
  ~PostedSend();
  PostedSend(const PostedSend &) = delete;
  PostedSend &operator=(const PostedSend &) = delete;
  /// Posts `bytes` at `data` to `peer` with `tag` (the last message must
  /// be complete).
  void start(const void *data, int64_t bytes, int peer, int tag);
  /// Whether the last message is complete (true when none was posted);
  /// advances it.
  bool test();
  /// Until the last message is complete, the deadline (it is cancelled) or
  /// another process's failure (`abortMessage`).
  Wait wait(Clock::time_point deadline, std::string &abortMessage);

private:
  struct State;
  std::unique_ptr<State> state;
};

/// Tells every other process that this one failed with `message` (does not
/// wait for them to receive it).
void announceFailure(const std::string &message);
/// Whether another process announced a failure; its message.
bool pollFailure(std::string &message);

/// Gathers every process's `mine` at process 0 (`all[r]`, any sizes), by
/// the deadline.
Wait gather(const std::vector<uint8_t> &mine,
            std::vector<std::vector<uint8_t>> &all, Clock::time_point deadline,
            std::string &abortMessage);
/// Process 0's `data` (resized) to everyone, by the deadline.
Wait broadcast(std::vector<uint8_t> &data, Clock::time_point deadline,
               std::string &abortMessage);

/// Data parallelism: makes the communicator of this process's replica group
/// (the processes of pipeline rank `rank`, ordered by `replica`). Once,
/// collectively, before any reduction.
Status makeReplicaGroup(int rank, int replica);

/// One stage's gradient all-reduce among the replica group (Transport.h's
/// Reduction): the other replicas' pieces of this replica's share are
/// received into `scratch` while its pieces of theirs are sent, the share
/// is summed (sumShare), then the shares are exchanged. Nonblocking:
/// test() advances it; wait() until complete.
class Reduce {
public:
  /// Starts the exchange of `count` gradients at `grads` (host memory) in
  /// `out` (made when null, else restarted: it must be complete); fails
  /// when a share exceeds MPI's int count.
  static Status start(float *grads, float *scratch, int64_t count, int replicas,
                      int replica, int64_t stage, std::unique_ptr<Reduce> &out);
  ~Reduce();
  /// Advances without waiting; true once complete.
  bool test();
  /// Until complete, the deadline, or another process's failure
  /// (`abortMessage`). On a timeout `missing` lists the replicas whose
  /// pieces did not come.
  Wait wait(Clock::time_point deadline, std::string &abortMessage,
            std::string &missing);

private:
  Reduce() = default;
  struct State;
  std::unique_ptr<State> state;
};

} // namespace gpipe::rt::mpi

#endif // GPIPE_RUNTIME_LIB_TRANSPORT_MPI_H
