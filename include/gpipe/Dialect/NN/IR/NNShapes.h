//===- NNShapes.h - Shape inference for nn ops ------------------*- C++ -*-===//
//
// Shape inference rules of the `nn` ops as plain functions over static
// shapes. The op verifiers, the op builders and the frontends all use these,
// so an importer reports a shape error at the source location with exactly
// the message the verifier would give.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_IR_NNSHAPES_H
#define GPIPE_DIALECT_NN_IR_NNSHAPES_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace mlir::gpipe::nn {

using Shape = llvm::SmallVector<int64_t, 4>;
using EmitErrorFn = llvm::function_ref<InFlightDiagnostic()>;

/// "[2, 16, 32]".
std::string formatShape(llvm::ArrayRef<int64_t> shape);
/// Product of the dims (1 for a scalar).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// Numpy multidirectional broadcasting of any number of shapes.
FailureOr<Shape> inferBroadcastShape(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                                     EmitErrorFn emitError);
/// Numpy matmul of operands of rank >= 2.
FailureOr<Shape> inferMatMulShape(llvm::ArrayRef<int64_t> lhs,
                                  llvm::ArrayRef<int64_t> rhs,
                                  EmitErrorFn emitError);
/// ONNX Gemm; `c` is optional and must broadcast to the result.
FailureOr<Shape> inferGemmShape(llvm::ArrayRef<int64_t> a,
                                llvm::ArrayRef<int64_t> b,
                                std::optional<llvm::ArrayRef<int64_t>> c,
                                bool transA, bool transB,
                                EmitErrorFn emitError);
/// x * W (+ b) with W `[in, out]`, or `[out, in]` when `transposeWeight`.
FailureOr<Shape> inferLinearShape(llvm::ArrayRef<int64_t> input,
                                  llvm::ArrayRef<int64_t> weight,
                                  std::optional<llvm::ArrayRef<int64_t>> bias,
                                  bool transposeWeight, EmitErrorFn emitError);
/// Normalized dims `[axis, rank)`; scale and bias have exactly those dims.
LogicalResult verifyLayerNormShapes(llvm::ArrayRef<int64_t> input,
                                    llvm::ArrayRef<int64_t> scale,
                                    std::optional<llvm::ArrayRef<int64_t>> bias,
                                    int64_t axis, EmitErrorFn emitError);
LogicalResult verifyAxis(llvm::ArrayRef<int64_t> shape, int64_t axis,
                         EmitErrorFn emitError);
FailureOr<Shape> inferGatherShape(llvm::ArrayRef<int64_t> data,
                                  llvm::ArrayRef<int64_t> indices, int64_t axis,
                                  EmitErrorFn emitError);
FailureOr<Shape> inferTransposeShape(llvm::ArrayRef<int64_t> input,
                                     llvm::ArrayRef<int64_t> perm,
                                     EmitErrorFn emitError);
FailureOr<llvm::SmallVector<Shape>>
inferSplitShapes(llvm::ArrayRef<int64_t> input, int64_t axis,
                 llvm::ArrayRef<int64_t> sizes, EmitErrorFn emitError);
FailureOr<Shape> inferSliceShape(llvm::ArrayRef<int64_t> input,
                                 llvm::ArrayRef<int64_t> offsets,
                                 llvm::ArrayRef<int64_t> sizes,
                                 llvm::ArrayRef<int64_t> strides,
                                 EmitErrorFn emitError);
FailureOr<Shape> inferConcatShape(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs,
                                  int64_t axis, EmitErrorFn emitError);
FailureOr<Shape> inferUnsqueezeShape(llvm::ArrayRef<int64_t> input,
                                     llvm::ArrayRef<int64_t> axes,
                                     EmitErrorFn emitError);
LogicalResult verifyReshape(llvm::ArrayRef<int64_t> input,
                            llvm::ArrayRef<int64_t> result,
                            EmitErrorFn emitError);
/// Labels are the logits without their last (class) dim.
LogicalResult verifyCrossEntropyShapes(llvm::ArrayRef<int64_t> logits,
                                       llvm::ArrayRef<int64_t> labels,
                                       EmitErrorFn emitError);

/// Sum over `axes` (sorted, distinct, below the rank): the input shape with
/// those dims set to 1 (`keepDims`) or dropped.
FailureOr<Shape> inferReduceShape(llvm::ArrayRef<int64_t> input,
                                  llvm::ArrayRef<int64_t> axes, bool keepDims,
                                  EmitErrorFn emitError);
/// `source` written into `dest` at `offsets` every `strides`: the positions
/// `nn.slice` of `dest` with `sizes = source` would read must be in bounds.
LogicalResult verifyInsertSlice(llvm::ArrayRef<int64_t> source,
                                llvm::ArrayRef<int64_t> dest,
                                llvm::ArrayRef<int64_t> offsets,
                                llvm::ArrayRef<int64_t> strides,
                                EmitErrorFn emitError);

/// Result type of a broadcasting binary op on `lhs` and `rhs` for builders:
/// the element type of `lhs` with the broadcast shape. On a shape error it
/// reports at `loc` and returns `lhs`'s type so the verifier rejects the op.
Type inferBroadcastType(Location loc, Value lhs, Value rhs);

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_IR_NNSHAPES_H
