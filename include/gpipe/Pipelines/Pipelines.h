//===- Pipelines.h - gpipe's pass pipelines and compile flow ----*- C++ -*-===//
//
// The one definition of the pipeline compiler, its options declared once:
//
// - `GPipePipelineOptions` and `buildGPipePipeline`: nn network -> verified,
//   scheduled, memory-planned gpipe IR; registered for gpipe-opt as
//   `gpipe-pipeline{...}`;
// - `GPipeCompileOptions` and `buildGPipeCompilePipeline` /
//   `writeCompileOutput`: the whole compile, model -> pipeline -> plan report
//   -> convert-gpipe-to-rt -> convert-rt-to-llvm -> LLVM IR -> object ->
//   shared library, stopping at any `CompileStage`; gpipe-compile parses its
//   command line straight into a `GPipeCompileOptions` (the same options, as
//   flags) and calls these.
//
// Every enum-typed option takes its values from the passes' lists, so a bad
// value is rejected by the option parser naming the valid ones.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_PIPELINES_PIPELINES_H
#define GPIPE_PIPELINES_PIPELINES_H

#include "gpipe/Conversion/PassOptions.h"
#include "gpipe/Dialect/GPipe/Transforms/PassOptions.h"
#include "gpipe/Dialect/NN/Transforms/PassOptions.h"
#include "gpipe/Support/EnumOption.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/Timing.h"

#include <string>

namespace mlir::gpipe {

/// The options of `gpipe-pipeline`: what the partition, schedule and memory
/// plan need.
struct GPipePipelineOptions : public PassPipelineOptions<GPipePipelineOptions> {
  Option<int64_t> stages{*this, "stages", llvm::cl::desc("Pipeline stages K"),
                         llvm::cl::init(1)};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Micro-batches M per mini-batch (must divide it)"),
      llvm::cl::init(1)};
  Option<ScheduleKind> schedule{
      *this, "schedule", llvm::cl::desc("Schedule family"),
      llvm::cl::init(ScheduleKind::GPipe), getScheduleKindValues()};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Stages per rank V: the network is cut into K x V "
                     "stages (default: 2 for interleaved-1f1b, zbv, "
                     "dualpipev, v-half and v-min, else 1)"),
      llvm::cl::init(0)};
  Option<int64_t> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Data-parallel replicas D of the K-rank pipeline (K x D "
                     "processes; each takes B/D samples of the mini-batch "
                     "in M micro-batches, and the stages' gradients are "
                     "summed over the replicas before the update)"),
      llvm::cl::init(1)};
  Option<std::string> scheduleFile{
      *this, "schedule-file",
      llvm::cl::desc("Train with this schedule (PyTorch's pipelining CSV: "
                     "one line per rank, cells such as 0F1, 1I0, 1W0) "
                     "instead of a generated one; the network is cut into "
                     "stages x virtual-stages stages, every backward split"),
      llvm::cl::init("")};
  Option<Remat> remat{*this, "remat",
                      llvm::cl::desc("What a stage keeps from its forward "
                                     "for its backward"),
                      llvm::cl::init(Remat::Stage), getRematValues()};
  ListOption<std::string> recomputeLayers{
      *this, "recompute-layers",
      llvm::cl::desc("--remat selective: the layers whose activations the "
                     "backward recomputes (every other layer's are kept), "
                     "e.g. blocks.0,blocks.1")};
  ListOption<int64_t> balance{
      *this, "balance",
      llvm::cl::desc("Layers per stage, e.g. 3,3,2 (manual partition)")};
  Option<std::string> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Memory cap per rank, e.g. 512MiB (checked)"),
      llvm::cl::init("")};
  Option<int64_t> sendBuffers{
      *this, "send-buffers",
      llvm::cl::desc("The most staging copies a send gets so that its rank "
                     "goes on before the receiver is ready (each stage's "
                     "sends get the fewest that keep the predicted step, "
                     "often none; 0: every transfer a rendezvous)"),
      llvm::cl::init(2)};
  Option<nn::LossKind> loss{*this, "loss", llvm::cl::desc("Training loss"),
                            llvm::cl::init(nn::LossKind::CrossEntropy),
                            nn::getLossKindValues()};
  Option<ProfileKind> profile{
      *this, "profile",
      llvm::cl::desc("Cost model device (h200 means h200-bf16 when "
                     "gpipe-compile's --precision is bf16)"),
      llvm::cl::init(ProfileKind::CPU), getProfileKindValues()};
  Option<std::string> profileFile{
      *this, "profile-file",
      llvm::cl::desc("Cost model from a profile gpipe-run --profile "
                     "measured (per-layer times, transfers, optimizer) "
                     "instead of --profile's estimates"),
      llvm::cl::init("")};
  Option<std::string> machineFile{
      *this, "machine-file",
      llvm::cl::desc("Time the ops at the rates gpipe-calibrate measured "
                     "on this machine (GEMMs by shape and threads, "
                     "streaming, row and other kernels, optimizer "
                     "updates, calls) instead of the cpu profile's "
                     "roofline (gpipe-compile: default "
                     "~/.cache/gpipe/machine.json when it exists, none to "
                     "turn it off)"),
      llvm::cl::init("")};
  Option<GemmKind> gemm{
      *this, "gemm",
      llvm::cl::desc("CPU GEMM implementation per shape: auto (the faster "
                     "on the machine profile's grid; OpenBLAS without "
                     "one), openblas or libxsmm"),
      llvm::cl::init(GemmKind::Auto), getGemmKindValues()};
  Option<OptimizerKind> optimizer{
      *this, "optimizer",
      llvm::cl::desc("Optimizer whose state the memory plan reserves"),
      llvm::cl::init(OptimizerKind::SGD), getOptimizerKindValues()};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("Clip the gradients to this global L2 norm before each "
                     "update, as torch.nn.utils.clip_grad_norm_ (a "
                     "gpipe.clip_grad on every rank; the norm's summation "
                     "order is the same for every K); gpipe-run "
                     "--clip-grad-norm changes the bound (0: no clipping)"),
      llvm::cl::init(0.0)};
  Option<bool> inference{
      *this, "inference",
      llvm::cl::desc("Build a forward-only inference pipeline (GPipe's "
                     "forward half): no loss, no backward, no gradients or "
                     "optimizer state; batch norm uses its running "
                     "statistics, dropout is the identity; the output is "
                     "the last stage's logits"),
      llvm::cl::init(false)};
  Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Fuse chains of elementwise ops into one loop each "
                     "(nn-fuse-elementwise; bitwise the same results)"),
      llvm::cl::init(true)};
  Option<bool> fuseAttention{
      *this, "fuse-attention",
      llvm::cl::desc("Fuse each attention's matmul, scale, masks, softmax "
                     "and matmul into one nn.attention (nn-fuse-attention: "
                     "no T x S matrix in memory; within float rounding of "
                     "the unfused ops)"),
      llvm::cl::init(true)};
  Option<nn::LayerGranularity> granularity{
      *this, "granularity", llvm::cl::desc("Layer granularity"),
      llvm::cl::init(nn::LayerGranularity::Scope),
      nn::getLayerGranularityValues()};

  /// Per rank, the bytes at the start of its arena another pipeline keeps
  /// (gpipe-plan-memory's `reserve`; not an option: the evaluation
  /// programs of gpipe-compile --eval set it).
  std::vector<int64_t> reserve;
  /// Per stage, where its parameters go (gpipe-plan-memory's
  /// `param-offsets`; set the same way).
  std::vector<int64_t> paramOffsets;
};

/// nn network (one mini-batch) -> verified, scheduled, memory-planned
/// gpipe.pipeline: canonicalize, nn-form-layers, nn-attach-loss,
/// nn-microbatch, gpipe-partition, gpipe-schedule, gpipe-verify-schedule,
/// gpipe-plan-memory. With `inference`, nn-inference replaces
/// nn-attach-loss and the partition builds the forward-only pipeline
/// `@infer`.
/// With `partitionOnly`, stops after gpipe-partition (an unscheduled
/// pipeline of stage functions).
void buildGPipePipeline(OpPassManager &pm, const GPipePipelineOptions &options,
                        bool partitionOnly = false);

/// Where the compile stops (gpipe-compile's `--emit`), in compile order.
enum class CompileStage {
  NN,        ///< "nn": the model as loaded, before any pass
  Pipeline,  ///< "pipeline": partitioned into stage functions, unscheduled
  Scheduled, ///< "scheduled": scheduled, verified and memory-planned
  RT,        ///< "rt": runtime calls, loops and arithmetic
             ///< (convert-gpipe-to-rt)
  LLVM,      ///< "llvm": the LLVM dialect (convert-rt-to-llvm)
  LLVMIR,    ///< "ir": LLVM IR text
  Object,    ///< "obj": a relocatable object file for the host
  Library,   ///< "so": the shared library gpipe-run loads
};

/// Whether the output of `stage` is text (printable to standard output).
inline bool isTextStage(CompileStage stage) {
  return stage != CompileStage::Object && stage != CompileStage::Library;
}

} // namespace mlir::gpipe

GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::CompileStage)

namespace mlir::gpipe {

/// nn, pipeline, scheduled, rt, llvm, ir, obj, so.
inline llvm::cl::ValuesClass getCompileStageValues() {
  return llvm::cl::values(
      clEnumValN(CompileStage::NN, "nn", "the model as loaded (nn IR)"),
      clEnumValN(CompileStage::Pipeline, "pipeline",
                 "partitioned into stages, unscheduled"),
      clEnumValN(CompileStage::Scheduled, "scheduled",
                 "scheduled, verified and memory-planned"),
      clEnumValN(CompileStage::RT, "rt",
                 "runtime calls (the gpipe_rt form, with func, scf, arith)"),
      clEnumValN(CompileStage::LLVM, "llvm", "the LLVM dialect"),
      clEnumValN(CompileStage::LLVMIR, "ir", "LLVM IR"),
      clEnumValN(CompileStage::Object, "obj", "an object file"),
      clEnumValN(CompileStage::Library, "so", "a shared library"));
}

/// The options of the whole compile: the pipeline's, plus code generation
/// and where to stop.
struct GPipeCompileOptions : public GPipePipelineOptions {
  Option<TargetKind> target{
      *this, "target", llvm::cl::desc("Kernel library the code calls"),
      llvm::cl::init(TargetKind::CPU), getTargetKindValues()};
  Option<PrecisionKind> precision{
      *this, "precision",
      llvm::cl::desc("GEMM arithmetic (bf16: bf16 inputs, fp32 accumulation; "
                     "parameters, gradients and other ops stay fp32)"),
      llvm::cl::init(PrecisionKind::FP32), getPrecisionKindValues()};
  Option<CompileStage> emit{*this, "emit", llvm::cl::desc("Stop at"),
                            llvm::cl::init(CompileStage::Library),
                            getCompileStageValues()};
  Option<bool> quiet{*this, "quiet",
                     llvm::cl::desc("Do not print the plan report"),
                     llvm::cl::init(false)};
  Option<bool> autotune{
      *this, "autotune",
      llvm::cl::desc("Search micro-batches (divisors of the batch), "
                     "schedule, remat and partition for the fastest "
                     "predicted step whose memory plan fits --memory-budget "
                     "on every rank, print the ranking and compile the "
                     "best; --microbatches, --schedule, --remat, "
                     "--virtual-stages and --balance given pin theirs"),
      llvm::cl::init(false)};
  Option<int64_t> maxStages{
      *this, "max-stages",
      llvm::cl::desc("With --autotune: search the ranks K from 1 to this "
                     "too, instead of taking --stages"),
      llvm::cl::init(0)};
  Option<bool> eval{
      *this, "eval",
      llvm::cl::desc("Add forward-only evaluation programs to the training "
                     "library (gpipe-run --eval-data): the inference "
                     "pipeline cut where training cut, reading the training "
                     "parameters in place, its buffers planned above each "
                     "rank's parameters, gradients and optimizer state"),
      llvm::cl::init(false)};

  /// What the model was compiled from, for the library's metadata (not an
  /// option: the driver knows it).
  std::string source;
  /// Lower the (forward-only) pipeline as evaluation programs
  /// (convert-gpipe-to-rt's `evaluation`; not an option: --eval sets it on
  /// the pipeline it adds).
  bool evaluation = false;

  /// The cost-model profile the partition uses: `profile`, except that h200
  /// with bf16 GEMMs is h200-bf16 (the tensor cores' rate).
  ProfileKind getEffectiveProfile() const;

  /// Makes these options command-line flags of the program as well
  /// (`--stages 4 --schedule 1f1b ...`), listed under `category`, so that
  /// llvm::cl::ParseCommandLineOptions fills this struct. Call once, before
  /// parsing, on an object that outlives the parse.
  void registerAsCommandLineFlags(llvm::cl::OptionCategory &category);
};

/// The passes that take an nn module to `options.emit` (nothing for nn):
/// `buildGPipePipeline` (to gpipe-partition only for `pipeline`), the plan
/// report on standard output unless `quiet`, from `rt` on
/// convert-gpipe-to-rt and from `llvm` on convert-rt-to-llvm.
void buildGPipeCompilePipeline(OpPassManager &pm,
                               const GPipeCompileOptions &options);

/// The two halves of `buildGPipeCompilePipeline`: up to `scheduled` (with
/// the plan report), and from there convert-gpipe-to-rt, then, when
/// `options.emit` is `llvm` or later and `throughLLVM`, convert-rt-to-llvm.
void buildGPipePlanningPasses(OpPassManager &pm,
                              const GPipeCompileOptions &options);
void buildGPipeLoweringPasses(OpPassManager &pm,
                              const GPipeCompileOptions &options,
                              bool throughLLVM = true);

/// Runs the passes `build` adds on `module` (the driver's pass manager,
/// with its command-line instrumentation).
using PassRunner = llvm::function_ref<LogicalResult(
    ModuleOp module, llvm::function_ref<void(OpPassManager &)> build)>;

/// gpipe-compile --eval: compiles training `module` to `options.emit`
/// (`rt` or later) with the evaluation programs of the same model, which
/// `loadInference` loads again for a forward-only pipeline, in it. The
/// evaluation pipeline is the inference pipeline cut where training cut (the
/// same layers on every stage) and placed as training placed its stages
/// (the forward half of the same schedule family, one replica), its
/// parameters the training arena's (the same offsets, checked), every other
/// buffer planned above the rank's training parameters, gradients and
/// optimizer state; it is lowered with convert-gpipe-to-rt's `evaluation`
/// and merged into the training module, its metadata the training
/// metadata's `eval`. Errors at the module for what it does not support yet
/// (an imported schedule, the CUDA target).
LogicalResult
compileWithEvaluation(ModuleOp module, const GPipeCompileOptions &options,
                      llvm::function_ref<OwningOpRef<ModuleOp>()> loadInference,
                      PassRunner runPasses);

/// Writes `module`, compiled by `buildGPipeCompilePipeline` to `stage`, to
/// `outputFile` ("-": standard output, text stages only): the IR as text up
/// to `llvm`, then LLVM IR, an object file or the shared library. Errors
/// are reported at the module. The back end's phases are timed under
/// `timing` (gpipe-compile --mlir-timing).
LogicalResult writeCompileOutput(ModuleOp module, CompileStage stage,
                                 llvm::StringRef outputFile,
                                 TimingScope &timing);

/// The first option `options` sets that an inference pipeline refuses
/// ("--schedule 1f1b", "--remat stage", ...) with why, or "" when there is
/// none or `options.inference` is off. A forward-only pipeline is GPipe's
/// forward half: no other schedule, no virtual stages, no imported
/// schedule, no remat policy, loss or optimizer (nothing is trained), and
/// one replica.
std::string getInferenceOptionError(const GPipePipelineOptions &options);

/// Registers `gpipe-pipeline` with the pass registry.
void registerGPipePipelines();

} // namespace mlir::gpipe

#endif // GPIPE_PIPELINES_PIPELINES_H
