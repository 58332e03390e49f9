//===- EngineTest.cpp - The training engine on fake pipelines ---*- C++ -*-===//
//
// Drives the engine with a hand-written two-rank "pipeline" whose rank
// functions are plain C++ calling Program.h's callbacks: stage 0 scales the
// input by a parameter and sends it, stage 1 dots it with a second parameter
// and computes a squared error against the labels, and the gradients flow
// back. Checks the transport (pairing, data integrity, size mismatches),
// timeouts and aborts after an injected fault, the arena canary measurement
// and guard, the loss and gradients against a double reference, the
// optimizers against hand-computed values, data and metadata validation, the
// built-in data, and loading model libraries with dlopen.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Engine.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Dataset.h"
#include "gpipe/Runtime/Device.h"
#include "gpipe/Runtime/SafeTensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <vector>

using namespace gpipe::rt;
using Json = nlohmann::json;

namespace {

//===----------------------------------------------------------------------===//
// The fake pipeline
//===----------------------------------------------------------------------===//

/// Misbehaviours the fake rank functions can be told to show.
struct FakeFaults {
  bool badRecvSize = false;   // rank 1 receives 20 bytes of micro-batch 0
  bool overflow = false;      // rank 1 writes one byte past its arena
  bool kernelFailure = false; // rank 1's forward of micro-batch 0 fails
  bool skipStep = false;      // rank 0 never runs its last action
} faults;

constexpr int kRows = 2, kFeatures = 3, kBytes = kRows * kFeatures * 4;

float *at(uint8_t *arena, int offset) {
  return reinterpret_cast<float *>(arena + offset);
}

#define BEGIN(a)                                                               \
  if (gpipe_rt_action_begin(rank, a))                                          \
  return 1
#define END(a) gpipe_rt_action_end(rank, a)
#define TRY(x)                                                                 \
  if (x)                                                                       \
  return 1

/// Stage 0: h = x * w0 (per column); backward accumulates dw0.
int32_t fakeRank0(gpipe_rt_rank *rank, uint8_t *arena) {
  float *w0 = at(arena, 0), *g0 = at(arena, 64);
  float *xs[2] = {at(arena, 192), at(arena, 224)};
  float *h = at(arena, 256), *dh = at(arena, 288);
  for (int m = 0; m < 2; ++m) {
    BEGIN(2 * m);
    TRY(gpipe_rt_load_input(rank, m, xs[m], kBytes));
    for (int r = 0; r < kRows; ++r)
      for (int j = 0; j < kFeatures; ++j)
        h[r * kFeatures + j] = xs[m][r * kFeatures + j] * w0[j];
    END(2 * m);
    BEGIN(2 * m + 1);
    TRY(gpipe_rt_send(rank, 2 * m + 1, h, kBytes, nullptr));
    END(2 * m + 1);
  }
  int a = 4;
  for (int m = 1; m >= 0; --m) {
    BEGIN(a);
    TRY(gpipe_rt_recv(rank, a, dh, kBytes));
    END(a);
    ++a;
    BEGIN(a);
    for (int j = 0; j < kFeatures; ++j) {
      float s = 0.0f;
      for (int r = 0; r < kRows; ++r)
        s += dh[r * kFeatures + j] * xs[m][r * kFeatures + j];
      g0[j] = m == 1 ? s : g0[j] + s;
    }
    END(a);
    ++a;
  }
  if (faults.skipStep)
    return 0;
  BEGIN(8);
  TRY(gpipe_rt_optimizer_step(rank, 0, w0, g0, at(arena, 128), 3));
  END(8);
  return 0;
}

/// Stage 1: y = h . w1 per row, loss = mean (y - label)^2.
int32_t fakeRank1(gpipe_rt_rank *rank, uint8_t *arena) {
  float *w1 = at(arena, 0), *g1 = at(arena, 64);
  float *hs[2] = {at(arena, 192), at(arena, 224)};
  int64_t *labels = reinterpret_cast<int64_t *>(arena + 256);
  float *dh = at(arena, 288);
  auto dot = [&](const float *row) {
    float y = 0.0f;
    for (int j = 0; j < kFeatures; ++j)
      y += row[j] * w1[j];
    return y;
  };
  for (int m = 0; m < 2; ++m) {
    BEGIN(2 * m);
    TRY(gpipe_rt_recv(rank, 2 * m, hs[m],
                      faults.badRecvSize && m == 0 ? 20 : kBytes));
    END(2 * m);
    BEGIN(2 * m + 1);
    TRY(gpipe_rt_load_labels(rank, m, labels, kRows * 8));
    if (faults.kernelFailure && m == 0) {
      int64_t shape[2] = {kRows, kFeatures};
      int32_t status = gpipe_rt_cpu_cross_entropy_f32(
          hs[m], shape, 2, GPIPE_RT_I64, labels, nullptr);
      return gpipe_rt_kernel_error(rank, 1, status);
    }
    float loss = 0.0f;
    for (int r = 0; r < kRows; ++r) {
      float d = dot(hs[m] + r * kFeatures) - float(labels[r]);
      loss += d * d;
    }
    loss /= float(kRows);
    TRY(gpipe_rt_report_loss(rank, m, &loss));
    END(2 * m + 1);
  }
  int a = 4;
  for (int m = 1; m >= 0; --m) {
    BEGIN(a);
    TRY(gpipe_rt_load_labels(rank, m, labels, kRows * 8));
    float s[kFeatures] = {0, 0, 0};
    for (int r = 0; r < kRows; ++r) {
      const float *row = hs[m] + r * kFeatures;
      float dy = dot(row) - float(labels[r]);
      for (int j = 0; j < kFeatures; ++j) {
        dh[r * kFeatures + j] = dy * w1[j];
        s[j] += dy * row[j];
      }
    }
    for (int j = 0; j < kFeatures; ++j)
      g1[j] = m == 1 ? s[j] : g1[j] + s[j];
    END(a);
    ++a;
    BEGIN(a);
    TRY(gpipe_rt_send(rank, a, dh, kBytes, nullptr));
    END(a);
    ++a;
  }
  if (faults.overflow)
    arena[320] ^= 0xFF;
  BEGIN(8);
  TRY(gpipe_rt_optimizer_step(rank, 1, w1, g1, at(arena, 128), 3));
  END(8);
  return 0;
}

Json transfer(const char *kind, int stage, int mb, int peer,
              const char *direction, int tag) {
  return {{"kind", kind},   {"stage", stage},         {"mb", mb},
          {"peer", peer},   {"direction", direction}, {"tag", tag},
          {"bytes", kBytes}};
}

Json compute(const char *kind, int stage, int mb) {
  return {{"kind", kind}, {"stage", stage}, {"mb", mb}};
}

Json stagePlan(int stage, const char *param) {
  return {{"stage", stage},
          {"params_offset", 0},
          {"grads_offset", 64},
          {"state_offset", 128},
          {"param_bytes", 12},
          {"params", {{{"name", param}, {"offset", 0}, {"elements", 3}}}}};
}

/// The fake pipeline's metadata: K = 2 stages on 2 ranks, M = 2
/// micro-batches of 2 samples of 3 features, integer labels.
Json fakeMetadata() {
  Json rank0 = {
      {"rank", 0},
      {"symbol", "fake_rank_0"},
      {"arena_bytes", 320},
      {"peak_bytes", 312},
      {"stages", {stagePlan(0, "w0")}},
      {"actions",
       {compute("forward", 0, 0), transfer("send", 0, 0, 1, "forward", 0),
        compute("forward", 0, 1), transfer("send", 0, 1, 1, "forward", 1),
        transfer("recv", 0, 1, 1, "backward", 11), compute("backward", 0, 1),
        transfer("recv", 0, 0, 1, "backward", 10), compute("backward", 0, 0),
        compute("step", 0, -1)}}};
  Json rank1 = {
      {"rank", 1},
      {"symbol", "fake_rank_1"},
      {"arena_bytes", 320},
      {"peak_bytes", 312},
      {"stages", {stagePlan(1, "w1")}},
      {"actions",
       {transfer("recv", 1, 0, 0, "forward", 0), compute("forward", 1, 0),
        transfer("recv", 1, 1, 0, "forward", 1), compute("forward", 1, 1),
        compute("backward", 1, 1), transfer("send", 1, 1, 0, "backward", 11),
        compute("backward", 1, 0), transfer("send", 1, 0, 0, "backward", 10),
        compute("step", 1, -1)}}};
  return {
      {"format", "gpipe-model"},
      {"abi_version", GPIPE_RT_ABI_VERSION},
      {"producer", "hand-written"},
      {"source", "fake.onnx"},
      {"stages", 2},
      {"microbatches", 2},
      {"schedule", "gpipe"},
      {"remat", "none"},
      {"loss", "mse"},
      {"alignment", 64},
      {"optimizer", "adam"},
      {"input", {{"shape", {4, 3}}, {"dtype", "f32"}}},
      {"labels", {{"shape", {4}}, {"dtype", "i64"}, {"classes", 5}}},
      {"vocab", 0},
      {"data_hint", ""},
      {"predicted",
       {{"bubble", 0.2}, {"closed_form_bubble", 0.333}, {"step_seconds", 0.0}}},
      {"parameters",
       {{{"name", "w0"},
         {"shape", {3}},
         {"dtype", "f32"},
         {"init", "data"},
         {"data_offset", 0}},
        {{"name", "w1"},
         {"shape", {3}},
         {"dtype", "f32"},
         {"init", "normal"},
         {"scale", 0.5}}}},
      {"stage_info",
       {{{"index", 0}, {"rank", 0}, {"name", "s0"}, {"layers", {"a"}}},
        {{"index", 1}, {"rank", 1}, {"name", "s1"}, {"layers", {"b"}}}}},
      {"ranks", {rank0, rank1}},
      {"sites",
       {{{"op", "nn.linear"},
         {"loc", "loc(\"fake.onnx\":1:1)"},
         {"function", "train_s0_fwd"}},
        {{"op", "nn.cross_entropy"},
         {"loc", "loc(\"fake.onnx\":3:1)"},
         {"function", "train_s1_fwd"}}}}};
}

const float kW0[3] = {0.5f, -1.0f, 2.0f};

Status makeImage(const Json &metadata, ModelImage &image) {
  return ModelImage::fromParts(metadata.dump(),
                               reinterpret_cast<const uint8_t *>(kW0),
                               sizeof kW0, {fakeRank0, fakeRank1}, image);
}

/// Samples x_i = (i + 1) * (0.1, -0.2, 0.3) + small offsets, labels i % 5;
/// remembers which samples were read.
class TestDataset : public Dataset {
public:
  explicit TestDataset(int64_t n) : n(n) {}
  std::string describe() const override { return "test data"; }
  int64_t numSamples() const override { return n; }
  static float feature(int64_t i, int j) {
    return float(i + 1) * (j == 1 ? -0.2f : 0.1f * float(j + 1)) +
           0.01f * float(j);
  }
  void copyInput(int64_t i, uint8_t *out) const override {
    std::lock_guard<std::mutex> lock(mu);
    read.push_back(i);
    float x[3];
    for (int j = 0; j < 3; ++j)
      x[j] = feature(i, j);
    std::memcpy(out, x, sizeof x);
  }
  void copyLabels(int64_t i, uint8_t *out) const override {
    int64_t label = i % 5;
    std::memcpy(out, &label, 8);
  }
  int64_t n;
  mutable std::mutex mu;
  mutable std::vector<int64_t> read;
};

class EngineTest : public ::testing::Test {
protected:
  void SetUp() override { faults = FakeFaults(); }
  void TearDown() override { faults = FakeFaults(); }

  /// Runs the fake pipeline; returns the status.
  Status runFake(RunOptions options, RunResult &result,
                 const Json &metadata = fakeMetadata()) {
    ModelImage image;
    Status s = makeImage(metadata, image);
    if (!s.ok())
      return s;
    if (!options.dataset)
      options.dataset = std::make_shared<TestDataset>(8);
    Engine engine(image);
    return engine.run(options, result);
  }
};

std::vector<float> initialW1(uint64_t seed) {
  std::vector<float> w(3);
  EXPECT_EQ(gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, w.data(), 3, 0.5,
                                       seed, gpipe_rt_hash_name("w1", 2)),
            GPIPE_RT_SUCCESS);
  return w;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

TEST_F(EngineTest, LossAndGradientsMatchAReference) {
  RunOptions options;
  options.steps = 1;
  options.seed = 7;
  options.optimizer.kind = OptimizerKind::SGD;
  options.optimizer.lr = 0.125;
  RunResult result;
  Status s = runFake(options, result);
  ASSERT_TRUE(s.ok()) << s.message();

  std::vector<float> w1 = initialW1(7);
  double loss = 0, g0[3] = {0, 0, 0}, g1[3] = {0, 0, 0};
  for (int i = 0; i < 4; ++i) {
    double y = 0;
    for (int j = 0; j < 3; ++j)
      y += double(TestDataset::feature(i, j)) * kW0[j] * w1[size_t(j)];
    double d = y - double(i % 5);
    loss += d * d / kRows;
    for (int j = 0; j < 3; ++j) {
      g1[j] += d * TestDataset::feature(i, j) * kW0[j];
      g0[j] += d * w1[size_t(j)] * TestDataset::feature(i, j);
    }
  }
  ASSERT_EQ(result.steps.size(), 1u);
  EXPECT_NEAR(result.steps[0].loss, loss / 2, 1e-5);
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR(result.firstGradients["w0"][size_t(j)], g0[j], 1e-5);
    EXPECT_NEAR(result.firstGradients["w1"][size_t(j)], g1[j], 1e-5);
  }
  // Plain SGD is exactly the kernel's update.
  std::vector<float> w0(kW0, kW0 + 3);
  ASSERT_EQ(gpipe_rt_cpu_sgd_update_f32(
                w0.data(), result.firstGradients["w0"].data(), 3, 0.125f),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_sgd_update_f32(
                w1.data(), result.firstGradients["w1"].data(), 3, 0.125f),
            GPIPE_RT_SUCCESS);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(result.finalParameters["w0"][size_t(j)], w0[size_t(j)]);
    EXPECT_EQ(result.finalParameters["w1"][size_t(j)], w1[size_t(j)]);
  }
  ASSERT_EQ(result.steps[0].busyFraction.size(), 2u);
}

TEST_F(EngineTest, StepsCycleThroughTheData) {
  auto data = std::make_shared<TestDataset>(6);
  RunOptions options;
  options.steps = 3;
  options.dataset = data;
  options.recordTrace = true;
  RunResult result;
  Status s = runFake(options, result);
  ASSERT_TRUE(s.ok()) << s.message();
  // Steps read samples [0, 4), [4, 8) mod 6 and [8, 12) mod 6.
  std::multiset<int64_t> read(data->read.begin(), data->read.end());
  std::multiset<int64_t> want{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
  EXPECT_EQ(read, want);
  ASSERT_EQ(result.steps.size(), 3u);
  for (const StepMetrics &m : result.steps) {
    EXPECT_TRUE(std::isfinite(m.loss));
    EXPECT_GT(m.samplesPerSecond, 0.0);
  }
  EXPECT_EQ(result.trace.size(), 2u * 9u * 3u);
  EXPECT_GE(result.measuredBubble, 0.0);
  EXPECT_LE(result.measuredBubble, 1.0);
}

TEST_F(EngineTest, ArenaMeasuredEqualsPlannedWhenTheTopIsWritten) {
  Json meta = fakeMetadata();
  // Rank 1 plans 128 bytes more than it touches.
  meta["ranks"][1]["arena_bytes"] = 448;
  RunResult result;
  Status s = runFake(RunOptions{}, result, meta);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(result.arenas.size(), 2u);
  EXPECT_EQ(result.arenas[0].plannedBytes, 320);
  EXPECT_EQ(result.arenas[0].measuredBytes, 320);
  EXPECT_EQ(result.arenas[1].plannedBytes, 448);
  EXPECT_EQ(result.arenas[1].measuredBytes, 320);
}

TEST_F(EngineTest, WritingPastTheArenaIsAnError) {
  faults.overflow = true;
  RunResult result;
  Status s = runFake(RunOptions{}, result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 1 wrote past its planned arena of 320 "
                             "bytes"),
            std::string::npos)
      << s.message();
}

TEST_F(EngineTest, InjectedFaultTimesOutThePeer) {
  RunOptions options;
  options.timeoutSeconds = 0.5;
  options.steps = 3;
  // Rank 0 dies before sending micro-batch 0 of step 2.
  options.fault = FaultInjection{0, 2, 1};
  RunResult result;
  auto start = std::chrono::steady_clock::now();
  Status s = runFake(options, result);
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "step 2: rank 1 (stage 1, micro-batch 0, recv forward "
                         "from rank 0): no message after 0.5 s; the peer may "
                         "have died or stalled");
  EXPECT_LT(elapsed, 3.0);
  EXPECT_EQ(result.steps.size(), 1u);
}

TEST_F(EngineTest, InjectedFaultOnTheReceiverTimesOutTheSender) {
  RunOptions options;
  options.timeoutSeconds = 0.5;
  options.fault = FaultInjection{1, 1, 2};
  RunResult result;
  Status s = runFake(options, result);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "step 1: rank 0 (stage 0, micro-batch 1, send forward "
                         "to rank 1): no receiver after 0.5 s; the peer may "
                         "have died or stalled");
}

TEST_F(EngineTest, StepBarrierTimesOut) {
  RunOptions options;
  options.timeoutSeconds = 0.5;
  options.fault = FaultInjection{0, 1, 8};
  RunResult result;
  Status s = runFake(options, result);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "rank 0 did not finish step 1 within 0.5 s after the "
                         "other ranks; it may have died or stalled");
}

TEST_F(EngineTest, TransferSizeMismatchNamesBothActions) {
  faults.badRecvSize = true;
  RunOptions options;
  options.timeoutSeconds = 2;
  RunResult result;
  Status s = runFake(options, result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 0 (stage 0, micro-batch 0, send forward to "
                             "rank 1) sends 24 bytes but rank 1 (stage 1, "
                             "micro-batch 0, recv forward from rank 0) "
                             "receives 20"),
            std::string::npos)
      << s.message();
}

TEST_F(EngineTest, KernelErrorNamesTheSite) {
  faults.kernelFailure = true;
  RunOptions options;
  options.timeoutSeconds = 2;
  RunResult result;
  Status s = runFake(options, result);
  ASSERT_FALSE(s.ok());
  std::string prefix = "step 1: rank 1 (stage 1, micro-batch 0, forward): "
                       "nn.cross_entropy at loc(\"fake.onnx\":3:1) in "
                       "@train_s1_fwd: ";
  EXPECT_EQ(s.message().substr(0, prefix.size()), prefix) << s.message();
  EXPECT_GT(s.message().size(), prefix.size());
}

TEST_F(EngineTest, ProgramThatSkipsActionsIsAnError) {
  faults.skipStep = true;
  RunResult result;
  Status s = runFake(RunOptions{}, result);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("returned after beginning 8 of its 9 actions"),
            std::string::npos)
      << s.message();
}

TEST_F(EngineTest, OptimizerNeedingMoreStateThanReservedFails) {
  Json meta = fakeMetadata();
  meta["optimizer"] = "sgd";
  RunOptions options;
  options.optimizer.kind = OptimizerKind::Adam;
  RunResult result;
  Status s = runFake(options, result, meta);
  ASSERT_FALSE(s.ok());
  // The library is named by where it came from (here an in-process
  // image).
  EXPECT_EQ(s.message(), "<in-process> reserves optimizer state for sgd; "
                         "recompile with gpipe-compile --optimizer adam");
}

TEST_F(EngineTest, InitialValuesDependOnTheNameAndSeedOnly) {
  // With lr 0 the parameters keep their initial values: "data" from the
  // model's bytes, random inits from (seed, name) whichever rank holds them.
  RunOptions options;
  options.steps = 1;
  options.optimizer.kind = OptimizerKind::SGD;
  options.optimizer.lr = 0.0;
  options.seed = 3;
  RunResult result;
  Status s = runFake(options, result);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(result.finalParameters["w1"], initialW1(3));
  EXPECT_EQ(result.finalParameters["w0"], std::vector<float>(kW0, kW0 + 3));
}

TEST_F(EngineTest, EmulatedDeviceGivesTheCpuBits) {
  RunOptions options;
  options.steps = 3;
  options.seed = 7;
  options.optimizer.lr = 0.125;
  RunResult cpu, emulated;
  Status s = runFake(options, cpu);
  ASSERT_TRUE(s.ok()) << s.message();
  options.device = makeEmulatedDevice();
  s = runFake(options, emulated);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(emulated.deviceDescription,
            "CPU (emulating an asynchronous device)");
  EXPECT_EQ(cpu.firstGradients, emulated.firstGradients);
  EXPECT_EQ(cpu.finalParameters, emulated.finalParameters);
  ASSERT_EQ(cpu.steps.size(), emulated.steps.size());
  for (size_t i = 0; i < cpu.steps.size(); ++i)
    EXPECT_EQ(cpu.steps[i].loss, emulated.steps[i].loss);
  ASSERT_EQ(emulated.arenas.size(), cpu.arenas.size());
  for (size_t r = 0; r < cpu.arenas.size(); ++r)
    EXPECT_EQ(emulated.arenas[r].measuredBytes, cpu.arenas[r].measuredBytes);
}

TEST(Devices, UnknownTargetsAreNamed) {
  EXPECT_TRUE(haveDevice("cpu"));
  EXPECT_FALSE(haveDevice("tpu"));
  std::shared_ptr<Device> device;
  Status s = makeDevice("tpu", 0, device);
  EXPECT_EQ(s.message(), "the model was compiled for --target tpu but this "
                         "program was built without that backend; no "
                         "libgpipe-tpu-backend.so beside it");
  // Target names come from model metadata: no path reaches the file system.
  EXPECT_EQ(makeDevice("../x", 0, device).message(),
            "the model was compiled for --target ../x but this program was "
            "built without that backend");
  ASSERT_TRUE(makeDevice("cpu", 0, device).ok());
  EXPECT_STREQ(device->target(), "cpu");
  EXPECT_TRUE(device->hostMemory());
  EXPECT_FALSE(device->supportsNccl());
  std::vector<uint8_t> id;
  EXPECT_EQ(device->ncclUniqueId(id).message(),
            "the nccl transport needs a CUDA model; this one runs on cpu");
}

TEST(FaultSpec, Parses) {
  FaultInjection f;
  ASSERT_TRUE(parseFaultInjection("rank=1,step=3,action=4", f).ok());
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.step, 3);
  EXPECT_EQ(f.action, 4);
  ASSERT_TRUE(parseFaultInjection("rank=2", f).ok());
  EXPECT_EQ(f.step, 1);
  EXPECT_EQ(f.action, 0);
  EXPECT_FALSE(parseFaultInjection("step=1", f).ok());
  EXPECT_FALSE(parseFaultInjection("rank=x", f).ok());
  EXPECT_FALSE(parseFaultInjection("rank=1,bogus=2", f).ok());
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

TEST(Optimizer, PlainSgdIsTheKernelBitForBit) {
  OptimizerConfig config;
  config.kind = OptimizerKind::SGD;
  config.lr = 0.1;
  std::vector<float> p{1.0f, -0.3f, 1e-7f, 123.456f},
      g{0.7f, 3.3f, -1e-3f, -0.01f};
  std::vector<float> want = p;
  ASSERT_EQ(gpipe_rt_cpu_sgd_update_f32(want.data(), g.data(), 4, 0.1f),
            GPIPE_RT_SUCCESS);
  ASSERT_TRUE(applyOptimizer(config, 1, p.data(), g.data(), nullptr, 4).ok());
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_EQ(std::memcmp(&p[i], &want[i], 4), 0) << i;
}

TEST(Optimizer, SgdWeightDecayAddsToTheGradient) {
  OptimizerConfig config;
  config.lr = 0.5;
  config.weightDecay = 0.25;
  float p = 2.0f, g = 1.0f;
  ASSERT_TRUE(applyOptimizer(config, 1, &p, &g, nullptr, 1).ok());
  EXPECT_FLOAT_EQ(p, 2.0f - 0.5f * (1.0f + 0.25f * 2.0f));
}

TEST(Optimizer, MomentumFollowsPyTorch) {
  OptimizerConfig config;
  config.kind = OptimizerKind::Momentum;
  config.lr = 0.1;
  config.momentum = 0.9;
  float p = 1.0f, g = 0.5f, buf = 12345.0f; // the first step ignores buf
  const float want[3] = {0.95f, 0.855f, 0.7195f};
  for (int t = 1; t <= 3; ++t) {
    ASSERT_TRUE(applyOptimizer(config, t, &p, &g, &buf, 1).ok());
    EXPECT_NEAR(p, want[t - 1], 1e-6) << "step " << t;
  }
}

TEST(Optimizer, AdamWFollowsPyTorch) {
  OptimizerConfig config;
  config.kind = OptimizerKind::Adam;
  config.lr = 0.01;
  config.weightDecay = 0.01;
  std::vector<float> p{0.5f, -1.5f}, state(4, 0.0f);
  const float grads[3][2] = {{0.1f, -0.2f}, {0.3f, 0.05f}, {-0.4f, 0.2f}};
  double rp[2] = {0.5, -1.5}, m[2] = {0, 0}, v[2] = {0, 0};
  for (int t = 1; t <= 3; ++t) {
    ASSERT_TRUE(
        applyOptimizer(config, t, p.data(), grads[t - 1], state.data(), 2)
            .ok());
    for (int i = 0; i < 2; ++i) {
      double g = grads[t - 1][i];
      rp[i] *= 1 - 0.01 * 0.01;
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.999 * v[i] + 0.001 * g * g;
      double mhat = m[i] / (1 - std::pow(0.9, t));
      double vhat = v[i] / (1 - std::pow(0.999, t));
      rp[i] -= 0.01 * mhat / (std::sqrt(vhat) + 1e-8);
      EXPECT_NEAR(p[size_t(i)], rp[i], 1e-6) << "step " << t << " i " << i;
    }
  }
}

TEST(Optimizer, ResolvesDefaults) {
  ModelMetadata meta;
  meta.optimizer = OptimizerKind::Adam;
  OptimizerConfig config;
  ASSERT_TRUE(resolveOptimizer(meta, {}, 10, config).ok());
  EXPECT_EQ(config.kind, OptimizerKind::Adam);
  EXPECT_DOUBLE_EQ(config.lr, 1e-3);
  EXPECT_DOUBLE_EQ(config.weightDecay, 0.01);
  OptimizerOptions options;
  options.kind = OptimizerKind::Momentum;
  ASSERT_TRUE(resolveOptimizer(meta, options, 10, config).ok());
  EXPECT_DOUBLE_EQ(config.momentum, 0.9);
  meta.optimizer = OptimizerKind::Momentum;
  options.kind = OptimizerKind::Adam;
  Status s = resolveOptimizer(meta, options, 10, config);
  EXPECT_EQ(s.message(),
            "the model library reserves optimizer state for momentum; "
            "recompile with gpipe-compile --optimizer adam");
}

// The learning rate of every step equals torch.optim.lr_scheduler's for the
// equivalent chain (lr_schedules.json, made by make_trainer_goldens.py with
// pip's torch), within 1e-7 of the base rate.
TEST(Optimizer, LRSchedulesMatchTorch) {
  std::ifstream in(std::string(GPIPE_TEST_INPUTS_DIR) + "/lr_schedules.json");
  ASSERT_TRUE(in.good());
  nlohmann::json doc = nlohmann::json::parse(in);
  ModelMetadata meta;
  meta.optimizer = OptimizerKind::SGD;
  int64_t compared = 0;
  for (const nlohmann::json &setup : doc.at("setups")) {
    OptimizerOptions options;
    std::string kind = setup.at("schedule");
    options.schedule = parseLRScheduleKind(kind);
    ASSERT_TRUE(options.schedule) << kind;
    options.lr = setup.at("lr").get<double>();
    options.warmupSteps = setup.at("warmup_steps").get<int64_t>();
    options.horizon = setup.at("decay_steps").get<int64_t>();
    if (kind != "constant")
      options.minLr = setup.at("min_lr").get<double>();
    if (kind == "step") {
      options.stepSize = setup.at("step_size").get<int64_t>();
      options.gamma = setup.at("gamma").get<double>();
    }
    const auto &lrs = setup.at("lrs");
    OptimizerConfig config;
    Status s = resolveOptimizer(meta, options, int64_t(lrs.size()), config);
    ASSERT_TRUE(s.ok()) << s.message();
    for (size_t i = 0; i < lrs.size(); ++i) {
      EXPECT_NEAR(config.atStep(int64_t(i) + 1).lr, lrs[i].get<double>(),
                  1e-7 * *options.lr)
          << kind << " warmup " << *options.warmupSteps << " step " << i + 1;
      ++compared;
    }
  }
  EXPECT_GT(compared, 200);
}

// Out-of-range schedule values are errors that name the flag and value.
TEST(Optimizer, LRScheduleErrors) {
  ModelMetadata meta;
  OptimizerConfig config;
  auto error = [&](auto set) {
    OptimizerOptions options;
    options.lr = 0.1;
    options.schedule = LRScheduleKind::Cosine;
    set(options);
    return resolveOptimizer(meta, options, 10, config).message();
  };
  EXPECT_EQ(error([](OptimizerOptions &o) { o.minLr = 0.5; }),
            "--min-lr 0.5: must be finite, non-negative and at most --lr 0.1");
  EXPECT_EQ(error([](OptimizerOptions &o) { o.minLr = std::nan(""); }),
            "--min-lr nan: must be finite, non-negative and at most --lr 0.1");
  EXPECT_EQ(error([](OptimizerOptions &o) { o.warmupSteps = -1; }),
            "--warmup-steps -1: must be 0 or more");
  EXPECT_EQ(error([](OptimizerOptions &o) { o.gamma = 0.5; }),
            "--lr-gamma applies to --lr-schedule step, not cosine");
  EXPECT_EQ(error([](OptimizerOptions &o) {
              o.schedule = LRScheduleKind::Step;
              o.gamma = 2;
            }),
            "--lr-gamma 2: the step decay factor must lie in (0, 1]");
  EXPECT_EQ(error([](OptimizerOptions &o) { o.lr = -1; }),
            "--lr -1: the learning rate must be finite and non-negative");
}

// An epoch's order is a permutation of every sample, the same for the same
// seed and epoch, another for another epoch or seed, and the file's order
// without shuffling.
TEST(Dataset, EpochOrder) {
  std::vector<int64_t> a, b, c, d, identity;
  getEpochOrder(1000, true, 7, 3, a);
  getEpochOrder(1000, true, 7, 3, b);
  getEpochOrder(1000, true, 7, 4, c);
  getEpochOrder(1000, true, 8, 3, d);
  getEpochOrder(1000, false, 7, 3, identity);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, identity);
  for (int64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(identity[size_t(i)], i);
  // Few fixed points: a shuffle, not a near-identity.
  int64_t fixed = 0;
  for (int64_t i = 0; i < 1000; ++i)
    fixed += a[size_t(i)] == i;
  EXPECT_LT(fixed, 10);
  getEpochOrder(1, true, 7, 0, a);
  EXPECT_EQ(a, std::vector<int64_t>{0});
}

// One parser for every place an optimizer is named (Optimizers.def): the
// canonical names and the aliases, exactly as spelled.
TEST(Optimizer, Names) {
  EXPECT_EQ(parseOptimizerKind("sgd"), OptimizerKind::SGD);
  EXPECT_EQ(parseOptimizerKind("momentum"), OptimizerKind::Momentum);
  EXPECT_EQ(parseOptimizerKind("sgd-momentum"), OptimizerKind::Momentum);
  EXPECT_EQ(parseOptimizerKind("adam"), OptimizerKind::Adam);
  EXPECT_EQ(parseOptimizerKind("adamw"), OptimizerKind::Adam);
  EXPECT_EQ(parseOptimizerKind("Adam"), std::nullopt);
  EXPECT_EQ(parseOptimizerKind("SGD"), std::nullopt);
  EXPECT_EQ(parseOptimizerKind(""), std::nullopt);
  EXPECT_EQ(parseOptimizerKind("lamb"), std::nullopt);
  for (OptimizerKind kind :
       {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::Adam})
    EXPECT_EQ(parseOptimizerKind(getOptimizerName(kind)), kind);
  EXPECT_EQ(gpipe::abi::getOptimizerNameList(), "sgd, momentum or adam");
  EXPECT_EQ(getUnknownOptimizerMessage("lamb"),
            "unknown optimizer 'lamb' (expected sgd, momentum or adam)");
  static_assert(gpipe::abi::parseOptimizerKind("adamw") == OptimizerKind::Adam);
  static_assert(gpipe::abi::getOptimizerStateFactor(OptimizerKind::Momentum) ==
                1);
}

// The state a run keeps, and so names its checkpoints by.
TEST(Optimizer, StateKind) {
  OptimizerConfig config;
  config.kind = OptimizerKind::SGD;
  EXPECT_EQ(config.stateKind(), OptimizerKind::SGD);
  config.momentum = 0.5;
  EXPECT_EQ(config.stateKind(), OptimizerKind::Momentum);
  config.kind = OptimizerKind::Momentum;
  config.momentum = 0.0;
  EXPECT_EQ(config.stateKind(), OptimizerKind::SGD);
  config.kind = OptimizerKind::Adam;
  EXPECT_EQ(config.stateKind(), OptimizerKind::Adam);
}

//===----------------------------------------------------------------------===//
// Metadata validation
//===----------------------------------------------------------------------===//

std::string metadataError(const Json &meta) {
  ModelImage image;
  return makeImage(meta, image).message();
}

TEST(Metadata, FakePipelineIsValid) {
  ModelImage image;
  Status s = makeImage(fakeMetadata(), image);
  ASSERT_TRUE(s.ok()) << s.message();
  const ModelMetadata &m = image.metadata();
  EXPECT_EQ(m.numRanks(), 2);
  EXPECT_EQ(m.microBatchSize(), 2);
  EXPECT_EQ(m.ranks[1].actions[7].kind, ActionKind::SendB);
  EXPECT_EQ(m.ranks[1].actions[7].tag, 10);
  EXPECT_DOUBLE_EQ(m.predictedClosedFormBubble, 0.333);
  EXPECT_FALSE(m.predictedScheduleClosedFormBubble.has_value());
  EXPECT_EQ(m.ranks[0].peakKeptBytes, -1);
  EXPECT_EQ(m.sites[1].op, "nn.cross_entropy");
}

// The schedule's own closed form and the kept bytes at the peak, added to
// schema version 2 as optional keys: a number, null (no closed form), or
// absent (an older model, above).
TEST(Metadata, ScheduleClosedFormAndKeptBytes) {
  Json meta = fakeMetadata();
  meta["predicted"]["schedule_closed_form_bubble"] = 0.25;
  meta["ranks"][0]["peak_kept_bytes"] = 48;
  ModelImage image;
  Status s = makeImage(meta, image);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(image.metadata().predictedScheduleClosedFormBubble.has_value());
  EXPECT_DOUBLE_EQ(*image.metadata().predictedScheduleClosedFormBubble, 0.25);
  EXPECT_EQ(image.metadata().ranks[0].peakKeptBytes, 48);
  EXPECT_EQ(image.metadata().ranks[1].peakKeptBytes, -1);

  meta["predicted"]["schedule_closed_form_bubble"] = nullptr;
  ModelImage none;
  s = makeImage(meta, none);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(none.metadata().predictedScheduleClosedFormBubble.has_value());
  EXPECT_TRUE(std::isnan(*none.metadata().predictedScheduleClosedFormBubble));

  meta["predicted"]["schedule_closed_form_bubble"] = "0.25";
  EXPECT_NE(metadataError(meta).find("schedule_closed_form_bubble"),
            std::string::npos);
}

/// The fake pipeline's programs as the compiler writes them: micro-batch
/// loops whose body's "mb" is relative to the loop's, transfers without
/// tags.
Json loopedMetadata() {
  Json m = fakeMetadata();
  auto untagged = [](Json transfer) {
    transfer.erase("tag");
    return transfer;
  };
  auto loop = [](int lower, int upper, Json body) {
    return Json{{"loop", {{"lower", lower}, {"upper", upper}, {"body", body}}}};
  };
  m["ranks"][0]["actions"] = {
      loop(0, 2,
           {compute("forward", 0, 0),
            untagged(transfer("send", 0, 0, 1, "forward", 0))}),
      loop(0, 2,
           {untagged(transfer("recv", 0, 0, 1, "backward", 0)),
            compute("backward", 0, 0)}),
      compute("step", 0, -1)};
  m["ranks"][1]["actions"] = {
      loop(0, 2,
           {untagged(transfer("recv", 1, 0, 0, "forward", 0)),
            compute("forward", 1, 0)}),
      loop(0, 2,
           {compute("backward", 1, 0),
            untagged(transfer("send", 1, 0, 0, "backward", 0))}),
      compute("step", 1, -1)};
  return m;
}

TEST(Metadata, LoopsExpandAndTagsAreDerived) {
  ModelImage image;
  Status s = makeImage(loopedMetadata(), image);
  ASSERT_TRUE(s.ok()) << s.message();
  const ModelMetadata &m = image.metadata();
  const std::vector<ActionSpec> &rank0 = m.ranks[0].actions;
  ASSERT_EQ(rank0.size(), 9u);
  EXPECT_EQ(rank0[2].kind, ActionKind::Forward);
  EXPECT_EQ(rank0[2].mb, 1);
  EXPECT_EQ(rank0[3].kind, ActionKind::SendF);
  EXPECT_EQ(rank0[3].mb, 1);
  // (boundary * M + mb) * 2 + direction, the same on both ends.
  EXPECT_EQ(rank0[3].tag, 2);
  EXPECT_EQ(rank0[6].kind, ActionKind::RecvB);
  EXPECT_EQ(rank0[6].tag, 3);
  EXPECT_EQ(rank0[8].kind, ActionKind::Step);
  EXPECT_EQ(m.ranks[1].actions[7].tag, 3);
}

TEST(Metadata, LoopErrors) {
  Json m = loopedMetadata();
  m["ranks"][0]["actions"][0]["loop"]["upper"] = 3;
  EXPECT_EQ(metadataError(m), "metadata: ranks[0].actions[0].loop: loop "
                              "bounds [0, 3) are not inside [0, 2)");
  m = loopedMetadata();
  m["ranks"][0]["actions"][0]["loop"]["body"][0]["mb"] = 1;
  EXPECT_EQ(metadataError(m),
            "metadata: ranks[0].actions[0].loop.body[0].mb: micro-batch 2 is "
            "outside [0, 2)");
  m = loopedMetadata();
  m["ranks"][0]["actions"][2] = {{"loop", {{"lower", 0}, {"upper", 2}}}};
  EXPECT_EQ(metadataError(m), "metadata: ranks[0].actions[2].loop: missing "
                              "'body'");
}

TEST(Metadata, Errors) {
  Json m = fakeMetadata();
  m.erase("microbatches");
  EXPECT_EQ(metadataError(m), "metadata: missing 'microbatches'");

  m = fakeMetadata();
  m["optimizer"] = "adamw";
  EXPECT_EQ(metadataError(m), "");
  m["optimizer"] = "Adam";
  EXPECT_EQ(metadataError(m), "metadata: optimizer: unknown optimizer 'Adam' "
                              "(expected sgd, momentum or adam)");

  // A stage count no rank list can hold is refused before anything is
  // sized by it (found by the metadata fuzzer: 7777777777771 stages).
  m = fakeMetadata();
  m["stages"] = int64_t(7777777777771);
  EXPECT_NE(metadataError(m).find(
                "metadata: stages: is 7777777777771, but the ranks hold"),
            std::string::npos)
      << metadataError(m);

  m = fakeMetadata();
  m["format"] = "onnx";
  EXPECT_EQ(metadataError(m),
            "metadata: format: is 'onnx', expected 'gpipe-model'");

  m = fakeMetadata();
  m["ranks"][0]["stages"][0]["grads_offset"] = 316;
  EXPECT_EQ(metadataError(m),
            "metadata: ranks[0].stages[0]: stage 0 gradients bytes [316, 328) "
            "lie beyond arena_bytes 320");

  m = fakeMetadata();
  m["ranks"][1]["stages"][0]["state_offset"] = 8;
  EXPECT_NE(metadataError(m).find("overlaps"), std::string::npos);

  m = fakeMetadata();
  m["ranks"][1]["actions"][0]["bytes"] = 20;
  EXPECT_NE(metadataError(m).find("does not match"), std::string::npos);

  m = fakeMetadata();
  m["ranks"][1]["actions"][0]["tag"] = 7;
  EXPECT_NE(metadataError(m).find("has no matching recv on rank 1"),
            std::string::npos)
      << metadataError(m);

  m = fakeMetadata();
  m["ranks"][0]["actions"][0]["stage"] = 1;
  EXPECT_EQ(metadataError(m), "metadata: ranks[0].actions[0].stage: rank 0 "
                              "does not hold stage 1");

  m = fakeMetadata();
  m["ranks"][1]["stages"][0]["params"][0]["name"] = "w0";
  EXPECT_NE(metadataError(m).find("held by more than one stage"),
            std::string::npos);

  m = fakeMetadata();
  m["input"]["shape"] = {5, 3};
  EXPECT_NE(metadataError(m).find("not a multiple of the 2 micro-batches"),
            std::string::npos);

  m = fakeMetadata();
  m["parameters"][0]["data_offset"] = 4;
  EXPECT_EQ(metadataError(m), "metadata: parameter 'w0'.data_offset: bytes "
                              "[4, 16) lie beyond the model's 12 data bytes");

  m = fakeMetadata();
  m["abi_version"] = GPIPE_RT_ABI_VERSION + 1;
  EXPECT_NE(metadataError(m).find("abi_version"), std::string::npos);

  m = fakeMetadata();
  m["ranks"][0]["actions"][3]["kind"] = "teleport";
  EXPECT_EQ(metadataError(m), "metadata: ranks[0].actions[3].kind: unknown "
                              "action kind 'teleport'");

  m = fakeMetadata();
  m["stages"] = "two";
  EXPECT_EQ(metadataError(m),
            "metadata: stages: expected an integer, got a string");

  // The GEMM choice: known implementations, an increasing grid, one cell
  // per grid point per layout.
  m = fakeMetadata();
  m["gemm"] = {{"impl", "libxsmm"}};
  EXPECT_EQ(metadataError(m), "");
  m["gemm"] = {{"impl", "mkl"}};
  EXPECT_EQ(metadataError(m), "metadata: gemm.impl: is 'mkl' (expected "
                              "openblas or libxsmm)");
  m["gemm"] = {{"impl", "openblas"},
               {"grid", {8, 64}},
               {"cells", {{"NN", "01010101"}, {"TN", "11111111"}}}};
  EXPECT_EQ(metadataError(m), "");
  m["gemm"]["grid"] = {64, 8};
  EXPECT_EQ(metadataError(m), "metadata: gemm.grid[1]: is 8 (expected "
                              "positive and increasing)");
  m["gemm"]["grid"] = {8, 64};
  m["gemm"]["cells"]["NN"] = "0101";
  EXPECT_EQ(metadataError(m),
            "metadata: gemm.cells.NN: has 4 cells; the grid has 8");
  m["gemm"]["cells"]["NN"] = "0101010x";
  EXPECT_EQ(metadataError(m), "metadata: gemm.cells.NN: has cell 'x' "
                              "(expected 0 = openblas or 1 = libxsmm)");
  m["gemm"]["cells"].erase("NN");
  m["gemm"]["cells"]["XY"] = "01010101";
  EXPECT_EQ(metadataError(m), "metadata: gemm.cells.XY: is not a layout "
                              "(expected NN, NT, TN or TT)");

  ModelImage image;
  EXPECT_EQ(ModelImage::fromParts("{not json", nullptr, 0, {}, image).message(),
            "metadata: is not valid JSON");
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

std::string dataError(const std::vector<SafeTensorRef> &tensors) {
  ModelImage image;
  Status s = makeImage(fakeMetadata(), image);
  EXPECT_TRUE(s.ok());
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(serializeSafeTensors(tensors, {}, bytes).ok());
  SafeTensorsFile file;
  s = SafeTensorsFile::parse(std::move(bytes), "data.safetensors", file);
  EXPECT_TRUE(s.ok()) << s.message();
  std::unique_ptr<Dataset> data;
  return datasetFromSafeTensors(file, image.metadata(), data).message();
}

TEST(Data, FileValidation) {
  std::vector<float> x(6 * 3, 0.5f);
  std::vector<int64_t> y{0, 1, 2, 3, 4, 0};
  std::vector<double> xd(6 * 3, 0.5);
  auto input = [&](std::vector<int64_t> shape) {
    return SafeTensorRef{
        "input", SafeTensorsDType::F32, shape, x.data(),
        size_t(shape[0] * (shape.size() > 1 ? shape[1] : 1) * 4)};
  };
  SafeTensorRef labels{"labels", SafeTensorsDType::I64, {6}, y.data(), 48};

  EXPECT_EQ(dataError({input({6, 3}), labels}), "");
  // F64 features are converted.
  EXPECT_EQ(
      dataError(
          {{"input", SafeTensorsDType::F64, {6, 3}, xd.data(), xd.size() * 8},
           labels}),
      "");
  EXPECT_EQ(dataError({{"inputs", SafeTensorsDType::F32, {6, 3}, x.data(), 72},
                       labels}),
            "data.safetensors: no tensor 'input'; the model expects 'input' "
            "[N, 3] f32 (the file holds 'inputs', 'labels')");
  EXPECT_EQ(dataError({input({9, 2}), labels}),
            "data.safetensors: tensor 'input' has shape [9, 2], the model "
            "expects [N, 3] with N >= 1");
  std::vector<int64_t> ix(18, 1);
  EXPECT_EQ(
      dataError(
          {{"input", SafeTensorsDType::I64, {6, 3}, ix.data(), ix.size() * 8},
           labels}),
      "data.safetensors: tensor 'input' has dtype I64, the model "
      "expects f32 (F32, F64, F16 or BF16)");
  std::vector<int64_t> bad{0, 1, 7, 3, 4, 0};
  EXPECT_EQ(dataError({input({6, 3}),
                       {"labels", SafeTensorsDType::I64, {6}, bad.data(), 48}}),
            "data.safetensors: tensor 'labels': label 7 at position [2] is "
            "outside [0, 5)");
  EXPECT_EQ(dataError({input({5, 3}), labels}),
            "data.safetensors: tensor 'labels' has 6 samples but 'input' has "
            "5");
}

ModelMetadata textMetadata(int64_t vocab) {
  ModelMetadata m;
  m.microbatches = 2;
  m.dataHint = "text-char";
  m.vocab = vocab;
  m.input.shape = {4, 16};
  m.input.dtype = GPIPE_RT_I64;
  TensorSpec labels = m.input;
  labels.classes = vocab;
  m.labels = labels;
  return m;
}

TEST(Data, BuiltinText) {
  EXPECT_EQ(textAlphabet().size(), 65u);
  EXPECT_GT(defaultText().size(), 2000u);
  EXPECT_EQ(textCharId('\n'), 0);
  EXPECT_EQ(textCharId('a'), 39);
  EXPECT_EQ(textCharId('~'), 1);
  std::unique_ptr<Dataset> data;
  Status s = makeBuiltinDataset(textMetadata(65), 1, data);
  ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t sample = 0; sample < 50; ++sample) {
    int64_t x[16], y[16];
    data->copyInput(sample, reinterpret_cast<uint8_t *>(x));
    data->copyLabels(sample, reinterpret_cast<uint8_t *>(y));
    for (int t = 0; t < 16; ++t) {
      ASSERT_GE(x[t], 0);
      ASSERT_LT(x[t], 65);
      if (t + 1 < 16) {
        EXPECT_EQ(y[t], x[t + 1]);
      }
    }
  }
  s = makeBuiltinDataset(textMetadata(60), 1, data);
  EXPECT_NE(s.message().find("vocabulary has 60"), std::string::npos)
      << s.message();
}

TEST(Data, BuiltinClassification) {
  ModelMetadata m;
  m.microbatches = 1;
  m.dataHint = "classification";
  m.input.shape = {8, 5};
  m.labels = TensorSpec{{8}, GPIPE_RT_I64, 3};
  std::unique_ptr<Dataset> a, b;
  ASSERT_TRUE(makeBuiltinDataset(m, 9, a).ok());
  ASSERT_TRUE(makeBuiltinDataset(m, 9, b).ok());
  std::set<int64_t> seen;
  for (int64_t i = 0; i < 64; ++i) {
    int64_t la, lb;
    a->copyLabels(i, reinterpret_cast<uint8_t *>(&la));
    b->copyLabels(i, reinterpret_cast<uint8_t *>(&lb));
    EXPECT_EQ(la, lb);
    ASSERT_GE(la, 0);
    ASSERT_LT(la, 3);
    seen.insert(la);
  }
  EXPECT_GE(seen.size(), 2u);
  m.dataHint = "";
  Status s = makeBuiltinDataset(m, 9, a);
  EXPECT_NE(s.message().find("pass --data FILE.safetensors"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Model libraries
//===----------------------------------------------------------------------===//

TEST(ModelLibrary, LoadsAndTrains) {
  ModelImage image;
  Status s = loadModelLibrary(GPIPE_FAKE_MODEL, image);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(image.metadata().source, "fake.onnx");
  std::vector<float> x{1, 2, 3, 4};
  std::vector<SafeTensorRef> tensors{
      {"input", SafeTensorsDType::F32, {2, 2}, x.data(), 16}};
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(serializeSafeTensors(tensors, {}, bytes).ok());
  SafeTensorsFile file;
  ASSERT_TRUE(SafeTensorsFile::parse(std::move(bytes), "x", file).ok());
  std::unique_ptr<Dataset> data;
  ASSERT_TRUE(datasetFromSafeTensors(file, image.metadata(), data).ok());
  RunOptions options;
  options.steps = 2;
  options.optimizer.lr = 0.5;
  options.dataset = std::move(data);
  Engine engine(image);
  RunResult result;
  s = engine.run(options, result);
  ASSERT_TRUE(s.ok()) << s.message();
  // w = (1, -2); loss = 1 - 4 + 3 - 8 = -8; grads (4, 6); w' = (-1, -5).
  EXPECT_DOUBLE_EQ(result.steps[0].loss, -8.0);
  EXPECT_EQ(result.firstGradients["w"], (std::vector<float>{4, 6}));
  EXPECT_EQ(result.finalParameters["w"], (std::vector<float>{-3, -8}));
  EXPECT_EQ(result.arenas[0].measuredBytes, 64);

  // The only rank dies: nothing times out on a transfer, the step barrier
  // notices that nothing moves any more.
  options.fault = FaultInjection{0, 2, 1};
  options.timeoutSeconds = 0.25;
  s = engine.run(options, result);
  EXPECT_EQ(s.message(), "rank 0 did not finish step 2 and no rank made "
                         "progress for 0.5 s; a rank may have died or stalled");
  EXPECT_EQ(result.steps.size(), 1u);
}

TEST(ModelLibrary, WrongAbiVersion) {
  ModelImage image;
  Status s = loadModelLibrary(GPIPE_FAKE_MODEL_BAD_ABI, image);
  EXPECT_EQ(s.message(), std::string(GPIPE_FAKE_MODEL_BAD_ABI) +
                             " was compiled for runtime ABI 99, this "
                             "gpipe-run speaks " +
                             std::to_string(GPIPE_RT_ABI_VERSION) +
                             "; recompile it with this gpipe-compile");
}

TEST(ModelLibrary, NotAModel) {
  ModelImage image;
  Status s = loadModelLibrary(GPIPE_FAKE_MODEL_NOT_A_MODEL, image);
  EXPECT_NE(s.message().find("is not a gpipe model"), std::string::npos)
      << s.message();
  s = loadModelLibrary("/nonexistent/model.so", image);
  EXPECT_NE(s.message().find("cannot load model library"), std::string::npos);
}

} // namespace

// The CPU device's inspection (every payload and gradient buffer, each
// step) finds the first NaN or infinity wherever it is: in the first or a
// later block of its scan, at a block's edge, or in a buffer's tail; the
// largest finite floats and denormals are not flagged.
TEST(CpuDevice, InspectFindsTheFirstNonFinite) {
  std::shared_ptr<Device> device = makeCpuDevice();
  std::unique_ptr<RankDevice> rank;
  ASSERT_TRUE(device->makeRank(0, 0, 0, 1, rank).ok());
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> data(10000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = (i % 3 == 0)   ? std::numeric_limits<float>::max()
              : (i % 3 == 1) ? -std::numeric_limits<float>::denorm_min()
                             : float(i);
  Inspection clean;
  ASSERT_TRUE(rank->inspect(data.data(), int64_t(data.size()), clean));
  EXPECT_EQ(clean.badIndex, -1);
  EXPECT_EQ(clean.first, std::numeric_limits<float>::max());
  for (int64_t at : {0, 1, 4095, 4096, 5000, 9999}) {
    for (float bad : {nan, inf, -inf}) {
      std::vector<float> copy = data;
      copy[size_t(at)] = bad;
      copy[9999] = nan; // a later one is not the first
      if (at == 9999)
        copy[9999] = bad;
      Inspection found;
      ASSERT_TRUE(rank->inspect(copy.data(), int64_t(copy.size()), found));
      EXPECT_EQ(found.badIndex, at) << bad;
      EXPECT_TRUE(std::isnan(found.badValue) ? std::isnan(bad)
                                             : found.badValue == bad);
    }
  }
  Inspection empty;
  ASSERT_TRUE(rank->inspect(data.data(), 0, empty));
  EXPECT_EQ(empty.badIndex, -1);
}
