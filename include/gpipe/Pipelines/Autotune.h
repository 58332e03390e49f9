//===- Autotune.h - The joint search behind gpipe-compile --autotune -*- C++
//-*-===//
//
// Searches micro-batch count (the divisors of a replica's batch), schedule
// (every generated one the compiler has), re-materialization (stage, none)
// and, through the partition pass, the time-optimal partition of each, for
// the fastest predicted step whose exact memory plan fits the budget on
// every rank. Each configuration is compiled for real (a copy of the model
// through `buildGPipePipeline`: partition, schedule, verification, memory
// plan), so its predicted step time is the timeline the compiled model
// carries and its memory the arenas gpipe-run allocates. Options the user
// gave (--microbatches, --schedule, --remat, --virtual-stages, --balance)
// pin their dimension. Deterministic: ties go to less memory, then fewer
// micro-batches, then the schedules' and remat policies' order.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_PIPELINES_AUTOTUNE_H
#define GPIPE_PIPELINES_AUTOTUNE_H

#include "gpipe/Pipelines/Pipelines.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::gpipe {

/// One configuration the search compiled (or tried to).
struct AutotuneCandidate {
  /// Pipeline ranks K.
  int64_t stages = 1;
  int64_t microbatches = 1;
  ScheduleKind schedule = ScheduleKind::GPipe;
  int64_t virtualStages = 1;
  Remat remat = Remat::Stage;
  /// Layers per stage of the partition it got (or was pinned to).
  std::vector<int64_t> balance;
  /// Predicted step time and bubble fraction of the compiled schedule.
  double stepSeconds = 0, bubble = 0;
  /// The busiest rank's compute time per step.
  double maxBusySeconds = 0;
  /// Per rank, the arena its memory plan needs.
  std::vector<int64_t> arenaBytes;
  /// Compiled and within the budget.
  bool fits = false;
  /// Why it did not compile ("" when it did).
  std::string error;

  int64_t getPeakBytes() const;
  /// "--stages 2 --microbatches 8 --schedule 1f1b --remat none --balance
  /// 3,4" (and --virtual-stages when the schedule has more than one stage
  /// per rank).
  std::string getFlags() const;
};

struct AutotuneResult {
  /// Every configuration compiled, fastest fitting first, then the ones over
  /// the budget (fastest first); then the ones that did not compile.
  std::vector<AutotuneCandidate> candidates;
  int64_t numFitting = 0, numOverBudget = 0, numFailed = 0;
  /// The ranks searched: 1 to maxRanks, or just maxRanks.
  int64_t minRanks = 1, maxRanks = 1;
  /// What the predictions rest on, for the report.
  std::string costModel;
  /// The best fitting configuration, if any.
  const AutotuneCandidate *getBest() const {
    return numFitting > 0 ? &candidates.front() : nullptr;
  }
};

/// Searches the configurations of `model` (the loaded nn module; it is not
/// changed) around `options`, with `budget` per rank (none: everything
/// fits), on `options.stages` ranks, or on every K from 1 to `maxStages`
/// when given. Fails only on a model the search cannot start from (no network
/// function); a configuration that does not compile is a candidate with an
/// error.
FailureOr<AutotuneResult> autotune(ModuleOp model,
                                   const GPipePipelineOptions &options,
                                   std::optional<int64_t> budget,
                                   std::optional<int64_t> maxStages = {});

/// The ranked table (top `limit`), the counts, and why the best wins.
void printAutotuneReport(const AutotuneResult &result,
                         std::optional<int64_t> budget, llvm::raw_ostream &os,
                         size_t limit = 10);

/// `--remat auto`: the remat policy and layers to recompute for `options`
/// (its other choices fixed) that fit `budget` exactly at the least
/// recompute time, by a greedy order: `none` when everything kept fits;
/// else `selective` with the fewest layers, taken in order of kept bytes
/// per second of recompute (the most memory for the least time first),
/// whose memory plan fits; else `stage`. Every step is a real compile of a
/// copy of `model`. Prints what it tried to `os`. Fails with an error when
/// not even `stage` fits.
struct RecomputeChoice {
  Remat remat = Remat::None;
  std::vector<std::string> layers;
  int64_t peakBytes = 0;
};
FailureOr<RecomputeChoice>
chooseRecomputeLayers(ModuleOp model, const GPipePipelineOptions &options,
                      int64_t budget, llvm::raw_ostream &os);

/// Sets `options` to `candidate`'s stages, micro-batches, schedule, virtual
/// stages, remat and balance.
void applyAutotuneChoice(GPipePipelineOptions &options,
                         const AutotuneCandidate &candidate);

} // namespace mlir::gpipe

#endif // GPIPE_PIPELINES_AUTOTUNE_H
