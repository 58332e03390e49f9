//===- RTDialect.h - gpipe_rt dialect declaration ---------------*- C++ -*-===//
//
// Declares the `gpipe_rt` dialect class generated from RTBase.td.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_RT_IR_RTDIALECT_H
#define GPIPE_DIALECT_RT_IR_RTDIALECT_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Dialect.h"

#include "gpipe/Dialect/RT/IR/RTOpsDialect.h.inc"

#endif // GPIPE_DIALECT_RT_IR_RTDIALECT_H
