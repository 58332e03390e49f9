//===- Transforms.h - gpipe pipeline transformations ------------*- C++ -*-===//
//
// The work of the `gpipe` passes as functions on one pipeline, so that the
// compiler driver and tests call them without building a pass pipeline: the
// passes are thin drivers over these.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_TRANSFORMS_TRANSFORMS_H
#define GPIPE_DIALECT_GPIPE_TRANSFORMS_TRANSFORMS_H

#include "gpipe/Analysis/MemoryPlan.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/StageBuffers.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"

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
/// what `gpipe-plan-memory` records and the code generator lays out. Errors
/// at the pipeline or the offending action.
FailureOr<PipelineMemoryPlan> planPipelineMemory(PipelineOp pipeline,
                                                 OptimizerKind optimizer,
                                                 int64_t alignment,
                                                 ScheduleAnalysis &schedules);

/// The IR spelling of the planner's buffer kinds.
SlotKind getSlotKind(BufferKind kind);

/// The pipeline named `name` in `module`, or its only pipeline when `name`
/// is empty; an error at the module otherwise.
FailureOr<PipelineOp> findPipeline(ModuleOp module, StringRef name);

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_TRANSFORMS_TRANSFORMS_H
