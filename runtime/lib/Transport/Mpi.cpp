//===- Mpi.cpp - The MPI transport's primitives -----------------*- C++ -*-===//
//
// See Mpi.h. Failure announcements travel on their own tag; every wait
// polls for them, so one process's error ends the others' waits at once.
//
//===----------------------------------------------------------------------===//

#include "Mpi.h"

// The C API only: the C++ bindings need a library of their own.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>

#include <algorithm>
#include <cstring>
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
  // In pieces of at most kChunkBytes, in order (same source and tag keep
  // their order); an empty message is still one message.
  const char *p = static_cast<const char *>(data);
  int64_t done = 0;
  do {
    int64_t n = std::min(bytes - done, kChunkBytes);
    MPI_Request request;
    MPI_Issend(p + done, int(n), MPI_BYTE, peer, tag, MPI_COMM_WORLD,
               &request);
    Wait w = waitFor(request, deadline, abortMessage);
    if (w != Wait::Done)
      return w;
    done += n;
  } while (done < bytes);
  return Wait::Done;
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
    Wait w = recv(&bytes, sizeof bytes, peer, gatherTag(), deadline,
                  abortMessage);
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
  Wait w = recv(&bytes, sizeof bytes, 0, broadcastTag(), deadline, abortMessage);
  if (w != Wait::Done)
    return w;
  data.resize(bytes);
  if (!bytes)
    return Wait::Done;
  return recv(data.data(), int64_t(bytes), 0, broadcastTag(), deadline,
              abortMessage);
}

} // namespace gpipe::rt::mpi
