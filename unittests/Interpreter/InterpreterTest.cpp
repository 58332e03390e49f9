//===- InterpreterTest.cpp - The nn interpreter on small IR -----*- C++ -*-===//
//
// The interpreter on hand-written functions with hand-computed results: layer
// bodies, parameters (inline, dense_resource and seeded init rules),
// constants, masking ops, shape ops, contractions, normalization, losses and
// the gradient ops autodiff emits; and the located errors it reports for
// unsupported ops and element types, bad arguments, missing parameters and
// out-of-range indices and labels.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Interpreter/Interpreter.h"
#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Runtime/CPUKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::gpipe;

namespace {

class InterpreterTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registry.insert<nn::NNDialect, func::FuncDialect>();
    registerKernelCallExternalModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    handler.emplace(&context, [this](Diagnostic &diag) {
      std::string text;
      llvm::raw_string_ostream os(text);
      if (auto loc = dyn_cast<FileLineColLoc>(diag.getLocation()))
        os << loc.getFilename().getValue() << ":" << loc.getLine() << ":"
           << loc.getColumn();
      else
        os << diag.getLocation();
      os << ": " << diag;
      for (const Diagnostic &note : diag.getNotes())
        os << "\n  note: " << note;
      diagnostics.push_back(text);
      return success();
    });
  }

  OwningOpRef<ModuleOp> parse(llvm::StringRef source) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context, "test.mlir");
    EXPECT_TRUE(module) << (diagnostics.empty() ? "" : diagnostics.back());
    return module;
  }

  /// Runs @`name` of `module` with parameters from the module (seed 0).
  FailureOr<std::vector<HostTensor>> run(ModuleOp module, llvm::StringRef name,
                                         llvm::ArrayRef<HostTensor> args) {
    FailureOr<ParameterStore> params = ParameterStore::fromModule(module);
    if (failed(params))
      return failure();
    return interpretFunction(module.lookupSymbol<func::FuncOp>(name), args,
                             *params);
  }

  std::string lastDiagnostic() const {
    return diagnostics.empty() ? "" : diagnostics.back();
  }

  MLIRContext context{MLIRContext::Threading::DISABLED};
  std::optional<ScopedDiagnosticHandler> handler;
  std::vector<std::string> diagnostics;
};

std::vector<float> toVector(llvm::ArrayRef<float> a) {
  return std::vector<float>(a.begin(), a.end());
}

TEST_F(InterpreterTest, LayersParametersAndConstants) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    nn.parameter @table : tensor<4x2xf32> = dense<[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]> : tensor<4x2xf32>
    nn.parameter @scale : tensor<2xf32> init ones
    func.func @forward(%ids: tensor<3xi64>) -> tensor<3x2xf32> {
      %0 = nn.layer "emb"(%ids) : (tensor<3xi64>) -> tensor<3x2xf32> {
      ^bb0(%a: tensor<3xi64>):
        %t = nn.param @table : tensor<4x2xf32>
        %g = nn.gather %t, %a {axis = 0} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
        nn.yield %g : tensor<3x2xf32>
      }
      %1 = nn.layer "scale"(%0) : (tensor<3x2xf32>) -> tensor<3x2xf32> {
      ^bb0(%a: tensor<3x2xf32>):
        %s = nn.param @scale : tensor<2xf32>
        %c = nn.constant dense<2.0> : tensor<f32>
        %m = nn.mul %a, %s : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
        %r = nn.mul %m, %c : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
        nn.yield %r : tensor<3x2xf32>
      }
      return %1 : tensor<3x2xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  auto results = run(*module, "forward", {HostTensor::fromI64({3}, {3, 0, 1})});
  ASSERT_TRUE(succeeded(results)) << lastDiagnostic();
  ASSERT_EQ(results->size(), 1u);
  EXPECT_EQ((*results)[0].getShape(), llvm::ArrayRef<int64_t>({3, 2}));
  EXPECT_EQ(toVector((*results)[0].getF32()),
            (std::vector<float>{12, 14, 0, 2, 4, 6}));
}

TEST_F(InterpreterTest, MaskingOps) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%x: tensor<2x3xf32>, %m: tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>) {
      %z = nn.constant dense<0> : tensor<i64>
      %eq = nn.equal %m, %z : (tensor<2x3xi64>, tensor<i64>) -> tensor<2x3xi1>
      %keep = nn.not %eq : tensor<2x3xi1>
      %ninf = nn.constant dense<0xFF800000> : tensor<f32>
      %w = nn.where %keep, %x, %ninf : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
      %p = nn.softmax %w {axis = 1} : tensor<2x3xf32> -> tensor<2x3xf32>
      %f = nn.cast %keep : tensor<2x3xi1> -> tensor<2x3xf32>
      return %p, %keep, %f : tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  auto results = run(*module, "f",
                     {HostTensor::fromF32({2, 3}, {1, 2, 3, 0, 0, 5}),
                      HostTensor::fromI64({2, 3}, {1, 0, 1, 1, 1, 0})});
  ASSERT_TRUE(succeeded(results)) << lastDiagnostic();
  ASSERT_EQ(results->size(), 3u);
  std::vector<float> p = toVector((*results)[0].getF32());
  double e = std::exp(2.0);
  EXPECT_NEAR(p[0], 1 / (1 + e), 1e-7);
  EXPECT_EQ(p[1], 0.0f);
  EXPECT_NEAR(p[2], e / (1 + e), 1e-7);
  EXPECT_EQ(p[3], 0.5f);
  EXPECT_EQ(p[5], 0.0f);
  llvm::ArrayRef<uint8_t> keep = (*results)[1].getBool();
  EXPECT_EQ(std::vector<uint8_t>(keep.begin(), keep.end()),
            (std::vector<uint8_t>{1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(toVector((*results)[2].getF32()),
            (std::vector<float>{1, 0, 1, 1, 1, 0}));
}

TEST_F(InterpreterTest, ShapeOps) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%x: tensor<2x6xf32>) -> (tensor<6x2xf32>, tensor<1x2x6xf32>, tensor<2x6xf32>, tensor<3x2xf32>) {
      %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<2x6xf32> -> tensor<6x2xf32>
      %u = nn.unsqueeze %x {axes = array<i64: 0>} : tensor<2x6xf32> -> tensor<1x2x6xf32>
      %a, %b, %c = nn.split %x {axis = 1, sizes = array<i64: 2, 1, 3>} : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x1xf32>, tensor<2x3xf32>
      %cat = nn.concat %c, %b, %a {axis = 1} : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
      %s = nn.slice %x {offsets = array<i64: 0, 1>, sizes = array<i64: 2, 3>, strides = array<i64: 1, 2>} : tensor<2x6xf32> -> tensor<2x3xf32>
      %r = nn.reshape %s : tensor<2x3xf32> -> tensor<3x2xf32>
      return %t, %u, %cat, %r : tensor<6x2xf32>, tensor<1x2x6xf32>, tensor<2x6xf32>, tensor<3x2xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  auto results = run(
      *module, "f",
      {HostTensor::fromF32({2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})});
  ASSERT_TRUE(succeeded(results)) << lastDiagnostic();
  ASSERT_EQ(results->size(), 4u);
  EXPECT_EQ(toVector((*results)[0].getF32()),
            (std::vector<float>{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}));
  EXPECT_EQ((*results)[1].getShape(), llvm::ArrayRef<int64_t>({1, 2, 6}));
  EXPECT_EQ(toVector((*results)[2].getF32()),
            (std::vector<float>{3, 4, 5, 2, 0, 1, 9, 10, 11, 8, 6, 7}));
  EXPECT_EQ(toVector((*results)[3].getF32()),
            (std::vector<float>{1, 3, 5, 7, 9, 11}));
}

TEST_F(InterpreterTest, ContractionsAndNormalization) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%a: tensor<2x2xf32>, %b: tensor<3x2xf32>, %c: tensor<3xf32>, %bt: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
      %g = nn.gemm %a, %b, %c {trans_b = true} : (tensor<2x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %l = nn.linear %a, %b, %c {transpose_weight = true} : (tensor<2x2xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %m = nn.matmul %a, %bt : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %ones = nn.constant dense<1.0> : tensor<3xf32>
      %n = nn.layer_norm %m, %ones {axis = 1, epsilon = 0.0 : f32} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      return %g, %l, %m, %n : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  auto results = run(*module, "f",
                     {HostTensor::fromF32({2, 2}, {1, 2, 3, 4}),
                      HostTensor::fromF32({3, 2}, {1, 0, 0, 1, 1, 1}),
                      HostTensor::fromF32({3}, {1, 2, 3}),
                      HostTensor::fromF32({2, 3}, {1, 0, 1, 0, 1, 1})});
  ASSERT_TRUE(succeeded(results)) << lastDiagnostic();
  ASSERT_EQ(results->size(), 4u);
  std::vector<float> withBias{2, 4, 6, 4, 6, 10};
  EXPECT_EQ(toVector((*results)[0].getF32()), withBias);
  EXPECT_EQ(toVector((*results)[1].getF32()), withBias);
  EXPECT_EQ(toVector((*results)[2].getF32()),
            (std::vector<float>{1, 2, 3, 3, 4, 7}));
  std::vector<float> n = toVector((*results)[3].getF32());
  EXPECT_NEAR(n[0], -std::sqrt(1.5), 1e-6);
  EXPECT_NEAR(n[1], 0.0, 1e-6);
  EXPECT_NEAR(n[2], std::sqrt(1.5), 1e-6);
}

TEST_F(InterpreterTest, Losses) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @f(%x: tensor<2x3xf32>, %labels: tensor<2xi64>, %t: tensor<2x3xf32>) -> (tensor<f32>, tensor<f32>) {
      %ce = nn.cross_entropy %x, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
      %mse = nn.mse %x, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
      return %ce, %mse : tensor<f32>, tensor<f32>
    }
  )mlir");
  ASSERT_TRUE(module);
  std::vector<float> x{1, 2, 3, 0, 0, 0};
  auto results =
      run(*module, "f",
          {HostTensor::fromF32({2, 3}, x), HostTensor::fromI64({2}, {2, 0}),
           HostTensor::fromF32({2, 3}, {1, 2, 3, 1, 1, 1})});
  ASSERT_TRUE(succeeded(results)) << lastDiagnostic();
  double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  double want = ((lse0 - 3) + std::log(3.0)) / 2;
  EXPECT_TRUE((*results)[0].getShape().empty());
  EXPECT_NEAR((*results)[0].getF32()[0], want, 1e-6);
  EXPECT_NEAR((*results)[1].getF32()[0], 0.5, 1e-7);
}

TEST_F(InterpreterTest, DenseResourceParameters) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    nn.parameter @w : tensor<2xf32> = dense_resource<blob1> : tensor<2xf32>
    func.func @f() -> tensor<2xf32> {
      %w = nn.param @w : tensor<2xf32>
      return %w : tensor<2xf32>
    }
    {-#
      dialect_resources: {
        builtin: {
          blob1: "0x040000000000803F00000040"
        }
      }
    #-}
  )mlir");
  ASSERT_TRUE(module);
  auto results = run(*module, "f", {});
  ASSERT_TRUE(succeeded(results)) << lastDiagnostic();
  EXPECT_EQ(toVector((*results)[0].getF32()), (std::vector<float>{1.0f, 2.0f}));
}

TEST_F(InterpreterTest, SeededInitRules) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    nn.parameter @w : tensor<64x32xf32> init normal(2.0e-02)
    nn.parameter @u : tensor<16xf32> init uniform(0.25)
    nn.parameter @z : tensor<4xf32> init zeros
  )mlir");
  ASSERT_TRUE(module);
  FailureOr<ParameterStore> a = ParameterStore::fromModule(*module, 1);
  FailureOr<ParameterStore> b = ParameterStore::fromModule(*module, 1);
  FailureOr<ParameterStore> c = ParameterStore::fromModule(*module, 2);
  ASSERT_TRUE(succeeded(a) && succeeded(b) && succeeded(c));
  EXPECT_EQ(a->getNames(), (std::vector<std::string>{"u", "w", "z"}));
  std::vector<float> w = toVector(a->lookup("w")->getF32());
  EXPECT_EQ(w, toVector(b->lookup("w")->getF32()));
  EXPECT_NE(w, toVector(c->lookup("w")->getF32()));
  // The runtime draws the same values from the parameter's name.
  std::vector<float> expected(w.size());
  ASSERT_EQ(gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, expected.data(),
                                       int64_t(expected.size()), 0.02, 1,
                                       gpipe_rt_hash_name("w", 1)),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(w, expected);
  for (float v : a->lookup("u")->getF32()) {
    EXPECT_GE(v, -0.25f);
    EXPECT_LT(v, 0.25f);
  }
  EXPECT_EQ(toVector(a->lookup("z")->getF32()), std::vector<float>(4, 0.0f));
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, UnsupportedOpIsReportedAtItsLocation) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func private @g(tensor<2xf32>) -> tensor<2xf32>
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = func.call @g(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
  )mlir");
  ASSERT_TRUE(module);
  EXPECT_TRUE(failed(run(*module, "f", {HostTensor::fromF32({2}, {1, 2})})));
  EXPECT_EQ(lastDiagnostic(), "test.mlir:4:8: 'func.call' op is not "
                              "supported by the nn interpreter");
}

TEST_F(InterpreterTest, UnsupportedElementTypeIsReported) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @f(%x: tensor<2xf64>) -> tensor<2xf64> {
  %0 = nn.add %x, %x : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  return %0 : tensor<2xf64>
}
  )mlir");
  ASSERT_TRUE(module);
  HostTensor x(GPIPE_RT_F64, {2});
  EXPECT_TRUE(failed(run(*module, "f", {x})));
  EXPECT_EQ(lastDiagnostic(), "test.mlir:3:8: 'nn.add' op element type 'f64' "
                              "is not supported by the nn interpreter "
                              "(supported: f32)");
}

TEST_F(InterpreterTest, BadIndexAndLabelAreReportedAtTheOp) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
nn.parameter @table : tensor<4x2xf32> init ones
func.func @g(%ids: tensor<3xi64>) -> tensor<3x2xf32> {
  %t = nn.param @table : tensor<4x2xf32>
  %0 = nn.gather %t, %ids {axis = 0} : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
func.func @ce(%x: tensor<2x3xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
  %0 = nn.cross_entropy %x, %labels : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}
  )mlir");
  ASSERT_TRUE(module);
  EXPECT_TRUE(failed(run(*module, "g", {HostTensor::fromI64({3}, {0, 9, 1})})));
  EXPECT_EQ(lastDiagnostic(),
            "test.mlir:5:8: 'nn.gather' op failed in the runtime kernel: "
            "gather: index 9 at position [1] of indices [3] is out of range "
            "[0, 4) for axis 0 of data [4, 2]");
  EXPECT_TRUE(failed(run(
      *module, "ce",
      {HostTensor(GPIPE_RT_F32, {2, 3}), HostTensor::fromI64({2}, {1, 3})})));
  EXPECT_EQ(lastDiagnostic(),
            "test.mlir:9:8: 'nn.cross_entropy' op failed in the runtime "
            "kernel: cross_entropy: label 3 at position [1] is out of range "
            "[0, 3)");
}

TEST_F(InterpreterTest, ArgumentsAndParametersAreChecked) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
nn.parameter @w : tensor<2xf32> init ones
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %w = nn.param @w : tensor<2xf32>
  %0 = nn.add %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
  )mlir");
  ASSERT_TRUE(module);
  auto f = module->lookupSymbol<func::FuncOp>("f");
  FailureOr<ParameterStore> params = ParameterStore::fromModule(*module);
  ASSERT_TRUE(succeeded(params));
  EXPECT_TRUE(failed(
      interpretFunction(f, {HostTensor::fromI64({2}, {1, 2})}, *params)));
  EXPECT_EQ(lastDiagnostic(), "test.mlir:3:1: @f argument 0 has type "
                              "'tensor<2xi64>' but the function takes "
                              "'tensor<2xf32>'");
  EXPECT_TRUE(failed(interpretFunction(f, {}, *params)));
  EXPECT_EQ(lastDiagnostic(), "test.mlir:3:1: @f takes 1 arguments, got 0");

  ParameterStore empty;
  EXPECT_TRUE(
      failed(interpretFunction(f, {HostTensor::fromF32({2}, {1, 2})}, empty)));
  EXPECT_EQ(lastDiagnostic(), "test.mlir:4:8: 'nn.param' op reads parameter "
                              "@w, which the parameter store lacks");

  ParameterStore wrong;
  wrong.set("w", HostTensor::fromF32({3}, {1, 2, 3}));
  EXPECT_TRUE(
      failed(interpretFunction(f, {HostTensor::fromF32({2}, {1, 2})}, wrong)));
  EXPECT_EQ(lastDiagnostic(),
            "test.mlir:4:8: 'nn.param' op reads 'tensor<2xf32>' but "
            "parameter @w holds 'tensor<3xf32>'");
}

TEST_F(InterpreterTest, GradientOps) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @f(%x: tensor<2x3xf32>, %ids: tensor<2xi64>, %dl: tensor<f32>) -> (tensor<1x3xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %s = nn.reduce_sum %x {axes = array<i64: 0>, keep_dims = true} : tensor<2x3xf32> -> tensor<1x3xf32>
  %r = nn.reduce_sum %x {axes = array<i64: 1>} : tensor<2x3xf32> -> tensor<2xf32>
  %z = nn.constant dense<0.0> : tensor<2x5xf32>
  %i = nn.insert_slice %x into %z {offsets = array<i64: 0, 0>, strides = array<i64: 1, 2>} : tensor<2x3xf32> into tensor<2x5xf32>
  %g = nn.gather_grad %ids, %x {axis = 0} : (tensor<2xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %u = nn.constant dense<0.5> : tensor<2x3xf32>
  %sg = nn.softmax_grad %u, %x {axis = 1} : tensor<2x3xf32>
  %z2 = nn.constant dense<0.0> : tensor<2x3xf32>
  %gg = nn.gelu_grad %z2, %x : tensor<2x3xf32>
  %ones = nn.constant dense<1.0> : tensor<3xf32>
  %dx, %dg, %db = nn.layer_norm_grad %x, %ones, %x {axis = 1, epsilon = 0.0 : f32} : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %labels = nn.constant dense<[0, 2]> : tensor<2xi64>
  %ce = nn.cross_entropy_grad %z2, %labels, %dl : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
  return %s, %r, %i, %g, %sg, %gg, %dx, %dg, %db, %ce : tensor<1x3xf32>, tensor<2xf32>, tensor<2x5xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>
}
  )mlir");
  ASSERT_TRUE(module);
  auto results =
      run(*module, "f",
          {HostTensor::fromF32({2, 3}, {1, 2, 3, 4, 5, 6}),
           HostTensor::fromI64({2}, {3, 3}), HostTensor::fromF32({}, {3.0f})});
  ASSERT_TRUE(succeeded(results)) << lastDiagnostic();
  ASSERT_EQ(results->size(), 10u);
  auto &r = *results;
  EXPECT_EQ(r[0].getShape(), llvm::ArrayRef<int64_t>({1, 3}));
  EXPECT_EQ(toVector(r[0].getF32()), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(toVector(r[1].getF32()), (std::vector<float>{6, 15}));
  EXPECT_EQ(toVector(r[2].getF32()),
            (std::vector<float>{1, 0, 2, 0, 3, 4, 0, 5, 0, 6}));
  // Both rows go to row 3 of the table.
  EXPECT_EQ(toVector(r[3].getF32()),
            (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 7, 9}));
  // y = 0.5: dx = 0.5 * (dy - 0.5 * sum(dy)).
  EXPECT_EQ(toVector(r[4].getF32()),
            (std::vector<float>{0.5f * (1 - 3), 0.5f * (2 - 3), 0.5f * (3 - 3),
                                0.5f * (4 - 7.5f), 0.5f * (5 - 7.5f),
                                0.5f * (6 - 7.5f)}));
  // gelu'(0) = 0.5.
  EXPECT_EQ(toVector(r[5].getF32()),
            (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3}));
  // dy = x: g = x, mean(g) = the row mean, xhat = (x - mean) * rstd, so
  // dx = rstd * (x - mean - xhat * mean(x * xhat)) = 0 (x is affine in
  // xhat); dscale = sum over rows of x * xhat, dbias = column sums.
  for (float v : r[6].getF32())
    EXPECT_NEAR(v, 0.0f, 1e-6f);
  float rstd = float(1.0 / std::sqrt(2.0 / 3.0));
  std::vector<float> dscale = toVector(r[7].getF32());
  ASSERT_EQ(dscale.size(), 3u);
  EXPECT_NEAR(dscale[0], -(1 + 4) * rstd, 1e-5f);
  EXPECT_NEAR(dscale[1], 0.0f, 1e-6f);
  EXPECT_NEAR(dscale[2], (3 + 6) * rstd, 1e-5f);
  EXPECT_EQ(toVector(r[8].getF32()), (std::vector<float>{5, 7, 9}));
  // Zero logits: softmax 1/3; dloss 3 over 2 rows.
  std::vector<float> ce = toVector(r[9].getF32());
  std::vector<float> want{-1, 0.5f, 0.5f, 0.5f, 0.5f, -1};
  for (size_t i = 0; i < ce.size(); ++i)
    EXPECT_NEAR(ce[i], want[i], 1e-6f) << i;
}

TEST_F(InterpreterTest, GradientOpErrorsAreReportedAtTheOp) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @g(%ids: tensor<2xi64>, %dy: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = nn.gather_grad %ids, %dy {axis = 0} : (tensor<2xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
func.func @ce(%x: tensor<2x3xf32>, %labels: tensor<2xi64>, %dl: tensor<f32>) -> tensor<2x3xf32> {
  %0 = nn.cross_entropy_grad %x, %labels, %dl : (tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
  )mlir");
  ASSERT_TRUE(module);
  EXPECT_TRUE(failed(run(
      *module, "g",
      {HostTensor::fromI64({2}, {1, 4}), HostTensor(GPIPE_RT_F32, {2, 3})})));
  EXPECT_EQ(lastDiagnostic(),
            "test.mlir:3:8: 'nn.gather_grad' op failed in the runtime kernel: "
            "gather_grad: index 4 at position [1] of indices [2] is out of "
            "range [0, 4) for axis 0 of [4, 3]");
  EXPECT_TRUE(failed(
      run(*module, "ce",
          {HostTensor(GPIPE_RT_F32, {2, 3}), HostTensor::fromI64({2}, {-1, 0}),
           HostTensor::fromF32({}, {1.0f})})));
  EXPECT_EQ(lastDiagnostic(),
            "test.mlir:7:8: 'nn.cross_entropy_grad' op failed in the runtime "
            "kernel: cross_entropy_grad: label -1 at position [0] is out of "
            "range [0, 3)");
}

} // namespace
