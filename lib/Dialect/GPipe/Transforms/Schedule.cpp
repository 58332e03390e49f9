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

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPESCHEDULEPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

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
  BoundaryTraffic traffic = getBoundaryTraffic(*stages);
  Schedule schedule =
      kind == ScheduleKind::GPipe
          ? buildGPipeSchedule(numStages, numMicrobatches, traffic)
          : build1F1BSchedule(numStages, numMicrobatches, traffic);
  if (schedule.ranks.empty())
    return emitPipelineError(pipeline)
           << "cannot generate a " << stringifyScheduleKind(kind)
           << " schedule for " << numStages << " stages and " << numMicrobatches
           << " micro-batches";
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
