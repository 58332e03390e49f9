//===- GPipeDialect.h - gpipe dialect declaration ---------------*- C++ -*-===//
//
// Declares the `gpipe` dialect class generated from GPipeBase.td.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_IR_GPIPEDIALECT_H
#define GPIPE_DIALECT_GPIPE_IR_GPIPEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "gpipe/Dialect/GPipe/IR/GPipeOpsDialect.h.inc"

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEDIALECT_H
