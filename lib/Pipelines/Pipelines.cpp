//===- Pipelines.cpp - gpipe's pass pipelines and compile flow ------------===//
//
// Builds the pipeline-compiler pass pipeline and the whole compile from their
// options, and writes a compiled module in the form of its stop point.
// gpipe-opt registers the pipeline as `gpipe-pipeline`; gpipe-compile calls
// buildGPipeCompilePipeline and writeCompileOutput, so there is exactly one
// copy of each.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Pipelines/Pipelines.h"

#include "gpipe/Conversion/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Target/SharedLibrary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::gpipe;

/// Hands the pipeline's `memory-budget` on to `pass` as given: a budget given
/// with an empty value is parsed into the pass's option, so that the pass
/// refuses it, where a budget not given stays "none". (Options set from a
/// struct cannot tell the two apart.)
static std::unique_ptr<Pass>
withMemoryBudget(std::unique_ptr<Pass> pass,
                 const GPipePipelineOptions &options) {
  if (options.memoryBudget.empty() &&
      options.memoryBudget.getNumOccurrences() > 0)
    (void)pass->initializeOptions("memory-budget=",
                                  [](const Twine &) { return failure(); });
  return pass;
}

/// `buildGPipePipeline` with the partition's cost model on `profile`.
static void buildPipeline(OpPassManager &pm,
                          const GPipePipelineOptions &options,
                          ProfileKind profile, bool partitionOnly, bool fuse) {
  // What depends on constants alone (masks, position tables) is computed
  // now, once.
  pm.addPass(nn::createNNFoldConstantsPass());
  pm.addPass(createCanonicalizerPass());
  // Attention chains into nn.attention; their masks into one bias, which
  // the folder makes a constant when they are.
  if (options.fuseAttention) {
    pm.addPass(nn::createNNFuseAttentionPass());
    pm.addPass(nn::createNNFoldConstantsPass());
  }
  // Several model inputs travel as one tensor per sample.
  pm.addPass(nn::createNNPackInputsPass());

  nn::NNFormLayersPassOptions layers;
  layers.granularity = options.granularity;
  pm.addNestedPass<func::FuncOp>(nn::createNNFormLayersPass(layers));

  if (options.inference) {
    pm.addPass(nn::createNNInferencePass());
  } else {
    nn::NNAttachLossPassOptions loss;
    loss.loss = options.loss;
    pm.addPass(nn::createNNAttachLossPass(loss));
  }

  // Before the cut: a weight read by several layers gets a copy per layer
  // whatever K is, so its gradient is summed in one order for every K.
  pm.addPass(nn::createNNCopyTiedParametersPass());

  nn::NNMicrobatchPassOptions microbatch;
  microbatch.microbatches = options.microbatches;
  microbatch.replicas = options.dataParallel;
  pm.addPass(nn::createNNMicrobatchPass(microbatch));

  GPipePartitionPassOptions partition;
  partition.stages = options.stages;
  partition.microbatches = options.microbatches;
  partition.schedule = options.scheduleFile.empty()
                           ? ScheduleKind(options.schedule)
                           : ScheduleKind::Custom;
  partition.virtualStages = options.virtualStages;
  partition.dataParallel = options.dataParallel;
  partition.clipGradNorm = options.clipGradNorm;
  partition.optimizer = options.optimizer;
  // An imported schedule may split any backward.
  partition.splitBackward = !options.scheduleFile.empty();
  partition.remat = options.remat;
  partition.recomputeLayers.assign(options.recomputeLayers.begin(),
                                   options.recomputeLayers.end());
  partition.balance.assign(options.balance.begin(), options.balance.end());
  // The budget is held exactly against the memory plan (gpipe-plan-memory),
  // not against the partition's estimate: see docs/Pipeline.md.
  partition.profile = profile;
  partition.profileFile = options.profileFile;
  partition.machineFile = options.machineFile;
  partition.gemm = options.gemm;
  if (options.inference) {
    partition.forwardOnly = true;
    partition.pipelineName = "infer";
    partition.remat = Remat::None;
  }
  pm.addPass(withMemoryBudget(createGPipePartitionPass(partition), options));
  if (partitionOnly)
    return;

  if (options.scheduleFile.empty()) {
    pm.addPass(createGPipeSchedulePass());
  } else {
    GPipeImportSchedulePassOptions import;
    import.file = options.scheduleFile;
    pm.addPass(createGPipeImportSchedulePass(import));
  }
  pm.addPass(createGPipeVerifySchedulePass());

  // Before the memory plan: the values inside a fused loop need no buffer.
  if (fuse)
    pm.addNestedPass<func::FuncOp>(nn::createNNFuseElementwisePass());

  GPipePlanMemoryPassOptions memory;
  memory.optimizer = options.optimizer;
  memory.memoryBudget = options.memoryBudget;
  memory.sendBuffers = options.sendBuffers;
  memory.reserve.assign(options.reserve.begin(), options.reserve.end());
  memory.paramOffsets.assign(options.paramOffsets.begin(),
                             options.paramOffsets.end());
  pm.addPass(withMemoryBudget(createGPipePlanMemoryPass(memory), options));
}

void mlir::gpipe::buildGPipePipeline(OpPassManager &pm,
                                     const GPipePipelineOptions &options,
                                     bool partitionOnly) {
  buildPipeline(pm, options, options.profile, partitionOnly, options.fuse);
}

std::string
mlir::gpipe::getInferenceOptionError(const GPipePipelineOptions &options) {
  if (!options.inference)
    return "";
  auto given = [](const llvm::cl::Option &option) {
    return option.getNumOccurrences() > 0;
  };
  const char *why = "a forward-only pipeline is GPipe's forward half";
  if (given(options.schedule) && options.schedule != ScheduleKind::GPipe)
    return "--schedule " + stringifyScheduleKind(options.schedule).str() +
           " has no meaning with --inference: " + why +
           " (every schedule's forwards run in the same order); leave "
           "--schedule out";
  if (!options.scheduleFile.empty())
    return std::string("--schedule-file has no meaning with --inference: ") +
           why + ", with no backward to place";
  if (given(options.virtualStages) && options.virtualStages != 1)
    return "--virtual-stages " + std::to_string(options.virtualStages) +
           " is not supported with --inference: " + why +
           ", one stage per rank";
  if (given(options.remat))
    return "--remat has no meaning with --inference: nothing is kept for "
           "a backward (there is none)";
  if (given(options.loss))
    return "--loss has no meaning with --inference: no loss is computed "
           "(the output is the last stage's logits)";
  if (given(options.optimizer))
    return "--optimizer has no meaning with --inference: nothing is "
           "trained, the memory plan holds no gradients or optimizer state";
  if (given(options.clipGradNorm))
    return "--clip-grad-norm has no meaning with --inference: nothing is "
           "trained, there are no gradients to clip";
  if (options.dataParallel != 1)
    return "--data-parallel " + std::to_string(options.dataParallel) +
           " is not supported with --inference yet: compile one replica";
  return "";
}

ProfileKind GPipeCompileOptions::getEffectiveProfile() const {
  if (precision == PrecisionKind::BF16 && profile == ProfileKind::H200)
    return ProfileKind::H200BF16;
  return profile;
}

void GPipeCompileOptions::registerAsCommandLineFlags(
    llvm::cl::OptionCategory &category) {
  // Each option is registered with this struct's own option parser (a
  // subcommand); register it with the program's top level too.
  SmallVector<llvm::cl::Option *> flags;
  for (auto &entry : OptionsMap)
    flags.push_back(entry.second);
  for (llvm::cl::Option *flag : flags) {
    flag->removeArgument();
    flag->addSubCommand(llvm::cl::SubCommand::getTopLevel());
    flag->addCategory(category);
    flag->addArgument();
  }
}

void mlir::gpipe::buildGPipePlanningPasses(OpPassManager &pm,
                                           const GPipeCompileOptions &options) {
  CompileStage stop = options.emit;
  if (stop == CompileStage::NN)
    return;
  // The fused loops are host code: the CUDA target keeps its kernels.
  buildPipeline(pm, options, options.getEffectiveProfile(),
                /*partitionOnly=*/stop == CompileStage::Pipeline,
                options.fuse && options.target == TargetKind::CPU);
  if (stop == CompileStage::Pipeline)
    return;
  if (!options.quiet) {
    GPipePlanReportPassOptions report;
    report.gemm = options.gemm;
    report.machineFile = options.machineFile;
    pm.addPass(createGPipePlanReportPass(report));
  }
}

void mlir::gpipe::buildGPipeLoweringPasses(OpPassManager &pm,
                                           const GPipeCompileOptions &options,
                                           bool throughLLVM) {
  CompileStage stop = options.emit;
  if (stop == CompileStage::NN || stop == CompileStage::Pipeline ||
      stop == CompileStage::Scheduled)
    return;
  ConvertGPipeToRTPassOptions lower;
  lower.source = options.source;
  lower.target = options.target;
  lower.precision = options.precision;
  lower.gemm = options.gemm;
  lower.machineFile = options.machineFile;
  lower.evaluation = options.evaluation;
  pm.addPass(createConvertGPipeToRTPass(lower));
  if (stop == CompileStage::RT || !throughLLVM)
    return;
  pm.addPass(createConvertRTToLLVMPass());
}

void mlir::gpipe::buildGPipeCompilePipeline(
    OpPassManager &pm, const GPipeCompileOptions &options) {
  buildGPipePlanningPasses(pm, options);
  buildGPipeLoweringPasses(pm, options);
}

LogicalResult mlir::gpipe::writeCompileOutput(ModuleOp module,
                                              CompileStage stage,
                                              StringRef outputFile,
                                              TimingScope &timing) {
  if (stage == CompileStage::Library)
    return emitSharedLibrary(module, outputFile, timing);
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFile, &error);
  if (!output)
    return emitError(UnknownLoc::get(module.getContext())) << error;
  switch (stage) {
  case CompileStage::NN:
  case CompileStage::Pipeline:
  case CompileStage::Scheduled:
  case CompileStage::RT:
  case CompileStage::LLVM:
    module.print(output->os());
    break;
  case CompileStage::LLVMIR:
    if (failed(emitLLVMIR(module, output->os())))
      return failure();
    break;
  case CompileStage::Object:
    if (failed(emitObject(module, output->os(), timing)))
      return failure();
    break;
  case CompileStage::Library:
    break;
  }
  // A failed write (a full disk, a file-size limit) is an error, not the
  // stream's fatal error at exit; the unkept output is removed.
  output->os().flush();
  if (std::error_code ec = output->os().error()) {
    output->os().clear_error();
    return emitError(UnknownLoc::get(module.getContext()))
           << "cannot write " << outputFile << ": " << ec.message();
  }
  output->keep();
  return success();
}

void mlir::gpipe::registerGPipePipelines() {
  PassPipelineRegistration<GPipePipelineOptions>(
      "gpipe-pipeline",
      "Compile an nn network into a verified, scheduled GPipe pipeline",
      [](OpPassManager &pm, const GPipePipelineOptions &options) {
        buildGPipePipeline(pm, options);
      });
}
