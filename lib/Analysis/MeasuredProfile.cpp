//===- MeasuredProfile.cpp - Profiles gpipe-run measured --------*- C++ -*-===//
//
// Implements reading `gpipe-run --profile` files (MeasuredProfile.h).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/MeasuredProfile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

namespace mlir::gpipe {

using Json = nlohmann::json;

const MeasuredLayer *
ProfileMeasurement::findLayer(std::string_view name) const {
  for (const MeasuredLayer &layer : layers)
    if (layer.name == name)
      return &layer;
  return nullptr;
}

namespace {

/// Reads typed values out of the profile, keeping the first error.
struct Reader {
  std::string &error;

  bool fail(const std::string &where, const std::string &what) {
    if (error.empty())
      error = where.empty() ? what : where + ": " + what;
    return false;
  }
  /// A non-negative finite number at `key` of `object`; absent is an error
  /// unless `optional`.
  std::optional<double> seconds(const Json &object, const std::string &where,
                                const char *key, bool optional = false) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
      if (!optional)
        fail(where, std::string("expected '") + key + "'");
      return std::nullopt;
    }
    if (!it->is_number() || !std::isfinite(it->get<double>()) ||
        it->get<double>() < 0) {
      fail(where, std::string("expected a non-negative finite number for '") +
                      key + "', got " + it->dump());
      return std::nullopt;
    }
    return it->get<double>();
  }
  /// The string at `key` of `object`, empty when absent (or null); any
  /// other type is an error naming the key.
  std::string text(const Json &object, const std::string &where,
                   const char *key) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null())
      return "";
    if (!it->is_string()) {
      fail(where, std::string("expected a string for '") + key + "', got " +
                      it->dump());
      return "";
    }
    return it->get<std::string>();
  }
};

} // namespace

std::optional<MeasuredProfile> MeasuredProfile::parse(std::string_view text,
                                                      std::string &error) {
  error.clear();
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    error = "not JSON (expected a profile written by gpipe-run --profile)";
    return std::nullopt;
  }
  Reader r{error};
  if (r.text(root, "", "format") != "gpipe-profile") {
    error = "expected \"format\": \"gpipe-profile\" (a profile written by "
            "gpipe-run --profile)";
    return std::nullopt;
  }
  if (!root.contains("version") || !root["version"].is_number_integer() ||
      root["version"].get<int64_t>() != 1) {
    error = "unsupported profile version " +
            (root.contains("version") ? root["version"].dump() : "(none)") +
            " (expected 1)";
    return std::nullopt;
  }
  MeasuredProfile profile;
  profile.source = r.text(root, "", "source");
  profile.target = r.text(root, "", "target");
  profile.precision = r.text(root, "", "precision");
  profile.model = r.text(root, "", "model");
  if (!error.empty())
    return std::nullopt;
  if (auto machine = root.find("machine");
      machine != root.end() && machine->is_object()) {
    profile.cpu = r.text(*machine, "machine", "cpu");
    if (auto cores = machine->find("cores");
        cores != machine->end() && cores->is_number_integer())
      profile.cores = cores->get<int64_t>();
  }
  auto measurements = root.find("measurements");
  if (measurements == root.end() || !measurements->is_array() ||
      measurements->empty()) {
    error = "expected a non-empty 'measurements' array";
    return std::nullopt;
  }
  for (size_t i = 0; i < measurements->size(); ++i) {
    const Json &m = (*measurements)[i];
    std::string where = "measurements[" + std::to_string(i) + "]";
    if (!m.is_object()) {
      r.fail(where, "expected an object");
      return std::nullopt;
    }
    ProfileMeasurement out;
    auto samples = m.find("microbatch_samples");
    if (samples == m.end() || !samples->is_number_integer() ||
        samples->get<int64_t>() < 1) {
      r.fail(where, "expected a positive integer 'microbatch_samples'");
      return std::nullopt;
    }
    out.microbatchSamples = samples->get<int64_t>();
    if (auto workers = m.find("workers"); workers != m.end()) {
      if (!workers->is_number_integer() || workers->get<int64_t>() < 1) {
        r.fail(where, "expected a positive integer 'workers'");
        return std::nullopt;
      }
      out.workers = workers->get<int64_t>();
    }
    out.remat = r.text(m, where, "remat");
    out.schedule = r.text(m, where, "schedule");
    std::string mode = r.text(m, where, "mode");
    if (!error.empty())
      return std::nullopt;
    if (!mode.empty() && mode != "train" && mode != "inference") {
      r.fail(where, "expected 'mode' train or inference, got '" + mode + "'");
      return std::nullopt;
    }
    out.forwardOnly = mode == "inference";
    if (auto blas = m.find("blas_threads"); blas != m.end()) {
      // 0: a device without CPU kernels.
      if (!blas->is_number_integer() || blas->get<int64_t>() < 0) {
        r.fail(where, "expected a non-negative integer 'blas_threads'");
        return std::nullopt;
      }
      out.blasThreads = blas->get<int64_t>();
    }
    if (auto runs = m.find("runs"); runs != m.end()) {
      if (!runs->is_number_integer() || runs->get<int64_t>() < 1) {
        r.fail(where, "expected a positive integer 'runs'");
        return std::nullopt;
      }
      out.runs = runs->get<int64_t>();
    }
    auto layers = m.find("layers");
    if (layers == m.end() || !layers->is_array()) {
      r.fail(where, "expected a 'layers' array");
      return std::nullopt;
    }
    for (size_t l = 0; l < layers->size(); ++l) {
      const Json &entry = (*layers)[l];
      std::string at = where + ".layers[" + std::to_string(l) + "]";
      if (!entry.is_object() || !entry.contains("name") ||
          !entry["name"].is_string()) {
        r.fail(at, "expected an object with a 'name'");
        return std::nullopt;
      }
      MeasuredLayer layer;
      layer.name = entry["name"].get<std::string>();
      std::optional<double> forward = r.seconds(entry, at, "forward");
      std::optional<double> backward =
          r.seconds(entry, at, "backward", /*optional=*/true);
      layer.recompute = r.seconds(entry, at, "recompute", true);
      layer.backwardInput = r.seconds(entry, at, "backward_input", true);
      layer.backwardWeight = r.seconds(entry, at, "backward_weight", true);
      if (!error.empty())
        return std::nullopt;
      layer.forward = *forward;
      layer.backward = backward.value_or(0.0);
      out.forwardOnly |= !backward;
      out.layers.push_back(std::move(layer));
    }
    if (auto overhead = m.find("action_overhead");
        overhead != m.end() && overhead->is_object())
      for (auto it = overhead->begin(); it != overhead->end(); ++it) {
        std::optional<double> value =
            r.seconds(*overhead, where + ".action_overhead", it.key().c_str());
        if (!value)
          return std::nullopt;
        out.actionOverhead[it.key()] = *value;
      }
    if (auto link = m.find("transfer"); link != m.end() && link->is_object()) {
      out.linkLatency = r.seconds(*link, where + ".transfer", "latency");
      out.linkBandwidth = r.seconds(*link, where + ".transfer", "bandwidth");
      if (!error.empty())
        return std::nullopt;
      if (!(*out.linkBandwidth > 0)) {
        r.fail(where + ".transfer", "expected a positive 'bandwidth'");
        return std::nullopt;
      }
    }
    if (auto opt = m.find("optimizer"); opt != m.end() && opt->is_object()) {
      out.optimizer = r.text(*opt, where + ".optimizer", "name");
      out.optimizerSecondsPerByte =
          r.seconds(*opt, where + ".optimizer", "seconds_per_byte");
      if (!error.empty())
        return std::nullopt;
    }
    out.stepSeconds =
        r.seconds(m, where, "step_seconds", /*optional=*/true).value_or(0.0);
    if (!error.empty())
      return std::nullopt;
    profile.measurements.push_back(std::move(out));
  }
  // gpipe-run merges a repeat into one measurement: two of the same key
  // are an edited file, and which one counts would be a guess.
  for (size_t i = 0; i < profile.measurements.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const ProfileMeasurement &a = profile.measurements[i],
                               &b = profile.measurements[j];
      if (std::tie(a.workers, a.remat, a.schedule, a.microbatchSamples,
                   a.blasThreads, a.forwardOnly) ==
          std::tie(b.workers, b.remat, b.schedule, b.microbatchSamples,
                   b.blasThreads, b.forwardOnly)) {
        r.fail("measurements[" + std::to_string(i) + "]",
               "measures what measurements[" + std::to_string(j) +
                   "] does (micro-batches of " +
                   std::to_string(a.microbatchSamples) + " samples, " +
                   std::to_string(a.workers) + " workers, remat '" + a.remat +
                   "', schedule '" + a.schedule + "', " +
                   std::to_string(a.blasThreads) + " BLAS threads); keep one");
        return std::nullopt;
      }
    }
  std::stable_sort(
      profile.measurements.begin(), profile.measurements.end(),
      [](const ProfileMeasurement &a, const ProfileMeasurement &b) {
        return std::tie(a.forwardOnly, a.workers, a.remat, a.schedule,
                        a.microbatchSamples, b.blasThreads) <
               std::tie(b.forwardOnly, b.workers, b.remat, b.schedule,
                        b.microbatchSamples, a.blasThreads);
      });
  // The most BLAS threads first within a key: keep that one.
  auto sameKey = [](const ProfileMeasurement &a, const ProfileMeasurement &b) {
    return std::tie(a.forwardOnly, a.workers, a.remat, a.schedule,
                    a.microbatchSamples) == std::tie(b.forwardOnly, b.workers,
                                                     b.remat, b.schedule,
                                                     b.microbatchSamples);
  };
  profile.measurements.erase(std::unique(profile.measurements.begin(),
                                         profile.measurements.end(), sameKey),
                             profile.measurements.end());
  return profile;
}

std::optional<MeasuredProfile> MeasuredProfile::read(const std::string &path,
                                                     std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read profile '" + path + "'";
    return std::nullopt;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::optional<MeasuredProfile> profile = parse(buffer.str(), error);
  if (!profile)
    error = "profile '" + path + "': " + error;
  return profile;
}

std::string MeasuredProfile::rematFallback(int64_t workers,
                                           std::string_view remat) const {
  auto measured = [&](std::string_view policy) {
    return std::any_of(measurements.begin(), measurements.end(),
                       [&](const ProfileMeasurement &m) {
                         return m.workers == workers && m.remat == policy;
                       });
  };
  if (remat.empty())
    return "";
  if (measured(remat))
    return std::string(remat);
  if (remat == "selective")
    for (const char *policy : {"none", "stage"})
      if (measured(policy))
        return policy;
  return "";
}

std::string MeasuredProfile::scheduleFallback(int64_t workers,
                                              std::string_view remat,
                                              std::string_view schedule) const {
  auto measured = [&](std::string_view name) {
    return std::any_of(measurements.begin(), measurements.end(),
                       [&](const ProfileMeasurement &m) {
                         return m.workers == workers &&
                                (remat.empty() || m.remat == remat) &&
                                m.schedule == name;
                       });
  };
  if (schedule.empty())
    return "";
  if (measured(schedule))
    return std::string(schedule);
  if (schedule != "gpipe" && measured("1f1b"))
    return "1f1b";
  return "";
}

const ProfileMeasurement *
MeasuredProfile::select(int64_t samples, int64_t workers, double &scale,
                        std::string_view remat,
                        std::string_view schedule) const {
  // The nearest number of workers, then the policy, then the nearest size;
  // the larger wins a tie (the measurements are in ascending order, so "<="
  // keeps the later one).
  const ProfileMeasurement *nearestWorkers = nullptr;
  for (const ProfileMeasurement &m : measurements)
    if (!nearestWorkers || std::llabs(m.workers - workers) <=
                               std::llabs(nearestWorkers->workers - workers))
      nearestWorkers = &m;
  std::string policy =
      nearestWorkers ? rematFallback(nearestWorkers->workers, remat) : "";
  std::string kind = nearestWorkers ? scheduleFallback(nearestWorkers->workers,
                                                       policy, schedule)
                                    : "";
  const ProfileMeasurement *best = nullptr;
  for (const ProfileMeasurement &m : measurements)
    if (nearestWorkers && m.workers == nearestWorkers->workers &&
        (policy.empty() || m.remat == policy) &&
        (kind.empty() || m.schedule == kind) &&
        (!best || std::llabs(m.microbatchSamples - samples) <=
                      std::llabs(best->microbatchSamples - samples)))
      best = &m;
  scale = best ? double(samples) / double(best->microbatchSamples) : 1.0;
  return best;
}

namespace {

/// MeasuredProfile::estimate without the recompute times of other
/// policies.
std::optional<ProfileMeasurement> estimateOne(const MeasuredProfile &profile,
                                              int64_t samples, int64_t workers,
                                              std::string_view remat,
                                              std::string_view schedule,
                                              std::string &how) {
  how.clear();
  double scale = 1.0;
  const ProfileMeasurement *nearest =
      profile.select(samples, workers, scale, remat, schedule);
  if (!nearest)
    return std::nullopt;
  if (nearest->microbatchSamples == samples)
    return *nearest;
  // The second nearest size of the same workers and policy.
  const ProfileMeasurement *second = nullptr;
  for (const ProfileMeasurement &m : profile.measurements)
    if (m.workers == nearest->workers && m.remat == nearest->remat &&
        m.schedule == nearest->schedule && &m != nearest &&
        (!second || std::llabs(m.microbatchSamples - samples) <
                        std::llabs(second->microbatchSamples - samples)))
      second = &m;
  ProfileMeasurement out = *nearest;
  out.microbatchSamples = samples;
  if (!second) {
    auto scaled = [&](double t) { return t * scale; };
    for (MeasuredLayer &layer : out.layers) {
      layer.forward = scaled(layer.forward);
      layer.backward = scaled(layer.backward);
      for (std::optional<double> *t :
           {&layer.recompute, &layer.backwardInput, &layer.backwardWeight})
        if (*t)
          **t = scaled(**t);
    }
    how = "scaled from " + std::to_string(nearest->microbatchSamples) +
          " samples";
    return out;
  }
  // The line t = a + b x s through (s1, t1) and (s2, t2), at `samples`: a
  // kernel call's fixed cost a and the cost per sample b are never below
  // 0. Two noisy measurements can put either there (a slow run of the
  // larger size makes a < 0, and a line from it predicts smaller sizes at
  // nearly nothing); then the nearest measurement is scaled in proportion
  // (a < 0) or held (b < 0).
  double s1 = double(nearest->microbatchSamples);
  double s2 = double(second->microbatchSamples);
  double s = double(samples);
  auto line = [&](double t1, double t2) {
    double b = (t2 - t1) / (s2 - s1);
    double a = t1 - b * s1;
    if (b < 0)
      return t1;
    if (a < 0)
      return t1 * s / s1;
    return a + b * s;
  };
  for (MeasuredLayer &layer : out.layers) {
    const MeasuredLayer *other = second->findLayer(layer.name);
    if (!other) {
      layer.forward *= s / s1;
      layer.backward *= s / s1;
      for (std::optional<double> *t :
           {&layer.recompute, &layer.backwardInput, &layer.backwardWeight})
        if (*t)
          **t *= s / s1;
      continue;
    }
    layer.forward = line(layer.forward, other->forward);
    layer.backward = line(layer.backward, other->backward);
    auto both = [&](std::optional<double> &mine,
                    const std::optional<double> &theirs) {
      if (mine && theirs)
        mine = line(*mine, *theirs);
      else if (mine)
        *mine *= s / s1;
    };
    both(layer.recompute, other->recompute);
    both(layer.backwardInput, other->backwardInput);
    both(layer.backwardWeight, other->backwardWeight);
  }
  for (auto &[kind, seconds] : out.actionOverhead) {
    auto it = second->actionOverhead.find(kind);
    if (it != second->actionOverhead.end())
      seconds = line(seconds, it->second);
  }
  int64_t lo = std::min(nearest->microbatchSamples, second->microbatchSamples);
  int64_t hi = std::max(nearest->microbatchSamples, second->microbatchSamples);
  how = std::string(samples > lo && samples < hi ? "interpolated"
                                                 : "extrapolated") +
        " from " + std::to_string(lo) + " and " + std::to_string(hi) +
        " samples";
  return out;
}

} // namespace

std::optional<ProfileMeasurement>
MeasuredProfile::estimate(int64_t samples, int64_t workers, std::string &how,
                          std::string_view remat,
                          std::string_view schedule) const {
  std::optional<ProfileMeasurement> out =
      estimateOne(*this, samples, workers, remat, schedule, how);
  if (!out)
    return out;
  auto lacksRecompute = [](const MeasuredLayer &layer) {
    return !layer.recompute;
  };
  if (std::none_of(out->layers.begin(), out->layers.end(), lacksRecompute))
    return out;
  // Recompute times from the policy that recomputed ("stage" first).
  std::vector<std::string> others;
  for (const ProfileMeasurement &m : measurements)
    if (m.workers == out->workers && m.remat != out->remat &&
        std::find(others.begin(), others.end(), m.remat) == others.end() &&
        std::any_of(m.layers.begin(), m.layers.end(),
                    [](const MeasuredLayer &l) { return l.recompute; }))
      others.push_back(m.remat);
  std::stable_partition(others.begin(), others.end(),
                        [](const std::string &p) { return p == "stage"; });
  for (const std::string &policy : others) {
    std::string ignored;
    std::optional<ProfileMeasurement> other =
        estimateOne(*this, samples, out->workers, policy, schedule, ignored);
    if (!other || other->remat != policy)
      continue;
    for (MeasuredLayer &layer : out->layers)
      if (!layer.recompute)
        if (const MeasuredLayer *theirs = other->findLayer(layer.name))
          layer.recompute = theirs->recompute;
  }
  return out;
}

const ProfileMeasurement *MeasuredProfile::selectLink(int64_t samples) const {
  const ProfileMeasurement *best = nullptr;
  for (const ProfileMeasurement &m : measurements)
    if (m.linkBandwidth &&
        (!best || std::llabs(m.microbatchSamples - samples) <=
                      std::llabs(best->microbatchSamples - samples)))
      best = &m;
  return best;
}

} // namespace mlir::gpipe
