//===- Passes.h - Passes built on the nn interpreter ------------*- C++ -*-===//
//
// Declarations of the passes in Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_INTERPRETER_PASSES_H
#define GPIPE_INTERPRETER_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::gpipe {

#define GEN_PASS_DECL
#include "gpipe/Interpreter/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gpipe/Interpreter/Passes.h.inc"

/// Folds every nn op of `root` whose operands are all nn.constant (see
/// nn-fold-constants); returns how many ops were folded. Reports an error
/// (and fails) only for an op whose evaluation fails.
FailureOr<unsigned> foldConstantOps(Operation *root,
                                    int64_t maxElements = int64_t(1) << 24);

} // namespace mlir::gpipe

#endif // GPIPE_INTERPRETER_PASSES_H
