//===- Microbatch.cpp - Micro-batch shapes ---------------------------------------------===//
//
// Placeholder: nn-microbatch is being written.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNMICROBATCHPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;

namespace {
struct NNMicrobatchPass : public gpipe::nn::impl::NNMicrobatchPassBase<NNMicrobatchPass> {
  using NNMicrobatchPassBase::NNMicrobatchPassBase;
  void runOnOperation() override {
    getOperation().emitError("nn-microbatch is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
