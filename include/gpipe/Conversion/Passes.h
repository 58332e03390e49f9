//===- Passes.h - gpipe conversion passes -----------------------*- C++ -*-===//
//
// Lowerings out of the nn and gpipe dialects.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_CONVERSION_PASSES_H
#define GPIPE_CONVERSION_PASSES_H

#include "gpipe/Conversion/PassOptions.h"
#include "gpipe/Dialect/RT/IR/RTDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::gpipe {

#define GEN_PASS_DECL
#include "gpipe/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "gpipe/Conversion/Passes.h.inc"

} // namespace mlir::gpipe

#endif // GPIPE_CONVERSION_PASSES_H
