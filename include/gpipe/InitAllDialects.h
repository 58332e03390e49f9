//===- InitAllDialects.h - Register every dialect gpipe uses ----*- C++ -*-===//
//
// One place that lists the dialects gpipe's tools load: our own and the
// upstream ones our IR mixes with.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_INITALLDIALECTS_H
#define GPIPE_INITALLDIALECTS_H

#include "gpipe/Dialect/GPipe/IR/GPipeDialect.h"
#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Dialect.h"

namespace mlir::gpipe {

inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<nn::NNDialect, GPipeDialect, func::FuncDialect,
                  LLVM::LLVMDialect>();
}

} // namespace mlir::gpipe

#endif // GPIPE_INITALLDIALECTS_H
