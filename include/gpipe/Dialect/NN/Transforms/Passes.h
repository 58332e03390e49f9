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

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_TRANSFORMS_PASSES_H
