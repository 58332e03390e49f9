//===- RTOps.h - gpipe_rt dialect ops ---------------------------*- C++ -*-===//
//
// Declares the ops of the `gpipe_rt` dialect (RTOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_RT_IR_RTOPS_H
#define GPIPE_DIALECT_RT_IR_RTOPS_H

#include "gpipe/Dialect/RT/IR/RTDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "gpipe/Dialect/RT/IR/RTOps.h.inc"

namespace mlir::gpipe_rt {

/// The types kernel `kernel` of Kernels.def takes, in order (what
/// gpipe_rt.kernel verifies its operands against): `!llvm.ptr` for a
/// buffer, i32/i64/f32/f64 for a scalar. Failure for no such kernel.
FailureOr<SmallVector<Type>> getKernelParamTypes(MLIRContext *ctx,
                                                 StringRef kernel);

} // namespace mlir::gpipe_rt

#endif // GPIPE_DIALECT_RT_IR_RTOPS_H
