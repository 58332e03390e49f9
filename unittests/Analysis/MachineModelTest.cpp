//===- MachineModelTest.cpp - Reading and interpolating machine profiles --===//
//
// The machine profile gpipe-calibrate writes: its reading (every field
// checked, errors naming it), the interpolation of its rates at shapes,
// sizes and thread counts it did not measure, and the op times the cost
// model builds from them.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/CostModel.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace mlir::gpipe;
using Json = nlohmann::json;

namespace {

/// A profile of a 2-core machine whose GEMM rate is 10 GFLOP/s at
/// 16x16x16 and 40 GFLOP/s at 64x64x64 (every layout; 2 threads double
/// the big shape's), streaming 10 GB/s at 1 KiB and 40 GB/s at 1 MiB.
Json sampleProfile() {
  Json gemm = Json::array();
  for (auto [ta, tb] : {std::pair{false, false}, {false, true}, {true, false}})
    for (int64_t m : {16, 64})
      for (int64_t n : {16, 64})
        for (int64_t k : {16, 64})
          for (int64_t t : {1, 2}) {
            double rate = (m == 64 && n == 64 && k == 64) ? 40e9 : 10e9;
            if (t == 2 && m == 64 && n == 64 && k == 64)
              rate = 80e9;
            gemm.push_back({{"m", m},
                            {"n", n},
                            {"k", k},
                            {"trans_a", ta},
                            {"trans_b", tb},
                            {"threads", t},
                            {"flops_per_s", rate}});
          }
  return {
      {"format", "gpipe-machine"},
      {"version", 1},
      {"host", "test"},
      {"cpu", "Test CPU"},
      {"created", "2026-12-07T00:00:00Z"},
      {"cores", 2},
      {"call_seconds", 1e-7},
      {"stream",
       {{{"bytes", 1024}, {"threads", 1}, {"bytes_per_s", 10e9}},
        {{"bytes", 1048576}, {"threads", 1}, {"bytes_per_s", 40e9}},
        {{"bytes", 1024}, {"threads", 2}, {"bytes_per_s", 10e9}},
        {{"bytes", 1048576}, {"threads", 2}, {"bytes_per_s", 80e9}}}},
      {"gemm", gemm},
      {"kernels",
       {{{"op", "softmax"},
         {"threads", 1},
         {"forward_s_per_element", 1e-9},
         {"backward_s_per_element", 2e-9}},
        {{"op", "softmax"},
         {"threads", 2},
         {"forward_s_per_element", 0.5e-9},
         {"backward_s_per_element", 1e-9}},
        {{"op", "exp"}, {"threads", 1}, {"forward_s_per_element", 3e-9}},
        {{"op", "cross_entropy"},
         {"threads", 1},
         {"row", 16},
         {"forward_s_per_element", 4e-9}},
        {{"op", "cross_entropy"},
         {"threads", 1},
         {"row", 256},
         {"forward_s_per_element", 1e-9}}}},
      {"optimizers",
       {{{"optimizer", "adam"}, {"threads", 1}, {"seconds_per_byte", 4e-10}},
        {{"optimizer", "adam"}, {"threads", 2}, {"seconds_per_byte", 2e-10}}}},
      {"link", {{"latency_s", 1e-6}, {"bytes_per_s", 5e9}}}};
}

/// Writes `profile` to a temporary file and reads it back.
std::optional<MachineModel> readBack(const Json &profile, std::string &error) {
  char path[] = "/tmp/gpipe-machine-test-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << profile.dump();
  std::optional<MachineModel> model = MachineModel::read(path, error);
  std::remove(path);
  return model;
}

MachineModel sample() {
  std::string error;
  std::optional<MachineModel> model = readBack(sampleProfile(), error);
  EXPECT_TRUE(model) << error;
  return model ? *model : MachineModel();
}

TEST(MachineModel, ReadsEveryField) {
  MachineModel m = sample();
  EXPECT_EQ(m.cpu, "Test CPU");
  EXPECT_EQ(m.cores, 2);
  EXPECT_DOUBLE_EQ(m.callSeconds, 1e-7);
  EXPECT_EQ(m.stream.size(), 4u);
  EXPECT_EQ(m.gemm.size(), 3u * 8u * 2u);
  EXPECT_EQ(m.kernels.size(), 5u);
  EXPECT_EQ(m.optimizers.size(), 2u);
  EXPECT_DOUBLE_EQ(m.linkLatency, 1e-6);
  EXPECT_DOUBLE_EQ(m.linkBandwidth, 5e9);
}

TEST(MachineModel, GemmAtGridPointsAndBetween) {
  MachineModel m = sample();
  double flops64 = 2.0 * 64 * 64 * 64, flops16 = 2.0 * 16 * 16 * 16;
  // Grid points: exactly the measured rate.
  EXPECT_NEAR(m.gemmSeconds(64, 64, 64, false, true, 1), flops64 / 40e9, 1e-15);
  EXPECT_NEAR(m.gemmSeconds(16, 16, 16, false, false, 1), flops16 / 10e9,
              1e-15);
  // 2 threads: the measured rate at every core; none in between here.
  EXPECT_NEAR(m.gemmSeconds(64, 64, 64, false, false, 2), flops64 / 80e9,
              1e-15);
  // More threads than cores: clamped to the cores.
  EXPECT_NEAR(m.gemmSeconds(64, 64, 64, false, false, 8), flops64 / 80e9,
              1e-15);
  // Halfway in log2 of every dimension (32 = between 16 and 64): the rate
  // interpolates log-linearly, so it lies strictly between the two.
  double mid = 2.0 * 32 * 32 * 32 / m.gemmSeconds(32, 32, 32, false, false, 1);
  EXPECT_GT(mid, 10e9);
  EXPECT_LT(mid, 40e9);
  // Past the grid: the edge's rate.
  EXPECT_NEAR(m.gemmSeconds(256, 64, 64, false, false, 1),
              2.0 * 256 * 64 * 64 / 40e9, 1e-15);
  // Below the grid: never less than a call.
  EXPECT_GE(m.gemmSeconds(1, 1, 1, false, false, 1), 1e-7);
  // TT was not measured: NN's rate.
  EXPECT_DOUBLE_EQ(m.gemmSeconds(64, 64, 64, true, true, 1),
                   m.gemmSeconds(64, 64, 64, false, false, 1));
}

TEST(MachineModel, StreamAndKernels) {
  MachineModel m = sample();
  EXPECT_NEAR(m.streamSeconds(1024, 1), 1024 / 10e9, 1e-18);
  EXPECT_NEAR(m.streamSeconds(1048576, 2), 1048576 / 80e9, 1e-18);
  // Past the largest size: its rate.
  EXPECT_NEAR(m.streamSeconds(8 << 20, 1), double(8 << 20) / 40e9, 1e-15);
  EXPECT_EQ(m.streamSeconds(0, 1), 0);
  EXPECT_NEAR(*m.kernelSeconds("softmax", 1000, 0, 1, false), 1e-6, 1e-18);
  EXPECT_NEAR(*m.kernelSeconds("softmax", 100000, 0, 2, true), 1e-4, 1e-16);
  // Below twice the kernels' grain (4096 elements) a call runs on one
  // thread: one thread's rate whatever the rank has.
  EXPECT_NEAR(*m.kernelSeconds("softmax", 1000, 0, 2, true), 2e-6, 1e-18);
  EXPECT_NEAR(*m.kernelSeconds("softmax", 8191, 0, 2, false), 8191e-9, 1e-15);
  EXPECT_NEAR(*m.kernelSeconds("softmax", 8192, 0, 2, false), 8192 * 0.5e-9,
              1e-15);
  EXPECT_NEAR(*m.kernelSeconds("exp", 1000, 0, 2, false), 3e-6, 1e-18);
  EXPECT_FALSE(m.kernelSeconds("exp", 1000, 0, 1, true));
  EXPECT_FALSE(m.kernelSeconds("layer_norm", 1000, 0, 1, false));
  // Rows: at the lengths measured, between them log-linearly (64 is
  // halfway from 16 to 256 in log2), clamped outside.
  EXPECT_NEAR(*m.kernelSeconds("cross_entropy", 1000, 16, 1, false), 4e-6,
              1e-18);
  EXPECT_NEAR(*m.kernelSeconds("cross_entropy", 1000, 64, 1, false), 2.5e-6,
              1e-15);
  EXPECT_NEAR(*m.kernelSeconds("cross_entropy", 1000, 4096, 1, false), 1e-6,
              1e-15);
  // Optimizers per parameter byte, by threads; one not measured: none.
  EXPECT_NEAR(*m.optimizerSeconds("adam", 1000, 1), 4e-7, 1e-18);
  EXPECT_NEAR(*m.optimizerSeconds("adam", 1000, 2), 2e-7, 1e-18);
  EXPECT_FALSE(m.optimizerSeconds("sgd", 1000, 1));
}

TEST(MachineModel, OpTimesOnARank) {
  auto machine = std::make_shared<const MachineModel>(sample());
  DeviceProfile lone = withMachine(cpuProfile(), machine, 1);
  DeviceProfile pair = withMachine(cpuProfile(), machine, 2);
  DeviceProfile crowd = withMachine(cpuProfile(), machine, 4);
  EXPECT_EQ(lone.rankThreads, 2);
  EXPECT_EQ(pair.rankThreads, 1);
  EXPECT_DOUBLE_EQ(pair.oversubscription, 1);
  EXPECT_DOUBLE_EQ(crowd.oversubscription, 2);
  EXPECT_DOUBLE_EQ(lone.linkBandwidth, 5e9);

  OpWork gemm;
  gemm.gemm = GemmWork{1, 64, 64, 64, false, false};
  double flops = 2.0 * 64 * 64 * 64;
  EXPECT_NEAR(opForwardTime(gemm, lone), flops / 80e9, 1e-15);
  EXPECT_NEAR(opForwardTime(gemm, pair), flops / 40e9, 1e-15);
  EXPECT_NEAR(opForwardTime(gemm, crowd), 2 * flops / 40e9, 1e-15);
  // The backward's two products have the forward's work (square here).
  EXPECT_NEAR(opBackwardTime(gemm, pair), 2 * flops / 40e9, 1e-15);

  // A batch of small products divides over the threads whole.
  OpWork heads;
  heads.gemm = GemmWork{8, 16, 16, 16, false, true, /*parallelBatch=*/true};
  double one = 2.0 * 16 * 16 * 16 / 10e9;
  EXPECT_NEAR(opForwardTime(heads, pair), 8 * one, 1e-15);
  EXPECT_NEAR(opForwardTime(heads, lone), 4 * one, 1e-15);
  // A convolution's images run in order, each product on the rank's
  // threads (too small to split: the 2-thread rate is the measured one).
  OpWork images = heads;
  images.gemm->parallelBatch = false;
  EXPECT_NEAR(opForwardTime(images, lone), 8 * one, 1e-15);

  // A measured kernel by element; an unmeasured one by its bytes.
  OpWork softmax;
  softmax.kernel = "softmax";
  softmax.elements = 1000;
  softmax.calls = 1;
  softmax.streamBytes = 8000;
  EXPECT_NEAR(opForwardTime(softmax, pair), 1e-7 + 1e-6, 1e-15);
  EXPECT_NEAR(opBackwardTime(softmax, pair), 2e-7 + 2e-6, 1e-15);
  OpWork add;
  add.kernel = "add";
  add.elements = 256;
  add.calls = 1;
  add.streamBytes = 1024;
  EXPECT_NEAR(opForwardTime(add, pair), 1e-7 + 1024 / 10e9, 1e-15);
  EXPECT_NEAR(opBackwardTime(add, pair), 2 * (1e-7 + 1024 / 10e9), 1e-15);

  // A layer's time is its ops' sum; without a machine, the roofline.
  OpCostData layer;
  layer.flops = int64_t(flops);
  layer.ops = {gemm, softmax};
  EXPECT_NEAR(forwardTime(layer, pair), flops / 40e9 + 1.1e-6, 1e-15);
  EXPECT_NEAR(forwardTime(layer, cpuProfile()), flops / 50e9, 1e-15);
}

TEST(MachineModel, Errors) {
  auto errorOf = [](auto edit) {
    Json profile = sampleProfile();
    edit(profile);
    std::string error;
    EXPECT_FALSE(readBack(profile, error));
    return error;
  };
  EXPECT_NE(errorOf([](Json &p) {
              p["format"] = "gpipe-model";
            }).find("expected format 'gpipe-machine'"),
            std::string::npos);
  EXPECT_NE(errorOf([](Json &p) {
              p["version"] = 2;
            }).find("expected version 1, got 2"),
            std::string::npos);
  EXPECT_NE(errorOf([](Json &p) {
              p["cores"] = 0;
            }).find("expected a positive integer 'cores', got 0"),
            std::string::npos);
  EXPECT_NE(errorOf([](Json &p) {
              p["gemm"][5]["flops_per_s"] = "fast";
            }).find("gemm[5]: expected a number 'flops_per_s'"),
            std::string::npos);
  EXPECT_NE(errorOf([](Json &p) {
              p["stream"] = Json::array();
            }).find("expected a non-empty array 'stream'"),
            std::string::npos);
  EXPECT_NE(errorOf([](Json &p) {
              p["gemm"][0]["trans_a"] = 1;
            }).find("gemm[0]: expected true or false for 'trans_a'"),
            std::string::npos);
  EXPECT_NE(
      errorOf([](Json &p) { p["kernels"][1]["backward_s_per_element"] = -1; })
          .find("kernels[1]: expected a non-negative finite "
                "'backward_s_per_element', got -1"),
      std::string::npos);
  EXPECT_NE(errorOf([](Json &p) {
              p.erase("link");
            }).find("expected an object 'link'"),
            std::string::npos);
  std::string error;
  EXPECT_FALSE(MachineModel::read("/nonexistent/machine.json", error));
  EXPECT_NE(error.find("cannot read machine profile "
                       "'/nonexistent/machine.json'"),
            std::string::npos);
}

} // namespace

namespace {

/// sampleProfile() with libxsmm measured too: 1.5x OpenBLAS's rate
/// wherever M is 64, 0.5x elsewhere; on 2 threads at 64x64x64 NN only
/// 0.4x, so that cell's one- plus two-thread time favours OpenBLAS.
Json profileWithLibxsmm() {
  Json profile = sampleProfile();
  Json libxsmm = Json::array();
  for (Json g : profile["gemm"]) {
    double factor = g["m"] == 64 ? 1.5 : 0.5;
    if (g["threads"] == 2 && g["m"] == 64 && g["n"] == 64 && g["k"] == 64 &&
        !g["trans_a"] && !g["trans_b"])
      factor = 0.4;
    g["flops_per_s"] = double(g["flops_per_s"]) * factor;
    g["impl"] = "libxsmm";
    libxsmm.push_back(g);
  }
  for (Json &g : libxsmm)
    profile["gemm"].push_back(g);
  return profile;
}

} // namespace

TEST(GemmChoice, ChosenPerCellFromOneAndEveryThread) {
  std::string error;
  std::optional<MachineModel> m = readBack(profileWithLibxsmm(), error);
  ASSERT_TRUE(m) << error;
  std::optional<GemmChoice> choice = chooseGemms(GemmKind::Auto, &*m, error);
  ASSERT_TRUE(choice) << error;
  if (!isLibxsmmBuilt()) {
    EXPECT_EQ(choice->impl, GPIPE_RT_GEMM_OPENBLAS);
    EXPECT_TRUE(choice->grid.empty());
    return;
  }
  EXPECT_EQ(choice->grid, (std::vector<int64_t>{16, 64}));
  // Cells (m, n, k) of 16 and 64: libxsmm where M is 64, but for NN's
  // 64x64x64 (slow on two threads); TT was not measured: OpenBLAS.
  EXPECT_EQ(choice->cells[0], "00001110");
  EXPECT_EQ(choice->cells[1], "00001111");
  EXPECT_EQ(choice->cells[2], "00001111");
  EXPECT_EQ(choice->cells[3], "");
  EXPECT_EQ(choice->implFor(false, false, 64, 16, 16), GPIPE_RT_GEMM_LIBXSMM);
  EXPECT_EQ(choice->implFor(false, false, 70, 70, 70), GPIPE_RT_GEMM_OPENBLAS);
  EXPECT_EQ(choice->implFor(false, false, 16, 64, 64), GPIPE_RT_GEMM_OPENBLAS);
  EXPECT_EQ(choice->implFor(true, true, 64, 64, 64), GPIPE_RT_GEMM_OPENBLAS);
  // The cost model times each GEMM at its implementation's rates.
  double flops = 2.0 * 64 * 16 * 16;
  EXPECT_NEAR(
      m->gemmSeconds(64, 16, 16, false, false, 1, GPIPE_RT_GEMM_LIBXSMM),
      flops / 15e9, 1e-15);
  EXPECT_NEAR(m->gemmSeconds(64, 16, 16, false, false, 1), flops / 10e9, 1e-15);
  // TT: libxsmm's rates where measured, else OpenBLAS's (NN's here).
  EXPECT_DOUBLE_EQ(
      m->gemmSeconds(64, 64, 64, true, true, 1, GPIPE_RT_GEMM_LIBXSMM),
      m->gemmSeconds(64, 64, 64, false, false, 1));
}

TEST(GemmChoice, ForcedOrWithoutRates) {
  std::string error;
  MachineModel openblasOnly = sample();
  std::optional<GemmChoice> choice =
      chooseGemms(GemmKind::Auto, &openblasOnly, error);
  ASSERT_TRUE(choice) << error;
  EXPECT_EQ(choice->impl, GPIPE_RT_GEMM_OPENBLAS);
  EXPECT_TRUE(choice->grid.empty());
  EXPECT_NE(choice->reason.find("no libxsmm rates"), std::string::npos);
  choice = chooseGemms(GemmKind::Auto, nullptr, error);
  ASSERT_TRUE(choice);
  EXPECT_NE(choice->reason.find("no machine profile"), std::string::npos);
  choice = chooseGemms(GemmKind::OpenBLAS, nullptr, error);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->implFor(false, false, 64, 64, 64), GPIPE_RT_GEMM_OPENBLAS);
  choice = chooseGemms(GemmKind::Libxsmm, nullptr, error);
  if (isLibxsmmBuilt()) {
    ASSERT_TRUE(choice);
    EXPECT_EQ(choice->implFor(false, true, 3, 4, 5), GPIPE_RT_GEMM_LIBXSMM);
  } else {
    EXPECT_FALSE(choice);
    EXPECT_NE(error.find("built without libxsmm"), std::string::npos);
  }
}

TEST(GemmChoice, UnknownImplementationInAProfile) {
  Json profile = sampleProfile();
  profile["gemm"][2]["impl"] = "mkl";
  std::string error;
  EXPECT_FALSE(readBack(profile, error));
  EXPECT_NE(error.find("gemm[2]: expected 'impl' openblas or libxsmm, got "
                       "\"mkl\""),
            std::string::npos)
      << error;
}
