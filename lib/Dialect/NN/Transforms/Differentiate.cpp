//===- Differentiate.cpp - Reverse-mode autodiff ---------------------------------------------===//
//
// Placeholder: nn-differentiate is being written.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNDIFFERENTIATEPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;

namespace {
struct NNDifferentiatePass : public gpipe::nn::impl::NNDifferentiatePassBase<NNDifferentiatePass> {
  using NNDifferentiatePassBase::NNDifferentiatePassBase;
  void runOnOperation() override {
    getOperation().emitError("nn-differentiate is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
