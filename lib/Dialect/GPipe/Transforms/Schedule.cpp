//===- Schedule.cpp - Generate pipeline schedules ---------------*- C++ -*-===//
//
// Implements `gpipe-schedule`: fills each unscheduled `gpipe.pipeline` with
// the per-rank programs of a GPipe fill-drain or 1F1B schedule, built by the
// plain-C++ generators (gpipe/Analysis/Schedule.h) from the stage count, the
// micro-batch count and the boundary payload sizes of the stage declarations.
// Also `findPipeline`, shared by the passes that work on one pipeline.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/GPipe/Utils/TiedParameters.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPESCHEDULEPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

ScheduleFamily mlir::gpipe::getScheduleFamily(ScheduleKind kind) {
  switch (kind) {
#define GPIPE_SCHEDULE_FAMILY(kind, name, help)                                \
  case ScheduleKind::kind:                                                     \
    return ScheduleFamily::kind;
#include "gpipe/Analysis/ScheduleFamilies.def"
  case ScheduleKind::Custom:
    break;
  }
  return ScheduleFamily::GPipe;
}

std::optional<double>
mlir::gpipe::getScheduleClosedFormBubble(PipelineOp pipeline,
                                         ArrayRef<StageOp> stages) {
  ScheduleKind kind = pipeline.getSchedule();
  int64_t V = pipeline.getNumVirtualStages();
  int64_t numStages = pipeline.getNumStages();
  if (kind == ScheduleKind::Custom || stages.empty() || V < 1 ||
      numStages % V != 0 || static_cast<int64_t>(stages.size()) != numStages)
    return std::nullopt;
  ScheduleFamily family = getScheduleFamily(kind);
  bool recompute = pipeline.getRemat() == Remat::Stage ||
                   pipeline.getRemat() == Remat::Selective;
  // Inference: the forward half of GPipe's fill and drain, whose idle time
  // is (K-1)F against M F of work: GPipe's fraction (K-1)/(M+K-1).
  if (pipeline.isForwardOnly()) {
    double K = static_cast<double>(numStages);
    double M = static_cast<double>(pipeline.getNumMicrobatches());
    return (K - 1) / (M + K - 1);
  }
  if (recompute && family != ScheduleFamily::GPipe &&
      family != ScheduleFamily::OneFOneB &&
      family != ScheduleFamily::Interleaved1F1B)
    return std::nullopt;
  // Recomputing adds a forward to every backward: with B' = B + F the
  // fractions of these three families do not change, so F, I and W are taken
  // as declared.
  ActionDurations durations = getStageDurations(stages);
  double forward = 0, backward = 0;
  for (int s = 0; s < static_cast<int>(stages.size()); ++s) {
    forward += durations.get(ActionKind::Forward, s);
    backward += durations.get(ActionKind::Backward, s);
  }
  forward /= static_cast<double>(stages.size());
  backward /= static_cast<double>(stages.size());
  int K = static_cast<int>(numStages / V);
  int M = static_cast<int>(pipeline.getNumMicrobatches());
  std::optional<double> idle = getClosedFormIdleTime(
      family, K, static_cast<int>(V), M, forward, backward / 2, backward / 2);
  if (!idle)
    return std::nullopt;
  double work = static_cast<double>(V) * M * (forward + backward);
  return *idle / (*idle + work);
}

LogicalResult
mlir::gpipe::generateSchedule(PipelineOp pipeline, ScheduleKind kind,
                              SymbolTableCollection *symbolTable) {
  if (pipeline.isScheduled())
    return emitPipelineError(pipeline)
           << "is already scheduled; gpipe-schedule fills "
              "only pipelines with an empty body";
  if (kind == ScheduleKind::Custom)
    return emitPipelineError(pipeline)
           << "has schedule custom, which gpipe-schedule "
              "cannot generate; import one with "
              "gpipe-import-schedule or pass "
              "schedule=gpipe or schedule=1f1b";
  FailureOr<SmallVector<StageOp>> stages = lookupStages(pipeline, symbolTable);
  if (failed(stages))
    return failure();
  int numStages = static_cast<int>(pipeline.getNumStages());
  int numMicrobatches = static_cast<int>(pipeline.getNumMicrobatches());
  int virtualStages = static_cast<int>(pipeline.getNumVirtualStages());
  int numRanks = numStages / virtualStages;
  ScheduleFamily family = getScheduleFamily(kind);
  // A forward-only pipeline takes only the family's placement.
  if (usesSplitBackward(family) && !pipeline.isForwardOnly())
    for (StageOp stage : *stages)
      if (!stage.hasSplitBackward())
        return emitPipelineError(pipeline)
               << "cannot run a " << stringifyScheduleKind(kind)
               << " schedule: stage @" << stage.getSymName()
               << " declares no split backward (backward_input and "
                  "backward_weight; gpipe-partition split-backward=true)";
  BoundaryTraffic traffic = getBoundaryTraffic(*stages);
  // The zero-bubble orders follow the cost model: each stage's forward and
  // the two halves of its backward (as the stage divides them, else evenly)
  // in integer ticks of 1/16 of the fastest forward (fine enough that an
  // almost empty half, stage 0's input half, does not weigh a whole forward).
  // The durations are the timeline's (getStageDurations); without any
  // declared time the generators' uniform defaults apply.
  ScheduleOptions options;
  bool timed = llvm::any_of(*stages, [](StageOp stage) {
    return stage.getForwardTimeAttr() != nullptr;
  });
  ActionDurations durations = getStageDurations(*stages);
  double unit = 0;
  for (int s = 0; s < numStages; ++s)
    if (double f = durations.get(ActionKind::Forward, s); f > 0)
      unit = unit == 0 ? f : std::min(unit, f);
  if (timed && unit > 0) {
    auto ticks = [&](ActionKind kind, int s) {
      return std::max<int64_t>(
          1, std::llround(16 * durations.get(kind, s) / unit));
    };
    for (int s = 0; s < numStages; ++s) {
      options.stageForwardTicks.push_back(ticks(ActionKind::Forward, s));
      options.stageInputTicks.push_back(ticks(ActionKind::BackwardInput, s));
      options.stageWeightTicks.push_back(ticks(ActionKind::BackwardWeight, s));
    }
  }
  ScheduleOrError built;
  if (pipeline.isForwardOnly() && kind == ScheduleKind::GPipe &&
      virtualStages == 1) {
    built.schedule =
        buildForwardSchedule(numRanks, numMicrobatches, traffic, options);
  } else if (pipeline.isForwardOnly()) {
    // The forward half on the stages where the schedule places them (an
    // evaluation pipeline's where its training pipeline's run).
    built = buildSchedule(family, numRanks, virtualStages, numMicrobatches,
                          traffic, options);
    if (built.ok())
      built.schedule = buildForwardSchedule(built.schedule.stageToRank,
                                            numMicrobatches, traffic, options);
  } else {
    built = buildSchedule(family, numRanks, virtualStages, numMicrobatches,
                          traffic, options);
  }
  if (!built.ok())
    return emitPipelineError(pipeline)
           << "cannot generate a " << stringifyScheduleKind(kind)
           << " schedule for " << numStages << " stages on " << numRanks
           << " ranks and " << numMicrobatches
           << " micro-batches: " << built.error;
  Schedule schedule = built.schedule;
  if (pipeline.getNumReplicas() > 1)
    schedule = insertGradientReductions(schedule);
  std::vector<bool> tied = getStagesHoldingTiedCopies(*stages);
  if (!pipeline.getForwardOnly() && llvm::is_contained(tied, true))
    schedule = insertTiedSums(schedule, tied);
  if (pipeline.getClipBound())
    schedule = insertGradientClipping(schedule);
  if (failed(populateProgramsFromSchedule(pipeline, schedule, *stages)))
    return failure();
  pipeline.setSchedule(kind);
  return success();
}

FailureOr<PipelineOp> mlir::gpipe::findPipeline(ModuleOp module,
                                                StringRef name) {
  SmallVector<PipelineOp> pipelines;
  module.walk([&](PipelineOp pipeline) {
    if (name.empty() || pipeline.getSymName() == name)
      pipelines.push_back(pipeline);
  });
  if (pipelines.size() == 1)
    return pipelines.front();
  if (!name.empty())
    return emitError(module.getLoc(), "expected one pipeline named @")
           << name << ", found " << pipelines.size();
  return emitError(module.getLoc(),
                   "expected exactly one gpipe.pipeline, found ")
         << pipelines.size() << "; name one with pipeline=";
}

namespace {

struct GPipeSchedulePass
    : public mlir::gpipe::impl::GPipeSchedulePassBase<GPipeSchedulePass> {
  using GPipeSchedulePassBase::GPipeSchedulePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // `custom` (the option left empty): each pipeline's own attribute.
    std::optional<ScheduleKind> override;
    if (ScheduleKind(schedule) != ScheduleKind::Custom)
      override = ScheduleKind(schedule);
    SmallVector<PipelineOp> pipelines;
    module.walk([&](PipelineOp pipeline) { pipelines.push_back(pipeline); });
    SymbolTableCollection symbolTable;
    bool failedAny = false;
    for (PipelineOp pipeline : pipelines) {
      ScheduleKind kind = override.value_or(pipeline.getSchedule());
      if (failed(generateSchedule(pipeline, kind, &symbolTable)))
        failedAny = true;
    }
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
