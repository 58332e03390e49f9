//===- Values.cpp - Slots and node helpers --------------------------------===//
//
// How the importer binds ONNX values to slots, materializes host constants
// as `nn.constant`s, and the checks and attribute readers every handler
// uses.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::onnximport;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Slots and materialization
//===----------------------------------------------------------------------===//

std::string Importer::uniqueResourceKey(StringRef name) {
  // Resource keys print as bare identifiers: [A-Za-z_][A-Za-z0-9_.]*.
  std::string key;
  for (char c : name)
    key += (llvm::isAlnum(c) || c == '_' || c == '.') ? c : '_';
  if (key.empty() || !(llvm::isAlpha(key[0]) || key[0] == '_'))
    key = "_" + key;
  std::string unique = key;
  for (unsigned i = 1; resourceKeys.contains(unique); ++i)
    unique = key + "_" + std::to_string(i);
  resourceKeys.insert(unique);
  return unique;
}

ElementsAttr Importer::makeResource(ShapedType type, StringRef hint,
                                    ArrayRef<char> bytes, size_t align) {
  return DenseResourceElementsAttr::get(
      type, uniqueResourceKey(hint),
      HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, align));
}

/// Constants follow the parameters' rule: more than `inlineElementLimit`
/// elements go to a `dense_resource` blob named after the ONNX value, except
/// splats (which print as one value, and which the GELU fusion matches) and
/// booleans (which `dense` stores one bit each).
Value Importer::materialize(const HostTensor &t, Location loc,
                            StringRef valueName) {
  ElementsAttr attr;
  if (t.numElements() > options.inlineElementLimit && !t.isBool() &&
      !t.isSplat())
    attr = makeResource(t.getType(), valueName, toBytes(t),
                        byteWidth(t.elementType));
  else
    attr = toDenseAttr(t);
  return nn::ConstantOp::create(builder, loc, attr);
}

FailureOr<Value> Importer::getValue(int i, Location useLoc) {
  Slot &s = slots[i];
  if (s.value)
    return s.value;
  if (!s.param.empty()) {
    RankedTensorType stored = s.paramType ? s.paramType : s.type;
    s.value = nn::ParamOp::create(builder, s.loc, stored, s.param);
    if (s.transposed)
      s.value = nn::TransposeOp::create(builder, s.loc, s.type, s.value,
                                        ArrayRef<int64_t>{1, 0});
    else if (stored != s.type)
      s.value = nn::BroadcastToOp::create(builder, s.loc, s.type, s.value);
    return s.value;
  }
  if (!isNNElementType(s.host->elementType))
    return emitError(useLoc) << "constant '" << s.name << "' of type " << s.type
                             << " is used by an op, but nn ops do not take "
                                "element type "
                             << s.host->elementType,
           failure();
  s.value = materialize(*s.host, s.loc, s.name);
  return s.value;
}

LogicalResult Importer::bind(StringRef name, Slot s, Location loc) {
  if (name.empty())
    return success();
  if (names.count(name))
    return emitError(loc) << "value '" << name << "' is defined twice",
           failure();
  s.name = name.str();
  names[name] = slots.size();
  slots.push_back(std::move(s));
  return success();
}

LogicalResult Importer::defineValue(NodeCtx &n, int result, Value value) {
  if (result >= n.proto.output_size())
    return success();
  return bind(n.proto.output(result),
              Slot{"", cast<RankedTensorType>(value.getType()), n.loc, value,
                   std::nullopt, ""},
              n.loc);
}

LogicalResult Importer::defineHost(NodeCtx &n, int result, HostTensor tensor) {
  if (result >= n.proto.output_size())
    return success();
  RankedTensorType type = tensor.getType();
  return bind(n.proto.output(result),
              Slot{"", type, n.loc, Value(), std::move(tensor), ""}, n.loc);
}

LogicalResult Importer::defineAlias(NodeCtx &n, int result, int input) {
  if (result >= n.proto.output_size() || n.proto.output(result).empty())
    return success();
  StringRef name = n.proto.output(result);
  if (names.count(name))
    return emitError(n.loc) << "value '" << name << "' is defined twice",
           failure();
  names[name] = input;
  return success();
}

//===----------------------------------------------------------------------===//
// Node helpers
//===----------------------------------------------------------------------===//

LogicalResult Importer::expectInputs(NodeCtx &n, int min, int max) {
  int count = n.numInputs();
  // Trailing omitted optional inputs do not count.
  while (count > 0 && n.inputs[count - 1] < 0)
    --count;
  if (count < min || count > max) {
    InFlightDiagnostic diag = n.error();
    diag << "expects ";
    if (min == max)
      diag << min;
    else
      diag << min << " to " << max;
    diag << " inputs, got " << count;
    return failure();
  }
  for (int i = 0; i < min; ++i)
    if (n.inputs[i] < 0)
      return n.error() << "is missing its required input " << i, failure();
  return success();
}

LogicalResult Importer::requireFloat(NodeCtx &n, int operand, StringRef role) {
  Type type = elementTypeOf(n.input(operand));
  if (!isa<FloatType>(type))
    return n.error() << "needs a float " << role << ", got "
                     << typeOf(n.input(operand)),
           failure();
  return success();
}

LogicalResult Importer::requireSameElementType(NodeCtx &n,
                                               ArrayRef<int> operands) {
  Type first;
  for (int i : operands) {
    if (i < 0)
      continue;
    Type t = elementTypeOf(i);
    if (!first)
      first = t;
    else if (t != first)
      return n.error() << "has operands of different element types " << first
                       << " and " << t,
             failure();
  }
  return success();
}

LogicalResult Importer::normalizeAxis(NodeCtx &n, int64_t &axis, int64_t rank,
                                      StringRef what) {
  if (axis < -rank || axis >= rank)
    return n.error() << "has " << what << " " << axis
                     << " out of range for rank " << rank,
           failure();
  if (axis < 0)
    axis += rank;
  return success();
}

const onnx::AttributeProto *onnximport::findAttr(const onnx::NodeProto &node,
                                                 StringRef name) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

LogicalResult Importer::getIntAttr(NodeCtx &n, StringRef name, int64_t &value) {
  const onnx::AttributeProto *attr = findAttr(n.proto, name);
  if (!attr)
    return success();
  if (attr->type() != onnx::AttributeProto::INT &&
      !(attr->type() == onnx::AttributeProto::UNDEFINED && attr->has_i()))
    return n.error() << "has attribute '" << name << "' that is not an int",
           failure();
  value = attr->i();
  return success();
}

LogicalResult Importer::getFloatAttr(NodeCtx &n, StringRef name, float &value) {
  const onnx::AttributeProto *attr = findAttr(n.proto, name);
  if (!attr)
    return success();
  if (attr->type() != onnx::AttributeProto::FLOAT &&
      !(attr->type() == onnx::AttributeProto::UNDEFINED && attr->has_f()))
    return n.error() << "has attribute '" << name << "' that is not a float",
           failure();
  // Every float attribute gpipe reads (alpha, beta, epsilon, momentum) is a
  // finite number; a NaN or infinity would only show as non-finite values
  // when training.
  if (!std::isfinite(attr->f()))
    return n.error() << "has attribute '" << name << "' = " << attr->f()
                     << "; it must be a finite number",
           failure();
  value = attr->f();
  return success();
}

LogicalResult
Importer::getIntsAttr(NodeCtx &n, StringRef name,
                      std::optional<SmallVector<int64_t>> &value) {
  const onnx::AttributeProto *attr = findAttr(n.proto, name);
  if (!attr)
    return success();
  if (attr->type() != onnx::AttributeProto::INTS &&
      attr->type() != onnx::AttributeProto::UNDEFINED)
    return n.error() << "has attribute '" << name
                     << "' that is not a list of ints",
           failure();
  value.emplace(attr->ints().begin(), attr->ints().end());
  return success();
}

FailureOr<SmallVector<int64_t>> Importer::constInts(NodeCtx &n, int operand,
                                                    StringRef role) {
  int i = n.input(operand);
  if (i < 0)
    return n.error() << "is missing its " << role << " input", failure();
  if (!isHost(i))
    return n.error() << "has a non-constant " << role
                     << " input; gpipe needs static shapes",
           failure();
  if (host(i).isFloat() || host(i).isBool())
    return n.error() << "needs an integer " << role << " input, got "
                     << typeOf(i),
           failure();
  return SmallVector<int64_t>(host(i).ints.begin(), host(i).ints.end());
}

FailureOr<HostTensor> Importer::constScalar(NodeCtx &n, int operand,
                                            StringRef role) {
  int i = n.input(operand);
  if (i < 0)
    return n.error() << "is missing its " << role << " input", failure();
  if (!isHost(i))
    return n.error() << "has a non-constant " << role
                     << " input; gpipe folds this op only on constants",
           failure();
  if (host(i).numElements() != 1)
    return n.error() << "needs a single-element " << role << " input, got "
                     << typeOf(i),
           failure();
  return host(i);
}

LogicalResult Importer::checkUnusedOutput(NodeCtx &n, int result,
                                          StringRef what) {
  if (result < n.proto.output_size() && !n.proto.output(result).empty() &&
      consumed.contains(n.proto.output(result)))
    return n.error() << "has its " << what << " output '"
                     << n.proto.output(result)
                     << "' used, which gpipe does not support",
           failure();
  return success();
}

/// `elements` < 0 stands for a count too large to compute.
LogicalResult Importer::checkFoldSize(NodeCtx &n, int64_t elements) {
  if (elements >= 0 && elements <= kMaxFoldElements)
    return success();
  InFlightDiagnostic diag = n.error();
  diag << "would fold to a constant of ";
  if (elements >= 0)
    diag << elements;
  else
    diag << "more than " << kMaxFoldElements;
  diag << " elements; gpipe folds at most " << kMaxFoldElements;
  return failure();
}

/// Emits an op whose result shape is the broadcast of `operands`' shapes.
LogicalResult
Importer::emitBroadcast(NodeCtx &n, ArrayRef<int> operands, Type resultElement,
                        function_ref<Value(Type, ArrayRef<Value>)> build) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (int i : operands)
    shapes.push_back(shapeOf(i));
  FailureOr<nn::Shape> shape =
      nn::inferBroadcastShape(shapes, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  SmallVector<Value> values;
  for (int i : operands) {
    FailureOr<Value> v = getValue(i, n.loc);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return defineValue(
      n, 0, build(RankedTensorType::get(*shape, resultElement), values));
}

Type Importer::computeTypeOf(Type element) {
  if (element.isF64())
    return builder.getF32Type();
  if (auto integer = dyn_cast<IntegerType>(element);
      integer && integer.getWidth() > 1 && integer.getWidth() < 64)
    return builder.getI64Type();
  return element;
}

FailureOr<Value> Importer::getValueAs(int i, Type element, Location loc) {
  if (elementTypeOf(i) == element)
    return getValue(i, loc);
  if (isHost(i)) {
    FailureOr<HostTensor> converted =
        foldCast(host(i), element, [&] { return emitError(loc); });
    if (failed(converted))
      return failure();
    return materialize(*converted, slots[i].loc, slots[i].name);
  }
  FailureOr<Value> v = getValue(i, loc);
  if (failed(v))
    return failure();
  return castElements(*v, element, loc);
}

Value Importer::castElements(Value v, Type element, Location loc) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType() == element)
    return v;
  return nn::CastOp::create(builder, loc, type.clone(element), v);
}

LogicalResult Importer::emitBroadcastComputed(
    NodeCtx &n, ArrayRef<int> operands, Type declared,
    function_ref<Value(Type, ArrayRef<Value>)> build) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (int i : operands)
    shapes.push_back(shapeOf(i));
  FailureOr<nn::Shape> shape =
      nn::inferBroadcastShape(shapes, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  Type compute = computeTypeOf(declared);
  SmallVector<Value> values;
  for (int i : operands) {
    FailureOr<Value> v = getValueAs(i, compute, n.loc);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  Value result = build(RankedTensorType::get(*shape, compute), values);
  return defineValue(n, 0, castElements(result, declared, n.loc));
}

/// Defines result 0 as input `input` reshaped to `shape` (same element
/// count, checked here).
LogicalResult Importer::reshapeTo(NodeCtx &n, int input,
                                  ArrayRef<int64_t> shape) {
  if (failed(nn::verifyReshape(shapeOf(input), shape,
                               [&] { return n.shapeError(); })))
    return failure();
  if (isHost(input)) {
    HostTensor t = host(input);
    t.shape.assign(shape.begin(), shape.end());
    return defineHost(n, 0, std::move(t));
  }
  FailureOr<Value> v = getValue(input, n.loc);
  if (failed(v))
    return failure();
  auto type = RankedTensorType::get(shape, elementTypeOf(input));
  return defineValue(n, 0, nn::ReshapeOp::create(builder, n.loc, type, *v));
}

Value Importer::scalarLike(Value like, double value, NodeCtx &n) {
  Type element = cast<RankedTensorType>(like.getType()).getElementType();
  HostTensor t = HostTensor::zeros(element, {});
  if (t.isFloat())
    t.floats[0] = roundToFloatType(element, value);
  else
    t.ints[0] = static_cast<int64_t>(value);
  return materialize(t, n.loc, n.name);
}

LogicalResult Importer::widenIntegerConstant(NodeCtx &n, int data,
                                             int &constant) {
  if (isHost(data) || !isHost(constant) || !elementTypeOf(data).isInteger(64))
    return success();
  Type from = elementTypeOf(constant);
  if (!isa<IntegerType>(from) || from.isInteger(1) || from.isInteger(64))
    return success();
  FailureOr<HostTensor> wide = foldCast(host(constant), elementTypeOf(data),
                                        [&] { return n.shapeError(); });
  if (failed(wide))
    return failure();
  Slot converted{slots[constant].name,
                 wide->getType(),
                 n.loc,
                 Value(),
                 std::move(*wide),
                 ""};
  constant = slots.size();
  slots.push_back(std::move(converted));
  return success();
}
