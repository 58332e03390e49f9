//===- NNOps.cpp - nn dialect ops -----------------------------------------===//
//
// Implements the `nn` dialect: registration, op verifiers (each a shape rule
// from NNShapes.h compared against the declared result type), folders, and
// the cost of every op for the partitioner. The VJPs are in NNVJP.cpp.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <type_traits>

using namespace mlir;
using namespace mlir::gpipe::nn;

#include "gpipe/Dialect/NN/IR/NNEnums.cpp.inc"
#include "gpipe/Dialect/NN/IR/NNInterfaces.cpp.inc"
#include "gpipe/Dialect/NN/IR/NNOpsDialect.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gpipe/Dialect/NN/IR/NNOps.cpp.inc"
      >();
}

LogicalResult NNDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto fail = [&](StringRef expected) {
    return op->emitError("'")
           << name << "' must be " << expected << ", got " << value;
  };
  bool onFunc = isa<func::FuncOp>(op);
  if (name == kDifferentiateAttrName)
    return onFunc && isa<UnitAttr>(value)
               ? success()
               : fail("a unit attribute on a 'func.func'");
  if (name == kParamGradsAttrName) {
    auto refs = dyn_cast<ArrayAttr>(value);
    if (!onFunc || !refs || !llvm::all_of(refs, [](Attribute a) {
          return isa<FlatSymbolRefAttr>(a);
        }))
      return fail("an array of parameter symbols on a 'func.func'");
    return success();
  }
  if (name == kInputGradsAttrName) {
    auto positions = dyn_cast<DenseI64ArrayAttr>(value);
    if (!onFunc || !positions ||
        llvm::any_of(positions.asArrayRef(), [](int64_t p) { return p < 0; }))
      return fail("an array of argument positions on a 'func.func'");
    return success();
  }
  if (name == kLossScaleAttrName) {
    auto scale = dyn_cast<FloatAttr>(value);
    if (!onFunc || !scale || !std::isfinite(scale.getValueAsDouble()))
      return fail("a finite float on a 'func.func'");
    return success();
  }
  if (name == kSavedCountAttrName || name == kDeferredCountAttrName) {
    auto count = dyn_cast<IntegerAttr>(value);
    if (!onFunc || !count || count.getInt() < 0)
      return fail("a non-negative integer on a 'func.func'");
    return success();
  }
  if (name == kRunningStatisticAttrName)
    return isa<ParameterOp>(op) && isa<UnitAttr>(value)
               ? success()
               : fail("a unit attribute on an 'nn.parameter'");
  if (name == kInputPartsAttrName) {
    auto parts = dyn_cast<ArrayAttr>(value);
    auto isPart = [](Attribute a) {
      auto part = dyn_cast<DictionaryAttr>(a);
      auto offset = part ? part.getAs<IntegerAttr>("offset") : nullptr;
      auto type = part ? part.getAs<TypeAttr>("type") : nullptr;
      return part && part.getAs<StringAttr>("name") && offset &&
             offset.getInt() >= 0 && type &&
             isa<RankedTensorType>(type.getValue());
    };
    if (!isa<ModuleOp>(op) || !parts || !llvm::all_of(parts, isPart))
      return fail("an array of {name, offset, type} dictionaries on the "
                  "module");
    return success();
  }
  return op->emitError("unknown nn attribute '") << name << "'";
}

unsigned NNDialect::getDeferredCount(Operation *func) {
  auto count = func->getAttrOfType<IntegerAttr>(kDeferredCountAttrName);
  return count && count.getInt() > 0 ? static_cast<unsigned>(count.getInt())
                                     : 0;
}

SmallVector<std::pair<unsigned, Operation *>>
NNDialect::getAccumulatingGemms(Operation *op, unsigned firstParamGrad) {
  SmallVector<std::pair<unsigned, Operation *>> found;
  auto func = dyn_cast<func::FuncOp>(op);
  auto grads = op->getAttrOfType<ArrayAttr>(kParamGradsAttrName);
  if (!func || !grads || func.isExternal() || !func.getBody().hasOneBlock())
    return found;
  Block &body = func.getBody().front();
  Operation *ret = body.getTerminator();
  for (unsigned k = 0; k < grads.size(); ++k) {
    unsigned index = firstParamGrad + k;
    if (index >= ret->getNumOperands())
      break;
    Value g = ret->getOperand(index);
    auto gemm = g.getDefiningOp<GemmOp>();
    if (!gemm || gemm->getBlock() != &body || gemm.getC() || !g.hasOneUse() ||
        !cast<RankedTensorType>(g.getType()).getElementType().isF32())
      continue;
    found.push_back({index, gemm});
  }
  return found;
}

Operation *NNDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

static std::optional<ArrayRef<int64_t>> optionalShape(Value v) {
  if (!v)
    return std::nullopt;
  return shapeOf(v);
}

int64_t mlir::gpipe::nn::tensorBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  unsigned bits = shaped.getElementTypeBitWidth();
  return shaped.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

OpCost mlir::gpipe::nn::detail::elementwiseCost(Operation *op,
                                                int64_t flopsPerElement) {
  OpCost cost;
  cost.calls = 1;
  for (Value v : op->getOperands())
    cost.bytesRead += tensorBytes(v.getType());
  for (Value v : op->getResults()) {
    cost.bytesWritten += tensorBytes(v.getType());
    if (auto t = dyn_cast<ShapedType>(v.getType()))
      cost.flops += t.getNumElements() * flopsPerElement;
  }
  return cost;
}

/// Compares an inferred shape with the op's result type.
static LogicalResult checkResultShape(Operation *op, FailureOr<Shape> inferred,
                                      unsigned resultIndex = 0) {
  if (failed(inferred))
    return failure();
  ArrayRef<int64_t> actual = shapeOf(op->getResult(resultIndex));
  if (actual != ArrayRef<int64_t>(*inferred))
    return op->emitOpError("expected result shape ")
           << formatShape(*inferred) << " but the result type has shape "
           << formatShape(actual);
  return success();
}

static LogicalResult checkSameElementType(Operation *op, Value a, Value b,
                                          StringRef what) {
  Type ea = getElementTypeOrSelf(a.getType());
  Type eb = getElementTypeOrSelf(b.getType());
  if (ea != eb)
    return op->emitOpError("expected ")
           << what << " of one element type, got " << ea << " and " << eb;
  return success();
}

#define NN_EMIT [&] { return this->emitOpError(); }

/// A `dense_resource` value whose blob is loaded must hold exactly the bytes
/// of its type, or readers of the blob run past its end.
static LogicalResult verifyResourceSize(Operation *op, ElementsAttr value) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  if (!resource)
    return success();
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  if (!blob)
    return success();
  int64_t expected = tensorBytes(resource.getType());
  int64_t got = blob->getData().size();
  if (got != expected)
    return op->emitOpError("resource '")
           << resource.getRawHandle().getKey() << "' holds " << got
           << " bytes but " << resource.getType() << " needs " << expected;
  return success();
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

/// `init normal(0.02)`: the rule, and in parentheses its scale.
static ParseResult parseInitRule(OpAsmParser &parser, InitKindAttr &init,
                                 FloatAttr &scale) {
  if (failed(parser.parseOptionalKeyword("init")))
    return success();
  StringRef keyword;
  SMLoc at = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind)
    return parser.emitError(at, "unknown init rule '")
           << keyword << "' (expected zeros, ones, normal or uniform)";
  init = InitKindAttr::get(parser.getContext(), *kind);
  if (succeeded(parser.parseOptionalLParen())) {
    double value = 0;
    if (parser.parseFloat(value) || parser.parseRParen())
      return failure();
    scale = parser.getBuilder().getF64FloatAttr(value);
  }
  return success();
}

static void printInitRule(OpAsmPrinter &printer, Operation *, InitKindAttr init,
                          FloatAttr scale) {
  if (!init)
    return;
  printer << "init " << stringifyInitKind(init.getValue());
  if (scale) {
    printer << "(";
    printer.printFloat(scale.getValue());
    printer << ")";
  }
}

LogicalResult ParameterOp::verify() {
  if (FlatSymbolRefAttr first = getTiedToAttr()) {
    if (getInitialValue() || getInit())
      return emitOpError("parameter '")
             << getSymName() << "' is tied to @" << first.getValue()
             << " and starts as it does: it takes no initial value or init "
                "rule";
    auto module = (*this)->getParentOfType<ModuleOp>();
    auto target = module ? module.lookupSymbol<ParameterOp>(first) : nullptr;
    if (!target)
      return emitOpError("parameter '")
             << getSymName() << "' is tied to @" << first.getValue()
             << ", which is not an nn.parameter";
    if (target.getTiedTo())
      return emitOpError("parameter '")
             << getSymName() << "' is tied to @" << first.getValue()
             << ", itself a copy; tie copies to the first parameter";
    if (target.getType() != getType())
      return emitOpError("parameter '")
             << getSymName() << "' of type " << getType() << " is tied to @"
             << first.getValue() << " of type " << target.getType();
  } else if (getInitialValue().has_value() == getInit().has_value())
    return emitOpError("parameter '")
           << getSymName()
           << "' needs exactly one of an initial value and an init rule";
  if (auto value = getInitialValueAttr()) {
    if (value.getType() != getType())
      return emitOpError("initial value of type ")
             << value.getType() << " does not match parameter type "
             << getType();
  }
  if (std::optional<InitKind> init = getInit()) {
    StringRef name = stringifyInitKind(*init);
    bool needsScale = *init == InitKind::Normal || *init == InitKind::Uniform;
    if (needsScale && !getInitScale())
      return emitOpError("init rule '") << name << "' needs init_scale";
    // A standard deviation or half-width must be positive (NaN is not).
    if (needsScale && !(getInitScaleAttr().getValueAsDouble() > 0.0))
      return emitOpError("init rule '")
             << name << "' needs a positive init_scale, got "
             << getInitScaleAttr().getValueAsDouble();
    if (!needsScale && getInitScale())
      return emitOpError("init rule '") << name << "' takes no scale";
  }
  if (!getTensorType().getElementType().isFloat())
    return emitOpError("parameters must have a float element type, got ")
           << getTensorType().getElementType();
  if (auto value = getInitialValueAttr())
    return verifyResourceSize(*this, value);
  return success();
}

OpCost ParameterOp::getCost() { return {}; }

LogicalResult ParamOp::verify() { return success(); }

LogicalResult ParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param =
      symbolTable.lookupNearestSymbolFrom<ParameterOp>(*this, getNameAttr());
  if (!param)
    return emitOpError("'") << getName() << "' does not name an nn.parameter";
  if (param.getType() != getType())
    return emitOpError("type ") << getType() << " does not match parameter '"
                                << getName() << "' of type " << param.getType();
  return success();
}

OpCost ParamOp::getCost() {
  OpCost cost;
  cost.paramBytes = tensorBytes(getType());
  return cost;
}

LogicalResult ConstantOp::verify() {
  if (getValue().getType() != getType())
    return emitOpError("value type ")
           << getValue().getType() << " does not match result type "
           << getType();
  return verifyResourceSize(*this, getValue());
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpCost ConstantOp::getCost() { return {}; }

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult verifyBroadcastOp(Operation *op, ValueRange operands,
                                       bool sameElementType = true) {
  if (sameElementType && operands.size() >= 2 &&
      failed(checkSameElementType(op, operands[0], operands[1], "operands")))
    return failure();
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : operands)
    shapes.push_back(shapeOf(v));
  return checkResultShape(
      op, inferBroadcastShape(shapes, [&] { return op->emitOpError(); }));
}

static LogicalResult verifyBinary(Operation *op) {
  if (failed(verifyBroadcastOp(op, op->getOperands())))
    return failure();
  return checkSameElementType(op, op->getOperand(0), op->getResult(0),
                              "operands and result");
}

// Flops per output element of the elementwise ops. Transcendentals count as
// a handful of operations; only ratios matter to the partitioner.
#define NN_BINARY(OP, FLOPS)                                                   \
  LogicalResult OP::verify() { return verifyBinary(*this); }                   \
  OpCost OP::getCost() { return detail::elementwiseCost(*this, FLOPS); }
NN_BINARY(AddOp, 1)
NN_BINARY(SubOp, 1)
NN_BINARY(MulOp, 1)
NN_BINARY(DivOp, 1)
NN_BINARY(PowOp, 8)
NN_BINARY(MaxOp, 1)
NN_BINARY(MinOp, 1)
NN_BINARY(RemainderOp, 4)
NN_BINARY(FModOp, 4)
#undef NN_BINARY

#define NN_UNARY(OP, FLOPS)                                                    \
  OpCost OP::getCost() { return detail::elementwiseCost(*this, FLOPS); }
NN_UNARY(NegOp, 1)
NN_UNARY(ReciprocalOp, 1)
NN_UNARY(SqrtOp, 4)
NN_UNARY(ExpOp, 8)
NN_UNARY(LogOp, 8)
NN_UNARY(ErfOp, 8)
NN_UNARY(TanhOp, 8)
NN_UNARY(SigmoidOp, 10)
NN_UNARY(ReluOp, 1)
NN_UNARY(GeluOp, 14)
NN_UNARY(SinOp, 8)
NN_UNARY(FloorOp, 1)
NN_UNARY(CeilOp, 1)
NN_UNARY(RoundOp, 1)
NN_UNARY(CosOp, 8)
NN_UNARY(NotOp, 1)
NN_UNARY(ClipGradOp, 2)
#undef NN_UNARY

LogicalResult CompareOp::verify() {
  return verifyBroadcastOp(*this, getOperands());
}
OpCost CompareOp::getCost() { return detail::elementwiseCost(*this, 1); }

LogicalResult LogicalOp::verify() {
  return verifyBroadcastOp(*this, getOperands());
}
OpCost LogicalOp::getCost() { return detail::elementwiseCost(*this, 1); }

LogicalResult CumSumOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError("result type ")
           << getResult().getType() << " differs from the input's "
           << getInput().getType();
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  if (getAxis() >= uint64_t(rank))
    return emitOpError("axis ")
           << getAxis() << " is out of range for rank " << rank;
  return success();
}
OpCost CumSumOp::getCost() { return detail::elementwiseCost(*this, 1); }

LogicalResult BroadcastToOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getResult(),
                                  "input and result")))
    return failure();
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  if (in.size() > out.size())
    return emitOpError("cannot broadcast ")
           << formatShape(in) << " to the lower rank " << formatShape(out);
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t d = in[in.size() - 1 - i], r = out[out.size() - 1 - i];
    if (d != 1 && d != r)
      return emitOpError("cannot broadcast ")
             << formatShape(in) << " to " << formatShape(out) << ": dim "
             << in.size() - 1 - i << " has size " << d << ", not 1 or " << r;
  }
  return success();
}
OpFoldResult BroadcastToOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}
OpCost BroadcastToOp::getCost() { return detail::elementwiseCost(*this, 0); }

LogicalResult ClipOp::verify() {
  float lo = getMin().convertToFloat(), hi = getMax().convertToFloat();
  if (!(lo <= hi))
    return emitOpError("has min ") << lo << " above max " << hi;
  return success();
}
OpCost ClipOp::getCost() { return detail::elementwiseCost(*this, 2); }

LogicalResult EqualOp::verify() {
  return verifyBroadcastOp(*this, getOperands());
}
OpCost EqualOp::getCost() { return detail::elementwiseCost(*this, 1); }

LogicalResult WhereOp::verify() {
  if (failed(checkSameElementType(*this, getX(), getY(), "select values")) ||
      failed(checkSameElementType(*this, getX(), getResult(),
                                  "select values and result")))
    return failure();
  return verifyBroadcastOp(*this, getOperands(), /*sameElementType=*/false);
}
OpCost WhereOp::getCost() { return detail::elementwiseCost(*this, 1); }

LogicalResult CastOp::verify() {
  if (shapeOf(getInput()) != shapeOf(getResult()))
    return emitOpError("cast cannot change the shape ")
           << formatShape(shapeOf(getInput())) << " to "
           << formatShape(shapeOf(getResult()));
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}
OpCost CastOp::getCost() { return detail::elementwiseCost(*this, 0); }

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("expected a ratio in [0, 1), got ") << ratio;
  return success();
}
// A hash and a compare per element, then a multiply.
OpCost DropoutOp::getCost() { return detail::elementwiseCost(*this, 8); }

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

void MatMulOp::build(OpBuilder &builder, OperationState &state, Value lhs,
                     Value rhs, bool transLhs, bool transRhs) {
  auto l = cast<RankedTensorType>(lhs.getType());
  FailureOr<Shape> shape = inferMatMulShape(
      l.getShape(), shapeOf(rhs),
      [&] { return mlir::emitError(state.location); }, transLhs, transRhs);
  Type result = succeeded(shape)
                    ? RankedTensorType::get(*shape, l.getElementType())
                    : Type(l);
  build(builder, state, result, lhs, rhs, transLhs, transRhs);
}

LogicalResult MatMulOp::verify() {
  if (failed(checkSameElementType(*this, getLhs(), getRhs(), "operands")) ||
      failed(checkSameElementType(*this, getLhs(), getResult(),
                                  "operands and result")))
    return failure();
  return checkResultShape(
      *this, inferMatMulShape(shapeOf(getLhs()), shapeOf(getRhs()), NN_EMIT,
                              getTransLhs(), getTransRhs()));
}

/// 2*M*N*K for a product of [.., M, K] and [.., K, N] with `batch` batches.
static int64_t matmulFlops(int64_t batch, int64_t m, int64_t n, int64_t k) {
  return 2 * batch * m * n * k;
}

OpCost MatMulOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  ArrayRef<int64_t> out = shapeOf(getResult());
  ArrayRef<int64_t> lhs = shapeOf(getLhs());
  ArrayRef<int64_t> rhs = shapeOf(getRhs());
  int64_t k = getTransLhs() ? lhs[lhs.size() - 2] : lhs.back();
  int64_t batch = numElements(out.drop_back(2));
  int64_t m = out[out.size() - 2];
  cost.flops = matmulFlops(batch, m, out.back(), k);
  // A rhs every batch shares, and a lhs that is not transposed: the
  // kernel folds the batch into the rows of one GEMM.
  bool shared = numElements(rhs.drop_back(2)) == 1 &&
                numElements(lhs.drop_back(2)) == batch && !getTransLhs();
  cost.gemm = {shared ? 1 : batch,
               shared ? batch * m : m,
               out.back(),
               k,
               getTransLhs(),
               getTransRhs(),
               /*parallelBatch=*/!shared};
  return cost;
}

LogicalResult GemmOp::verify() {
  if (!std::isfinite(getAlpha().convertToFloat()) ||
      !std::isfinite(getBeta().convertToFloat()))
    return emitOpError("expected a finite alpha and beta, got ")
           << getAlpha().convertToFloat() << " and "
           << getBeta().convertToFloat();
  if (failed(checkSameElementType(*this, getA(), getB(), "operands")) ||
      (getC() &&
       failed(checkSameElementType(*this, getA(), getC(), "operands"))) ||
      failed(checkSameElementType(*this, getA(), getResult(),
                                  "operands and result")))
    return failure();
  return checkResultShape(*this,
                          inferGemmShape(shapeOf(getA()), shapeOf(getB()),
                                         optionalShape(getC()), getTransA(),
                                         getTransB(), NN_EMIT));
}

OpCost GemmOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  ArrayRef<int64_t> out = shapeOf(getResult());
  int64_t k = getTransA() ? shapeOf(getA())[0] : shapeOf(getA())[1];
  cost.flops =
      matmulFlops(1, out[0], out[1], k) + (getC() ? 2 * numElements(out) : 0);
  cost.gemm = {1, out[0], out[1], k, getTransA(), getTransB()};
  return cost;
}

LogicalResult LinearOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getWeight(),
                                  "input and weight")) ||
      (getBias() && failed(checkSameElementType(*this, getInput(), getBias(),
                                                "input and bias"))) ||
      failed(checkSameElementType(*this, getInput(), getResult(),
                                  "input and result")))
    return failure();
  return checkResultShape(
      *this, inferLinearShape(shapeOf(getInput()), shapeOf(getWeight()),
                              optionalShape(getBias()), getTransposeWeight(),
                              NN_EMIT));
}

OpCost LinearOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  ArrayRef<int64_t> out = shapeOf(getResult());
  int64_t rows = numElements(out.drop_back());
  cost.flops = matmulFlops(1, rows, out.back(), shapeOf(getInput()).back()) +
               (getBias() ? numElements(out) : 0);
  cost.gemm = {1,          rows,
               out.back(), shapeOf(getInput()).back(),
               false,      getTransposeWeight()};
  return cost;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  if (failed(verifyAxis(shapeOf(getInput()), getAxis(), NN_EMIT)))
    return failure();
  if (getInput().getType() != getType())
    return emitOpError("expected result type ")
           << getInput().getType() << ", got " << getType();
  return success();
}
// max, subtract, exp, sum, divide.
OpCost SoftmaxOp::getCost() { return detail::elementwiseCost(*this, 12); }

LogicalResult LayerNormOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getScale(),
                                  "input and scale")) ||
      (getBias() && failed(checkSameElementType(*this, getInput(), getBias(),
                                                "input and bias"))))
    return failure();
  if (failed(verifyLayerNormShapes(shapeOf(getInput()), shapeOf(getScale()),
                                   optionalShape(getBias()), getAxis(),
                                   NN_EMIT)))
    return failure();
  float epsilon = getEpsilon().convertToFloat();
  if (!(epsilon >= 0.0f && std::isfinite(epsilon)))
    return emitOpError("expected a finite, non-negative epsilon, got ")
           << epsilon;
  if (getInput().getType() != getType())
    return emitOpError("expected result type ")
           << getInput().getType() << ", got " << getType();
  return success();
}
// mean, variance, normalize, scale, shift.
OpCost LayerNormOp::getCost() { return detail::elementwiseCost(*this, 8); }

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch normalization
//===----------------------------------------------------------------------===//

/// The result element type and the float operands agree.
static LogicalResult checkFloatOperands(Operation *op) {
  Type element = cast<ShapedType>(op->getResult(0).getType()).getElementType();
  for (Value v : op->getOperands())
    if (cast<ShapedType>(v.getType()).getElementType() != element)
      return op->emitOpError("expected operands of element type ")
             << element << ", got " << v.getType();
  return success();
}

/// 2 * N * O * OH * OW * (C / groups) * kh * kw multiply-adds.
static int64_t convFlops(ArrayRef<int64_t> out, ArrayRef<int64_t> weight) {
  return 2 * numElements(out) * weight[1] * weight[2] * weight[3];
}

LogicalResult Conv2DOp::verify() {
  if (failed(checkFloatOperands(*this)))
    return failure();
  return checkResultShape(
      *this, inferConv2DShape(shapeOf(getInput()), shapeOf(getWeight()),
                              optionalShape(getBias()), getStrides(), getPads(),
                              getDilations(), getGroups(), NN_EMIT));
}

/// A convolution's GEMMs as the CPU kernel runs them: per image and
/// group, in order, [O/g, Cg*kh*kw] x [Cg*kh*kw, OH*OW] over im2col
/// columns (one float per row and position, written once and read by the
/// GEMM). `out` is the forward's result shape.
template <typename ConvOp>
static void setConvGemm(OpCost &cost, ConvOp op, ArrayRef<int64_t> out) {
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  ArrayRef<int64_t> weight = shapeOf(op.getWeight());
  int64_t g = std::max<int64_t>(op.getGroups(), 1);
  int64_t positions = out[2] * out[3];
  int64_t rows = weight[1] * weight[2] * weight[3];
  cost.gemm = {out[0] * g, weight[0] / g, positions, rows, false, false};
  // A 1x1 kernel at stride 1 without padding reads the image itself as its
  // columns (the kernel's pointwise case): no im2col.
  bool pointwise =
      weight[2] == 1 && weight[3] == 1 && in[2] == out[2] && in[3] == out[3] &&
      llvm::all_of(op.getStrides(), [](int64_t s) { return s == 1; }) &&
      llvm::all_of(op.getPads(), [](int64_t p) { return p == 0; });
  cost.gemmSideBytes = pointwise ? 0 : out[0] * g * rows * positions * 4;
}

OpCost Conv2DOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = convFlops(shapeOf(getResult()), shapeOf(getWeight()));
  setConvGemm(cost, *this, shapeOf(getResult()));
  return cost;
}

LogicalResult Conv2DGradOp::verify() {
  if (failed(checkFloatOperands(*this)))
    return failure();
  FailureOr<Shape> out = inferConv2DShape(
      shapeOf(getInput()), shapeOf(getWeight()), std::nullopt, getStrides(),
      getPads(), getDilations(), getGroups(), NN_EMIT);
  if (failed(out))
    return failure();
  if (shapeOf(getGrad()) != ArrayRef<int64_t>(*out))
    return emitOpError("expected a result gradient of shape ")
           << formatShape(*out) << ", got " << formatShape(shapeOf(getGrad()));
  if (getInputGrad().getType() != getInput().getType() ||
      getWeightGrad().getType() != getWeight().getType())
    return emitOpError("expected input and weight gradients of types ")
           << getInput().getType() << " and " << getWeight().getType();
  if (shapeOf(getBiasGrad()) != ArrayRef<int64_t>{shapeOf(getWeight())[0]})
    return emitOpError("expected a bias gradient of shape [")
           << shapeOf(getWeight())[0] << "]";
  return success();
}

// The input gradient and the weight gradient: two convolutions' work.
OpCost Conv2DGradOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = 2 * convFlops(shapeOf(getGrad()), shapeOf(getWeight())) +
               numElements(shapeOf(getGrad()));
  // The weight and the column gradients: two GEMMs of the forward's work.
  setConvGemm(cost, *this, shapeOf(getGrad()));
  cost.gemm.batch *= 2;
  cost.gemmSideBytes *= 2;
  return cost;
}

/// The window attributes of a pooling op or its gradient.
template <typename Op> static Window2D poolWindow(Op op) {
  static const int64_t ones[] = {1, 1};
  Window2D window{op.getKernel(), op.getStrides(), op.getPads(),
                  ArrayRef<int64_t>(ones), op.getCeilMode()};
  if constexpr (std::is_same_v<Op, MaxPool2DOp> ||
                std::is_same_v<Op, MaxPool2DGradOp>)
    window.dilations = op.getDilations();
  return window;
}

/// A pooling op's result has the window's shape of its input.
template <typename Op> static LogicalResult verifyPool(Op op) {
  return checkResultShape(
      op, inferPool2DShape(shapeOf(op.getInput()), poolWindow(op),
                           [&] { return op.emitOpError(); }));
}

/// A pooling gradient's incoming gradient has the window's shape of the
/// forward input `input`.
template <typename Op> static LogicalResult verifyPoolGrad(Op op, Value input) {
  FailureOr<Shape> out = inferPool2DShape(shapeOf(input), poolWindow(op),
                                          [&] { return op.emitOpError(); });
  if (failed(out))
    return failure();
  if (shapeOf(op.getGrad()) != ArrayRef<int64_t>(*out))
    return op.emitOpError("expected a result gradient of shape ")
           << formatShape(*out) << ", got "
           << formatShape(shapeOf(op.getGrad()));
  return success();
}

/// One operation per window element of each element of `windowed` (the
/// forward's output, the backward's incoming gradient).
template <typename Op> static OpCost poolCost(Op op, Value windowed) {
  OpCost cost = mlir::gpipe::nn::detail::elementwiseCost(op, 0);
  cost.flops =
      numElements(shapeOf(windowed)) * op.getKernel()[0] * op.getKernel()[1];
  return cost;
}

LogicalResult MaxPool2DOp::verify() { return verifyPool(*this); }

OpCost MaxPool2DOp::getCost() { return poolCost(*this, getResult()); }

LogicalResult MaxPool2DGradOp::verify() {
  if (failed(verifyPoolGrad(*this, getInput())))
    return failure();
  if (getInput().getType() != getType())
    return emitOpError("expected result type ") << getInput().getType();
  return success();
}

OpCost MaxPool2DGradOp::getCost() { return poolCost(*this, getGrad()); }

LogicalResult AvgPool2DOp::verify() { return verifyPool(*this); }

OpCost AvgPool2DOp::getCost() { return poolCost(*this, getResult()); }

LogicalResult AvgPool2DGradOp::verify() {
  return verifyPoolGrad(*this, getResult());
}

OpCost AvgPool2DGradOp::getCost() { return poolCost(*this, getGrad()); }

LogicalResult BatchNormOp::verify() {
  if (failed(checkFloatOperands(*this)) ||
      failed(verifyBatchNormShapes(shapeOf(getInput()),
                                   {shapeOf(getScale()), shapeOf(getBias()),
                                    shapeOf(getRunningMean()),
                                    shapeOf(getRunningVar())},
                                   NN_EMIT)))
    return failure();
  float momentum = getMomentum().convertToFloat();
  if (!(momentum >= 0.0f && momentum <= 1.0f))
    return emitOpError("expected a momentum in [0, 1], got ") << momentum;
  float epsilon = getEpsilon().convertToFloat();
  if (!(epsilon >= 0.0f && std::isfinite(epsilon)))
    return emitOpError("expected a finite, non-negative epsilon, got ")
           << epsilon;
  if (getInput().getType() != getType())
    return emitOpError("expected result type ")
           << getInput().getType() << ", got " << getType();
  return success();
}

// Mean, variance, normalize, scale, shift.
OpCost BatchNormOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = 8 * numElements(shapeOf(getInput()));
  return cost;
}

LogicalResult BatchNormGradOp::verify() {
  if (failed(checkFloatOperands(*this)) ||
      failed(verifyBatchNormShapes(
          shapeOf(getInput()), {shapeOf(getScale()), shapeOf(getRunningMean())},
          NN_EMIT)))
    return failure();
  if (getGrad().getType() != getInput().getType() ||
      getInputGrad().getType() != getInput().getType())
    return emitOpError("expected the gradients of the input of type ")
           << getInput().getType();
  for (Value v : {getScaleGrad(), getBiasGrad(), getMeanStat(), getVarStat()})
    if (v.getType() != getScale().getType())
      return emitOpError("expected per-channel results of type ")
             << getScale().getType() << ", got " << v.getType();
  return success();
}

// Recomputed statistics, two channel sums, the input gradient and the
// running-statistics sums.
OpCost BatchNormGradOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = 20 * numElements(shapeOf(getInput()));
  return cost;
}

//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::verify() {
  if (failed(checkSameElementType(*this, getData(), getResult(),
                                  "data and result")))
    return failure();
  return checkResultShape(*this, inferGatherShape(shapeOf(getData()),
                                                  shapeOf(getIndices()),
                                                  getAxis(), NN_EMIT));
}
OpCost GatherOp::getCost() {
  // Only the gathered rows are read, not the whole table.
  OpCost cost;
  cost.calls = 1;
  cost.bytesRead =
      2 * tensorBytes(getType()) + tensorBytes(getIndices().getType());
  cost.bytesWritten = tensorBytes(getType());
  return cost;
}

LogicalResult ReshapeOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getResult(),
                                  "input and result")))
    return failure();
  return verifyReshape(shapeOf(getInput()), shapeOf(getResult()), NN_EMIT);
}
OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(cast<ShapedType>(getType()));
  return {};
}
OpCost ReshapeOp::getCost() { return {}; }

LogicalResult TransposeOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getResult(),
                                  "input and result")))
    return failure();
  return checkResultShape(
      *this, inferTransposeShape(shapeOf(getInput()), getPerm(), NN_EMIT));
}
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  for (auto [i, p] : llvm::enumerate(perm))
    if (static_cast<int64_t>(i) != p)
      return {};
  return getInput();
}
OpCost TransposeOp::getCost() { return detail::elementwiseCost(*this, 0); }

LogicalResult SplitOp::verify() {
  FailureOr<SmallVector<Shape>> shapes =
      inferSplitShapes(shapeOf(getInput()), getAxis(), getSizes(), NN_EMIT);
  if (failed(shapes))
    return failure();
  if (shapes->size() != getNumResults())
    return emitOpError("expected ")
           << shapes->size() << " results for " << shapes->size()
           << " split sizes, got " << getNumResults();
  for (unsigned i = 0; i < getNumResults(); ++i) {
    if (failed(checkSameElementType(*this, getInput(), getResult(i),
                                    "input and results")) ||
        failed(checkResultShape(*this, (*shapes)[i], i)))
      return failure();
  }
  return success();
}
OpCost SplitOp::getCost() { return detail::elementwiseCost(*this, 0); }

LogicalResult SliceOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getResult(),
                                  "input and result")))
    return failure();
  return checkResultShape(*this,
                          inferSliceShape(shapeOf(getInput()), getOffsets(),
                                          getSizes(), getStrides(), NN_EMIT));
}
OpCost SliceOp::getCost() {
  OpCost cost;
  cost.calls = 1;
  cost.bytesRead = cost.bytesWritten = tensorBytes(getType());
  return cost;
}

LogicalResult InsertSliceOp::verify() {
  if (failed(checkSameElementType(*this, getSource(), getDest(),
                                  "source and destination")))
    return failure();
  return verifyInsertSlice(shapeOf(getSource()), shapeOf(getDest()),
                           getOffsets(), getStrides(), NN_EMIT);
}
// Copies the destination and writes the source over it.
OpCost InsertSliceOp::getCost() {
  OpCost cost;
  cost.calls = 1;
  cost.bytesRead = tensorBytes(getSource().getType()) + tensorBytes(getType());
  cost.bytesWritten = tensorBytes(getType());
  return cost;
}

LogicalResult ConcatOp::verify() {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : getInputs()) {
    if (failed(
            checkSameElementType(*this, v, getResult(), "inputs and result")))
      return failure();
    shapes.push_back(shapeOf(v));
  }
  return checkResultShape(*this, inferConcatShape(shapes, getAxis(), NN_EMIT));
}
OpCost ConcatOp::getCost() { return detail::elementwiseCost(*this, 0); }

LogicalResult UnsqueezeOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getResult(),
                                  "input and result")))
    return failure();
  return checkResultShape(
      *this, inferUnsqueezeShape(shapeOf(getInput()), getAxes(), NN_EMIT));
}
OpCost UnsqueezeOp::getCost() { return {}; }

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::verify() {
  if (failed(checkSameElementType(*this, getLogits(), getResult(),
                                  "logits and loss")))
    return failure();
  return verifyCrossEntropyShapes(shapeOf(getLogits()), shapeOf(getLabels()),
                                  NN_EMIT);
}
// log-softmax per element plus the pick and the mean.
OpCost CrossEntropyOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = 12 * numElements(shapeOf(getLogits()));
  return cost;
}

LogicalResult MSEOp::verify() {
  if (getInput().getType() != getTarget().getType())
    return emitOpError("expected input and target of one type, got ")
           << getInput().getType() << " and " << getTarget().getType();
  return checkSameElementType(*this, getInput(), getResult(), "input and loss");
}
OpCost MSEOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = 3 * numElements(shapeOf(getInput()));
  return cost;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

void ReduceSumOp::build(OpBuilder &builder, OperationState &state, Value input,
                        ArrayRef<int64_t> axes, bool keepDims) {
  auto type = cast<RankedTensorType>(input.getType());
  FailureOr<Shape> shape =
      inferReduceShape(type.getShape(), axes, keepDims,
                       [&] { return mlir::emitError(state.location); });
  Type result = succeeded(shape)
                    ? RankedTensorType::get(*shape, type.getElementType())
                    : Type(type);
  build(builder, state, result, input, axes, keepDims);
}

LogicalResult ReduceSumOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getResult(),
                                  "input and result")))
    return failure();
  return checkResultShape(
      *this,
      inferReduceShape(shapeOf(getInput()), getAxes(), getKeepDims(), NN_EMIT));
}
OpCost ReduceSumOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = numElements(shapeOf(getInput()));
  return cost;
}

//===----------------------------------------------------------------------===//
// Gradient kernels
//===----------------------------------------------------------------------===//

LogicalResult GatherGradOp::verify() {
  if (failed(checkSameElementType(*this, getGrad(), getResult(),
                                  "gradient and result")))
    return failure();
  FailureOr<Shape> gathered = inferGatherShape(
      shapeOf(getResult()), shapeOf(getIndices()), getAxis(), NN_EMIT);
  if (failed(gathered))
    return failure();
  if (shapeOf(getGrad()) != ArrayRef<int64_t>(*gathered))
    return emitOpError("expected gradient shape ")
           << formatShape(*gathered) << " (the gather of "
           << formatShape(shapeOf(getResult())) << " by indices "
           << formatShape(shapeOf(getIndices())) << " along axis " << getAxis()
           << "), got " << formatShape(shapeOf(getGrad()));
  return success();
}
// Zero-fills the table, then reads and adds one row per index.
OpCost GatherGradOp::getCost() {
  OpCost cost;
  cost.calls = 1;
  cost.flops = numElements(shapeOf(getGrad()));
  cost.bytesRead = tensorBytes(getIndices().getType()) +
                   2 * tensorBytes(getGrad().getType());
  cost.bytesWritten = tensorBytes(getType()) + tensorBytes(getGrad().getType());
  return cost;
}

/// nn.attention's and nn.attention_grad's operands: q [N..., T, D], k
/// [N..., S, D], v [N..., S, E], a bias that broadcasts to [N..., T, S] and
/// a finite scale; the result shape [N..., T, E].
static FailureOr<Shape> verifyAttentionOperands(Operation *op, Value q, Value k,
                                                Value v, Value bias,
                                                float scale) {
  if (failed(checkSameElementType(op, q, k, "query and key")) ||
      failed(checkSameElementType(op, q, v, "query and value")))
    return failure();
  if (!std::isfinite(scale))
    return op->emitOpError("expected a finite scale, got ") << scale;
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  size_t rank = qs.size();
  if (rank < 2 || ks.size() != rank || vs.size() != rank)
    return op->emitOpError("expected query, key and value of one rank >= 2, "
                           "got ")
           << formatShape(qs) << ", " << formatShape(ks) << " and "
           << formatShape(vs);
  if (qs.drop_back(2) != ks.drop_back(2) || qs.drop_back(2) != vs.drop_back(2))
    return op->emitOpError("expected query, key and value with the same "
                           "leading dims, got ")
           << formatShape(qs) << ", " << formatShape(ks) << " and "
           << formatShape(vs);
  if (qs.back() != ks.back() || ks[rank - 2] != vs[rank - 2])
    return op->emitOpError("expected key [..., S, D] and value [..., S, E] "
                           "for query [..., T, D] ")
           << formatShape(qs) << ", got " << formatShape(ks) << " and "
           << formatShape(vs);
  Shape scores(qs.begin(), qs.end());
  scores.back() = ks[rank - 2];
  if (bias) {
    if (failed(checkSameElementType(op, q, bias, "query and bias")))
      return failure();
    FailureOr<Shape> b = inferBroadcastShape(
        {shapeOf(bias), scores}, [op] { return op->emitOpError(); });
    if (failed(b))
      return failure();
    if (*b != scores)
      return op->emitOpError("expected a bias that broadcasts to the scores ")
             << formatShape(scores) << ", got " << formatShape(shapeOf(bias));
  }
  Shape result(qs.begin(), qs.end());
  result.back() = vs.back();
  return result;
}

/// Per score element: the dot products over D and E, the softmax.
static int64_t attentionScores(Value q, Value k) {
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k);
  return numElements(qs.drop_back()) * ks[ks.size() - 2];
}

LogicalResult AttentionOp::verify() {
  return checkResultShape(
      *this, verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                                     getBias(), getScale().convertToFloat()));
}
// Per score: q.k (2D), softmax (about 5), p v (2E).
OpCost AttentionOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  int64_t d = shapeOf(getQuery()).back(), e = shapeOf(getValue()).back();
  cost.flops = attentionScores(getQuery(), getKey()) * (2 * d + 2 * e + 5);
  // Its products, per leading index q k^T (T x S x D) and p v (T x E x S),
  // as one GEMM shape of their mean depth: small products the kernel
  // threads share whole (the cost model then times them at the machine's
  // GEMM rates, and the backward at its dq, dk, dv and dp products'; the
  // recomputed q k^T is left out, as the forward's bias write is).
  ArrayRef<int64_t> qs = shapeOf(getQuery()), ks = shapeOf(getKey());
  int64_t heads = numElements(qs.drop_back(2));
  cost.gemm = {2 * heads,
               qs[qs.size() - 2],
               ks[ks.size() - 2],
               (d + e + 1) / 2,
               false,
               false,
               /*parallelBatch=*/true};
  return cost;
}

LogicalResult AttentionGradOp::verify() {
  FailureOr<Shape> out =
      verifyAttentionOperands(*this, getQuery(), getKey(), getValue(),
                              getBias(), getScale().convertToFloat());
  if (failed(out))
    return failure();
  if (shapeOf(getGrad()) != ArrayRef<int64_t>(*out))
    return emitOpError("expected a gradient of the attention's shape ")
           << formatShape(*out) << ", got " << formatShape(shapeOf(getGrad()));
  for (auto [grad, operand] :
       llvm::zip(getResults(), ValueRange{getQuery(), getKey(), getValue()}))
    if (grad.getType() != operand.getType())
      return emitOpError("expected each gradient of its operand's type ")
             << operand.getType() << ", got " << grad.getType();
  return success();
}
// Per score: the forward's recomputed probabilities (2D + 5), dp (2E), ds,
// and the three gradients' products (2D + 2D + 2E).
OpCost AttentionGradOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  int64_t d = shapeOf(getQuery()).back(), e = shapeOf(getValue()).back();
  cost.flops = attentionScores(getQuery(), getKey()) * (6 * d + 4 * e + 8);
  return cost;
}

LogicalResult SoftmaxGradOp::verify() {
  return verifyAxis(shapeOf(getOutput()), getAxis(), NN_EMIT);
}
// dy * y, row sum, subtract, multiply.
OpCost SoftmaxGradOp::getCost() { return detail::elementwiseCost(*this, 4); }

LogicalResult LayerNormGradOp::verify() {
  if (failed(checkSameElementType(*this, getInput(), getScale(),
                                  "input and scale")))
    return failure();
  if (failed(verifyLayerNormShapes(shapeOf(getInput()), shapeOf(getScale()),
                                   std::nullopt, getAxis(), NN_EMIT)))
    return failure();
  if (getGrad().getType() != getInput().getType())
    return emitOpError("expected gradient of the input type ")
           << getInput().getType() << ", got " << getGrad().getType();
  if (getInputGrad().getType() != getInput().getType())
    return emitOpError("expected input gradient of type ")
           << getInput().getType() << ", got " << getInputGrad().getType();
  if (getScaleGrad().getType() != getScale().getType() ||
      getBiasGrad().getType() != getScale().getType())
    return emitOpError("expected scale and bias gradients of type ")
           << getScale().getType() << ", got " << getScaleGrad().getType()
           << " and " << getBiasGrad().getType();
  return success();
}
// Recomputed statistics, two row means and the normalized-input products.
OpCost LayerNormGradOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = 16 * numElements(shapeOf(getInput()));
  return cost;
}

// erf, exp and a handful of multiplies per element.
OpCost GeluGradOp::getCost() { return detail::elementwiseCost(*this, 24); }

LogicalResult CrossEntropyGradOp::verify() {
  if (failed(checkSameElementType(*this, getLogits(), getGrad(),
                                  "logits and loss gradient")))
    return failure();
  if (getLogits().getType() != getType())
    return emitOpError("expected result type ")
           << getLogits().getType() << ", got " << getType();
  return verifyCrossEntropyShapes(shapeOf(getLogits()), shapeOf(getLabels()),
                                  NN_EMIT);
}
// Softmax per element, the one-hot subtraction and the scaling.
OpCost CrossEntropyGradOp::getCost() {
  OpCost cost = detail::elementwiseCost(*this, 0);
  cost.flops = 14 * numElements(shapeOf(getLogits()));
  return cost;
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

LogicalResult LayerOp::verify() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("layer '") << getName() << "' has " << getInputs().size()
                                  << " inputs but its body takes "
                                  << body.getNumArguments() << " arguments";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("layer '")
             << getName() << "' body argument type " << arg.getType()
             << " does not match input type " << in.getType();
  // The verifier checks the op before its body: the block may still end in a
  // non-terminator (SingleBlock has already rejected an empty one).
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("layer '") << getName() << "' body must end in nn.yield";
  if (yield.getValues().getTypes() != getResultTypes()) {
    InFlightDiagnostic d = emitOpError("layer '");
    d << getName() << "' yields (";
    llvm::interleaveComma(yield.getValues().getTypes(), d);
    d << ") but its results are (";
    llvm::interleaveComma(getResultTypes(), d);
    d << ")";
    return d;
  }
  return success();
}

OpCost LayerOp::getCost() {
  OpCost cost;
  // The walk reaches every op inside, nested layers' too: count those ops
  // once each, not nested layers' own totals as well (which would count
  // them again at every level, exponential in the nesting depth).
  getBodyBlock().walk([&](CostOpInterface op) {
    if (!isa<LayerOp>(op.getOperation()))
      cost += op.getCost();
  });
  return cost;
}

//===----------------------------------------------------------------------===//
// Fused elementwise loops
//===----------------------------------------------------------------------===//

bool FusedOp::isFusible(Operation *op) {
  auto f32 = [](Type t) {
    auto shaped = dyn_cast<RankedTensorType>(t);
    return shaped && shaped.getElementType().isF32();
  };
  if (op->getNumResults() != 1 || !f32(op->getResult(0).getType()))
    return false;
  if (isa<WhereOp>(op))
    return f32(op->getOperand(1).getType()) && f32(op->getOperand(2).getType());
  if (!isa<AddOp, SubOp, MulOp, DivOp, NegOp, ReciprocalOp, SqrtOp, ExpOp,
           ErfOp, TanhOp, SigmoidOp, ReluOp, GeluOp, GeluGradOp>(op))
    return false;
  return llvm::all_of(op->getOperandTypes(), f32);
}

LogicalResult FusedOp::verify() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ")
           << getInputs().size() << " inputs but its body takes "
           << body.getNumArguments() << " arguments";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("body argument type ")
             << arg.getType() << " does not match input type " << in.getType();
  if (getNumResults() == 0)
    return emitOpError("has no results");
  ArrayRef<int64_t> shape = shapeOf(getResult(0));
  for (Value r : getResults())
    if (shapeOf(r) != shape)
      return emitOpError("results have different shapes: ")
             << getResult(0).getType() << " and " << r.getType();
  // Numpy broadcasting to `shape` itself: right-aligned, each dim 1 or
  // the result's.
  auto fits = [&](Value v) {
    ArrayRef<int64_t> from = shapeOf(v);
    if (from.size() > shape.size())
      return false;
    size_t skip = shape.size() - from.size();
    for (auto [i, d] : llvm::enumerate(from))
      if (d != 1 && d != shape[skip + i])
        return false;
    return true;
  };
  for (Value in : getInputs())
    if (!fits(in))
      return emitOpError("input of type ")
             << in.getType() << " does not broadcast to the results' shape";
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end in nn.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields values of other types than its results");
  for (Operation &op : body.without_terminator()) {
    if (!isFusible(&op))
      return op.emitOpError("cannot be in an nn.fused body (an f32 "
                            "elementwise op with its math in ScalarMath.h "
                            "can)");
    if (!fits(op.getResult(0)))
      return op.emitOpError("result does not broadcast to the nn.fused "
                            "results' shape");
  }
  return success();
}

OpCost FusedOp::getCost() {
  OpCost cost;
  getBodyBlock().walk([&](CostOpInterface op) { cost += op.getCost(); });
  cost.calls = 1; // one loop
  return cost;
}

#define GET_OP_CLASSES
#include "gpipe/Dialect/NN/IR/NNOps.cpp.inc"
