//===- PipelineTest.cpp - The pipeline executor and the GPipe guarantee ---===//
//
// Compiles networks with buildGPipePipeline for many (K, M, schedule) and
// runs one training step with the reference pipeline executor:
//
// - The GPipe guarantee: for a fixed M, loss and gradients are bitwise
//   identical for every K, both schedules and both remat policies (stage
//   recomputes, none keeps the activations) (the MLP export and a GPT
//   preset); after three SGD steps the parameters are bitwise equal too.
// - Against M = 1, the gradients of M = 2 and 4 agree to 1e-5 relative
//   (norm of the difference over the norm, per parameter).
// - Against PyTorch: loss and every `grad.<initializer>` of the golden files
//   to 1e-4 relative (norm), for mlp.onnx with K=2, M=4 and for gpt.onnx and
//   gpt_mha.onnx with M = 1 and 2.
// - Executor errors: a schedule whose backwards run out of micro-batch order
//   and one that deadlocks are reported, and a batch M does not divide.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Frontend/ONNXImporter.h"
#include "gpipe/Frontend/Presets.h"
#include "gpipe/InitAllDialects.h"
#include "gpipe/Interpreter/Interpreter.h"
#include "gpipe/Interpreter/PipelineExecutor.h"
#include "gpipe/Pipelines/Pipelines.h"
#include "gpipe/Runtime/SafeTensors.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace mlir::gpipe;
namespace rt = ::gpipe::rt;

namespace {

std::string inputsDir() {
  return std::string(GPIPE_SOURCE_DIR) + "/test/Frontend/ONNX/Inputs/";
}

/// ||a - b|| / ||b||.
double relativeNormDiff(llvm::ArrayRef<float> a, llvm::ArrayRef<float> b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double d = double(a[i]) - double(b[i]);
    diff += d * d;
    norm += double(b[i]) * double(b[i]);
  }
  if (a.size() != b.size())
    return INFINITY;
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

std::string listOf(const std::vector<int64_t> &values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? "," : "") + std::to_string(values[i]);
  return s + "}";
}

bool bitwiseEqual(const HostTensor &a, const HostTensor &b) {
  return a.getDType() == b.getDType() && a.getShape() == b.getShape() &&
         std::memcmp(a.getData(), b.getData(), a.getByteSize()) == 0;
}

struct Data {
  HostTensor input, labels;
};

class PipelineTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    handler.emplace(&context, [this](Diagnostic &diag) {
      std::string text = diag.str();
      for (const Diagnostic &note : diag.getNotes())
        text += "\n  note: " + note.str();
      diagnostics.push_back(text);
      if (!expectErrors)
        ADD_FAILURE() << text;
      return success();
    });
  }

  OwningOpRef<ModuleOp> importModel(const std::string &stem) {
    return importONNXFile(&context, inputsDir() + stem + ".onnx");
  }

  /// The GPT preset of the guarantee tests.
  OwningOpRef<ModuleOp> gptPreset() {
    PresetOptions options;
    options.depth = 4;
    options.width = 32;
    options.heads = 4;
    options.seqLen = 8;
    options.batch = 8;
    options.vocab = 16;
    return buildPreset(&context, "gpt", options);
  }

  /// Whether compile() fuses attentions (nn-fuse-attention).
  bool fuseAttention = true;

  /// A copy of `network` compiled with gpipe-pipeline (null on failure).
  OwningOpRef<ModuleOp> compile(ModuleOp network, int64_t k, int64_t m,
                                const std::string &schedule,
                                const std::string &remat = "stage",
                                bool fuse = true) {
    OwningOpRef<ModuleOp> module = network.clone();
    PassManager pm(&context);
    GPipePipelineOptions options;
    options.fuse = fuse;
    options.fuseAttention = fuseAttention;
    options.stages = k;
    options.microbatches = m;
    options.schedule = *symbolizeScheduleKind(schedule);
    options.remat = *symbolizeRemat(remat);
    buildGPipePipeline(pm, options);
    if (failed(pm.run(*module)))
      return nullptr;
    return module;
  }

  /// Compiles and runs `steps` training steps (SGD when `steps` > 1, and
  /// then `params` holds the final values); returns the first step.
  std::optional<PipelineStepResult>
  train(ModuleOp network, int64_t k, int64_t m, const std::string &schedule,
        const Data &data, uint64_t seed, int steps = 1,
        std::optional<ParameterStore> *finalParams = nullptr,
        const std::string &remat = "stage", bool fuse = true) {
    SCOPED_TRACE(::testing::Message()
                 << "K=" << k << " M=" << m << " " << schedule
                 << " remat=" << remat << " fuse=" << fuse);
    OwningOpRef<ModuleOp> module =
        compile(network, k, m, schedule, remat, fuse);
    if (!module) {
      ADD_FAILURE() << "compile failed: K=" << k << " M=" << m << " "
                    << schedule << " remat=" << remat;
      return std::nullopt;
    }
    FailureOr<ParameterStore> params =
        ParameterStore::fromModule(*module, seed);
    if (failed(params))
      return std::nullopt;
    PipelineExecutorOptions options;
    if (steps > 1)
      options.sgdLearningRate = 0.1f;
    std::optional<PipelineStepResult> first;
    for (int s = 0; s < steps; ++s) {
      FailureOr<PipelineStepResult> result =
          executePipeline(*module, data.input, data.labels, *params, options);
      if (failed(result)) {
        ADD_FAILURE() << "step " << s << " failed: K=" << k << " M=" << m << " "
                      << schedule;
        return std::nullopt;
      }
      if (!first)
        first = std::move(*result);
    }
    if (finalParams)
      *finalParams = std::move(*params);
    return first;
  }

  /// The golden batch of `<stem>.golden.safetensors`.
  Data goldenData(const rt::SafeTensorsFile &golden) {
    Data data;
    const rt::SafeTensorInfo *info = golden.find("input");
    EXPECT_NE(info, nullptr);
    if (!info)
      return data;
    if (info->dtype == rt::SafeTensorsDType::F32) {
      std::vector<float> values;
      EXPECT_TRUE(golden.readF32("input", values).ok());
      data.input = HostTensor::fromF32(info->shape, values);
    } else {
      std::vector<int64_t> values;
      EXPECT_TRUE(golden.readI64("input", values).ok());
      data.input = HostTensor::fromI64(info->shape, values);
    }
    std::vector<int64_t> labels, shape;
    EXPECT_TRUE(golden.readI64("labels", labels, &shape).ok());
    data.labels = HostTensor::fromI64(shape, labels);
    return data;
  }

  /// Random tokens and next-token labels for the GPT preset.
  static Data gptData(uint32_t seed) {
    std::mt19937 gen(seed);
    std::vector<int64_t> input(64), labels(64);
    for (int64_t &v : input)
      v = int64_t(gen() % 16);
    for (int64_t &v : labels)
      v = int64_t(gen() % 16);
    return {HostTensor::fromI64({8, 8}, input),
            HostTensor::fromI64({8, 8}, labels)};
  }

  /// Compares `result` with PyTorch's loss and gradients; returns the worst
  /// gradient error.
  double compareGolden(const std::string &label,
                       const rt::SafeTensorsFile &golden,
                       const PipelineStepResult &result) {
    std::vector<float> loss;
    EXPECT_TRUE(golden.readF32("loss", loss).ok());
    double lossError = std::abs(result.loss - double(loss.at(0))) /
                       std::abs(double(loss.at(0)));
    EXPECT_LE(lossError, 1e-4)
        << label << " loss " << result.loss << " vs " << loss[0];
    double worst = 0;
    std::string worstName;
    size_t compared = 0;
    for (const rt::SafeTensorInfo &info : golden.tensors()) {
      if (info.name.rfind("grad.", 0) != 0)
        continue;
      std::string name = info.name.substr(5);
      auto it = result.gradients.find(name);
      if (it == result.gradients.end()) {
        ADD_FAILURE() << label << ": no gradient for parameter " << name;
        continue;
      }
      std::vector<float> want;
      std::vector<int64_t> shape;
      EXPECT_TRUE(golden.readF32(info.name, want, &shape).ok());
      EXPECT_EQ(it->second.getShape(), llvm::ArrayRef<int64_t>(shape))
          << label << " " << name;
      double err = relativeNormDiff(it->second.getF32(), want);
      EXPECT_LE(err, 1e-4) << label << " grad." << name;
      if (err >= worst) {
        worst = err;
        worstName = name;
      }
      ++compared;
    }
    EXPECT_EQ(compared, result.gradients.size())
        << label << ": the golden file and the pipeline differ in parameters";
    std::printf("[ golden   ] %-22s loss %.3g  %zu gradients, worst %.3g "
                "(%s)\n",
                label.c_str(), lossError, compared, worst, worstName.c_str());
    return worst;
  }

  /// The GPipe guarantee on `network`: for each M, every K of `ks` and
  /// both schedules, each with remat stage (recompute) and none (keep the
  /// activations), give bitwise the same loss and gradients as K=1 gpipe
  /// remat stage; and M = 2, 4 agree with M = 1 to 1e-5.
  void checkGuarantee(const std::string &label, ModuleOp network,
                      const Data &data, uint64_t seed,
                      const std::vector<int64_t> &ks) {
    std::optional<PipelineStepResult> single;
    for (int64_t m : {1, 2, 4}) {
      std::optional<PipelineStepResult> reference =
          train(network, 1, m, "gpipe", data, seed);
      ASSERT_TRUE(reference);
      int configs = 0;
      for (int64_t k : ks)
        for (const char *schedule : {"gpipe", "1f1b"})
          for (const char *remat : {"stage", "none"}) {
            std::optional<PipelineStepResult> result =
                train(network, k, m, schedule, data, seed, 1, nullptr, remat);
            ASSERT_TRUE(result);
            ASSERT_EQ(result->gradients.size(), reference->gradients.size());
            EXPECT_EQ(
                std::memcmp(&result->loss, &reference->loss, sizeof(double)), 0)
                << label << " K=" << k << " M=" << m << " " << schedule
                << " remat=" << remat << " loss " << result->loss << " vs "
                << reference->loss;
            for (auto &[name, grad] : reference->gradients) {
              auto it = result->gradients.find(name);
              ASSERT_NE(it, result->gradients.end()) << name;
              EXPECT_TRUE(bitwiseEqual(it->second, grad))
                  << label << " K=" << k << " M=" << m << " " << schedule
                  << " remat=" << remat << ": gradient of " << name
                  << " differs by "
                  << relativeNormDiff(it->second.getF32(), grad.getF32());
            }
            ++configs;
          }
      std::printf("[ bitwise  ] %-10s M=%lld: %d configurations (K in %s, "
                  "gpipe and 1f1b, remat stage and none) identical, loss "
                  "%.6f, %zu parameters\n",
                  label.c_str(), (long long)m, configs, listOf(ks).c_str(),
                  reference->loss, reference->gradients.size());
      if (m == 1) {
        single = std::move(reference);
        continue;
      }
      double worst = 0, lossDiff = std::abs(reference->loss - single->loss) /
                                   std::abs(single->loss);
      for (auto &[name, grad] : single->gradients)
        worst = std::max(
            worst, relativeNormDiff(reference->gradients.at(name).getF32(),
                                    grad.getF32()));
      EXPECT_LE(worst, 1e-5) << label << " M=" << m << " vs M=1";
      EXPECT_LE(lossDiff, 1e-6) << label << " M=" << m << " loss vs M=1";
      std::printf("[ vs M=1   ] %-10s M=%lld: worst gradient %.3g, loss %.3g\n",
                  label.c_str(), (long long)m, worst, lossDiff);
    }
  }

  /// Three SGD steps (lr 0.1, M = 2) leave bitwise equal parameters for
  /// every K of `ks` and both schedules, and lower the loss.
  void checkTraining(const std::string &label, ModuleOp network,
                     const Data &data, uint64_t seed,
                     const std::vector<int64_t> &ks) {
    std::optional<ParameterStore> reference;
    std::optional<PipelineStepResult> first =
        train(network, 1, 2, "gpipe", data, seed, 3, &reference);
    ASSERT_TRUE(first && reference);
    for (int64_t k : ks)
      for (const char *schedule : {"gpipe", "1f1b"}) {
        std::optional<ParameterStore> trained;
        ASSERT_TRUE(train(network, k, 2, schedule, data, seed, 3, &trained));
        ASSERT_EQ(trained->getNames(), reference->getNames());
        for (const std::string &name : reference->getNames())
          EXPECT_TRUE(
              bitwiseEqual(*trained->lookup(name), *reference->lookup(name)))
              << label << " K=" << k << " " << schedule << ": parameter "
              << name << " after 3 steps";
      }
    // The trained parameters give a lower loss.
    OwningOpRef<ModuleOp> module = compile(network, 1, 2, "gpipe");
    ASSERT_TRUE(module);
    FailureOr<PipelineStepResult> after =
        executePipeline(*module, data.input, data.labels, *reference);
    ASSERT_TRUE(succeeded(after));
    EXPECT_LT(after->loss, first->loss);
    std::printf("[ sgd      ] %-10s 3 steps lr 0.1: loss %.6f -> %.6f, "
                "parameters bitwise equal for K in %s, gpipe and 1f1b\n",
                label.c_str(), first->loss, after->loss, listOf(ks).c_str());
  }

  MLIRContext context{MLIRContext::Threading::DISABLED};
  std::optional<ScopedDiagnosticHandler> handler;
  std::vector<std::string> diagnostics;
  bool expectErrors = false;
};

//===----------------------------------------------------------------------===//
// The GPipe guarantee
//===----------------------------------------------------------------------===//

TEST_F(PipelineTest, MLPGradientsBitwiseIdenticalForEveryKAndSchedule) {
  rt::SafeTensorsFile golden;
  ASSERT_TRUE(
      rt::SafeTensorsFile::read(inputsDir() + "mlp.golden.safetensors", golden)
          .ok());
  OwningOpRef<ModuleOp> mlp = importModel("mlp");
  ASSERT_TRUE(mlp);
  // K = 5 is one layer per stage.
  checkGuarantee("mlp", *mlp, goldenData(golden), 0, {1, 2, 3, 4, 5});
}

TEST_F(PipelineTest, GPTPresetGradientsBitwiseIdenticalForEveryKAndSchedule) {
  OwningOpRef<ModuleOp> gpt = gptPreset();
  ASSERT_TRUE(gpt);
  // Seven layers: the embedding, four blocks, ln_f, the head.
  checkGuarantee("gpt-preset", *gpt, gptData(11), 1234, {1, 2, 3, 4, 7});
}

// The interpreter runs an nn.fused body op by op: the same gradients, to
// the bit, as the unfused program (E2E/fusion.test shows the compiled
// loops equal the unfused kernels).
TEST_F(PipelineTest, FusedLoopsInterpretBitwiseAsTheUnfusedOps) {
  rt::SafeTensorsFile golden;
  ASSERT_TRUE(
      rt::SafeTensorsFile::read(inputsDir() + "mlp.golden.safetensors", golden)
          .ok());
  OwningOpRef<ModuleOp> mlp = importModel("mlp");
  OwningOpRef<ModuleOp> gpt = gptPreset();
  ASSERT_TRUE(mlp && gpt);
  // The GPT's chain of elementwise ops is its attention's scale and mask,
  // which a fused attention takes in.
  fuseAttention = false;
  for (auto [network, data, seed] :
       {std::tuple<ModuleOp, Data, uint64_t>{*mlp, goldenData(golden), 0},
        {*gpt, gptData(11), 1234}}) {
    OwningOpRef<ModuleOp> fusedModule = compile(network, 2, 2, "1f1b", "none");
    ASSERT_TRUE(fusedModule);
    bool anyFused = false;
    fusedModule->walk([&](nn::FusedOp) { anyFused = true; });
    EXPECT_TRUE(anyFused);
    std::optional<PipelineStepResult> fused =
        train(network, 2, 2, "1f1b", data, seed, 1, nullptr, "none", true);
    std::optional<PipelineStepResult> plain =
        train(network, 2, 2, "1f1b", data, seed, 1, nullptr, "none", false);
    ASSERT_TRUE(fused && plain);
    EXPECT_EQ(std::memcmp(&fused->loss, &plain->loss, sizeof(double)), 0);
    for (auto &[name, grad] : plain->gradients) {
      auto it = fused->gradients.find(name);
      ASSERT_NE(it, fused->gradients.end()) << name;
      EXPECT_TRUE(bitwiseEqual(it->second, grad)) << "gradient of " << name;
    }
  }
}

TEST_F(PipelineTest, MLPParametersBitwiseEqualAfterThreeSGDSteps) {
  rt::SafeTensorsFile golden;
  ASSERT_TRUE(
      rt::SafeTensorsFile::read(inputsDir() + "mlp.golden.safetensors", golden)
          .ok());
  OwningOpRef<ModuleOp> mlp = importModel("mlp");
  ASSERT_TRUE(mlp);
  checkTraining("mlp", *mlp, goldenData(golden), 0, {1, 2, 3, 4, 5});
}

TEST_F(PipelineTest, GPTPresetParametersBitwiseEqualAfterThreeSGDSteps) {
  OwningOpRef<ModuleOp> gpt = gptPreset();
  ASSERT_TRUE(gpt);
  checkTraining("gpt-preset", *gpt, gptData(12), 1234, {1, 2, 3, 4, 7});
}

//===----------------------------------------------------------------------===//
// Against PyTorch
//===----------------------------------------------------------------------===//

TEST_F(PipelineTest, MLPMatchesPyTorchGradients) {
  rt::SafeTensorsFile golden;
  ASSERT_TRUE(
      rt::SafeTensorsFile::read(inputsDir() + "mlp.golden.safetensors", golden)
          .ok());
  OwningOpRef<ModuleOp> mlp = importModel("mlp");
  ASSERT_TRUE(mlp);
  std::optional<PipelineStepResult> result =
      train(*mlp, 2, 4, "gpipe", goldenData(golden), 0);
  ASSERT_TRUE(result);
  compareGolden("mlp K=2 M=4", golden, *result);
}

TEST_F(PipelineTest, GPTExportsMatchPyTorchGradients) {
  for (const char *stem : {"gpt", "gpt_mha"}) {
    rt::SafeTensorsFile golden;
    ASSERT_TRUE(rt::SafeTensorsFile::read(
                    inputsDir() + stem + ".golden.safetensors", golden)
                    .ok());
    OwningOpRef<ModuleOp> model = importModel(stem);
    ASSERT_TRUE(model);
    Data data = goldenData(golden);
    for (int64_t m : {1, 2})
      for (int64_t k : {1, 2, 4}) {
        const char *schedule = k == 2 ? "1f1b" : "gpipe";
        std::optional<PipelineStepResult> result =
            train(*model, k, m, schedule, data, 0);
        ASSERT_TRUE(result);
        compareGolden(std::string(stem) + " K=" + std::to_string(k) +
                          " M=" + std::to_string(m) + " " + schedule,
                      golden, *result);
      }
  }
}

//===----------------------------------------------------------------------===//
// Executor errors
//===----------------------------------------------------------------------===//

/// A two-stage pipeline written by hand; `programs` replaces its body.
std::string handWrittenPipeline(const std::string &programs) {
  return R"mlir(
    nn.parameter @w0 : tensor<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
    nn.parameter @w1 : tensor<2x2xf32> = dense<[[0.5, -1.0], [1.5, 2.0]]> : tensor<2x2xf32>
    func.func @s0_fwd(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
      %w = nn.param @w0 : tensor<2x2xf32>
      %y = nn.matmul %x, %w : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
      return %y : tensor<1x2xf32>
    }
    func.func @s0_bwd(%x: tensor<1x2xf32>, %dy: tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<2x2xf32>) attributes {nn.input_grads = array<i64: 0>, nn.param_grads = [@w0]} {
      %w = nn.param @w0 : tensor<2x2xf32>
      %dx = nn.linear %dy, %w {transpose_weight = true} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
      %dw = nn.gemm %x, %dy {trans_a = true} : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<2x2xf32>
      return %dx, %dw : tensor<1x2xf32>, tensor<2x2xf32>
    }
    gpipe.stage @s0 index 0 : tensor<1x2xf32> -> tensor<1x2xf32> forward @s0_fwd backward @s0_bwd
    func.func @s1_fwd(%x: tensor<1x2xf32>, %t: tensor<1x2xf32>) -> tensor<f32> {
      %w = nn.param @w1 : tensor<2x2xf32>
      %y = nn.matmul %x, %w : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
      %l = nn.mse %y, %t : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    func.func @s1_bwd(%x: tensor<1x2xf32>, %t: tensor<1x2xf32>, %dl: tensor<f32>) -> (tensor<1x2xf32>, tensor<1x2xf32>, tensor<2x2xf32>) attributes {nn.input_grads = array<i64: 0, 1>, nn.param_grads = [@w1]} {
      %w = nn.param @w1 : tensor<2x2xf32>
      %y = nn.matmul %x, %w : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
      %d = nn.sub %y, %t : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
      %dy = nn.mul %d, %dl : (tensor<1x2xf32>, tensor<f32>) -> tensor<1x2xf32>
      %dx = nn.linear %dy, %w {transpose_weight = true} : (tensor<1x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
      %dw = nn.gemm %x, %dy {trans_a = true} : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<2x2xf32>
      %dt = nn.neg %dy : tensor<1x2xf32>
      return %dx, %dt, %dw : tensor<1x2xf32>, tensor<1x2xf32>, tensor<2x2xf32>
    }
    gpipe.stage @s1 index 1 : tensor<1x2xf32> -> tensor<f32> forward @s1_fwd backward @s1_bwd
    gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule custom remat stage {
)mlir" + programs +
         "    }\n";
}

/// The hand-written pipeline with a valid schedule runs: its gradients are
/// those of the two micro-batches summed (the backward here is written
/// without the 1/M scale, so each micro-batch contributes its full
/// gradient).
TEST_F(PipelineTest, HandWrittenPipelineRunsAndHandsOverInOrder) {
  std::string source = handWrittenPipeline(R"mlir(
      gpipe.program rank 0 {
        gpipe.forward @s0 mb 0
        gpipe.send @s0 mb 0 forward to 1 : tensor<1x2xf32>
        gpipe.forward @s0 mb 1
        gpipe.send @s0 mb 1 forward to 1 : tensor<1x2xf32>
        gpipe.recv @s0 mb 0 backward from 1 : tensor<1x2xf32>
        gpipe.backward @s0 mb 0
        gpipe.recv @s0 mb 1 backward from 1 : tensor<1x2xf32>
        gpipe.backward @s0 mb 1
        gpipe.step @s0
      }
      gpipe.program rank 1 {
        gpipe.recv @s1 mb 0 forward from 0 : tensor<1x2xf32>
        gpipe.forward @s1 mb 0
        gpipe.backward @s1 mb 0
        gpipe.send @s1 mb 0 backward to 0 : tensor<1x2xf32>
        gpipe.recv @s1 mb 1 forward from 0 : tensor<1x2xf32>
        gpipe.forward @s1 mb 1
        gpipe.backward @s1 mb 1
        gpipe.send @s1 mb 1 backward to 0 : tensor<1x2xf32>
        gpipe.step @s1
      }
)mlir");
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, &context, "pipeline.mlir");
  ASSERT_TRUE(module);
  FailureOr<ParameterStore> params = ParameterStore::fromModule(*module);
  ASSERT_TRUE(succeeded(params));
  HostTensor input = HostTensor::fromF32({2, 2}, {1, 0, 0, 1});
  HostTensor target = HostTensor::fromF32({2, 2}, {0, 0, 0, 0});
  PipelineExecutorOptions options;
  options.sgdLearningRate = 0.5f;
  FailureOr<PipelineStepResult> result =
      executePipeline(*module, input, target, *params, options);
  ASSERT_TRUE(succeeded(result));
  // mb 0: x = [1, 0] -> h = [1, 2] -> y = h w1 = [3.5, 3], loss = (3.5^2 +
  // 3^2) / 2 = 10.625. mb 1: x = [0, 1] -> h = [3, 4] -> y = [7.5, 5],
  // loss = (56.25 + 25) / 2 = 40.625.
  ASSERT_EQ(result->microbatchLosses.size(), 2u);
  EXPECT_EQ(result->microbatchLosses[0], 10.625f);
  EXPECT_EQ(result->microbatchLosses[1], 40.625f);
  EXPECT_EQ(result->loss, (10.625 + 40.625) / 2);
  // dw1 = sum over mb of h^T (y - t) (the hand-written backward drops the
  // 2/N of the mse and the 1/M): [1,2]^T [3.5,3] + [3,4]^T [7.5,5].
  std::vector<float> dw1(result->gradients.at("w1").getF32().begin(),
                         result->gradients.at("w1").getF32().end());
  EXPECT_EQ(dw1, (std::vector<float>{3.5f + 22.5f, 3.0f + 15.0f, 7.0f + 30.0f,
                                     6.0f + 20.0f}));
  // The step applied w1 - 0.5 * dw1.
  std::vector<float> w1(params->lookup("w1")->getF32().begin(),
                        params->lookup("w1")->getF32().end());
  EXPECT_EQ(w1, (std::vector<float>{0.5f - 13.0f, -1.0f - 9.0f, 1.5f - 18.5f,
                                    2.0f - 13.0f}));
  // Every action ran once, rank 0 first as far as it could go.
  EXPECT_EQ(result->trace.size(), 18u);
  EXPECT_EQ(result->trace.front(), (std::pair<int64_t, int64_t>(0, 0)));
}

TEST_F(PipelineTest, BackwardsOutOfMicroBatchOrderAreRejected) {
  std::string source = handWrittenPipeline(R"mlir(
      gpipe.program rank 0 {
        gpipe.forward @s0 mb 0
        gpipe.send @s0 mb 0 forward to 1 : tensor<1x2xf32>
        gpipe.forward @s0 mb 1
        gpipe.send @s0 mb 1 forward to 1 : tensor<1x2xf32>
        gpipe.recv @s0 mb 1 backward from 1 : tensor<1x2xf32>
        gpipe.backward @s0 mb 1
        gpipe.recv @s0 mb 0 backward from 1 : tensor<1x2xf32>
        gpipe.backward @s0 mb 0
        gpipe.step @s0
      }
      gpipe.program rank 1 {
        gpipe.recv @s1 mb 0 forward from 0 : tensor<1x2xf32>
        gpipe.forward @s1 mb 0
        gpipe.recv @s1 mb 1 forward from 0 : tensor<1x2xf32>
        gpipe.forward @s1 mb 1
        gpipe.backward @s1 mb 1
        gpipe.send @s1 mb 1 backward to 0 : tensor<1x2xf32>
        gpipe.backward @s1 mb 0
        gpipe.send @s1 mb 0 backward to 0 : tensor<1x2xf32>
        gpipe.step @s1
      }
)mlir");
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, &context, "pipeline.mlir");
  ASSERT_TRUE(module);
  FailureOr<ParameterStore> params = ParameterStore::fromModule(*module);
  ASSERT_TRUE(succeeded(params));
  expectErrors = true;
  FailureOr<PipelineStepResult> result =
      executePipeline(*module, HostTensor::fromF32({2, 2}, {1, 0, 0, 1}),
                      HostTensor::fromF32({2, 2}, {}), *params);
  EXPECT_TRUE(failed(result));
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_NE(diagnostics.back().find(
                "rank 1 action 4 (gpipe.backward @s1 mb 1): parameter "
                "gradients of micro-batch 1 arrive when micro-batch 0 is due"),
            std::string::npos)
      << diagnostics.back();
}

TEST_F(PipelineTest, DeadlockAndBadBatchAreReported) {
  // Both ranks receive first.
  std::string source = handWrittenPipeline(R"mlir(
      gpipe.program rank 0 {
        gpipe.recv @s0 mb 0 backward from 1 : tensor<1x2xf32>
        gpipe.forward @s0 mb 0
      }
      gpipe.program rank 1 {
        gpipe.recv @s1 mb 0 forward from 0 : tensor<1x2xf32>
      }
)mlir");
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, &context, "pipeline.mlir");
  ASSERT_TRUE(module);
  FailureOr<ParameterStore> params = ParameterStore::fromModule(*module);
  ASSERT_TRUE(succeeded(params));
  expectErrors = true;
  EXPECT_TRUE(
      failed(executePipeline(*module, HostTensor::fromF32({2, 2}, {1, 0, 0, 1}),
                             HostTensor::fromF32({2, 2}, {}), *params)));
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_NE(diagnostics.back().find("pipeline @train is stuck: no rank can "
                                    "run its next action"),
            std::string::npos)
      << diagnostics.back();
  EXPECT_NE(diagnostics.back().find("rank 0 waits at action 0 (gpipe.recv "
                                    "@s0 mb 0 backward from 1"),
            std::string::npos)
      << diagnostics.back();

  diagnostics.clear();
  EXPECT_TRUE(
      failed(executePipeline(*module, HostTensor::fromF32({3, 2}, {}),
                             HostTensor::fromF32({3, 2}, {}), *params)));
  ASSERT_FALSE(diagnostics.empty());
  EXPECT_NE(diagnostics.back().find("input tensor<3x2xf32> does not split "
                                    "into 2 micro-batches of "
                                    "'tensor<1x2xf32>'"),
            std::string::npos)
      << diagnostics.back();
}

} // namespace
