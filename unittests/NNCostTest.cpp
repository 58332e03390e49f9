//===- NNCostTest.cpp - Unit tests for the nn cost interface --------------===//
//
// Parses small networks and checks the FLOPs and bytes that the cost
// interface reports for contractions, elementwise ops, parameters and
// whole layers.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/InitAllDialects.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::gpipe::nn;

namespace {

class NNCostTest : public ::testing::Test {
protected:
  NNCostTest() {
    DialectRegistry registry;
    mlir::gpipe::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Parses `body` as the single function of a module and returns the cost
  /// of the first op named `opName`.
  OpCost costOf(StringRef source, StringRef opName) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    OpCost cost;
    bool found = false;
    module->walk([&](Operation *op) {
      if (found || op->getName().getStringRef() != opName)
        return;
      found = true;
      cost = cast<CostOpInterface>(op).getCost();
    });
    EXPECT_TRUE(found) << opName.str();
    return cost;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(NNCostTest, LinearCountsTwoMNKPlusBias) {
  OpCost c = costOf(R"mlir(
    func.func @f(%x: tensor<2x16x32xf32>, %w: tensor<96x32xf32>, %b: tensor<96xf32>) -> tensor<2x16x96xf32> {
      %y = nn.linear %x, %w, %b {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
      return %y : tensor<2x16x96xf32>
    })mlir",
                    "nn.linear");
  EXPECT_EQ(c.flops, 2 * 32 * 96 * 32 + 32 * 96);
  EXPECT_EQ(c.bytesRead, 4 * (2 * 16 * 32 + 96 * 32 + 96));
  EXPECT_EQ(c.bytesWritten, 4 * 2 * 16 * 96);
}

TEST_F(NNCostTest, BatchedMatMulCountsEveryBatch) {
  OpCost c = costOf(R"mlir(
    func.func @f(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32> {
      %s = nn.matmul %q, %k : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
      return %s : tensor<2x4x16x16xf32>
    })mlir",
                    "nn.matmul");
  EXPECT_EQ(c.flops, 2 * 8 * 16 * 16 * 8);
}

TEST_F(NNCostTest, ParamReadsCountParameterBytes) {
  OpCost c = costOf(R"mlir(
    nn.parameter @w : tensor<10x32xf32> init zeros
    func.func @f() -> tensor<10x32xf32> {
      %w = nn.param @w : tensor<10x32xf32>
      return %w : tensor<10x32xf32>
    })mlir",
                    "nn.param");
  EXPECT_EQ(c.paramBytes, 4 * 10 * 32);
  EXPECT_EQ(c.flops, 0);
}

TEST_F(NNCostTest, LayerSumsItsBody) {
  OpCost c = costOf(R"mlir(
    nn.parameter @w : tensor<8x4xf32> init zeros
    func.func @f(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
      %r = nn.layer "l"(%x) : (tensor<2x4xf32>) -> tensor<2x8xf32> {
      ^bb0(%a: tensor<2x4xf32>):
        %w = nn.param @w : tensor<8x4xf32>
        %h = nn.linear %a, %w {transpose_weight = true} : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
        %g = nn.relu %h : tensor<2x8xf32>
        nn.yield %g : tensor<2x8xf32>
      }
      return %r : tensor<2x8xf32>
    })mlir",
                    "nn.layer");
  EXPECT_EQ(c.flops, 2 * 2 * 8 * 4 + 2 * 8);
  EXPECT_EQ(c.paramBytes, 4 * 8 * 4);
}

// nn.attention's two products per leading index (q k^T: 16 x 24 x 8, p v:
// 16 x 12 x 24) are one GEMM shape of their mean depth, a batch the kernel
// threads share, so the cost model times them at the machine's GEMM rates.
TEST_F(NNCostTest, AttentionProductsAreABatchOfGemms) {
  OpCost c = costOf(R"mlir(
    func.func @f(%q: tensor<2x3x16x8xf32>, %k: tensor<2x3x24x8xf32>, %v: tensor<2x3x24x12xf32>) -> tensor<2x3x16x12xf32> {
      %o = nn.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<2x3x16x8xf32>, tensor<2x3x24x8xf32>, tensor<2x3x24x12xf32>) -> tensor<2x3x16x12xf32>
      return %o : tensor<2x3x16x12xf32>
    })mlir",
                    "nn.attention");
  EXPECT_EQ(c.flops, 2 * 3 * 16 * 24 * (2 * 8 + 2 * 12 + 5));
  EXPECT_EQ(c.gemm.batch, 2 * 2 * 3);
  EXPECT_EQ(c.gemm.m, 16);
  EXPECT_EQ(c.gemm.n, 24);
  EXPECT_EQ(c.gemm.k, 10);
  EXPECT_TRUE(c.gemm.parallelBatch);
  // The GEMMs' multiply-adds are the products': T x S x (D + E) per index.
  EXPECT_EQ(c.gemm.batch * c.gemm.m * c.gemm.n * c.gemm.k,
            2 * 3 * 16 * 24 * (8 + 12));
}

} // namespace
