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
#include "mlir/IR/SymbolTable.h"

#define GET_OP_CLASSES
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h.inc"

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEOPS_H
