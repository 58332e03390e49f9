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

/// The GEMM a contraction runs as the CPU kernels call it: `batch`
/// products op(A)[m, k] x op(B)[k, n]; batch 0 when the op runs none.
struct GemmShape {
  int64_t batch = 0, m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  /// Whether the kernel divides a batch of small products over its threads
  /// (a batched matmul does; a convolution runs its images in order).
  bool parallelBatch = false;
};

/// The work of one op execution, as the partitioner's cost model sees it.
struct OpCost {
  int64_t flops = 0;        ///< floating point operations
  int64_t bytesRead = 0;    ///< operand bytes
  int64_t bytesWritten = 0; ///< result bytes
  int64_t paramBytes = 0;   ///< bytes of parameters read (nn.param)
  /// Kernel calls (0 for a view or a parameter read).
  int64_t calls = 0;
  /// The op's GEMM, for a contraction; one op's own, not summed by +=.
  GemmShape gemm;
  /// Bytes a contraction moves besides its GEMM (a convolution's im2col
  /// columns); one op's own, not summed by +=.
  int64_t gemmSideBytes = 0;

  OpCost &operator+=(const OpCost &o) {
    flops += o.flops;
    bytesRead += o.bytesRead;
    bytesWritten += o.bytesWritten;
    paramBytes += o.paramBytes;
    calls += o.calls;
    return *this;
  }
};

/// Bytes of a statically shaped tensor type (i1 counts one byte).
int64_t tensorBytes(Type type);

namespace detail {
/// Cost of an op that touches every operand once, writes every result once
/// and does `flopsPerElement` operations per result element, in one kernel
/// call.
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
