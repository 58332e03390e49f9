//===- GPipeAttrs.h - gpipe dialect attributes ------------------*- C++ -*-===//
//
// Declares the enums (Direction, ScheduleKind, Remat) of the `gpipe` dialect
// and their attributes, generated from GPipeAttrs.td.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_IR_GPIPEATTRS_H
#define GPIPE_DIALECT_GPIPE_IR_GPIPEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "gpipe/Runtime/Vocabulary.h"

#include "gpipe/Dialect/GPipe/IR/GPipeEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "gpipe/Dialect/GPipe/IR/GPipeAttrs.h.inc"

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEATTRS_H
