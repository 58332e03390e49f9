//===- NNOps.h - nn dialect ops ---------------------------------*- C++ -*-===//
//
// Declares the ops of the `nn` dialect generated from NNOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNOPS_H
#define GPIPE_DIALECT_NN_IR_NNOPS_H

#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/NN/IR/NNInterfaces.h"
#include "gpipe/Dialect/NN/IR/NNShapes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "gpipe/Dialect/NN/IR/NNEnums.h.inc"

#define GET_OP_CLASSES
#include "gpipe/Dialect/NN/IR/NNOps.h.inc"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace mlir::gpipe::nn {
/// Patterns raising primitive forms to fused ops: gemm/matmul(+bias add) to
/// nn.linear, the erf-decomposed GELU to nn.gelu. Registered as the
/// canonicalization patterns of the ops they root at, and run alone by
/// nn-raise-fused-ops.
void populateRaiseFusedOpsPatterns(RewritePatternSet &patterns);
} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_IR_NNOPS_H
