//===- GoldenTest.cpp - Imported ONNX models against PyTorch ----*- C++ -*-===//
//
// End-to-end forward checks of the frontend and the nn rewrites: each ONNX
// test model is imported, canonicalized and grouped into layers (the default
// pipeline of gpipe-import), interpreted on the golden batch, and its logits
// compared with PyTorch's (max |diff| / max |golden| <= 1e-5); the runtime's
// cross-entropy kernel on those logits must give PyTorch's loss (1e-5
// relative). The raw import (no fusion, no layers) must give the same logits
// as the fused one.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"
#include "gpipe/Frontend/ONNXImporter.h"
#include "gpipe/Interpreter/Interpreter.h"
#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/SafeTensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

using namespace mlir;
using namespace mlir::gpipe;
namespace rt = ::gpipe::rt;

namespace {

std::string inputsDir() {
  return std::string(GPIPE_SOURCE_DIR) + "/test/Frontend/ONNX/Inputs/";
}

/// max |a - b| / max |b|.
double relativeMaxDiff(llvm::ArrayRef<float> a, llvm::ArrayRef<float> b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

class GoldenTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registry.insert<nn::NNDialect, func::FuncDialect>();
    registerKernelCallExternalModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    // Any diagnostic fails the test with its text.
    handler.emplace(&context, [](Diagnostic &diag) {
      ADD_FAILURE() << diag.str();
      return success();
    });
  }

  /// Imports `<model>.onnx`; with `fused`, runs the default pipeline
  /// (canonicalize, then form layers at scope granularity).
  OwningOpRef<ModuleOp> import(const std::string &model, bool fused) {
    OwningOpRef<ModuleOp> module =
        importONNXFile(&context, inputsDir() + model + ".onnx");
    if (!module || !fused)
      return module;
    PassManager pm(&context);
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(*module)))
      return nullptr;
    for (auto func : module->getOps<func::FuncOp>())
      if (failed(nn::formLayers(func, nn::LayerGranularity::Scope)))
        return nullptr;
    return module;
  }

  /// Interprets the module's `forward` on the golden input.
  std::vector<HostTensor> run(ModuleOp module, const HostTensor &input) {
    auto func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func) {
      ADD_FAILURE() << "no @forward";
      return {};
    }
    FailureOr<ParameterStore> params = ParameterStore::fromModule(module);
    if (failed(params))
      return {};
    FailureOr<std::vector<HostTensor>> results =
        interpretFunction(func, {input}, *params);
    if (failed(results))
      return {};
    return *results;
  }

  MLIRContext context{MLIRContext::Threading::DISABLED};
  std::optional<ScopedDiagnosticHandler> handler;
};

TEST_P(GoldenTest, LogitsAndLossMatchPyTorch) {
  std::string model = GetParam();
  rt::SafeTensorsFile golden;
  rt::Status read = rt::SafeTensorsFile::read(
      inputsDir() + model + ".golden.safetensors", golden);
  ASSERT_TRUE(read.ok()) << read.message();

  // The golden batch: f32 features (mlp) or i64 token ids (gpt).
  const rt::SafeTensorInfo *inputInfo = golden.find("input");
  ASSERT_NE(inputInfo, nullptr);
  HostTensor input;
  if (inputInfo->dtype == rt::SafeTensorsDType::F32) {
    std::vector<float> values;
    ASSERT_TRUE(golden.readF32("input", values).ok());
    input = HostTensor::fromF32(inputInfo->shape, values);
  } else {
    std::vector<int64_t> values;
    ASSERT_TRUE(golden.readI64("input", values).ok());
    input = HostTensor::fromI64(inputInfo->shape, values);
  }
  std::vector<float> goldenLogits, goldenLoss;
  std::vector<int64_t> labels, logitsShape;
  ASSERT_TRUE(golden.readF32("logits", goldenLogits, &logitsShape).ok());
  ASSERT_TRUE(golden.readF32("loss", goldenLoss).ok());
  ASSERT_TRUE(golden.readI64("labels", labels).ok());

  OwningOpRef<ModuleOp> fused = import(model, /*fused=*/true);
  ASSERT_TRUE(fused);
  // The default pipeline did its work: layers, and fused linear layers.
  auto forward = fused->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(forward);
  EXPECT_FALSE(forward.getOps<nn::LayerOp>().empty());
  bool sawLinear = false;
  forward.walk([&](nn::LinearOp) { sawLinear = true; });
  EXPECT_TRUE(sawLinear);

  std::vector<HostTensor> fusedResults = run(*fused, input);
  ASSERT_EQ(fusedResults.size(), 1u);
  const HostTensor &logits = fusedResults[0];
  ASSERT_EQ(logits.getShape(), llvm::ArrayRef<int64_t>(logitsShape));
  double logitsError = relativeMaxDiff(logits.getF32(), goldenLogits);
  EXPECT_LE(logitsError, 1e-5) << model << " logits";

  float loss = NAN;
  ASSERT_EQ(gpipe_rt_cpu_cross_entropy_f32(
                logits.getF32().data(), logits.getShape().data(),
                int32_t(logits.getRank()), GPIPE_RT_I64, labels.data(), &loss),
            GPIPE_RT_SUCCESS)
      << gpipe_rt_last_error();
  double lossError =
      std::abs(double(loss) - goldenLoss[0]) / std::abs(double(goldenLoss[0]));
  EXPECT_LE(lossError, 1e-5)
      << model << " loss " << loss << " vs " << goldenLoss[0];

  OwningOpRef<ModuleOp> raw = import(model, /*fused=*/false);
  ASSERT_TRUE(raw);
  std::vector<HostTensor> rawResults = run(*raw, input);
  ASSERT_EQ(rawResults.size(), 1u);
  ASSERT_EQ(rawResults[0].getShape(), logits.getShape());
  double rawVsFused = relativeMaxDiff(rawResults[0].getF32(), logits.getF32());
  double rawError = relativeMaxDiff(rawResults[0].getF32(), goldenLogits);
  EXPECT_LE(rawVsFused, 1e-5) << model << " raw vs fused logits";
  EXPECT_LE(rawError, 1e-5) << model << " raw logits";

  // The achieved errors, for the record.
  std::printf("[ golden   ] %-8s logits %.3g  loss %.3g  raw %.3g  "
              "raw-vs-fused %.3g\n",
              model.c_str(), logitsError, lossError, rawError, rawVsFused);
  RecordProperty("logits_error", std::to_string(logitsError));
  RecordProperty("loss_error", std::to_string(lossError));
  RecordProperty("raw_vs_fused", std::to_string(rawVsFused));
}

INSTANTIATE_TEST_SUITE_P(ONNXModels, GoldenTest,
                         ::testing::Values("mlp", "gpt", "gpt_mha"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                           return std::string(i.param);
                         });

} // namespace
