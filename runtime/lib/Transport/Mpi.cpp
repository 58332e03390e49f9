//===- Mpi.cpp - The MPI transport's primitives -----------------*- C++ -*-===//
//
// See Mpi.h. Failure announcements travel on their own tag; every wait
// polls for them, so one process's error ends the others' waits at once.
//
//===----------------------------------------------------------------------===//

#include "Mpi.h"

#include "gpipe/Runtime/Transport.h"

// The C API only: the C++ bindings need a library of their own.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>

#include <algorithm>
#include <cstring>
#include <limits>
#include <thread>

namespace gpipe::rt::mpi {

namespace {

/// The largest tag this MPI allows (at least 32767 by the standard); the
/// three below it are the failure, gather and broadcast tags, everything
/// under them the transfer tags.
int tagUpperBound() {
  static int bound = [] {
    int *value = nullptr, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag);
    return flag && value ? *value : 32767;
  }();
  return bound;
}
int failureTag() { return tagUpperBound(); }
int gatherTag() { return tagUpperBound() - 1; }
int broadcastTag() { return tagUpperBound() - 2; }

/// Messages go in pieces of at most this many bytes (MPI counts are int).
constexpr int64_t kChunkBytes = int64_t(1) << 30;

/// Calls `post(piece, n)` for the pieces of at most kChunkBytes of `bytes`
/// at `data`, in order (same source and tag keep their order, so the
/// receiver's pieces match), while it returns true; an empty message is
/// still one piece.
template <typename Post>
void forEachPiece(const void *data, int64_t bytes, Post post) {
  const char *p = static_cast<const char *>(data);
  int64_t done = 0;
  do {
    int64_t n = std::min(bytes - done, kChunkBytes);
    if (!post(p + done, int(n)))
      return;
    done += n;
  } while (done < bytes);
}

/// Polls `request` until it completes, the deadline passes (the request is
/// cancelled) or a failure is announced.
Wait waitFor(MPI_Request &request, Clock::time_point deadline,
             std::string &abortMessage, MPI_Status *status = nullptr) {
  for (int spin = 0;; ++spin) {
    int done = 0;
    MPI_Test(&request, &done, status ? status : MPI_STATUS_IGNORE);
    if (done)
      return Wait::Done;
    if (pollFailure(abortMessage)) {
      MPI_Cancel(&request);
      MPI_Request_free(&request);
      return Wait::Aborted;
    }
    if (Clock::now() >= deadline) {
      MPI_Cancel(&request);
      MPI_Request_free(&request);
      return Wait::Timeout;
    }
    // Spin briefly (transfers between busy stages complete fast), then
    // yield the core to the computing threads.
    if (spin > 64)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

} // namespace

Status initialize(int *argc, char ***argv) {
  if (isActive())
    return Status::success();
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) !=
      MPI_SUCCESS)
    return Status::error("MPI_Init_thread failed");
  if (provided < MPI_THREAD_SERIALIZED)
    return Status::error("this MPI library does not support calls from "
                         "more than one thread (MPI_THREAD_SERIALIZED)");
  return Status::success();
}

void finalize() {
  if (isActive())
    MPI_Finalize();
}

void abortJob() {
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

bool isActive() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

int maxTransferTag() { return tagUpperBound() - 3; }

Wait send(const void *data, int64_t bytes, int peer, int tag,
          Clock::time_point deadline, std::string &abortMessage) {
  Wait w = Wait::Done;
  forEachPiece(data, bytes, [&](const char *piece, int n) {
    MPI_Request request;
    MPI_Issend(piece, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &request);
    w = waitFor(request, deadline, abortMessage);
    return w == Wait::Done;
  });
  return w;
}

struct PostedSend::State {
  std::vector<MPI_Request> requests;
};

PostedSend::PostedSend() : state(std::make_unique<State>()) {}
PostedSend::~PostedSend() = default;

void PostedSend::start(const void *data, int64_t bytes, int peer, int tag) {
  state->requests.clear();
  forEachPiece(data, bytes, [&](const char *piece, int n) {
    MPI_Request request;
    MPI_Isend(piece, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &request);
    state->requests.push_back(request);
    return true;
  });
}

bool PostedSend::test() {
  if (state->requests.empty())
    return true;
  int done = 0;
  MPI_Testall(int(state->requests.size()), state->requests.data(), &done,
              MPI_STATUSES_IGNORE);
  if (done)
    state->requests.clear();
  return done != 0;
}

Wait PostedSend::wait(Clock::time_point deadline, std::string &abortMessage) {
  for (int spin = 0;; ++spin) {
    if (test())
      return Wait::Done;
    bool failed = pollFailure(abortMessage);
    if (failed || Clock::now() >= deadline) {
      for (MPI_Request &request : state->requests)
        if (request != MPI_REQUEST_NULL) {
          MPI_Cancel(&request);
          MPI_Request_free(&request);
        }
      state->requests.clear();
      return failed ? Wait::Aborted : Wait::Timeout;
    }
    if (spin > 64)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Wait recv(void *data, int64_t bytes, int peer, int tag,
          Clock::time_point deadline, std::string &abortMessage) {
  char *p = static_cast<char *>(data);
  int64_t done = 0;
  do {
    int64_t n = std::min(bytes - done, kChunkBytes);
    MPI_Request request;
    MPI_Status status;
    MPI_Irecv(p + done, int(n), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &request);
    Wait w = waitFor(request, deadline, abortMessage, &status);
    if (w != Wait::Done)
      return w;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (count != int(n)) {
      abortMessage = "a message from process " + std::to_string(peer) +
                     " carried " + std::to_string(count) + " bytes, " +
                     std::to_string(n) + " were expected";
      return Wait::Aborted;
    }
    done += n;
  } while (done < bytes);
  return Wait::Done;
}

void announceFailure(const std::string &message) {
  static std::string text; // must outlive the nonblocking sends
  text = "rank " + std::to_string(rank()) + ": " + message;
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank())
      continue;
    MPI_Request request;
    MPI_Isend(text.data(), int(text.size()), MPI_CHAR, peer, failureTag(),
              MPI_COMM_WORLD, &request);
    MPI_Request_free(&request);
  }
}

bool pollFailure(std::string &message) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, failureTag(), MPI_COMM_WORLD, &flag, &status);
  if (!flag)
    return false;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(size_t(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, failureTag(),
           MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  message = text;
  return true;
}

Wait gather(const std::vector<uint8_t> &mine,
            std::vector<std::vector<uint8_t>> &all, Clock::time_point deadline,
            std::string &abortMessage) {
  // Point to point (sizes differ per process): everyone sends to 0.
  int me = rank(), n = size();
  if (me != 0) {
    uint64_t bytes = mine.size();
    Wait w = send(&bytes, sizeof bytes, 0, gatherTag(), deadline, abortMessage);
    if (w != Wait::Done || bytes == 0)
      return w;
    return send(mine.data(), int64_t(bytes), 0, gatherTag(), deadline,
                abortMessage);
  }
  all.assign(size_t(n), {});
  all[0] = mine;
  for (int peer = 1; peer < n; ++peer) {
    uint64_t bytes = 0;
    Wait w =
        recv(&bytes, sizeof bytes, peer, gatherTag(), deadline, abortMessage);
    if (w != Wait::Done)
      return w;
    all[size_t(peer)].resize(bytes);
    if (bytes == 0)
      continue;
    w = recv(all[size_t(peer)].data(), int64_t(bytes), peer, gatherTag(),
             deadline, abortMessage);
    if (w != Wait::Done)
      return w;
  }
  return Wait::Done;
}

Wait broadcast(std::vector<uint8_t> &data, Clock::time_point deadline,
               std::string &abortMessage) {
  int me = rank(), n = size();
  if (me == 0) {
    for (int peer = 1; peer < n; ++peer) {
      uint64_t bytes = data.size();
      Wait w = send(&bytes, sizeof bytes, peer, broadcastTag(), deadline,
                    abortMessage);
      if (w == Wait::Done && bytes)
        w = send(data.data(), int64_t(bytes), peer, broadcastTag(), deadline,
                 abortMessage);
      if (w != Wait::Done)
        return w;
    }
    return Wait::Done;
  }
  uint64_t bytes = 0;
  Wait w =
      recv(&bytes, sizeof bytes, 0, broadcastTag(), deadline, abortMessage);
  if (w != Wait::Done)
    return w;
  data.resize(bytes);
  if (!bytes)
    return Wait::Done;
  return recv(data.data(), int64_t(bytes), 0, broadcastTag(), deadline,
              abortMessage);
}

//===----------------------------------------------------------------------===//
// Gradient all-reduce among replicas
//===----------------------------------------------------------------------===//

namespace {
/// The communicator of this process's replica group (MPI_COMM_NULL before
/// makeReplicaGroup).
MPI_Comm replicaComm = MPI_COMM_NULL;
} // namespace

Status makeReplicaGroup(int rank, int replica) {
  if (replicaComm != MPI_COMM_NULL)
    return Status::success();
  if (MPI_Comm_split(MPI_COMM_WORLD, rank, replica, &replicaComm) !=
      MPI_SUCCESS)
    return Status::error("MPI_Comm_split of the replica groups failed");
  return Status::success();
}

struct Reduce::State {
  float *grads = nullptr, *scratch = nullptr;
  int64_t count = 0, share = 0, stage = 0;
  int replicas = 1, replica = 0;
  /// 1: pieces of the share coming in, 2: shares going out, 3: done.
  int phase = 1;
  std::vector<MPI_Request> requests;
  /// The replica each request talks to.
  std::vector<int> peers;

  std::pair<int64_t, int64_t> range(int d) const {
    return getReduceShareRange(count, replicas, d);
  }
  int tag(int phaseOf) const { return int(2 * stage + phaseOf - 1); }
  void post(bool send, float *data, int64_t n, int peer, int phaseOf) {
    MPI_Request request;
    if (send)
      MPI_Isend(data, int(n), MPI_FLOAT, peer, tag(phaseOf), replicaComm,
                &request);
    else
      MPI_Irecv(data, int(n), MPI_FLOAT, peer, tag(phaseOf), replicaComm,
                &request);
    requests.push_back(request);
    peers.push_back(peer);
  }
  bool allDone() {
    int done = 0;
    MPI_Testall(int(requests.size()), requests.data(), &done,
                MPI_STATUSES_IGNORE);
    return done;
  }
  void cancel() {
    for (MPI_Request &request : requests)
      if (request != MPI_REQUEST_NULL) {
        MPI_Cancel(&request);
        MPI_Request_free(&request);
      }
    requests.clear();
    peers.clear();
  }
};

Status Reduce::start(float *grads, float *scratch, int64_t count, int replicas,
                     int replica, int64_t stage, std::unique_ptr<Reduce> &out) {
  if (replicaComm == MPI_COMM_NULL)
    return Status::error("no replica group (makeReplicaGroup)");
  const int64_t share = getReduceShare(count, replicas);
  if (share > std::numeric_limits<int>::max() ||
      2 * stage + 1 > int64_t(maxTransferTag()))
    return Status::error("a share of " + std::to_string(share) +
                         " gradients (or stage " + std::to_string(stage) +
                         ") is beyond what one MPI message carries");
  // A finished exchange is restarted in place: its request lists keep
  // their capacity, so a step allocates nothing.
  if (!out)
    out.reset(new Reduce());
  if (!out->state)
    out->state = std::make_unique<State>();
  State *s = out->state.get();
  if (!s->requests.empty())
    return Status::error("the stage's gradients are already being reduced");
  s->grads = grads;
  s->scratch = scratch;
  s->count = count;
  s->share = share;
  s->stage = stage;
  s->replicas = replicas;
  s->replica = replica;
  s->phase = 1;
  // This replica's share comes in from every other replica (the tail of a
  // short last share zeroed: the Reduce buffer is written whole), and its
  // pieces of their shares go out.
  auto [lo, hi] = s->range(replica);
  for (int j = 0, slot = 0; j < replicas; ++j) {
    if (j == replica)
      continue;
    float *piece = scratch + int64_t(slot++) * s->share;
    std::fill(piece + (hi - lo), piece + s->share, 0.0f);
    s->post(false, piece, hi - lo, j, 1);
    auto [jlo, jhi] = s->range(j);
    s->post(true, grads + jlo, jhi - jlo, j, 1);
  }
  return Status::success();
}

Reduce::~Reduce() {
  if (state)
    state->cancel();
}

bool Reduce::test() {
  State &s = *state;
  if (s.phase == 1 && s.allDone()) {
    s.requests.clear();
    s.peers.clear();
    sumShare(s.grads, s.scratch, s.replicas, s.replica, s.count);
    auto [lo, hi] = s.range(s.replica);
    for (int j = 0; j < s.replicas; ++j) {
      if (j == s.replica)
        continue;
      s.post(true, s.grads + lo, hi - lo, j, 2);
      auto [jlo, jhi] = s.range(j);
      s.post(false, s.grads + jlo, jhi - jlo, j, 2);
    }
    s.phase = 2;
  }
  if (s.phase == 2 && s.allDone()) {
    s.requests.clear();
    s.peers.clear();
    s.phase = 3;
  }
  return s.phase == 3;
}

Wait Reduce::wait(Clock::time_point deadline, std::string &abortMessage,
                  std::string &missing) {
  for (int spin = 0;; ++spin) {
    if (test())
      return Wait::Done;
    if (pollFailure(abortMessage)) {
      state->cancel();
      return Wait::Aborted;
    }
    if (Clock::now() >= deadline) {
      // The replicas whose messages are still outstanding.
      std::vector<int> late;
      for (size_t i = 0; i < state->requests.size(); ++i) {
        int done = 0;
        MPI_Test(&state->requests[i], &done, MPI_STATUS_IGNORE);
        if (!done &&
            std::find(late.begin(), late.end(), state->peers[i]) == late.end())
          late.push_back(state->peers[i]);
      }
      std::sort(late.begin(), late.end());
      missing.clear();
      for (int j : late)
        missing += (missing.empty() ? "replica " : ", ") + std::to_string(j);
      state->cancel();
      return Wait::Timeout;
    }
    if (spin > 64)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

} // namespace gpipe::rt::mpi
