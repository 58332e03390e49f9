//===- GPipeInterfaces.h - gpipe dialect interfaces -------------*- C++ -*-===//
//
// Declares `ActionOpInterface`, implemented by every op a rank's program may
// hold, and the verification shared by all action ops. Action kinds are the
// runtime vocabulary's (gpipe/Runtime/Vocabulary.h), so the IR depends on
// no analysis.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_IR_GPIPEINTERFACES_H
#define GPIPE_DIALECT_GPIPE_IR_GPIPEINTERFACES_H

#include "gpipe/Runtime/Vocabulary.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::gpipe {
/// What an action op does (`ActionOpInterface::getActionKind`): the action
/// vocabulary the IR shares with the analyses and the runtime.
using ActionKind = ::gpipe::abi::ActionKind;

class ActionOpInterface;
namespace detail {
/// The checks every action needs without looking up symbols: it sits in a
/// program of a pipeline, its stage is one of the pipeline's stages, its
/// micro-batch is in range, and a transfer's peer is another existing rank
/// and its direction has a stage on the other side.
LogicalResult verifyActionOp(Operation *op);
/// The checks that look up the stage declaration: it exists, and what the
/// action needs of it (a transfer's payload type, the split backward of I and
/// W, a remat policy for R).
LogicalResult verifyActionSymbolUses(ActionOpInterface op,
                                     SymbolTableCollection &symbolTable);
} // namespace detail
} // namespace mlir::gpipe

#include "gpipe/Dialect/GPipe/IR/GPipeInterfaces.h.inc"

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEINTERFACES_H
