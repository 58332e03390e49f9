//===- Passes.h - nn dialect passes -----------------------------*- C++ -*-===//
//
// Declares the passes over the `nn` dialect and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_TRANSFORMS_PASSES_H
#define GPIPE_DIALECT_NN_TRANSFORMS_PASSES_H

#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/NN/Transforms/PassOptions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gpipe::nn {

#define GEN_PASS_DECL
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"

/// Folds every nn op of `root` whose operands are all nn.constant and that
/// has a host evaluation (see nn-fold-constants); returns how many ops were
/// folded. Reports an error (and fails) only for an op whose evaluation
/// fails, such as an integer division by zero.
FailureOr<unsigned> foldConstantOps(Operation *root,
                                    int64_t maxElements = int64_t(1) << 24);

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_TRANSFORMS_PASSES_H
