//===- PlanMemory.cpp - Plan each rank's arena ------------------*- C++ -*-===//
//
// Implements `gpipe-plan-memory`: derives every stage's sizes from its
// declaration and its functions (parameters from the `nn.param` reads of the
// forward and the module's `nn.parameter` types; boundary activations from
// the stage types; working sets from a liveness walk over the forward and
// backward bodies), runs the memory planner (gpipe/Analysis/MemoryPlan.h)
// over the scheduled programs, attaches the arena size, the peak and its
// breakdown to every `gpipe.program` and a summary to the pipeline, and
// rejects a plan whose arena exceeds the memory budget.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/MemoryPlan.h"
#include "gpipe/Analysis/Partition.h"
#include "gpipe/Analysis/Timeline.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/StageBuffers.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/GPipe/Utils/TiedParameters.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPEPLANMEMORYPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

//===----------------------------------------------------------------------===//
// Sizes from the IR
//===----------------------------------------------------------------------===//

namespace {

/// A stage's sizes and the facts behind them, for the plan and the summary.
struct StageSizes {
  StageMemory memory;
  /// Functions without a body (their working sets count as 0).
  SmallVector<StringRef> declarations;
  /// The frame of every stage function with a body.
  std::vector<PlannedFrame> frames;
};

} // namespace

/// Bytes of the distinct parameters `func` reads (nested layers included):
/// the types of its `nn.param` reads, which the verifier holds equal to the
/// declarations' (no symbol lookups: linear in the function's size).
static int64_t getParameterBytes(func::FuncOp func) {
  llvm::DenseSet<StringRef> seen;
  int64_t bytes = 0;
  func.walk([&](nn::ParamOp param) {
    if (seen.insert(param.getName()).second)
      bytes += getValueBytes(param.getType());
  });
  return bytes;
}

/// Plans the frame of `func`, the forward or backward of stage `index` (of
/// `numStages`) that takes `numForwardArgs` arguments (the forward's, then
/// the values it saves) before the seeds; keeps it in `frames` when the
/// function has a body. Returns its scratch bytes.
static int64_t planFrame(func::FuncOp func, StageFunctionKind kind,
                         int64_t index, int64_t numStages,
                         unsigned numForwardArgs, int64_t alignment,
                         std::vector<PlannedFrame> &frames) {
  FunctionLiveness liveness(func);
  StageFunctionBuffers buffers = planStageFunction(
      func, liveness, kind, index, numStages, numForwardArgs, alignment);
  int64_t bytes = buffers.scratchBytes;
  if (!func.isExternal())
    frames.push_back({func, std::move(liveness), std::move(buffers)});
  return bytes;
}

/// The sizes of `stage` (position `index` of `numStages`).
static FailureOr<StageSizes> getStageSizes(StageOp stage, int64_t index,
                                           int64_t numStages, Remat remat,
                                           int64_t alignment, ModuleOp module,
                                           SymbolTableCollection &symbols) {
  StageSizes sizes;
  StageMemory &m = sizes.memory;
  auto lookup = [&](FlatSymbolRefAttr ref) -> func::FuncOp {
    if (!ref)
      return nullptr;
    return symbols.lookupNearestSymbolFrom<func::FuncOp>(stage, ref);
  };
  func::FuncOp forward = lookup(stage.getForwardAttr());
  func::FuncOp backward = lookup(stage.getBackwardAttr());
  if (!forward || (!backward && stage.hasBackward()))
    return stage.emitError("stage @")
               << stage.getSymName()
               << " does not name its forward and backward functions",
           failure();
  bool last = index + 1 == numStages;
  // Inference: the forward's parameters, input, output and working set.
  if (!backward) {
    m.inputBytes = getPayloadBytes(stage.getInputType());
    m.outputBytes = last ? 0 : getPayloadBytes(stage.getOutputType());
    m.paramBytes = getParameterBytes(forward);
    m.forwardScratch =
        planFrame(forward, StageFunctionKind::Forward, index, numStages,
                  /*numForwardArgs=*/0, alignment, sizes.frames);
    if (forward.isExternal())
      sizes.declarations.push_back(forward.getSymName());
    return sizes;
  }
  m.inputBytes = getPayloadBytes(stage.getInputType());
  m.outputBytes = last ? 0 : getPayloadBytes(stage.getOutputType());
  FunctionType forwardType = forward.getFunctionType();
  for (unsigned i = 1; i < forwardType.getNumInputs(); ++i)
    m.extraInputBytes += getValueBytes(forwardType.getInput(i));

  // Parameters: what the forward reads; a declared forward falls back to the
  // parameters the backward lists gradients for.
  m.paramBytes = getParameterBytes(forward);
  if (forward.isExternal())
    if (auto grads = backward->getAttrOfType<ArrayAttr>("nn.param_grads"))
      for (Attribute ref : grads)
        if (auto sym = dyn_cast<FlatSymbolRefAttr>(ref))
          if (auto p = module.lookupSymbol<nn::ParameterOp>(sym.getValue()))
            m.paramBytes += getValueBytes(p.getType());

  // Forward: the output goes into its own buffer except on the last stage.
  m.forwardScratch =
      planFrame(forward, StageFunctionKind::Forward, index, numStages,
                /*numForwardArgs=*/0, alignment, sizes.frames);
  FunctionLiveness forwardLiveness(forward);
  SmallVector<Value> forwardReturned = forwardLiveness.getReturned();
  bool keep = remat != Remat::Stage;
  // A forward built for remat none returns the values its backward reads
  // (its last nn.saved_count results): exactly those are kept. Without the
  // count, everything the forward defines is.
  unsigned numSaved = 0;
  if (auto count = forward->getAttrOfType<IntegerAttr>("nn.saved_count"))
    numSaved = static_cast<unsigned>(count.getInt());
  if (keep && numSaved > 0 && forwardReturned.size() > numSaved) {
    llvm::DenseSet<Value> counted;
    for (Value v : ArrayRef<Value>(forwardReturned).take_back(numSaved))
      if (counted.insert(v).second)
        m.savedBytes += getValueBytes(v.getType());
  } else if (keep) {
    m.savedBytes = forwardLiveness.getTotal([](Value) { return false; });
  }

  // A backward that takes saved values reads them after the forward's
  // arguments; its seeds follow them.
  unsigned numForwardArgs = forwardType.getNumInputs() + numSaved;
  auto planBackward = [&](func::FuncOp func) {
    return planFrame(func, StageFunctionKind::Backward, index, numStages,
                     numForwardArgs, alignment, sizes.frames);
  };
  m.backwardScratch = planBackward(backward);
  if (func::FuncOp input = lookup(stage.getBackwardInputAttr())) {
    m.backwardInputScratch = planBackward(input);
    SmallVector<int64_t> offsets;
    m.deferredBytes = getDeferredLayout(input, offsets);
    if (input.isExternal())
      sizes.declarations.push_back(input.getSymName());
  }
  if (func::FuncOp weight = lookup(stage.getBackwardWeightAttr())) {
    m.backwardWeightScratch = planBackward(weight);
    if (weight.isExternal())
      sizes.declarations.push_back(weight.getSymName());
  }
  if (forward.isExternal())
    sizes.declarations.push_back(forward.getSymName());
  if (backward.isExternal())
    sizes.declarations.push_back(backward.getSymName());
  return sizes;
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

static std::string describeBytes(int64_t bytes) {
  std::string text = formatBytes(bytes);
  if (text != std::to_string(bytes) + " B")
    text += " (" + std::to_string(bytes) + " bytes)";
  return text;
}

static std::string describeStages(const Schedule &schedule, int rank) {
  std::vector<int> stages = schedule.getStagesOfRank(rank);
  std::string text = stages.size() == 1 ? "stage" : "stages";
  for (size_t i = 0; i < stages.size(); ++i)
    text += (i ? ", " : " ") + std::to_string(stages[i]);
  return text;
}

static BreakdownAttr getBreakdownAttr(MLIRContext *ctx,
                                      const MemoryBreakdown &breakdown) {
  return BreakdownAttr::get(ctx, breakdown.parameters, breakdown.gradients,
                            breakdown.optimizerState, breakdown.keptActivations,
                            breakdown.scratch, breakdown.boundary);
}

SlotKind mlir::gpipe::getSlotKind(BufferKind kind) {
  switch (kind) {
  case BufferKind::Parameters:
    return SlotKind::Parameters;
  case BufferKind::Gradients:
    return SlotKind::Gradients;
  case BufferKind::OptimizerState:
    return SlotKind::OptimizerState;
  case BufferKind::Input:
    return SlotKind::Input;
  case BufferKind::ExtraInput:
    return SlotKind::ExtraInput;
  case BufferKind::Saved:
    return SlotKind::Saved;
  case BufferKind::Deferred:
    return SlotKind::Deferred;
  case BufferKind::Output:
    return SlotKind::Output;
  case BufferKind::OutputGrad:
    return SlotKind::OutputGrad;
  case BufferKind::InputGrad:
    return SlotKind::InputGrad;
  case BufferKind::Scratch:
    return SlotKind::Scratch;
  case BufferKind::Reduce:
    return SlotKind::Reduce;
  case BufferKind::Tied:
    return SlotKind::Tied;
  case BufferKind::Norm:
    return SlotKind::Norm;
  case BufferKind::StagedOutput:
    return SlotKind::StagedOutput;
  case BufferKind::StagedInputGrad:
    return SlotKind::StagedInputGrad;
  }
  return SlotKind::Scratch;
}

/// Writes `gpipe.frame` on `func` and `gpipe.offsets` on the ops of its body
/// from `buffers`.
static void annotateFrame(func::FuncOp func, const FunctionLiveness &liveness,
                          const StageFunctionBuffers &buffers) {
  MLIRContext *ctx = func.getContext();
  Builder b(ctx);
  func->setAttr(GPipeDialect::kFrameAttrName,
                FrameAttr::get(ctx, buffers.scratchBytes,
                               b.getDenseI64ArrayAttr(buffers.seedOffsets)));
  for (Operation *op : liveness.getOps()) {
    if (op->getNumResults() == 0)
      continue;
    SmallVector<int64_t> offsets;
    bool any = false;
    for (Value result : op->getResults()) {
      int64_t offset = -1;
      if (auto routed = buffers.routed.find(result);
          routed != buffers.routed.end()) {
        offset = -2 - static_cast<int64_t>(routed->second);
      } else if (auto it = buffers.offsets.find(result);
                 it != buffers.offsets.end()) {
        offset = it->second;
      }
      any |= offset != -1;
      offsets.push_back(offset);
    }
    if (any)
      op->setAttr(GPipeDialect::kOffsetsAttrName,
                  b.getDenseI64ArrayAttr(offsets));
    else
      op->removeAttr(GPipeDialect::kOffsetsAttrName);
  }
}

namespace {

struct GPipePlanMemoryPass
    : public mlir::gpipe::impl::GPipePlanMemoryPassBase<GPipePlanMemoryPass> {
  using GPipePlanMemoryPassBase::GPipePlanMemoryPassBase;

  void runOnOperation() override;
  LogicalResult planPipeline(PipelineOp pipeline, OptimizerKind optimizer,
                             std::optional<int64_t> budget,
                             ScheduleAnalysis &schedules);
};

} // namespace

FailureOr<PipelineMemoryPlan> mlir::gpipe::planPipelineMemory(
    PipelineOp op, OptimizerKind optimizer, int64_t alignment,
    ScheduleAnalysis &schedules, ArrayRef<int64_t> reservedBytes,
    ArrayRef<int64_t> parameterOffsets, int64_t sendBuffers) {
  if (!op.isScheduled())
    return emitPipelineError(op) << "has no programs to plan; run "
                                    "gpipe-schedule or gpipe-import-schedule "
                                    "first";
  FailureOr<const PipelineSchedule *> converted =
      verifyPipelineSchedule(op, schedules);
  if (failed(converted))
    return failure();
  SymbolTableCollection &symbols = schedules.getSymbolTable();
  PipelineMemoryPlan result;
  result.schedule = **converted;
  const Schedule &schedule = result.schedule.schedule;

  ModuleOp module = op->getParentOfType<ModuleOp>();
  MemoryPlanInput &input = result.input;
  input.verified = true; // verifyPipelineSchedule above
  input.optimizer = optimizer;
  input.replicas = op.getNumReplicas();
  input.alignment = alignment;
  input.reservedBytes.assign(reservedBytes.begin(), reservedBytes.end());
  input.parameterOffsets.assign(parameterOffsets.begin(),
                                parameterOffsets.end());
  input.remat =
      op.getRemat() == Remat::Stage ? RematPolicy::Stage : RematPolicy::None;
  int64_t numStages = result.schedule.stages.size();
  for (auto [index, stage] : llvm::enumerate(result.schedule.stages)) {
    FailureOr<StageSizes> sizes =
        getStageSizes(stage, static_cast<int64_t>(index), numStages,
                      op.getRemat(), alignment, module, symbols);
    if (failed(sizes))
      return failure();
    if (!sizes->declarations.empty()) {
      InFlightDiagnostic diag = emitWarning(stage.getLoc(), "stage @")
                                << stage.getSymName() << ": ";
      llvm::interleaveComma(sizes->declarations, diag,
                            [&](StringRef name) { diag << "@" << name; });
      diag << (sizes->declarations.size() == 1 ? " has" : " have")
           << " no body; the memory plan counts no working set for "
           << (sizes->declarations.size() == 1 ? "it" : "them");
    }
    input.stages.push_back(sizes->memory);
    for (PlannedFrame &frame : sizes->frames)
      result.frames.push_back(std::move(frame));
  }
  std::vector<int64_t> tiedBytes =
      getTiedReceiveBytes(result.schedule.stages, schedule.stageToRank);
  for (size_t s = 0; s < tiedBytes.size() && s < input.stages.size(); ++s)
    input.stages[s].tiedBytes = tiedBytes[s];

  if (sendBuffers > 0)
    input.sendBuffering = chooseSendBuffering(
        schedule, getStageDurations(result.schedule.stages),
        static_cast<int>(std::min<int64_t>(sendBuffers, 1 << 20)));
  result.plan = planMemory(schedule, input);
  if (!result.plan.ok())
    return emitPipelineError(op)
           << "cannot plan its memory: " << result.plan.error;
  return result;
}

LogicalResult GPipePlanMemoryPass::planPipeline(PipelineOp op,
                                                OptimizerKind optimizer,
                                                std::optional<int64_t> budget,
                                                ScheduleAnalysis &schedules) {
  FailureOr<PipelineMemoryPlan> planned = planPipelineMemory(
      op, optimizer, alignment, schedules, reserve, paramOffsets, sendBuffers);
  if (failed(planned))
    return failure();
  // Staging copies are worth time, not the budget: a plan they push over it
  // is planned again with every transfer a rendezvous.
  if (budget && planned->input.sendBuffering.any() &&
      llvm::any_of(planned->plan.ranks, [&](const RankMemoryPlan &rank) {
        return rank.arenaBytes > *budget;
      })) {
    FailureOr<PipelineMemoryPlan> rendezvous =
        planPipelineMemory(op, optimizer, alignment, schedules, reserve,
                           paramOffsets, /*sendBuffers=*/0);
    if (failed(rendezvous))
      return failure();
    planned = std::move(rendezvous);
  }
  const Schedule &schedule = planned->schedule.schedule;
  const MemoryPlanInput &input = planned->input;
  const MemoryPlan &plan = planned->plan;

  MLIRContext *ctx = op.getContext();
  int64_t maxPeak = 0, maxArena = 0;
  SmallVector<ProgramOp, 8> programs = op.getPrograms();
  for (auto [r, program] : llvm::enumerate(programs)) {
    const RankMemoryPlan &rank = plan.ranks[r];
    maxPeak = std::max(maxPeak, rank.peakBytes);
    maxArena = std::max(maxArena, rank.arenaBytes);
    SmallVector<SlotAttr> slots;
    for (const PlannedSlot &slot : rank.slots)
      slots.push_back(SlotAttr::get(ctx, getSlotKind(slot.kind), slot.stage,
                                    slot.offset, slot.size, slot.count,
                                    slot.stride, slot.table));
    program.setArenaAttr(
        ArenaAttr::get(ctx, rank.arenaBytes, rank.peakBytes, rank.peakAction,
                       getBreakdownAttr(ctx, rank.atPeak), slots));
  }
  // Every stage function's frame: where each value of one micro-batch's
  // run lives in the scratch region (the lowering places values there and
  // decides nothing itself).
  for (const PlannedFrame &frame : planned->frames)
    annotateFrame(frame.func, frame.liveness, frame.buffers);
  SmallVector<int64_t> kept;
  for (int s = 0; s < schedule.numStages; ++s) {
    int rank = schedule.getRankOfStage(s);
    kept.push_back(rank >= 0 ? plan.ranks[rank].peakKeptMicrobatches[s] : 0);
  }
  op.setMemoryPlanAttr(MemoryPlanAttr::get(ctx, optimizer, input.alignment,
                                           budget.value_or(0), maxPeak,
                                           maxArena, kept));

  if (!budget)
    return success();
  // Exact: the budget is held against the arenas the lowering allocates.
  bool fits = true;
  size_t largest = 0;
  for (size_t r = 0; r < plan.ranks.size(); ++r)
    if (plan.ranks[r].arenaBytes > plan.ranks[largest].arenaBytes)
      largest = r;
  for (size_t r = 0; r < plan.ranks.size(); ++r) {
    const RankMemoryPlan &rank = plan.ranks[r];
    if (rank.arenaBytes <= *budget)
      continue;
    fits = false;
    const MemoryBreakdown &at = rank.atPeak;
    InFlightDiagnostic diag = emitPipelineError(op);
    diag << "rank " << r << " ("
         << describeStages(schedule, static_cast<int>(r)) << ") needs "
         << describeBytes(rank.arenaBytes)
         << " of memory, over the memory budget of " << describeBytes(*budget);
    std::string action = rank.peakAction >= 0
                             ? toString(schedule.ranks[r][rank.peakAction])
                             : std::string("-");
    diag.attachNote() << "its arena holds a peak of "
                      << describeBytes(rank.peakBytes) << " live at action "
                      << rank.peakAction << " (" << action << "): parameters "
                      << formatBytes(at.parameters) << ", gradients "
                      << formatBytes(at.gradients) << ", optimizer state "
                      << formatBytes(at.optimizerState) << ", kept activations "
                      << formatBytes(at.keptActivations) << ", scratch "
                      << formatBytes(at.scratch) << ", send/receive buffers "
                      << formatBytes(at.boundary);
    diag.attachNote() << "the smallest budget this configuration fits is "
                      << describeBytes(plan.ranks[largest].arenaBytes)
                      << " (rank " << largest << "'s arena); gpipe-compile "
                      << "--autotune finds the fastest configuration that "
                      << "fits a budget";
  }
  return success(fits);
}

void GPipePlanMemoryPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<OptimizerKind> kind = OptimizerKind(optimizer);
  int64_t align = alignment;
  if (align < 1 || (align & (align - 1)) != 0) {
    emitError(module.getLoc(), "gpipe-plan-memory: alignment ")
        << align << " is not a power of two";
    return signalPassFailure();
  }
  std::optional<int64_t> budget;
  if (memoryBudget.empty() && memoryBudget.getNumOccurrences() > 0) {
    emitError(module.getLoc(), "gpipe-plan-memory: ") << kEmptyMemoryBudget;
    return signalPassFailure();
  }
  if (!memoryBudget.empty()) {
    budget = parseBytes(memoryBudget);
    if (!budget) {
      emitError(module.getLoc(), "gpipe-plan-memory: cannot read memory "
                                 "budget '")
          << memoryBudget << "' (expected a size such as 16GiB)";
      return signalPassFailure();
    }
  }
  for (int64_t bytes : reserve)
    if (bytes < 0) {
      emitError(module.getLoc(), "gpipe-plan-memory: reserve ")
          << bytes << " is negative";
      return signalPassFailure();
    }
  if (sendBuffers < 0) {
    emitError(module.getLoc(), "gpipe-plan-memory: send-buffers ")
        << static_cast<int64_t>(sendBuffers)
        << " is negative (0: every transfer a rendezvous)";
    return signalPassFailure();
  }
  auto &schedules = getAnalysis<ScheduleAnalysis>();
  bool failed = false;
  for (PipelineOp pipeline :
       llvm::to_vector(module.getBody()->getOps<PipelineOp>()))
    if (mlir::failed(planPipeline(pipeline, *kind, budget, schedules)))
      failed = true;
  if (failed)
    signalPassFailure();
}
