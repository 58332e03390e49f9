//===- CostModelTest.cpp - Cost model tests ---------------------*- C++ -*-===//
//
// Checks the built-in device profiles, the roofline forward time, backward
// and recompute times, boundary transfer times, measured per-layer times, and
// the cost model's error messages; and that its output feeds the partitioner.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/CostModel.h"
#include "gpipe/Analysis/Partition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlir::gpipe;

namespace {

OpCostData cost(int64_t flops, int64_t bytesRead, int64_t bytesWritten,
                int64_t paramBytes = 0) {
  OpCostData c;
  c.flops = flops;
  c.bytesRead = bytesRead;
  c.bytesWritten = bytesWritten;
  c.paramBytes = paramBytes;
  return c;
}

TEST(DeviceProfiles, BuiltinNumbers) {
  DeviceProfile cpu = cpuProfile();
  EXPECT_EQ(cpu.name, "cpu");
  EXPECT_EQ(cpu.peakFlops, 50e9);
  EXPECT_EQ(cpu.memBandwidth, 10e9);
  EXPECT_EQ(cpu.linkBandwidth, 5e9);
  EXPECT_EQ(cpu.linkLatency, 2e-6);
  EXPECT_EQ(cpu.backwardFactor, 2.0);
  EXPECT_EQ(verifyProfile(cpu), "");

  DeviceProfile h200 = h200Profile();
  EXPECT_EQ(h200.name, "h200");
  EXPECT_EQ(h200.peakFlops, 67e12);
  EXPECT_EQ(h200.memBandwidth, 4.8e12);
  EXPECT_EQ(h200.linkBandwidth, 450e9);
  EXPECT_EQ(h200.linkLatency, 5e-6);
  EXPECT_EQ(h200.backwardFactor, 2.0);
  EXPECT_EQ(verifyProfile(h200), "");
}

TEST(DeviceProfiles, Lookup) {
  ASSERT_TRUE(lookupProfile("cpu").has_value());
  EXPECT_EQ(lookupProfile("cpu")->name, "cpu");
  ASSERT_TRUE(lookupProfile("H200").has_value());
  EXPECT_EQ(lookupProfile("H200")->name, "h200");
  EXPECT_FALSE(lookupProfile("tpu").has_value());
  EXPECT_FALSE(lookupProfile("").has_value());
  EXPECT_EQ(builtinProfileNames(),
            (std::vector<std::string>{"cpu", "h200", "h200-bf16"}));
  EXPECT_EQ(lookupProfile("H200-bf16")->peakFlops, 989e12);
  EXPECT_EQ(lookupProfile("h200-bf16")->memBandwidth,
            h200Profile().memBandwidth);
  for (const std::string &name : builtinProfileNames())
    EXPECT_TRUE(lookupProfile(name).has_value()) << name;
}

TEST(DeviceProfiles, Verify) {
  DeviceProfile p = cpuProfile();
  p.name = "bad";
  p.peakFlops = 0;
  EXPECT_EQ(verifyProfile(p),
            "expected a positive finite peakFlops in device profile 'bad', "
            "got 0");
  p = cpuProfile();
  p.memBandwidth = std::numeric_limits<double>::infinity();
  EXPECT_EQ(verifyProfile(p),
            "expected a positive finite memBandwidth in device profile 'cpu', "
            "got inf");
  p = cpuProfile();
  p.linkBandwidth = -1;
  EXPECT_EQ(verifyProfile(p),
            "expected a positive finite linkBandwidth in device profile "
            "'cpu', got -1");
  p = cpuProfile();
  p.backwardFactor = 0;
  EXPECT_EQ(verifyProfile(p),
            "expected a positive finite backwardFactor in device profile "
            "'cpu', got 0");
  p = cpuProfile();
  p.linkLatency = -2e-6;
  EXPECT_EQ(verifyProfile(p),
            "expected a non-negative finite linkLatency in device profile "
            "'cpu', got -2e-06");
  p.linkLatency = 0;
  EXPECT_EQ(verifyProfile(p), "");
}

TEST(Roofline, ComputeBound) {
  DeviceProfile cpu = cpuProfile();
  // 1 GFLOP over 1 MB: 0.02 s of arithmetic, 0.0001 s of traffic.
  OpCostData c = cost(1000000000, 600000, 400000);
  EXPECT_DOUBLE_EQ(forwardTime(c, cpu), 0.02);
  EXPECT_DOUBLE_EQ(backwardTime(c, cpu), 0.04);

  DeviceProfile h200 = h200Profile();
  OpCostData big = cost(int64_t(67e12), 1000, 1000);
  EXPECT_DOUBLE_EQ(forwardTime(big, h200), 1.0);
}

TEST(Roofline, MemoryBound) {
  DeviceProfile cpu = cpuProfile();
  // 6 GB read + 4 GB written at 10 GB/s is 1 s; 1 MFLOP is 20 us.
  OpCostData c = cost(1000000, 6000000000, 4000000000);
  EXPECT_DOUBLE_EQ(forwardTime(c, cpu), 1.0);
  EXPECT_DOUBLE_EQ(backwardTime(c, cpu), 2.0);

  DeviceProfile h200 = h200Profile();
  OpCostData hbm = cost(0, int64_t(2.4e12), int64_t(2.4e12));
  EXPECT_DOUBLE_EQ(forwardTime(hbm, h200), 1.0);
}

TEST(Roofline, ParamBytesAreNotCountedTwice) {
  DeviceProfile cpu = cpuProfile();
  OpCostData c = cost(0, 10000000000, 0, /*paramBytes=*/10000000000);
  EXPECT_DOUBLE_EQ(forwardTime(c, cpu), 1.0);
}

TEST(Roofline, BackwardFactor) {
  DeviceProfile p = cpuProfile();
  p.backwardFactor = 3.0;
  OpCostData c = cost(50000000000, 0, 0);
  EXPECT_DOUBLE_EQ(forwardTime(c, p), 1.0);
  EXPECT_DOUBLE_EQ(backwardTime(c, p), 3.0);
}

TEST(Transfer, LatencyPlusBytesOverBandwidth) {
  EXPECT_DOUBLE_EQ(transferTime(0, cpuProfile()), 2e-6);
  EXPECT_DOUBLE_EQ(transferTime(5000000000, cpuProfile()), 1.0 + 2e-6);
  EXPECT_DOUBLE_EQ(transferTime(450000000000, h200Profile()), 1.0 + 5e-6);
  // A 4 MiB activation over NVLink: 5 us + 9.32 us.
  EXPECT_NEAR(transferTime(4 << 20, h200Profile()), 5e-6 + 4194304 / 450e9,
              1e-18);
}

TEST(LayerCosts, RooflineWithAndWithoutRemat) {
  CostModelInput input;
  input.layers = {cost(50000000000, 0, 0), cost(0, 5000000000, 5000000000),
                  cost(0, 0, 0)};
  input.outputBytes = {5000000000, 0};
  LayerCosts costs = computeLayerCosts(input, cpuProfile());
  ASSERT_TRUE(costs.ok()) << costs.error;
  EXPECT_EQ(costs.forward, (std::vector<double>{1.0, 1.0, 0.0}));
  EXPECT_EQ(costs.backward, (std::vector<double>{2.0, 2.0, 0.0}));
  EXPECT_EQ(costs.recompute, (std::vector<double>{0.0, 0.0, 0.0}));
  EXPECT_EQ(costs.total, (std::vector<double>{3.0, 3.0, 0.0}));
  ASSERT_EQ(costs.boundary.size(), 2u);
  EXPECT_DOUBLE_EQ(costs.boundary[0], 2 * (1.0 + 2e-6));
  EXPECT_DOUBLE_EQ(costs.boundary[1], 2 * 2e-6);

  input.rematerialize = true;
  LayerCosts remat = computeLayerCosts(input, cpuProfile());
  ASSERT_TRUE(remat.ok()) << remat.error;
  EXPECT_EQ(remat.recompute, (std::vector<double>{1.0, 1.0, 0.0}));
  EXPECT_EQ(remat.total, (std::vector<double>{4.0, 4.0, 0.0}));
  EXPECT_EQ(remat.boundary, costs.boundary);

  // An L-th output size (the model's output) is accepted and ignored.
  input.outputBytes.push_back(123);
  EXPECT_TRUE(computeLayerCosts(input, cpuProfile()).ok());
}

TEST(LayerCosts, MeasuredTimesReplaceTheRoofline) {
  CostModelInput input;
  input.layers = {cost(50000000000, 0, 0), cost(50000000000, 0, 0)};
  input.measured = {{0.125, 0.25}, {0.5, 1.5}};
  input.outputBytes = {0};
  input.rematerialize = true;
  LayerCosts costs = computeLayerCosts(input, h200Profile());
  ASSERT_TRUE(costs.ok()) << costs.error;
  EXPECT_EQ(costs.forward, (std::vector<double>{0.125, 0.5}));
  EXPECT_EQ(costs.backward, (std::vector<double>{0.25, 1.5}));
  EXPECT_EQ(costs.recompute, (std::vector<double>{0.125, 0.5}));
  EXPECT_EQ(costs.total, (std::vector<double>{0.5, 2.5}));
  EXPECT_EQ(costs.boundary, (std::vector<double>{2 * 5e-6}));

  // Measured times alone, without op costs.
  input.layers.clear();
  EXPECT_TRUE(computeLayerCosts(input, h200Profile()).ok());
}

TEST(LayerCosts, Errors) {
  CostModelInput input;
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected at least 1 layer, got 0");

  input.layers = {cost(1, 1, 1), cost(1, 1, 1), cost(1, 1, 1)};
  input.outputBytes = {1, 2, 3, 4, 5};
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected 2 boundary activation sizes for 3 layers, got 5");

  input.outputBytes = {1, -2};
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected a non-negative activation size after layer 1, got -2");

  input.outputBytes = {1, 2};
  input.layers[1].flops = -5;
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected non-negative flops for layer 1, got -5");
  input.layers[1].flops = 1;
  input.layers[2].bytesWritten = -7;
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected non-negative bytesWritten for layer 2, got -7");
  input.layers[2].bytesWritten = 1;

  input.measured = {{1, 1}, {1, 1}};
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected 3 measured layer times, one per layer, got 2");
  input.measured = {{1, 1}, {1, 1}, {1, -1}};
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected a non-negative finite measured backward time for layer "
            "2, got -1");
  input.measured = {{std::nan(""), 1}, {1, 1}, {1, 1}};
  EXPECT_EQ(computeLayerCosts(input, cpuProfile()).error,
            "expected a non-negative finite measured forward time for layer "
            "0, got nan");
  input.measured.clear();

  DeviceProfile bad = cpuProfile();
  bad.peakFlops = 0;
  LayerCosts failed = computeLayerCosts(input, bad);
  EXPECT_EQ(failed.error,
            "expected a positive finite peakFlops in device profile 'cpu', "
            "got 0");
  EXPECT_TRUE(failed.total.empty());
}

TEST(LayerCosts, FeedTheChosenPartition) {
  // Four equal compute-bound layers (3 s each with backward); a 1 GB
  // activation after layer 1 makes the middle cut cost 2 x 0.2 s on each
  // side, still better than an uneven split.
  CostModelInput input;
  input.layers.assign(4, cost(50000000000, 0, 0)); // 1 s forward each
  input.outputBytes = {0, 1000000000, 0};
  LayerCosts costs = computeLayerCosts(input, cpuProfile());
  ASSERT_TRUE(costs.ok()) << costs.error;

  PartitionProblem problem;
  problem.layerTime = costs.total;
  problem.boundaryTime = costs.boundary;
  problem.numStages = 2;
  PartitionResult result = partitionOptimal(problem);
  ASSERT_TRUE(result.ok()) << result.error;
  // Cutting after layer 1: 6 + 0.4 s per stage; after layer 0: 3 and 9 s.
  EXPECT_EQ(result.partition.firstLayer, (std::vector<int>{0, 2, 4}));
  EXPECT_NEAR(result.partition.bottleneck, 6.0 + 2 * (0.2 + 2e-6), 1e-12);
}

} // namespace
