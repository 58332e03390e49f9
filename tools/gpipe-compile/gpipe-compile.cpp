//===- gpipe-compile.cpp - Compile a model to a pipeline library -*- C++
//-*-===//
//
// The ahead-of-time compiler driver: loads a model (ONNX, nn IR, or a
// built-in preset), runs the compile lib/Pipelines defines (the
// gpipe-pipeline pass pipeline: layers, loss, micro-batches, partition into K
// stages, schedule, verification, memory plan; the plan report;
// convert-gpipe-to-rt, convert-rt-to-llvm) and writes the form `--emit` stops
// at, by default the shared library gpipe-run trains. Its compile flags are the
// options of GPipeCompileOptions, parsed straight into that struct.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/CostModel.h"
#include "gpipe/Analysis/MeasuredProfile.h"
#include "gpipe/Analysis/Partition.h"
#include "gpipe/InitAllDialects.h"
#include "gpipe/Pipelines/Autotune.h"
#include "gpipe/Pipelines/Pipelines.h"
#include "gpipe/Runtime/MachineFile.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include "../common/ModelOptions.h"
#include "../common/OutOfMemory.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("gpipe-compile options");

static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init(""),
                                       cl::cat(category));

/// Where the model came from, for the library's metadata.
/// The line that says which machine profile timed the ops (empty: none).
static std::string machineSummary;

static std::string describeSource() {
  using namespace gpipe_tools;
  if (!preset.empty())
    return "preset " + preset;
  return llvm::sys::path::filename(inputFile).str();
}

using mlir::gpipe::GPipeCompileOptions;

/// Settles --machine-file: `none` turns it off; not given, the default
/// machine profile (MachineFile.h) when it exists and the compile is timed
/// by the cpu profile at fp32 without a measured one. A file given that
/// cannot be read is an error (the message, or empty); the default one is
/// skipped with a warning, so a stale file never stops a compile. A
/// profile measured on another host is used with a warning.
static std::string resolveMachineFile(GPipeCompileOptions &options) {
  std::string &file = options.machineFile;
  if (file == "none") {
    file.clear();
    return "";
  }
  bool fp32 = options.precision == mlir::gpipe::PrecisionKind::FP32;
  bool cpu = options.target == mlir::gpipe::TargetKind::CPU &&
             options.getEffectiveProfile() == mlir::gpipe::ProfileKind::CPU;
  bool implicit = file.empty();
  if (implicit) {
    std::string fallback = ::gpipe::abi::getDefaultMachineFile();
    if (!cpu || !fp32 || !options.profileFile.empty() || fallback.empty() ||
        !llvm::sys::fs::exists(fallback))
      return "";
    file = fallback;
  } else if (!cpu) {
    return "--machine-file times the CPU kernels; this compile is " +
           (options.target != mlir::gpipe::TargetKind::CPU
                ? "for --target " +
                      std::string(mlir::gpipe::getTargetName(options.target))
                : std::string("timed by another --profile")) +
           " (leave it out, or compile for --target cpu --profile cpu)";
  } else if (!fp32) {
    return "--machine-file holds fp32 kernel rates; this compile is "
           "--precision bf16, whose GEMMs round their operands first (leave "
           "it out, or measure the model with gpipe-run --profile)";
  }
  std::string error;
  std::shared_ptr<const mlir::gpipe::MachineModel> machine =
      mlir::gpipe::MachineModel::load(file, error);
  if (!machine) {
    if (!implicit)
      return error;
    llvm::errs() << "gpipe-compile: warning: not using the default " << error
                 << "\n";
    file.clear();
    return "";
  }
  llvm::SmallString<256> host;
  if (char name[256] = {0}; gethostname(name, sizeof name - 1) == 0)
    host = name;
  if (!machine->host.empty() && !host.empty() && machine->host != host)
    llvm::errs() << "gpipe-compile: warning: machine profile '" << file
                 << "' was measured on host '" << machine->host
                 << "', this is '" << host
                 << "' (measure this one with gpipe-calibrate)\n";
  machineSummary = "cost model: kernel rates of " + file + " (" +
                   (machine->cpu.empty() ? "this CPU" : machine->cpu) + ", " +
                   std::to_string(machine->cores) + " cores, measured " +
                   machine->created + ")";
  return "";
}

/// The flag combinations that are errors before anything is loaded (the
/// target's own rules, the budget given empty, inference, the profile's
/// target and precision, the output): the message, or empty. Settles the
/// output file.
static std::string checkFlags(GPipeCompileOptions &options) {
  // Given empty is not the same as not given (no budget).
  if (options.memoryBudget.empty() &&
      options.memoryBudget.getNumOccurrences() > 0)
    return mlir::gpipe::kEmptyMemoryBudget;
  if (std::string error = mlir::gpipe::getInferenceOptionError(options);
      !error.empty())
    return error;

  // A measured profile is of one target and precision.
  if (!options.profileFile.empty()) {
    std::string error;
    std::optional<mlir::gpipe::MeasuredProfile> profile =
        mlir::gpipe::MeasuredProfile::read(options.profileFile, error);
    if (!profile)
      return error;
    const char *target = mlir::gpipe::getTargetName(options.target);
    const char *precision = mlir::gpipe::getPrecisionName(options.precision);
    if (profile->target != target || profile->precision != precision)
      return "profile '" + options.profileFile + "' was measured on " +
             profile->target + " " + profile->precision +
             "; this compile is for " + target + " " + precision +
             " (measure with a model compiled for it)";
  }

  if (std::string error = resolveMachineFile(options); !error.empty())
    return error;

  mlir::gpipe::CompileStage stop = options.emit;
  if (outputFile.empty()) {
    if (!mlir::gpipe::isTextStage(stop))
      return "no output: give -o model.so (or -o - with --emit of a text "
             "form)";
    outputFile = "-";
  }
  if (stop == mlir::gpipe::CompileStage::Library && outputFile == "-")
    return "a shared library cannot be written to standard output";
  return "";
}

/// The flags that choose the plan (budget, recomputation, the autotuner's
/// range), checked once the model is loaded: the message, or empty. Sets
/// `budget` from --memory-budget.
static std::string checkPlanFlags(const GPipeCompileOptions &options,
                                  std::optional<int64_t> &budget) {
  if (!options.memoryBudget.empty()) {
    budget = mlir::gpipe::parseBytes(options.memoryBudget);
    if (!budget)
      return "cannot read memory budget '" + options.memoryBudget +
             "' (expected a size such as 16GiB)";
  }
  if (!options.recomputeLayers.empty() &&
      options.remat != mlir::gpipe::Remat::Selective)
    return "--recompute-layers names the layers --remat selective "
           "recomputes; give --remat selective";
  if (options.remat == mlir::gpipe::Remat::Auto &&
      (!budget || options.autotune || options.inference))
    return options.autotune
               ? "--autotune searches remat stage and none; --remat auto "
                 "chooses layers for one configuration: give one of them"
           : options.inference
               ? "--remat has no meaning with --inference: nothing is "
                 "kept for a backward (there is none)"
               : "--remat auto chooses the layers to recompute to fit "
                 "--memory-budget; give a budget";
  if (options.maxStages.getNumOccurrences() > 0 && !options.autotune)
    return "--max-stages is the range --autotune searches; give "
           "--autotune or --stages";
  if (options.autotune && !options.scheduleFile.empty())
    return "--autotune searches the generated schedules; it cannot take "
           "--schedule-file";
  // An imported schedule is the whole schedule: a family named beside it
  // would be dropped (and zbv's implied two stages per rank with it).
  if (!options.scheduleFile.empty() && options.schedule.getNumOccurrences() > 0)
    return "give the schedule once: --schedule " +
           mlir::gpipe::stringifyScheduleKind(options.schedule).str() +
           " or --schedule-file " + options.scheduleFile.getValue() +
           ", not both";
  // 0 is the schedule's own V when the option is left out; given, it is a
  // value like any other and must be at least 1.
  if (options.virtualStages.getNumOccurrences() > 0 &&
      options.virtualStages < 1)
    return "--virtual-stages must be at least 1, got " +
           std::to_string(options.virtualStages);
  if (options.autotune && options.maxStages.getNumOccurrences() > 0) {
    if (options.maxStages < 1)
      return "--max-stages must be at least 1, got " +
             std::to_string(options.maxStages);
    if (options.stages.getNumOccurrences() > 0)
      return "--max-stages searches the ranks; leave --stages out";
  }
  return "";
}

/// --autotune: searches, prints the report, and sets `options` to the
/// pick, which then compiles like any other configuration.
static LogicalResult autotuneInto(ModuleOp module, GPipeCompileOptions &options,
                                  std::optional<int64_t> budget,
                                  TimingScope &timing) {
  gpipe_tools::outOfMemoryDoing = "searching configurations";
  TimingScope searching = timing.nest("autotune");
  std::optional<int64_t> maxStages;
  if (options.maxStages.getNumOccurrences() > 0)
    maxStages = int64_t(options.maxStages);
  FailureOr<mlir::gpipe::AutotuneResult> tuned =
      mlir::gpipe::autotune(module, options, budget, maxStages);
  searching.stop();
  if (failed(tuned))
    return failure();
  mlir::gpipe::printAutotuneReport(*tuned, budget, llvm::outs());
  llvm::outs().flush();
  const mlir::gpipe::AutotuneCandidate *best = tuned->getBest();
  if (!best)
    return emitError(UnknownLoc::get(module.getContext()))
           << (budget ? "autotune: no configuration fits the memory budget "
                        "of " +
                            mlir::gpipe::formatBytes(*budget)
                      : std::string("autotune: no configuration compiles"));
  llvm::outs() << "autotune: compiling " << best->getFlags() << "\n";
  llvm::outs().flush();
  mlir::gpipe::applyAutotuneChoice(options, *best);
  return success();
}

/// --remat auto: sets `options` to the fewest layers to recompute that fit
/// the budget.
static LogicalResult chooseRecomputation(ModuleOp module,
                                         GPipeCompileOptions &options,
                                         int64_t budget, TimingScope &timing) {
  gpipe_tools::outOfMemoryDoing = "choosing the layers to recompute";
  TimingScope choosing = timing.nest("remat auto");
  FailureOr<mlir::gpipe::RecomputeChoice> choice =
      mlir::gpipe::chooseRecomputeLayers(module, options, budget, llvm::outs());
  choosing.stop();
  llvm::outs().flush();
  if (failed(choice))
    return failure();
  options.remat = choice->remat;
  options.recomputeLayers = ArrayRef<std::string>(choice->layers);
  return success();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  gpipe_tools::installOutOfMemoryHandler("gpipe-compile");
  // Past a file-size limit a write fails with EFBIG and takes its error
  // path (temporaries removed) instead of the signal killing the compiler;
  // the linker it runs inherits this.
  std::signal(SIGXFSZ, SIG_IGN);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  gpipe_tools::addDebugOption();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  GPipeCompileOptions options;
  options.registerAsCommandLineFlags(category);
  cl::HideUnrelatedOptions({&category, &gpipe_tools::getModelCategory(),
                            &gpipe_tools::getPresetCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "gpipe-compile: model -> K-stage GPipe pipeline -> shared library\n\n"
      "  Trains by default; --inference builds the forward-only pipeline\n"
      "  (no loss, no backward; batch norm with its running statistics,\n"
      "  dropout the identity) that `gpipe-run --predict` runs.\n");

  DialectRegistry registry;
  mlir::gpipe::registerAllDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext context(registry);
  gpipe_tools::configureDiagnostics(context);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  auto toolHandler = gpipe_tools::reportUnlocatedAs(context, "gpipe-compile");
  auto fail = [&](const Twine &message) {
    emitError(UnknownLoc::get(&context)) << message;
    return 1;
  };

  // The fused loops are host code: a CUDA model keeps its kernels (the
  // autotuner's plans too).
  if (options.target != mlir::gpipe::TargetKind::CPU)
    options.fuse = false;
  // A CUDA model's sends stay rendezvous (its transports do not stage device
  // memory): no staging copies to plan nor to predict with.
  if (options.target != mlir::gpipe::TargetKind::CPU)
    options.sendBuffers = 0;
  if (std::string error = checkFlags(options); !error.empty())
    return fail(error);

  auto started = std::chrono::steady_clock::now();
  // --mlir-timing: the load, every pass and the back end's phases.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();
  gpipe_tools::outOfMemoryDoing = "loading the model";
  TimingScope loading = timing.nest("load the model");
  OwningOpRef<ModuleOp> module =
      gpipe_tools::loadModel(context, sourceMgr, options.inference);
  loading.stop();
  if (!module)
    return 1;
  options.source = describeSource();

  std::optional<int64_t> budget;
  if (std::string error = checkPlanFlags(options, budget); !error.empty())
    return fail(error);
  if (options.autotune &&
      failed(autotuneInto(*module, options, budget, timing)))
    return 1;
  if (options.remat == mlir::gpipe::Remat::Auto &&
      failed(chooseRecomputation(*module, options, *budget, timing)))
    return 1;

  // The driver's pass manager: its command-line instrumentation and timing.
  auto runPasses = [&](ModuleOp target,
                       function_ref<void(OpPassManager &)> build) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    pm.enableTiming(timing);
    build(pm);
    return pm.run(target);
  };
  gpipe_tools::outOfMemoryDoing = "compiling the pipeline";
  if (!options.quiet && !machineSummary.empty() && outputFile != "-")
    llvm::outs() << machineSummary << "\n";
  if (options.eval) {
    auto loadInference = [&] {
      return gpipe_tools::loadModel(context, sourceMgr, /*inference=*/true);
    };
    if (failed(mlir::gpipe::compileWithEvaluation(*module, options,
                                                  loadInference, runPasses)))
      return 1;
  } else if (failed(runPasses(*module, [&](OpPassManager &pm) {
               mlir::gpipe::buildGPipeCompilePipeline(pm, options);
             }))) {
    return 1;
  }
  gpipe_tools::outOfMemoryDoing = "writing the output";
  if (failed(mlir::gpipe::writeCompileOutput(*module, options.emit, outputFile,
                                             timing)))
    return 1;

  if (!options.quiet && outputFile != "-" &&
      options.emit != mlir::gpipe::CompileStage::NN) {
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    llvm::outs() << "wrote " << outputFile << " in "
                 << llvm::format("%.2f", seconds) << " s\n";
  }
  return 0;
}
