//===- ScheduleConversion.h - gpipe IR <-> Schedule -------------*- C++ -*-===//
//
// Converts between a `gpipe.pipeline` and the plain-data `Schedule` the
// analyses work on (gpipe/Analysis/Schedule.h): IR to schedule for the
// verifier and the timeline simulator (keeping, for every action, the op it
// came from so findings are reported at the op), and schedule to IR for the
// generators and the CSV importer. Also the boundary traffic the stage
// declarations imply and the mapping of verifier findings back to ops.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_UTILS_SCHEDULECONVERSION_H
#define GPIPE_DIALECT_GPIPE_UTILS_SCHEDULECONVERSION_H

#include "gpipe/Analysis/Schedule.h"
#include "gpipe/Analysis/Timeline.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mlir::gpipe {

struct VerifyProblem;
struct VerifyResult;

/// A pipeline's schedule as plain data plus, for every action, its op.
struct PipelineSchedule {
  Schedule schedule;
  /// ops[r][i] is the op of schedule.ranks[r][i].
  std::vector<std::vector<Operation *>> ops;
  /// The stage declarations in pipeline order.
  SmallVector<StageOp> stages;

  /// The op of action `index` of `rank`, or null when out of range.
  Operation *getOp(int rank, int index) const;
};

/// Starts an error at `pipeline`'s location reading "pipeline @name ...".
/// Passes report with it rather than `emitOpError`, which would print the
/// whole (possibly large) pipeline with the message.
InFlightDiagnostic emitPipelineError(PipelineOp pipeline);

/// Looks up the `gpipe.stage` ops `pipeline` lists, in order. Fails (with an
/// error at the pipeline) when one is missing; the verifier prevents that.
FailureOr<SmallVector<StageOp>>
lookupStages(PipelineOp pipeline, SymbolTableCollection *symbolTable = nullptr);

/// The payload bytes and element type of a boundary tensor: static shape,
/// element bit width rounded up to bytes ("f32", "bf16", "i64").
int64_t getPayloadBytes(Type type);
std::string getPayloadDType(Type type);

/// Per boundary b (stage b -> b+1), the bytes of stage b's output type. The
/// dtype is that of boundary 0 ("f32" with one stage); `toSchedule` takes
/// exact per-transfer values from the payload types.
BoundaryTraffic getBoundaryTraffic(ArrayRef<StageOp> stages);

/// Converts a scheduled pipeline to plain data: the stage map comes from the
/// programs, each stage on the rank that runs most of its actions (a stage
/// no program names maps to rank -1, which the schedule verifier reports), each
/// action's bytes and dtype from its payload type. Works on any pipeline that
/// passes the op verifiers. Passes read schedules through ScheduleAnalysis,
/// which calls this once per pipeline.
FailureOr<PipelineSchedule>
toSchedule(PipelineOp pipeline, SymbolTableCollection *symbolTable = nullptr);

/// The schedules of the pipelines under an op (a module), as the analyses
/// see them: each converted from the IR (toSchedule) on first use and kept
/// while the IR stays as it was. Module passes get it with
/// `getAnalysis<ScheduleAnalysis>()`; the passes that only read the IR
/// preserve it, so gpipe-verify-schedule, gpipe-plan-memory,
/// gpipe-export-trace, gpipe-plan-report and convert-gpipe-to-rt convert
/// and verify a pipeline once between them. Whatever changes the programs
/// or the stages must not preserve it.
class ScheduleAnalysis {
public:
  explicit ScheduleAnalysis(Operation *op) {}

  /// `pipeline`'s schedule. Failure, with the errors at the pipeline or its
  /// actions, when it does not convert; failures are not kept, so asking
  /// again reports them again.
  FailureOr<const PipelineSchedule *> getSchedule(PipelineOp pipeline);

  /// Whether the schedule verifier has passed `pipeline` (setVerified, by
  /// verifyPipelineSchedule).
  bool isVerified(PipelineOp pipeline) const;
  void setVerified(PipelineOp pipeline);

  /// The symbol tables the conversions looked the stages up in.
  SymbolTableCollection &getSymbolTable() { return symbolTable; }

private:
  struct Entry {
    std::unique_ptr<PipelineSchedule> schedule;
    bool verified = false;
  };
  SymbolTableCollection symbolTable;
  llvm::DenseMap<Operation *, Entry> entries;
};

/// Replaces the programs of `pipeline` with one `gpipe.program` per rank of
/// `schedule`, holding its actions in order, each periodic run rolled into
/// a `gpipe.for` micro-batch loop (findMicrobatchLoops) unless `locations`
/// are given (then one op per action, at its location); payload types come from
/// `stages` (pipeline order). `locations`, when given, has one location per
/// action (same shape as `schedule.ranks`); otherwise the actions take the
/// pipeline's location. Fails, with an error at the pipeline and leaving it
/// unchanged, when the schedule does not fit the pipeline (a stage, a
/// micro-batch or a peer out of range, a transfer to the own rank or past the
/// first or last stage).
LogicalResult
populateProgramsFromSchedule(PipelineOp pipeline, const Schedule &schedule,
                             ArrayRef<StageOp> stages,
                             ArrayRef<SmallVector<Location>> locations = {});

/// A run of a rank's actions: `trips` repetitions of the `period` actions
/// from `begin`, each repetition the previous one shifted by one
/// micro-batch (trips == 1: the actions as they are).
struct ProgramSegment {
  size_t begin = 0;
  size_t period = 1;
  size_t trips = 1;
};

/// Covers `actions` with segments, in order: greedily, at each position the
/// periodic run (at least two trips, period at most `maxPeriod`) that covers
/// the most actions, else a single action. GPipe's fill and drain, 1F1B's
/// warm-up, steady state and cool-down each become one segment.
SmallVector<ProgramSegment> findMicrobatchLoops(ArrayRef<Action> actions,
                                                size_t maxPeriod = 64);

/// The actions a verifier finding names, in the order it names them: every
/// "rank R action I", "rank R actions I, J and K" and "rank R waits for rank
/// P (action I, ...)" in its message.
SmallVector<std::pair<int, int>> getProblemPositions(const VerifyProblem &p);

/// Reports `result`'s findings on `pipeline` as errors: each at the first
/// action it names (deadlocks: with a note at every other action of the wait
/// cycle), or at the pipeline when it names none; one more error at the
/// pipeline when some findings were not listed. Returns failure when there
/// were findings.
LogicalResult emitScheduleProblems(PipelineOp pipeline,
                                   const PipelineSchedule &converted,
                                   const VerifyResult &result);

/// Per-stage action durations for the timeline simulator: the stages'
/// `forward_time` / `backward_time` (recompute as forward, each backward half
/// as half the backward), else forward 1 and backward 2.
ActionDurations getStageDurations(ArrayRef<StageOp> stages);

/// The staging copies of `pipeline`'s send slots, as `gpipe-plan-memory`
/// planned them (its programs' `staged_output` and `staged_input_grad`
/// slots: a slot's count is its copies); none before planning.
SendBuffering getSendBuffering(PipelineOp pipeline);

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_UTILS_SCHEDULECONVERSION_H
