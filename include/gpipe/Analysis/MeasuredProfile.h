//===- MeasuredProfile.h - Profiles gpipe-run measured ----------*- C++ -*-===//
//
// Reads the profile `gpipe-run --profile FILE.json` writes (runtime
// Profile.cpp) for the cost model: per layer (by name) the seconds one
// micro-batch spends in its forward, backward (and halves) and recompute;
// the time an action spends outside its layers; the link's latency and
// bandwidth; the optimizer's seconds per parameter byte. A profile holds one
// measurement per micro-batch size, number of workers, remat policy (a
// backward that reads kept values runs at another speed than one that
// reads just-recomputed ones) and schedule (which decides how much stays
// live, so what fits in the caches); a compile picks the one of its own
// size, workers, policy and schedule or, without it, estimates from the
// nearest. Plain
// C++17.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_MEASUREDPROFILE_H
#define GPIPE_ANALYSIS_MEASUREDPROFILE_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::gpipe {

struct MeasuredLayer {
  std::string name;
  double forward = 0, backward = 0; ///< seconds per micro-batch
  /// Absent when the measured run did not recompute (remat none) or split
  /// its backward.
  std::optional<double> recompute, backwardInput, backwardWeight;
};

/// One run's measurement, for micro-batches of `microbatchSamples` with
/// `workers` ranks (K x D) running at once.
struct ProfileMeasurement {
  int64_t microbatchSamples = 0;
  int64_t workers = 1;
  /// The remat policy the run had ("none", "stage", "selective"; "" when
  /// the file does not say).
  std::string remat;
  /// The schedule the run had ("gpipe", "1f1b", ...; "" when the file does
  /// not say): a layer's speed depends on the activations the schedule
  /// keeps live (a gpipe step at M = 8 keeps eight micro-batches, 1F1B at
  /// most K), which decides what stays in the caches.
  std::string schedule;
  /// How many runs the times are the medians of.
  int64_t runs = 1;
  /// Measured by a forward-only (--predict) run: no backward times ("mode"
  /// "inference", or a layer without a backward).
  bool forwardOnly = false;
  /// The OpenBLAS threads each rank ran its GEMMs on.
  int64_t blasThreads = 1;
  std::vector<MeasuredLayer> layers;
  /// Per action kind ("forward", "backward", "backward_input",
  /// "backward_weight", "recompute"): seconds outside the layers.
  std::map<std::string, double> actionOverhead;
  /// The fitted link (no transfers measured: absent).
  std::optional<double> linkLatency, linkBandwidth;
  /// The optimizer the run stepped with, and its seconds per parameter byte.
  std::string optimizer;
  std::optional<double> optimizerSecondsPerByte;
  /// The measured median step.
  double stepSeconds = 0;

  const MeasuredLayer *findLayer(std::string_view name) const;
};

struct MeasuredProfile {
  std::string source, target, precision, cpu;
  /// The measured model's fingerprint (gpipe::abi::getModelFingerprint);
  /// empty in profiles from before fingerprints.
  std::string model;
  int64_t cores = 0;
  /// Training measurements before forward-only ones, each by workers, remat,
  /// schedule, then micro-batch size, ascending. Of measurements that
  /// differ only in their BLAS threads, the one with the most is kept:
  /// compiles predict runs with gpipe-run's automatic count, which is the
  /// most the machine gives a rank.
  std::vector<ProfileMeasurement> measurements;

  /// Parses a profile; on failure returns std::nullopt and sets `error`
  /// (naming the key).
  static std::optional<MeasuredProfile> parse(std::string_view text,
                                              std::string &error);
  /// Reads and parses the file at `path`; errors name the file.
  static std::optional<MeasuredProfile> read(const std::string &path,
                                             std::string &error);

  /// The measurement for micro-batches of `samples` on `workers` ranks
  /// under the remat policy `remat`: of the measurements with the nearest
  /// number of workers (the larger on a tie), those of the policy (see
  /// rematFallback), and of those the one of the nearest size (the larger
  /// on a tie); `scale` receives samples / its size (1 for an exact match).
  /// Null when there is none.
  /// Then, of those, the ones of the schedule (see scheduleFallback).
  const ProfileMeasurement *select(int64_t samples, int64_t workers,
                                   double &scale, std::string_view remat = {},
                                   std::string_view schedule = {}) const;
  /// The times for micro-batches of `samples` on `workers` ranks, from the
  /// measurements of the nearest number of workers: the measurement of that
  /// size itself; else, per layer and per action overhead, the straight
  /// line through the two nearest measured sizes (t = a + b x samples: a
  /// kernel call's fixed cost is what proportional scaling misses),
  /// extrapolated beyond them; where the line's fixed cost a would be
  /// below 0, the nearest size scaled in proportion, and where its cost per
  /// sample b would be, the nearest size's time (noise, not a machine);
  /// with one size, that size scaled in proportion. `how` receives "" for a
  /// measured size, else what was done ("interpolated between 4 and 8 samples",
  /// "scaled from 8 samples"). Layers the chosen policy's measurement did not
  /// recompute take their recompute time from a measurement of another policy
  /// that did (estimated the same way). std::nullopt for a profile without
  /// measurements.
  std::optional<ProfileMeasurement>
  estimate(int64_t samples, int64_t workers, std::string &how,
           std::string_view remat = {}, std::string_view schedule = {}) const;
  /// The policy whose measurements stand in for `remat` among those with
  /// `workers` workers: `remat` itself when measured; for "selective" (which
  /// keeps most layers' values) "none", then "stage"; otherwise any (""
  /// names every measurement of those workers).
  std::string rematFallback(int64_t workers, std::string_view remat) const;
  /// The schedule whose measurements stand in for `schedule` among those
  /// with `workers` workers and the policy `remat`: `schedule` itself when
  /// measured; for any other than gpipe (1F1B and the schedules built on
  /// it keep few micro-batches live) "1f1b"; otherwise any ("").
  std::string scheduleFallback(int64_t workers, std::string_view remat,
                               std::string_view schedule) const;
  /// The link of the measurement nearest `samples` that measured one (a
  /// one-rank run has no transfers), or null.
  const ProfileMeasurement *selectLink(int64_t samples) const;
};

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_MEASUREDPROFILE_H
