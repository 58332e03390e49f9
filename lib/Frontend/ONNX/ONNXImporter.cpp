//===- ONNXImporter.cpp - ONNX to nn dialect ------------------------------===//
//
// Implements the ONNX frontend: parses a ModelProto, turns trainable
// initializers into `nn.parameter`s (keeping their ONNX names, large values as
// `dense_resource` blobs), walks the graph's nodes in order and emits one
// `func.func` of `nn` ops. Every ONNX value is either an SSA value or a
// constant known on the host; shape arithmetic on host constants (Shape,
// Gather, Slice, Concat, Div, ...) is folded during import so that every
// shape an `nn` op sees is static. Result types are computed with the
// NNShapes rules, so a bad model is reported at the offending node's location
// rather than by the verifier.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Frontend/ONNXImporter.h"

#include "HostTensor.h"

#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/IR/NNShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SwapByteOrder.h"
#include "llvm/Support/xxhash.h"

#include "onnx/onnx_pb.h"

#include <algorithm>
#include <cmath>
#include <climits>
#include <cstring>
#include <map>
#include <numeric>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::onnximport;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Tensor data
//===----------------------------------------------------------------------===//

/// An ONNX element type as an MLIR type; null if gpipe cannot read it.
static Type elementTypeFor(MLIRContext *ctx, int32_t onnxType) {
  using TP = onnx::TensorProto;
  switch (onnxType) {
  case TP::FLOAT:
    return Float32Type::get(ctx);
  case TP::DOUBLE:
    return Float64Type::get(ctx);
  case TP::FLOAT16:
    return Float16Type::get(ctx);
  case TP::BFLOAT16:
    return BFloat16Type::get(ctx);
  case TP::BOOL:
    return IntegerType::get(ctx, 1);
  case TP::INT8:
    return IntegerType::get(ctx, 8);
  case TP::INT16:
    return IntegerType::get(ctx, 16);
  case TP::INT32:
    return IntegerType::get(ctx, 32);
  case TP::INT64:
    return IntegerType::get(ctx, 64);
  case TP::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case TP::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case TP::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case TP::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  default:
    return {};
  }
}

static std::string onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto_DataType_IsValid(onnxType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(onnxType));
  return "#" + std::to_string(onnxType);
}

static unsigned byteWidth(Type elementType) {
  return std::max(1u, (elementType.getIntOrFloatBitWidth() + 7) / 8);
}

namespace {
/// A decoded ONNX TensorProto: elements packed little-endian at their MLIR
/// element type's byte width (booleans one byte each).
struct RawTensor {
  Type elementType;
  nn::Shape shape;
  std::vector<char> bytes;

  RankedTensorType getType() const {
    return RankedTensorType::get(shape, elementType);
  }
  uint64_t bits(int64_t i) const {
    unsigned width = byteWidth(elementType);
    uint64_t v = 0;
    for (unsigned b = 0; b < width; ++b)
      v |= uint64_t(static_cast<unsigned char>(bytes[i * width + b]))
           << (8 * b);
    return v;
  }
};
} // namespace

/// Decodes `proto`; `what` names it in messages ("initializer 'w'").
static FailureOr<RawTensor> decodeTensor(MLIRContext *ctx,
                                         const onnx::TensorProto &proto,
                                         Location loc,
                                         const std::string &what) {
  using TP = onnx::TensorProto;
  if (proto.data_location() == TP::EXTERNAL || proto.external_data_size())
    return emitError(loc) << what
                          << " stores its data in an external file, which "
                             "gpipe does not support (save the model with "
                             "its data inline)",
           failure();
  if (proto.has_segment())
    return emitError(loc) << what
                          << " is segmented, which gpipe does not "
                             "support",
           failure();
  RawTensor raw;
  raw.elementType = elementTypeFor(ctx, proto.data_type());
  if (!raw.elementType)
    return emitError(loc) << what << " has element type "
                          << onnxTypeName(proto.data_type())
                          << ", which gpipe does not support",
           failure();
  int64_t count = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0 || (d != 0 && count > INT64_MAX / d))
      return emitError(loc) << what << " has an invalid shape "
                            << nn::formatShape(SmallVector<int64_t>(
                                   proto.dims().begin(), proto.dims().end())),
             failure();
    raw.shape.push_back(d);
    count *= d;
  }
  unsigned width = byteWidth(raw.elementType);
  auto sizeError = [&](int64_t have) {
    return emitError(loc) << what << " has " << have
                          << " elements of data but its shape "
                          << nn::formatShape(raw.shape) << " needs " << count,
           failure();
  };

  if (proto.has_raw_data()) {
    const std::string &data = proto.raw_data();
    if (data.size() % width != 0)
      return emitError(loc) << what << " has " << data.size()
                            << " bytes of raw data, not a whole number of "
                            << raw.elementType << " elements",
             failure();
    if (static_cast<int64_t>(data.size() / width) != count)
      return sizeError(data.size() / width);
    raw.bytes.assign(data.begin(), data.end());
    if (llvm::sys::IsBigEndianHost && width > 1)
      for (size_t i = 0; i < raw.bytes.size(); i += width)
        std::reverse(raw.bytes.begin() + i, raw.bytes.begin() + i + width);
    return raw;
  }

  // Reserved once the data is known to hold `count` elements: a shape with
  // no data behind it must not allocate what the shape claims.
  auto put = [&](uint64_t bits) {
    for (unsigned b = 0; b < width; ++b)
      raw.bytes.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  };
  switch (proto.data_type()) {
  case TP::FLOAT:
    if (proto.float_data_size() != count)
      return sizeError(proto.float_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (float f : proto.float_data()) {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      put(bits);
    }
    break;
  case TP::DOUBLE:
    if (proto.double_data_size() != count)
      return sizeError(proto.double_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (double d : proto.double_data()) {
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof(bits));
      put(bits);
    }
    break;
  case TP::INT64:
    if (proto.int64_data_size() != count)
      return sizeError(proto.int64_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (int64_t v : proto.int64_data())
      put(static_cast<uint64_t>(v));
    break;
  case TP::UINT32:
  case TP::UINT64:
    if (proto.uint64_data_size() != count)
      return sizeError(proto.uint64_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (uint64_t v : proto.uint64_data())
      put(v);
    break;
  default: // INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16
    if (proto.int32_data_size() != count)
      return sizeError(proto.int32_data_size());
    raw.bytes.reserve(size_t(count) * width);
    for (int32_t v : proto.int32_data())
      put(static_cast<uint64_t>(static_cast<int64_t>(v)));
    break;
  }
  return raw;
}

static HostTensor toHost(const RawTensor &raw) {
  HostTensor t = HostTensor::zeros(raw.elementType, raw.shape);
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = raw.bits(i);
    if (!t.isFloat()) {
      t.ints[i] = wrapToIntType(raw.elementType, static_cast<int64_t>(bits));
      continue;
    }
    if (raw.elementType.isF32()) {
      uint32_t b32 = static_cast<uint32_t>(bits);
      float f;
      std::memcpy(&f, &b32, sizeof(f));
      t.floats[i] = f;
    } else if (raw.elementType.isF64()) {
      double d;
      std::memcpy(&d, &bits, sizeof(d));
      t.floats[i] = d;
    } else {
      const llvm::fltSemantics &sem =
          cast<FloatType>(raw.elementType).getFloatSemantics();
      llvm::APFloat f(sem, llvm::APInt(byteWidth(raw.elementType) * 8, bits));
      bool lost;
      f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      t.floats[i] = f.convertToDouble();
    }
  }
  return t;
}

/// Whether every element of a float tensor is finite (exponent not all
/// ones).
static bool allFinite(const RawTensor &raw) {
  uint64_t expMask;
  Type type = raw.elementType;
  if (type.isF32())
    expMask = 0x7f800000;
  else if (type.isF64())
    expMask = 0x7ff0000000000000ULL;
  else if (type.isF16())
    expMask = 0x7c00;
  else if (type.isBF16())
    expMask = 0x7f80;
  else
    return true;
  for (int64_t i = 0, n = nn::numElements(raw.shape); i < n; ++i)
    if ((raw.bits(i) & expMask) == expMask)
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Importer state
//===----------------------------------------------------------------------===//

namespace {

/// One ONNX value. It is an SSA value, a trainable initializer whose
/// `nn.param` read is emitted at its first use, or a constant known on the
/// host that becomes an `nn.constant` only if a real op consumes it.
struct Slot {
  std::string name;
  RankedTensorType type;
  Location loc;
  Value value;
  std::optional<HostTensor> host;
  /// Trainable initializer read through `nn.param @param`.
  std::string param;
};

/// The node being imported.
struct NodeCtx {
  const onnx::NodeProto &proto;
  StringRef opType;
  std::string name;
  Location loc;
  /// Slot of each input; -1 for an omitted optional input.
  SmallVector<int> inputs;

  /// Starts "<Op> node '<name>' ..." at the node's location.
  InFlightDiagnostic error() const {
    InFlightDiagnostic diag = mlir::emitError(loc);
    diag << opType << " node '" << name << "' ";
    return diag;
  }
  /// The prefix for messages of the nn shape rules.
  InFlightDiagnostic shapeError() const {
    InFlightDiagnostic diag = mlir::emitError(loc);
    diag << opType << " node '" << name << "': ";
    return diag;
  }
  int numInputs() const { return inputs.size(); }
  int input(int i) const { return i < numInputs() ? inputs[i] : -1; }
};

/// A 2-D window's attributes as an ONNX node spells them.
struct WindowAttrs {
  SmallVector<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
};

class Importer {
public:
  Importer(MLIRContext *ctx, StringRef fileName,
           const ONNXImportOptions &options)
      : ctx(ctx), fileName(fileName.str()), options(options), builder(ctx) {}

  OwningOpRef<ModuleOp> run(const onnx::ModelProto &model);

private:
  using Handler = LogicalResult (Importer::*)(NodeCtx &);

  // Setup.
  Location graphLoc(StringRef name) {
    return NameLoc::get(StringAttr::get(ctx, name),
                        FileLineColLoc::get(ctx, fileName, 0, 0));
  }
  LogicalResult importInitializer(const onnx::TensorProto &proto);
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info,
                                        Location loc);
  LogicalResult checkOutputType(const onnx::ValueInfoProto &info,
                                RankedTensorType actual, Location loc);
  LogicalResult importNode(const onnx::NodeProto &node, int64_t index);
  static Handler lookupHandler(StringRef opType);
  LogicalResult inlineFunctions(const onnx::ModelProto &model,
                                std::vector<onnx::NodeProto> &nodes);
  LogicalResult expandCall(const onnx::NodeProto &call, int depth,
                           std::vector<onnx::NodeProto> &out);
  struct LossMatch {
    /// Indices of the loss node and of the LogSoftmax under a
    /// NegativeLogLikelihoodLoss (-1 for SoftmaxCrossEntropyLoss).
    int64_t nll = -1, logSoftmax = -1;
    std::string logits, target;
  };
  LossMatch matchLoss(const onnx::GraphProto &graph,
                      ArrayRef<onnx::NodeProto> nodes,
                      const llvm::StringSet<> &initializerNames);
  LogicalResult checkLossScores(const onnx::NodeProto &lossNode,
                                const onnx::NodeProto *logSoftmax,
                                RankedTensorType scores);

  // Slots.
  Slot &slot(int i) { return slots[i]; }
  RankedTensorType typeOf(int i) { return slots[i].type; }
  ArrayRef<int64_t> shapeOf(int i) { return slots[i].type.getShape(); }
  Type elementTypeOf(int i) { return slots[i].type.getElementType(); }
  bool isHost(int i) { return i >= 0 && slots[i].host.has_value(); }
  const HostTensor &host(int i) { return *slots[i].host; }
  bool allHost(NodeCtx &n) {
    return llvm::all_of(n.inputs, [&](int i) { return i < 0 || isHost(i); });
  }
  FailureOr<Value> getValue(int i, Location useLoc);
  /// An optional input (slot -1 when omitted): null when omitted.
  FailureOr<Value> getOptionalValue(int i, Location useLoc) {
    return i < 0 ? FailureOr<Value>(Value()) : getValue(i, useLoc);
  }
  std::optional<ArrayRef<int64_t>> optionalShapeOf(int i) {
    if (i < 0)
      return std::nullopt;
    return shapeOf(i);
  }
  FailureOr<Value> getValue(NodeCtx &n, int operand) {
    return getValue(n.input(operand), n.loc);
  }
  Value materialize(const HostTensor &t, Location loc, StringRef valueName);
  ElementsAttr makeResource(ShapedType type, StringRef hint,
                            ArrayRef<char> bytes, size_t align);
  std::string uniqueResourceKey(StringRef name);
  LogicalResult bind(StringRef name, Slot slot, Location loc);
  LogicalResult defineValue(NodeCtx &n, int result, Value value);
  LogicalResult defineHost(NodeCtx &n, int result, HostTensor tensor);
  LogicalResult defineAlias(NodeCtx &n, int result, int input);

  // Node helpers.
  LogicalResult expectInputs(NodeCtx &n, int min, int max);
  LogicalResult requireFloat(NodeCtx &n, int operand, StringRef role);
  LogicalResult requireSameElementType(NodeCtx &n, ArrayRef<int> operands);
  LogicalResult normalizeAxis(NodeCtx &n, int64_t &axis, int64_t rank,
                              StringRef what = "axis");
  LogicalResult getIntAttr(NodeCtx &n, StringRef name, int64_t &value);
  LogicalResult getFloatAttr(NodeCtx &n, StringRef name, float &value);
  /// A normalization's epsilon is at least 0 (a negative one takes the
  /// square root of a negative variance).
  LogicalResult checkEpsilon(NodeCtx &n, float epsilon) {
    if (epsilon < 0.0f)
      return n.error() << "has epsilon " << epsilon
                       << "; it must be at least 0",
             failure();
    return success();
  }
  LogicalResult getIntsAttr(NodeCtx &n, StringRef name,
                            std::optional<SmallVector<int64_t>> &value);
  FailureOr<SmallVector<int64_t>> constInts(NodeCtx &n, int operand,
                                            StringRef role);
  FailureOr<HostTensor> constScalar(NodeCtx &n, int operand, StringRef role);
  LogicalResult checkUnusedOutput(NodeCtx &n, int result, StringRef what);
  LogicalResult checkFoldSize(NodeCtx &n, int64_t elements);
  LogicalResult emitBroadcast(NodeCtx &n, ArrayRef<int> operands,
                              Type resultElement,
                              function_ref<Value(Type, ArrayRef<Value>)> build);
  LogicalResult reshapeTo(NodeCtx &n, int input, ArrayRef<int64_t> shape);

  // Op handlers.
  template <typename OpTy, BinaryFn Fn> LogicalResult importArith(NodeCtx &n);
  LogicalResult importPow(NodeCtx &n);
  LogicalResult importEqual(NodeCtx &n);
  template <typename OpTy> LogicalResult importFloatUnary(NodeCtx &n);
  template <typename OpTy, UnaryFn Fn>
  LogicalResult importFoldableUnary(NodeCtx &n);
  LogicalResult importNot(NodeCtx &n);
  LogicalResult importWhere(NodeCtx &n);
  LogicalResult importCast(NodeCtx &n);
  LogicalResult importConstant(NodeCtx &n);
  LogicalResult importShape(NodeCtx &n);
  LogicalResult importIdentity(NodeCtx &n);
  LogicalResult importDropout(NodeCtx &n);
  LogicalResult importGemm(NodeCtx &n);
  LogicalResult importMatMul(NodeCtx &n);
  LogicalResult getSoftmaxAxis(NodeCtx &n, int x, int64_t &axis);
  LogicalResult importSoftmax(NodeCtx &n);
  LogicalResult importLogSoftmax(NodeCtx &n);
  LogicalResult importLossNode(NodeCtx &n);
  LogicalResult importLeakyRelu(NodeCtx &n);
  LogicalResult importGelu(NodeCtx &n);
  LogicalResult importReduce(NodeCtx &n);
  LogicalResult importLayerNorm(NodeCtx &n);
  LogicalResult getWindow(NodeCtx &n, int x,
                          std::optional<ArrayRef<int64_t>> weightKernel,
                          WindowAttrs &w);
  LogicalResult importConv(NodeCtx &n);
  LogicalResult importPool(NodeCtx &n);
  LogicalResult importBatchNorm(NodeCtx &n);
  LogicalResult importPad(NodeCtx &n);
  LogicalResult importGather(NodeCtx &n);
  LogicalResult importReshape(NodeCtx &n);
  LogicalResult importFlatten(NodeCtx &n);
  LogicalResult importTranspose(NodeCtx &n);
  LogicalResult importSplit(NodeCtx &n);
  LogicalResult importSlice(NodeCtx &n);
  LogicalResult importConcat(NodeCtx &n);
  LogicalResult importUnsqueeze(NodeCtx &n);
  LogicalResult importSqueeze(NodeCtx &n);
  LogicalResult importExpand(NodeCtx &n);
  LogicalResult importConstantOfShape(NodeCtx &n);
  LogicalResult importRange(NodeCtx &n);
  LogicalResult importTrilu(NodeCtx &n);

  MLIRContext *ctx;
  std::string fileName;
  const ONNXImportOptions &options;
  OpBuilder builder;
  int64_t opset = 0;
  std::vector<Slot> slots;
  llvm::StringMap<int> names;
  /// Names read by some node or listed as graph outputs.
  llvm::StringSet<> consumed;
  /// Names some node reads where a gradient flows (not only compared,
  /// counted or used as a condition).
  llvm::StringSet<> readDifferentiably;
  llvm::StringSet<> resourceKeys;
  /// Why each NegativeLogLikelihoodLoss node is not the graph's loss (see
  /// matchLoss), by node name.
  llvm::StringMap<std::string> lossMismatch;
  /// The model's local functions by domain and name.
  std::map<std::string, const onnx::FunctionProto *> functions;
  /// Value-name prefixes given to inlined calls so far.
  llvm::StringSet<> inlinePrefixes;
};

} // namespace

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
    s.value = nn::ParamOp::create(builder, s.loc, s.type, s.param);
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

static const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
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

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

template <typename OpTy, BinaryFn Fn>
LogicalResult Importer::importArith(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)))
    return failure();
  int a = n.inputs[0], b = n.inputs[1];
  if (isHost(a) && isHost(b)) {
    FailureOr<HostTensor> r =
        foldBinary(Fn, host(a), host(b), [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
  if (failed(requireSameElementType(n, {a, b})))
    return failure();
  return emitBroadcast(n, {a, b}, elementTypeOf(a),
                       [&](Type type, ArrayRef<Value> v) -> Value {
                         return OpTy::create(builder, n.loc, type, v[0], v[1]);
                       });
}

LogicalResult Importer::importPow(NodeCtx &n) {
  if (failed(expectInputs(n, 2, 2)) || failed(requireFloat(n, 0, "base")))
    return failure();
  int base = n.inputs[0], exponent = n.inputs[1];
  if (elementTypeOf(exponent) != elementTypeOf(base)) {
    // ONNX lets the exponent have its own type; nn.pow does not.
    if (!isHost(exponent))
      return n.error() << "raises " << typeOf(base) << " to a non-constant "
                       << typeOf(exponent)
                       << " exponent of another element type",
             failure();
    FailureOr<HostTensor> cast = foldCast(host(exponent), elementTypeOf(base),
                                          [&] { return n.shapeError(); });
    if (failed(cast))
      return failure();
    Slot converted{slots[exponent].name,
                   cast->getType(),
                   n.loc,
                   Value(),
                   std::move(*cast),
                   ""};
    exponent = slots.size();
    slots.push_back(std::move(converted));
  }
  return emitBroadcast(n, {base, exponent}, elementTypeOf(base),
                       [&](Type type, ArrayRef<Value> v) -> Value {
                         return nn::PowOp::create(builder, n.loc, type, v[0],
                                                  v[1]);
                       });
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

template <typename OpTy> LogicalResult Importer::importFloatUnary(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  FailureOr<Value> v = getValue(n, 0);
  if (failed(v))
    return failure();
  return defineValue(n, 0,
                     OpTy::create(builder, n.loc, typeOf(n.inputs[0]), *v));
}

template <typename OpTy, UnaryFn Fn>
LogicalResult Importer::importFoldableUnary(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  if (isHost(n.inputs[0])) {
    FailureOr<HostTensor> r =
        foldUnary(Fn, host(n.inputs[0]), [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
  return importFloatUnary<OpTy>(n);
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

LogicalResult Importer::importCast(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)))
    return failure();
  int64_t to = 0;
  if (failed(getIntAttr(n, "to", to)))
    return failure();
  Type target = elementTypeFor(ctx, to);
  if (!target)
    return n.error() << "casts to " << onnxTypeName(to)
                     << ", which gpipe does not support",
           failure();
  int x = n.inputs[0];
  if (isHost(x)) {
    FailureOr<HostTensor> r =
        foldCast(host(x), target, [&] { return n.shapeError(); });
    if (failed(r))
      return failure();
    return defineHost(n, 0, std::move(*r));
  }
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

/// Pad. PyTorch's AvgPool2d export pads by zero before the pooling; only
/// that (every pad 0, any mode) is supported: it is the identity.
LogicalResult Importer::importPad(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 4)))
    return failure();
  std::optional<SmallVector<int64_t>> pads;
  if (opset < 11) {
    if (failed(getIntsAttr(n, "pads", pads)))
      return failure();
  } else {
    FailureOr<SmallVector<int64_t>> v = constInts(n, 1, "pads");
    if (failed(v))
      return failure();
    pads = std::move(*v);
  }
  if (!pads || llvm::any_of(*pads, [](int64_t p) { return p != 0; }))
    return n.error() << "pads by "
                     << (pads ? nn::formatShape(*pads) : std::string("[]"))
                     << "; gpipe supports only Pad nodes that pad nothing "
                        "(give the padding to the Conv or pooling node "
                        "instead)",
           failure();
  return defineAlias(n, 0, n.inputs[0]);
}

/// Dropout. From opset 12 the `training_mode` input says whether it drops:
/// a constant true makes an nn.dropout with the `ratio` input (default 0.5)
/// and a mask stream from the node's name; absent or false, and before
/// opset 12 (which has no such flag), it is the identity of inference.
LogicalResult Importer::importDropout(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 3)) || failed(checkUnusedOutput(n, 1, "mask")))
    return failure();
  bool training = false;
  double ratio = 0.5;
  if (opset >= 12 && n.input(2) >= 0) {
    FailureOr<HostTensor> mode = constScalar(n, 2, "training_mode");
    if (failed(mode))
      return failure();
    training = mode->getDouble(0) != 0.0;
  }
  if (!training)
    return defineAlias(n, 0, n.inputs[0]);
  if (n.input(1) >= 0) {
    FailureOr<HostTensor> r = constScalar(n, 1, "ratio");
    if (failed(r))
      return failure();
    ratio = r->getDouble(0);
  }
  if (!(ratio >= 0.0 && ratio < 1.0))
    return n.error() << "has ratio " << ratio << " outside [0, 1)", failure();
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
  std::optional<ArrayRef<int64_t>> cShape =
      optionalShapeOf(c);
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
  if (const onnx::AttributeProto *attr = findAttr(n.proto, "approximate"))
    if (attr->s() != "none")
      return n.error() << "has approximate '" << attr->s()
                       << "'; gpipe supports only the exact GELU "
                          "(approximate 'none')",
             failure();
  return importFloatUnary<nn::GeluOp>(n);
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
      failed(requireSameElementType(n, n.inputs)) ||
      failed(checkUnusedOutput(n, 1, "Mean")) ||
      failed(checkUnusedOutput(n, 2, "InvStdDev")))
    return failure();
  int x = n.inputs[0], scale = n.inputs[1], bias = n.input(2);
  int64_t axis = -1;
  float epsilon = 1e-5f;
  if (failed(getIntAttr(n, "axis", axis)) ||
      failed(getFloatAttr(n, "epsilon", epsilon)) ||
      failed(checkEpsilon(n, epsilon)) ||
      failed(normalizeAxis(n, axis, shapeOf(x).size())))
    return failure();
  std::optional<ArrayRef<int64_t>> biasShape =
      optionalShapeOf(bias);
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
  return defineValue(n, 0,
                     nn::LayerNormOp::create(
                         builder, n.loc, typeOf(x), *vx, *vs, vb,
                         static_cast<uint64_t>(axis), llvm::APFloat(epsilon)));
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
  if (in.size() != 4)
    return n.error() << "has a rank-" << in.size() << " input " << typeOf(x)
                     << "; gpipe supports 2-D images [N, C, H, W]",
           failure();
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
      return n.error() << "has " << v->size() << " " << name
                       << "; a 2-D window needs " << size,
             failure();
    return success();
  };
  if (failed(expect(kernel, "kernel sizes", 2, 1)) ||
      failed(expect(strides, "strides", 2, 1)) ||
      failed(expect(dilations, "dilations", 2, 1)))
    return failure();
  std::string autoPad = "NOTSET";
  if (const onnx::AttributeProto *attr = findAttr(n.proto, "auto_pad"))
    autoPad = attr->s();
  if (autoPad == "NOTSET") {
    if (failed(expect(pads, "pads", 4, 0)))
      return failure();
  } else if (autoPad == "VALID") {
    pads.emplace(4, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Output ceil(in / stride); the total padding split evenly, the odd one
    // at the end (UPPER) or the beginning (LOWER).
    pads.emplace(4, 0);
    for (int d = 0; d < 2; ++d) {
      int64_t size = in[2 + d], stride = (*strides)[d];
      int64_t out = (size + stride - 1) / stride;
      int64_t extent = (*dilations)[d] * ((*kernel)[d] - 1) + 1;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * stride + extent - size);
      int64_t small = total / 2, large = total - small;
      (*pads)[d] = autoPad == "SAME_UPPER" ? small : large;
      (*pads)[d + 2] = autoPad == "SAME_UPPER" ? large : small;
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
  return success();
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
  if (wShape.size() != 4)
    return n.error() << "has a weight of type " << typeOf(weight)
                     << "; gpipe supports 2-D convolutions [O, C/group, kh, "
                        "kw]",
           failure();
  WindowAttrs w;
  if (failed(getWindow(n, x, wShape.drop_front(2), w)))
    return failure();
  if (w.ceilMode)
    return n.error() << "has ceil_mode, which Conv does not define",
           failure();
  std::optional<ArrayRef<int64_t>> biasShape =
      optionalShapeOf(bias);
  FailureOr<nn::Shape> shape = nn::inferConv2DShape(
      shapeOf(x), wShape, biasShape, w.strides, w.pads, w.dilations, groups,
      [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  FailureOr<Value> vx = getValue(x, n.loc), vw = getValue(weight, n.loc);
  if (failed(vx) || failed(vw))
    return failure();
  FailureOr<Value> vbOrNull = getOptionalValue(bias, n.loc);
  if (failed(vbOrNull))
    return failure();
  Value vb = *vbOrNull;
  auto type = RankedTensorType::get(*shape, elementTypeOf(x));
  return defineValue(n, 0,
                     nn::Conv2DOp::create(builder, n.loc, type, *vx, *vw, vb,
                                          w.strides, w.pads, w.dilations,
                                          groups));
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
  FailureOr<nn::Shape> shape = nn::inferPool2DShape(
      shapeOf(x), window, [&] { return n.shapeError(); });
  if (failed(shape))
    return failure();
  FailureOr<Value> vx = getValue(x, n.loc);
  if (failed(vx))
    return failure();
  auto type = RankedTensorType::get(*shape, elementTypeOf(x));
  Value result =
      max ? Value(nn::MaxPool2DOp::create(builder, n.loc, type, *vx, w.kernel,
                                          w.strides, w.pads, w.dilations,
                                          w.ceilMode))
          : Value(nn::AvgPool2DOp::create(builder, n.loc, type, *vx, w.kernel,
                                          w.strides, w.pads,
                                          countIncludePad != 0, w.ceilMode));
  return defineValue(n, 0, result);
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
    if (failed(checkUnusedOutput(n, r, r < 3 ? "running statistics"
                                             : "saved statistics")))
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
  return defineValue(n, 0,
                     nn::BatchNormOp::create(
                         builder, n.loc, typeOf(n.inputs[0]), operands[0],
                         operands[1], operands[2], operands[3], operands[4],
                         llvm::APFloat(epsilon),
                         llvm::APFloat(float(1.0 - double(momentum)))));
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
    if (step < 0)
      return n.error() << "has a negative slice step " << step
                       << "; negative slice steps are not supported",
             failure();
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
  if (isHost(x))
    return defineHost(n, 0, foldSlice(host(x), offsets, sizes, strides));
  FailureOr<Value> v = getValue(x, n.loc);
  if (failed(v))
    return failure();
  auto type = RankedTensorType::get(*shape, elementTypeOf(x));
  return defineValue(
      n, 0,
      nn::SliceOp::create(builder, n.loc, type, *v, offsets, sizes, strides));
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
  if (ArrayRef<int64_t>(*shape) != shapeOf(x))
    return n.error() << "broadcasts a non-constant " << typeOf(x) << " to "
                     << nn::formatShape(*shape)
                     << "; gpipe supports Expand only on constants or as a "
                        "no-op",
           failure();
  return defineAlias(n, 0, x);
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
  if (!isHost(x))
    return n.error() << "has a non-constant input; gpipe folds Trilu only on "
                        "constants",
           failure();
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
  return defineHost(n, 0, foldTrilu(host(x), k, upper != 0));
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Importer::Handler Importer::lookupHandler(StringRef opType) {
  return llvm::StringSwitch<Handler>(opType)
      .Case("Add", &Importer::importArith<nn::AddOp, BinaryFn::Add>)
      .Case("Sub", &Importer::importArith<nn::SubOp, BinaryFn::Sub>)
      .Case("Mul", &Importer::importArith<nn::MulOp, BinaryFn::Mul>)
      .Case("Div", &Importer::importArith<nn::DivOp, BinaryFn::Div>)
      .Case("Pow", &Importer::importPow)
      .Case("Equal", &Importer::importEqual)
      .Case("Not", &Importer::importNot)
      .Case("Where", &Importer::importWhere)
      .Case("Cast", &Importer::importCast)
      .Case("Erf", &Importer::importFloatUnary<nn::ErfOp>)
      .Case("Tanh", &Importer::importFloatUnary<nn::TanhOp>)
      .Case("Sigmoid", &Importer::importFloatUnary<nn::SigmoidOp>)
      .Case("Relu", &Importer::importFloatUnary<nn::ReluOp>)
      .Case("Exp", &Importer::importFloatUnary<nn::ExpOp>)
      .Case("Reciprocal", &Importer::importFloatUnary<nn::ReciprocalOp>)
      .Case("Sqrt", &Importer::importFoldableUnary<nn::SqrtOp, UnaryFn::Sqrt>)
      .Case("Neg", &Importer::importFoldableUnary<nn::NegOp, UnaryFn::Neg>)
      .Case("Constant", &Importer::importConstant)
      .Case("Shape", &Importer::importShape)
      .Case("Identity", &Importer::importIdentity)
      .Case("Dropout", &Importer::importDropout)
      .Case("Gemm", &Importer::importGemm)
      .Case("MatMul", &Importer::importMatMul)
      .Case("Softmax", &Importer::importSoftmax)
      .Case("LogSoftmax", &Importer::importLogSoftmax)
      .Case("NegativeLogLikelihoodLoss", &Importer::importLossNode)
      .Case("SoftmaxCrossEntropyLoss", &Importer::importLossNode)
      .Case("LeakyRelu", &Importer::importLeakyRelu)
      .Case("Gelu", &Importer::importGelu)
      .Case("ReduceSum", &Importer::importReduce)
      .Case("ReduceMean", &Importer::importReduce)
      .Case("LayerNormalization", &Importer::importLayerNorm)
      .Case("Conv", &Importer::importConv)
      .Case("MaxPool", &Importer::importPool)
      .Case("AveragePool", &Importer::importPool)
      .Case("GlobalAveragePool", &Importer::importPool)
      .Case("BatchNormalization", &Importer::importBatchNorm)
      .Case("Pad", &Importer::importPad)
      .Case("Gather", &Importer::importGather)
      .Case("Reshape", &Importer::importReshape)
      .Case("Flatten", &Importer::importFlatten)
      .Case("Transpose", &Importer::importTranspose)
      .Case("Split", &Importer::importSplit)
      .Case("Slice", &Importer::importSlice)
      .Case("Concat", &Importer::importConcat)
      .Case("Unsqueeze", &Importer::importUnsqueeze)
      .Case("Squeeze", &Importer::importSqueeze)
      .Case("Expand", &Importer::importExpand)
      .Case("ConstantOfShape", &Importer::importConstantOfShape)
      .Case("Range", &Importer::importRange)
      .Case("Trilu", &Importer::importTrilu)
      .Default(nullptr);
}

/// Initializers that are trained become `nn.parameter`s: every float
/// initializer of rank >= 1 whose values are all finite. The rest are
/// constants of the network, not weights, and become `nn.constant`s where
/// used: integer and boolean initializers (shape vectors, index tables,
/// boolean masks), float initializers holding an infinity or NaN (the
/// additive -inf causal mask that torch.onnx folds an attention mask buffer
/// into) and float scalars (rank 0: the Python numbers such as an attention
/// scale or GELU's 0.5 that the torch.export-based exporter stores as
/// initializers), and float initializers read only where no gradient flows
/// (compared, or a Where's condition: an attention mask buffer exported
/// without constant folding).
LogicalResult Importer::importInitializer(const onnx::TensorProto &proto) {
  StringRef name = proto.name();
  Location loc = graphLoc(name);
  if (name.empty())
    return emitError(loc) << "model has an initializer without a name",
           failure();
  FailureOr<RawTensor> raw =
      decodeTensor(ctx, proto, loc, "initializer '" + name.str() + "'");
  if (failed(raw))
    return failure();
  RankedTensorType type = raw->getType();
  bool buffer = consumed.contains(name) && !readDifferentiably.contains(name);
  if (isa<FloatType>(raw->elementType) && allFinite(*raw) &&
      !raw->shape.empty() && !buffer) {
    if (name == options.funcName)
      return emitError(loc) << "initializer '" << name
                            << "' has the name of the network function",
             failure();
    ElementsAttr value;
    if (nn::numElements(raw->shape) <= options.inlineElementLimit)
      value = toDenseAttr(toHost(*raw));
    else
      value = makeResource(type, name, raw->bytes, byteWidth(raw->elementType));
    nn::ParameterOp::create(builder, loc, name, type, value, nn::InitKindAttr(),
                            FloatAttr(), /*tied_to=*/FlatSymbolRefAttr());
    return bind(name, Slot{"", type, loc, Value(), std::nullopt, name.str()},
                loc);
  }
  return bind(name, Slot{"", type, loc, Value(), toHost(*raw), ""}, loc);
}

FailureOr<RankedTensorType>
Importer::inputType(const onnx::ValueInfoProto &info, Location loc) {
  StringRef name = info.name();
  if (!info.type().has_tensor_type())
    return emitError(loc) << "input '" << name << "' is not a tensor",
           failure();
  const onnx::TypeProto::Tensor &tensor = info.type().tensor_type();
  Type element = elementTypeFor(ctx, tensor.elem_type());
  if (!element || !isNNElementType(element))
    return emitError(loc) << "input '" << name << "' has element type "
                          << onnxTypeName(tensor.elem_type())
                          << ", which gpipe does not support",
           failure();
  if (!tensor.has_shape())
    return emitError(loc) << "input '" << name
                          << "' has unknown rank; gpipe needs static shapes",
           failure();
  nn::Shape shape;
  for (auto [i, dim] : llvm::enumerate(tensor.shape().dim())) {
    if (dim.has_dim_value()) {
      if (dim.dim_value() < 0)
        return emitError(loc) << "input '" << name << "' has negative dim "
                              << dim.dim_value() << " (dim " << i << ")",
               failure();
      shape.push_back(dim.dim_value());
      continue;
    }
    if (dim.has_dim_param() && !dim.dim_param().empty()) {
      auto it = options.dimSizes.find(dim.dim_param());
      if (it == options.dimSizes.end())
        return emitError(loc)
                   << "input '" << name << "' has dynamic dimension '"
                   << dim.dim_param() << "' (dim " << i
                   << "); fix it with --dim " << dim.dim_param() << "=N",
               failure();
      shape.push_back(it->second);
      continue;
    }
    return emitError(loc) << "input '" << name
                          << "' has an unknown dimension (dim " << i
                          << "); gpipe needs static shapes",
           failure();
  }
  return RankedTensorType::get(shape, element);
}

LogicalResult Importer::checkOutputType(const onnx::ValueInfoProto &info,
                                        RankedTensorType actual, Location loc) {
  if (!info.type().has_tensor_type())
    return success();
  const onnx::TypeProto::Tensor &tensor = info.type().tensor_type();
  Type declared = elementTypeFor(ctx, tensor.elem_type());
  if (tensor.elem_type() != 0 && declared != actual.getElementType())
    return emitError(loc) << "graph output '" << info.name()
                          << "' is declared as "
                          << onnxTypeName(tensor.elem_type())
                          << " but the graph computes " << actual,
           failure();
  if (!tensor.has_shape())
    return success();
  bool matches = tensor.shape().dim_size() == actual.getRank();
  for (int i = 0; matches && i < tensor.shape().dim_size(); ++i) {
    const auto &dim = tensor.shape().dim(i);
    matches = !dim.has_dim_value() || dim.dim_value() == actual.getDimSize(i);
  }
  if (!matches) {
    InFlightDiagnostic diag = emitError(loc);
    diag << "graph output '" << info.name() << "' is declared with shape [";
    llvm::interleaveComma(tensor.shape().dim(), diag,
                          [&](const onnx::TensorShapeProto::Dimension &d) {
                            if (d.has_dim_value())
                              diag << d.dim_value();
                            else
                              diag << "?";
                          });
    diag << "] but the graph computes " << actual;
    return failure();
  }
  return success();
}

LogicalResult Importer::importNode(const onnx::NodeProto &node, int64_t index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "_" + std::to_string(index)
                         : node.name();
  Location loc = NameLoc::get(StringAttr::get(ctx, name),
                              FileLineColLoc::get(ctx, fileName, index + 1, 0));
  NodeCtx n{node, node.op_type(), name, loc, {}};
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return emitError(loc) << "unsupported ONNX op '" << node.domain() << "."
                          << node.op_type() << "' (node '" << name << "')",
           failure();
  Handler handler = lookupHandler(node.op_type());
  if (!handler)
    return emitError(loc) << "unsupported ONNX op '" << node.op_type()
                          << "' (node '" << name << "')",
           failure();
  for (const std::string &input : node.input()) {
    if (input.empty()) {
      n.inputs.push_back(-1);
      continue;
    }
    auto it = names.find(input);
    if (it == names.end())
      return emitError(loc) << "node '" << name << "' uses value '" << input
                            << "', which is not defined before it",
             failure();
    n.inputs.push_back(it->second);
  }
  return (this->*handler)(n);
}

//===----------------------------------------------------------------------===//
// Local functions and the graph's own loss
//===----------------------------------------------------------------------===//

static std::string functionKey(StringRef domain, StringRef name) {
  return (domain + "\x1f" + name).str();
}

/// How deep calls of local functions may nest, and how many nodes the
/// graph may have once they are inlined (calls of calls multiply).
static constexpr int kMaxInlineDepth = 64;
static constexpr size_t kMaxInlinedNodes = size_t(1) << 20;

/// Replaces every call of one of the model's local functions (its
/// FunctionProtos, matched by domain and name) by the function's
/// body, recursively. Values inside a body get the prefix
/// "<call node name>/" (made unique), except the function's inputs and
/// outputs, which become the call's; body nodes are named
/// "<call node name>/<node name>" so they keep the caller's name scope.
/// An attribute reference takes the call's attribute of that name; without
/// one the attribute is omitted (the ONNX version gpipe builds against has
/// no attribute defaults in FunctionProto).
LogicalResult Importer::inlineFunctions(const onnx::ModelProto &model,
                                        std::vector<onnx::NodeProto> &nodes) {
  for (const onnx::FunctionProto &f : model.functions()) {
    std::string key = functionKey(f.domain(), f.name());
    if (!functions.emplace(key, &f).second)
      return emitError(graphLoc(f.name()))
                 << "model defines function '" << f.domain() << "." << f.name()
                 << "' twice",
             failure();
    for (const onnx::OperatorSetIdProto &set : f.opset_import())
      if ((set.domain().empty() || set.domain() == "ai.onnx") &&
          set.version() != opset)
        return emitError(graphLoc(f.name()))
                   << "function '" << f.domain() << "." << f.name()
                   << "' imports ONNX opset " << set.version()
                   << " but the model imports opset " << opset
                   << "; gpipe needs one default-domain opset",
               failure();
  }
  for (const onnx::NodeProto &node : model.graph().node())
    if (failed(expandCall(node, 0, nodes)))
      return failure();
  return success();
}

LogicalResult Importer::expandCall(const onnx::NodeProto &call, int depth,
                                   std::vector<onnx::NodeProto> &out) {
  auto it = functions.find(functionKey(call.domain(), call.op_type()));
  if (it == functions.end()) {
    if (out.size() >= kMaxInlinedNodes)
      return emitError(graphLoc(call.name()))
                 << "the graph has more than " << kMaxInlinedNodes
                 << " nodes once its local functions are inlined",
             failure();
    out.push_back(call);
    return success();
  }
  const onnx::FunctionProto &f = *it->second;
  std::string callName = call.name().empty() ? call.op_type() : call.name();
  Location loc = graphLoc(callName);
  if (depth >= kMaxInlineDepth)
    return emitError(loc) << "calls of local functions nest deeper than "
                          << kMaxInlineDepth << " where function '"
                          << f.domain() << "." << f.name()
                          << "' is called (a recursive function?)",
           failure();
  if (call.input_size() > f.input_size() ||
      call.output_size() > f.output_size())
    return emitError(loc) << "node '" << callName << "' calls function '"
                          << f.name() << "' with " << call.input_size()
                          << " inputs and " << call.output_size()
                          << " outputs; it has " << f.input_size() << " and "
                          << f.output_size(),
           failure();

  std::string prefix = callName + "/";
  for (int k = 1; !inlinePrefixes.insert(prefix).second; ++k)
    prefix = callName + "#" + std::to_string(k) + "/";
  llvm::StringMap<std::string> rename;
  for (int i = 0; i < f.input_size(); ++i)
    rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
  for (int i = 0; i < f.output_size(); ++i)
    if (i < call.output_size() && !call.output(i).empty())
      rename[f.output(i)] = call.output(i);
  auto mapName = [&](const std::string &name) -> std::string {
    if (name.empty())
      return name;
    auto r = rename.find(name);
    return r != rename.end() ? r->second : prefix + name;
  };

  for (auto [j, inner] : llvm::enumerate(f.node())) {
    onnx::NodeProto node = inner;
    node.set_name(callName + "/" +
                  (inner.name().empty()
                       ? inner.op_type() + "_" + std::to_string(j)
                       : inner.name()));
    for (std::string &name : *node.mutable_input())
      name = mapName(name);
    for (std::string &name : *node.mutable_output())
      name = mapName(name);
    node.clear_attribute();
    for (const onnx::AttributeProto &attr : inner.attribute()) {
      if (attr.ref_attr_name().empty()) {
        *node.add_attribute() = attr;
        continue;
      }
      const onnx::AttributeProto *value = findAttr(call, attr.ref_attr_name());
      if (!value)
        continue; // Not given by the call: the attribute is omitted.
      onnx::AttributeProto *copy = node.add_attribute();
      *copy = *value;
      copy->set_name(attr.name());
      copy->clear_ref_attr_name();
    }
    if (failed(expandCall(node, depth + 1, out)))
      return failure();
  }
  return success();
}

/// Finds the graph's own loss: a SoftmaxCrossEntropyLoss of scores, or a
/// NegativeLogLikelihoodLoss of a LogSoftmax of scores used by nothing else,
/// that computes the single graph output with mean reduction, no weight and
/// a target that is a graph input. That is the cross-entropy of the scores,
/// exactly the loss gpipe attaches: the loss node (and the LogSoftmax) are
/// left out, the network returns the scores and the target becomes the
/// labels argument. An ignore_index below 0 (PyTorch writes -100) is
/// accepted: no class id equals it. Any other loss node gets the reason in
/// lossMismatch.
Importer::LossMatch
Importer::matchLoss(const onnx::GraphProto &graph,
                    ArrayRef<onnx::NodeProto> nodes,
                    const llvm::StringSet<> &initializerNames) {
  LossMatch match;
  llvm::StringMap<int> uses;
  for (const onnx::NodeProto &node : nodes)
    for (const std::string &input : node.input())
      ++uses[input];
  for (const onnx::ValueInfoProto &output : graph.output())
    ++uses[output.name()];
  auto isDefault = [](const onnx::NodeProto &node) {
    return node.domain().empty() || node.domain() == "ai.onnx";
  };
  for (auto [i, node] : llvm::enumerate(nodes)) {
    bool nll = node.op_type() == "NegativeLogLikelihoodLoss";
    if (!isDefault(node) ||
        (!nll && node.op_type() != "SoftmaxCrossEntropyLoss"))
      continue;
    std::string name = node.name().empty()
                           ? node.op_type() + "_" + std::to_string(i)
                           : node.name();
    std::string why;
    const onnx::AttributeProto *reduction = findAttr(node, "reduction");
    const onnx::AttributeProto *ignore = findAttr(node, "ignore_index");
    const onnx::ValueInfoProto *target = nullptr;
    for (const onnx::ValueInfoProto &input : graph.input())
      if (node.input_size() > 1 && input.name() == node.input(1) &&
          !initializerNames.contains(input.name()))
        target = &input;
    int64_t producer = -1;
    for (auto [j, other] : llvm::enumerate(nodes))
      if (node.input_size() > 0 && other.output_size() > 0 &&
          other.output(0) == node.input(0))
        producer = j;
    if (graph.output_size() != 1 || node.output_size() < 1 ||
        graph.output(0).name() != node.output(0))
      why = "its output is not the graph's single output";
    else if (node.output_size() > 1 && !node.output(1).empty() &&
             uses[node.output(1)] != 0)
      why = "its log_prob output is used";
    else if (reduction && reduction->s() != "mean")
      why = "it has reduction '" + reduction->s() + "'";
    else if (node.input_size() > 2 && !node.input(2).empty())
      why = "it has a weight input";
    else if (ignore && ignore->i() >= 0)
      why = "it ignores class " + std::to_string(ignore->i());
    else if (!target)
      why = "its target is not a graph input";
    else if (uses[target->name()] != 1)
      why = "its target '" + target->name() + "' has other uses";
    else if (target->type().tensor_type().elem_type() !=
             onnx::TensorProto::INT64)
      why = "its target '" + target->name() + "' is not int64";
    else if (nll &&
             (producer < 0 || nodes[producer].op_type() != "LogSoftmax" ||
              !isDefault(nodes[producer]) || nodes[producer].input_size() != 1))
      why = "its input is not the result of a LogSoftmax";
    else if (nll && uses[node.input(0)] != 1)
      why = "its LogSoftmax input has other uses";
    if (!why.empty()) {
      lossMismatch[name] = why;
      continue;
    }
    match.nll = i;
    match.logSoftmax = nll ? producer : -1;
    match.logits = nll ? nodes[producer].input(0) : node.input(0);
    match.target = target->name();
  }
  return match;
}

/// The scores under the graph's own loss must be [N, C] (with the
/// LogSoftmax over C): gpipe's cross-entropy takes the classes last, and
/// the labels it attaches are [N].
LogicalResult Importer::checkLossScores(const onnx::NodeProto &lossNode,
                                        const onnx::NodeProto *logSoftmax,
                                        RankedTensorType scores) {
  Location loc = graphLoc(lossNode.name());
  if (scores.getRank() != 2)
    return emitError(loc) << lossNode.op_type() << " node '" << lossNode.name()
                          << "' takes scores of type " << scores
                          << "; gpipe takes the graph's loss only over [N, C] "
                             "scores (reshape them to 2-D)",
           failure();
  if (!logSoftmax)
    return success();
  int64_t axis = opset >= 13 ? -1 : 1;
  if (const onnx::AttributeProto *attr = findAttr(*logSoftmax, "axis"))
    axis = attr->i();
  if (axis != 1 && axis != -1)
    return emitError(loc) << lossNode.op_type() << " node '" << lossNode.name()
                          << "' takes a LogSoftmax over axis " << axis << " of "
                          << scores << "; gpipe needs the class axis 1",
           failure();
  return success();
}

OwningOpRef<ModuleOp> Importer::run(const onnx::ModelProto &model) {
  Location fileLoc = FileLineColLoc::get(ctx, fileName, 0, 0);
  bool hasDefault = false;
  for (const onnx::OperatorSetIdProto &set : model.opset_import()) {
    if (!set.domain().empty() && set.domain() != "ai.onnx")
      continue;
    hasDefault = true;
    opset = set.version();
  }
  if (!hasDefault)
    return emitError(fileLoc) << "model '" << fileName
                              << "' imports no default-domain ONNX opset",
           nullptr;
  if (opset < 7 || opset > 20)
    return emitError(fileLoc) << "unsupported ONNX opset version " << opset
                              << " (gpipe supports opsets 7 to 20)",
           nullptr;

  const onnx::GraphProto &graph = model.graph();
  // A graph without outputs computes nothing to train.
  if (graph.output_size() == 0)
    return emitError(fileLoc) << "the graph '" << graph.name()
                              << "' has no outputs; gpipe trains the output "
                                 "a graph computes",
           nullptr;
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());

  std::vector<onnx::NodeProto> nodes;
  if (failed(inlineFunctions(model, nodes)))
    return nullptr;

  // Inputs no gradient flows through: comparisons, logic, shapes, a
  // Where's condition. A float initializer read only there is a buffer
  // (an attention mask exported unfolded), not a weight.
  auto differentiable = [](StringRef op, int index) {
    if (llvm::is_contained({"Equal", "Less", "Greater", "LessOrEqual",
                            "GreaterOrEqual", "Not", "And", "Or", "Xor",
                            "Shape", "Size", "IsNaN", "IsInf"},
                           op))
      return false;
    return !(op == "Where" && index == 0);
  };
  for (const onnx::NodeProto &node : nodes)
    for (const std::string &input : node.input())
      consumed.insert(input);
  // Backwards, so that an Identity (how the exporter shares equal buffers)
  // passes on whether its output is read differentiably.
  for (const onnx::NodeProto &node : llvm::reverse(nodes)) {
    bool passOn = node.op_type() == "Identity" && node.output_size() == 1;
    for (auto [i, input] : llvm::enumerate(node.input()))
      if (passOn ? readDifferentiably.contains(node.output(0))
                 : differentiable(node.op_type(), int(i)))
        readDifferentiably.insert(input);
  }
  for (const onnx::ValueInfoProto &output : graph.output())
    readDifferentiably.insert(output.name());
  for (const onnx::ValueInfoProto &output : graph.output())
    consumed.insert(output.name());

  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (failed(importInitializer(init)))
      return nullptr;
    initializerNames.insert(init.name());
  }
  LossMatch loss = matchLoss(graph, nodes, initializerNames);

  // Graph inputs that are also initializers (IR version < 4) are weights,
  // not arguments.
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  SmallVector<StringRef> argNames;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.contains(input.name()) ||
        (loss.nll >= 0 && input.name() == loss.target))
      continue;
    Location loc = graphLoc(input.name());
    FailureOr<RankedTensorType> type = inputType(input, loc);
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    argLocs.push_back(loc);
    argNames.push_back(input.name());
  }

  Location funcLoc = graph.name().empty() ? fileLoc : graphLoc(graph.name());
  auto func = func::FuncOp::create(builder, funcLoc, options.funcName,
                                   builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, arg] : llvm::enumerate(entry->getArguments())) {
    arg.setLoc(argLocs[i]);
    if (failed(bind(argNames[i],
                    Slot{"", cast<RankedTensorType>(arg.getType()), argLocs[i],
                         arg, std::nullopt, ""},
                    argLocs[i])))
      return nullptr;
  }
  builder.setInsertionPointToEnd(entry);

  // Every op the importer cannot handle, in one error: a user sees the
  // whole list at once (each op type once, with its first node and how many
  // more there are).
  llvm::MapVector<std::string, std::pair<std::string, int>,
                  std::map<std::string, unsigned>>
      unsupported;
  Location firstUnsupported = fileLoc;
  for (auto [i, node] : llvm::enumerate(nodes)) {
    bool foreign = !node.domain().empty() && node.domain() != "ai.onnx";
    if (!foreign && lookupHandler(node.op_type()))
      continue;
    std::string op =
        foreign ? node.domain() + "." + node.op_type() : node.op_type();
    std::string name = node.name().empty()
                           ? node.op_type() + "_" + std::to_string(i)
                           : node.name();
    if (unsupported.empty())
      firstUnsupported = NameLoc::get(
          StringAttr::get(ctx, name),
          FileLineColLoc::get(ctx, fileName, static_cast<unsigned>(i) + 1, 0));
    auto [it, inserted] = unsupported.try_emplace(op, name, 0);
    if (!inserted)
      ++it->second.second;
  }
  if (unsupported.size() == 1 && unsupported.front().second.second == 0) {
    auto &[op, where] = unsupported.front();
    return emitError(firstUnsupported)
               << "unsupported ONNX op '" << op << "' (node '" << where.first
               << "')",
           nullptr;
  }
  if (!unsupported.empty()) {
    InFlightDiagnostic diag = emitError(firstUnsupported)
                              << unsupported.size()
                              << " unsupported ONNX op types: ";
    llvm::interleaveComma(unsupported, diag, [&](const auto &entry) {
      diag << "'" << entry.first << "' (node '" << entry.second.first << "'";
      if (entry.second.second > 0)
        diag << " and " << entry.second.second << " more";
      diag << ")";
    });
    return nullptr;
  }

  for (auto [i, node] : llvm::enumerate(nodes))
    if (static_cast<int64_t>(i) != loss.nll &&
        static_cast<int64_t>(i) != loss.logSoftmax &&
        failed(importNode(node, i)))
      return nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Location loc = graphLoc(output.name());
    StringRef name = loss.nll >= 0 ? StringRef(loss.logits) : output.name();
    auto it = names.find(name);
    if (it == names.end())
      return emitError(loc)
                 << "graph output '" << name << "' is not produced by any node",
             nullptr;
    FailureOr<Value> v = getValue(it->second, loc);
    if (failed(v))
      return nullptr;
    auto type = cast<RankedTensorType>(v->getType());
    if (loss.nll >= 0) {
      if (failed(checkLossScores(
              nodes[loss.nll],
              loss.logSoftmax >= 0 ? &nodes[loss.logSoftmax] : nullptr, type)))
        return nullptr;
    } else if (failed(checkOutputType(output, type, loc))) {
      return nullptr;
    }
    results.push_back(*v);
    resultTypes.push_back(type);
  }
  func::ReturnOp::create(builder, funcLoc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp>
mlir::gpipe::importONNXBuffer(MLIRContext *context, StringRef buffer,
                              StringRef bufferName,
                              const ONNXImportOptions &options) {
  context->getOrLoadDialect<nn::NNDialect>();
  context->getOrLoadDialect<func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(context, bufferName, 0, 0);
  if (buffer.size() > static_cast<size_t>(INT_MAX))
    return emitError(fileLoc) << "'" << bufferName << "' is " << buffer.size()
                              << " bytes, more than a protobuf-encoded ONNX "
                                 "model can hold (2 GiB)",
           nullptr;
  onnx::ModelProto model;
  if (!model.ParseFromArray(buffer.data(), static_cast<int>(buffer.size())))
    return emitError(fileLoc) << "'" << bufferName
                              << "' is not a valid ONNX model (protobuf "
                                 "parse failed)",
           nullptr;
  if (!model.has_graph())
    return emitError(fileLoc) << "'" << bufferName
                              << "' is not a valid ONNX model (it has no "
                                 "graph)",
           nullptr;
  return Importer(context, bufferName, options).run(model);
}

OwningOpRef<ModuleOp>
mlir::gpipe::importONNXFile(MLIRContext *context, StringRef path,
                            const ONNXImportOptions &options) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return emitError(FileLineColLoc::get(context, path, 0, 0))
               << "cannot open ONNX model '" << path
               << "': " << file.getError().message(),
           nullptr;
  return importONNXBuffer(context, (*file)->getBuffer(), path, options);
}
