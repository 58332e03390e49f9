//===- Trace.h - What a run recorded of its actions -------------*- C++ -*-===//
//
// With RunOptions::recordTrace (Engine.h) a run keeps every action's begin
// and end, and with profileLayers the time each compute action spent in
// each layer: the records here, which RunResult holds. The writers turn
// them into a Chrome trace, a timeline picture and the measured profile
// gpipe-compile reads. A failed run's flight recorder (each rank's last
// actions, kept by the engine whether or not it traces) reaches the caller
// as text, RunResult::flightRecorder. Part of GPipeRuntimeEngine.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_TRACE_H
#define GPIPE_RUNTIME_TRACE_H

#include "gpipe/Runtime/Status.h"

#include <cstdint>
#include <string>

namespace gpipe::rt {

struct ModelMetadata;
struct RunResult;

/// One action as it ran (microseconds since the run started).
struct TraceEvent {
  /// `rank` is the worker (ModelMetadata::numWorkers).
  int64_t rank = 0, step = 0, action = 0;
  double beginUs = 0.0, endUs = 0.0;
};

/// Part of one compute action spent in one layer: `mark` as
/// gpipe_rt_layer received it (2 x layer + recomputing), or -1 for the time
/// before the action's first mark.
struct LayerTime {
  int64_t rank = 0, step = 0, action = 0, mark = -1;
  double seconds = 0.0;
};

/// Writes `result.trace` as Chrome trace JSON (chrome://tracing, Perfetto):
/// one thread per rank.
Status writeChromeTrace(const std::string &path, const ModelMetadata &metadata,
                        const RunResult &result);

/// Writes one step of the run as a standalone SVG picture: the compiler's
/// predicted timeline (the metadata's predicted.timeline) above the
/// measured steady-state step (the median by duration of the steps after
/// the first), one row per rank on one time scale, each rank's busy time
/// beside it. Needs RunOptions::recordTrace.
Status writeTimelineSVG(const std::string &path, const ModelMetadata &metadata,
                        const RunResult &result);

/// Writes the measured profile of a run made with RunOptions::profileLayers
/// (`gpipe-run --profile`) to `path` for `gpipe-compile --profile-file`:
/// per layer the median seconds of one micro-batch's forward, backward (and
/// halves) and recompute, per compute action the time outside the layers,
/// the link's latency and bandwidth, the optimizer's seconds per byte, and
/// the machine. An existing profile of the same model, target and precision
/// keeps its measurements of other micro-batch sizes; any other file there
/// is an error and left as it is.
Status writeProfile(const std::string &path, const ModelMetadata &metadata,
                    const RunResult &result);

/// What writeProfile would refuse before a run spends its steps: a file at
/// `path` that is no profile, or one of another model (fingerprint),
/// source, target or precision (an error naming the field and both
/// values). No file yet is fine.
Status checkProfilePath(const std::string &path, const ModelMetadata &metadata);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_TRACE_H
