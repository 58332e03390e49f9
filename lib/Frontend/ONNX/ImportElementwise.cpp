//===- ImportElementwise.cpp - Elementwise ONNX ops -----------------------===//
//
// Arithmetic, comparisons, logic, unary math, Where and Cast: folded on the
// host when every input is a host constant, `nn` ops otherwise.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::onnximport;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// Pow: the result has the base's type. Float bases and integer bases with
/// a float exponent are computed in f32 (a float power of an integer is
/// truncated back to it, as ONNX's reference casts numpy's result); integer
/// powers of integers in i64, exactly.
LogicalResult Importer::importPow(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int base = n.inputs[0], exponent = n.inputs[1];
  Type declared = elementTypeOf(base), exponentType = elementTypeOf(exponent);
  auto isNumber = [](Type t) {
    return isa<FloatType>(t) || (isa<IntegerType>(t) && !t.isInteger(1));
  };
  if (!isNumber(declared) || !isNumber(exponentType))
    return n.error() << "raises " << typeOf(base) << " to a "
                     << typeOf(exponent)
                     << " power; Pow takes numbers, not booleans",
           failure();
  bool integerPower =
      isa<IntegerType>(declared) && isa<IntegerType>(exponentType);
  Type compute = integerPower ? builder.getI64Type()
                              : computeTypeOf(isa<FloatType>(declared)
                                                  ? declared
                                                  : builder.getF32Type());
  if (!compute.isF32() && !compute.isInteger(64))
    return n.error() << "raises " << typeOf(base)
                     << "; gpipe computes powers of f32, f64 and integer "
                        "tensors",
           failure();
  SmallVector<ArrayRef<int64_t>> shapes = {shapeOf(base), shapeOf(exponent)};
  FailureOr<nn::Shape> shape =
      nn::inferBroadcastShape(shapes, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  FailureOr<Value> x = getValueAs(base, compute, n.loc);
  if (failed(x))
    return failure();
  FailureOr<Value> y = getValueAs(exponent, compute, n.loc);
  if (failed(y))
    return failure();
  Value result = nn::PowOp::create(
      builder, n.loc, RankedTensorType::get(*shape, compute), *x, *y);
  return defineValue(n, 0, castElements(result, declared, n.loc));
}

LogicalResult Importer::importEqual(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int a = n.inputs[0], b = n.inputs[1];
  if (isHost(a) && isHost(b)) {
    FailureOr<HostTensor> r = foldBinary(BinaryFn::Equal, host(a), host(b),
                                         [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
  if (failed(requireSameElementType(n, {a, b})))
    return failure();
  return emitBroadcast(n, {a, b}, builder.getI1Type(),
                       [&](Type type, ArrayRef<Value> v) -> Value {
                         return nn::EqualOp::create(builder, n.loc, type, v[0],
                                                    v[1]);
                       });
}

LogicalResult Importer::importNot(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  int x = n.inputs[0];
  if (isHost(x)) {
    FailureOr<HostTensor> r =
        foldUnary(UnaryFn::Not, host(x), [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
  if (!elementTypeOf(x).isInteger(1))
    return n.error() << "needs a boolean input, got " << typeOf(x), failure();
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  return defineValue(n, 0, nn::NotOp::create(builder, n.loc, typeOf(x), *v));
}

LogicalResult Importer::importWhere(NodeCtx &n) {
  if (failed(expectInputs(n, 3, 3)))
    return failure();
  int c = n.inputs[0], x = n.inputs[1], y = n.inputs[2];
  if (isHost(c) && isHost(x) && isHost(y)) {
    FailureOr<HostTensor> r =
        foldWhere(host(c), host(x), host(y), [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
  if (!elementTypeOf(c).isInteger(1))
    return n.error() << "needs a boolean condition, got " << typeOf(c),
           failure();
  if (failed(requireSameElementType(n, {x, y})))
    return failure();
  return emitBroadcast(n, {c, x, y}, elementTypeOf(x),
                       [&](Type type, ArrayRef<Value> v) -> Value {
                         return nn::WhereOp::create(builder, n.loc, type, v[0],
                                                    v[1], v[2]);
                       });
}

/// Cast, and CastLike (opset 15: to the element type of its second input).
LogicalResult Importer::importCast(NodeCtx &n) {
  bool like = n.opType == "CastLike";
  if (failed(expectInputs(n, like ? 2 : 1, like ? 2 : 1)))
    return failure();
  Type target;
  if (like) {
    target = elementTypeOf(n.inputs[1]);
  } else {
    int64_t to = 0;
    if (failed(getIntAttr(n, "to", to)))
      return failure();
    target = elementTypeFor(ctx, to);
    if (!target)
      return n.error() << "casts to " << onnxTypeName(to)
                       << ", which gpipe does not support",
             failure();
  }
  int x = n.inputs[0];
  if (isHost(x)) {
    FailureOr<HostTensor> r =
        foldCast(host(x), target, [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
  // Integer data is computed in i64 (the kernels' integer type): a cast to
  // a narrower integer keeps i64. Position ids and masks never come near
  // the narrower type's range.
  if (isa<IntegerType>(target) && !target.isInteger(1) &&
      !target.isInteger(64) && !isHost(x))
    target = builder.getI64Type();
  if (target == elementTypeOf(x))
    return defineAlias(n, 0, x);
  if (!isNNElementType(target))
    return n.error() << "casts to " << target
                     << ", which nn ops do not support",
           failure();
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  auto type = RankedTensorType::get(shapeOf(x), target);
  return defineValue(n, 0, nn::CastOp::create(builder, n.loc, type, *v));
}

/// Sum of one or more tensors with broadcasting, a chain of nn.add in the
/// inputs' order (ONNX's; the order fixes the rounding).
LogicalResult Importer::importSum(NodeCtx &n) {
  return importVariadic(n, BinaryFn::Add);
}

//===----------------------------------------------------------------------===//
// Comparisons, logic, clamps and the hard activations
//===----------------------------------------------------------------------===//

/// Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor, Max and Min:
/// folded on host constants; on data, nn.compare, nn.logical, nn.max and
/// nn.min.
LogicalResult Importer::importBinaryLogic(NodeCtx &n) {
  BinaryFn fn = llvm::StringSwitch<BinaryFn>(n.opType)
                    .Case("Less", BinaryFn::Less)
                    .Case("LessOrEqual", BinaryFn::LessOrEqual)
                    .Case("Greater", BinaryFn::Greater)
                    .Case("GreaterOrEqual", BinaryFn::GreaterOrEqual)
                    .Case("And", BinaryFn::And)
                    .Case("Or", BinaryFn::Or)
                    .Case("Xor", BinaryFn::Xor)
                    .Case("Max", BinaryFn::Max)
                    .Case("Min", BinaryFn::Min);
  bool extremum = fn == BinaryFn::Max || fn == BinaryFn::Min;
  if (extremum)
    return importVariadic(n, fn);
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int a = n.inputs[0], b = n.inputs[1];
  if (isHost(a) && isHost(b)) {
    FailureOr<HostTensor> r =
        foldBinary(fn, host(a), host(b), [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
  if (failed(requireSameElementType(n, {a, b})))
    return failure();
  if (fn == BinaryFn::And || fn == BinaryFn::Or || fn == BinaryFn::Xor) {
    if (!elementTypeOf(a).isInteger(1))
      return n.error() << "needs boolean operands, got " << typeOf(a),
             failure();
    nn::LogicalKind kind = fn == BinaryFn::And  ? nn::LogicalKind::and_
                           : fn == BinaryFn::Or ? nn::LogicalKind::or_
                                                : nn::LogicalKind::xor_;
    return emitBroadcast(n, {a, b}, builder.getI1Type(),
                         [&](Type type, ArrayRef<Value> v) -> Value {
                           return nn::LogicalOp::create(builder, n.loc, type,
                                                        kind, v[0], v[1]);
                         });
  }
  nn::ComparePredicate predicate =
      fn == BinaryFn::Less          ? nn::ComparePredicate::lt
      : fn == BinaryFn::LessOrEqual ? nn::ComparePredicate::le
      : fn == BinaryFn::Greater     ? nn::ComparePredicate::gt
                                    : nn::ComparePredicate::ge;
  return emitBroadcast(n, {a, b}, builder.getI1Type(),
                       [&](Type type, ArrayRef<Value> v) -> Value {
                         return nn::CompareOp::create(builder, n.loc, type,
                                                      predicate, v[0], v[1]);
                       });
}

/// A float scalar constant bound (Clip's min and max inputs, or its opset-6
/// attributes); `value` keeps its default when the input is omitted.
LogicalResult Importer::clipBound(NodeCtx &n, int operand, StringRef attr,
                                  float &value) {
  if (opset < 11)
    return getFloatAttr(n, attr, value);
  if (n.input(operand) < 0)
    return success();
  FailureOr<HostTensor> t = constScalar(n, operand, attr);
  if (failed(t))
    return failure();
  if (!t->isFloat())
    return n.error() << "needs a float " << attr << ", got " << t->getType(),
           failure();
  value = static_cast<float>(t->floats[0]);
  if (std::isnan(value))
    return n.error() << "has a NaN " << attr, failure();
  return success();
}

/// `nn.clip` of `x` to [lo, hi].
FailureOr<Value> Importer::emitClip(NodeCtx &n, Value x, float lo, float hi) {
  return nn::ClipOp::create(builder, n.loc, x.getType(), x,
                            builder.getF32FloatAttr(lo),
                            builder.getF32FloatAttr(hi))
      .getResult();
}

LogicalResult Importer::importClip(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 3)) || failed(requireFloat(n, 0, "input")))
    return failure();
  float inf = std::numeric_limits<float>::infinity();
  float lo = -inf, hi = inf;
  if (failed(clipBound(n, 1, "min", lo)) || failed(clipBound(n, 2, "max", hi)))
    return failure();
  // min > max: every element is max (ONNX, as numpy.clip).
  if (lo > hi)
    lo = hi;
  int x = n.inputs[0];
  if (isHost(x)) {
    HostTensor r = host(x);
    for (double &d : r.floats)
      if (!std::isnan(d))
        d = std::min<double>(std::max<double>(d, lo), hi);
    return defineHost(n, 0, std::move(r));
  }
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  FailureOr<Value> r = emitClip(n, *v, lo, hi);
  if (failed(r))
    return failure();
  return defineValue(n, 0, *r);
}

/// HardSigmoid(x) = clip(alpha * x + beta, 0, 1); HardSwish(x) =
/// x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (ONNX's definitions).
LogicalResult Importer::importHardActivation(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  bool swish = n.opType == "HardSwish";
  float alpha = swish ? 1.0f / 6.0f : 0.2f, beta = 0.5f;
  if (!swish && (failed(getFloatAttr(n, "alpha", alpha)) ||
                 failed(getFloatAttr(n, "beta", beta))))
    return failure();
  FailureOr<Value> x = getValue(n, 0);
  if (failed(x))
    return failure();
  Type element = elementTypeOf(n.inputs[0]);
  auto scalar = [&](float v) {
    HostTensor t = HostTensor::zeros(element, {});
    t.floats[0] = roundToFloatType(element, v);
    return materialize(t, n.loc, n.name);
  };
  Value scaled = nn::MulOp::create(builder, n.loc, *x, scalar(alpha));
  Value shifted = nn::AddOp::create(builder, n.loc, scaled, scalar(beta));
  FailureOr<Value> gate = emitClip(n, shifted, 0.0f, 1.0f);
  if (failed(gate))
    return failure();
  if (!swish)
    return defineValue(n, 0, *gate);
  return defineValue(n, 0, nn::MulOp::create(builder, n.loc, *x, *gate));
}

/// Swish (opset 24): x * sigmoid(alpha * x); SiLU is alpha 1.
LogicalResult Importer::importSwish(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  float alpha = 1.0f;
  if (failed(getFloatAttr(n, "alpha", alpha)))
    return failure();
  FailureOr<Value> x = getValue(n, 0);
  if (failed(x))
    return failure();
  Value arg = *x;
  if (alpha != 1.0f) {
    HostTensor t = HostTensor::zeros(elementTypeOf(n.inputs[0]), {});
    t.floats[0] = roundToFloatType(t.elementType, alpha);
    arg = nn::MulOp::create(builder, n.loc, *x, materialize(t, n.loc, n.name));
  }
  Value gate = nn::SigmoidOp::create(builder, n.loc, arg.getType(), arg);
  return defineValue(n, 0, nn::MulOp::create(builder, n.loc, *x, gate));
}

/// IsNaN: folded on a host constant; on data, `x != x`.
LogicalResult Importer::importIsNaN(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  int x = n.inputs[0];
  if (isHost(x)) {
    HostTensor r = HostTensor::zeros(builder.getI1Type(), shapeOf(x));
    for (auto [i, d] : llvm::enumerate(host(x).floats))
      r.ints[i] = std::isnan(d);
    return defineHost(n, 0, std::move(r));
  }
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  auto type = RankedTensorType::get(shapeOf(x), builder.getI1Type());
  return defineValue(n, 0,
                     nn::CompareOp::create(builder, n.loc, type,
                                           nn::ComparePredicate::ne, *v, *v));
}

/// Sum, Max and Min of one or more tensors (`fn` Add, Max or Min): folded on
/// constants, else a chain of nn.add, nn.max or nn.min in the inputs' order,
/// computed in the element type's computing type (computeTypeOf).
LogicalResult Importer::importVariadic(NodeCtx &n, BinaryFn fn) {
  if (failed(expectInputs(n, 1, std::numeric_limits<int>::max())) ||
      failed(requireSameElementType(n, n.inputs)))
    return failure();
  if (n.numInputs() == 1)
    return defineAlias(n, 0, n.inputs[0]);
  if (allHost(n)) {
    HostTensor acc = host(n.inputs[0]);
    for (int i = 1; i < n.numInputs(); ++i) {
      FailureOr<HostTensor> r = foldBinary(fn, acc, host(n.inputs[i]),
                                           [&] { return n.shapeError(); });
      if (failed(r))
        return failure();
      acc = std::move(*r);
    }
    return defineHost(n, 0, std::move(acc));
  }
  Type declared = elementTypeOf(n.inputs[0]);
  Type element = computeTypeOf(declared);
  if (!element.isF32() && !element.isInteger(64))
    return n.error() << "takes the elementwise " << n.opType << " of "
                     << typeOf(n.inputs[0])
                     << " tensors; gpipe supports it on f32, f64 and integer "
                        "tensors or constants",
           failure();
  FailureOr<Value> acc = getValueAs(n.inputs[0], element, n.loc);
  if (failed(acc))
    return failure();
  Value result = *acc;
  for (int i = 1; i < n.numInputs(); ++i) {
    FailureOr<Value> next = getValueAs(n.inputs[i], element, n.loc);
    if (failed(next))
      return failure();
    SmallVector<ArrayRef<int64_t>> shapes = {
        cast<RankedTensorType>(result.getType()).getShape(),
        shapeOf(n.inputs[i])};
    FailureOr<nn::Shape> shape =
        nn::inferBroadcastShape(shapes, [&] { return n.shapeError(); });
    if (failed(shape))
      return failure();
    auto type = RankedTensorType::get(*shape, element);
    if (fn == BinaryFn::Add)
      result = nn::AddOp::create(builder, n.loc, type, result, *next);
    else if (fn == BinaryFn::Max)
      result = nn::MaxOp::create(builder, n.loc, type, result, *next);
    else
      result = nn::MinOp::create(builder, n.loc, type, result, *next);
  }
  return defineValue(n, 0, castElements(result, declared, n.loc));
}

/// Mod: folded on constants (window and padding arithmetic on shapes);
/// on data nn.remainder (`fmod` 0: the divisor's sign, numpy.mod) or
/// nn.fmod (`fmod` 1: the dividend's sign, C's fmod).
LogicalResult Importer::importMod(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int64_t fmod = 0;
  if (failed(getIntAttr(n, "fmod", fmod)))
    return failure();
  int a = n.inputs[0], b = n.inputs[1];
  if (isHost(a) && isHost(b)) {
    FailureOr<HostTensor> r =
        foldBinary(fmod ? BinaryFn::FMod : BinaryFn::Mod, host(a), host(b),
                   [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
  if (failed(widenIntegerConstant(n, a, b)) ||
      failed(widenIntegerConstant(n, b, a)) ||
      failed(requireSameElementType(n, {a, b})))
    return failure();
  Type declared = elementTypeOf(a), compute = computeTypeOf(declared);
  if (!compute.isF32() && !compute.isInteger(64))
    return n.error() << "takes the remainder of " << typeOf(a)
                     << " tensors; gpipe supports f32, f64 and integer ones",
           failure();
  return emitBroadcastComputed(
      n, {a, b}, declared, [&](Type type, ArrayRef<Value> v) -> Value {
        if (fmod)
          return nn::FModOp::create(builder, n.loc, type, v[0], v[1]);
        return nn::RemainderOp::create(builder, n.loc, type, v[0], v[1]);
      });
}
