//===- ImportSchedule.cpp - Import PyTorch CSV schedules --------*- C++ -*-===//
//
// Implements `gpipe-import-schedule`: reads a schedule in PyTorch's pipelining
// CSV format, optionally places its sends and receives (for PyTorch's
// compute-only form), and makes it the programs of a `gpipe.pipeline`, each
// action located at its CSV cell so that later diagnostics point into the
// file.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/GPipe/Utils/TiedParameters.h"

#include "mlir/IR/Location.h"
#include "llvm/Support/MemoryBuffer.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPEIMPORTSCHEDULEPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

/// The location of every non-empty cell of `text`, per line, split and
/// trimmed as `parseCSV` does: `fileName:line:column` with the 1-based
/// character column of the cell's first character.
static std::vector<SmallVector<Location>>
getCellLocations(MLIRContext *context, StringRef text, StringRef fileName) {
  auto fileAttr = StringAttr::get(context, fileName);
  std::vector<SmallVector<Location>> lines;
  unsigned lineNo = 0;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    ++lineNo;
    SmallVector<Location> &cells = lines.emplace_back();
    size_t offset = 0;
    while (true) {
      size_t comma = line.find(',', offset);
      StringRef raw = line.slice(offset, comma);
      size_t begin = offset;
      // Leading blanks, then an optional quote followed by more blanks.
      StringRef cell = raw;
      size_t lead = cell.size() - cell.ltrim(" \t").size();
      cell = cell.ltrim(" \t").rtrim(" \t\r");
      begin += lead;
      if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
        StringRef inner = cell.drop_front().drop_back();
        begin += 1 + (inner.size() - inner.ltrim(" \t").size());
        cell = inner.ltrim(" \t").rtrim(" \t\r");
      }
      if (!cell.empty())
        cells.push_back(FileLineColLoc::get(fileAttr, lineNo, begin + 1));
      if (comma == StringRef::npos)
        break;
      offset = comma + 1;
    }
  }
  return lines;
}

/// Locations for `schedule`, whose compute actions appear per rank in the
/// order of the CSV cells `cellActions`/`cellLocations`: a compute action
/// takes its cell's location, a placed transfer that of its rank's line.
static std::vector<SmallVector<Location>>
matchLocations(MLIRContext *context, const Schedule &schedule,
               const Schedule &cellActions,
               const std::vector<SmallVector<Location>> &cellLocations,
               StringRef fileName) {
  auto fileAttr = StringAttr::get(context, fileName);
  std::vector<SmallVector<Location>> result;
  for (int r = 0; r < schedule.getNumRanks(); ++r) {
    SmallVector<Location> &locations = result.emplace_back();
    size_t next = 0;
    const std::vector<Action> &cells = cellActions.ranks[r];
    for (const Action &action : schedule.ranks[r]) {
      while (next < cells.size() && isTransferKind(cells[next].kind))
        ++next;
      if (!isTransferKind(action.kind) && next < cells.size() &&
          cells[next].kind == action.kind &&
          cells[next].stage == action.stage &&
          cells[next].microbatch == action.microbatch) {
        locations.push_back(cellLocations[r][next++]);
        continue;
      }
      locations.push_back(FileLineColLoc::get(fileAttr, r + 1, 1));
    }
  }
  return result;
}

LogicalResult mlir::gpipe::importSchedule(PipelineOp pipeline, StringRef text,
                                          StringRef fileName,
                                          CommunicationMode mode,
                                          SymbolTableCollection *symbolTable) {
  FailureOr<SmallVector<StageOp>> stages = lookupStages(pipeline, symbolTable);
  if (failed(stages))
    return failure();
  int numStages = static_cast<int>(pipeline.getNumStages());
  int numMicrobatches = static_cast<int>(pipeline.getNumMicrobatches());
  BoundaryTraffic traffic = getBoundaryTraffic(*stages);
  // A UTF-8 byte-order mark is skipped (parseCSV does too), so columns
  // count from the first character an editor shows.
  text.consume_front("\xEF\xBB\xBF");
  ScheduleOrError parsed = parseCSV(std::string_view(text.data(), text.size()),
                                    numStages, numMicrobatches, traffic);
  if (!parsed.ok())
    return emitPipelineError(pipeline)
           << "cannot import schedule '" << fileName << "': " << parsed.error;

  MLIRContext *context = pipeline.getContext();
  std::vector<SmallVector<Location>> cellLocations =
      getCellLocations(context, text, fileName);
  // The cells are what parseCSV read; anything else would be a reader bug.
  bool locationsMatch =
      static_cast<int>(cellLocations.size()) == parsed.schedule.getNumRanks();
  for (int r = 0; locationsMatch && r < parsed.schedule.getNumRanks(); ++r)
    locationsMatch = cellLocations[r].size() == parsed.schedule.ranks[r].size();

  // PyTorch's schedules have no STEP: the optimizer runs after them. Give
  // every stage without one a step at the end of its rank's program.
  std::vector<bool> hasStep(numStages, false);
  for (const std::vector<Action> &program : parsed.schedule.ranks)
    for (const Action &action : program)
      if (action.kind == ActionKind::Step)
        hasStep[action.stage] = true;
  auto fileAttr = StringAttr::get(context, fileName);
  for (int s = 0; s < numStages; ++s) {
    if (hasStep[s])
      continue;
    int rank = parsed.schedule.stageToRank[s];
    parsed.schedule.ranks[rank].push_back(Action::step(s));
    if (locationsMatch)
      cellLocations[rank].push_back(FileLineColLoc::get(fileAttr, rank + 1, 1));
  }

  bool hasComm = false;
  for (const std::vector<Action> &program : parsed.schedule.ranks)
    for (const Action &action : program)
      hasComm |= isTransferKind(action.kind);
  bool insert = mode == CommunicationMode::Insert ||
                (mode == CommunicationMode::Auto && !hasComm);

  Schedule schedule = parsed.schedule;
  std::vector<SmallVector<Location>> locations;
  if (insert) {
    ScheduleOrError completed = insertCommunication(parsed.schedule, traffic);
    if (!completed.ok())
      return emitPipelineError(pipeline)
             << "cannot place sends and receives in "
                "schedule '"
             << fileName << "': " << completed.error;
    schedule = std::move(completed.schedule);
    if (locationsMatch)
      locations = matchLocations(context, schedule, parsed.schedule,
                                 cellLocations, fileName);
  } else if (locationsMatch) {
    locations = std::move(cellLocations);
  }
  // Replicas reduce each stage's gradients after its last backward, ranks
  // holding tied copies sum them before their steps, and every rank clips
  // its gradients then; these actions are the compiler's, located at the
  // pipeline.
  auto addCompilerActions = [&](Schedule next, ActionKind kind) {
    if (!locations.empty()) {
      std::vector<SmallVector<Location>> placed(locations.size());
      for (size_t r = 0; r < next.ranks.size() && r < locations.size(); ++r) {
        size_t at = 0;
        for (const Action &a : next.ranks[r]) {
          bool fromFile = a.kind != kind && at < locations[r].size();
          placed[r].push_back(fromFile ? locations[r][at++]
                                       : pipeline.getLoc());
        }
      }
      locations = std::move(placed);
    }
    schedule = std::move(next);
  };
  if (pipeline.getNumReplicas() > 1)
    addCompilerActions(insertGradientReductions(schedule),
                       ActionKind::ReduceGrad);
  std::vector<bool> tied = getStagesHoldingTiedCopies(*stages);
  if (!pipeline.getForwardOnly() && llvm::is_contained(tied, true))
    addCompilerActions(insertTiedSums(schedule, tied), ActionKind::SumTied);
  if (pipeline.getClipBound())
    addCompilerActions(insertGradientClipping(schedule), ActionKind::ClipGrad);
  if (failed(
          populateProgramsFromSchedule(pipeline, schedule, *stages, locations)))
    return failure();
  pipeline.setSchedule(ScheduleKind::Custom);
  return success();
}

namespace {

struct GPipeImportSchedulePass
    : public mlir::gpipe::impl::GPipeImportSchedulePassBase<
          GPipeImportSchedulePass> {
  using GPipeImportSchedulePassBase::GPipeImportSchedulePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<CommunicationMode> mode = CommunicationMode(communication);
    if (file.empty()) {
      emitError(module.getLoc(),
                "gpipe-import-schedule needs file=<path of a CSV "
                "schedule>");
      return signalPassFailure();
    }
    FailureOr<PipelineOp> target = findPipeline(module, pipeline);
    if (failed(target))
      return signalPassFailure();
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
        llvm::MemoryBuffer::getFile(file, /*IsText=*/true);
    if (!buffer) {
      emitPipelineError(*target) << "cannot read schedule file '" << file
                                 << "': " << buffer.getError().message();
      return signalPassFailure();
    }
    if (failed(importSchedule(*target, (*buffer)->getBuffer(), file, *mode)))
      signalPassFailure();
  }
};

} // namespace
