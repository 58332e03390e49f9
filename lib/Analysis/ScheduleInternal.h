//===- ScheduleInternal.h - What the schedule files share -------*- C++ -*-===//
//
// The helpers lib/Analysis/Schedule*.cpp share (Schedule.cpp lists the
// files): not part of Schedule.h's interface.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_LIB_ANALYSIS_SCHEDULEINTERNAL_H
#define GPIPE_LIB_ANALYSIS_SCHEDULEINTERNAL_H

#include "gpipe/Analysis/Schedule.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::gpipe::detail {

/// Per-rank compute orders of F, B, I and W actions (no R, no Step): what the
/// generators produce; `finishOrders` completes them.
using ComputeOrders = std::vector<std::vector<Action>>;

/// "" if every duration in `options` is usable, else the problem
/// (ScheduleCommunication.cpp).
std::string checkDurations(const ScheduleOptions &options);

/// GPipe's and 1F1B's compute orders, one stage per rank; `split` splits
/// 1F1B's backwards into I and W (ScheduleGPipe.cpp).
Schedule makeGPipeOrder(int numStages, int numMicrobatches,
                        const ScheduleOptions &options);
Schedule make1F1BOrder(int numStages, int numMicrobatches,
                       const ScheduleOptions &options, bool split = false);

/// What the zero-bubble list scheduler works from: the stage map, per-stage
/// durations of F, I and W (all >= 1) and per-stage activation limits (>= 1).
struct ListSchedulerInput {
  int numMicrobatches = 0;
  std::vector<int> stageToRank;
  std::vector<int64_t> forwardTicks, inputTicks, weightTicks;
  std::vector<int> maxActivations;
  /// Per rank, the most activations its stages hold together (counted as
  /// `maxActivations` counts them); empty: no such limit. For ranks of two
  /// stages (the V-shape) only: a rank starts a micro-batch on its first
  /// stage only while, besides it, one slot stays free for the oldest
  /// micro-batch it started that has yet to run on its second stage; that
  /// one therefore always can, finishes and frees its slots, so the
  /// scheduler cannot get stuck with a limit of at least 2. With three or
  /// more stages a rank it can (round-robin, V = 3, K = 2, M = 2, limit 4).
  std::vector<int> maxRankActivations;
  /// Per stage, the most forwards it runs before its first I (its warm-up),
  /// on top of `maxActivations`; empty or a missing entry: no such limit.
  std::vector<int> warmupForwards;
  /// Prefer an F to an I when both can run.
  bool forwardFirst = false;
  /// Leave a W for later when an I of the rank becomes ready before it
  /// would end.
  bool waitForInput = false;
  /// Prefer a W to an F when both can run (a W frees the activations and
  /// the output gradients its I left).
  bool weightFirst = false;
  /// Among a rank's stages: the later stage first (true), or the lowest
  /// micro-batch first, then the later stage (false).
  bool laterStageFirst = false;
};

/// The zero-bubble list schedule of `in`; its length in ticks to
/// `makespan` when given (ScheduleZeroBubble.cpp).
ComputeOrders runZeroBubbleListScheduler(const ListSchedulerInput &in,
                                         int64_t *makespan = nullptr);

/// ZB-V's compute orders (ScheduleZeroBubble.cpp).
ComputeOrders buildZBVOrders(int numRanks, int numMicrobatches);

} // namespace mlir::gpipe::detail

#endif // GPIPE_LIB_ANALYSIS_SCHEDULEINTERNAL_H
