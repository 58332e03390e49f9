//===- NNInterfaces.h - nn op interfaces ------------------------*- C++ -*-===//
//
// The cost and VJP op interfaces of the `nn` dialect, the `OpCost` record the
// cost interface returns, and the `LayerAnchor` trait.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNINTERFACES_H
#define GPIPE_DIALECT_NN_IR_NNINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include <cstdint>

namespace mlir::gpipe::nn {

/// The work of one op execution, as the partitioner's cost model sees it.
struct OpCost {
  int64_t flops = 0;        ///< floating point operations
  int64_t bytesRead = 0;    ///< operand bytes
  int64_t bytesWritten = 0; ///< result bytes
  int64_t paramBytes = 0;   ///< bytes of parameters read (nn.param)

  OpCost &operator+=(const OpCost &o) {
    flops += o.flops;
    bytesRead += o.bytesRead;
    bytesWritten += o.bytesWritten;
    paramBytes += o.paramBytes;
    return *this;
  }
};

/// Bytes of a statically shaped tensor type (i1 counts one byte).
int64_t tensorBytes(Type type);

namespace detail {
/// Cost of an op that touches every operand once, writes every result once
/// and does `flopsPerElement` operations per result element.
OpCost elementwiseCost(Operation *op, int64_t flopsPerElement);
} // namespace detail

namespace OpTrait {
/// Marks ops that anchor a layer (contractions, normalizations, lookups,
/// losses): a cut segment without one is merged into a neighbour.
template <typename ConcreteType>
class LayerAnchor : public mlir::OpTrait::TraitBase<ConcreteType, LayerAnchor> {
};
} // namespace OpTrait

} // namespace mlir::gpipe::nn

#include "gpipe/Dialect/NN/IR/NNInterfaces.h.inc"

#endif // GPIPE_DIALECT_NN_IR_NNINTERFACES_H
