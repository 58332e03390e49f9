//===- ImportShapes.cpp - Constants, shapes and data movement -------------===//
//
// Constant, Shape, Identity, Pad, Dropout, and the ops that move data
// without arithmetic (Gather, Reshape, Flatten, Transpose, Split, Slice,
// Concat, Unsqueeze, Squeeze, Expand) plus the shape-only generators
// (ConstantOfShape, Range, Trilu).
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::onnximport;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Constants, shapes and aliases
//===----------------------------------------------------------------------===//

LogicalResult Importer::importConstant(NodeCtx &n) {
  if (failed(expectInputs(n, 0, 0)))
    return failure();
  if (n.proto.attribute_size() != 1)
    return n.error() << "needs exactly one value attribute, got "
                     << n.proto.attribute_size(),
           failure();
  const onnx::AttributeProto &attr = n.proto.attribute(0);
  StringRef kind = attr.name();
  if (kind == "value") {
    FailureOr<RawTensor> raw = decodeTensor(
        ctx, attr.t(), n.loc, n.opType.str() + " node '" + n.name + "' value");
    if (failed(raw))
      return failure();
    return defineHost(n, 0, toHost(*raw));
  }
  if (kind == "value_float" || kind == "value_floats") {
    HostTensor t;
    t.elementType = builder.getF32Type();
    if (kind == "value_float") {
      t.floats.push_back(attr.f());
    } else {
      t.floats.assign(attr.floats().begin(), attr.floats().end());
      t.shape.push_back(attr.floats_size());
    }
    for (double &d : t.floats)
      d = roundToFloatType(t.elementType, d);
    return defineHost(n, 0, std::move(t));
  }
  if (kind == "value_int" || kind == "value_ints") {
    SmallVector<int64_t> values;
    if (kind == "value_int")
      values.push_back(attr.i());
    else
      values.assign(attr.ints().begin(), attr.ints().end());
    HostTensor t = HostTensor::fromI64(ctx, values);
    if (kind == "value_int")
      t.shape.clear();
    return defineHost(n, 0, std::move(t));
  }
  return n.error() << "has a '" << kind
                   << "' attribute, which gpipe does not support",
         failure();
}

LogicalResult Importer::importShape(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(n.inputs[0]);
  int64_t rank = shape.size(), start = 0, end = rank;
  if (failed(getIntAttr(n, "start", start)) ||
      failed(getIntAttr(n, "end", end)))
    return failure();
  auto clampDim = [&](int64_t d) {
    if (d < 0)
      d += rank;
    return std::clamp<int64_t>(d, 0, rank);
  };
  start = clampDim(start);
  end = std::max(start, clampDim(end));
  return defineHost(n, 0,
                    HostTensor::fromI64(ctx, shape.slice(start, end - start)));
}

LogicalResult Importer::importIdentity(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  return defineAlias(n, 0, n.inputs[0]);
}

/// Where position `p` (of the padded axis, counted from the input's first
/// element, so the pad before it is negative) reads from an input axis of
/// `dim` elements under Pad's `mode`; -1 for a constant-mode pad.
static int64_t padSource(StringRef mode, int64_t p, int64_t dim) {
  if (p >= 0 && p < dim)
    return p;
  if (mode == "edge")
    return std::clamp<int64_t>(p, 0, dim - 1);
  if (mode == "wrap")
    return ((p % dim) + dim) % dim;
  if (mode == "reflect") {
    // Mirrored about the first and last elements, which are not repeated:
    // period 2 (dim - 1).
    if (dim == 1)
      return 0;
    int64_t period = 2 * (dim - 1), q = ((p % period) + period) % period;
    return q < dim ? q : period - q;
  }
  return -1;
}

/// `sources` with the constant's positions (-1) reading position 0.
static SmallVector<int64_t> clampedSources(ArrayRef<int64_t> sources) {
  SmallVector<int64_t> clamped;
  for (int64_t s : sources)
    clamped.push_back(std::max<int64_t>(s, 0));
  return clamped;
}

LogicalResult Importer::getPadAttrs(NodeCtx &n, PadAttrs &attrs) {
  int64_t rank = shapeOf(n.inputs[0]).size();
  std::optional<SmallVector<int64_t>> &pads = attrs.pads;
  if (opset < 11) {
    if (failed(getIntsAttr(n, "pads", pads)))
      return failure();
  } else {
    FailureOr<SmallVector<int64_t>> v = constInts(n, 1, "pads");
    if (failed(v))
      return failure();
    pads = std::move(*v);
  }
  SmallVector<int64_t> &axes = attrs.axes;
  if (opset >= 18 && n.input(3) >= 0) {
    FailureOr<SmallVector<int64_t>> a = constInts(n, 3, "axes");
    if (failed(a))
      return failure();
    for (int64_t axis : *a) {
      if (failed(normalizeAxis(n, axis, rank)))
        return failure();
      if (llvm::is_contained(axes, axis))
        return n.error() << "pads axis " << axis << " twice", failure();
      axes.push_back(axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  if (!pads || pads->size() != 2 * axes.size())
    return n.error() << "has pads "
                     << (pads ? nn::formatShape(*pads) : std::string("[]"))
                     << "; expected 2 per padded axis (" << 2 * axes.size()
                     << ")",
           failure();
  std::string &mode = attrs.mode;
  if (const onnx::AttributeProto *attr = findAttr(n.proto, "mode"))
    mode = attr->s();
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return n.error() << "has mode '" << mode
                     << "'; Pad's modes are constant, reflect, edge and wrap",
           failure();

  // The constant: input 2 from opset 11, the `value` attribute before.
  if (opset < 11) {
    float v = 0.0f;
    if (failed(getFloatAttr(n, "value", v)))
      return failure();
    attrs.value = v;
  } else if (n.input(2) >= 0) {
    FailureOr<HostTensor> v = constScalar(n, 2, "constant_value");
    if (failed(v))
      return failure();
    attrs.value = v->getDouble(0);
  }
  return success();
}

LogicalResult Importer::getPadGathers(NodeCtx &n, const PadAttrs &attrs,
                                      SmallVector<PadGather> &gathers) {
  ArrayRef<int64_t> in = shapeOf(n.inputs[0]);
  const SmallVector<int64_t> &pads = *attrs.pads;
  StringRef mode = attrs.mode;
  for (auto [j, axis] : llvm::enumerate(attrs.axes)) {
    int64_t before = pads[j], after = pads[j + attrs.axes.size()];
    int64_t dim = in[axis], size = dim + before + after;
    if (before == 0 && after == 0)
      continue;
    if (size < 0)
      return n.error() << "crops axis " << axis << " of size " << dim
                       << " by more than its size (pads " << before << ", "
                       << after << ")",
             failure();
    bool grows = before > 0 || after > 0;
    if (grows && mode != "constant" && dim == 0)
      return n.error() << "pads the empty axis " << axis << " in mode '" << mode
                       << "', which reads the input",
             failure();
    if (mode == "reflect" && (before >= dim || after >= dim) && dim > 1)
      return n.error() << "reflects axis " << axis << " of size " << dim
                       << " by " << std::max(before, after)
                       << "; a reflect pad must be smaller than the axis",
             failure();
    SmallVector<int64_t> sources;
    for (int64_t p = -before; p < dim + after; ++p)
      sources.push_back(padSource(mode, p, dim));
    gathers.emplace_back(axis, std::move(sources));
  }
  return success();
}

LogicalResult Importer::foldPad(NodeCtx &n, ArrayRef<PadGather> gathers,
                                const HostTensor &fill) {
  Type element = elementTypeOf(n.inputs[0]);
  HostTensor r = host(n.inputs[0]);
  for (auto &[axis, sources] : gathers) {
    int64_t len = sources.size();
    if (r.shape[axis] == 0) {
      // Constant pads of an empty axis: every element is the value.
      nn::Shape shape(r.shape);
      shape[axis] = len;
      r = HostTensor::zeros(element, shape);
      for (int64_t e = 0, end = r.numElements(); e < end; ++e)
        r.copyElement(e, fill, 0);
      continue;
    }
    r = foldGather(r, clampedSources(sources), {len}, axis);
    int64_t inner = 1;
    for (size_t d = axis + 1; d < r.shape.size(); ++d)
      inner *= r.shape[d];
    for (int64_t e = 0, end = r.numElements(); e < end; ++e)
      if (sources[(e / inner) % len] < 0)
        r.copyElement(e, fill, 0);
  }
  return defineHost(n, 0, std::move(r));
}

LogicalResult Importer::emitPad(NodeCtx &n, ArrayRef<PadGather> gathers,
                                const HostTensor &fill) {
  int x = n.inputs[0];
  int64_t rank = shapeOf(x).size();
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  Value r = *v;
  for (auto &[axis, sources] : gathers) {
    if (shapeOf(x)[axis] == 0)
      return n.error() << "pads the empty axis " << axis
                       << " of a non-constant tensor",
             failure();
    r = gatherPositions(r, clampedSources(sources), axis, n);
    if (llvm::all_of(sources, [](int64_t s) { return s >= 0; }))
      continue;
    // Where the value goes: a mask along this axis, broadcast over the rest.
    nn::Shape maskShape(rank, 1);
    maskShape[axis] = sources.size();
    HostTensor mask = HostTensor::zeros(builder.getI1Type(), maskShape);
    for (auto [i, s] : llvm::enumerate(sources))
      mask.ints[i] = s >= 0;
    Value keep = materialize(mask, n.loc, n.name);
    Value padding = materialize(fill, n.loc, n.name);
    r = nn::WhereOp::create(builder, n.loc, r.getType(), keep, r, padding);
  }
  return defineValue(n, 0, r);
}

/// Pad in its four modes. Each padded axis of data is a gather of constant
/// positions (edge, reflect and wrap read the input; a negative pad crops)
/// and, in constant mode, an nn.where that writes the value at the pads:
/// ops whose gradients and micro-batching gpipe has (a pad along the batch
/// dim is refused there). Constants fold.
LogicalResult Importer::importPad(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 4)))
    return failure();
  int x = n.inputs[0];
  PadAttrs attrs;
  if (failed(getPadAttrs(n, attrs)))
    return failure();

  // Each padded axis: the source positions of its output elements.
  SmallVector<PadGather> gathers;
  if (failed(getPadGathers(n, attrs, gathers)))
    return failure();
  if (gathers.empty())
    return defineAlias(n, 0, x);

  // The constant as a scalar of the input's type; a pad reads position 0
  // and is then overwritten by (or selected against) the constant.
  Type element = elementTypeOf(x);
  HostTensor fill = HostTensor::zeros(element, {});
  if (fill.isFloat())
    fill.floats[0] = roundToFloatType(element, attrs.value);
  else
    fill.ints[0] = wrapToIntType(element, int64_t(attrs.value));
  if (isHost(x))
    return foldPad(n, gathers, fill);
  return emitPad(n, gathers, fill);
}

/// Dropout. From opset 12 the `training_mode` input says whether it drops:
/// a constant true makes an nn.dropout with the `ratio` input (default 0.5)
/// and a mask stream from the node's name; absent or false, and before
/// opset 12 (which has no such flag), it is the identity of inference.
LogicalResult Importer::importDropout(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 3)))
    return failure();
  // Where nothing is dropped, the mask output is all true.
  auto keepAll = [&]() -> LogicalResult {
    if (n.proto.output_size() < 2 || n.proto.output(1).empty())
      return success();
    HostTensor mask =
        HostTensor::zeros(builder.getI1Type(), shapeOf(n.inputs[0]));
    for (int64_t &v : mask.ints)
      v = 1;
    return defineHost(n, 1, std::move(mask));
  };
  bool training = false;
  double ratio = 0.5;
  if (opset >= 12 && n.input(2) >= 0) {
    FailureOr<HostTensor> mode = constScalar(n, 2, "training_mode");
    if (failed(mode))
      return failure();
    training = mode->getDouble(0) != 0.0;
  }
  if (!training) {
    if (failed(keepAll()))
      return failure();
    return defineAlias(n, 0, n.inputs[0]);
  }
  if (n.input(1) >= 0) {
    FailureOr<HostTensor> r = constScalar(n, 1, "ratio");
    if (failed(r))
      return failure();
    ratio = r->getDouble(0);
  }
  if (!(ratio >= 0.0 && ratio < 1.0))
    return n.error() << "has ratio " << ratio << " outside [0, 1)", failure();
  if (ratio == 0.0) {
    if (failed(keepAll()))
      return failure();
    return defineAlias(n, 0, n.inputs[0]);
  }
  if (failed(checkUnusedOutput(n, 1, "mask")))
    return failure();
  if (failed(requireFloat(n, 0, "input")))
    return failure();
  FailureOr<Value> x = getValue(n, 0);
  if (failed(x))
    return failure();
  // The mask stream: the node's name (else its output's), stable across
  // imports and partitions.
  StringRef key = n.proto.name().empty() ? StringRef(n.proto.output(0))
                                         : StringRef(n.proto.name());
  int64_t stream = int64_t(llvm::xxh3_64bits(key));
  return defineValue(n, 0,
                     nn::DropoutOp::create(builder, n.loc, x->getType(), *x,
                                           builder.getF32FloatAttr(ratio),
                                           builder.getI64IntegerAttr(stream)));
}

//===----------------------------------------------------------------------===//
// Indexing and shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult Importer::importGather(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int data = n.inputs[0], indices = n.inputs[1];
  int64_t axis = 0;
  if (failed(getIntAttr(n, "axis", axis)) ||
      failed(normalizeAxis(n, axis, shapeOf(data).size())))
    return failure();
  Type indexType = elementTypeOf(indices);
  if (!isa<IntegerType>(indexType) || indexType.isInteger(1))
    return n.error() << "needs integer indices, got " << typeOf(indices),
           failure();
  FailureOr<nn::Shape> shape = nn::inferGatherShape(
      shapeOf(data), shapeOf(indices), axis, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();

  // Constant indices: check them and make negative ones positive.
  std::optional<HostTensor> normalized;
  if (isHost(indices)) {
    int64_t dim = shapeOf(data)[axis];
    FailureOr<HostTensor> asI64 = foldCast(host(indices), builder.getI64Type(),
                                           [&] { return n.shapeError(); });
    if (failed(asI64))
      return failure();
    normalized = std::move(*asI64);
    for (int64_t &i : normalized->ints) {
      if (i < -dim || i >= dim)
        return n.error() << "has index " << i << " out of range for dim "
                         << axis << " of size " << dim,
               failure();
      if (i < 0)
        i += dim;
    }
    if (isHost(data)) {
      if (failed(checkFoldSize(n, nn::numElements(*shape))))
        return failure();
      return defineHost(
          n, 0,
          foldGather(host(data), normalized->ints, normalized->shape, axis));
    }
  }
  FailureOr<Value> vd = getValue(data, n.loc);
  if (failed(vd))
    return failure();
  // Samples flattened into rows and gathered by constant positions that
  // repeat for each sample (`mask[:, None, None, :]` as exported: a reshape
  // of [B, T] to [B * T, 1], then rows b * T + p): the same per-sample
  // gather along dim 1 of the unflattened data keeps samples apart.
  if (normalized && axis == 0 && !normalized->shape.empty())
    if (auto flat = vd->getDefiningOp<nn::ReshapeOp>()) {
      ArrayRef<int64_t> from = flat.getInput().getType().getShape();
      ArrayRef<int64_t> to = shapeOf(data);
      int64_t samples = normalized->shape[0];
      if (from.size() >= 2 && to.size() >= 1 && from[0] == samples &&
          to[0] == from[0] * from[1] &&
          nn::numElements(from.drop_front(2)) ==
              nn::numElements(to.drop_front(1))) {
        int64_t rows = from[1],
                per = normalized->numElements() / std::max<int64_t>(1, samples);
        bool repeats = true;
        for (int64_t b = 0; b < samples && repeats; ++b)
          for (int64_t e = 0; e < per && repeats; ++e) {
            int64_t i = normalized->ints[b * per + e];
            repeats = i - b * rows == normalized->ints[e] &&
                      normalized->ints[e] < rows;
          }
        if (repeats) {
          HostTensor positions = HostTensor::zeros(
              builder.getI64Type(),
              ArrayRef<int64_t>(normalized->shape).drop_front());
          positions.ints.assign(normalized->ints.begin(),
                                normalized->ints.begin() + per);
          nn::Shape out(normalized->shape);
          out.append(from.begin() + 2, from.end());
          Value gathered = nn::GatherOp::create(
              builder, n.loc, RankedTensorType::get(out, elementTypeOf(data)),
              flat.getInput(),
              materialize(positions, slot(indices).loc, slot(indices).name),
              uint64_t(1));
          // The rows' own dims as the flattened data had them.
          auto type = RankedTensorType::get(*shape, elementTypeOf(data));
          if (gathered.getType() != type)
            gathered = nn::ReshapeOp::create(builder, n.loc, type, gathered);
          return defineValue(n, 0, gathered);
        }
      }
    }
  Value vi;
  if (normalized) {
    vi = materialize(*normalized, slot(indices).loc, slot(indices).name);
  } else {
    if (!indexType.isSignlessInteger(32) && !indexType.isSignlessInteger(64))
      return n.error() << "needs i32 or i64 indices, got " << typeOf(indices),
             failure();
    FailureOr<Value> v = getValue(indices, n.loc);
    if (failed(v))
      return failure();
    vi = *v;
  }
  auto type = RankedTensorType::get(*shape, elementTypeOf(data));
  return defineValue(n, 0,
                     nn::GatherOp::create(builder, n.loc, type, *vd, vi,
                                          static_cast<uint64_t>(axis)));
}

LogicalResult Importer::importReshape(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int x = n.inputs[0];
  FailureOr<SmallVector<int64_t>> shapeInput = constInts(n, 1, "shape");
  if (failed(shapeInput))
    return failure();
  SmallVector<int64_t> spec = std::move(*shapeInput);
  int64_t allowZero = 0;
  if (failed(getIntAttr(n, "allowzero", allowZero)))
    return failure();

  ArrayRef<int64_t> in = shapeOf(x);
  nn::Shape out;
  int inferred = -1;
  int64_t known = 1;
  for (auto [i, specDim] : llvm::enumerate(spec)) {
    int64_t d = specDim;
    if (d == -1) {
      if (inferred >= 0)
        return n.error() << "has more than one -1 in its shape "
                         << nn::formatShape(spec),
               failure();
      inferred = i;
      out.push_back(1);
      continue;
    }
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return n.error() << "copies dim " << i << " (a 0 in its shape "
                         << nn::formatShape(spec) << ") from an input of shape "
                         << nn::formatShape(in),
               failure();
      d = in[i];
    } else if (d < 0) {
      return n.error() << "has an invalid shape " << nn::formatShape(spec),
             failure();
    }
    out.push_back(d);
    if (llvm::MulOverflow(known, d, known))
      return n.error() << "has a shape " << nn::formatShape(spec)
                       << " with more elements than an int64 counts",
             failure();
  }
  if (inferred >= 0) {
    int64_t total = nn::numElements(in);
    if (known == 0 || total % known != 0)
      return n.shapeError() << "cannot reshape " << nn::formatShape(in)
                            << " to " << nn::formatShape(spec),
             failure();
    out[inferred] = total / known;
  }
  return reshapeTo(n, x, out);
}

LogicalResult Importer::importFlatten(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  int x = n.inputs[0];
  ArrayRef<int64_t> in = shapeOf(x);
  int64_t rank = in.size(), axis = 1;
  if (failed(getIntAttr(n, "axis", axis)))
    return failure();
  // Flatten's axis may equal the rank.
  if (axis < -rank || axis > rank)
    return n.error() << "has axis " << axis << " out of range for rank "
                     << rank,
           failure();
  if (axis < 0)
    axis += rank;
  return reshapeTo(n, x,
                   {nn::numElements(in.take_front(axis)),
                    nn::numElements(in.drop_front(axis))});
}

LogicalResult Importer::importTranspose(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  int x = n.inputs[0];
  int64_t rank = shapeOf(x).size();
  std::optional<SmallVector<int64_t>> perm;
  if (failed(getIntsAttr(n, "perm", perm)))
    return failure();
  if (!perm) {
    perm.emplace(rank);
    for (int64_t i = 0; i < rank; ++i)
      (*perm)[i] = rank - 1 - i;
  }
  FailureOr<nn::Shape> shape = nn::inferTransposeShape(
      shapeOf(x), *perm, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  if (isHost(x))
    return defineHost(n, 0, foldTranspose(host(x), *perm, *shape));
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  auto type = RankedTensorType::get(*shape, elementTypeOf(x));
  return defineValue(
      n, 0,
      nn::TransposeOp::create(builder, n.loc, type, *v,
                              builder.getDenseI64ArrayAttr(*perm)));
}

LogicalResult Importer::importSplit(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 2)))
    return failure();
  int x = n.inputs[0];
  ArrayRef<int64_t> in = shapeOf(x);
  int64_t axis = 0;
  if (failed(getIntAttr(n, "axis", axis)) ||
      failed(normalizeAxis(n, axis, in.size())))
    return failure();
  int64_t parts = n.proto.output_size();
  SmallVector<int64_t> sizes;
  if (opset >= 13 && n.input(1) >= 0) {
    FailureOr<SmallVector<int64_t>> s = constInts(n, 1, "split");
    if (failed(s))
      return failure();
    sizes = *s;
  } else if (opset < 13) {
    std::optional<SmallVector<int64_t>> attr;
    if (failed(getIntsAttr(n, "split", attr)))
      return failure();
    if (attr)
      sizes = *attr;
  }
  if (sizes.empty()) {
    int64_t numOutputs = parts;
    if (failed(getIntAttr(n, "num_outputs", numOutputs)))
      return failure();
    if (numOutputs <= 0)
      return n.error() << "splits into " << numOutputs << " parts", failure();
    int64_t dim = in[axis];
    // Opset 18's num_outputs allows a smaller last chunk; an even split by the
    // number of outputs must divide the dim.
    int64_t chunk = findAttr(n.proto, "num_outputs")
                        ? (dim + numOutputs - 1) / numOutputs
                        : dim / numOutputs;
    if (!findAttr(n.proto, "num_outputs") && dim % numOutputs != 0)
      return n.error() << "cannot split dim " << axis << " of size " << dim
                       << " into " << numOutputs << " equal parts",
             failure();
    for (int64_t i = 0, left = dim; i < numOutputs; ++i, left -= chunk)
      sizes.push_back(std::min(chunk, left));
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    return n.error() << "has " << parts << " outputs but " << sizes.size()
                     << " split sizes",
           failure();
  FailureOr<SmallVector<nn::Shape>> shapes =
      nn::inferSplitShapes(in, axis, sizes, [&] { return n.shapeError(); });
  if (failed(shapes))
    return failure();
  if (isHost(x)) {
    SmallVector<int64_t> offsets(in.size(), 0), strides(in.size(), 1);
    for (auto [i, shape] : llvm::enumerate(*shapes)) {
      if (failed(defineHost(n, i, foldSlice(host(x), offsets, shape, strides))))
        return failure();
      offsets[axis] += sizes[i];
    }
    return success();
  }
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  SmallVector<Type> types;
  for (const nn::Shape &shape : *shapes)
    types.push_back(RankedTensorType::get(shape, elementTypeOf(x)));
  auto op = nn::SplitOp::create(builder, n.loc, types, *v,
                                static_cast<uint64_t>(axis), sizes);
  for (unsigned i = 0; i < op.getNumResults(); ++i)
    if (failed(defineValue(n, i, op.getResult(i))))
      return failure();
  return success();
}

LogicalResult Importer::importSlice(NodeCtx &n) {
  int x = n.input(0);
  SmallVector<int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    std::optional<SmallVector<int64_t>> s, e, a;
    if (failed(expectInputs(n, 1, 1)) || failed(getIntsAttr(n, "starts", s)) ||
        failed(getIntsAttr(n, "ends", e)) || failed(getIntsAttr(n, "axes", a)))
      return failure();
    if (!s || !e)
      return n.error() << "needs 'starts' and 'ends' attributes", failure();
    starts = *s;
    ends = *e;
    if (a)
      axes = *a;
  } else {
    if (failed(expectInputs(n, 3, 5)))
      return failure();
    FailureOr<SmallVector<int64_t>> s = constInts(n, 1, "starts");
    if (failed(s))
      return failure();
    FailureOr<SmallVector<int64_t>> e = constInts(n, 2, "ends");
    if (failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (n.input(3) >= 0) {
      FailureOr<SmallVector<int64_t>> a = constInts(n, 3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (n.input(4) >= 0) {
      FailureOr<SmallVector<int64_t>> st = constInts(n, 4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  size_t count = starts.size();
  if (axes.empty())
    for (size_t i = 0; i < count; ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(count, 1);
  if (ends.size() != count || axes.size() != count || steps.size() != count)
    return n.error() << "has starts, ends, axes and steps of different "
                        "lengths",
           failure();

  ArrayRef<int64_t> in = shapeOf(x);
  int64_t rank = in.size();
  SmallVector<int64_t> offsets(rank, 0), sizes(in), strides(rank, 1);
  SmallVector<bool> seen(rank, false);
  // Axes walked backwards (a constant reversed: F.pad's pads; flipped
  // data): the positions each one picks, gathered after the forward slice.
  SmallVector<std::pair<int64_t, SmallVector<int64_t>>> backwards;
  for (size_t j = 0; j < count; ++j) {
    int64_t axis = axes[j];
    if (failed(normalizeAxis(n, axis, rank)))
      return failure();
    if (seen[axis])
      return n.error() << "slices axis " << axis << " twice", failure();
    seen[axis] = true;
    int64_t step = steps[j];
    if (step == 0)
      return n.error() << "has a slice step of 0", failure();
    if (step < 0) {
      // ONNX: start clamps to [0, dim - 1], end to [-1, dim - 1].
      int64_t dim = in[axis], start = starts[j], end = ends[j];
      if (start < 0)
        start += dim;
      if (end < 0 && end >= -dim)
        end += dim;
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      SmallVector<int64_t> picked;
      for (int64_t i = start; i > end; i += step)
        picked.push_back(i);
      backwards.emplace_back(axis, std::move(picked));
      continue;
    }
    // ONNX clamping: negative indices count from the end, then both bounds
    // clamp to [0, dim].
    int64_t dim = in[axis], start = starts[j], end = ends[j];
    if (start < 0)
      start = start < -dim ? 0 : start + dim;
    if (end < 0)
      end = end < -dim ? 0 : end + dim;
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    offsets[axis] = start;
    sizes[axis] = end > start ? (end - start - 1) / step + 1 : 0;
    strides[axis] = step;
  }
  FailureOr<nn::Shape> shape = nn::inferSliceShape(
      in, offsets, sizes, strides, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  if (isHost(x)) {
    HostTensor r = foldSlice(host(x), offsets, sizes, strides);
    for (auto &[axis, picked] : backwards)
      r = foldGather(r, picked, {int64_t(picked.size())}, axis);
    return defineHost(n, 0, std::move(r));
  }
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  Value r = *v;
  if (backwards.empty() || ArrayRef<int64_t>(*shape) != in) {
    auto type = RankedTensorType::get(*shape, elementTypeOf(x));
    r = nn::SliceOp::create(builder, n.loc, type, r, offsets, sizes, strides);
  }
  for (auto &[axis, picked] : backwards)
    r = gatherPositions(r, picked, axis, n);
  return defineValue(n, 0, r);
}

Value Importer::gatherPositions(Value v, ArrayRef<int64_t> positions,
                                int64_t axis, NodeCtx &n) {
  HostTensor indices =
      HostTensor::zeros(builder.getI64Type(), {int64_t(positions.size())});
  indices.ints.assign(positions.begin(), positions.end());
  auto type = cast<RankedTensorType>(v.getType());
  nn::Shape shape(type.getShape());
  shape[axis] = positions.size();
  return nn::GatherOp::create(builder, n.loc, type.clone(shape), v,
                              materialize(indices, n.loc, n.name),
                              static_cast<uint64_t>(axis));
}

LogicalResult Importer::importConcat(NodeCtx &n) {
  if (failed(expectInputs(n, 1, INT_MAX)) ||
      failed(requireSameElementType(n, n.inputs)))
    return failure();
  if (llvm::is_contained(n.inputs, -1))
    return n.error() << "has an empty input name", failure();
  int64_t axis = 0;
  const onnx::AttributeProto *attr = findAttr(n.proto, "axis");
  if (!attr)
    return n.error() << "has no 'axis' attribute", failure();
  if (failed(getIntAttr(n, "axis", axis)) ||
      failed(normalizeAxis(n, axis, shapeOf(n.inputs[0]).size())))
    return failure();
  SmallVector<ArrayRef<int64_t>> shapes;
  for (int i : n.inputs)
    shapes.push_back(shapeOf(i));
  FailureOr<nn::Shape> shape =
      nn::inferConcatShape(shapes, axis, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  if (allHost(n)) {
    SmallVector<const HostTensor *> inputs;
    for (int i : n.inputs)
      inputs.push_back(&host(i));
    return defineHost(n, 0, foldConcat(inputs, axis, *shape));
  }
  SmallVector<Value> values;
  for (int i : n.inputs) {
    FailureOr<Value> v = getValue(i, n.loc);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  auto type = RankedTensorType::get(*shape, elementTypeOf(n.inputs[0]));
  return defineValue(n, 0,
                     nn::ConcatOp::create(builder, n.loc, type, values,
                                          static_cast<uint64_t>(axis)));
}

LogicalResult Importer::importUnsqueeze(NodeCtx &n) {
  SmallVector<int64_t> axes;
  if (opset >= 13) {
    if (failed(expectInputs(n, 2, 2)))
      return failure();
    FailureOr<SmallVector<int64_t>> a = constInts(n, 1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    std::optional<SmallVector<int64_t>> a;
    if (failed(expectInputs(n, 1, 1)) || failed(getIntsAttr(n, "axes", a)))
      return failure();
    if (!a)
      return n.error() << "has no 'axes' attribute", failure();
    axes = *a;
  }
  int x = n.inputs[0];
  int64_t rank = shapeOf(x).size() + axes.size();
  for (int64_t &axis : axes)
    if (failed(normalizeAxis(n, axis, rank)))
      return failure();
  llvm::sort(axes);
  FailureOr<nn::Shape> shape =
      nn::inferUnsqueezeShape(shapeOf(x), axes, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  if (isHost(x)) {
    HostTensor t = host(x);
    t.shape = *shape;
    return defineHost(n, 0, std::move(t));
  }
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  auto type = RankedTensorType::get(*shape, elementTypeOf(x));
  return defineValue(
      n, 0,
      nn::UnsqueezeOp::create(builder, n.loc, type, *v,
                              builder.getDenseI64ArrayAttr(axes)));
}

LogicalResult Importer::importSqueeze(NodeCtx &n) {
  std::optional<SmallVector<int64_t>> axes;
  if (opset >= 13) {
    if (failed(expectInputs(n, 1, 2)))
      return failure();
    if (n.input(1) >= 0) {
      FailureOr<SmallVector<int64_t>> a = constInts(n, 1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else if (failed(expectInputs(n, 1, 1)) ||
             failed(getIntsAttr(n, "axes", axes))) {
    return failure();
  }
  int x = n.inputs[0];
  ArrayRef<int64_t> in = shapeOf(x);
  int64_t rank = in.size();
  SmallVector<bool> drop(rank, false);
  if (axes) {
    for (int64_t axis : *axes) {
      if (failed(normalizeAxis(n, axis, rank)))
        return failure();
      if (in[axis] != 1)
        return n.error() << "cannot squeeze dim " << axis << " of size "
                         << in[axis] << " in " << nn::formatShape(in),
               failure();
      drop[axis] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      drop[i] = in[i] == 1;
  }
  nn::Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i])
      out.push_back(in[i]);
  return reshapeTo(n, x, out);
}

/// Expand of a real value is only supported when it changes nothing: nn has
/// no broadcast op, and exporters emit Expand mostly for shape arithmetic,
/// which folds.
LogicalResult Importer::importExpand(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  FailureOr<SmallVector<int64_t>> target = constInts(n, 1, "shape");
  if (failed(target))
    return failure();
  int x = n.inputs[0];
  FailureOr<nn::Shape> shape = nn::inferBroadcastShape(
      {shapeOf(x), *target}, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  if (isHost(x)) {
    if (failed(checkFoldSize(n, nn::numElements(*shape))))
      return failure();
    return defineHost(n, 0, foldBroadcastTo(host(x), *shape));
  }
  if (ArrayRef<int64_t>(*shape) == shapeOf(x))
    return defineAlias(n, 0, x);
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  auto type = RankedTensorType::get(*shape, elementTypeOf(x));
  return defineValue(n, 0, nn::BroadcastToOp::create(builder, n.loc, type, *v));
}

LogicalResult Importer::importSize(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  HostTensor t =
      HostTensor::fromI64(ctx, {nn::numElements(shapeOf(n.inputs[0]))});
  t.shape.clear();
  return defineHost(n, 0, std::move(t));
}

/// CumSum of a host constant (position ids counted from a mask of
/// constants); `exclusive` and `reverse` as ONNX defines them.
LogicalResult Importer::importCumSum(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int x = n.inputs[0];
  FailureOr<HostTensor> axisT = constScalar(n, 1, "axis");
  if (failed(axisT))
    return failure();
  int64_t axis = axisT->getInt(0), exclusive = 0, reverse = 0;
  ArrayRef<int64_t> shape = shapeOf(x);
  if (failed(normalizeAxis(n, axis, shape.size())) ||
      failed(getIntAttr(n, "exclusive", exclusive)) ||
      failed(getIntAttr(n, "reverse", reverse)))
    return failure();
  if (!isHost(x)) {
    Type declared = elementTypeOf(x), element = computeTypeOf(declared);
    if (!element.isF32() && !element.isInteger(64))
      return n.error() << "sums a non-constant " << typeOf(x)
                       << "; gpipe sums f32, f64 and integer tensors",
             failure();
    FailureOr<Value> v = getValueAs(x, element, n.loc);
    if (failed(v))
      return failure();
    Value sum = nn::CumSumOp::create(builder, n.loc, typeOf(x).clone(element),
                                     *v, builder.getI64IntegerAttr(axis),
                                     builder.getBoolAttr(exclusive),
                                     builder.getBoolAttr(reverse));
    return defineValue(n, 0, castElements(sum, declared, n.loc));
  }
  HostTensor in = host(x), r = host(x);
  int64_t len = shape[axis], inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t outer = len == 0 ? 0 : in.numElements() / (len * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double fsum = 0;
      uint64_t isum = 0;
      for (int64_t k = 0; k < len; ++k) {
        int64_t kk = reverse ? len - 1 - k : k;
        int64_t e = (o * len + kk) * inner + i;
        if (in.isFloat()) {
          double v = in.floats[e];
          r.floats[e] =
              roundToFloatType(in.elementType, exclusive ? fsum : fsum + v);
          fsum = roundToFloatType(in.elementType, fsum + v);
        } else {
          uint64_t v = static_cast<uint64_t>(in.ints[e]);
          r.ints[e] =
              wrapToIntType(in.elementType,
                            static_cast<int64_t>(exclusive ? isum : isum + v));
          isum += v;
        }
      }
    }
  return defineHost(n, 0, std::move(r));
}

/// GatherElements of host constants (a token-type buffer gathered by
/// position ids).
LogicalResult Importer::importGatherElements(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int data = n.inputs[0], indices = n.inputs[1];
  // Any position of a constant of one repeated value (a token-type buffer
  // of zeros, gathered by position ids computed from the data) is that
  // value: the result is that constant in the indices' shape.
  if (isHost(data) && !isHost(indices) && host(data).isSplat() &&
      host(data).numElements() > 0 &&
      shapeOf(data).size() == shapeOf(indices).size()) {
    HostTensor r = HostTensor::zeros(elementTypeOf(data), shapeOf(indices));
    for (int64_t e = 0, count = r.numElements(); e < count; ++e)
      r.copyElement(e, host(data), 0);
    return defineHost(n, 0, std::move(r));
  }
  if (!isHost(data) || !isHost(indices))
    return n.error() << "gathers from non-constant tensors; gpipe folds "
                        "GatherElements only on constants (or a constant of "
                        "one repeated value)",
           failure();
  if (host(indices).isFloat() || host(indices).isBool())
    return n.error() << "needs integer indices, got " << typeOf(indices),
           failure();
  ArrayRef<int64_t> dshape = shapeOf(data), ishape = shapeOf(indices);
  int64_t axis = 0;
  if (failed(getIntAttr(n, "axis", axis)) ||
      failed(normalizeAxis(n, axis, dshape.size())))
    return failure();
  if (dshape.size() != ishape.size())
    return n.error() << "has indices " << typeOf(indices)
                     << " of another rank than the data " << typeOf(data),
           failure();
  for (size_t d = 0; d < dshape.size(); ++d)
    if (int64_t(d) != axis && ishape[d] > dshape[d])
      return n.error() << "has indices " << typeOf(indices)
                       << " larger than the data " << typeOf(data) << " in dim "
                       << d,
             failure();
  HostTensor r = HostTensor::zeros(elementTypeOf(data), ishape);
  const HostTensor &src = host(data), &idx = host(indices);
  SmallVector<int64_t> pos(ishape.size(), 0);
  for (int64_t e = 0, count = r.numElements(); e < count; ++e) {
    int64_t rem = e;
    for (int64_t d = ishape.size() - 1; d >= 0; --d) {
      pos[d] = ishape[d] == 0 ? 0 : rem % ishape[d];
      rem = ishape[d] == 0 ? 0 : rem / ishape[d];
    }
    int64_t k = idx.ints[e];
    if (k < -dshape[axis] || k >= dshape[axis])
      return n.error() << "has index " << k << " out of range for dim " << axis
                       << " of size " << dshape[axis],
             failure();
    pos[axis] = k < 0 ? k + dshape[axis] : k;
    int64_t flat = 0;
    for (size_t d = 0; d < dshape.size(); ++d)
      flat = flat * dshape[d] + pos[d];
    r.copyElement(e, src, flat);
  }
  return defineHost(n, 0, std::move(r));
}

LogicalResult Importer::importConstantOfShape(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = constInts(n, 0, "shape");
  if (failed(shape))
    return failure();
  for (int64_t d : *shape)
    if (d < 0)
      return n.error() << "has a negative dim in its shape "
                       << nn::formatShape(*shape),
             failure();
  int64_t count = 1;
  for (int64_t d : *shape) {
    if (d != 0 && count > kMaxFoldElements / d)
      return checkFoldSize(n, -1);
    count *= d;
  }
  if (failed(checkFoldSize(n, count)))
    return failure();
  HostTensor value = HostTensor::zeros(builder.getF32Type(), {});
  if (const onnx::AttributeProto *attr = findAttr(n.proto, "value")) {
    FailureOr<RawTensor> raw = decodeTensor(
        ctx, attr->t(), n.loc, n.opType.str() + " node '" + n.name + "' value");
    if (failed(raw))
      return failure();
    value = toHost(*raw);
    if (value.numElements() != 1)
      return n.error() << "needs a one-element value, got " << value.getType(),
             failure();
  }
  HostTensor result = HostTensor::zeros(value.elementType, *shape);
  for (int64_t e = 0; e < count; ++e)
    result.copyElement(e, value, 0);
  return defineHost(n, 0, std::move(result));
}

LogicalResult Importer::importRange(NodeCtx &n) {
  if (failed(expectInputs(n, 3, 3)) ||
      failed(requireSameElementType(n, n.inputs)))
    return failure();
  FailureOr<HostTensor> start = constScalar(n, 0, "start");
  if (failed(start))
    return failure();
  FailureOr<HostTensor> limit = constScalar(n, 1, "limit");
  if (failed(limit))
    return failure();
  FailureOr<HostTensor> delta = constScalar(n, 2, "delta");
  if (failed(delta))
    return failure();
  double s = start->getDouble(0), l = limit->getDouble(0),
         d = delta->getDouble(0);
  if (d == 0)
    return n.error() << "has a delta of 0", failure();
  double steps = std::ceil((l - s) / d);
  if (!std::isfinite(steps) || steps > static_cast<double>(kMaxFoldElements))
    return checkFoldSize(n, -1);
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(steps));
  HostTensor r = HostTensor::zeros(start->elementType, {count});
  for (int64_t i = 0; i < count; ++i) {
    if (r.isFloat())
      r.floats[i] = roundToFloatType(r.elementType, s + i * d);
    else
      r.ints[i] = wrapToIntType(
          r.elementType,
          static_cast<int64_t>(static_cast<uint64_t>(start->ints[0]) +
                               static_cast<uint64_t>(i) *
                                   static_cast<uint64_t>(delta->ints[0])));
  }
  return defineHost(n, 0, std::move(r));
}

LogicalResult Importer::importTrilu(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 2)))
    return failure();
  int x = n.inputs[0];
  if (shapeOf(x).size() < 2)
    return n.error() << "needs an input of rank >= 2, got " << typeOf(x),
           failure();
  int64_t k = 0, upper = 1;
  if (n.input(1) >= 0) {
    FailureOr<HostTensor> kT = constScalar(n, 1, "k");
    if (failed(kT))
      return failure();
    if (kT->isFloat() || kT->isBool())
      return n.error() << "needs an integer k, got " << kT->getType(),
             failure();
    k = kT->ints[0];
  }
  if (failed(getIntAttr(n, "upper", upper)))
    return failure();
  if (isHost(x))
    return defineHost(n, 0, foldTrilu(host(x), k, upper != 0));
  // On data: a select by the constant triangle of the last two dims.
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  HostTensor ones = HostTensor::zeros(builder.getI1Type(), {rows, cols});
  for (int64_t &v : ones.ints)
    v = 1;
  HostTensor mask = foldTrilu(ones, k, upper != 0);
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  Value zero = scalarLike(*v, 0.0, n);
  return defineValue(n, 0,
                     nn::WhereOp::create(builder, n.loc, typeOf(x),
                                         materialize(mask, n.loc, n.name), *v,
                                         zero));
}

/// GatherND of host constants (what an exporter leaves of a buffer indexed
/// by positions); `batch_dims` as ONNX defines it.
LogicalResult Importer::importGatherND(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int data = n.inputs[0], indices = n.inputs[1];
  if (!isHost(indices))
    return n.error() << "gathers with non-constant indices; gpipe needs "
                        "GatherND's indices to be constant",
           failure();
  if (host(indices).isFloat() || host(indices).isBool())
    return n.error() << "needs integer indices, got " << typeOf(indices),
           failure();
  if (!isHost(data))
    return importSampleGatherND(n);
  ArrayRef<int64_t> dshape = shapeOf(data), ishape = shapeOf(indices);
  int64_t b = 0;
  if (failed(getIntAttr(n, "batch_dims", b)))
    return failure();
  int64_t r = dshape.size(), q = ishape.size();
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return n.error() << "has batch_dims " << b << " out of range for data "
                     << typeOf(data) << " and indices " << typeOf(indices),
           failure();
  int64_t k = ishape.back();
  if (k < 1 || b + k > r)
    return n.error() << "has index tuples of length " << k
                     << ", which do not fit data " << typeOf(data) << " after "
                     << b << " batch dims",
           failure();
  for (int64_t d = 0; d < b; ++d)
    if (dshape[d] != ishape[d])
      return n.error() << "has batch dim " << d << " of size " << ishape[d]
                       << " in the indices but " << dshape[d] << " in the data",
             failure();
  nn::Shape outShape(ishape.begin(), ishape.end() - 1);
  outShape.append(dshape.begin() + b + k, dshape.end());
  if (failed(checkFoldSize(n, nn::numElements(outShape))))
    return failure();
  int64_t inner = 1;
  for (int64_t d = b + k; d < r; ++d)
    inner *= dshape[d];
  // Elements per batch entry in the data, and index tuples per batch entry.
  int64_t dataPerBatch = 1, tuplesPerBatch = 1;
  for (int64_t d = b; d < r; ++d)
    dataPerBatch *= dshape[d];
  for (int64_t d = b; d < q - 1; ++d)
    tuplesPerBatch *= ishape[d];
  int64_t batches = 1;
  for (int64_t d = 0; d < b; ++d)
    batches *= dshape[d];
  HostTensor result = HostTensor::zeros(elementTypeOf(data), outShape);
  const HostTensor &src = host(data), &idx = host(indices);
  int64_t out = 0;
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t t = 0; t < tuplesPerBatch; ++t) {
      int64_t offset = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t size = dshape[b + j];
        int64_t i = idx.ints[(bi * tuplesPerBatch + t) * k + j];
        if (i < -size || i >= size)
          return n.error() << "has index " << i << " out of range for dim "
                           << b + j << " of size " << size,
                 failure();
        offset = offset * size + (i < 0 ? i + size : i);
      }
      for (int64_t e = 0; e < inner; ++e)
        result.copyElement(out++, src, bi * dataPerBatch + offset * inner + e);
    }
  return defineHost(n, 0, std::move(result));
}

/// GatherND of data by constant indices that pick, for every sample, the
/// same positions of that sample (what `mask[:, None, None, :]` exports to:
/// tuples (b, j) with b the tuple's position along the indices' dim 0): an
/// nn.gather along dim 1 of the data with its sample dims flattened, which
/// keeps samples apart.
LogicalResult Importer::importSampleGatherND(NodeCtx &n) {
  int data = n.inputs[0], indices = n.inputs[1];
  ArrayRef<int64_t> dshape = shapeOf(data), ishape = shapeOf(indices);
  const HostTensor &idx = host(indices);
  int64_t b = 0;
  if (failed(getIntAttr(n, "batch_dims", b)))
    return failure();
  auto refuse = [&]() {
    return n.error() << "gathers from a non-constant " << typeOf(data)
                     << " at constant positions that are not the same for "
                        "every sample; gpipe folds such a GatherND only on "
                        "constants",
           failure();
  };
  int64_t r = dshape.size(), q = ishape.size();
  if (b > 1 || q < 2 || r < 2 || ishape[0] != dshape[0])
    return refuse();
  int64_t k = ishape.back();
  // Tuple components after the sample's own index.
  int64_t skip = b == 0 ? 1 : 0, width = k - skip;
  if (width < 1 || 1 + width > r)
    return refuse();
  int64_t samples = ishape[0];
  int64_t tuples = idx.numElements() / std::max<int64_t>(1, samples * k);
  SmallVector<int64_t> flat;
  for (int64_t s = 0; s < samples; ++s)
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t *tuple = &idx.ints[(s * tuples + t) * k];
      if (skip && tuple[0] != s && tuple[0] != s - samples)
        return refuse();
      int64_t offset = 0;
      for (int64_t j = 0; j < width; ++j) {
        int64_t size = dshape[1 + j], i = tuple[skip + j];
        if (i < -size || i >= size)
          return n.error() << "has index " << i << " out of range for dim "
                           << 1 + j << " of size " << size,
                 failure();
        offset = offset * size + (i < 0 ? i + size : i);
      }
      if (s == 0)
        flat.push_back(offset);
      else if (flat[t] != offset)
        return refuse();
    }
  FailureOr<Value> v = getValue(data, n.loc);
  if (failed(v))
    return failure();
  // [B, d1 * ... * d_width, rest...]
  nn::Shape merged{dshape[0], 1};
  for (int64_t j = 0; j < width; ++j)
    merged[1] *= dshape[1 + j];
  merged.append(dshape.begin() + 1 + width, dshape.end());
  Value source = *v;
  if (ArrayRef<int64_t>(merged) != dshape)
    source = nn::ReshapeOp::create(
        builder, n.loc, RankedTensorType::get(merged, elementTypeOf(data)),
        source);
  nn::Shape positionsShape(ishape.begin() + 1, ishape.end() - 1);
  HostTensor positions =
      HostTensor::zeros(builder.getIntegerType(64), positionsShape);
  positions.ints.assign(flat.begin(), flat.end());
  Value positionsValue = materialize(positions, n.loc, n.name);
  nn::Shape outShape(ishape.begin(), ishape.end() - 1);
  outShape.append(dshape.begin() + 1 + width, dshape.end());
  return defineValue(
      n, 0,
      nn::GatherOp::create(builder, n.loc,
                           RankedTensorType::get(outShape, elementTypeOf(data)),
                           source, positionsValue, uint64_t(1)));
}
