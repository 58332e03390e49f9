//===- ModelOptions.h - Command-line model selection for tools --*- C++ -*-===//
//
// The command-line options every gpipe tool that takes a model shares: a
// model file (.onnx, or .mlir / .mlirbc holding nn IR) or a built-in
// preset with its size options, and `--dim` for symbolic ONNX dims; plus
// `loadModel`, which turns them into an nn module; and how the tools report
// errors that have no source location. Included once per tool
// (it defines the static options).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_TOOLS_COMMON_MODELOPTIONS_H
#define GPIPE_TOOLS_COMMON_MODELOPTIONS_H

#include "gpipe/Frontend/ONNXImporter.h"
#include "gpipe/Frontend/Presets.h"

#include "gpipe/Support/ResourceBlobs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <string>

namespace gpipe_tools {

namespace cl = llvm::cl;
using namespace mlir;

inline cl::OptionCategory &getModelCategory() {
  static cl::OptionCategory category("model options");
  return category;
}

static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<model.onnx | model.mlir>"),
                                      cl::init(""),
                                      cl::cat(getModelCategory()));
static cl::opt<std::string>
    preset("preset",
           cl::desc("Build a built-in model instead (mlp, gpt, resnet)"),
           cl::init(""), cl::cat(getModelCategory()));
static cl::list<std::string>
    dims("dim", cl::desc("Size of a symbolic ONNX input dim, NAME=SIZE"),
         cl::value_desc("NAME=SIZE"), cl::cat(getModelCategory()));
static cl::list<std::string> frozen(
    "freeze",
    cl::desc("Keep these ONNX float initializers constant instead of "
             "training them (glob patterns, comma-separated): buffers an "
             "exporter folded into weight-like initializers"),
    cl::value_desc("PATTERN,..."), cl::CommaSeparated,
    cl::cat(getModelCategory()));

inline cl::OptionCategory &getPresetCategory() {
  static cl::OptionCategory category("preset options");
  return category;
}
static mlir::gpipe::PresetOptions presetDefaults;
#define PRESET_OPT(VAR, FLAG, DESC)                                            \
  static cl::opt<int64_t> VAR(FLAG, cl::desc(DESC),                            \
                              cl::init(presetDefaults.VAR),                    \
                              cl::cat(getPresetCategory()));
PRESET_OPT(depth, "depth",
           "Hidden layers (mlp), transformer blocks (gpt) or residual blocks "
           "(resnet, default 3)")
PRESET_OPT(width, "width",
           "Hidden features (mlp), model dim (gpt) or first-stage channels "
           "(resnet, default 16)")
PRESET_OPT(heads, "heads", "Attention heads (gpt)")
PRESET_OPT(seqLen, "seq-len", "Tokens per sample (gpt)")
PRESET_OPT(batch, "batch", "Samples per mini-batch (resnet: default 32)")
PRESET_OPT(vocab, "vocab", "Vocabulary size (gpt)")
PRESET_OPT(inFeatures, "in-features", "Input features (mlp)")
PRESET_OPT(classes, "classes", "Output classes (mlp, resnet)")
PRESET_OPT(imageSize, "image-size", "Image height and width (resnet)")
#undef PRESET_OPT
static cl::opt<bool> tieEmbeddings(
    "tie-embeddings",
    cl::desc("The head reuses the token embedding as its weight (gpt; the "
             "two layers' copies are kept equal across stages)"),
    cl::init(false), cl::cat(getPresetCategory()));

/// The --debug flag, when this file registered it.
inline cl::opt<bool> *&getDebugOption() {
  static cl::opt<bool> *option = nullptr;
  return option;
}

/// Registers --debug ("after an error, also print the operation it is
/// attached to"), unless LLVM registered its own -debug (a build with
/// assertions), which then does the same here. Call before parsing the
/// command line.
inline void addDebugOption() {
  if (cl::getRegisteredOptions().count("debug"))
    return;
  static cl::opt<bool> debug(
      "debug",
      cl::desc("After an error, also print the operation it is attached to "
               "(for some errors a whole function or module)"),
      cl::init(false), cl::cat(getModelCategory()));
  getDebugOption() = &debug;
}

/// A located error says what is wrong and where; the operation it is
/// attached to (often a whole function, tens of KB of generic IR) follows
/// only with --debug, or with MLIR's own --mlir-print-op-on-diagnostic
/// given explicitly. Call after the context is made from the flags.
inline void configureDiagnostics(MLIRContext &context) {
  auto &options = cl::getRegisteredOptions();
  auto it = options.find("mlir-print-op-on-diagnostic");
  if (it != options.end() && it->second->getNumOccurrences() > 0)
    return;
  bool debug = false;
  if (cl::opt<bool> *ours = getDebugOption())
    debug = *ours;
  else if (auto llvm = options.find("debug"); llvm != options.end())
    debug = llvm->second->getNumOccurrences() > 0;
  context.printOpOnDiagnostic(debug);
}

/// Makes diagnostics without a source location (command-line errors) read
/// "<tool>: error: ..." instead of "<unknown>:0: error: ...". Keep the
/// handler alive as long as the context reports.
inline std::unique_ptr<ScopedDiagnosticHandler>
reportUnlocatedAs(MLIRContext &context, std::string tool) {
  return std::make_unique<ScopedDiagnosticHandler>(
      &context, [tool](Diagnostic &diag) {
        if (!isa<UnknownLoc>(diag.getLocation()))
          return failure();
        llvm::errs() << tool << ": "
                     << (diag.getSeverity() == DiagnosticSeverity::Error
                             ? "error: "
                             : "note: ")
                     << diag << "\n";
        return success();
      });
}

/// Fails, naming the first, if a preset size flag was given that the model
/// does not use: one of another preset, or any with a model file (whose
/// sizes are its own); and `--dim` with anything but an ONNX file.
inline LogicalResult checkUnusedModelFlags(MLIRContext &context) {
  struct SizeFlag {
    const cl::opt<int64_t> &option;
    bool mlp, gpt, resnet;
  };
  const SizeFlag flags[] = {
      {depth, true, true, true},        {width, true, true, true},
      {heads, false, true, false},      {seqLen, false, true, false},
      {batch, true, true, true},        {vocab, false, true, false},
      {inFeatures, true, false, false}, {classes, true, false, true},
      {imageSize, false, false, true}};
  auto usedBy = [](const SizeFlag &flag) -> std::string {
    std::string names;
    for (auto [used, name] :
         {std::pair{flag.mlp, "mlp"}, std::pair{flag.gpt, "gpt"},
          std::pair{flag.resnet, "resnet"}})
      if (used)
        names += (names.empty() ? "" : "|") + std::string(name);
    return "--preset " + names;
  };
  if (preset.empty() && inputFile.empty())
    return success(); // loadModel says there is no model
  bool isMLP = preset == "mlp", isGPT = preset == "gpt",
       isResNet = preset == "resnet";
  for (const SizeFlag &flag : flags) {
    if (flag.option.getNumOccurrences() == 0)
      continue;
    if (preset.empty())
      return emitError(UnknownLoc::get(&context))
             << "--" << flag.option.ArgStr << " applies to " << usedBy(flag)
             << " only; a model file has its own sizes"
             << (StringRef(inputFile).ends_with(".onnx")
                     ? " (--dim NAME=SIZE sets a symbolic ONNX dim)"
                     : "");
    if ((isMLP && !flag.mlp) || (isGPT && !flag.gpt) ||
        (isResNet && !flag.resnet))
      return emitError(UnknownLoc::get(&context))
             << "--" << flag.option.ArgStr << " applies to " << usedBy(flag)
             << " only, not to --preset " << preset;
  }
  if (tieEmbeddings.getNumOccurrences() && !isGPT)
    return emitError(UnknownLoc::get(&context))
           << "--tie-embeddings applies to --preset gpt only"
           << (preset.empty() ? "; a model file ties its own weights"
                              : ", not to --preset " + preset);
  StringRef path = inputFile;
  if (!dims.empty() &&
      (!preset.empty() || path.ends_with(".mlir") || path.ends_with(".mlirbc")))
    return emitError(UnknownLoc::get(&context))
           << "--dim applies to ONNX models only; "
           << (preset.empty() ? "an nn IR file has its own sizes"
                              : "give the preset's sizes with its flags");
  return success();
}

/// Loads the model the options name: a preset, an ONNX file, or nn IR
/// (`.mlir`, `.mlirbc`) parsed with `sourceMgr`; `inference` imports ONNX
/// for an inference pipeline (ONNXImportOptions::inference). Null after
/// reporting an error.
inline OwningOpRef<ModuleOp> loadModel(MLIRContext &context,
                                       llvm::SourceMgr &sourceMgr,
                                       bool inference = false) {
  if (failed(checkUnusedModelFlags(context)))
    return nullptr;
  if (!preset.empty()) {
    if (!inputFile.empty()) {
      emitError(UnknownLoc::get(&context))
          << "give either a model file or --preset, not both";
      return nullptr;
    }
    // The preset's own defaults where a flag is not given.
    mlir::gpipe::PresetOptions options = mlir::gpipe::getPresetDefaults(preset);
    auto take = [](const cl::opt<int64_t> &flag, int64_t &value) {
      if (flag.getNumOccurrences())
        value = flag;
    };
    take(depth, options.depth);
    take(width, options.width);
    take(heads, options.heads);
    take(seqLen, options.seqLen);
    take(batch, options.batch);
    take(vocab, options.vocab);
    take(inFeatures, options.inFeatures);
    take(classes, options.classes);
    take(imageSize, options.imageSize);
    options.tieEmbeddings = tieEmbeddings;
    return mlir::gpipe::buildPreset(&context, preset, options);
  }
  if (inputFile.empty()) {
    emitError(UnknownLoc::get(&context))
        << "no model: give an .onnx or .mlir file or --preset mlp|gpt|resnet";
    return nullptr;
  }
  StringRef path = inputFile;
  if (path.ends_with(".mlir") || path.ends_with(".mlirbc")) {
    std::string error;
    auto file = openInputFile(path, &error);
    if (!file) {
      emitError(UnknownLoc::get(&context)) << error;
      return nullptr;
    }
    llvm::StringRef text = file->getBuffer();
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    // What MLIR's parser would crash on (nesting that exhausts the stack, a
    // zero-aligned blob), refused where it is.
    if (path.ends_with(".mlir"))
      if (auto problem = mlir::gpipe::findUnparsableIR(text)) {
        auto [line, column] = sourceMgr.getLineAndColumn(
            llvm::SMLoc::getFromPointer(text.data() + problem->first));
        emitError(FileLineColLoc::get(&context, path, line, column))
            << problem->second;
        return nullptr;
      }
    return parseSourceFile<ModuleOp>(sourceMgr, &context);
  }
  mlir::gpipe::ONNXImportOptions options;
  options.inference = inference;
  options.frozen.assign(frozen.begin(), frozen.end());
  for (const std::string &d : dims) {
    auto [name, size] = StringRef(d).split('=');
    int64_t value;
    if (name.empty() || size.getAsInteger(10, value) || value <= 0) {
      emitError(UnknownLoc::get(&context))
          << "--dim expects NAME=SIZE with a positive size, got '" << d << "'";
      return nullptr;
    }
    options.dimSizes[name] = value;
  }
  return mlir::gpipe::importONNXFile(&context, path, options);
}

} // namespace gpipe_tools

#endif // GPIPE_TOOLS_COMMON_MODELOPTIONS_H
