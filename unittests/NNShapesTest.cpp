//===- NNShapesTest.cpp - Unit tests for nn shape inference ---------------===//
//
// Checks the shape rules of NNShapes.h (broadcasting, matmul, gemm, linear,
// split, slice, concat, unsqueeze, transpose) on valid and invalid shapes,
// including the text of the diagnostics users see.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNShapes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <functional>

using namespace mlir;
using namespace mlir::gpipe::nn;

namespace {

class NNShapesTest : public ::testing::Test {
protected:
  NNShapesTest()
      : handler(&context, [this](Diagnostic &d) {
          messages.push_back(d.str());
          return success();
        }) {}

  /// A callback that reports at an unknown location (function_ref does not
  /// own its callee, so the callee lives in the fixture).
  EmitErrorFn emit() { return emitFn; }

  MLIRContext context;
  std::function<InFlightDiagnostic()> emitFn = [this] {
    return mlir::emitError(UnknownLoc::get(&context));
  };
  std::vector<std::string> messages;
  ScopedDiagnosticHandler handler;
};

using S = Shape;

TEST_F(NNShapesTest, BroadcastFollowsNumpy) {
  auto r = inferBroadcastShape({S{4, 1, 8}, S{3, 1}}, emit());
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(*r, (S{4, 3, 8}));
  auto scalar = inferBroadcastShape({S{}, S{2, 5}}, emit());
  ASSERT_TRUE(succeeded(scalar));
  EXPECT_EQ(*scalar, (S{2, 5}));
  EXPECT_TRUE(messages.empty());
}

TEST_F(NNShapesTest, BroadcastMismatchNamesShapes) {
  EXPECT_TRUE(failed(inferBroadcastShape({S{4, 8}, S{5, 3}}, emit())));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0],
            "operand shapes [4, 8] and [5, 3] are not broadcast-compatible");
}

TEST_F(NNShapesTest, MatMulBatchesAndChecksInnerDims) {
  auto r = inferMatMulShape(S{2, 1, 16, 8}, S{4, 8, 16}, emit());
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(*r, (S{2, 4, 16, 16}));
  EXPECT_TRUE(failed(inferMatMulShape(S{4, 8}, S{5, 3}, emit())));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_NE(messages[0].find("(8 vs 5)"), std::string::npos) << messages[0];
}

TEST_F(NNShapesTest, GemmTransposesAndBroadcastsAddend) {
  auto r = inferGemmShape(S{8, 16}, S{32, 16}, S{32}, false, true, emit());
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(*r, (S{8, 32}));
  EXPECT_TRUE(
      failed(inferGemmShape(S{8, 16}, S{32, 16}, S{8}, false, true, emit())));
}

TEST_F(NNShapesTest, LinearLayouts) {
  auto plain = inferLinearShape(S{2, 16, 32}, S{32, 96}, S{96}, false, emit());
  ASSERT_TRUE(succeeded(plain));
  EXPECT_EQ(*plain, (S{2, 16, 96}));
  auto torch =
      inferLinearShape(S{8, 16}, S{32, 16}, std::nullopt, true, emit());
  ASSERT_TRUE(succeeded(torch));
  EXPECT_EQ(*torch, (S{8, 32}));
  EXPECT_TRUE(
      failed(inferLinearShape(S{8, 16}, S{32, 16}, S{16}, true, emit())));
}

TEST_F(NNShapesTest, SplitSliceConcat) {
  auto parts = inferSplitShapes(S{2, 16, 96}, 2, {32, 32, 32}, emit());
  ASSERT_TRUE(succeeded(parts));
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[1], (S{2, 16, 32}));
  EXPECT_TRUE(failed(inferSplitShapes(S{2, 16, 96}, 2, {32, 32}, emit())));

  auto slice = inferSliceShape(S{4, 16}, {0, 1}, {4, 8}, {1, 2}, emit());
  ASSERT_TRUE(succeeded(slice));
  EXPECT_EQ(*slice, (S{4, 8}));
  EXPECT_TRUE(
      failed(inferSliceShape(S{4, 16}, {0, 2}, {4, 8}, {1, 2}, emit())));

  auto cat = inferConcatShape({S{2, 3}, S{2, 5}}, 1, emit());
  ASSERT_TRUE(succeeded(cat));
  EXPECT_EQ(*cat, (S{2, 8}));
  EXPECT_TRUE(failed(inferConcatShape({S{2, 3}, S{3, 5}}, 1, emit())));
}

TEST_F(NNShapesTest, UnsqueezeTransposeGather) {
  auto u = inferUnsqueezeShape(S{16, 16}, {0, 1}, emit());
  ASSERT_TRUE(succeeded(u));
  EXPECT_EQ(*u, (S{1, 1, 16, 16}));
  EXPECT_TRUE(failed(inferUnsqueezeShape(S{16}, {1, 0}, emit())));

  auto t = inferTransposeShape(S{2, 16, 4, 8}, {0, 2, 1, 3}, emit());
  ASSERT_TRUE(succeeded(t));
  EXPECT_EQ(*t, (S{2, 4, 16, 8}));
  EXPECT_TRUE(failed(inferTransposeShape(S{2, 3}, {0, 0}, emit())));

  auto g = inferGatherShape(S{65, 64}, S{8, 32}, 0, emit());
  ASSERT_TRUE(succeeded(g));
  EXPECT_EQ(*g, (S{8, 32, 64}));
}

} // namespace
