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
FailureOr<Shape>
inferBroadcastShape(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                    EmitErrorFn emitError);
/// Numpy matmul of operands of rank >= 2, each with its last two dims
/// swapped first when `transLhs` / `transRhs` is set.
FailureOr<Shape> inferMatMulShape(llvm::ArrayRef<int64_t> lhs,
                                  llvm::ArrayRef<int64_t> rhs,
                                  EmitErrorFn emitError, bool transLhs = false,
                                  bool transRhs = false);
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
/// The sliding-window geometry of a 2-D convolution or pooling over NCHW
/// images: `kernel` [kh, kw], `strides` [h, w], `pads` ONNX's [top, left,
/// bottom, right], `dilations` [h, w].
struct Window2D {
  llvm::ArrayRef<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
};
/// The output [OH, OW] of sliding `window` over an [H, W] image (ONNX's
/// formula: floor or ceil of (H + top + bottom - dilation * (kh - 1) - 1) /
/// stride + 1; in ceil mode a window that would start in the bottom or right
/// padding is dropped, as PyTorch does).
FailureOr<Shape> inferWindowShape(llvm::ArrayRef<int64_t> image,
                                  const Window2D &window,
                                  EmitErrorFn emitError);
/// nn.conv2d: input [N, C, H, W], weight [O, C / groups, kh, kw], optional
/// bias [O]; the result [N, O, OH, OW].
FailureOr<Shape> inferConv2DShape(llvm::ArrayRef<int64_t> input,
                                  llvm::ArrayRef<int64_t> weight,
                                  std::optional<llvm::ArrayRef<int64_t>> bias,
                                  llvm::ArrayRef<int64_t> strides,
                                  llvm::ArrayRef<int64_t> pads,
                                  llvm::ArrayRef<int64_t> dilations,
                                  int64_t groups, EmitErrorFn emitError);
/// nn.max_pool2d and nn.avg_pool2d: input [N, C, H, W]; the result
/// [N, C, OH, OW].
FailureOr<Shape> inferPool2DShape(llvm::ArrayRef<int64_t> input,
                                  const Window2D &window,
                                  EmitErrorFn emitError);
/// nn.batch_norm: input [N, C, ...] (rank >= 2); scale, bias and the running
/// statistics [C].
LogicalResult
verifyBatchNormShapes(llvm::ArrayRef<int64_t> input,
                      llvm::ArrayRef<llvm::ArrayRef<int64_t>> perChannel,
                      EmitErrorFn emitError);
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
FailureOr<Shape>
inferConcatShape(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs, int64_t axis,
                 EmitErrorFn emitError);
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
