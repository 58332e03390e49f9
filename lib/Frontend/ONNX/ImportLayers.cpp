//===- ImportLayers.cpp - Contractions, normalizations, windows -----------===//
//
// Gemm, MatMul, Softmax, losses, LeakyRelu, Gelu, reductions, layer and
// batch normalization, convolution and pooling.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::onnximport;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Contractions and normalizations
//===----------------------------------------------------------------------===//

LogicalResult Importer::importGemm(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 3)))
    return failure();
  float alpha = 1.0f, beta = 1.0f;
  int64_t transA = 0, transB = 0;
  if (failed(getFloatAttr(n, "alpha", alpha)) ||
      failed(getFloatAttr(n, "beta", beta)) ||
      failed(getIntAttr(n, "transA", transA)) ||
      failed(getIntAttr(n, "transB", transB)))
    return failure();
  int a = n.inputs[0], b = n.inputs[1], c = n.input(2);
  if (failed(requireFloat(n, 0, "operand A")) ||
      failed(requireSameElementType(n, {a, b, c})))
    return failure();
  std::optional<ArrayRef<int64_t>> cShape = optionalShapeOf(c);
  FailureOr<nn::Shape> shape =
      nn::inferGemmShape(shapeOf(a), shapeOf(b), cShape, transA != 0,
                         transB != 0, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  FailureOr<Value> va = getValue(a, n.loc), vb = getValue(b, n.loc);
  if (failed(va) || failed(vb))
    return failure();
  FailureOr<Value> vcOrNull = getOptionalValue(c, n.loc);
  if (failed(vcOrNull))
    return failure();
  Value vc = *vcOrNull;
  auto type = RankedTensorType::get(*shape, elementTypeOf(a));
  return defineValue(n, 0,
                     nn::GemmOp::create(builder, n.loc, type, *va, *vb, vc,
                                        llvm::APFloat(alpha),
                                        llvm::APFloat(beta), transA != 0,
                                        transB != 0));
}

/// Numpy matmul; 1-D operands are promoted to matrices with nn.reshape and
/// the added dim is removed from the result, as numpy does.
LogicalResult Importer::importMatMul(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)) ||
      failed(requireFloat(n, 0, "left operand")) ||
      failed(requireSameElementType(n, n.inputs)))
    return failure();
  int a = n.inputs[0], b = n.inputs[1];
  if (shapeOf(a).empty() || shapeOf(b).empty())
    return n.shapeError() << "expected matmul operands of rank >= 1, got "
                          << nn::formatShape(shapeOf(a)) << " and "
                          << nn::formatShape(shapeOf(b)),
           failure();
  nn::Shape lhs(shapeOf(a)), rhs(shapeOf(b));
  bool promoteLhs = lhs.size() == 1, promoteRhs = rhs.size() == 1;
  if (promoteLhs)
    lhs.insert(lhs.begin(), 1);
  if (promoteRhs)
    rhs.push_back(1);
  FailureOr<nn::Shape> shape =
      nn::inferMatMulShape(lhs, rhs, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  FailureOr<Value> va = getValue(a, n.loc), vb = getValue(b, n.loc);
  if (failed(va) || failed(vb))
    return failure();
  Type element = elementTypeOf(a);
  if (promoteLhs)
    *va = nn::ReshapeOp::create(builder, n.loc,
                                RankedTensorType::get(lhs, element), *va);
  if (promoteRhs)
    *vb = nn::ReshapeOp::create(builder, n.loc,
                                RankedTensorType::get(rhs, element), *vb);
  Value result = nn::MatMulOp::create(
      builder, n.loc, RankedTensorType::get(*shape, element), *va, *vb);
  if (promoteLhs || promoteRhs) {
    nn::Shape squeezed(*shape);
    if (promoteRhs)
      squeezed.pop_back();
    if (promoteLhs)
      squeezed.erase(squeezed.end() - 1 - (promoteRhs ? 0 : 1));
    result = nn::ReshapeOp::create(
        builder, n.loc, RankedTensorType::get(squeezed, element), result);
  }
  return defineValue(n, 0, result);
}

/// The normalized axis of Softmax and LogSoftmax. Opset 13 made them
/// per-axis ops with axis -1 by default; before, they flattened to 2-D at
/// `axis` (default 1), the same only for the last axis.
LogicalResult Importer::getSoftmaxAxis(NodeCtx &n, int x, int64_t &axis) {
  int64_t rank = shapeOf(x).size();
  axis = opset >= 13 ? -1 : 1;
  if (failed(getIntAttr(n, "axis", axis)) ||
      failed(normalizeAxis(n, axis, rank)))
    return failure();
  if (opset < 13 && axis != rank - 1)
    return n.error() << "normalizes from axis " << axis << " of rank " << rank
                     << " with pre-opset-13 semantics; gpipe supports only "
                        "the last axis",
           failure();
  return success();
}

LogicalResult Importer::importSoftmax(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  int x = n.inputs[0];
  int64_t axis;
  if (failed(getSoftmaxAxis(n, x, axis)))
    return failure();
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  return defineValue(n, 0,
                     nn::SoftmaxOp::create(builder, n.loc, typeOf(x), *v,
                                           static_cast<uint64_t>(axis)));
}

/// LogSoftmax as `nn.log(nn.softmax(x))`. The softmax is the stable one
/// (it subtracts the maximum), so this is exact to rounding unless a
/// probability underflows, i.e. a log-probability below about -87 in f32.
/// A LogSoftmax that feeds the graph's NegativeLogLikelihoodLoss is not
/// imported at all: that pair is the cross-entropy loss (see matchLoss).
LogicalResult Importer::importLogSoftmax(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  int x = n.inputs[0];
  int64_t axis;
  if (failed(getSoftmaxAxis(n, x, axis)))
    return failure();
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  Value softmax = nn::SoftmaxOp::create(builder, n.loc, typeOf(x), *v,
                                        static_cast<uint64_t>(axis));
  return defineValue(n, 0,
                     nn::LogOp::create(builder, n.loc, typeOf(x), softmax));
}

/// Reached only for a NegativeLogLikelihoodLoss or SoftmaxCrossEntropyLoss
/// that is not the graph's loss (see matchLoss): gpipe attaches the loss
/// itself and takes these nodes only in that role.
LogicalResult Importer::importLossNode(NodeCtx &n) {
  auto it = lossMismatch.find(n.name);
  return n.error() << "is not a loss gpipe can train with: "
                   << (it == lossMismatch.end() ? std::string("unknown")
                                                : it->second)
                   << "; gpipe takes it only as the graph's single output, "
                      "with mean reduction, no weight, no ignore_index of 0 "
                      "or more, a graph input as target and [N, C] scores "
                      "(through a LogSoftmax over C for "
                      "NegativeLogLikelihoodLoss)",
         failure();
}

/// LeakyRelu as `relu(x) - alpha * relu(-x)`: bit for bit `x` or
/// `alpha * x`, and reverse mode gives `g` or `alpha * g` (0 at x = 0).
LogicalResult Importer::importLeakyRelu(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  float alpha = 0.01f;
  if (failed(getFloatAttr(n, "alpha", alpha)))
    return failure();
  int x = n.inputs[0];
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  RankedTensorType type = typeOf(x);
  HostTensor slope;
  slope.elementType = type.getElementType();
  slope.floats.push_back(roundToFloatType(slope.elementType, alpha));
  Value vslope = materialize(slope, n.loc, n.name + "/alpha");
  Value pos = nn::ReluOp::create(builder, n.loc, type, *v);
  Value neg = nn::ReluOp::create(builder, n.loc, type,
                                 nn::NegOp::create(builder, n.loc, type, *v));
  Value scaled = nn::MulOp::create(builder, n.loc, type, neg, vslope);
  return defineValue(n, 0,
                     nn::SubOp::create(builder, n.loc, type, pos, scaled));
}

/// Gelu (opset 20): the exact erf form; the tanh approximation is refused.
LogicalResult Importer::importGelu(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  const onnx::AttributeProto *attr = findAttr(n.proto, "approximate");
  if (!attr || attr->s() == "none")
    return importFloatUnary<nn::GeluOp>(n);
  if (attr->s() != "tanh")
    return n.error() << "has approximate '" << attr->s()
                     << "'; gpipe supports 'none' and 'tanh'",
           failure();
  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (Hendrycks and
  // Gimpel's tanh approximation), in nn ops.
  FailureOr<Value> x = getValue(n, 0);
  if (failed(x))
    return failure();
  Location loc = n.loc;
  auto c = [&](double v) { return scalarLike(*x, v, n); };
  Value cube = nn::MulOp::create(builder, loc,
                                 nn::MulOp::create(builder, loc, *x, *x), *x);
  Value inner = nn::AddOp::create(
      builder, loc, *x, nn::MulOp::create(builder, loc, cube, c(0.044715)));
  Value scaled =
      nn::MulOp::create(builder, loc, inner, c(std::sqrt(2.0 / M_PI)));
  Value t = nn::TanhOp::create(builder, loc, scaled.getType(), scaled);
  Value onePlus = nn::AddOp::create(builder, loc, t, c(1.0));
  Value half = nn::MulOp::create(builder, loc, *x, c(0.5));
  return defineValue(n, 0, nn::MulOp::create(builder, loc, half, onePlus));
}

/// ReduceSum and ReduceMean over float tensors, as `nn.reduce_sum` (and a
/// division by the element count for the mean). The axes are an attribute
/// before opset 13 (ReduceSum) or 18 (ReduceMean) and a constant input
/// from then on; no axes reduce every axis, unless noop_with_empty_axes.
LogicalResult Importer::importReduce(NodeCtx &n) {
  bool mean = n.opType == "ReduceMean";
  int64_t axesInputFrom = mean ? 18 : 13;
  bool axesInput = opset >= axesInputFrom;
  if (failed(expectInputs(n, 1, axesInput ? 2 : 1)) ||
      failed(requireFloat(n, 0, "input")))
    return failure();
  int x = n.inputs[0];
  ArrayRef<int64_t> in = shapeOf(x);
  int64_t rank = in.size(), keepDims = 1, noop = 0;
  if (failed(getIntAttr(n, "keepdims", keepDims)))
    return failure();
  SmallVector<int64_t> axes;
  if (axesInput) {
    if (findAttr(n.proto, "axes"))
      return n.error() << "has an 'axes' attribute; from opset "
                       << axesInputFrom << " the axes are its second input",
             failure();
    if (failed(getIntAttr(n, "noop_with_empty_axes", noop)))
      return failure();
    if (n.input(1) >= 0) {
      FailureOr<SmallVector<int64_t>> a = constInts(n, 1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else {
    std::optional<SmallVector<int64_t>> a;
    if (failed(getIntsAttr(n, "axes", a)))
      return failure();
    if (a)
      axes = *a;
  }
  if (axes.empty()) {
    if (noop)
      return defineAlias(n, 0, x);
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  for (int64_t &axis : axes)
    if (failed(normalizeAxis(n, axis, rank)))
      return failure();
  llvm::sort(axes);
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] == axes[i - 1])
      return n.error() << "reduces axis " << axes[i] << " twice", failure();
  FailureOr<nn::Shape> shape = nn::inferReduceShape(
      in, axes, keepDims != 0, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  Value sum = nn::ReduceSumOp::create(builder, n.loc, *v, axes, keepDims != 0);
  if (!mean)
    return defineValue(n, 0, sum);
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= in[axis];
  HostTensor divisor;
  divisor.elementType = elementTypeOf(x);
  divisor.floats.push_back(
      roundToFloatType(divisor.elementType, static_cast<double>(count)));
  Value vcount = materialize(divisor, n.loc, n.name + "/count");
  return defineValue(
      n, 0, nn::DivOp::create(builder, n.loc, sum.getType(), sum, vcount));
}

LogicalResult Importer::importLayerNorm(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 3)) || failed(requireFloat(n, 0, "input")) ||
      failed(requireSameElementType(n, n.inputs)))
    return failure();
  int x = n.inputs[0], scale = n.inputs[1], bias = n.input(2);
  int64_t axis = -1;
  float epsilon = 1e-5f;
  if (failed(getIntAttr(n, "axis", axis)) ||
      failed(getFloatAttr(n, "epsilon", epsilon)) ||
      failed(checkEpsilon(n, epsilon)) ||
      failed(normalizeAxis(n, axis, shapeOf(x).size())))
    return failure();
  std::optional<ArrayRef<int64_t>> biasShape = optionalShapeOf(bias);
  if (failed(nn::verifyLayerNormShapes(shapeOf(x), shapeOf(scale), biasShape,
                                       axis, [&] { return n.shapeError(); })))
    return failure();
  FailureOr<Value> vx = getValue(x, n.loc), vs = getValue(scale, n.loc);
  if (failed(vx) || failed(vs))
    return failure();
  FailureOr<Value> vbOrNull = getOptionalValue(bias, n.loc);
  if (failed(vbOrNull))
    return failure();
  Value vb = *vbOrNull;
  if (failed(defineValue(n, 0,
                         nn::LayerNormOp::create(builder, n.loc, typeOf(x), *vx,
                                                 *vs, vb,
                                                 static_cast<uint64_t>(axis),
                                                 llvm::APFloat(epsilon)))))
    return failure();
  // The optional Mean and InvStdDev outputs (dims from `axis` on kept as
  // 1), where read: the statistics the normalization used, in nn ops.
  auto used = [&](int result) {
    return result < n.proto.output_size() && !n.proto.output(result).empty() &&
           consumed.contains(n.proto.output(result));
  };
  if (!used(1) && !used(2))
    return success();
  ArrayRef<int64_t> shape = shapeOf(x);
  SmallVector<int64_t> axes;
  int64_t count = 1;
  for (int64_t d = axis; d < int64_t(shape.size()); ++d) {
    axes.push_back(d);
    count *= shape[d];
  }
  Location loc = n.loc;
  auto mean = [&](Value v) {
    Value sum = nn::ReduceSumOp::create(builder, loc, v, axes,
                                        /*keepDims=*/true);
    return nn::MulOp::create(builder, loc, sum,
                             scalarLike(*vx, 1.0 / double(count), n))
        .getResult();
  };
  Value mu = mean(*vx);
  Value centered = nn::SubOp::create(builder, loc, *vx, mu);
  Value var = mean(nn::MulOp::create(builder, loc, centered, centered));
  Value shifted =
      nn::AddOp::create(builder, loc, var, scalarLike(*vx, epsilon, n));
  Value root = nn::SqrtOp::create(builder, loc, shifted.getType(), shifted);
  Value inv = nn::ReciprocalOp::create(builder, loc, root.getType(), root);
  if (failed(defineValue(n, 1, mu)))
    return failure();
  return defineValue(n, 2, inv);
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch normalization
//===----------------------------------------------------------------------===//

/// The window attributes of Conv, MaxPool and AveragePool over a 4-D NCHW
/// input: kernel_shape (or the weight's), strides, dilations, pads or
/// auto_pad (the padding SAME_UPPER/SAME_LOWER imply, by the ONNX
/// operators' definition), ceil_mode.
LogicalResult Importer::getWindow(NodeCtx &n, int x,
                                  std::optional<ArrayRef<int64_t>> weightKernel,
                                  WindowAttrs &w) {
  ArrayRef<int64_t> in = shapeOf(x);
  if (in.size() != 3 && in.size() != 4)
    return n.error() << "has a rank-" << in.size() << " input " << typeOf(x)
                     << "; gpipe supports 1-D sequences [N, C, L] and 2-D "
                        "images [N, C, H, W]",
           failure();
  size_t spatial = in.size() - 2;
  std::optional<SmallVector<int64_t>> kernel, strides, dilations, pads;
  int64_t ceilMode = 0;
  if (failed(getIntsAttr(n, "kernel_shape", kernel)) ||
      failed(getIntsAttr(n, "strides", strides)) ||
      failed(getIntsAttr(n, "dilations", dilations)) ||
      failed(getIntsAttr(n, "pads", pads)) ||
      failed(getIntAttr(n, "ceil_mode", ceilMode)))
    return failure();
  if (!kernel && weightKernel)
    kernel.emplace(weightKernel->begin(), weightKernel->end());
  if (!kernel)
    return n.error() << "has no kernel_shape", failure();
  if (weightKernel && ArrayRef<int64_t>(*kernel) != *weightKernel)
    return n.error() << "has kernel_shape " << nn::formatShape(*kernel)
                     << " but its weight's kernel is "
                     << nn::formatShape(*weightKernel),
           failure();
  auto expect = [&](std::optional<SmallVector<int64_t>> &v, StringRef name,
                    size_t size, int64_t fill) -> LogicalResult {
    if (!v)
      v.emplace(size, fill);
    if (v->size() != size)
      return n.error() << "has " << v->size() << " " << name << "; a "
                       << spatial << "-D window needs " << size,
             failure();
    return success();
  };
  if (failed(expect(kernel, "kernel sizes", spatial, 1)) ||
      failed(expect(strides, "strides", spatial, 1)) ||
      failed(expect(dilations, "dilations", spatial, 1)))
    return failure();
  std::string autoPad = "NOTSET";
  if (const onnx::AttributeProto *attr = findAttr(n.proto, "auto_pad"))
    autoPad = attr->s();
  if (autoPad == "NOTSET") {
    if (failed(expect(pads, "pads", 2 * spatial, 0)))
      return failure();
  } else if (autoPad == "VALID") {
    pads.emplace(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Output ceil(in / stride); the total padding split evenly, the odd one
    // at the end (UPPER) or the beginning (LOWER).
    pads.emplace(2 * spatial, 0);
    for (size_t d = 0; d < spatial; ++d) {
      int64_t size = in[2 + d], stride = (*strides)[d];
      int64_t out = (size + stride - 1) / stride;
      int64_t extent = (*dilations)[d] * ((*kernel)[d] - 1) + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - size);
      int64_t small = total / 2, large = total - small;
      (*pads)[d] = autoPad == "SAME_UPPER" ? small : large;
      (*pads)[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else {
    return n.error() << "has auto_pad '" << autoPad
                     << "' (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)",
           failure();
  }
  w.kernel = std::move(*kernel);
  w.strides = std::move(*strides);
  w.dilations = std::move(*dilations);
  w.pads = std::move(*pads);
  w.ceilMode = ceilMode != 0;
  // A 1-D window is the 2-D one of height 1 over [N, C, 1, L].
  w.oneD = spatial == 1;
  if (w.oneD) {
    w.kernel.insert(w.kernel.begin(), 1);
    w.strides.insert(w.strides.begin(), 1);
    w.dilations.insert(w.dilations.begin(), 1);
    w.pads = {0, w.pads[0], 0, w.pads[1]};
  }
  return success();
}

/// `v` ([N, C, L], or a 1-D convolution's weight [O, C, k]) with a unit dim
/// inserted at 2: the 2-D form of a 1-D window.
static Value liftTo2D(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.insert(shape.begin() + 2, 1);
  return nn::ReshapeOp::create(b, loc, type.clone(shape), v);
}

/// The inverse of liftTo2D on a 2-D window's result [N, C, 1, L'].
static Value dropTo1D(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + 2);
  return nn::ReshapeOp::create(b, loc, type.clone(shape), v);
}

LogicalResult Importer::importConv(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 3)) || failed(requireFloat(n, 0, "input")) ||
      failed(requireSameElementType(n, n.inputs)))
    return failure();
  int x = n.inputs[0], weight = n.inputs[1], bias = n.input(2);
  int64_t groups = 1;
  if (failed(getIntAttr(n, "group", groups)))
    return failure();
  ArrayRef<int64_t> wShape = shapeOf(weight);
  if (wShape.size() != 4 && wShape.size() != 3)
    return n.error() << "has a weight of type " << typeOf(weight)
                     << "; gpipe supports 1-D and 2-D convolutions [O, "
                        "C/group, k] and [O, C/group, kh, kw]",
           failure();
  WindowAttrs w;
  if (failed(getWindow(n, x, wShape.drop_front(2), w)))
    return failure();
  if (w.oneD != (wShape.size() == 3))
    return n.error() << "convolves " << typeOf(x) << " with a weight of type "
                     << typeOf(weight) << " of another number of dims",
           failure();
  SmallVector<int64_t> inShape(shapeOf(x)), weightShape(wShape);
  if (w.oneD) {
    inShape.insert(inShape.begin() + 2, 1);
    weightShape.insert(weightShape.begin() + 2, 1);
  }
  if (w.ceilMode)
    return n.error() << "has ceil_mode, which Conv does not define", failure();
  std::optional<ArrayRef<int64_t>> biasShape = optionalShapeOf(bias);
  FailureOr<nn::Shape> shape =
      nn::inferConv2DShape(inShape, weightShape, biasShape, w.strides, w.pads,
                           w.dilations, groups, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  FailureOr<Value> vx = getValue(x, n.loc), vw = getValue(weight, n.loc);
  if (failed(vx) || failed(vw))
    return failure();
  FailureOr<Value> vbOrNull = getOptionalValue(bias, n.loc);
  if (failed(vbOrNull))
    return failure();
  Value vb = *vbOrNull;
  Value input = *vx, filter = *vw;
  if (w.oneD) {
    input = liftTo2D(builder, n.loc, input);
    filter = liftTo2D(builder, n.loc, filter);
  }
  auto type = RankedTensorType::get(*shape, elementTypeOf(x));
  Value result = nn::Conv2DOp::create(builder, n.loc, type, input, filter, vb,
                                      w.strides, w.pads, w.dilations, groups);
  return defineValue(n, 0, w.oneD ? dropTo1D(builder, n.loc, result) : result);
}

LogicalResult Importer::importPool(NodeCtx &n) {
  bool global = n.opType.starts_with("Global");
  bool max = n.opType.ends_with("MaxPool");
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")) ||
      failed(checkUnusedOutput(n, 1, "Indices")))
    return failure();
  int x = n.inputs[0];
  WindowAttrs w;
  if (global) {
    ArrayRef<int64_t> in = shapeOf(x);
    // Other than 2-D (a sequence [N, C, L] pooled, as Swin's head): the
    // mean over every dim after the channels, kept as 1s.
    if (!max && in.size() >= 3 && in.size() != 4) {
      SmallVector<int64_t> axes;
      int64_t count = 1;
      for (int64_t d = 2; d < int64_t(in.size()); ++d) {
        axes.push_back(d);
        count *= in[d];
      }
      FailureOr<Value> v = getValue(x, n.loc);
      if (failed(v))
        return failure();
      Value sum = nn::ReduceSumOp::create(builder, n.loc, *v, axes,
                                          /*keepDims=*/true);
      return defineValue(
          n, 0,
          nn::MulOp::create(
              builder, n.loc, sum,
              scalarLike(*v, 1.0 / double(std::max<int64_t>(count, 1)), n)));
    }
    if (in.size() != 4)
      return n.error() << "has a rank-" << in.size() << " input " << typeOf(x)
                       << "; gpipe supports 2-D images [N, C, H, W]",
             failure();
    w.kernel = {in[2], in[3]};
    w.strides = {1, 1};
    w.dilations = {1, 1};
    w.pads = {0, 0, 0, 0};
  } else if (failed(getWindow(n, x, std::nullopt, w))) {
    return failure();
  }
  int64_t countIncludePad = 0;
  if (!max && failed(getIntAttr(n, "count_include_pad", countIncludePad)))
    return failure();
  if (!max && llvm::any_of(w.dilations, [](int64_t d) { return d != 1; }))
    return n.error() << "has dilations " << nn::formatShape(w.dilations)
                     << "; gpipe's average pooling has none",
           failure();
  nn::Window2D window{w.kernel, w.strides, w.pads, w.dilations, w.ceilMode};
  SmallVector<int64_t> inShape(shapeOf(x));
  if (w.oneD)
    inShape.insert(inShape.begin() + 2, 1);
  FailureOr<nn::Shape> shape =
      nn::inferPool2DShape(inShape, window, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  FailureOr<Value> vx = getValue(x, n.loc);
  if (failed(vx))
    return failure();
  Value input = w.oneD ? liftTo2D(builder, n.loc, *vx) : *vx;
  auto type = RankedTensorType::get(*shape, elementTypeOf(x));
  Value result =
      max ? Value(nn::MaxPool2DOp::create(builder, n.loc, type, input, w.kernel,
                                          w.strides, w.pads, w.dilations,
                                          w.ceilMode))
          : Value(nn::AvgPool2DOp::create(builder, n.loc, type, input, w.kernel,
                                          w.strides, w.pads,
                                          countIncludePad != 0, w.ceilMode));
  return defineValue(n, 0, w.oneD ? dropTo1D(builder, n.loc, result) : result);
}

LogicalResult Importer::importBatchNorm(NodeCtx &n) {
  if (failed(expectInputs(n, 5, 5)) || failed(requireFloat(n, 0, "input")) ||
      failed(requireSameElementType(n, n.inputs)))
    return failure();
  float epsilon = 1e-5f, momentum = 0.9f;
  int64_t trainingMode = 0;
  if (failed(getFloatAttr(n, "epsilon", epsilon)) ||
      failed(checkEpsilon(n, epsilon)) ||
      failed(getFloatAttr(n, "momentum", momentum)) ||
      failed(getIntAttr(n, "training_mode", trainingMode)))
    return failure();
  // Before opset 14 training mode shows as the extra outputs (the updated
  // running statistics and the saved batch statistics).
  if (opset < 14)
    trainingMode = n.proto.output_size() > 1;
  // Inference normalizes every batch norm with its running statistics
  // (nn-inference), however it was exported.
  if (!trainingMode && !options.inference)
    return n.error() << "normalizes with fixed running statistics (inference "
                        "mode); gpipe trains batch norms with batch "
                        "statistics: export the model in training mode "
                        "(torch.onnx.export(..., training=torch.onnx."
                        "TrainingMode.TRAINING)), or compile it for "
                        "inference with --inference",
           failure();
  for (int r = 1; r < n.proto.output_size(); ++r)
    if (failed(checkUnusedOutput(
            n, r, r < 3 ? "running statistics" : "saved statistics")))
      return failure();
  if (!(momentum >= 0.0f && momentum <= 1.0f))
    return n.error() << "has momentum " << momentum << " outside [0, 1]",
           failure();
  SmallVector<ArrayRef<int64_t>> perChannel;
  for (int i = 1; i < 5; ++i)
    perChannel.push_back(shapeOf(n.inputs[i]));
  if (failed(nn::verifyBatchNormShapes(shapeOf(n.inputs[0]), perChannel,
                                       [&] { return n.shapeError(); })))
    return failure();
  SmallVector<Value> operands;
  for (int i = 0; i < 5; ++i) {
    FailureOr<Value> v = getValue(n.inputs[i], n.loc);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  // The running statistics must be parameters: the step updates them.
  for (int i = 3; i < 5; ++i)
    if (!operands[i].getDefiningOp<nn::ParamOp>())
      return n.error() << "has a computed "
                       << (i == 3 ? "running mean" : "running variance")
                       << " input; gpipe needs initializers it can update",
             failure();
  // ONNX weighs the old running statistic with `momentum`; nn.batch_norm,
  // like PyTorch, the new one.
  return defineValue(
      n, 0,
      nn::BatchNormOp::create(builder, n.loc, typeOf(n.inputs[0]), operands[0],
                              operands[1], operands[2], operands[3],
                              operands[4], llvm::APFloat(epsilon),
                              llvm::APFloat(float(1.0 - double(momentum)))));
}
