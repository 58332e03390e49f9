//===- KernelCallsTest.cpp - The op -> kernel call mapping ------*- C++ -*-===//
//
// getKernelCall on small functions: the kernel and the arguments it picks
// (positions and kinds, in either precision), the signature check every
// call passes and a malformed call fails, and the located errors naming
// the consumer. The interpreter tests run every mapped op end to end.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Dialect/NN/IR/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::gpipe;
using ::gpipe::abi::KernelId;

namespace {

class KernelCallsTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registry.insert<nn::NNDialect, func::FuncDialect>();
    registerKernelCallExternalModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    handler.emplace(&context, [this](Diagnostic &diag) {
      diagnostics.push_back(diag.str());
      return success();
    });
  }

  /// The first op of @f in `source`.
  Operation *firstOp(llvm::StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context, "test.mlir");
    EXPECT_TRUE(module);
    auto f = module->lookupSymbol<func::FuncOp>("f");
    return &f.getBody().front().front();
  }

  MLIRContext context{MLIRContext::Threading::DISABLED};
  OwningOpRef<ModuleOp> module;
  std::optional<ScopedDiagnosticHandler> handler;
  std::vector<std::string> diagnostics;
};

std::vector<KernelArg::Kind> kindsOf(const KernelCall &call) {
  std::vector<KernelArg::Kind> kinds;
  for (const KernelArg &arg : call.args)
    kinds.push_back(arg.kind);
  return kinds;
}

TEST_F(KernelCallsTest, LinearCallsItsKernelInEitherPrecision) {
  Operation *op = firstOp(R"mlir(
func.func @f(%x: tensor<4x3xf32>, %w: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %0 = nn.linear %x, %w {transpose_weight = true} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
  )mlir");
  FailureOr<KernelCall> fp32 = getKernelCall(op, {"test"});
  ASSERT_TRUE(succeeded(fp32));
  EXPECT_EQ(fp32->kernel, KernelId::k_linear_f32);
  using K = KernelArg;
  EXPECT_EQ(kindsOf(*fp32), (std::vector<K::Kind>{
                                K::Buffer, K::Ints, K::Int, K::Buffer, K::Ints,
                                K::Null, K::Int, K::Buffer, K::Ints, K::Int}));
  EXPECT_EQ(fp32->args[0].value, op->getOperand(0));
  EXPECT_EQ(fp32->args[1].ints, (SmallVector<int64_t>{4, 3}));
  EXPECT_EQ(fp32->args[4].ints, (SmallVector<int64_t>{2, 3}));
  EXPECT_EQ(fp32->args[6].integer, 1);
  EXPECT_EQ(fp32->args[7].value, op->getResult(0));

  FailureOr<KernelCall> bf16 = getKernelCall(op, {"test", true});
  ASSERT_TRUE(succeeded(bf16));
  EXPECT_EQ(bf16->kernel, KernelId::k_linear_bf16);
  EXPECT_EQ(kindsOf(*bf16), kindsOf(*fp32));
  EXPECT_STREQ(bf16->signature().name, "linear_bf16");
}

TEST_F(KernelCallsTest, SplitPassesItsResultsAsAList) {
  Operation *op = firstOp(R"mlir(
func.func @f(%x: tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x3xf32>) {
  %0:2 = nn.split %x {axis = 1, sizes = array<i64: 2, 3>} : tensor<2x5xf32> -> tensor<2x2xf32>, tensor<2x3xf32>
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x3xf32>
}
  )mlir");
  FailureOr<KernelCall> call = getKernelCall(op, {"test"});
  ASSERT_TRUE(succeeded(call)) << (diagnostics.empty() ? "" : diagnostics[0]);
  EXPECT_EQ(call->kernel, KernelId::k_split);
  EXPECT_EQ(call->args[0].integer, GPIPE_RT_F32);
  EXPECT_EQ(call->args.back().kind, KernelArg::Buffers);
  EXPECT_EQ(
      call->args.back().values,
      (SmallVector<Value>(op->getResults().begin(), op->getResults().end())));
}

TEST_F(KernelCallsTest, ACallThatDoesNotFitItsSignatureIsRejected) {
  Operation *op = firstOp(R"mlir(
func.func @f(%x: tensor<2xi1>) -> tensor<2xi1> {
  %0 = nn.not %x : tensor<2xi1>
  return %0 : tensor<2xi1>
}
  )mlir");
  FailureOr<KernelCall> call = getKernelCall(op, {"test"});
  ASSERT_TRUE(succeeded(call));
  EXPECT_TRUE(succeeded(verifyKernelCall(op, *call)));

  KernelCall swapped = *call;
  std::swap(swapped.args[1], swapped.args[2]);
  EXPECT_TRUE(failed(verifyKernelCall(op, swapped)));
  EXPECT_EQ(diagnostics.back(),
            "'nn.not' op kernel call does not match gpipe_rt_*_not of "
            "Kernels.def: argument 1 (out) gets a value of the wrong kind");

  KernelCall short_ = *call;
  short_.args.pop_back();
  EXPECT_TRUE(failed(verifyKernelCall(op, short_)));
  EXPECT_EQ(diagnostics.back(),
            "'nn.not' op kernel call does not match gpipe_rt_*_not of "
            "Kernels.def: 2 arguments for 3 parameters");
}

TEST_F(KernelCallsTest, ErrorsNameTheConsumer) {
  Operation *op = firstOp(R"mlir(
func.func @f(%x: tensor<2xf64>) -> tensor<2xf64> {
  %0 = nn.relu %x : tensor<2xf64>
  return %0 : tensor<2xf64>
}
  )mlir");
  EXPECT_TRUE(failed(getKernelCall(op, {"CPU code generator"})));
  EXPECT_EQ(diagnostics.back(), "'nn.relu' op element type 'f64' is not "
                                "supported by the CPU code generator "
                                "(supported: f32)");
  Operation *ret = op->getNextNode();
  EXPECT_TRUE(failed(getKernelCall(ret, {"CPU code generator"})));
  EXPECT_EQ(diagnostics.back(),
            "'func.return' op is not supported by the CPU code generator");
}

} // namespace

// Every nn op that computes has a kernel model: a new op without one would
// fail only when a model using it is compiled. The ops listed here are
// structure (layers, fused regions), declarations, reads of parameters and
// constants, or views the lowering aliases instead of computing.
TEST_F(KernelCallsTest, EveryComputingOpHasAKernelModel) {
  const llvm::StringSet<> noKernel = {
      "nn.parameter", "nn.param", "nn.constant", "nn.layer",
      "nn.yield",     "nn.fused", "nn.reshape",  "nn.unsqueeze"};
  auto *dialect = context.getLoadedDialect<nn::NNDialect>();
  ASSERT_NE(dialect, nullptr);
  unsigned withModel = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (&name.getDialect() != dialect)
      continue;
    bool hasModel = name.hasInterface<KernelCallOpInterface>();
    if (noKernel.contains(name.getStringRef()))
      EXPECT_FALSE(hasModel) << name.getStringRef().str();
    else
      EXPECT_TRUE(hasModel)
          << name.getStringRef().str() << " has no KernelCallOpInterface model";
    withModel += hasModel;
  }
  EXPECT_GT(withModel, 40u);
}
