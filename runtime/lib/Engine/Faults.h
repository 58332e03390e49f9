//===- Faults.h - Injected faults for tests ---------------------*- C++ -*-===//
//
// Tests make a run fail on purpose: a rank that stops, stalls or kills its
// process at an action (FaultInjection), or a NaN put into an activation
// (NanInjection). These are the checks of the requests against the model
// and what happens when one falls due. Internal to the engine.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_ENGINE_FAULTS_H
#define GPIPE_RUNTIME_LIB_ENGINE_FAULTS_H

#include "gpipe/Runtime/Engine.h"

#include <atomic>

namespace gpipe::rt {

/// The injected fault names a rank, step and action the run has.
Status checkFaultInjection(const ModelMetadata &meta,
                           const RunOptions &options);

/// At the start of action `action` of step `step` (from 0) of rank `rank`
/// of replica `replica`:
/// false when no fault is due; otherwise does the fault (Kill does not
/// return, Stall returns once `aborted` is set) and returns true: the rank
/// is dead.
bool injectFaultAt(const std::optional<FaultInjection> &fault, int64_t rank,
                   int64_t replica, int64_t step, int64_t action,
                   const std::atomic<bool> &aborted);

/// Whether NaN injection poisons micro-batch `mb` of rank `rank` in step
/// `step` (from 0), a payload of `bytes` bytes.
inline bool nanDue(const std::optional<NanInjection> &nan, int64_t rank,
                   int64_t step, int64_t mb, int64_t bytes) {
  return nan && nan->rank == rank && nan->step == step + 1 && nan->mb == mb &&
         bytes >= 4;
}

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_LIB_ENGINE_FAULTS_H
