//===- FlightRecorder.h - Each rank's last actions -------------*- C++ -*-===//
//
// What a failed run prints per rank: its last few actions with their
// durations, the one in progress marked "unfinished after ...". Under MPI a
// process may be torn down by SIGTERM (mpirun ending the job after another
// process died); the rank thread then keeps a rendered copy that a signal
// handler writes with write(2). Internal to the engine.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_ENGINE_FLIGHTRECORDER_H
#define GPIPE_RUNTIME_LIB_ENGINE_FLIGHTRECORDER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpipe::rt {

struct RankPlan;

/// One action as it ran, in nanoseconds since the run started (end -1
/// while it runs).
struct RecordedAction {
  int64_t step, action, beginNs, endNs;
};

/// A recorded action with the plan it is of: a rank switches between its
/// training and evaluation plans, whose action numbers differ.
struct RecentAction : RecordedAction {
  const RankPlan *plan;
};

/// A stretch of one action spent in one layer (gpipe_rt_layer's `mark`), or
/// outside every layer (mark -1: from the action's begin to its first mark).
struct RecordedLayer {
  int64_t step, action, mark, ns;
};

class FlightRecorder {
public:
  /// Actions kept per rank.
  static constexpr size_t kSize = 6;

  /// Action `action` of `plan` in step `step` (from 0) began at `beginNs`.
  void begin(const RankPlan &plan, int64_t step, int64_t action,
             int64_t beginNs);
  /// The action begun last ended at `endNs`.
  void end(int64_t endNs);

  /// "rank R last actions: step S #A kind ... (stage s, mb m, 12 us); ..."
  /// with `nowNs` timing an unfinished action.
  /// `who` names the rank ("rank 1", "replica 1 rank 1").
  std::string render(const std::string &who, int64_t nowNs) const;
  /// The same into `out` (at most `capacity` - 1 characters and a NUL,
  /// cut short if longer); returns the length written. Allocates nothing.
  size_t renderInto(char *out, size_t capacity, const char *who,
                    int64_t nowNs) const;

  /// The action in progress when it runs a stage's layers (a forward, a
  /// backward or its half, a recompute: no waits inside), or null.
  const RecentAction *unfinishedCompute() const;

private:
  /// Oldest first once full, from `next`.
  std::vector<RecentAction> recent;
  size_t next = 0;
};

/// From now on SIGTERM prints the last published recorder and exits 1.
void installTerminationHandler();
/// Makes `text` what SIGTERM prints (async-signal-safe to read).
/// Renders `recorder` for the termination handler (after every action of
/// an MPI run; allocates nothing).
void publishFlightRecorder(const FlightRecorder &recorder, const char *who,
                           int64_t nowNs);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_LIB_ENGINE_FLIGHTRECORDER_H
