//===- gpipe-compile.cpp - Compile a model to a pipeline library -*- C++ -*-===//
//
// The ahead-of-time compiler driver: a model (ONNX, nn IR, or a built-in
// preset) -> the gpipe-pipeline pass pipeline (layers, loss, micro-batches,
// partition into K stages, schedule, verification, memory plan) -> the
// plan report -> convert-gpipe-to-runtime -> LLVM IR -> object -> a shared
// library that gpipe-run trains. `--emit` stops at any stage and writes
// that stage's form instead.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Conversion/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/InitAllDialects.h"
#include "gpipe/Pipelines/Pipelines.h"
#include "gpipe/Target/SharedLibrary.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/ToolOutputFile.h"

#include "../common/ModelOptions.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("gpipe-compile options");

static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init(""),
                                       cl::cat(category));
static cl::opt<int64_t> stages("stages", cl::desc("Pipeline stages K"),
                               cl::init(1), cl::cat(category));
static cl::opt<int64_t>
    microbatches("microbatches",
                 cl::desc("Micro-batches M per mini-batch (must divide it)"),
                 cl::init(1), cl::cat(category));
static cl::opt<std::string> schedule("schedule", cl::desc("gpipe or 1f1b"),
                                     cl::init("gpipe"), cl::cat(category));
static cl::opt<std::string>
    remat("remat",
          cl::desc("stage (keep stage inputs, recompute in backward) or none"),
          cl::init("stage"), cl::cat(category));
static cl::list<int64_t> balance("balance",
                                 cl::desc("Layers per stage, e.g. 3,3,2"),
                                 cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string>
    memoryBudget("memory-budget",
                 cl::desc("Memory cap per rank, e.g. 512MiB (checked)"),
                 cl::init(""), cl::cat(category));
static cl::opt<std::string> loss("loss", cl::desc("cross-entropy or mse"),
                                 cl::init("cross-entropy"), cl::cat(category));
static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("Optimizer state to reserve: sgd, momentum or adam"),
              cl::init("sgd"), cl::cat(category));
static cl::opt<std::string> profile("profile",
                                    cl::desc("Cost model device: cpu, h200 "
                                             "or h200-bf16 (what h200 means "
                                             "with --precision bf16)"),
                                    cl::init("cpu"), cl::cat(category));
static cl::opt<std::string>
    granularity("granularity",
                cl::desc("Layer granularity: scope (default), anchor or op"),
                cl::init("scope"), cl::cat(category));
static cl::opt<std::string>
    emit("emit",
         cl::desc("Stop at: nn, pipeline (partitioned), scheduled (planned), "
                  "llvm (LLVM dialect), ir (LLVM IR), obj, so (default)"),
         cl::init("so"), cl::cat(category));
static cl::opt<std::string>
    target("target",
           cl::desc("Kernel library the code calls: cpu (default) or cuda"),
           cl::init("cpu"), cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("GEMM arithmetic: fp32 (default) or bf16 (bf16 inputs, fp32 "
             "accumulation; parameters, gradients and other ops stay fp32)"),
    cl::init("fp32"), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Do not print the plan report"),
                           cl::cat(category));

namespace {
enum class Stop { NN, Pipeline, Scheduled, LLVM, IR, Object, Library };
}

static std::optional<Stop> parseStop(StringRef name) {
  return llvm::StringSwitch<std::optional<Stop>>(name)
      .Case("nn", Stop::NN)
      .Case("pipeline", Stop::Pipeline)
      .Case("scheduled", Stop::Scheduled)
      .Case("llvm", Stop::LLVM)
      .Case("ir", Stop::IR)
      .Case("obj", Stop::Object)
      .Case("so", Stop::Library)
      .Default(std::nullopt);
}

/// Where the model came from, for the library's metadata.
static std::string describeSource() {
  using namespace gpipe_tools;
  if (!preset.empty())
    return "preset " + preset;
  return llvm::sys::path::filename(inputFile).str();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&category, &gpipe_tools::getModelCategory(),
                            &gpipe_tools::getPresetCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "gpipe-compile: model -> K-stage GPipe pipeline -> shared library\n");

  DialectRegistry registry;
  mlir::gpipe::registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  auto toolHandler = gpipe_tools::reportUnlocatedAs(context, "gpipe-compile");
  auto fail = [&](const Twine &message) {
    emitError(UnknownLoc::get(&context)) << message;
    return 1;
  };

  if (target != "cpu" && target != "cuda")
    return fail("unknown --target '" + target + "' (expected cpu or cuda)");
  if (precision != "fp32" && precision != "bf16")
    return fail("unknown --precision '" + precision +
                "' (expected fp32 or bf16)");
  std::optional<Stop> stop = parseStop(emit);
  if (!stop)
    return fail("unknown --emit '" + emit +
                "' (expected nn, pipeline, scheduled, llvm, ir, obj or so)");
  if (outputFile.empty()) {
    if (*stop == Stop::Library || *stop == Stop::Object)
      return fail("no output: give -o model.so (or -o - with --emit of a "
                  "text form)");
    outputFile = "-";
  }
  if (*stop == Stop::Library && outputFile == "-")
    return fail("a shared library cannot be written to standard output");

  auto started = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> module = gpipe_tools::loadModel(context, sourceMgr);
  if (!module)
    return 1;

  std::string error;
  auto writeText = [&](auto print) -> int {
    std::unique_ptr<llvm::ToolOutputFile> output =
        openOutputFile(outputFile, &error);
    if (!output) {
      llvm::errs() << "gpipe-compile: error: " << error << "\n";
      return 1;
    }
    if (failed(print(output->os())))
      return 1;
    output->keep();
    return 0;
  };
  if (*stop == Stop::NN)
    return writeText([&](llvm::raw_ostream &os) {
      module->print(os);
      return success();
    });

  mlir::gpipe::GPipePipelineOptions options;
  options.stages = stages;
  options.microbatches = microbatches;
  options.schedule = schedule;
  options.remat = remat;
  for (int64_t b : balance)
    options.balance.push_back(b);
  options.memoryBudget = memoryBudget;
  options.loss = loss;
  // bf16 GEMMs run on the H200's tensor cores.
  options.profile = precision == "bf16" && StringRef(profile).equals_insensitive("h200")
                        ? std::string("h200-bf16")
                        : std::string(profile);
  options.optimizer = optimizer;
  options.granularity = granularity;

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  mlir::gpipe::buildGPipePipeline(pm, options, *stop == Stop::Pipeline);
  if (*stop != Stop::Pipeline && !quiet)
    pm.addPass(mlir::gpipe::createGPipePlanReportPass());
  if (*stop != Stop::Pipeline && *stop != Stop::Scheduled) {
    mlir::gpipe::ConvertGPipeToRuntimePassOptions lower;
    lower.source = describeSource();
    lower.target = target;
    lower.precision = precision;
    pm.addPass(mlir::gpipe::createConvertGPipeToRuntimePass(lower));
  }
  if (failed(pm.run(*module)))
    return 1;

  int rc = 0;
  switch (*stop) {
  case Stop::NN:
  case Stop::Pipeline:
  case Stop::Scheduled:
  case Stop::LLVM:
    rc = writeText([&](llvm::raw_ostream &os) {
      module->print(os);
      return success();
    });
    break;
  case Stop::IR:
    rc = writeText(
        [&](llvm::raw_ostream &os) { return mlir::gpipe::emitLLVMIR(*module, os); });
    break;
  case Stop::Object: {
    std::unique_ptr<llvm::ToolOutputFile> output =
        openOutputFile(outputFile, &error);
    if (!output) {
      llvm::errs() << "gpipe-compile: error: " << error << "\n";
      return 1;
    }
    if (failed(mlir::gpipe::emitObject(*module, output->os())))
      return 1;
    output->keep();
    break;
  }
  case Stop::Library:
    if (failed(mlir::gpipe::emitSharedLibrary(*module, outputFile)))
      return 1;
    break;
  }
  if (rc == 0 && !quiet && outputFile != "-") {
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    llvm::outs() << "wrote " << outputFile << " in "
                 << llvm::format("%.2f", seconds) << " s\n";
  }
  return rc;
}
