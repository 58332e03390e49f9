//===- Autotune.cpp - The joint search behind gpipe-compile --autotune ----===//
//
// Implements Autotune.h: enumerates the configurations, compiles each on a
// copy of the model with its diagnostics held back, reads the predicted
// timeline and the arenas off the compiled pipeline, ranks them and
// explains the pick.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Pipelines/Autotune.h"

#include "gpipe/Analysis/CostModel.h"
#include "gpipe/Analysis/Partition.h"
#include "gpipe/Analysis/Timeline.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::gpipe;

int64_t AutotuneCandidate::getPeakBytes() const {
  int64_t peak = 0;
  for (int64_t bytes : arenaBytes)
    peak = std::max(peak, bytes);
  return peak;
}

std::string AutotuneCandidate::getFlags() const {
  std::string flags = "--stages " + std::to_string(stages) +
                      " --microbatches " + std::to_string(microbatches) +
                      " --schedule " + stringifyScheduleKind(schedule).str();
  if (virtualStages > 1)
    flags += " --virtual-stages " + std::to_string(virtualStages);
  flags += " --remat " + stringifyRemat(remat).str();
  if (!balance.empty()) {
    flags += " --balance ";
    for (auto [i, n] : llvm::enumerate(balance))
      flags += (i ? "," : "") + std::to_string(n);
  }
  return flags;
}

void mlir::gpipe::applyAutotuneChoice(GPipePipelineOptions &options,
                                      const AutotuneCandidate &c) {
  options.stages = c.stages;
  options.microbatches = c.microbatches;
  options.schedule = c.schedule;
  options.virtualStages = c.virtualStages;
  options.remat = c.remat;
  options.balance = ArrayRef<int64_t>(c.balance);
}

/// The options of one configuration: `options`' model, loss, ranks,
/// replicas and cost model, with the searched dimensions set.
static void configure(GPipePipelineOptions &to,
                      const GPipePipelineOptions &from,
                      const AutotuneCandidate &c) {
  to.dataParallel = int64_t(from.dataParallel);
  to.loss = nn::LossKind(from.loss);
  to.profile = ProfileKind(from.profile);
  to.profileFile = std::string(from.profileFile);
  to.machineFile = std::string(from.machineFile);
  to.gemm = GemmKind(from.gemm);
  to.sendBuffers = int64_t(from.sendBuffers);
  to.optimizer = OptimizerKind(from.optimizer);
  to.inference = bool(from.inference);
  to.fuse = bool(from.fuse);
  to.fuseAttention = bool(from.fuseAttention);
  to.granularity = nn::LayerGranularity(from.granularity);
  to.recomputeLayers = ArrayRef<std::string>(std::vector<std::string>(
      from.recomputeLayers.begin(), from.recomputeLayers.end()));
  applyAutotuneChoice(to, c);
}

/// Compiles `c` on a copy of `model` and fills in what it got; the compiled
/// copy goes to `compiled` when given.
static void evaluate(ModuleOp model, const GPipePipelineOptions &options,
                     std::optional<int64_t> budget, AutotuneCandidate &c,
                     OwningOpRef<ModuleOp> *compiled = nullptr,
                     ArrayRef<std::string> recompute = {}) {
  MLIRContext *ctx = model.getContext();
  OwningOpRef<ModuleOp> copy = model.clone();
  GPipePipelineOptions candidate;
  configure(candidate, options, c);
  if (!recompute.empty())
    candidate.recomputeLayers = recompute;
  PassManager pm(ctx);
  buildGPipePipeline(pm, candidate);
  std::string error;
  {
    ScopedDiagnosticHandler quiet(ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && error.empty())
        error = diag.str();
      return success();
    });
    if (failed(pm.run(*copy))) {
      c.error = error.empty() ? "the pipeline failed" : error;
      return;
    }
  }
  PipelineOp pipeline;
  copy->walk([&](PipelineOp op) {
    pipeline = op;
    return WalkResult::interrupt();
  });
  ScheduleAnalysis schedules(*copy);
  FailureOr<const PipelineSchedule *> schedule =
      pipeline ? schedules.getSchedule(pipeline)
               : FailureOr<const PipelineSchedule *>(failure());
  if (failed(schedule)) {
    c.error = "no scheduled pipeline";
    return;
  }
  const PipelineSchedule *converted = *schedule;
  Timeline timeline =
      simulate(converted->schedule, getStageDurations(converted->stages),
               getSendBuffering(pipeline));
  if (!timeline.ok()) {
    c.error = timeline.error;
    return;
  }
  c.stepSeconds = timeline.makespan;
  c.bubble = timeline.bubbleFraction;
  for (double busy : timeline.busyWithSteps)
    c.maxBusySeconds = std::max(c.maxBusySeconds, busy);
  for (ProgramOp program : pipeline.getPrograms())
    c.arenaBytes.push_back(program.getArenaAttr().getSize());
  if (c.balance.empty())
    for (StageOp stage : converted->stages) {
      auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          stage, stage.getForwardAttr());
      int64_t layers = 0;
      if (forward && !forward.isExternal())
        layers =
            llvm::range_size(forward.getBody().front().getOps<nn::LayerOp>());
      c.balance.push_back(layers);
    }
  if (auto v = pipeline.getVirtualStages())
    c.virtualStages = int64_t(*v);
  c.fits = !budget || c.getPeakBytes() <= *budget;
  if (compiled)
    *compiled = std::move(copy);
}

FailureOr<RecomputeChoice>
mlir::gpipe::chooseRecomputeLayers(ModuleOp model,
                                   const GPipePipelineOptions &options,
                                   int64_t budget, llvm::raw_ostream &os) {
  AutotuneCandidate base;
  base.stages = options.stages;
  base.microbatches = options.microbatches;
  base.schedule = options.schedule;
  base.virtualStages = options.virtualStages;
  base.balance.assign(options.balance.begin(), options.balance.end());
  auto attempt = [&](Remat remat, ArrayRef<std::string> layers,
                     OwningOpRef<ModuleOp> *compiled = nullptr) {
    AutotuneCandidate c = base;
    c.remat = remat;
    evaluate(model, options, budget, c, compiled, layers);
    return c;
  };
  // Everything kept.
  OwningOpRef<ModuleOp> kept;
  AutotuneCandidate none = attempt(Remat::None, {}, &kept);
  if (!none.error.empty())
    return model.emitError("remat auto: ") << none.error, failure();
  os << "remat auto: keeping every activation needs "
     << formatBytes(none.getPeakBytes()) << " on the fullest rank";
  if (none.fits) {
    os << ", within the budget of " << formatBytes(budget) << ": remat none\n";
    return RecomputeChoice{Remat::None, {}, none.getPeakBytes()};
  }
  os << ", over the budget of " << formatBytes(budget) << "\n";

  // The layers (of the compiled network), most kept bytes per second of
  // recompute first: each layer's values for one micro-batch against its
  // forward time on the cost model the stages were built with.
  auto network = kept->lookupSymbol<func::FuncOp>("forward");
  if (!network)
    return model.emitError("remat auto: no network function @forward"),
           failure();
  std::optional<DeviceProfile> device = getProfile(options.profile);
  // The cost model the stages are built with: the machine profile's rates
  // when the compile has one.
  if (!options.machineFile.empty()) {
    std::string error;
    std::shared_ptr<const MachineModel> machine =
        MachineModel::load(options.machineFile, error);
    if (!machine)
      return model.emitError(error), failure();
    device = withMachine(
        *device, std::move(machine),
        int64_t(options.stages) * int64_t(options.dataParallel), options.gemm);
  }
  struct Ranked {
    std::string name;
    double score;
    size_t index;
  };
  std::vector<Ranked> ranked;
  for (auto [i, layer] :
       llvm::enumerate(network.getBody().front().getOps<nn::LayerOp>())) {
    int64_t bytes = 0;
    layer.getBodyBlock().walk([&](Operation *op) {
      if (!isa<nn::ParamOp>(op) && !op->hasTrait<OpTrait::ConstantLike>())
        for (Value r : op->getResults())
          bytes += nn::tensorBytes(r.getType());
    });
    double seconds = forwardTime(getCostData(layer), *device);
    ranked.push_back({layer.getName().str(),
                      seconds > 0 ? double(bytes) / seconds : double(bytes),
                      i});
  }
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const Ranked &a, const Ranked &b) { return a.score > b.score; });
  // Per layer, the rank holding it in the last compile: the next layer is
  // the best one on a rank still over the budget.
  auto ranksOf = [&](ModuleOp compiled) {
    llvm::StringMap<int64_t> rankOf;
    ScheduleAnalysis schedules(compiled);
    compiled.walk([&](PipelineOp pipeline) {
      FailureOr<const PipelineSchedule *> converted =
          schedules.getSchedule(pipeline);
      if (failed(converted))
        return;
      for (auto [s, stageRef] : llvm::enumerate((*converted)->stages)) {
        StageOp stage = stageRef;
        auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            stage, stage.getForwardAttr());
        if (forward && !forward.isExternal())
          for (auto layer : forward.getBody().front().getOps<nn::LayerOp>())
            rankOf[layer.getName()] =
                (*converted)->schedule.getRankOfStage(int(s));
      }
    });
    return rankOf;
  };
  llvm::StringMap<int64_t> rankOf = ranksOf(*kept);
  std::vector<int64_t> arenas = none.arenaBytes;
  std::vector<std::string> layers;
  std::vector<char> taken(ranked.size(), 0);
  for (size_t step = 0; step < ranked.size(); ++step) {
    size_t pick = ranked.size();
    for (size_t i = 0; i < ranked.size() && pick == ranked.size(); ++i) {
      auto it = rankOf.find(ranked[i].name);
      if (!taken[i] && it != rankOf.end() && it->second >= 0 &&
          size_t(it->second) < arenas.size() &&
          arenas[size_t(it->second)] > budget)
        pick = i;
    }
    for (size_t i = 0; i < ranked.size() && pick == ranked.size(); ++i)
      if (!taken[i])
        pick = i;
    taken[pick] = 1;
    layers.push_back(ranked[pick].name);
    OwningOpRef<ModuleOp> compiled;
    AutotuneCandidate c = attempt(Remat::Selective, layers, &compiled);
    if (!c.error.empty())
      return model.emitError("remat auto: ") << c.error, failure();
    rankOf = ranksOf(*compiled);
    arenas = c.arenaBytes;
    if (c.fits) {
      os << "remat auto: recomputing " << layers.size() << " of "
         << ranked.size() << " layers fits in " << formatBytes(c.getPeakBytes())
         << ": remat selective --recompute-layers ";
      for (auto [i, name] : llvm::enumerate(layers))
        os << (i ? "," : "") << name;
      os << "\n";
      return RecomputeChoice{Remat::Selective, layers, c.getPeakBytes()};
    }
  }
  AutotuneCandidate stage = attempt(Remat::Stage, {});
  if (stage.error.empty() && stage.fits) {
    os << "remat auto: only recomputing whole stages fits ("
       << formatBytes(stage.getPeakBytes()) << "): remat stage\n";
    return RecomputeChoice{Remat::Stage, {}, stage.getPeakBytes()};
  }
  return model.emitError("remat auto: nothing fits the memory budget of ")
             << formatBytes(budget) << "; recomputing every stage needs "
             << formatBytes(stage.getPeakBytes())
             << " on the fullest rank (more stages or micro-batches, or "
                "gpipe-compile --autotune, may need less)",
         failure();
}

FailureOr<AutotuneResult>
mlir::gpipe::autotune(ModuleOp model, const GPipePipelineOptions &options,
                      std::optional<int64_t> budget,
                      std::optional<int64_t> maxStages) {
  auto network = model.lookupSymbol<func::FuncOp>("forward");
  if (!network || network.getNumArguments() == 0)
    return model.emitError("autotune: no network function @forward"), failure();
  auto input = dyn_cast<ShapedType>(network.getArgumentTypes().front());
  if (!input || !input.hasStaticShape() || input.getRank() == 0)
    return network.emitError("autotune: the network's input has no static "
                             "batch dimension"),
           failure();
  int64_t replicas = std::max<int64_t>(1, options.dataParallel);
  int64_t batch = input.getDimSize(0) / replicas;
  auto pinned = [](const llvm::cl::Option &option) {
    return option.getNumOccurrences() > 0;
  };

  SmallVector<int64_t> microbatches;
  if (pinned(options.microbatches))
    microbatches.push_back(options.microbatches);
  else
    for (int64_t m = 1; m <= batch; ++m)
      if (batch % m == 0)
        microbatches.push_back(m);
  SmallVector<ScheduleKind> schedules;
  if (options.inference)
    schedules.push_back(ScheduleKind::GPipe);
  else if (pinned(options.schedule))
    schedules.push_back(options.schedule);
  else
    for (ScheduleKind kind :
         {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
          ScheduleKind::Interleaved1F1B, ScheduleKind::ZBH1, ScheduleKind::ZBH2,
          ScheduleKind::ZBV, ScheduleKind::DualPipeV, ScheduleKind::VHalf,
          ScheduleKind::VMin, ScheduleKind::ZBAuto})
      schedules.push_back(kind);
  SmallVector<Remat> remats;
  if (options.inference)
    remats.push_back(Remat::None);
  else if (pinned(options.remat))
    remats.push_back(options.remat);
  else
    remats = {Remat::Stage, Remat::None};
  std::vector<int64_t> balance(options.balance.begin(), options.balance.end());

  AutotuneResult result;
  result.minRanks = maxStages ? 1 : int64_t(options.stages);
  result.maxRanks = maxStages ? *maxStages : int64_t(options.stages);
  result.costModel =
      !options.profileFile.empty()
          ? "the measured profile '" + std::string(options.profileFile) + "'"
      : !options.machineFile.empty()
          ? "the machine profile '" + std::string(options.machineFile) + "'"
          : "the built-in profile '" +
                getProfile(ProfileKind(options.profile)).name + "'";
  for (int64_t k = result.minRanks; k <= result.maxRanks; ++k) {
    for (int64_t m : microbatches)
      for (ScheduleKind schedule : schedules)
        for (Remat remat : remats) {
          // One rank runs one schedule whatever its name.
          if (k == 1 && schedule != schedules.front())
            continue;
          AutotuneCandidate c;
          c.stages = k;
          c.microbatches = m;
          c.schedule = schedule;
          c.virtualStages = options.virtualStages;
          c.remat = remat;
          c.balance = balance;
          evaluate(model, options, budget, c);
          result.candidates.push_back(std::move(c));
        }
  }
  // Fitting, then over the budget, then failed; fastest first; then less
  // memory, fewer micro-batches, the enumeration order.
  auto group = [](const AutotuneCandidate &c) {
    return !c.error.empty() ? 2 : c.fits ? 0 : 1;
  };
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [&](const AutotuneCandidate &a, const AutotuneCandidate &b) {
                     if (group(a) != group(b))
                       return group(a) < group(b);
                     if (group(a) == 2)
                       return false;
                     return std::make_tuple(a.stepSeconds, a.getPeakBytes(),
                                            a.microbatches) <
                            std::make_tuple(b.stepSeconds, b.getPeakBytes(),
                                            b.microbatches);
                   });
  for (const AutotuneCandidate &c : result.candidates) {
    int g = group(c);
    (g == 0   ? result.numFitting
     : g == 1 ? result.numOverBudget
              : result.numFailed)++;
  }
  return result;
}

static std::string ms(double seconds) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.3f", seconds * 1e3);
  return text;
}

static std::string percent(double fraction) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.1f%%", fraction * 100);
  return text;
}

/// `rows` as columns two spaces apart, the first row the header; columns
/// for which `right` holds are right-aligned.
static void printTable(llvm::raw_ostream &os,
                       const std::vector<std::vector<std::string>> &rows,
                       llvm::function_ref<bool(size_t)> right) {
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto &row : rows)
    for (size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  for (const auto &row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      size_t pad = widths[i] - row[i].size();
      os << (i ? "  " : "");
      if (right(i))
        os.indent(pad) << row[i];
      else
        os << row[i] << std::string(i + 1 < row.size() ? pad : 0, ' ');
    }
    os << "\n";
  }
}

/// The fastest configuration of each schedule family that fits (or, where
/// none does, the one that needs the least memory), with its peak rank
/// memory against the budget: what each family costs in time and memory.
static void printFamilies(const AutotuneResult &result,
                          std::optional<int64_t> budget,
                          llvm::raw_ostream &os) {
  // Candidates are sorted fitting first, fastest first.
  std::vector<ScheduleKind> order;
  std::map<ScheduleKind, const AutotuneCandidate *> fastest, smallest;
  for (const AutotuneCandidate &c : result.candidates) {
    if (!c.error.empty())
      continue;
    if (!fastest.count(c.schedule) && !smallest.count(c.schedule))
      order.push_back(c.schedule);
    if (c.fits && !fastest.count(c.schedule))
      fastest[c.schedule] = &c;
    const AutotuneCandidate *&least = smallest[c.schedule];
    if (!least || c.getPeakBytes() < least->getPeakBytes())
      least = &c;
  }
  if (order.size() < 2)
    return;
  os << "best of each schedule:\n";
  std::vector<std::vector<std::string>> rows = {
      {"schedule", "step (ms)", "bubble", "peak rank memory", "of the budget",
       "configuration"}};
  for (ScheduleKind kind : order) {
    auto it = fastest.find(kind);
    bool fits = it != fastest.end();
    const AutotuneCandidate &c = fits ? *it->second : *smallest[kind];
    std::string share;
    if (budget && *budget > 0)
      share = percent(static_cast<double>(c.getPeakBytes()) /
                      static_cast<double>(*budget)) +
              (fits ? "" : " (none fits)");
    rows.push_back({stringifyScheduleKind(kind).str(), ms(c.stepSeconds),
                    percent(c.bubble), formatBytes(c.getPeakBytes()), share,
                    c.getFlags()});
  }
  // Without a budget there is nothing to hold the memory against.
  if (!budget)
    for (std::vector<std::string> &row : rows)
      row.erase(row.begin() + 4);
  printTable(os, rows,
             [&](size_t i) { return i >= 1 && i <= (budget ? 4 : 3); });
}

void mlir::gpipe::printAutotuneReport(const AutotuneResult &result,
                                      std::optional<int64_t> budget,
                                      llvm::raw_ostream &os, size_t limit) {
  os << "autotune: " << result.candidates.size() << " configurations of "
     << (result.minRanks == result.maxRanks
             ? std::to_string(result.maxRanks)
             : std::to_string(result.minRanks) + " to " +
                   std::to_string(result.maxRanks))
     << " ranks on the cost model of " << result.costModel << ", "
     << result.numFitting << " fit";
  if (budget)
    os << " the budget of " << formatBytes(*budget) << ", "
       << result.numOverBudget << " over it";
  os << ", " << result.numFailed << " not possible";
  for (const AutotuneCandidate &c : result.candidates)
    if (!c.error.empty()) {
      os << " (such as " << c.getFlags() << ": " << c.error << ")";
      break;
    }
  os << "\n";
  std::vector<std::vector<std::string>> rows = {
      {"#", "K", "M", "schedule", "V", "remat", "balance", "step (ms)",
       "bubble", "busiest (ms)", "peak rank memory", "fits"}};
  size_t shown = 0;
  for (const AutotuneCandidate &c : result.candidates) {
    if (!c.error.empty() || shown == limit)
      break;
    std::string balance;
    for (auto [i, n] : llvm::enumerate(c.balance))
      balance += (i ? "," : "") + std::to_string(n);
    rows.push_back({std::to_string(++shown), std::to_string(c.stages),
                    std::to_string(c.microbatches),
                    stringifyScheduleKind(c.schedule).str(),
                    std::to_string(std::max<int64_t>(1, c.virtualStages)),
                    stringifyRemat(c.remat).str(), balance, ms(c.stepSeconds),
                    percent(c.bubble), ms(c.maxBusySeconds),
                    formatBytes(c.getPeakBytes()), c.fits ? "yes" : "no"});
  }
  printTable(os, rows,
             [](size_t i) { return i <= 2 || i == 4 || (i >= 7 && i <= 10); });
  printFamilies(result, budget, os);

  const AutotuneCandidate *best = result.getBest();
  if (!best) {
    if (result.numOverBudget > 0) {
      const AutotuneCandidate *smallest = nullptr;
      for (const AutotuneCandidate &c : result.candidates)
        if (c.error.empty() &&
            (!smallest || c.getPeakBytes() < smallest->getPeakBytes()))
          smallest = &c;
      os << "why: nothing fits; the least memory any configuration needs is "
         << formatBytes(smallest->getPeakBytes()) << " ("
         << smallest->getFlags() << ")\n";
    }
    return;
  }
  os << "why: " << best->getFlags() << " predicts " << ms(best->stepSeconds)
     << " ms per step";
  // Configurations predicted as fast are ties (a schedule that degenerates
  // into another); the runner-up is the first slower one.
  auto same = [&](const AutotuneCandidate &c) {
    return std::abs(c.stepSeconds - best->stepSeconds) <=
           1e-9 * best->stepSeconds;
  };
  size_t tied = 0, next = 1;
  while (next < size_t(result.numFitting) && same(result.candidates[next])) {
    ++tied;
    ++next;
  }
  if (tied > 0)
    os << " (as fast as " << tied
       << (tied == 1 ? " other configuration" : " others")
       << "; kept for the least memory, then the fewest micro-batches, then "
          "the order of schedules and remat policies)";
  if (next < size_t(result.numFitting)) {
    const AutotuneCandidate &runnerUp = result.candidates[next];
    double gain = runnerUp.stepSeconds > 0
                      ? 1.0 - best->stepSeconds / runnerUp.stepSeconds
                      : 0.0;
    os << ", " << percent(gain) << " below the runner-up "
       << runnerUp.getFlags() << " (" << ms(runnerUp.stepSeconds)
       << " ms): bubble " << percent(best->bubble) << " against "
       << percent(runnerUp.bubble) << ", busiest rank "
       << ms(best->maxBusySeconds) << " ms against "
       << ms(runnerUp.maxBusySeconds) << " ms";
  }
  os << "\n";
  if (result.numOverBudget > 0) {
    for (const AutotuneCandidate &c : result.candidates)
      if (c.error.empty() && !c.fits && c.stepSeconds < best->stepSeconds) {
        os << "     faster but over the budget: " << c.getFlags() << " ("
           << ms(c.stepSeconds) << " ms) needs "
           << formatBytes(c.getPeakBytes()) << "\n";
        break;
      }
  }
}
