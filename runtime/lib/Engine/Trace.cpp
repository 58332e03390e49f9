//===- Trace.cpp - Chrome / Perfetto traces of a run -----------*- C++ -*-===//
//
// Writes the actions a run recorded (RunResult::trace) as Chrome trace JSON
// for chrome://tracing and Perfetto: one thread per rank, one complete event
// per action named like the schedule pictures (F3 s1, B3 s1, send mb3),
// written to a temporary file and renamed into place.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Engine.h"

#include "../IO/Files.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace gpipe::rt {

Status writeChromeTrace(const std::string &path, const ModelMetadata &metadata,
                        const RunResult &result) {
  using Json = nlohmann::json;
  Json events = Json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"args", {{"name", "gpipe " + metadata.source}}}});
  // One thread per worker (replica d's rank r is worker d*K + r).
  const int64_t K = metadata.numRanks();
  for (int64_t w = 0; w < metadata.numWorkers(); ++w) {
    std::string name = "rank " + std::to_string(w % K);
    if (metadata.dataParallel > 1)
      name = "replica " + std::to_string(w / K) + " " + name;
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", w},
                      {"args", {{"name", name}}}});
  }
  for (const TraceEvent &e : result.trace) {
    const ActionSpec &a =
        metadata.ranks[size_t(e.rank % K)].actions[size_t(e.action)];
    std::string mb = std::to_string(a.mb), stage = std::to_string(a.stage);
    std::string name;
    switch (a.kind) {
    case ActionKind::Forward:
      name = "F" + mb + " s" + stage;
      break;
    case ActionKind::Backward:
      name = "B" + mb + " s" + stage;
      break;
    case ActionKind::BackwardInput:
      name = "BI" + mb + " s" + stage;
      break;
    case ActionKind::BackwardWeight:
      name = "BW" + mb + " s" + stage;
      break;
    case ActionKind::Recompute:
      name = "R" + mb + " s" + stage;
      break;
    case ActionKind::SendF:
    case ActionKind::SendB:
      name = "send mb" + mb;
      break;
    case ActionKind::RecvF:
    case ActionKind::RecvB:
      name = "recv mb" + mb;
      break;
    case ActionKind::ReduceGrad:
      name = "reduce s" + stage;
      break;
    case ActionKind::Step:
      name = "step";
      break;
    case ActionKind::SumTied:
      name = "sum tied";
      break;
    }
    Json args = {{"stage", a.stage},
                 {"mb", a.mb},
                 {"step", e.step + 1},
                 {"action", e.action}};
    if (a.isTransfer()) {
      args["peer"] = a.peer;
      args["bytes"] = a.bytes;
    }
    events.push_back({{"name", name},
                      {"cat", actionKindName(a.kind)},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", e.rank},
                      {"ts", e.beginUs},
                      {"dur", e.endUs - e.beginUs},
                      {"args", std::move(args)}});
  }
  Json root = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  std::string text =
      root.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
  return replaceFile(path, std::vector<uint8_t>(text.begin(), text.end()));
}

} // namespace gpipe::rt
