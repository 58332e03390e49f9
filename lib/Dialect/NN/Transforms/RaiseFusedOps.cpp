//===- RaiseFusedOps.cpp - Apply only the fusion patterns -----------------===//
//
// Implements `nn-raise-fused-ops`, which applies the patterns that raise
// primitive forms to nn.linear and nn.gelu and nothing else.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNRAISEFUSEDOPSPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;

namespace {
struct NNRaiseFusedOpsPass
    : public mlir::gpipe::nn::impl::NNRaiseFusedOpsPassBase<
          NNRaiseFusedOpsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    mlir::gpipe::nn::populateRaiseFusedOpsPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
