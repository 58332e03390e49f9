//===- InitAllDialects.h - Register every dialect gpipe uses ----*- C++ -*-===//
//
// One place that lists the dialects gpipe's tools load: our own and the
// upstream ones our IR mixes with (the rt form's loops, arithmetic and
// vectors included), and the interfaces attached to them from outside.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_INITALLDIALECTS_H
#define GPIPE_INITALLDIALECTS_H

#include "gpipe/Dialect/GPipe/IR/GPipeDialect.h"
#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/RT/IR/RTDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dialect.h"

namespace mlir::gpipe {

// KernelCalls.h (GPipeKernelCalls): the nn ops' kernel-call models.
void registerKernelCallExternalModels(DialectRegistry &registry);

inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<nn::NNDialect, GPipeDialect, gpipe_rt::RTDialect,
                  func::FuncDialect, scf::SCFDialect, cf::ControlFlowDialect,
                  arith::ArithDialect, math::MathDialect, vector::VectorDialect,
                  LLVM::LLVMDialect>();
  registerKernelCallExternalModels(registry);
}

} // namespace mlir::gpipe

#endif // GPIPE_INITALLDIALECTS_H
