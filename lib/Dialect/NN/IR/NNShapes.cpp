//===- NNShapes.cpp - Shape inference for nn ops --------------------------===//
//
// Implements the static shape rules of the `nn` ops (numpy broadcasting,
// matmul, gemm, gather, split, slice, ...) as plain functions that report
// violations through a caller-supplied diagnostic.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNShapes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::gpipe::nn;
using llvm::ArrayRef;

std::string mlir::gpipe::nn::formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

int64_t mlir::gpipe::nn::numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The numpy broadcast of `shapes`, or nothing if they are incompatible.
static std::optional<Shape>
broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  Shape result(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    size_t lead = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &r = result[lead + i];
      if (s[i] == r || s[i] == 1)
        continue;
      if (r == 1) {
        r = s[i];
        continue;
      }
      return std::nullopt;
    }
  }
  return result;
}

FailureOr<Shape>
mlir::gpipe::nn::inferBroadcastShape(ArrayRef<ArrayRef<int64_t>> shapes,
                                     EmitErrorFn emitError) {
  if (std::optional<Shape> result = broadcastShapes(shapes))
    return *result;
  InFlightDiagnostic diag = emitError();
  diag << "operand shapes ";
  llvm::interleave(
      shapes, diag, [&](ArrayRef<int64_t> x) { diag << formatShape(x); },
      " and ");
  diag << " are not broadcast-compatible";
  return failure();
}

FailureOr<Shape> mlir::gpipe::nn::inferMatMulShape(ArrayRef<int64_t> lhs,
                                                   ArrayRef<int64_t> rhs,
                                                   EmitErrorFn emitError,
                                                   bool transLhs,
                                                   bool transRhs) {
  if (lhs.size() < 2 || rhs.size() < 2)
    return emitError() << "expected matmul operands of rank >= 2, got "
                       << formatShape(lhs) << " and " << formatShape(rhs),
           failure();
  int64_t lRows = lhs[lhs.size() - 2], lCols = lhs.back();
  int64_t rRows = rhs[rhs.size() - 2], rCols = rhs.back();
  int64_t m = transLhs ? lCols : lRows, k = transLhs ? lRows : lCols;
  int64_t k2 = transRhs ? rCols : rRows, n = transRhs ? rRows : rCols;
  if (k != k2)
    return emitError() << "matmul inner dimensions differ: " << formatShape(lhs)
                       << (transLhs ? " transposed" : "") << " times "
                       << formatShape(rhs) << (transRhs ? " transposed" : "")
                       << " (" << k << " vs " << k2 << ")",
           failure();
  std::optional<Shape> batch =
      broadcastShapes({lhs.drop_back(2), rhs.drop_back(2)});
  if (!batch)
    return emitError() << "matmul batch dimensions "
                       << formatShape(lhs.drop_back(2)) << " and "
                       << formatShape(rhs.drop_back(2)) << " of "
                       << formatShape(lhs) << " and " << formatShape(rhs)
                       << " are not broadcast-compatible",
           failure();
  Shape result = *batch;
  result.push_back(m);
  result.push_back(n);
  return result;
}

FailureOr<Shape>
mlir::gpipe::nn::inferGemmShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                                std::optional<ArrayRef<int64_t>> c, bool transA,
                                bool transB, EmitErrorFn emitError) {
  if (a.size() != 2 || b.size() != 2)
    return emitError() << "expected gemm operands of rank 2, got "
                       << formatShape(a) << " and " << formatShape(b),
           failure();
  int64_t m = transA ? a[1] : a[0], k = transA ? a[0] : a[1];
  int64_t k2 = transB ? b[1] : b[0], n = transB ? b[0] : b[1];
  if (k != k2)
    return emitError() << "gemm inner dimensions differ: " << formatShape(a)
                       << (transA ? "^T" : "") << " times " << formatShape(b)
                       << (transB ? "^T" : "") << " (" << k << " vs " << k2
                       << ")",
           failure();
  Shape result{m, n};
  if (c) {
    std::optional<Shape> bc = broadcastShapes({*c, result});
    if (!bc || ArrayRef<int64_t>(*bc) != ArrayRef<int64_t>(result))
      return emitError() << "gemm addend of shape " << formatShape(*c)
                         << " does not broadcast to " << formatShape(result),
             failure();
  }
  return result;
}

FailureOr<Shape>
mlir::gpipe::nn::inferLinearShape(ArrayRef<int64_t> input,
                                  ArrayRef<int64_t> weight,
                                  std::optional<ArrayRef<int64_t>> bias,
                                  bool transposeWeight, EmitErrorFn emitError) {
  if (input.empty() || weight.size() != 2)
    return emitError() << "expected linear input of rank >= 1 and a 2-D "
                          "weight, got "
                       << formatShape(input) << " and " << formatShape(weight),
           failure();
  int64_t in = transposeWeight ? weight[1] : weight[0];
  int64_t out = transposeWeight ? weight[0] : weight[1];
  if (input.back() != in)
    return emitError() << "linear input features " << input.back()
                       << " do not match the " << in << " input features of "
                       << (transposeWeight ? "transposed " : "") << "weight "
                       << formatShape(weight),
           failure();
  if (bias && (bias->size() != 1 || (*bias)[0] != out))
    return emitError() << "expected linear bias of shape [" << out << "], got "
                       << formatShape(*bias),
           failure();
  Shape result(input.begin(), input.end());
  result.back() = out;
  return result;
}

FailureOr<Shape> mlir::gpipe::nn::inferWindowShape(ArrayRef<int64_t> image,
                                                   const Window2D &window,
                                                   EmitErrorFn emitError) {
  auto pair = [&](ArrayRef<int64_t> v, StringRef name, size_t size,
                  int64_t least) -> LogicalResult {
    if (v.size() != size)
      return emitError() << "expected " << size << " " << name << ", got "
                         << v.size();
    for (int64_t x : v)
      if (x < least)
        return emitError() << "expected " << name << " >= " << least << ", got "
                           << formatShape(v);
    return success();
  };
  if (image.size() != 2 || failed(pair(window.kernel, "kernel sizes", 2, 1)) ||
      failed(pair(window.strides, "strides", 2, 1)) ||
      failed(pair(window.pads, "pads", 4, 0)) ||
      failed(pair(window.dilations, "dilations", 2, 1)))
    return failure();
  Shape out;
  for (int d = 0; d < 2; ++d) {
    int64_t begin = window.pads[d], end = window.pads[d + 2];
    int64_t extent = window.dilations[d] * (window.kernel[d] - 1) + 1;
    int64_t span = image[d] + begin + end - extent;
    if (span < 0)
      return emitError() << "a window of " << extent << " does not fit a "
                         << (d ? "width" : "height") << " of " << image[d]
                         << " padded by " << begin << " and " << end;
    int64_t stride = window.strides[d];
    int64_t size = span / stride + 1;
    if (window.ceilMode && span % stride != 0) {
      ++size;
      // The last window must start inside the image or its leading padding.
      if ((size - 1) * stride >= image[d] + begin)
        --size;
    }
    out.push_back(size);
  }
  return out;
}

FailureOr<Shape> mlir::gpipe::nn::inferConv2DShape(
    ArrayRef<int64_t> input, ArrayRef<int64_t> weight,
    std::optional<ArrayRef<int64_t>> bias, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations, int64_t groups,
    EmitErrorFn emitError) {
  if (input.size() != 4)
    return emitError() << "expected an NCHW input of rank 4, got "
                       << formatShape(input);
  if (weight.size() != 4)
    return emitError() << "expected a weight [O, C/groups, kh, kw], got "
                       << formatShape(weight);
  if (groups < 1 || input[1] % groups != 0 || weight[0] % groups != 0)
    return emitError() << "groups " << groups << " must divide the " << input[1]
                       << " input and " << weight[0] << " output channels";
  if (weight[1] * groups != input[1])
    return emitError() << "weight " << formatShape(weight) << " with groups "
                       << groups << " expects " << weight[1] * groups
                       << " input channels, got " << input[1];
  if (bias && *bias != ArrayRef<int64_t>{weight[0]})
    return emitError() << "expected bias of shape [" << weight[0] << "], got "
                       << formatShape(*bias);
  Window2D window{weight.drop_front(2), strides, pads, dilations, false};
  FailureOr<Shape> image =
      inferWindowShape(input.drop_front(2), window, emitError);
  if (failed(image))
    return failure();
  return Shape{input[0], weight[0], (*image)[0], (*image)[1]};
}

FailureOr<Shape> mlir::gpipe::nn::inferPool2DShape(ArrayRef<int64_t> input,
                                                   const Window2D &window,
                                                   EmitErrorFn emitError) {
  if (input.size() != 4)
    return emitError() << "expected an NCHW input of rank 4, got "
                       << formatShape(input);
  FailureOr<Shape> image =
      inferWindowShape(input.drop_front(2), window, emitError);
  if (failed(image))
    return failure();
  for (int d = 0; d < 2; ++d)
    if (window.pads[d] >= window.kernel[d] ||
        window.pads[d + 2] >= window.kernel[d])
      return emitError() << "pads " << formatShape(window.pads)
                         << " must be smaller than the kernel "
                         << formatShape(window.kernel);
  return Shape{input[0], input[1], (*image)[0], (*image)[1]};
}

LogicalResult
mlir::gpipe::nn::verifyBatchNormShapes(ArrayRef<int64_t> input,
                                       ArrayRef<ArrayRef<int64_t>> perChannel,
                                       EmitErrorFn emitError) {
  if (input.size() < 2)
    return emitError() << "expected an input [N, C, ...] of rank >= 2, got "
                       << formatShape(input);
  for (ArrayRef<int64_t> shape : perChannel)
    if (shape != ArrayRef<int64_t>{input[1]})
      return emitError() << "expected per-channel operands of shape ["
                         << input[1] << "], got " << formatShape(shape);
  return success();
}

LogicalResult mlir::gpipe::nn::verifyAxis(ArrayRef<int64_t> shape, int64_t axis,
                                          EmitErrorFn emitError) {
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    return emitError() << "axis " << axis << " is out of range for shape "
                       << formatShape(shape);
  return success();
}

LogicalResult
mlir::gpipe::nn::verifyLayerNormShapes(ArrayRef<int64_t> input,
                                       ArrayRef<int64_t> scale,
                                       std::optional<ArrayRef<int64_t>> bias,
                                       int64_t axis, EmitErrorFn emitError) {
  if (failed(verifyAxis(input, axis, emitError)))
    return failure();
  ArrayRef<int64_t> normalized = input.drop_front(axis);
  if (scale != normalized)
    return emitError() << "expected layer_norm scale of shape "
                       << formatShape(normalized) << ", got "
                       << formatShape(scale);
  if (bias && *bias != normalized)
    return emitError() << "expected layer_norm bias of shape "
                       << formatShape(normalized) << ", got "
                       << formatShape(*bias);
  return success();
}

FailureOr<Shape> mlir::gpipe::nn::inferGatherShape(ArrayRef<int64_t> data,
                                                   ArrayRef<int64_t> indices,
                                                   int64_t axis,
                                                   EmitErrorFn emitError) {
  if (failed(verifyAxis(data, axis, emitError)))
    return failure();
  Shape result(data.begin(), data.begin() + axis);
  result.append(indices.begin(), indices.end());
  result.append(data.begin() + axis + 1, data.end());
  return result;
}

FailureOr<Shape> mlir::gpipe::nn::inferTransposeShape(ArrayRef<int64_t> input,
                                                      ArrayRef<int64_t> perm,
                                                      EmitErrorFn emitError) {
  if (perm.size() != input.size())
    return emitError() << "transpose permutation of length " << perm.size()
                       << " does not match rank " << input.size(),
           failure();
  llvm::SmallVector<bool> seen(input.size(), false);
  Shape result;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p]) {
      InFlightDiagnostic d = emitError();
      d << "transpose permutation [";
      llvm::interleaveComma(perm, d);
      d << "] is not a permutation of 0.." << input.size() - 1;
      return failure();
    }
    seen[p] = true;
    result.push_back(input[p]);
  }
  return result;
}

FailureOr<llvm::SmallVector<Shape>>
mlir::gpipe::nn::inferSplitShapes(ArrayRef<int64_t> input, int64_t axis,
                                  ArrayRef<int64_t> sizes,
                                  EmitErrorFn emitError) {
  if (failed(verifyAxis(input, axis, emitError)))
    return failure();
  // Sum without overflow: stop once the sizes exceed the dim.
  int64_t total = 0;
  bool exceeds = false;
  for (int64_t s : sizes) {
    if (s <= 0)
      return emitError() << "split sizes must be positive, got " << s,
             failure();
    if (s > input[axis] - total)
      exceeds = true;
    else
      total += s;
  }
  if (exceeds || total != input[axis]) {
    InFlightDiagnostic d = emitError();
    d << "split sizes [";
    llvm::interleaveComma(sizes, d);
    d << "] do not sum to " << input[axis] << ", dim " << axis << " of "
      << formatShape(input);
    return failure();
  }
  llvm::SmallVector<Shape> results;
  for (int64_t s : sizes) {
    Shape r(input.begin(), input.end());
    r[axis] = s;
    results.push_back(r);
  }
  return results;
}

FailureOr<Shape> mlir::gpipe::nn::inferSliceShape(ArrayRef<int64_t> input,
                                                  ArrayRef<int64_t> offsets,
                                                  ArrayRef<int64_t> sizes,
                                                  ArrayRef<int64_t> strides,
                                                  EmitErrorFn emitError) {
  size_t rank = input.size();
  if (offsets.size() != rank || sizes.size() != rank || strides.size() != rank)
    return emitError() << "slice needs one offset, size and stride per dim "
                          "of "
                       << formatShape(input) << ", got " << offsets.size()
                       << ", " << sizes.size() << " and " << strides.size(),
           failure();
  for (size_t i = 0; i < rank; ++i) {
    // The last element read is offset + (size - 1) * stride; compare without
    // overflowing.
    if (strides[i] <= 0 || offsets[i] < 0 || sizes[i] < 0 ||
        (sizes[i] > 0 &&
         (offsets[i] >= input[i] ||
          sizes[i] - 1 > (input[i] - 1 - offsets[i]) / strides[i])))
      return emitError() << "slice of dim " << i << " (offset " << offsets[i]
                         << ", size " << sizes[i] << ", stride " << strides[i]
                         << ") is out of bounds for " << formatShape(input),
             failure();
  }
  return Shape(sizes.begin(), sizes.end());
}

FailureOr<Shape>
mlir::gpipe::nn::inferConcatShape(ArrayRef<ArrayRef<int64_t>> inputs,
                                  int64_t axis, EmitErrorFn emitError) {
  if (inputs.empty())
    return emitError() << "concat needs at least one input", failure();
  if (failed(verifyAxis(inputs[0], axis, emitError)))
    return failure();
  Shape result(inputs[0].begin(), inputs[0].end());
  for (ArrayRef<int64_t> s : inputs.drop_front()) {
    bool ok = s.size() == result.size();
    for (size_t i = 0; ok && i < s.size(); ++i)
      ok = static_cast<int64_t>(i) == axis || s[i] == result[i];
    if (!ok)
      return emitError() << "concat inputs " << formatShape(inputs[0])
                         << " and " << formatShape(s) << " differ outside axis "
                         << axis,
             failure();
    result[axis] += s[axis];
  }
  return result;
}

FailureOr<Shape> mlir::gpipe::nn::inferUnsqueezeShape(ArrayRef<int64_t> input,
                                                      ArrayRef<int64_t> axes,
                                                      EmitErrorFn emitError) {
  int64_t rank = input.size() + axes.size();
  Shape result;
  size_t next = 0, a = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (a < axes.size() && axes[a] == i) {
      result.push_back(1);
      ++a;
    } else {
      if (next >= input.size())
        break;
      result.push_back(input[next++]);
    }
  }
  if (a != axes.size() || static_cast<int64_t>(result.size()) != rank) {
    InFlightDiagnostic d = emitError();
    d << "unsqueeze axes [";
    llvm::interleaveComma(axes, d);
    d << "] must be sorted, distinct and below " << rank;
    return failure();
  }
  return result;
}

LogicalResult mlir::gpipe::nn::verifyReshape(ArrayRef<int64_t> input,
                                             ArrayRef<int64_t> result,
                                             EmitErrorFn emitError) {
  if (numElements(input) != numElements(result))
    return emitError() << "cannot reshape " << formatShape(input) << " ("
                       << numElements(input) << " elements) to "
                       << formatShape(result) << " (" << numElements(result)
                       << " elements)";
  return success();
}

LogicalResult mlir::gpipe::nn::verifyCrossEntropyShapes(
    ArrayRef<int64_t> logits, ArrayRef<int64_t> labels, EmitErrorFn emitError) {
  if (logits.empty())
    return emitError() << "expected logits of rank >= 1, got "
                       << formatShape(logits);
  if (labels != logits.drop_back())
    return emitError() << "expected labels of shape "
                       << formatShape(logits.drop_back()) << " for logits "
                       << formatShape(logits) << ", got "
                       << formatShape(labels);
  return success();
}

FailureOr<Shape> mlir::gpipe::nn::inferReduceShape(ArrayRef<int64_t> input,
                                                   ArrayRef<int64_t> axes,
                                                   bool keepDims,
                                                   EmitErrorFn emitError) {
  int64_t rank = input.size();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1])) {
      InFlightDiagnostic d = emitError();
      d << "reduce axes [";
      llvm::interleaveComma(axes, d);
      d << "] must be sorted, distinct and below the rank " << rank << " of "
        << formatShape(input);
      return failure();
    }
  }
  Shape result;
  size_t a = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (a < axes.size() && axes[a] == i) {
      ++a;
      if (keepDims)
        result.push_back(1);
      continue;
    }
    result.push_back(input[i]);
  }
  return result;
}

LogicalResult mlir::gpipe::nn::verifyInsertSlice(ArrayRef<int64_t> source,
                                                 ArrayRef<int64_t> dest,
                                                 ArrayRef<int64_t> offsets,
                                                 ArrayRef<int64_t> strides,
                                                 EmitErrorFn emitError) {
  if (source.size() != dest.size())
    return emitError() << "cannot insert a slice of rank " << source.size()
                       << " into a tensor of rank " << dest.size();
  return inferSliceShape(dest, offsets, source, strides, emitError);
}

Type mlir::gpipe::nn::inferBroadcastType(Location loc, Value lhs, Value rhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  auto r = cast<RankedTensorType>(rhs.getType());
  FailureOr<Shape> shape = inferBroadcastShape(
      {l.getShape(), r.getShape()}, [&] { return mlir::emitError(loc); });
  if (failed(shape))
    return l;
  return RankedTensorType::get(*shape, l.getElementType());
}
