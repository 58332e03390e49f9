//===- Timeline.h - Schedule timeline simulation ----------------*- C++ -*-===//
//
// Predicts when every action of a verified schedule runs, given per-(kind,
// stage) durations and per-boundary transfer times: each rank runs its
// program in order; a compute action takes its duration; a send and its
// matching receive are a blocking rendezvous, both finishing at the later of
// their start times plus the boundary's transfer time; with buffered sends
// (Rendezvous.h SendBuffering) a send takes the transfer time once its
// staging copy is free, and its receive ends once the send has (the receiver
// never waits for a sender that is not there yet). From that: makespan,
// per-rank busy time, bubble fraction (to compare with GPipe's closed form
// (K-1)/(M+K-1)), and per-stage peak number of micro-batches whose
// activations are held. Exports a Chrome/Perfetto trace (JSON) and a
// standalone SVG picture. Plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_TIMELINE_H
#define GPIPE_ANALYSIS_TIMELINE_H

#include "gpipe/Analysis/Rendezvous.h"
#include "gpipe/Analysis/Schedule.h"

#include <array>
#include <string>
#include <vector>

namespace mlir::gpipe {

/// Durations in seconds.
struct ActionDurations {
  /// Per stage, the duration of one action of each kind (indexed by
  /// ActionKind; the send/receive entries are unused).
  std::vector<std::array<double, kNumActionKinds>> perStage;
  /// numStages - 1 entries (or empty: free): seconds to move one boundary
  /// payload across boundary b (stage b <-> b+1), either direction.
  std::vector<double> transfer;

  /// Every stage: forward `forward`, backward `backward`, each backward half
  /// `backward / 2`, recompute `forward`, reduce and step 0; every boundary
  /// `transfer`.
  static ActionDurations uniform(int numStages, double forward, double backward,
                                 double transfer = 0.0);
  void set(ActionKind kind, int stage, double seconds);
  /// 0 for a stage or boundary out of range.
  double get(ActionKind kind, int stage) const;
  double getTransfer(int boundary) const;
};

/// One simulated action.
struct TimedAction {
  int action = 0; ///< index in the rank's program
  double start = 0;
  double end = 0;
};

struct Timeline {
  /// Per rank, one entry per action in program order.
  std::vector<std::vector<TimedAction>> ranks;
  double makespan = 0;
  /// Per rank: seconds spent in F, B, I, W and R (not in transfers, waits,
  /// reductions or steps).
  std::vector<double> busy;
  /// Per rank: `busy` plus its optimizer steps (what the runtime counts as
  /// a rank's compute time).
  std::vector<double> busyWithSteps;
  /// 1 - sum(busy) / (numRanks x makespan); 0 for an empty makespan.
  double bubbleFraction = 0;
  /// Per stage: the most micro-batches whose forward has finished and whose
  /// backward (B, or W for a split backward) has not, at any time.
  std::vector<int> peakActivations;
  /// Non-empty when the schedule fails verification or the durations are
  /// unusable; the other fields are then empty.
  std::string error;

  bool ok() const { return error.empty(); }
};

/// GPipe's bubble fraction with uniform stages: (K-1)/(M+K-1).
double getIdealBubbleFraction(int numStages, int numMicrobatches);

/// Simulates `schedule` (which must pass `verifySchedule`, else the error says
/// why) with `durations` (negative or non-finite values are errors). Each
/// rank runs its actions one after the other, except REDUCE_GRAD: the
/// all-reduce runs on the rank's communication lane (one at a time) while
/// the rank goes on, and the stage's STEP starts once it is done. Sends go
/// through `buffering`'s staging copies (none: rendezvous).
Timeline simulate(const Schedule &schedule, const ActionDurations &durations,
                  const SendBuffering &buffering = {});

/// Perturbed duration sets `chooseSendBuffering` weighs beside the
/// predicted one.
inline constexpr int kSendBufferingTrials = 4;

/// The staging copies `schedule`'s sends get: per send slot (a stage's
/// SEND_F or SEND_B), the fewest copies, at most `maxCopies`, that keep the
/// simulated makespan, summed over `durations` and kSendBufferingTrials
/// perturbations of it (each stage's and kind's duration off by up to 25%),
/// within 0.1% of what every slot having `maxCopies` gives. Slots that
/// gain nothing stay rendezvous (0 copies, no memory). Empty for
/// `maxCopies` < 1 or a schedule the simulation rejects.
SendBuffering chooseSendBuffering(const Schedule &schedule,
                                  const ActionDurations &durations,
                                  int maxCopies);

/// Chrome trace event format (loads in chrome://tracing and Perfetto): one
/// thread per rank (pid 0, tid = rank, named "rank k (stage k)"), one
/// complete ("X") event per action with ts/dur in microseconds, name such as
/// "F3", "B3", "SEND_F3", args {stage, microbatch}, and a flow arrow ("s" on
/// the send, "f" on the receive, same id) per transfer. Empty for a timeline
/// with an error.
std::string toChromeTrace(const Schedule &schedule, const Timeline &timeline);

/// A standalone SVG picture: one row per rank, boxes for forward, backward
/// (and its halves), recompute, reduce and step in distinct colours with the
/// micro-batch number inside, sends and receives as thin marks, a time axis
/// and a legend. An SVG stating the error for a timeline with an error.
std::string toSVG(const Schedule &schedule, const Timeline &timeline);

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_TIMELINE_H
