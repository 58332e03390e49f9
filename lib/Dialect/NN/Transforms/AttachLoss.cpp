//===- AttachLoss.cpp - Append the training loss ---------------------------------------------===//
//
// Placeholder: nn-attach-loss is being written.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNATTACHLOSSPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;

namespace {
struct NNAttachLossPass : public gpipe::nn::impl::NNAttachLossPassBase<NNAttachLossPass> {
  using NNAttachLossPassBase::NNAttachLossPassBase;
  void runOnOperation() override {
    getOperation().emitError("nn-attach-loss is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
