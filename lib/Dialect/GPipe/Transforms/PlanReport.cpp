//===- PlanReport.cpp - Print a pipeline's plan -----------------*- C++ -*-===//
//
// Implements `gpipe-plan-report`: a readable text report of a pipeline's
// plan. Per stage: its rank, its layers, its predicted forward and backward
// time, its parameters and its rank's peak memory (from gpipe-plan-memory's
// attributes); then the simulated step time and bubble fraction next to
// GPipe's closed form (K-1)/(M+K-1), and per rank the memory breakdown.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Partition.h"
#include "gpipe/Analysis/Timeline.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPEPLANREPORTPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

//===----------------------------------------------------------------------===//
// Formatting
//===----------------------------------------------------------------------===//

/// Seconds with four significant digits in the largest unit that keeps the
/// value at least 1: "832 ns", "2.496 us", "1.5 ms", "3.25 s".
static std::string formatSeconds(double seconds) {
  if (seconds == 0)
    return "0 s";
  struct Unit {
    double scale;
    const char *name;
  } units[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  for (const Unit &unit : units) {
    if (std::fabs(seconds) >= unit.scale || unit.scale == 1e-9) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.4g %s", seconds / unit.scale,
                    unit.name);
      return text;
    }
  }
  return "";
}

/// 1234567 -> "1,234,567".
static std::string formatCount(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

static std::string formatPercent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%", 100.0 * fraction);
  return text;
}

/// Cells padded to `widths` and separated by two spaces: the first

/// The kept activations of the rank that keeps the most (at its peak),
/// beside what 1F1B would keep on as many ranks with the layers spread
/// evenly: its first rank holds min(K, M) micro-batches of a K-th of every
/// stage's inputs, extra inputs and saved values (Narayanan et al. 2021;
/// the comparison of Qi et al. 2024), from the arena slots' sizes. What the
/// V-shaped and zero-bubble schedules trade against 1F1B; skipped for 1F1B
/// itself.
static void appendKeptAgainst1F1B(llvm::raw_ostream &os, PipelineOp op,
                                  const PipelineSchedule &converted,
                                  ArrayRef<ProgramOp> programs) {
  ScheduleKind kind = op.getSchedule();
  if (kind == ScheduleKind::OneFOneB)
    return;
  const Schedule &schedule = converted.schedule;
  int64_t K = schedule.getNumRanks(), M = schedule.numMicrobatches;
  int64_t kept = 0, total = 0;
  for (ProgramOp program : programs) {
    ArenaAttr arena = program.getArenaAttr();
    if (!arena)
      return;
    kept = std::max(kept, arena.getBreakdown().getKept());
    for (SlotAttr slot : arena.getSlots())
      if (slot.getKind() == SlotKind::Input ||
          slot.getKind() == SlotKind::ExtraInput ||
          slot.getKind() == SlotKind::Saved)
        total += slot.getSize();
  }
  int64_t perMicrobatch = K > 0 ? total / K : 0;
  int64_t oneFOneB = std::min(K, M) * perMicrobatch;
  if (oneFOneB <= 0)
    return;
  os << "kept activations at the peak, largest rank: " << formatBytes(kept)
     << "; 1F1B on these ranks: " << formatBytes(oneFOneB) << " ("
     << std::min(K, M) << " micro-batches of " << formatBytes(perMicrobatch)
     << ", a rank's even share), "
     << llvm::format("%.2f",
                     static_cast<double>(kept) / static_cast<double>(oneFOneB))
     << " of it\n";
}

/// `numRight` right-aligned (numbers), the others left-aligned.
static std::string formatRow(ArrayRef<std::string> cells,
                             ArrayRef<size_t> widths, size_t numRight) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    std::string pad(
        widths[i] > cells[i].size() ? widths[i] - cells[i].size() : 0, ' ');
    if (i)
      line += "  ";
    line += i < numRight ? pad + cells[i] : cells[i] + pad;
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  return line + "\n";
}

static std::string formatBytesExactly(int64_t bytes) {
  std::string text = formatBytes(bytes);
  if (text != std::to_string(bytes) + " B")
    text += " (" + std::to_string(bytes) + " B)";
  return text;
}

//===----------------------------------------------------------------------===//
// What the report says about a stage
//===----------------------------------------------------------------------===//

namespace {

struct StageInfo {
  SmallVector<std::string> layers;
  int64_t paramCount = 0;
  int64_t paramBytes = 0;
  std::optional<double> forwardTime, backwardTime;
  int rank = -1;
};

} // namespace

static StageInfo getStageInfo(StageOp stage, ModuleOp module,
                              SymbolTableCollection &symbols) {
  StageInfo info;
  if (FloatAttr forward = stage.getForwardTimeAttr())
    info.forwardTime = forward.getValueAsDouble();
  if (FloatAttr backward = stage.getBackwardTimeAttr())
    info.backwardTime = backward.getValueAsDouble();
  auto func = symbols.lookupNearestSymbolFrom<func::FuncOp>(
      stage, stage.getForwardAttr());
  if (!func)
    return info;
  llvm::MapVector<StringRef, Type> params;
  func.walk([&](Operation *op) {
    if (auto layer = dyn_cast<nn::LayerOp>(op))
      info.layers.push_back(layer.getName().str());
    else if (auto param = dyn_cast<nn::ParamOp>(op))
      params.insert({param.getName(), param.getType()});
  });
  for (auto &[name, paramType] : params) {
    auto type = dyn_cast<ShapedType>(paramType);
    if (!type || !type.hasStaticShape())
      continue;
    info.paramCount += type.getNumElements();
    info.paramBytes += nn::tensorBytes(type);
  }
  return info;
}

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

static FailureOr<std::string> buildReport(PipelineOp op, ModuleOp module,
                                          ScheduleAnalysis &schedules) {
  SymbolTableCollection &symbols = schedules.getSymbolTable();
  FailureOr<SmallVector<StageOp>> stages = lookupStages(op, &symbols);
  if (failed(stages))
    return failure();
  int64_t numStages = stages->size();
  int64_t numMicrobatches = op.getNumMicrobatches();
  SmallVector<ProgramOp, 8> programs = op.getPrograms();

  const PipelineSchedule *converted = nullptr;
  if (op.isScheduled()) {
    FailureOr<const PipelineSchedule *> schedule =
        verifyPipelineSchedule(op, schedules);
    if (failed(schedule))
      return failure();
    converted = *schedule;
  }

  SmallVector<StageInfo> infos;
  for (auto [s, stage] : llvm::enumerate(*stages)) {
    infos.push_back(getStageInfo(stage, module, symbols));
    if (converted)
      infos.back().rank =
          converted->schedule.getRankOfStage(static_cast<int>(s));
  }

  std::string text;
  llvm::raw_string_ostream os(text);
  std::string scheduleName = stringifyScheduleKind(op.getSchedule()).str();
  os << "pipeline @" << op.getSymName() << ": " << numStages
     << (numStages == 1 ? " stage" : " stages");
  if (converted)
    os << " on " << converted->schedule.getNumRanks()
       << (converted->schedule.getNumRanks() == 1 ? " rank" : " ranks");
  os << ", " << numMicrobatches
     << (numMicrobatches == 1 ? " micro-batch" : " micro-batches")
     << ", schedule " << scheduleName;
  if (op.isForwardOnly())
    os << " (forward only: inference)";
  else
    os << ", remat " << stringifyRemat(op.getRemat());
  const int64_t replicas = op.getNumReplicas();
  if (replicas > 1)
    os << ", " << replicas << " data-parallel replicas";
  os << "\n";
  // Data parallelism: what each stage's all-reduce moves, and its predicted
  // time (the cost model's bandwidth-optimal all-reduce).
  if (replicas > 1) {
    os << "data parallel: " << replicas << " replicas";
    if (converted)
      os << " x " << converted->schedule.getNumRanks()
         << " ranks = " << replicas * converted->schedule.getNumRanks()
         << " processes";
    os << "; each stage's gradients summed over the replicas:";
    for (auto [s, stage] : llvm::enumerate(*stages)) {
      os << (s ? ", " : " ") << "stage " << s << " "
         << formatBytes(infos[s].paramBytes);
      if (FloatAttr t = stage.getReduceTimeAttr())
        os << " in " << formatSeconds(t.getValueAsDouble());
    }
    os << "\n";
  }

  // The stage table.
  SmallVector<SmallVector<std::string>> rows;
  rows.push_back({"stage", "rank", "layers", "forward", "backward",
                  "parameters", "rank peak memory"});
  bool planned = false;
  for (auto [s, info] : llvm::enumerate(infos)) {
    std::string peak = "-";
    if (info.rank >= 0 && info.rank < static_cast<int>(programs.size()))
      if (ArenaAttr arena = programs[info.rank].getArenaAttr()) {
        peak = formatBytes(arena.getPeak());
        planned = true;
      }
    rows.push_back({std::to_string(s),
                    info.rank >= 0 ? std::to_string(info.rank) : "-",
                    std::to_string(info.layers.size()),
                    info.forwardTime ? formatSeconds(*info.forwardTime) : "-",
                    info.backwardTime ? formatSeconds(*info.backwardTime) : "-",
                    formatCount(info.paramCount) + " (" +
                        formatBytes(info.paramBytes) + ")",
                    peak});
  }
  SmallVector<size_t> widths(rows.front().size(), 0);
  for (const auto &row : rows)
    for (size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  for (const auto &row : rows)
    os << formatRow(row, widths, /*numRight=*/3);
  for (auto [s, info] : llvm::enumerate(infos)) {
    os << "layers of stage " << s << ":";
    if (info.layers.empty())
      os << " (none)";
    for (auto [i, name] : llvm::enumerate(info.layers))
      os << (i ? ", " : " ") << name;
    os << "\n";
  }

  // The simulated schedule.
  double ideal = getIdealBubbleFraction(static_cast<int>(numStages),
                                        static_cast<int>(numMicrobatches));
  std::string closedForm =
      formatPercent(ideal) +
      " closed form (K-1)/(M+K-1) = " + std::to_string(numStages - 1) + "/" +
      std::to_string(numMicrobatches + numStages - 1);
  if (!converted) {
    os << "schedule: none yet (run gpipe-schedule); bubble " << closedForm
       << "\n";
  } else {
    Timeline timeline =
        simulate(converted->schedule, getStageDurations(converted->stages),
                 getSendBuffering(op));
    if (!timeline.ok()) {
      emitPipelineError(op)
          << "cannot simulate its schedule: " << timeline.error;
      return failure();
    }
    os << "schedule " << scheduleName << ": step time "
       << formatSeconds(timeline.makespan) << " predicted, busy";
    for (auto [r, busy] : llvm::enumerate(timeline.busy))
      os << (r ? ", " : " ") << "rank " << r << " "
         << formatPercent(timeline.makespan > 0 ? busy / timeline.makespan : 0);
    os << "\n";
    os << "bubble: " << formatPercent(timeline.bubbleFraction) << " predicted, "
       << closedForm;
    if (converted->schedule.getNumRanks() != numStages)
      os << " (for one stage per rank)";
    os << "\n";
    // The memory plan's count when it ran (the same by construction).
    ArrayRef<int64_t> kept;
    if (MemoryPlanAttr memory = op.getMemoryPlanAttr())
      kept = memory.getKept();
    os << "micro-batches of activations kept per stage:";
    if (!kept.empty())
      for (auto [s, held] : llvm::enumerate(kept))
        os << (s ? ", " : " ") << held;
    else
      for (auto [s, held] : llvm::enumerate(timeline.peakActivations))
        os << (s ? ", " : " ") << held;
    os << " (of M = " << numMicrobatches << ")\n";
    // Which sends go through staging copies (gpipe-plan-memory chose them).
    SendBuffering buffering = getSendBuffering(op);
    const Schedule &schedule = converted->schedule;
    std::vector<std::pair<ActionKind, int>> slots = getSendSlots(schedule);
    int buffered = 0;
    for (auto [kind, stage] : slots)
      buffered += buffering.getCopies(kind, stage) > 0;
    // Only where some are: rendezvous is the rule.
    if (buffered > 0) {
      int64_t bytes = 0;
      for (int r = 0; r < schedule.getNumRanks(); ++r)
        bytes = std::max(bytes, buffering.getRankBytes(schedule, r));
      os << "sends: " << buffered << " of " << slots.size()
         << " send slots buffered (staging copies, at most "
         << formatBytes(bytes) << " per rank), the others rendezvous\n";
    }
  }

  // The memory plan.
  MemoryPlanAttr memory = op.getMemoryPlanAttr();
  if (!planned || !memory) {
    os << "memory: not planned (run gpipe-plan-memory)\n";
  } else {
    os << "memory per rank (";
    if (op.isForwardOnly())
      os << "inference: parameters, no gradients or optimizer state";
    else
      os << "optimizer "
         << ::gpipe::abi::getOptimizerName(memory.getOptimizer());
    os << ", " << memory.getAlignment() << "-byte aligned buffers";
    if (memory.getBudget() > 0)
      os << ", budget " << formatBytes(memory.getBudget());
    os << "):\n";
    for (auto [r, program] : llvm::enumerate(programs)) {
      ArenaAttr arena = program.getArenaAttr();
      if (!arena)
        continue;
      int64_t peak = arena.getPeak(), size = arena.getSize();
      os << "  rank " << r << ": peak " << formatBytesExactly(peak);
      if (converted && r < converted->schedule.ranks.size() &&
          arena.getPeakAt() >= 0 &&
          size_t(arena.getPeakAt()) < converted->schedule.ranks[r].size())
        os << " at "
           << toString(converted->schedule.ranks[r][arena.getPeakAt()]);
      os << ", arena " << formatBytesExactly(size);
      if (peak > 0)
        os << " +"
           << formatPercent(
                  static_cast<double>(size) / static_cast<double>(peak) - 1.0);
      BreakdownAttr at = arena.getBreakdown();
      os << "; params " << formatBytes(at.getParams()) << ", grads "
         << formatBytes(at.getGrads()) << ", optimizer "
         << formatBytes(at.getOptimizer()) << ", kept activations "
         << formatBytes(at.getKept()) << ", scratch "
         << formatBytes(at.getScratch()) << ", send/recv "
         << formatBytes(at.getBoundary()) << "\n";
    }
    if (converted && !op.isForwardOnly())
      appendKeptAgainst1F1B(os, op, *converted, programs);
  }
  return text;
}

/// Every distinct GEMM shape the stages run per micro-batch, forward and (in
/// training) backward, with its implementation under `choice` and, with a
/// machine profile, that implementation's measured rate on one thread.
static void appendGemms(llvm::raw_ostream &os, ArrayRef<StageOp> stages,
                        SymbolTableCollection &symbols, bool training,
                        const GemmChoice &choice, const MachineModel *machine) {
  // (M, N, K, transA, transB) -> products per micro-batch, forward and
  // backward, in first-seen order.
  llvm::MapVector<std::tuple<int64_t, int64_t, int64_t, int, int>,
                  std::pair<int64_t, int64_t>>
      shapes;
  for (StageOp stage : stages) {
    auto func = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        stage, stage.getForwardAttr());
    if (!func)
      continue;
    for (const OpWork &op : getCostData(func).ops) {
      if (!op.gemm)
        continue;
      const GemmWork &g = *op.gemm;
      shapes[{g.m, g.n, g.k, int(g.transA), int(g.transB)}].first += g.batch;
      if (training)
        for (const GemmWork &b : getBackwardGemms(g))
          shapes[{b.m, b.n, b.k, int(b.transA), int(b.transB)}].second +=
              b.batch;
    }
  }
  if (shapes.empty())
    return;
  os << "GEMMs: " << choice.reason;
  if (machine)
    os << "; GFLOP/s on 1 thread from " << machine->path;
  os << "\n";
  SmallVector<SmallVector<std::string>> rows = {{"shape (M x N x K)", "layout",
                                                 "forward", "backward",
                                                 "implementation", "GFLOP/s"}};
  for (auto &[shape, counts] : shapes) {
    auto [m, n, k, ta, tb] = shape;
    int32_t impl = choice.implFor(ta, tb, m, n, k);
    std::string rate = "-";
    if (machine) {
      double seconds = machine->gemmSeconds(m, n, k, ta, tb, 1, impl);
      char text[32];
      std::snprintf(text, sizeof(text), "%.1f",
                    2.0 * double(m) * double(n) * double(k) / seconds / 1e9);
      rate = text;
    }
    rows.push_back({std::to_string(m) + " x " + std::to_string(n) + " x " +
                        std::to_string(k),
                    std::string(ta ? "T" : "N") + (tb ? "T" : "N"),
                    std::to_string(counts.first), std::to_string(counts.second),
                    gpipe_rt_gemm_impl_name(impl), rate});
  }
  SmallVector<size_t> widths(rows.front().size(), 0);
  for (const auto &row : rows)
    for (auto [i, cell] : llvm::enumerate(row))
      widths[i] = std::max(widths[i], cell.size());
  for (const auto &row : rows) {
    os << " ";
    for (auto [i, cell] : llvm::enumerate(row)) {
      bool right = i == 2 || i == 3 || i == 5;
      os << " ";
      if (right)
        os.indent(widths[i] - cell.size()) << cell;
      else
        os.indent(0) << cell;
      if (!right && i + 1 < row.size())
        os.indent(widths[i] - cell.size());
    }
    os << "\n";
  }
}

namespace {

struct GPipePlanReportPass
    : public mlir::gpipe::impl::GPipePlanReportPassBase<GPipePlanReportPass> {
  using GPipePlanReportPassBase::GPipePlanReportPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<PipelineOp> target = findPipeline(module, pipeline);
    if (failed(target))
      return signalPassFailure();
    FailureOr<std::string> report =
        buildReport(*target, module, getAnalysis<ScheduleAnalysis>());
    if (failed(report))
      return signalPassFailure();
    {
      std::string error;
      std::shared_ptr<const MachineModel> machine;
      if (!machineFile.empty() &&
          !(machine = MachineModel::load(machineFile, error)))
        return emitError(target->getLoc(), error), signalPassFailure();
      std::optional<GemmChoice> choice =
          chooseGemms(gemm, machine.get(), error);
      if (!choice)
        return emitError(target->getLoc(), error), signalPassFailure();
      SymbolTableCollection symbols;
      FailureOr<SmallVector<StageOp>> stages = lookupStages(*target, &symbols);
      if (succeeded(stages)) {
        llvm::raw_string_ostream os(*report);
        appendGemms(os, *stages, symbols, !target->isForwardOnly(), *choice,
                    machine.get());
      }
    }
    if (file.empty()) {
      llvm::outs() << *report;
      llvm::outs().flush();
    } else {
      std::string error;
      std::unique_ptr<llvm::ToolOutputFile> output =
          openOutputFile(file, &error);
      if (!output) {
        emitError(target->getLoc(), "cannot write '") << file << "': " << error;
        return signalPassFailure();
      }
      output->os() << *report;
      output->keep();
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
