//===- Presets.cpp - Built-in models ----------------------------*- C++ -*-===//
//
// Implements `buildPreset`: checks the options a preset uses (every size
// positive and small enough that no tensor type overflows, the width a
// multiple of the heads, a known preset name), reporting the offending option
// and value at an unknown location, then hands off to the MLP, GPT or ResNet
// builder.
// Also implements `PresetBuilder`, the helper those builders share for
// parameters, locations and the final verification.
//
//===----------------------------------------------------------------------===//

#include "PresetBuilder.h"

#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::presets;

//===----------------------------------------------------------------------===//
// PresetBuilder
//===----------------------------------------------------------------------===//

RankedTensorType presets::f32Tensor(MLIRContext *context,
                                    ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, Float32Type::get(context));
}

ArrayRef<int64_t> presets::shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

std::string presets::dottedName(StringRef scope) {
  std::string name = scope.str();
  llvm::replace(name, '/', '.');
  return name;
}

std::string presets::joinScope(StringRef outer, StringRef inner) {
  if (outer.empty())
    return inner.str();
  if (inner.empty())
    return outer.str();
  return (outer + "/" + inner).str();
}

PresetBuilder::PresetBuilder(MLIRContext *context, StringRef presetName,
                             Type inputType, Type resultType)
    : opBuilder(context),
      fileName(StringAttr::get(context, "preset:" + presetName)) {
  context->loadDialect<func::FuncDialect, nn::NNDialect>();
  Location fileLoc = FileLineColLoc::get(fileName, 0, 0);
  module = ModuleOp::create(fileLoc);
  opBuilder.setInsertionPointToEnd(module->getBody());
  forward = func::FuncOp::create(
      opBuilder, fileLoc, "forward",
      opBuilder.getFunctionType({inputType}, {resultType}));
  Block *entry = forward.addEntryBlock();
  entry->getArgument(0).setLoc(
      NameLoc::get(opBuilder.getStringAttr("input"), fileLoc));
  opBuilder.setInsertionPointToStart(entry);
}

Value PresetBuilder::input() { return forward.getArgument(0); }

Location PresetBuilder::loc(StringRef scope, StringRef kind) {
  std::string key = joinScope(scope, kind);
  std::string name = "/" + key;
  if (unsigned n = kindCount[key]++)
    name += "_" + std::to_string(n);
  return NameLoc::get(opBuilder.getStringAttr(name),
                      FileLineColLoc::get(fileName, 0, 0));
}

Value PresetBuilder::parameter(StringRef name, ArrayRef<int64_t> shape,
                               InitRule init) {
  RankedTensorType type = f32Tensor(getContext(), shape);
  Location paramLoc = NameLoc::get(opBuilder.getStringAttr(name),
                                   FileLineColLoc::get(fileName, 0, 0));
  {
    // Declarations go before @forward, in the order the model uses them.
    OpBuilder::InsertionGuard guard(opBuilder);
    opBuilder.setInsertionPoint(forward);
    FloatAttr scale =
        init.scale ? opBuilder.getF64FloatAttr(*init.scale) : FloatAttr();
    nn::ParameterOp::create(
        opBuilder, paramLoc, name, type,
        /*initial_value=*/ElementsAttr(),
        nn::InitKindAttr::get(opBuilder.getContext(), init.rule), scale,
        /*tied_to=*/FlatSymbolRefAttr());
  }
  return nn::ParamOp::create(opBuilder, paramLoc, Type(type), name);
}

Value PresetBuilder::linear(StringRef scope, Value x, int64_t out,
                            InitRule weightInit,
                            std::optional<InitRule> biasInit) {
  std::string prefix = dottedName(scope);
  SmallVector<int64_t> shape(shapeOf(x));
  Value weight = parameter(prefix + ".weight", {out, shape.back()}, weightInit);
  Value bias;
  if (biasInit)
    bias = parameter(prefix + ".bias", {out}, *biasInit);
  shape.back() = out;
  return nn::LinearOp::create(opBuilder, loc(scope, "Linear"),
                              Type(f32Tensor(getContext(), shape)), x, weight,
                              bias, /*transpose_weight=*/true);
}

Value PresetBuilder::layerNorm(StringRef scope, Value x) {
  std::string prefix = dottedName(scope);
  ArrayRef<int64_t> shape = shapeOf(x);
  Value scale = parameter(prefix + ".weight", shape.back(), InitRule::ones());
  Value bias = parameter(prefix + ".bias", shape.back(), InitRule::zeros());
  return nn::LayerNormOp::create(
      opBuilder, loc(scope, "LayerNorm"), x.getType(), x, scale, bias,
      /*axis=*/shape.size() - 1, llvm::APFloat(1.0e-5f));
}

Value PresetBuilder::scalar(StringRef scope, double value) {
  auto attr = DenseElementsAttr::get(f32Tensor(getContext(), {}),
                                     static_cast<float>(value));
  return nn::ConstantOp::create(opBuilder, loc(scope, "Constant"),
                                cast<ElementsAttr>(attr));
}

OwningOpRef<ModuleOp> PresetBuilder::finish(Value result) {
  func::ReturnOp::create(opBuilder,
                         NameLoc::get(opBuilder.getStringAttr("output"),
                                      FileLineColLoc::get(fileName, 0, 0)),
                         result);
  if (failed(verify(*module)))
    return nullptr;
  return std::move(module);
}

//===----------------------------------------------------------------------===//
// Option checks
//===----------------------------------------------------------------------===//

namespace {
/// One size option as the command line spells it.
struct SizeOption {
  const char *flag;
  int64_t value;
  int64_t max;
};
} // namespace

/// Caps that keep every shape product below 2^63 and the IR buildable: the
/// GPT's causal mask is a materialized [seq-len, seq-len] constant and every
/// block is unrolled.
static constexpr int64_t kMaxSize = int64_t(1) << 24;
static constexpr int64_t kMaxDepth = 16384;
static constexpr int64_t kMaxSeqLen = 8192;
static constexpr int64_t kMaxElementsLog2 = 40;

static LogicalResult checkSizes(Location loc, ArrayRef<SizeOption> sizes) {
  for (const SizeOption &size : sizes) {
    if (size.value <= 0)
      return emitError(loc)
             << "--" << size.flag << " must be positive, got " << size.value;
    if (size.value > size.max)
      return emitError(loc) << "--" << size.flag << " must be at most "
                            << size.max << ", got " << size.value;
  }
  return success();
}

/// Fails if a tensor of one of `shapes` would hold more than
/// 2^kMaxElementsLog2 elements.
static LogicalResult checkTensorSizes(Location loc, StringRef preset,
                                      ArrayRef<SmallVector<int64_t>> shapes) {
  for (ArrayRef<int64_t> shape : shapes) {
    int64_t elements = 1;
    for (int64_t dim : shape) {
      if (llvm::MulOverflow(elements, dim, elements) ||
          elements > (int64_t(1) << kMaxElementsLog2))
        return emitError(loc)
               << "preset '" << preset
               << "' is too large with these options: a "
               << nn::formatShape(shape) << " tensor would have more than 2^"
               << kMaxElementsLog2 << " elements";
    }
  }
  return success();
}

static LogicalResult checkMLPOptions(Location loc, const PresetOptions &o) {
  if (failed(checkSizes(loc, {{"depth", o.depth, kMaxDepth},
                              {"width", o.width, kMaxSize},
                              {"batch", o.batch, kMaxSize},
                              {"in-features", o.inFeatures, kMaxSize},
                              {"classes", o.classes, kMaxSize}})))
    return failure();
  return checkTensorSizes(loc, "mlp",
                          {{o.batch, o.inFeatures},
                           {o.width, o.inFeatures},
                           {o.batch, o.width},
                           {o.width, o.width},
                           {o.classes, o.width},
                           {o.batch, o.classes}});
}

static LogicalResult checkGPTOptions(Location loc, const PresetOptions &o) {
  if (failed(checkSizes(loc, {{"depth", o.depth, kMaxDepth},
                              {"width", o.width, kMaxSize},
                              {"heads", o.heads, kMaxSize},
                              {"seq-len", o.seqLen, kMaxSeqLen},
                              {"batch", o.batch, kMaxSize},
                              {"vocab", o.vocab, kMaxSize}})))
    return failure();
  if (o.width % o.heads != 0)
    return emitError(loc) << "--width " << o.width
                          << " is not divisible by --heads " << o.heads;
  return checkTensorSizes(loc, "gpt",
                          {{o.vocab, o.width},
                           {4 * o.width, o.width},
                           {o.batch, o.seqLen, 4 * o.width},
                           {o.batch, o.heads, o.seqLen, o.seqLen},
                           {o.batch, o.seqLen, o.vocab}});
}

static LogicalResult checkResNetOptions(Location loc, const PresetOptions &o) {
  if (failed(checkSizes(loc, {{"depth", o.depth, kMaxDepth},
                              {"width", o.width, kMaxSize >> 2},
                              {"batch", o.batch, kMaxSize},
                              {"classes", o.classes, kMaxSize},
                              {"image-size", o.imageSize, kMaxSize}})))
    return failure();
  // The second and third stages halve the image.
  if (o.imageSize < 4)
    return emitError(loc) << "--image-size must be at least 4, got "
                          << o.imageSize;
  return checkTensorSizes(loc, "resnet",
                          {{o.batch, o.width, o.imageSize, o.imageSize},
                           {4 * o.width, 4 * o.width, 3, 3},
                           {o.classes, 4 * o.width},
                           {o.batch, 3, o.imageSize, o.imageSize}});
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

std::vector<std::string> mlir::gpipe::presetNames() {
  return {"mlp", "gpt", "resnet"};
}

PresetOptions mlir::gpipe::getPresetDefaults(StringRef name) {
  PresetOptions options;
  if (name == "resnet") {
    options.depth = 3;
    options.width = 16;
    options.batch = 32;
  }
  return options;
}

OwningOpRef<ModuleOp> mlir::gpipe::buildPreset(MLIRContext *context,
                                               StringRef name,
                                               const PresetOptions &options) {
  Location loc = UnknownLoc::get(context);
  if (name == "mlp") {
    if (failed(checkMLPOptions(loc, options)))
      return nullptr;
    return buildMLP(context, options);
  }
  if (name == "gpt") {
    if (failed(checkGPTOptions(loc, options)))
      return nullptr;
    return buildGPT(context, options);
  }
  if (name == "resnet") {
    if (failed(checkResNetOptions(loc, options)))
      return nullptr;
    return buildResNet(context, options);
  }
  InFlightDiagnostic diag = emitError(loc) << "unknown preset '" << name
                                           << "' (known presets: ";
  llvm::interleaveComma(presetNames(), diag);
  diag << ")";
  return nullptr;
}
