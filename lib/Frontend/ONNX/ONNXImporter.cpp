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
// rather than by the verifier. The op handlers are in Import*.cpp.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::onnximport;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

Importer::Handler Importer::lookupHandler(StringRef opType) {
#define ONNX_OP(OPTYPE, HANDLER) .Case(#OPTYPE, &Importer::ONNX_UNPAREN HANDLER)
#define ONNX_UNPAREN(...) __VA_ARGS__
  return llvm::StringSwitch<Handler>(opType)
#include "ONNXOps.def"
      .Default(nullptr);
#undef ONNX_UNPAREN
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
/// The bytes of parameter `name`'s initial value (empty if unreadable).
ArrayRef<char> Importer::parameterBytes(StringRef name) {
  auto param = parameterOps.lookup(name);
  if (!param || !param.getInitialValue())
    return {};
  ElementsAttr value = *param.getInitialValue();
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    return blob ? blob->getData() : ArrayRef<char>();
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(value);
      dense && !dense.isSplat())
    return dense.getRawData();
  return {};
}

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
  for (const std::string &pattern : options.frozen) {
    llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(pattern);
    if (!glob) {
      llvm::consumeError(glob.takeError());
      return emitError(loc)
                 << "--freeze pattern '" << pattern << "' is not a valid glob",
             failure();
    }
    if (glob->match(name)) {
      buffer = true;
      frozenUsed.insert(pattern);
    }
  }
  // The values, decoded once for the checks below and the slot.
  HostTensor values = toHost(*raw);
  // A batch-sized initializer of one repeated value is a folded mask (an
  // all-zero additive attention mask expanded to the batch), not a weight.
  bool batchSplat = batchSize > 1 && !raw->shape.empty() &&
                    raw->shape[0] == batchSize && values.isSplat();
  if (isa<FloatType>(raw->elementType) && allFinite(*raw) &&
      !raw->shape.empty() && !buffer && !isMaskConstant(values) &&
      !batchSplat) {
    if (name == options.funcName)
      return emitError(loc) << "initializer '" << name
                            << "' has the name of the network function",
             failure();
    // An exporter may fold a parameter broadcast to the batch (a class
    // token expanded to every sample) into one initializer of batch size:
    // the model has one tensor, so it trains as one, broadcast where read.
    RankedTensorType paramType = type;
    if (batchSize > 1 && raw->shape[0] == batchSize &&
        slicesEqual(*raw, batchSize)) {
      nn::Shape one(raw->shape);
      one[0] = 1;
      paramType = RankedTensorType::get(one, raw->elementType);
      raw->bytes.resize(raw->bytes.size() / batchSize);
      raw->shape = one;
    }
    // A non-square matrix stored again transposed is one tied weight (GPT-2's
    // token embedding and output head): the second reads the first. Square
    // ones are left alone (two identity initializations are not a tie), as
    // are matrices of one repeated value.
    if (raw->shape.size() == 2 && raw->shape[0] != raw->shape[1] &&
        !values.isSplat()) {
      int64_t rows = raw->shape[0], cols = raw->shape[1];
      size_t width = byteWidth(raw->elementType);
      std::vector<char> transposed(raw->bytes.size());
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          std::memcpy(&transposed[(j * rows + i) * width],
                      &raw->bytes[(i * cols + j) * width], width);
      auto it = matrices.find(
          {llvm::xxh3_64bits(ArrayRef<uint8_t>(
               reinterpret_cast<const uint8_t *>(transposed.data()),
               transposed.size())),
           cols, rows});
      if (it != matrices.end() &&
          parameterBytes(it->second) == ArrayRef<char>(transposed)) {
        int tied = names.lookup(it->second);
        if (slots[tied].type.getShape() == ArrayRef<int64_t>{cols, rows}) {
          Slot slot{"", type, loc, Value(), std::nullopt, it->second};
          slot.paramType = slots[tied].type;
          slot.transposed = true;
          return bind(name, std::move(slot), loc);
        }
      }
      matrices[{llvm::xxh3_64bits(ArrayRef<uint8_t>(
                    reinterpret_cast<const uint8_t *>(raw->bytes.data()),
                    raw->bytes.size())),
                rows, cols}] = name.str();
    }
    ElementsAttr value;
    if (nn::numElements(raw->shape) <= options.inlineElementLimit)
      value = toDenseAttr(toHost(*raw));
    else
      value = makeResource(paramType, name, raw->bytes,
                           byteWidth(raw->elementType));
    parameterOps[name] = nn::ParameterOp::create(
        builder, loc, name, paramType, value, nn::InitKindAttr(), FloatAttr(),
        /*tied_to=*/FlatSymbolRefAttr());
    Slot slot{"", type, loc, Value(), std::nullopt, name.str()};
    if (paramType != type)
      slot.paramType = paramType;
    return bind(name, std::move(slot), loc);
  }
  return bind(name, Slot{"", type, loc, Value(), std::move(values), ""}, loc);
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

LogicalResult Importer::checkOpset(const onnx::ModelProto &model,
                                   Location fileLoc) {
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
           failure();
  if (opset < 7 || opset > 20)
    return emitError(fileLoc) << "unsupported ONNX opset version " << opset
                              << " (gpipe supports opsets 7 to 20)",
           failure();
  return success();
}

void Importer::classifyReads(const onnx::GraphProto &graph,
                             ArrayRef<onnx::NodeProto> nodes) {
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
}

void Importer::findBatchSize(const onnx::GraphProto &graph) {
  llvm::StringSet<> inits;
  for (const onnx::TensorProto &init : graph.initializer())
    inits.insert(init.name());
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (inits.contains(input.name()) || !input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape() ||
        input.type().tensor_type().shape().dim_size() == 0)
      continue;
    const onnx::TensorShapeProto::Dimension &dim =
        input.type().tensor_type().shape().dim(0);
    if (dim.has_dim_value())
      batchSize = dim.dim_value();
    else if (auto it = options.dimSizes.find(dim.dim_param());
             it != options.dimSizes.end())
      batchSize = it->second;
    break;
  }
}

LogicalResult
Importer::importInitializers(const onnx::GraphProto &graph, Location fileLoc,
                             llvm::StringSet<> &initializerNames) {
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (failed(importInitializer(init)))
      return failure();
    initializerNames.insert(init.name());
  }
  for (const std::string &pattern : options.frozen)
    if (!frozenUsed.contains(pattern))
      return emitError(fileLoc) << "--freeze pattern '" << pattern
                                << "' matches no initializer of the model",
             failure();
  return success();
}

FailureOr<func::FuncOp>
Importer::declareFunction(const onnx::GraphProto &graph, const LossMatch &loss,
                          const llvm::StringSet<> &initializerNames,
                          Location fileLoc) {
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
      return failure();
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
      return failure();
  }
  builder.setInsertionPointToEnd(entry);
  return func;
}

LogicalResult Importer::checkSupported(ArrayRef<onnx::NodeProto> nodes,
                                       Location fileLoc) {
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
    return emitError(firstUnsupported) << "unsupported ONNX op '" << op
                                       << "' (node '" << where.first << "')",
           failure();
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
    return failure();
  }
  return success();
}

LogicalResult Importer::buildResults(func::FuncOp func,
                                     const onnx::GraphProto &graph,
                                     ArrayRef<onnx::NodeProto> nodes,
                                     const LossMatch &loss) {
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Location loc = graphLoc(output.name());
    StringRef name = loss.nll >= 0 ? StringRef(loss.logits) : output.name();
    auto it = names.find(name);
    if (it == names.end())
      return emitError(loc)
                 << "graph output '" << name << "' is not produced by any node",
             failure();
    FailureOr<Value> v = getValue(it->second, loc);
    if (failed(v))
      return failure();
    auto type = cast<RankedTensorType>(v->getType());
    if (loss.nll >= 0) {
      if (failed(checkLossScores(
              nodes[loss.nll],
              loss.logSoftmax >= 0 ? &nodes[loss.logSoftmax] : nullptr, type)))
        return failure();
    } else if (failed(checkOutputType(output, type, loc))) {
      return failure();
    }
    results.push_back(*v);
    resultTypes.push_back(type);
  }
  func::ReturnOp::create(builder, func.getLoc(), results);
  func.setFunctionType(
      builder.getFunctionType(func.getArgumentTypes(), resultTypes));
  return success();
}

OwningOpRef<ModuleOp> Importer::run(const onnx::ModelProto &model) {
  Location fileLoc = FileLineColLoc::get(ctx, fileName, 0, 0);
  if (failed(checkOpset(model, fileLoc)))
    return nullptr;

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
  classifyReads(graph, nodes);
  findBatchSize(graph);
  llvm::StringSet<> initializerNames;
  if (failed(importInitializers(graph, fileLoc, initializerNames)))
    return nullptr;
  LossMatch loss = matchLoss(graph, nodes, initializerNames);
  FailureOr<func::FuncOp> func =
      declareFunction(graph, loss, initializerNames, fileLoc);
  if (failed(func) || failed(checkSupported(nodes, fileLoc)))
    return nullptr;
  for (auto [i, node] : llvm::enumerate(nodes))
    if (static_cast<int64_t>(i) != loss.nll &&
        static_cast<int64_t>(i) != loss.logSoftmax &&
        failed(importNode(node, i)))
      return nullptr;
  if (failed(buildResults(*func, graph, nodes, loss)))
    return nullptr;

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
