//===- ScheduleVerifier.h - Schedule verification ---------------*- C++ -*-===//
//
// Proves a schedule safe before codegen. First static checks over every
// rank's program: the stage map and each action's stage, micro-batch and peer;
// every (stage, micro-batch) runs exactly one forward and one backward (or
// one input-gradient plus one weight-gradient half) on its stage's rank, at
// most one recompute; data dependencies in program order (receive before the
// forward or backward that consumes it, send after the action that produces
// it, recompute between forward and backward, weight half after input half);
// each stage's Step after its last backward and Steps at the end of the
// program; each cross-rank transfer has exactly one send and one receive with
// equal bytes and dtype. Then a simulation of all ranks with BLOCKING
// RENDEZVOUS send/receive (a send completes only when the peer reaches the
// matching receive, and vice versa; matching is by source, destination,
// direction, stage and micro-batch) that proves no rank waits forever, and
// otherwise reports each wait cycle and each send or receive left without a
// partner. Rendezvous is the strictest semantics: a schedule that passes also
// runs with buffered or asynchronous transports.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_SCHEDULEVERIFIER_H
#define GPIPE_ANALYSIS_SCHEDULEVERIFIER_H

#include "gpipe/Analysis/Schedule.h"

#include <string>
#include <vector>

namespace mlir::gpipe {

/// The class of a verifier finding.
enum class VerifyProblemKind {
  Malformed, ///< sizes, stage map, stage/micro-batch/peer out of range
  Coverage,  ///< a compute action missing or duplicated
  Order,     ///< a data dependency broken in program order
  Unmatched, ///< a send without receive or the reverse, or a duplicate
  Mismatch,  ///< a send and its receive disagree on bytes or dtype
  Deadlock,  ///< the rendezvous simulation got stuck
};

struct VerifyProblem {
  VerifyProblemKind kind;
  /// Lower case, no trailing period, naming ranks, action indices and actions:
  /// "rank 1 action 5 (1SEND_F3 to rank 2) has no matching receive".
  std::string message;
};

struct VerifyResult {
  /// The first `kMaxReportedProblems` problems, static ones first.
  std::vector<VerifyProblem> problems;
  /// How many problems were found in all.
  int numProblems = 0;
  /// One line: "schedule is valid: ..." or "schedule is invalid: N problems
  /// (...)".
  std::string summary;

  bool ok() const { return numProblems == 0; }
  /// The summary followed by one problem per line.
  std::string getMessage() const;
  /// Whether some reported problem has `kind`.
  bool has(VerifyProblemKind kind) const;
};

constexpr int kMaxReportedProblems = 16;

/// Verifies `schedule` as described in the file comment.
VerifyResult verifySchedule(const Schedule &schedule);

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_SCHEDULEVERIFIER_H
