//===- Faults.cpp - Injected faults for tests ------------------*- C++ -*-===//
//
// Parsing and checking --inject-fault requests, and doing them: a rank that
// stops silently (its peers' waits then expire), hangs like a stuck
// computation, or kills its whole process (the MPI job then goes down).
//
//===----------------------------------------------------------------------===//

#include "Faults.h"

#include "gpipe/Runtime/Checkpoint.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace gpipe::rt {

Status checkFaultInjection(const ModelMetadata &meta,
                           const RunOptions &options) {
  const std::optional<FaultInjection> &f = options.fault;
  if (!f)
    return Status::success();
  if (f->rank < 0 || f->rank >= meta.numRanks())
    return Status::error("fault injection: rank " + std::to_string(f->rank) +
                         " is outside [0, " + std::to_string(meta.numRanks()) +
                         ")");
  if (f->replica < 0 || f->replica >= meta.dataParallel)
    return Status::error("fault injection: replica " +
                         std::to_string(f->replica) + " is outside [0, " +
                         std::to_string(meta.dataParallel) + ")");
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
  return Status::success();
}

bool injectFaultAt(const std::optional<FaultInjection> &fault, int64_t rank,
                   int64_t replica, int64_t step, int64_t action,
                   const std::atomic<bool> &aborted) {
  if (!fault || fault->rank != rank || fault->replica != replica ||
      fault->step != step + 1 || fault->action != action)
    return false;
  switch (fault->mode) {
  case FaultInjection::Mode::Kill:
    std::fflush(nullptr);
    std::raise(SIGKILL);
    break;
  case FaultInjection::Mode::Stall:
    // Hangs like a stuck computation: no progress, no messages, until the
    // run is torn down.
    while (!aborted.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    break;
  case FaultInjection::Mode::Stop:
    break;
  }
  return true;
}

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
        return Status::error("bad fault spec '" + text +
                             "': mode must be "
                             "stop, stall or kill, got '" +
                             value + "'");
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
                           "rank=R[,replica=D][,step=S][,action=A][,mode=M] "
                           "with integers");
    if (key == "rank") {
      fault.rank = parsed;
      haveRank = true;
    } else if (key == "replica") {
      fault.replica = parsed;
    } else if (key == "step") {
      fault.step = parsed;
    } else if (key == "action") {
      fault.action = parsed;
    } else {
      return Status::error("bad fault spec '" + text + "': unknown key '" +
                           key +
                           "' (expected rank, replica, step, action, mode)");
    }
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  if (!haveRank)
    return Status::error("bad fault spec '" + text + "': rank=R is required");
  return Status::success();
}

} // namespace gpipe::rt
