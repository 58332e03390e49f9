//===- GPipeOps.h - gpipe dialect ops ---------------------------*- C++ -*-===//
//
// Declares the ops of the `gpipe` dialect generated from GPipeOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_IR_GPIPEOPS_H
#define GPIPE_DIALECT_GPIPE_IR_GPIPEOPS_H

#include "gpipe/Dialect/GPipe/IR/GPipeAttrs.h"
#include "gpipe/Dialect/GPipe/IR/GPipeDialect.h"
#include "gpipe/Dialect/GPipe/IR/GPipeInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h.inc"

namespace mlir::gpipe {

/// Calls `callback` with every action of `program` in the order the rank
/// runs them, loops unrolled, and the action's micro-batch (-1 for actions
/// without one). The one expansion the verifier, the timeline, the memory
/// planner and the pipeline executor read programs through.
void walkProgram(ProgramOp program,
                 llvm::function_ref<void(ActionOpInterface, int64_t)> callback);

/// The number of actions `walkProgram` visits.
int64_t getNumExpandedActions(ProgramOp program);

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEOPS_H
