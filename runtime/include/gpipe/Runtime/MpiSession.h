//===- MpiSession.h - The MPI session of a process --------------*- C++ -*-===//
//
// A program whose ranks run as processes under mpirun (the mpi and nccl
// transports, Transport.h) starts and ends MPI through these, and ends the
// whole job when one process fails. Part of GPipeRuntimeTransport.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_MPISESSION_H
#define GPIPE_RUNTIME_MPISESSION_H

#include "gpipe/Runtime/Status.h"

#include <string>

namespace gpipe::rt {

/// The MPI session of a process started by mpirun: initializes MPI (with
/// the thread support the engine needs) once; rank and size of the world.
Status initializeMpi(int *argc, char ***argv);
int mpiRank();
int mpiSize();
/// Ends MPI normally (after a successful run).
void finalizeMpi();
/// After a failure in an MPI run: tells the other processes (unless
/// `announce` is false: the failure came from one of them), gives them a
/// moment to print their flight recorders, and ends the whole job with
/// exit code 1. Does not return.
[[noreturn]] void abortMpiJob(const std::string &message, bool announce);
/// Under MPI: fails unless every process passes the same `value` (what the
/// error calls `what`), e.g. the checkpoint each resumes from. Succeeds at
/// once without MPI.
Status checkSameOnEveryProcess(const std::string &value,
                               const std::string &what, double timeoutSeconds);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_MPISESSION_H
