//===- HostTensor.cpp - Constant folding for the ONNX importer ------------===//
//
// Implements the host-side evaluation of the ONNX ops the importer folds
// (elementwise arithmetic with numpy broadcasting, Cast, Where, Gather,
// Slice, Concat, Transpose, Expand, Trilu) and the conversion of folded
// tensors to `dense` attributes and `dense_resource` blob bytes.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/Utils/HostTensor.h"

#include "gpipe/Dialect/NN/IR/NNElementsBytes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::nn;
using llvm::ArrayRef;
using llvm::SmallVector;

//===----------------------------------------------------------------------===//
// Element helpers
//===----------------------------------------------------------------------===//

HostTensor HostTensor::zeros(Type elementType, ArrayRef<int64_t> shape) {
  HostTensor t;
  t.elementType = elementType;
  t.shape.assign(shape.begin(), shape.end());
  if (t.isFloat())
    t.floats.assign(t.numElements(), 0.0);
  else
    t.ints.assign(t.numElements(), 0);
  return t;
}

HostTensor HostTensor::fromI64(MLIRContext *context, ArrayRef<int64_t> values) {
  HostTensor t;
  t.elementType = IntegerType::get(context, 64);
  t.shape = {static_cast<int64_t>(values.size())};
  t.ints.assign(values.begin(), values.end());
  return t;
}

double mlir::gpipe::nn::roundToFloatType(Type type, double value) {
  auto floatType = cast<FloatType>(type);
  if (floatType.isF64())
    return value;
  if (floatType.isF32())
    return static_cast<double>(static_cast<float>(value));
  llvm::APFloat f(value);
  bool lost;
  f.convert(floatType.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return f.convertToDouble();
}

int64_t mlir::gpipe::nn::wrapToIntType(Type type, int64_t value) {
  unsigned width = type.getIntOrFloatBitWidth();
  if (width == 1)
    return value != 0;
  if (width >= 64)
    return value;
  uint64_t mask = (uint64_t(1) << width) - 1;
  uint64_t bits = static_cast<uint64_t>(value) & mask;
  if (type.isUnsignedInteger())
    return static_cast<int64_t>(bits);
  if (bits & (uint64_t(1) << (width - 1)))
    bits |= ~mask;
  return static_cast<int64_t>(bits);
}

bool mlir::gpipe::nn::isNNElementType(Type type) {
  return type.isF32() || type.isF16() || type.isBF16() || type.isF64() ||
         type.isSignlessInteger(1) || type.isSignlessInteger(32) ||
         type.isSignlessInteger(64);
}

DenseElementsAttr mlir::gpipe::nn::toDenseAttr(const HostTensor &t) {
  RankedTensorType type = t.getType();
  if (t.isFloat()) {
    const llvm::fltSemantics &sem =
        cast<FloatType>(t.elementType).getFloatSemantics();
    SmallVector<llvm::APFloat> values;
    values.reserve(t.floats.size());
    for (double d : t.floats) {
      llvm::APFloat f(d);
      bool lost;
      f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  if (t.isBool()) {
    SmallVector<bool> values(t.ints.begin(), t.ints.end());
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = t.elementType.getIntOrFloatBitWidth();
  bool isSigned = !t.elementType.isUnsignedInteger();
  SmallVector<llvm::APInt> values;
  values.reserve(t.ints.size());
  for (int64_t v : t.ints)
    values.push_back(llvm::APInt(width, static_cast<uint64_t>(v), isSigned,
                                 /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, values);
}

FailureOr<HostTensor> mlir::gpipe::nn::fromElementsAttr(
    ElementsAttr attr, function_ref<InFlightDiagnostic()> emitError) {
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape() ||
      !isNNElementType(type.getElementType()))
    return emitError() << "expected a static tensor of an nn element type, got "
                       << attr.getType(),
           failure();
  FailureOr<std::vector<char>> bytes = getElementsBytes(attr, emitError);
  if (failed(bytes))
    return failure();
  Type element = type.getElementType();
  HostTensor t = HostTensor::zeros(element, type.getShape());
  const char *data = bytes->data();
  for (int64_t i = 0, e = t.numElements(); i < e; ++i) {
    if (element.isF32()) {
      float f;
      std::memcpy(&f, data + 4 * i, 4);
      t.floats[i] = f;
    } else if (element.isF64()) {
      std::memcpy(&t.floats[i], data + 8 * i, 8);
    } else if (element.isF16() || element.isBF16()) {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * i, 2);
      llvm::APFloat f(cast<FloatType>(element).getFloatSemantics(),
                      llvm::APInt(16, bits));
      t.floats[i] = f.convertToFloat();
    } else if (element.isInteger(1)) {
      t.ints[i] = data[i] != 0;
    } else if (element.isInteger(32)) {
      int32_t v;
      std::memcpy(&v, data + 4 * i, 4);
      t.ints[i] = v;
    } else {
      std::memcpy(&t.ints[i], data + 8 * i, 8);
    }
  }
  return t;
}

ElementsAttr mlir::gpipe::nn::toElementsAttr(const HostTensor &t,
                                             StringRef hint,
                                             int64_t inlineLimit) {
  if (t.numElements() <= inlineLimit || t.isBool() || t.isSplat())
    return toDenseAttr(t);
  std::string key;
  for (char c : hint)
    key += (llvm::isAlnum(c) || c == '_' || c == '.') ? c : '_';
  if (key.empty() || !(llvm::isAlpha(key[0]) || key[0] == '_'))
    key = "_" + key;
  unsigned width = t.elementType.getIntOrFloatBitWidth();
  // The resource manager makes the key unique among the context's blobs.
  return DenseResourceElementsAttr::get(
      t.getType(), key,
      HeapAsmResourceBlob::allocateAndCopyWithAlign(toBytes(t),
                                                    std::max(1u, width / 8)));
}

std::vector<char> mlir::gpipe::nn::toBytes(const HostTensor &t) {
  unsigned width = t.elementType.getIntOrFloatBitWidth();
  unsigned bytes = std::max(1u, (width + 7) / 8);
  std::vector<char> out;
  out.reserve(t.numElements() * bytes);
  auto put = [&](uint64_t bits) {
    for (unsigned b = 0; b < bytes; ++b)
      out.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  };
  for (int64_t i = 0, e = t.numElements(); i < e; ++i) {
    if (!t.isFloat()) {
      put(static_cast<uint64_t>(t.ints[i]));
      continue;
    }
    if (t.elementType.isF64()) {
      uint64_t bits;
      double d = t.floats[i];
      std::memcpy(&bits, &d, sizeof(bits));
      put(bits);
    } else if (t.elementType.isF32()) {
      uint32_t bits;
      float f = static_cast<float>(t.floats[i]);
      std::memcpy(&bits, &f, sizeof(bits));
      put(bits);
    } else {
      llvm::APFloat f(t.floats[i]);
      bool lost;
      f.convert(cast<FloatType>(t.elementType).getFloatSemantics(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      put(f.bitcastToAPInt().getZExtValue());
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`.
static SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

/// For every element of a tensor of shape `out` (row-major), the index of
/// the element of a tensor of shape `in`, which broadcasts to `out`, that it
/// reads.
static std::vector<int64_t> broadcastIndices(ArrayRef<int64_t> out,
                                             ArrayRef<int64_t> in) {
  size_t rank = out.size(), lead = rank - in.size();
  SmallVector<int64_t> inStride(rank, 0);
  int64_t s = 1;
  for (size_t i = in.size(); i-- > 0;) {
    inStride[lead + i] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  int64_t n = nn::numElements(out);
  std::vector<int64_t> indices(n);
  SmallVector<int64_t> counter(rank, 0);
  int64_t current = 0;
  for (int64_t e = 0; e < n; ++e) {
    indices[e] = current;
    for (size_t d = rank; d-- > 0;) {
      ++counter[d];
      current += inStride[d];
      if (counter[d] < out[d])
        break;
      current -= inStride[d] * out[d];
      counter[d] = 0;
    }
  }
  return indices;
}

//===----------------------------------------------------------------------===//
// Elementwise folds
//===----------------------------------------------------------------------===//

/// `a fn b` for a comparison `fn` (NaN compares false).
template <typename T> static bool compareValues(BinaryFn fn, T a, T b) {
  switch (fn) {
  case BinaryFn::Equal:
    return a == b;
  case BinaryFn::Less:
    return a < b;
  case BinaryFn::LessOrEqual:
    return a <= b;
  case BinaryFn::Greater:
    return a > b;
  case BinaryFn::GreaterOrEqual:
    return a >= b;
  default:
    return false;
  }
}

FailureOr<HostTensor> mlir::gpipe::nn::foldBinary(BinaryFn fn,
                                                  const HostTensor &lhs,
                                                  const HostTensor &rhs,
                                                  nn::EmitErrorFn emitError) {
  if (lhs.elementType != rhs.elementType)
    return emitError() << "operands have different element types "
                       << lhs.elementType << " and " << rhs.elementType,
           failure();
  FailureOr<nn::Shape> shape =
      nn::inferBroadcastShape({lhs.shape, rhs.shape}, emitError);
  if (failed(shape))
    return failure();
  bool logical =
      fn == BinaryFn::And || fn == BinaryFn::Or || fn == BinaryFn::Xor;
  if (logical && !lhs.isBool())
    return emitError() << "expected boolean operands, got " << lhs.elementType,
           failure();
  Type resultType = isComparison(fn)
                        ? IntegerType::get(lhs.elementType.getContext(), 1)
                        : lhs.elementType;
  HostTensor r = HostTensor::zeros(resultType, *shape);
  std::vector<int64_t> li = broadcastIndices(*shape, lhs.shape);
  std::vector<int64_t> ri = broadcastIndices(*shape, rhs.shape);
  for (size_t e = 0; e < li.size(); ++e) {
    if (isComparison(fn)) {
      r.ints[e] = lhs.isFloat()
                      ? compareValues(fn, lhs.floats[li[e]], rhs.floats[ri[e]])
                      : compareValues(fn, lhs.ints[li[e]], rhs.ints[ri[e]]);
      continue;
    }
    if (lhs.isFloat()) {
      double a = lhs.floats[li[e]], b = rhs.floats[ri[e]], v = 0;
      switch (fn) {
      case BinaryFn::Add:
        v = a + b;
        break;
      case BinaryFn::Sub:
        v = a - b;
        break;
      case BinaryFn::Mul:
        v = a * b;
        break;
      case BinaryFn::Div:
        v = a / b;
        break;
      // NaN propagates, as in ONNX Max and Min.
      case BinaryFn::Max:
        v = (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
        break;
      case BinaryFn::Mod:
      case BinaryFn::FMod:
        v = std::fmod(a, b);
        // Mod: the divisor's sign, a zero remainder included (numpy.mod).
        if (fn == BinaryFn::Mod && v == 0)
          v = std::copysign(0.0, b);
        else if (fn == BinaryFn::Mod && ((v < 0) != (b < 0)))
          v += b;
        break;
      case BinaryFn::Min:
        v = (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
        break;
      case BinaryFn::Pow:
        v = std::pow(a, b);
        break;
      default:
        break;
      }
      r.floats[e] = roundToFloatType(resultType, v);
      continue;
    }
    if (fn == BinaryFn::Pow)
      return emitError() << "integer power is not evaluated on the host",
             failure();
    int64_t a = lhs.ints[li[e]], b = rhs.ints[ri[e]];
    uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    int64_t v = 0;
    switch (fn) {
    case BinaryFn::Add:
      v = static_cast<int64_t>(ua + ub);
      break;
    case BinaryFn::Sub:
      v = static_cast<int64_t>(ua - ub);
      break;
    case BinaryFn::Mul:
      v = static_cast<int64_t>(ua * ub);
      break;
    case BinaryFn::Div:
      if (b == 0)
        return emitError() << "integer division by zero", failure();
      // Truncation toward zero, as ONNX specifies for integer Div.
      v = (a == INT64_MIN && b == -1) ? a : a / b;
      break;
    case BinaryFn::Max:
      v = std::max(a, b);
      break;
    case BinaryFn::Mod:
    case BinaryFn::FMod:
      if (b == 0)
        return emitError() << "integer modulo by zero", failure();
      v = (a == INT64_MIN && b == -1) ? 0 : a % b;
      if (fn == BinaryFn::Mod && v != 0 && ((v < 0) != (b < 0)))
        v += b;
      break;
    case BinaryFn::Min:
      v = std::min(a, b);
      break;
    case BinaryFn::And:
      v = (a != 0) && (b != 0);
      break;
    case BinaryFn::Or:
      v = (a != 0) || (b != 0);
      break;
    case BinaryFn::Xor:
      v = (a != 0) != (b != 0);
      break;
    default:
      break;
    }
    r.ints[e] = wrapToIntType(resultType, v);
  }
  return r;
}

FailureOr<HostTensor> mlir::gpipe::nn::foldUnary(UnaryFn fn,
                                                 const HostTensor &input,
                                                 nn::EmitErrorFn emitError) {
  HostTensor r = input;
  switch (fn) {
  case UnaryFn::Neg:
    if (input.isBool())
      return emitError() << "cannot negate a boolean tensor", failure();
    for (double &d : r.floats)
      d = -d;
    for (int64_t &i : r.ints)
      i = wrapToIntType(r.elementType,
                        static_cast<int64_t>(0 - static_cast<uint64_t>(i)));
    return r;
  case UnaryFn::Sqrt:
    if (!input.isFloat())
      return emitError() << "expected a float tensor, got "
                         << input.elementType,
             failure();
    for (double &d : r.floats)
      d = roundToFloatType(r.elementType, std::sqrt(d));
    return r;
  case UnaryFn::Sin:
  case UnaryFn::Cos:
  case UnaryFn::Log:
  case UnaryFn::Exp:
    if (!input.isFloat())
      return emitError() << "expected a float tensor, got "
                         << input.elementType,
             failure();
    for (double &d : r.floats)
      d = roundToFloatType(r.elementType, fn == UnaryFn::Sin   ? std::sin(d)
                                          : fn == UnaryFn::Cos ? std::cos(d)
                                          : fn == UnaryFn::Log ? std::log(d)
                                                               : std::exp(d));
    return r;
  case UnaryFn::Floor:
  case UnaryFn::Ceil:
  case UnaryFn::Round:
    // Integers are their own rounding.
    for (double &d : r.floats)
      d = fn == UnaryFn::Floor  ? std::floor(d)
          : fn == UnaryFn::Ceil ? std::ceil(d)
                                : std::nearbyint(d);
    return r;
  case UnaryFn::Not:
    if (!input.isBool())
      return emitError() << "expected a boolean tensor, got "
                         << input.elementType,
             failure();
    for (int64_t &i : r.ints)
      i = !i;
    return r;
  }
  return r;
}

FailureOr<HostTensor> mlir::gpipe::nn::foldWhere(const HostTensor &cond,
                                                 const HostTensor &x,
                                                 const HostTensor &y,
                                                 nn::EmitErrorFn emitError) {
  if (!cond.isBool())
    return emitError() << "expected a boolean condition, got "
                       << cond.elementType,
           failure();
  if (x.elementType != y.elementType)
    return emitError() << "select values have different element types "
                       << x.elementType << " and " << y.elementType,
           failure();
  FailureOr<nn::Shape> shape =
      nn::inferBroadcastShape({cond.shape, x.shape, y.shape}, emitError);
  if (failed(shape))
    return failure();
  HostTensor r = HostTensor::zeros(x.elementType, *shape);
  std::vector<int64_t> ci = broadcastIndices(*shape, cond.shape);
  std::vector<int64_t> xi = broadcastIndices(*shape, x.shape);
  std::vector<int64_t> yi = broadcastIndices(*shape, y.shape);
  for (size_t e = 0; e < ci.size(); ++e) {
    if (cond.ints[ci[e]])
      r.copyElement(e, x, xi[e]);
    else
      r.copyElement(e, y, yi[e]);
  }
  return r;
}

FailureOr<HostTensor> mlir::gpipe::nn::foldCast(const HostTensor &input,
                                                Type to,
                                                nn::EmitErrorFn emitError) {
  HostTensor r = HostTensor::zeros(to, input.shape);
  for (int64_t e = 0, n = input.numElements(); e < n; ++e) {
    if (r.isFloat()) {
      r.floats[e] = roundToFloatType(to, input.getDouble(e));
      continue;
    }
    if (r.isBool()) {
      r.ints[e] = input.isFloat() ? input.floats[e] != 0.0 : input.ints[e] != 0;
      continue;
    }
    if (!input.isFloat()) {
      r.ints[e] = wrapToIntType(to, input.ints[e]);
      continue;
    }
    double d = std::trunc(input.floats[e]);
    // [-2^63, 2^63) is what int64_t holds.
    if (!std::isfinite(d) || d < -9223372036854775808.0 ||
        d >= 9223372036854775808.0)
      return emitError() << "cannot cast " << input.floats[e] << " to " << to,
             failure();
    r.ints[e] = wrapToIntType(to, static_cast<int64_t>(d));
  }
  return r;
}

//===----------------------------------------------------------------------===//
// Data movement folds
//===----------------------------------------------------------------------===//

HostTensor mlir::gpipe::nn::foldGather(const HostTensor &data,
                                       ArrayRef<int64_t> indices,
                                       ArrayRef<int64_t> indicesShape,
                                       int64_t axis) {
  nn::Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.append(indicesShape.begin(), indicesShape.end());
  shape.append(data.shape.begin() + axis + 1, data.shape.end());
  HostTensor r = HostTensor::zeros(data.elementType, shape);
  int64_t outer =
      nn::numElements(ArrayRef<int64_t>(data.shape).take_front(axis));
  int64_t axisDim = data.shape[axis];
  int64_t inner =
      nn::numElements(ArrayRef<int64_t>(data.shape).drop_front(axis + 1));
  int64_t count = indices.size();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < count; ++k)
      for (int64_t i = 0; i < inner; ++i)
        r.copyElement((o * count + k) * inner + i, data,
                      (o * axisDim + indices[k]) * inner + i);
  return r;
}

HostTensor mlir::gpipe::nn::foldSlice(const HostTensor &input,
                                      ArrayRef<int64_t> offsets,
                                      ArrayRef<int64_t> sizes,
                                      ArrayRef<int64_t> strides) {
  HostTensor r = HostTensor::zeros(input.elementType, sizes);
  SmallVector<int64_t> inStride = stridesOf(input.shape);
  size_t rank = sizes.size();
  SmallVector<int64_t> counter(rank, 0);
  for (int64_t e = 0, n = r.numElements(); e < n; ++e) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d)
      src += (offsets[d] + counter[d] * strides[d]) * inStride[d];
    r.copyElement(e, input, src);
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < sizes[d])
        break;
      counter[d] = 0;
    }
  }
  return r;
}

HostTensor mlir::gpipe::nn::foldConcat(ArrayRef<const HostTensor *> inputs,
                                       int64_t axis,
                                       ArrayRef<int64_t> resultShape) {
  HostTensor r = HostTensor::zeros(inputs.front()->elementType, resultShape);
  int64_t outer = nn::numElements(resultShape.take_front(axis));
  int64_t inner = nn::numElements(resultShape.drop_front(axis + 1));
  int64_t e = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor *t : inputs) {
      int64_t chunk = t->shape[axis] * inner;
      for (int64_t i = 0; i < chunk; ++i)
        r.copyElement(e++, *t, o * chunk + i);
    }
  }
  return r;
}

HostTensor mlir::gpipe::nn::foldTranspose(const HostTensor &input,
                                          ArrayRef<int64_t> perm,
                                          ArrayRef<int64_t> resultShape) {
  HostTensor r = HostTensor::zeros(input.elementType, resultShape);
  SmallVector<int64_t> inStride = stridesOf(input.shape);
  size_t rank = resultShape.size();
  SmallVector<int64_t> counter(rank, 0);
  for (int64_t e = 0, n = r.numElements(); e < n; ++e) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d)
      src += counter[d] * inStride[perm[d]];
    r.copyElement(e, input, src);
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < resultShape[d])
        break;
      counter[d] = 0;
    }
  }
  return r;
}

HostTensor mlir::gpipe::nn::foldBroadcastTo(const HostTensor &input,
                                            ArrayRef<int64_t> shape) {
  HostTensor r = HostTensor::zeros(input.elementType, shape);
  std::vector<int64_t> src = broadcastIndices(shape, input.shape);
  for (size_t e = 0; e < src.size(); ++e)
    r.copyElement(e, input, src[e]);
  return r;
}

HostTensor mlir::gpipe::nn::foldTrilu(const HostTensor &input, int64_t k,
                                      bool upper) {
  HostTensor r = input;
  size_t rank = input.shape.size();
  int64_t rows = input.shape[rank - 2], cols = input.shape[rank - 1];
  for (int64_t e = 0, n = r.numElements(); e < n; ++e) {
    int64_t j = e % cols, i = (e / cols) % rows;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (keep)
      continue;
    if (r.isFloat())
      r.floats[e] = 0.0;
    else
      r.ints[e] = 0;
  }
  return r;
}
