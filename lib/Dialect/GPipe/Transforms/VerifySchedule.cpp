//===- VerifySchedule.cpp - Verify pipeline schedules -----------*- C++ -*-===//
//
// Implements `gpipe-verify-schedule`: converts each scheduled
// `gpipe.pipeline` to a plain schedule, runs the schedule verifier
// (coverage, program-order dependencies, send/receive matching, and a
// blocking-rendezvous simulation for deadlocks) and reports every finding as
// an error at the action it names.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/ScheduleVerifier.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPEVERIFYSCHEDULEPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

FailureOr<const PipelineSchedule *>
mlir::gpipe::verifyPipelineSchedule(PipelineOp pipeline,
                                    ScheduleAnalysis &schedules) {
  if (schedules.isVerified(pipeline))
    return schedules.getSchedule(pipeline);
  if (!pipeline.isScheduled())
    return emitPipelineError(pipeline)
           << "has no programs to verify; run "
              "gpipe-schedule or gpipe-import-schedule "
              "first";
  FailureOr<const PipelineSchedule *> converted =
      schedules.getSchedule(pipeline);
  if (failed(converted))
    return failure();
  // The verifier would call this "maps to rank -1"; say it in IR terms.
  bool unplaced = false;
  for (auto [stage, rank] :
       llvm::enumerate((*converted)->schedule.stageToRank)) {
    if (rank >= 0)
      continue;
    emitPipelineError(pipeline)
        << "runs stage " << pipeline.getStages()[stage]
        << " on no rank: no program has an action of it";
    unplaced = true;
  }
  if (unplaced)
    return failure();
  VerifyResult result = verifySchedule((*converted)->schedule);
  if (failed(emitScheduleProblems(pipeline, **converted, result)))
    return failure();
  schedules.setVerified(pipeline);
  return converted;
}

namespace {

struct GPipeVerifySchedulePass
    : public mlir::gpipe::impl::GPipeVerifySchedulePassBase<
          GPipeVerifySchedulePass> {
  void runOnOperation() override {
    auto &schedules = getAnalysis<ScheduleAnalysis>();
    bool failedAny = false;
    getOperation().walk([&](PipelineOp pipeline) {
      if (failed(verifyPipelineSchedule(pipeline, schedules)))
        failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
