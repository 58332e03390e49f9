//===- Passes.h - gpipe dialect passes --------------------------*- C++ -*-===//
//
// Declares the passes over `gpipe.pipeline` and their registration.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSES_H
#define GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSES_H

#include "gpipe/Dialect/GPipe/IR/GPipeDialect.h"
#include "gpipe/Dialect/GPipe/Transforms/PassOptions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gpipe {

#define GEN_PASS_DECL
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSES_H
