//===- Importer.h - The ONNX importer, shared by its parts ------*- C++ -*-===//
//
// The importer's state and the declarations its parts share: the slots that
// hold every ONNX value (an SSA value, a trainable initializer or a constant
// known on the host), the node context handlers receive, and the `Importer`
// class. The handlers live by op family in Import*.cpp; the table mapping
// ONNX op types to them (the one place an op's import is declared) is
// ONNXOps.def; the graph walk, function inlining and loss matching are in
// ONNXImporter.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_FRONTEND_ONNX_IMPORTER_H
#define GPIPE_FRONTEND_ONNX_IMPORTER_H

#include "gpipe/Frontend/ONNXImporter.h"

#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/IR/NNShapes.h"
#include "gpipe/Dialect/NN/Utils/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::gpipe::onnximport {

// The host evaluation the importer folds shape arithmetic with.
using nn::BinaryFn;
using nn::foldBinary;
using nn::foldBroadcastTo;
using nn::foldCast;
using nn::foldConcat;
using nn::foldGather;
using nn::foldSlice;
using nn::foldTranspose;
using nn::foldTrilu;
using nn::foldUnary;
using nn::foldWhere;
using nn::HostTensor;
using nn::isComparison;
using nn::isNNElementType;
using nn::kMaxFoldElements;
using nn::roundToFloatType;
using nn::toBytes;
using nn::toDenseAttr;
using nn::UnaryFn;
using nn::wrapToIntType;

using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Tensor data (TensorProto.cpp)
//===----------------------------------------------------------------------===//

/// An ONNX element type as an MLIR type; null if gpipe cannot read it.
Type elementTypeFor(MLIRContext *ctx, int32_t onnxType);
/// The ONNX name of an element type ("FLOAT"), or "#<n>" if unknown.
std::string onnxTypeName(int32_t onnxType);
/// Bytes per element of an MLIR element type as the importer stores it.
unsigned byteWidth(Type elementType);
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

/// Decodes `proto`; `what` names it in messages ("initializer 'w'").
FailureOr<RawTensor> decodeTensor(MLIRContext *ctx,
                                  const onnx::TensorProto &proto, Location loc,
                                  const std::string &what);
/// The decoded tensor's elements on the host.
HostTensor toHost(const RawTensor &raw);
/// Whether every element of a float tensor is finite.
bool allFinite(const RawTensor &raw);
/// Whether a float tensor holds a value of magnitude 1e30 or more: an
/// additive attention mask (finfo.min), a constant, not a weight.
bool isMaskConstant(const HostTensor &values);
/// Whether the `count` slices of `raw` along dim 0 (of size `count`) hold
/// the same bytes.
bool slicesEqual(const RawTensor &raw, int64_t count);
/// The attribute `name` of `node`, or null.
const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                     StringRef name);

//===----------------------------------------------------------------------===//
// Importer state
//===----------------------------------------------------------------------===//
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
  /// The parameter's own type where it differs from `type`: an initializer
  /// whose slices along the batch were all equal is one parameter of batch
  /// size 1, broadcast to `type` where it is read.
  RankedTensorType paramType = {};
  /// The parameter is another initializer's transpose (a tied embedding an
  /// exporter stored once as is and once transposed): read as nn.param of
  /// `paramType` and transposed.
  bool transposed = false;
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
/// A Conv's or pooling's window, in 2-D form ([h, w]; pads [top, left,
/// bottom, right]); a 1-D window (`oneD`) is the 2-D one of height 1.
struct WindowAttrs {
  SmallVector<int64_t> kernel, strides, pads, dilations;
  bool ceilMode = false;
  bool oneD = false;
};

/// Pad's attributes as a node spells them: 2 pads per padded axis (the
/// befores, then the afters), the padded axes, the mode and the constant.
struct PadAttrs {
  std::optional<SmallVector<int64_t>> pads;
  SmallVector<int64_t> axes;
  std::string mode = "constant";
  double value = 0.0;
};

/// A padded axis and, for each of its output positions, the input position
/// it reads (-1 where the constant goes).
using PadGather = std::pair<int64_t, SmallVector<int64_t>>;

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
  /// The model's default-domain opset into `opset`: one there must be, in
  /// the versions gpipe supports.
  LogicalResult checkOpset(const onnx::ModelProto &model, Location fileLoc);
  /// Which names the nodes and graph outputs read (`consumed`), and which
  /// of them a gradient flows through (`readDifferentiably`): what tells a
  /// float initializer that is a weight from one that is a buffer.
  void classifyReads(const onnx::GraphProto &graph,
                     ArrayRef<onnx::NodeProto> nodes);
  /// The batch (`batchSize`): dim 0 of the first data input, 0 if unknown.
  void findBatchSize(const onnx::GraphProto &graph);
  /// Every initializer imported, its name into `initializerNames`; each
  /// --freeze pattern must have matched one.
  LogicalResult importInitializers(const onnx::GraphProto &graph,
                                   Location fileLoc,
                                   llvm::StringSet<> &initializerNames);
  /// The function, with an argument per graph input that is neither an
  /// initializer nor the labels of the graph's own loss, each bound to its
  /// name; the builder is left at the end of its entry block.
  FailureOr<func::FuncOp>
  declareFunction(const onnx::GraphProto &graph, const LossMatch &loss,
                  const llvm::StringSet<> &initializerNames, Location fileLoc);
  /// Every op the importer cannot handle, in one error: a user sees the
  /// whole list at once (each op type once, with its first node and how
  /// many more there are).
  LogicalResult checkSupported(ArrayRef<onnx::NodeProto> nodes,
                               Location fileLoc);
  /// The function's results: the graph outputs (the scores under the
  /// graph's own loss instead), checked against their declared types, and
  /// the return.
  LogicalResult buildResults(func::FuncOp func, const onnx::GraphProto &graph,
                             ArrayRef<onnx::NodeProto> nodes,
                             const LossMatch &loss);

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
  /// The element type the kernels compute data of type `element` in: f32
  /// for f64 and i64 for i32 (docs/Frontend.md, "Element types"); other
  /// types are their own.
  Type computeTypeOf(Type element);
  /// Slot `i`'s value converted to element type `element`: a constant is
  /// converted on the host, data by an nn.cast.
  FailureOr<Value> getValueAs(int i, Type element, Location loc);
  /// `v` converted to element type `element` (an nn.cast where it differs).
  Value castElements(Value v, Type element, Location loc);
  /// Like emitBroadcast, for ops whose result has the operands' element
  /// type `declared`: the operands are converted to computeTypeOf(declared),
  /// `build` computes there, and the result is converted back.
  LogicalResult
  emitBroadcastComputed(NodeCtx &n, ArrayRef<int> operands, Type declared,
                        function_ref<Value(Type, ArrayRef<Value>)> build);
  /// Where slot `data` is i64 data and slot `constant` an integer constant
  /// of another width, `constant` becomes a widened copy.
  LogicalResult widenIntegerConstant(NodeCtx &n, int data, int &constant);
  /// `v` gathered along `axis` at the given positions (a constant index
  /// list): flips, pads and strided picks of data.
  Value gatherPositions(Value v, ArrayRef<int64_t> positions, int64_t axis,
                        NodeCtx &n);
  /// A rank-0 constant of `like`'s element type.
  Value scalarLike(Value like, double value, NodeCtx &n);

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
  LogicalResult importSum(NodeCtx &n);
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
  /// Pad's pads, axes, mode and constant: attributes before opset 11,
  /// constant inputs from it (axes from opset 18).
  LogicalResult getPadAttrs(NodeCtx &n, PadAttrs &attrs);
  /// The source positions of each axis the pads change, checked against
  /// the mode and the axis's size.
  LogicalResult getPadGathers(NodeCtx &n, const PadAttrs &attrs,
                              SmallVector<PadGather> &gathers);
  /// Pad of a constant input, folded on the host with `fill` at the pads.
  LogicalResult foldPad(NodeCtx &n, ArrayRef<PadGather> gathers,
                        const HostTensor &fill);
  /// Pad of data: a gather per axis and, where the constant goes, an
  /// nn.where against `fill`.
  LogicalResult emitPad(NodeCtx &n, ArrayRef<PadGather> gathers,
                        const HostTensor &fill);
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
  LogicalResult importSize(NodeCtx &n);
  LogicalResult importCumSum(NodeCtx &n);
  LogicalResult importGatherElements(NodeCtx &n);
  LogicalResult importBinaryLogic(NodeCtx &n);
  LogicalResult importVariadic(NodeCtx &n, BinaryFn fn);
  LogicalResult importMod(NodeCtx &n);
  LogicalResult clipBound(NodeCtx &n, int operand, StringRef attr,
                          float &value);
  FailureOr<Value> emitClip(NodeCtx &n, Value x, float lo, float hi);
  LogicalResult importClip(NodeCtx &n);
  LogicalResult importHardActivation(NodeCtx &n);
  LogicalResult importSwish(NodeCtx &n);
  LogicalResult importIsNaN(NodeCtx &n);
  LogicalResult importGatherND(NodeCtx &n);
  LogicalResult importSampleGatherND(NodeCtx &n);

  MLIRContext *ctx;
  std::string fileName;
  const ONNXImportOptions &options;
  OpBuilder builder;
  int64_t opset = 0;
  /// Dim 0 of the first data input (0 if unknown): the batch.
  int64_t batchSize = 0;
  /// Trainable matrices by (hash of their bytes, rows, cols), to find one
  /// stored again transposed.
  std::map<std::tuple<uint64_t, int64_t, int64_t>, std::string> matrices;
  llvm::StringMap<nn::ParameterOp> parameterOps;
  /// --freeze patterns that matched an initializer.
  llvm::StringSet<> frozenUsed;
  ArrayRef<char> parameterBytes(StringRef name);
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

//===----------------------------------------------------------------------===//
// Handler templates
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
  // Integer data is i64 (importCast): an integer constant beside it is too.
  if (failed(widenIntegerConstant(n, a, b)) ||
      failed(widenIntegerConstant(n, b, a)))
    return failure();
  if (failed(requireSameElementType(n, {a, b})))
    return failure();
  return emitBroadcastComputed(
      n, {a, b}, elementTypeOf(a), [&](Type type, ArrayRef<Value> v) -> Value {
        return OpTy::create(builder, n.loc, type, v[0], v[1]);
      });
}

template <typename OpTy> LogicalResult Importer::importFloatUnary(NodeCtx &n) {
  if (failed(expectInputs(n, 1, 1)) || failed(requireFloat(n, 0, "input")))
    return failure();
  Type declared = elementTypeOf(n.inputs[0]);
  Type compute = computeTypeOf(declared);
  FailureOr<Value> v = getValueAs(n.inputs[0], compute, n.loc);
  if (failed(v))
    return failure();
  Value r =
      OpTy::create(builder, n.loc, typeOf(n.inputs[0]).clone(compute), *v);
  return defineValue(n, 0, castElements(r, declared, n.loc));
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

} // namespace mlir::gpipe::onnximport

#endif // GPIPE_FRONTEND_ONNX_IMPORTER_H
