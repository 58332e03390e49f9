//===- Transforms.h - gpipe pipeline transformations ------------*- C++ -*-===//
//
// The work of the `gpipe` passes as functions on one pipeline, so that the
// compiler driver and tests call them without building a pass pipeline: the
// passes are thin drivers over these.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_TRANSFORMS_TRANSFORMS_H
#define GPIPE_DIALECT_GPIPE_TRANSFORMS_TRANSFORMS_H

#include "gpipe/Analysis/CostModel.h"
#include "gpipe/Analysis/MeasuredProfile.h"
#include "gpipe/Analysis/MemoryPlan.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/StageBuffers.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace mlir::gpipe {

/// The generator family of `kind`, the one of the same enumerator
/// (gpipe/Analysis/ScheduleFamilies.def). `custom` has none: it maps to
/// GPipe, so check for it first.
ScheduleFamily getScheduleFamily(ScheduleKind kind);

/// The bubble fraction of `pipeline`'s own schedule in closed form, where
/// the literature gives one (`getClosedFormIdleTime`): its family's on K =
/// stages / V ranks (V its `virtual_stages`) with M micro-batches and the
/// uniform durations that `stages` average to (`getStageDurations`: F the
/// mean forward, I = W half the mean backward), idle / (idle + V M (F + I +
/// W)). std::nullopt for `custom`, for a family or shape without one, and
/// under remat `stage` for the zero-bubble families (their closed forms
/// leave out the recompute before each I); gpipe, 1f1b and interleaved-1f1b
/// keep theirs there, the recompute adding to every backward alike.
std::optional<double> getScheduleClosedFormBubble(PipelineOp pipeline,
                                                  ArrayRef<StageOp> stages);

/// Fills the empty body of `pipeline` with the programs of a generated
/// schedule of family `kind` for its stages on stages / V ranks (V its
/// `virtual_stages`) and sets its `schedule` attribute. Errors at the
/// pipeline: already scheduled, a `custom` kind, a shape the family does not
/// accept, a stage without the split backward the family needs, a generator
/// failure.
LogicalResult generateSchedule(PipelineOp pipeline, ScheduleKind kind,
                               SymbolTableCollection *symbolTable = nullptr);

/// Runs the schedule verifier on the programs of `pipeline` and reports each
/// finding at the action it names (see `emitScheduleProblems`). Returns the
/// verified schedule, read through `schedules`, which remembers the verdict:
/// a pipeline verified before (by an earlier pass that preserved the
/// analysis) is not verified again.
FailureOr<const PipelineSchedule *>
verifyPipelineSchedule(PipelineOp pipeline, ScheduleAnalysis &schedules);

/// How `importSchedule` treats sends and receives.
enum class CommunicationMode { Auto, Keep, Insert };

/// Replaces the programs of `pipeline` with the schedule in PyTorch CSV
/// `text`, read from `fileName` (for locations and messages), and sets its
/// schedule to `custom`. See `gpipe-import-schedule`.
LogicalResult importSchedule(PipelineOp pipeline, StringRef text,
                             StringRef fileName, CommunicationMode mode,
                             SymbolTableCollection *symbolTable = nullptr);

/// A stage function's frame as the memory plan laid it out.
struct PlannedFrame {
  func::FuncOp func;
  FunctionLiveness liveness;
  StageFunctionBuffers buffers;
};

/// A scheduled pipeline's memory plan with what it was computed from.
struct PipelineMemoryPlan {
  PipelineSchedule schedule;
  /// The stages' sizes, from their declarations and functions.
  MemoryPlanInput input;
  /// Every buffer of every rank at its arena offset.
  MemoryPlan plan;
  /// The frames of the stage functions with a body, planned once: their
  /// scratch sizes are in `input`, their layouts go into the IR.
  std::vector<PlannedFrame> frames;
};

/// Plans the memory of scheduled `pipeline` (verifying its schedule first):
/// what `gpipe-plan-memory` records and the code generator lays out;
/// `reservedBytes` per rank and `parameterOffsets` per stage as
/// MemoryPlanInput's; each send slot gets up to `sendBuffers` staging
/// copies (chooseSendBuffering with the stages' times). Errors at the
/// pipeline or the offending action.
FailureOr<PipelineMemoryPlan> planPipelineMemory(
    PipelineOp pipeline, OptimizerKind optimizer, int64_t alignment,
    ScheduleAnalysis &schedules, ArrayRef<int64_t> reservedBytes = {},
    ArrayRef<int64_t> parameterOffsets = {}, int64_t sendBuffers = 0);

/// The IR spelling of the planner's buffer kinds.
SlotKind getSlotKind(BufferKind kind);

/// The pipeline named `name` in `module`, or its only pipeline when `name`
/// is empty; an error at the module otherwise.
FailureOr<PipelineOp> findPipeline(ModuleOp module, StringRef name);

//===----------------------------------------------------------------------===//
// Partition (gpipe-partition)
//===----------------------------------------------------------------------===//

/// The shape and policies of the pipeline `gpipe-partition` builds: its
/// options, checked and with the schedule's defaults filled in.
struct PartitionOptions {
  /// The name of the pipeline; stage k is `<name>_s<k>`.
  std::string pipelineName = "train";
  /// Ranks K and stages per rank V: the network is cut into K x V stages.
  int64_t ranks = 1;
  int64_t virtualStages = 1;
  /// Micro-batches M per mini-batch and data-parallel replicas D.
  int64_t microbatches = 1;
  int64_t replicas = 1;
  ScheduleKind schedule = ScheduleKind::GPipe;
  /// What a stage keeps for its backward (`none` for a forward-only one).
  Remat remat = Remat::Stage;
  /// remat `selective`: the layers whose activations the backward
  /// recomputes.
  SmallVector<StringAttr> recomputeLayers;
  /// Whether each backward is also built in halves (input gradient, weight
  /// gradient): asked for, or needed by the schedule.
  bool splitBackward = false;
  /// Inference: stage forwards only, GPipe's forward half.
  bool forwardOnly = false;
  /// The pipeline's clip_grad_norm; 0: none.
  double clipGradNorm = 0.0;
  /// The optimizer, whose update a machine profile times.
  OptimizerKind optimizer = OptimizerKind::SGD;

  int64_t getNumStages() const { return ranks * virtualStages; }
};

/// The network as the partitioner sees it: a chain of layers, then the loss.
struct LayerChain {
  func::FuncOp func;
  /// The `nn.layer` ops, each reading the previous one's output alone.
  SmallVector<nn::LayerOp> layers;
  /// Ops after the last layer (the loss); they join the last stage.
  SmallVector<Operation *> tail;
  /// Arguments the tail reads that no layer does (the labels).
  SmallVector<BlockArgument> tailArgs;
};

/// Checks that `func` is a chain of single-input, single-result layers
/// followed by the loss, and splits it. Errors at the function or the
/// offending op.
FailureOr<LayerChain> readLayerChain(func::FuncOp func);

/// The work of the `nn` ops under `root` (a layer, or a stage's function)
/// for the cost model: the cost interface's totals, and each op with its
/// GEMM, the bytes it streams and its kernel calls. An elementwise op that
/// nn-fuse-elementwise will join to its producer makes no call of its own
/// and streams no intermediate it shares with the rest of the loop.
OpCostData getCostData(Operation *root);

/// A chain's per-layer estimates for one micro-batch.
struct LayerChainCosts {
  /// The device the times are for; its link is the measured one when a
  /// profile gave one.
  DeviceProfile device;
  /// Each layer's forward, backward and recompute times and each cut's.
  LayerCosts costs;
  /// Each layer's memory: its weights (and their gradients in training)
  /// plus one micro-batch of its activations.
  std::vector<int64_t> memory;
  /// The optimizer whose update the step times.
  OptimizerKind optimizer = OptimizerKind::SGD;
  /// The measurement read from a profile file, for this pipeline's
  /// micro-batch size and ranks; std::nullopt without one.
  std::optional<ProfileMeasurement> measured;

  /// Seconds the profile measured outside the layers for actions of `kind`
  /// ("forward", "backward", "backward_input", "backward_weight"); 0
  /// without a profile.
  double getOverhead(StringRef kind) const;
};

/// Estimates each layer of `chain` on `device` with the cost model under
/// `options`' remat policy, or takes the times of the profile at
/// `profileFile` (measured by gpipe-run --profile) when it is not empty.
/// Errors (an unreadable profile, a layer it lacks, a cost model failure)
/// at the network function or the layer; a profile measured under other
/// conditions is warned about.
FailureOr<LayerChainCosts> estimateLayerCosts(const LayerChain &chain,
                                              const DeviceProfile &device,
                                              const PartitionOptions &options,
                                              StringRef profileFile);

/// Chooses the stages of `chain`: `balance` layers per stage when it is not
/// empty, else the contiguous partition into `options`' number of stages
/// whose slowest stage (boundary transfers included) is fastest, each
/// within `memoryBudget` (a size such as 16GiB; std::nullopt: no cap).
/// Returns the first layer of each stage and, last, the number of layers.
/// Errors at the network function: an empty or unreadable budget, a
/// balance of another length, no partition that fits.
FailureOr<std::vector<int>>
chooseStageBoundaries(const LayerChain &chain, const LayerChainCosts &costs,
                      const PartitionOptions &options,
                      ArrayRef<int64_t> balance,
                      std::optional<StringRef> memoryBudget);

/// Builds the forward `name` of the stage of layers [begin, end) of `chain`
/// at `builder`: a function of the stage input. The last stage (`end` past
/// the last layer) also runs the tail on the tail's arguments, taken after
/// the input, and returns the network's result.
func::FuncOp buildStageForward(OpBuilder &builder, const LayerChain &chain,
                               size_t begin, size_t end, StringRef name);

/// Where a stage sits and how its backward is built.
struct StageBackwardOptions {
  /// The first stage's input is the data and the last stage's other
  /// arguments are the loss's: neither has a gradient to send.
  bool first = false;
  bool last = false;
  /// The last stage's seed scale (the loss's share of the mini-batch).
  double lossScale = 1.0;
  Remat remat = Remat::Stage;
  /// remat `selective`: the layers the backward recomputes.
  ArrayRef<StringAttr> recomputeLayers;
  /// Also build the backward's input and weight halves.
  bool split = false;
};

/// The backward functions of one stage.
struct StageBackward {
  func::FuncOp backward;
  /// The input-gradient and weight-gradient halves of `backward`; null
  /// unless split.
  func::FuncOp input, weight;

  /// The last of them in the module.
  func::FuncOp getLast() const { return weight ? weight : backward; }
};

/// Builds `<stageName>_bwd`, the backward of stage forward `forward`, right
/// after it: reverse mode over a recompute of the forward (remat `stage`,
/// `selective`'s layers; wrapped in a `gpipe.remat` region) or over values
/// the forward is rewritten to save (remat `none`), without the gradients
/// nobody receives; with `split`, also its halves `<stageName>_bwd_input`
/// and `<stageName>_bwd_weight`. Errors where differentiation fails.
FailureOr<StageBackward>
buildStageBackward(func::FuncOp forward, StringRef stageName,
                   const StageBackwardOptions &options);

/// The estimated times of one stage, in seconds per micro-batch.
struct StageTimes {
  double forward = 0;
  /// Training: the backward (recompute included) and, split, its halves.
  std::optional<double> backward, input, weight;
  /// The replicas' all-reduce of the stage's gradients (more than one
  /// replica) and the optimizer's update (a measured rate).
  std::optional<double> reduce, step;
};

/// Estimates the stage of layers [begin, end) of `chain` with built
/// backward `backward` (null for a forward-only stage), run on `replicas`
/// replicas: the layers' times plus the profile's action overheads.
StageTimes estimateStageTimes(const LayerChain &chain,
                              const LayerChainCosts &costs, int begin, int end,
                              const StageBackward *backward, int64_t replicas);

/// Declares `gpipe.stage @name` number `index` at `builder`: its boundary
/// types from `forward`, its functions and its times.
StageOp declareStage(OpBuilder &builder, StringRef name, int64_t index,
                     func::FuncOp forward, const StageBackward *backward,
                     const StageTimes &times);

/// Declares the pipeline of `stages` at `builder`, at `loc`, with the shape
/// and policies of `options` and an empty body for a schedule to fill.
PipelineOp declarePipeline(OpBuilder &builder, Location loc,
                           const PartitionOptions &options,
                           ArrayRef<StageOp> stages);

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_TRANSFORMS_TRANSFORMS_H
