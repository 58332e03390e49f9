//===- NNLayerLoc.h - Which layer an op came from ---------------*- C++ -*-===//
//
// When the body of an `nn.layer` is inlined (the backward function
// recomputes its forward flat, then differentiates it), its ops keep the
// name of the top-level layer they came from in their location: a FusedLoc
// over the op's own location whose metadata is `{nn.layer = "<name>"}`.
// Ops built from them (their vector-Jacobian products) take their location,
// so every op of a stage function can be attributed to a layer: by its
// enclosing `nn.layer`, or by this mark. Diagnostics still point at the
// inner location. What uses it: the per-layer timing marks of the generated
// code (`gpipe-run --profile`).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNLAYERLOC_H
#define GPIPE_DIALECT_NN_IR_NNLAYERLOC_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

namespace mlir::gpipe::nn {

/// `loc` marked as coming from layer `layer` (unchanged if it is already
/// marked: the outermost layer that inlined it first wins).
Location getLayerLoc(Location loc, StringAttr layer);

/// The layer `loc` is marked with, or null.
StringAttr getLayerOfLoc(Location loc);

/// `loc` without its layer mark.
Location stripLayerLoc(Location loc);

/// The top-level layer `op` belongs to: its outermost enclosing `nn.layer`
/// below the function, else its location's mark; null for neither (the
/// loss, parameter reads, constants).
StringAttr getLayerOf(Operation *op);

/// The name a location carries: a NameLoc's, or that of the first NameLoc
/// among a FusedLoc's parts (an importer's value or node name); null for
/// none.
StringAttr getNameOfLoc(Location loc);

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_IR_NNLAYERLOC_H
