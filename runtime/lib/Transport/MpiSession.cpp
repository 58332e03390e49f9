//===- MpiSession.cpp - The MPI session of a gpipe-run process -*- C++ -*-===//
//
// MpiSession.h: MPI for programs started by mpirun: initialization and
// the end of the session, a failed job's abort after the other processes
// had a moment to print their flight recorders, and the check that every
// process agrees on a value (the model it loaded, the checkpoint it resumes
// from) before training starts.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/MpiSession.h"
#include "gpipe/Runtime/Transport.h"

#include "Transport/Mpi.h"

#include <chrono>
#include <cstdlib>
#include <thread>

namespace gpipe::rt {

using Clock = std::chrono::steady_clock;

Status initializeMpi(int *argc, char ***argv) {
  return mpi::initialize(argc, argv);
}

int mpiRank() { return mpi::isActive() ? mpi::rank() : 0; }
int mpiSize() { return mpi::isActive() ? mpi::size() : 1; }

void finalizeMpi() { mpi::finalize(); }

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
                               const std::string &what, double timeoutSeconds) {
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
                             ? remoteFailure(abortMessage)
                             : "processes could not compare " + what +
                                   " within the timeout");
  if (!bytes.empty())
    return Status::error(std::string(bytes.begin(), bytes.end()));
  return Status::success();
}

} // namespace gpipe::rt
