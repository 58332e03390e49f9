//===- NNDialect.h - nn dialect declaration ---------------------*- C++ -*-===//
//
// Declares the `nn` dialect class generated from NNBase.td.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNDIALECT_H
#define GPIPE_DIALECT_NN_IR_NNDIALECT_H

#include "mlir/IR/Dialect.h"

#include "gpipe/Dialect/NN/IR/NNOpsDialect.h.inc"

#endif // GPIPE_DIALECT_NN_IR_NNDIALECT_H
