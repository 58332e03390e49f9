//===- Profile.cpp - Measured profiles of a run -----------------*- C++ -*-===//
//
// Turns what a run measured (RunResult::layerTimes and the trace) into the
// profile `gpipe-compile --profile-file` reads: per layer, the seconds one
// micro-batch spends in its forward, backward (and its two halves when the
// backward is split) and recompute; per compute action, the time outside
// every layer; the link's latency and bandwidth fitted to the transfers;
// the optimizer's seconds per parameter byte. Each is the median over the
// timed steps (every step but the first, when there are several) of the
// step's total divided by the micro-batches. The file holds one
// measurement per micro-batch size and number of workers (rank threads or
// processes sharing the machine: layers run slower when every core is
// busy) and remat policy (a backward reading kept values runs at another
// speed than one reading just-recomputed ones): writing merges into an
// existing profile of the same model, target and precision. A measurement
// of the same size, workers and policy is a repeat: the file keeps the
// run with the faster step (a slow phase of a shared machine then costs a
// run, not the profile) and counts the runs.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Engine.h"
#include "gpipe/Runtime/ModelMetadata.h"
#include "gpipe/Runtime/Trace.h"

#include "../IO/Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

namespace gpipe::rt {

namespace {

using Json = nlohmann::json;

double median(std::vector<double> values) {
  if (values.empty())
    return 0.0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// What a layer's time in an action of `kind` counts as.
const char *phaseOf(ActionKind kind, bool recomputing) {
  if (recomputing || kind == ActionKind::Recompute)
    return "recompute";
  switch (kind) {
  case ActionKind::Forward:
    return "forward";
  case ActionKind::Backward:
    return "backward";
  case ActionKind::BackwardInput:
    return "backward_input";
  case ActionKind::BackwardWeight:
    return "backward_weight";
  default:
    return nullptr;
  }
}

/// Per key, per timed step, a sum; the median over steps of sum / divisor.
class StepSums {
public:
  void add(const std::string &key, int64_t step, double seconds) {
    sums[key][step] += seconds;
  }
  /// Steps with no entry count as 0 (the key ran in every timed step).
  double median(const std::string &key, const std::vector<int64_t> &steps,
                double divisor) const {
    auto it = sums.find(key);
    if (it == sums.end())
      return 0.0;
    std::vector<double> values;
    for (int64_t step : steps) {
      auto s = it->second.find(step);
      values.push_back((s == it->second.end() ? 0.0 : s->second) / divisor);
    }
    return rt::median(std::move(values));
  }
  bool has(const std::string &key) const { return sums.count(key) != 0; }

private:
  std::map<std::string, std::map<int64_t, double>> sums;
};

/// The measurement of this run, as JSON text.
Status buildProfileMeasurement(const ModelMetadata &meta,
                               const RunResult &result, std::string &json) {
  const int64_t K = meta.numRanks();
  const double M = double(meta.microbatches);
  std::vector<std::string> layers;
  for (const StageInfo &info : meta.stageInfo)
    for (const std::string &name : info.layers)
      layers.push_back(name);
  if (result.layerTimes.empty() || layers.empty())
    return Status::error(
        "the run timed no layers: the model has no per-layer marks (compile it "
        "again with this gpipe-compile) or its device times actions on its own "
        "clock (--profile needs the cpu target)");

  // The steps timed: all but the first of several.
  std::vector<int64_t> steps;
  for (const LayerTime &t : result.layerTimes)
    steps.push_back(t.step);
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  if (steps.size() > 1)
    steps.erase(steps.begin());

  // Layers (replica 0) and the time outside them, per action kind.
  StepSums sums;
  std::map<std::string, int64_t> actionsPerStep;
  for (const LayerTime &t : result.layerTimes) {
    if (t.rank >= K)
      continue;
    const ActionSpec &a = meta.ranks[size_t(t.rank)].actions[size_t(t.action)];
    if (t.mark < 0) {
      std::string key = std::string("outside:") + actionKindName(a.kind);
      sums.add(key, t.step, t.seconds);
      if (t.step == steps.front())
        ++actionsPerStep[key];
      continue;
    }
    size_t layer = size_t(t.mark / 2);
    const char *phase = phaseOf(a.kind, t.mark % 2 == 1);
    if (!phase || layer >= layers.size())
      continue;
    sums.add(std::to_string(layer) + ":" + phase, t.step, t.seconds);
  }
  Json layerArray = Json::array();
  for (size_t l = 0; l < layers.size(); ++l) {
    Json entry = {{"name", layers[l]}};
    auto put = [&](const char *phase) {
      entry[phase] = sums.median(std::to_string(l) + ":" + phase, steps, M);
    };
    std::string key = std::to_string(l) + ":";
    put("forward");
    if (!meta.inference) {
      put("backward");
      // Only what the run did: no recompute under remat none.
      if (sums.has(key + "recompute"))
        put("recompute");
      if (sums.has(key + "backward_input") ||
          sums.has(key + "backward_weight")) {
        put("backward_input");
        put("backward_weight");
        entry["backward"] = entry["backward_input"].get<double>() +
                            entry["backward_weight"].get<double>();
      }
    }
    layerArray.push_back(std::move(entry));
  }
  Json overhead = Json::object();
  for (const auto &[key, count] : actionsPerStep)
    overhead[key.substr(std::string("outside:").size())] =
        sums.median(key, steps, double(count));

  // Transfers: each send with its receive (same step, receiving worker and
  // tag), from the later start to the later end.
  std::map<std::tuple<int64_t, int64_t, int64_t>, const TraceEvent *> recvs;
  for (const TraceEvent &e : result.trace) {
    const ActionSpec &a =
        meta.ranks[size_t(e.rank % K)].actions[size_t(e.action)];
    if (a.isRecv())
      recvs[{e.step, e.rank, a.tag}] = &e;
  }
  std::vector<std::pair<double, double>> transfers; // (bytes, seconds)
  StepSums stepSums;
  std::map<int64_t, double> stepBytes;
  for (const TraceEvent &e : result.trace) {
    if (std::find(steps.begin(), steps.end(), e.step) == steps.end())
      continue;
    const ActionSpec &a =
        meta.ranks[size_t(e.rank % K)].actions[size_t(e.action)];
    if (a.isSend()) {
      int64_t replica = e.rank / K;
      auto it = recvs.find({e.step, replica * K + a.peer, a.tag});
      if (it == recvs.end())
        continue;
      // The timeline's rendezvous: both sides done at the later start plus
      // the transfer time. The later end counts the waiting side's wake-up.
      double begin = std::max(e.beginUs, it->second->beginUs);
      double end = std::max(e.endUs, it->second->endUs);
      transfers.push_back({double(a.bytes), std::max(0.0, end - begin) * 1e-6});
    } else if (a.kind == ActionKind::Step && e.rank < K) {
      for (const StagePlan &stage : meta.ranks[size_t(e.rank)].stages)
        if (stage.stage == a.stage) {
          stepSums.add("step", e.step, (e.endUs - e.beginUs) * 1e-6);
          stepBytes[e.step] += double(stage.trainableBytes);
        }
    }
  }
  Json transfer = nullptr;
  if (!transfers.empty()) {
    // Least squares of seconds = latency + bytes / bandwidth over the
    // transfers; one size only (or a fit that makes no sense): latency 0
    // and the median rate.
    double n = double(transfers.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (auto [x, y] : transfers) {
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    double det = n * sxx - sx * sx;
    double slope = det > 0 ? (n * sxy - sx * sy) / det : 0.0;
    double latency = det > 0 ? (sy - slope * sx) / n : -1.0;
    if (!(slope > 0) || latency < 0) {
      std::vector<double> rates;
      for (auto [x, y] : transfers)
        if (y > 0)
          rates.push_back(x / y);
      slope = rates.empty() ? 0.0 : 1.0 / median(rates);
      latency = 0.0;
    }
    if (slope > 0)
      transfer = {{"latency", latency},
                  {"bandwidth", 1.0 / slope},
                  {"transfers", transfers.size()}};
  }
  Json optimizer = nullptr;
  if (!stepBytes.empty()) {
    std::vector<double> perByte;
    for (int64_t step : steps) {
      double bytes = stepBytes[step];
      if (bytes > 0)
        perByte.push_back(stepSums.median("step", {step}, 1.0) / bytes);
    }
    if (!perByte.empty())
      optimizer = {{"name", getOptimizerName(result.optimizer.kind)},
                   {"seconds_per_byte", median(perByte)}};
  }
  std::vector<double> stepSeconds;
  for (const StepMetrics &m : result.steps)
    if (std::find(steps.begin(), steps.end(), m.step - 1) != steps.end())
      stepSeconds.push_back(m.seconds);

  Json measurement = {{"microbatch_samples", meta.microBatchSize()},
                      {"stages", meta.stages},
                      {"ranks", K},
                      {"workers", meta.numWorkers()},
                      {"microbatches", meta.microbatches},
                      {"data_parallel", meta.dataParallel},
                      {"schedule", meta.schedule},
                      {"remat", meta.remat},
                      {"mode", meta.inference ? "inference" : "train"},
                      {"blas_threads", result.blasThreads},
                      {"timed_steps", steps.size()},
                      {"layers", std::move(layerArray)},
                      {"action_overhead", std::move(overhead)},
                      {"transfer", std::move(transfer)},
                      {"optimizer", std::move(optimizer)},
                      {"step_seconds", median(stepSeconds)},
                      {"busy_seconds", result.busySeconds}};
  json = measurement.dump();
  return Status::success();
}

/// A field of an existing profile's JSON, absent or null giving `fallback`
/// (readExistingProfile has refused every other wrong type).
std::string textField(const Json &o, const char *key,
                      std::string fallback = "") {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : fallback;
}
int64_t integerField(const Json &o, const char *key, int64_t fallback) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>()
                                                  : fallback;
}
double numberField(const Json &o, const char *key, double fallback) {
  auto it = o.find(key);
  return it != o.end() && it->is_number() ? it->get<double>() : fallback;
}

/// What a measurement measured: its "mode"; in files from before modes,
/// "inference" when a layer has no backward time (a --predict run's), as
/// gpipe-compile reads it.
std::string modeOf(const Json &m) {
  std::string mode = textField(m, "mode");
  if (!mode.empty())
    return mode;
  if (auto layers = m.find("layers"); layers != m.end() && layers->is_array())
    for (const Json &layer : *layers)
      if (layer.is_object() && !layer.contains("backward"))
        return "inference";
  return "train";
}

/// An error naming the first field of `o` (at `where`) that has another
/// type than its key asks for; null counts as absent.
std::string findMistypedField(const Json &o, const std::string &where) {
  static const char *const texts[] = {"format",    "source", "target",
                                      "precision", "model",  "remat",
                                      "schedule",  "mode"};
  static const char *const integers[] = {"version", "microbatch_samples",
                                         "workers", "blas_threads", "runs"};
  for (const char *key : texts)
    if (auto it = o.find(key);
        it != o.end() && !it->is_null() && !it->is_string())
      return where + key + " is " + it->dump() + ", not a string";
  for (const char *key : integers)
    if (auto it = o.find(key);
        it != o.end() && !it->is_null() && !it->is_number_integer())
      return where + key + " is " + it->dump() + ", not an integer";
  if (auto it = o.find("step_seconds");
      it != o.end() && !it->is_null() && !it->is_number())
    return where + "step_seconds is " + it->dump() + ", not a number";
  return "";
}

/// What identifies the model a profile measures: its root's fields.
Json getProfileIdentity(const ModelMetadata &meta) {
  return {{"source", meta.source},
          {"target", meta.target},
          {"precision", meta.precision},
          {"model", meta.fingerprint()}};
}

/// The profile already at `path` (null when there is none), checked to be
/// one of this model (`identity`): another model's, target's or
/// precision's, or no profile at all, is an error naming the field and
/// both values. A profile from before fingerprints is taken with a warning.
Status readExistingProfile(const std::string &path, const Json &identity,
                           Json &old, bool warn) {
  old = nullptr;
  std::ifstream in(path);
  if (!in)
    return Status::success();
  std::stringstream buffer;
  buffer << in.rdbuf();
  old = Json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (old.is_discarded() || !old.is_object() ||
      textField(old, "format") != "gpipe-profile")
    return Status::error("--profile " + path +
                         ": the file exists and is no gpipe profile; give "
                         "another path (it is left as it is)");
  // Typed fields: a profile this run would merge into is read whole after
  // the steps, so a field of the wrong type is refused now.
  std::string mistyped = findMistypedField(old, "");
  if (auto ms = old.find("measurements"); mistyped.empty() && ms != old.end()) {
    if (!ms->is_array())
      mistyped = "measurements is not an array";
    for (size_t i = 0; mistyped.empty() && ms->is_array() && i < ms->size();
         ++i)
      if ((*ms)[i].is_object())
        mistyped = findMistypedField((*ms)[i], "measurements[" +
                                                   std::to_string(i) + "].");
  }
  if (!mistyped.empty())
    return Status::error("--profile " + path + ": " + mistyped +
                         "; give another path (it is left as it is)");
  for (const char *key : {"source", "target", "precision", "model"}) {
    const std::string mine = identity[key].get<std::string>();
    auto it = old.find(key);
    std::string theirs = textField(old, key);
    if (std::string(key) == "model" && (it == old.end() || it->is_null())) {
      if (warn)
        std::fprintf(stderr,
                     "gpipe-run: warning: --profile %s has no model "
                     "fingerprint (written by an older gpipe-run); its "
                     "measurements are kept as this model's (%s)\n",
                     path.c_str(), mine.c_str());
      continue;
    }
    if (theirs != mine)
      return Status::error(
          "--profile " + path + ": the file profiles " + key + " '" + theirs +
          "', this run's is '" + mine + "'" +
          (std::string(key) == "model"
               ? " (the parameters' names and shapes or the input differ: "
                 "another model of the same source)"
               : "") +
          "; give another path (it is left as it is)");
  }
  return Status::success();
}

} // namespace

std::string getCpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) {
        size_t start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? "unknown" : line.substr(start);
      }
    }
  return "unknown";
}

Status checkProfilePath(const std::string &path, const ModelMetadata &meta) {
  Json old;
  return readExistingProfile(path, getProfileIdentity(meta), old,
                             /*warn=*/true);
}

Status writeProfile(const std::string &path, const ModelMetadata &meta,
                    const RunResult &result) {
  std::string text;
  if (Status s = buildProfileMeasurement(meta, result, text); !s.ok())
    return Status::error("--profile " + path + ": " + s.message());
  Json measurement = Json::parse(text);
  Json root = getProfileIdentity(meta);
  root["format"] = "gpipe-profile";
  root["version"] = 1;
  root["machine"] = {{"cpu", getCpuName()},
                     {"cores", std::thread::hardware_concurrency()},
                     {"device", result.deviceDescription}};
  root["measurements"] = Json::array();
  // Merge into an existing profile of the same model.
  Json old;
  if (Status s = readExistingProfile(path, root, old, /*warn=*/false); !s.ok())
    return s;
  if (!old.is_null()) {
    if (old.contains("measurements") && old["measurements"].is_array())
      for (const Json &m : old["measurements"]) {
        if (!m.is_object())
          continue;
        if (integerField(m, "microbatch_samples", -1) !=
                meta.microBatchSize() ||
            integerField(m, "workers", 1) != meta.numWorkers() ||
            textField(m, "remat") != meta.remat ||
            textField(m, "schedule") != meta.schedule ||
            modeOf(m) != modeOf(measurement) ||
            integerField(m, "blas_threads", 1) != result.blasThreads) {
          root["measurements"].push_back(m);
          continue;
        }
        // A repeat: the faster run stays.
        int64_t runs = integerField(m, "runs", 1) + 1;
        double oldStep = numberField(m, "step_seconds", 0.0);
        if (oldStep > 0 &&
            oldStep <= numberField(measurement, "step_seconds", 0.0)) {
          measurement = m;
          measurement["mode"] = modeOf(m);
        }
        measurement["runs"] = runs;
      }
  }
  if (!measurement.contains("runs"))
    measurement["runs"] = 1;
  root["measurements"].push_back(std::move(measurement));
  auto key = [](const Json &m) {
    return std::make_tuple(integerField(m, "workers", 1), textField(m, "remat"),
                           textField(m, "schedule"), modeOf(m),
                           integerField(m, "microbatch_samples", 0),
                           integerField(m, "blas_threads", 1));
  };
  std::sort(root["measurements"].begin(), root["measurements"].end(),
            [&](const Json &a, const Json &b) { return key(a) < key(b); });
  std::string out = root.dump(2) + "\n";
  return replaceFile(path, std::vector<uint8_t>(out.begin(), out.end()));
}

} // namespace gpipe::rt
