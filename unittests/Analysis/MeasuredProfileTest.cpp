//===- MeasuredProfileTest.cpp - Measured profile tests ---------*- C++ -*-===//
//
// Reading the profiles gpipe-run --profile writes: the fields, the choice of
// a measurement by micro-batch size, and the errors, each naming its key;
// and the cost model's measured recompute and per-layer remat.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/MeasuredProfile.h"
#include "gpipe/Analysis/CostModel.h"

#include <gtest/gtest.h>

using namespace mlir::gpipe;

namespace {

const char *kProfile = R"({
  "format": "gpipe-profile", "version": 1, "source": "preset mlp",
  "target": "cpu", "precision": "fp32",
  "machine": {"cpu": "Some CPU", "cores": 2, "device": "CPU"},
  "measurements": [
    {"microbatch_samples": 8,
     "layers": [{"name": "a", "forward": 1e-3, "backward": 2e-3,
                 "recompute": 1.5e-3},
                {"name": "b", "forward": 4e-3, "backward": 8e-3,
                 "backward_input": 3e-3, "backward_weight": 5e-3}],
     "action_overhead": {"forward": 1e-6, "backward": 2e-6},
     "transfer": {"latency": 1e-5, "bandwidth": 2e9, "transfers": 4},
     "optimizer": {"name": "sgd", "seconds_per_byte": 1e-10},
     "step_seconds": 0.02},
    {"microbatch_samples": 2,
     "layers": [{"name": "a", "forward": 3e-4, "backward": 6e-4}],
     "transfer": null, "optimizer": null}
  ]})";

} // namespace

TEST(MeasuredProfile, ReadsEveryField) {
  std::string error;
  std::optional<MeasuredProfile> p = MeasuredProfile::parse(kProfile, error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->source, "preset mlp");
  EXPECT_EQ(p->target, "cpu");
  EXPECT_EQ(p->cpu, "Some CPU");
  EXPECT_EQ(p->cores, 2);
  ASSERT_EQ(p->measurements.size(), 2u);
  // Sorted by size.
  EXPECT_EQ(p->measurements[0].microbatchSamples, 2);
  const ProfileMeasurement &m = p->measurements[1];
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[0].recompute, 1.5e-3);
  EXPECT_FALSE(m.layers[0].backwardInput);
  EXPECT_EQ(m.layers[1].backwardWeight, 5e-3);
  EXPECT_EQ(m.actionOverhead.at("backward"), 2e-6);
  EXPECT_EQ(m.linkLatency, 1e-5);
  EXPECT_EQ(m.linkBandwidth, 2e9);
  EXPECT_EQ(m.optimizerSecondsPerByte, 1e-10);
  EXPECT_EQ(m.findLayer("b"), &m.layers[1]);
  EXPECT_EQ(m.findLayer("c"), nullptr);
  EXPECT_FALSE(p->measurements[0].linkBandwidth);
}

TEST(MeasuredProfile, SelectsTheNearestSize) {
  std::string error;
  std::optional<MeasuredProfile> p = MeasuredProfile::parse(kProfile, error);
  ASSERT_TRUE(p) << error;
  double scale = 0;
  EXPECT_EQ(p->select(8, 1, scale)->microbatchSamples, 8);
  EXPECT_EQ(scale, 1.0);
  EXPECT_EQ(p->select(16, 1, scale)->microbatchSamples, 8);
  EXPECT_EQ(scale, 2.0);
  EXPECT_EQ(p->select(1, 1, scale)->microbatchSamples, 2);
  EXPECT_EQ(scale, 0.5);
  // A tie goes to the larger size.
  EXPECT_EQ(p->select(5, 1, scale)->microbatchSamples, 8);
  // The link of a measurement that has one.
  EXPECT_EQ(p->selectLink(2)->microbatchSamples, 8);
}

TEST(MeasuredProfile, PrefersTheSameNumberOfWorkers) {
  std::string error;
  std::optional<MeasuredProfile> p = MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 4, "workers": 2,
           "layers": [{"name": "a", "forward": 2}]},
          {"microbatch_samples": 8, "workers": 1,
           "layers": [{"name": "a", "forward": 1}]},
          {"microbatch_samples": 4, "workers": 1,
           "layers": [{"name": "a", "forward": 0.5}]}]})",
      error);
  ASSERT_TRUE(p) << error;
  double scale = 0;
  const ProfileMeasurement *m = p->select(4, 2, scale);
  EXPECT_EQ(m->workers, 2);
  EXPECT_EQ(m->layers[0].forward, 2);
  m = p->select(8, 2, scale);
  EXPECT_EQ(m->workers, 2);
  EXPECT_EQ(scale, 2.0);
  m = p->select(8, 1, scale);
  EXPECT_EQ(m->workers, 1);
  EXPECT_EQ(m->microbatchSamples, 8);
  // Four workers: the nearest measured, two.
  EXPECT_EQ(p->select(4, 4, scale)->workers, 2);
  EXPECT_EQ(p->selectLink(4), nullptr);
}

// A layer runs at another speed under a schedule that keeps more live;
// schedules built on 1F1B take 1F1B's times, gpipe takes any when it is
// not measured; of two measurements that differ only in BLAS threads the
// one with more stays.
TEST(MeasuredProfile, PrefersTheMeasurementOfItsSchedule) {
  std::string error;
  std::optional<MeasuredProfile> p = MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 4, "workers": 2, "remat": "none",
           "schedule": "gpipe", "layers": [{"name": "a", "forward": 3}]},
          {"microbatch_samples": 4, "workers": 2, "remat": "none",
           "schedule": "1f1b", "blas_threads": 1,
           "layers": [{"name": "a", "forward": 2}]},
          {"microbatch_samples": 8, "workers": 2, "remat": "none",
           "schedule": "1f1b", "layers": [{"name": "a", "forward": 4}]},
          {"microbatch_samples": 4, "workers": 1, "remat": "none",
           "schedule": "gpipe", "blas_threads": 1,
           "layers": [{"name": "a", "forward": 7}]},
          {"microbatch_samples": 4, "workers": 1, "remat": "none",
           "schedule": "gpipe", "blas_threads": 2,
           "layers": [{"name": "a", "forward": 5}]}]})",
      error);
  ASSERT_TRUE(p) << error;
  double scale = 0;
  EXPECT_EQ(p->select(4, 2, scale, "none", "gpipe")->layers[0].forward, 3);
  EXPECT_EQ(p->select(4, 2, scale, "none", "1f1b")->layers[0].forward, 2);
  EXPECT_EQ(p->scheduleFallback(2, "none", "zb-h1"), "1f1b");
  EXPECT_EQ(p->select(4, 2, scale, "none", "zb-h1")->layers[0].forward, 2);
  // 1F1B's line through 4 and 8 samples, not gpipe's point.
  std::string how;
  std::optional<ProfileMeasurement> e = p->estimate(6, 2, how, "none", "1f1b");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->layers[0].forward, 3);
  EXPECT_EQ(how, "interpolated from 4 and 8 samples");
  // One worker: gpipe only, the measurement with two BLAS threads.
  EXPECT_EQ(p->scheduleFallback(1, "none", "1f1b"), "");
  EXPECT_EQ(p->select(4, 1, scale, "none", "1f1b")->layers[0].forward, 5);
  EXPECT_EQ(p->measurements.size(), 4u);
}

TEST(MeasuredProfile, Errors) {
  std::string error;
  EXPECT_FALSE(MeasuredProfile::parse("nope", error));
  EXPECT_EQ(error,
            "not JSON (expected a profile written by gpipe-run --profile)");
  EXPECT_FALSE(MeasuredProfile::parse(R"({"format": "other"})", error));
  EXPECT_EQ(error, "expected \"format\": \"gpipe-profile\" (a profile written "
                   "by gpipe-run --profile)");
  EXPECT_FALSE(MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": []})",
      error));
  EXPECT_EQ(error, "expected a non-empty 'measurements' array");
  EXPECT_FALSE(MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 4,
           "layers": [{"name": "a", "forward": -1}]}]})",
      error));
  EXPECT_EQ(error, "measurements[0].layers[0]: expected a non-negative finite "
                   "number for 'forward', got -1");
  EXPECT_FALSE(MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 0, "layers": []}]})",
      error));
  EXPECT_EQ(
      error,
      "measurements[0]: expected a positive integer 'microbatch_samples'");
  EXPECT_FALSE(MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 4, "layers": [],
           "transfer": {"latency": 0, "bandwidth": 0}}]})",
      error));
  EXPECT_EQ(error, "measurements[0].transfer: expected a positive 'bandwidth'");
  EXPECT_FALSE(MeasuredProfile::read("/nonexistent/profile.json", error));
  EXPECT_EQ(error, "cannot read profile '/nonexistent/profile.json'");
}

TEST(LayerCosts, MeasuredRecomputeAndPerLayerRemat) {
  CostModelInput input;
  input.measured = {
      {1.0, 2.0, 0.5}, {3.0, 6.0, std::nullopt}, {1.0, 1.0, 0.25}};
  input.outputBytes = {0, 0};
  input.rematerializeLayer = {1, 1, 0};
  LayerCosts costs = computeLayerCosts(input, cpuProfile());
  ASSERT_TRUE(costs.ok()) << costs.error;
  // Measured recompute, the forward where none was measured, none for a
  // layer that keeps its values.
  EXPECT_EQ(costs.recompute, (std::vector<double>{0.5, 3.0, 0.0}));
  EXPECT_EQ(costs.total, (std::vector<double>{3.5, 12.0, 2.0}));
  input.rematerializeLayer = {1};
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected 3 per-layer rematerialization flags, got 1");
}

TEST(MeasuredProfile, EstimatesOtherSizesOnALine) {
  std::string error;
  // forward = 1 + 0.5 x samples, measured at 2 and 6 samples.
  std::optional<MeasuredProfile> p = MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 2,
           "layers": [{"name": "a", "forward": 2, "backward": 4,
                       "recompute": 2}],
           "action_overhead": {"forward": 0.25}},
          {"microbatch_samples": 6,
           "layers": [{"name": "a", "forward": 4, "backward": 8,
                       "recompute": 4}],
           "action_overhead": {"forward": 0.75}}]})",
      error);
  ASSERT_TRUE(p) << error;
  std::string how;
  std::optional<ProfileMeasurement> m = p->estimate(4, 1, how);
  ASSERT_TRUE(m);
  EXPECT_EQ(how, "interpolated from 2 and 6 samples");
  EXPECT_EQ(m->microbatchSamples, 4);
  EXPECT_DOUBLE_EQ(m->layers[0].forward, 3.0);
  EXPECT_DOUBLE_EQ(m->layers[0].backward, 6.0);
  EXPECT_DOUBLE_EQ(*m->layers[0].recompute, 3.0);
  EXPECT_DOUBLE_EQ(m->actionOverhead.at("forward"), 0.5);
  // Beyond the measured sizes: the same line.
  m = p->estimate(10, 1, how);
  EXPECT_EQ(how, "extrapolated from 2 and 6 samples");
  EXPECT_DOUBLE_EQ(m->layers[0].forward, 6.0);
  m = p->estimate(1, 1, how);
  EXPECT_DOUBLE_EQ(m->layers[0].forward, 1.5);
  EXPECT_DOUBLE_EQ(m->actionOverhead.at("forward"), 0.125);
  // A line whose fixed cost would be below 0 (a slow run of the larger
  // size) would predict 1 sample at nothing: the nearest size scales in
  // proportion instead.
  std::optional<MeasuredProfile> steep = MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 2, "layers": [{"name": "a", "forward": 1}]},
          {"microbatch_samples": 4, "layers": [{"name": "a", "forward": 9}]}]})",
      error);
  ASSERT_TRUE(steep) << error;
  EXPECT_DOUBLE_EQ(steep->estimate(1, 1, how)->layers[0].forward, 0.5);
  // One whose cost per sample would be below 0 holds the nearest size.
  std::optional<MeasuredProfile> falling = MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 2, "layers": [{"name": "a", "forward": 5}]},
          {"microbatch_samples": 4, "layers": [{"name": "a", "forward": 3}]}]})",
      error);
  ASSERT_TRUE(falling) << error;
  EXPECT_DOUBLE_EQ(falling->estimate(6, 1, how)->layers[0].forward, 3.0);
  // A measured size is itself.
  m = p->estimate(6, 1, how);
  EXPECT_EQ(how, "");
  EXPECT_DOUBLE_EQ(m->layers[0].forward, 4.0);
}

TEST(MeasuredProfile, ScalesASingleSize) {
  std::string error;
  std::optional<MeasuredProfile> p = MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 4,
           "layers": [{"name": "a", "forward": 2, "backward": 4}],
           "action_overhead": {"forward": 0.25}}]})",
      error);
  ASSERT_TRUE(p) << error;
  std::string how;
  std::optional<ProfileMeasurement> m = p->estimate(8, 1, how);
  EXPECT_EQ(how, "scaled from 4 samples");
  EXPECT_DOUBLE_EQ(m->layers[0].forward, 4.0);
  EXPECT_DOUBLE_EQ(m->layers[0].backward, 8.0);
  EXPECT_FALSE(m->layers[0].recompute);
  // An action's own time does not grow with the samples.
  EXPECT_DOUBLE_EQ(m->actionOverhead.at("forward"), 0.25);
}

TEST(MeasuredProfile, PrefersTheMeasurementOfItsRematPolicy) {
  std::string error;
  // Two policies at 4 samples, stage also at 8; a "runs" count.
  std::optional<MeasuredProfile> p = MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 4, "remat": "stage", "runs": 3,
           "layers": [{"name": "a", "forward": 2, "backward": 6,
                       "recompute": 2.5},
                      {"name": "b", "forward": 1, "backward": 3,
                       "recompute": 1.5}]},
          {"microbatch_samples": 8, "remat": "stage",
           "layers": [{"name": "a", "forward": 4, "backward": 12,
                       "recompute": 5},
                      {"name": "b", "forward": 2, "backward": 6,
                       "recompute": 3}]},
          {"microbatch_samples": 4, "remat": "none",
           "layers": [{"name": "a", "forward": 2, "backward": 5},
                      {"name": "b", "forward": 1, "backward": 2}]}]})",
      error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->measurements[0].remat, "none");
  EXPECT_EQ(p->measurements[1].runs, 3);
  double scale = 0;
  EXPECT_EQ(p->select(4, 1, scale, "none")->remat, "none");
  EXPECT_EQ(p->select(4, 1, scale, "stage")->remat, "stage");
  // Selective keeps most values: remat none's backward stands in.
  EXPECT_EQ(p->rematFallback(1, "selective"), "none");
  EXPECT_EQ(p->select(4, 1, scale, "selective")->remat, "none");
  // Another size under none: its one size, scaled, not stage's line.
  std::string how;
  std::optional<ProfileMeasurement> m = p->estimate(8, 1, how, "none");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->remat, "none");
  EXPECT_EQ(how, "scaled from 4 samples");
  EXPECT_DOUBLE_EQ(m->layers[0].backward, 10.0);
  // Recompute times come from the policy that recomputed, at this size.
  ASSERT_TRUE(m->layers[0].recompute);
  EXPECT_DOUBLE_EQ(*m->layers[0].recompute, 5.0);
  EXPECT_DOUBLE_EQ(*m->layers[1].recompute, 3.0);
  m = p->estimate(6, 1, how, "stage");
  EXPECT_EQ(how, "interpolated from 4 and 8 samples");
  EXPECT_DOUBLE_EQ(m->layers[0].backward, 9.0);
  // No policy asked for, or one never measured: any measurement.
  EXPECT_EQ(p->rematFallback(1, "sequential"), "");
  EXPECT_EQ(p->select(8, 1, scale)->remat, "stage");
  // A bad count is an error naming it.
  EXPECT_FALSE(MeasuredProfile::parse(
      R"({"format": "gpipe-profile", "version": 1, "measurements": [
          {"microbatch_samples": 4, "runs": 0, "layers": []}]})",
      error));
  EXPECT_EQ(error, "measurements[0]: expected a positive integer 'runs'");
}
