//===- Partition.h - Stage partitioning -------------------------*- C++ -*-===//
//
// Cuts a chain of L layers into K contiguous, non-empty pipeline stages: the
// exact partition minimizing the slowest stage's time (compute plus boundary
// transfers) under an optional per-stage memory budget, or a manual balance
// (layers per stage) validated and evaluated under the same model. Also the
// byte-size parsing and printing behind `--memory-budget`. Plain C++17.
//
// Stage time. Stage [a, b) (layers a..b-1) costs, per micro-batch,
//
//   sum of layerTime[a..b-1] + in(a) + out(b)
//   in(a)  = a > 0 ? boundaryTime[a-1] : 0   (receive from stage before)
//   out(b) = b < L ? boundaryTime[b-1] : 0   (send to stage after)
//
// i.e. the cost of a cut is paid by BOTH neighbouring stages: with blocking
// point-to-point transfers the sender and the receiver are both busy for the
// whole transfer. It is evaluated in floating point as exactly
//
//   P[0] = 0, P[i+1] = P[i] + layerTime[i]          (left to right)
//   stageTime(a, b) = (P[b] + out(b)) - (P[a] - in(a))
//
// so every caller (and the brute force in the unit tests) gets bit-identical
// values. The absolute rounding error is a few ulps of the total model time,
// i.e. relative error about K x 1e-16 of the bottleneck.
//
// Stage memory. stageFixedMemory + sum of layerMemory[a..b-1], in exact
// 64-bit integers; with a budget, every stage must satisfy memory <= budget.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_ANALYSIS_PARTITION_H
#define GPIPE_ANALYSIS_PARTITION_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::gpipe {

/// A partitioning problem over L layers (layer indices are 0-based).
struct PartitionProblem {
  /// L entries: seconds one micro-batch spends in layer i (forward, backward
  /// and recompute together). Finite and >= 0.
  std::vector<double> layerTime;
  /// L-1 entries (or empty: no transfer cost): seconds of cutting after
  /// layer i, charged to both the stage ending at i and the stage starting at
  /// i+1 (see the file comment). Finite and >= 0; need not be monotone.
  std::vector<double> boundaryTime;
  /// L entries (or empty: all zero): bytes layer i adds to its stage. >= 0.
  std::vector<int64_t> layerMemory;
  /// Bytes every stage needs whatever its layers (runtime workspace). >= 0.
  int64_t stageFixedMemory = 0;
  /// Per-stage memory cap in bytes, if any. >= 0.
  std::optional<int64_t> memoryBudget;
  /// K, the number of stages.
  int numStages = 1;
};

/// A contiguous partition into K stages and its cost.
struct Partition {
  /// K+1 boundaries: stage s holds layers firstLayer[s] .. firstLayer[s+1]-1;
  /// firstLayer[0] = 0, firstLayer[K] = L.
  std::vector<int> firstLayer;
  /// The slowest stage's time: max of stageTime.
  double bottleneck = 0;
  /// K entries, seconds per micro-batch, boundary costs included.
  std::vector<double> stageTime;
  /// K entries, bytes, stageFixedMemory included.
  std::vector<int64_t> stageMemory;

  int numStages() const { return static_cast<int>(stageTime.size()); }
  /// Layers per stage (the `--balance` form of this partition).
  std::vector<int> balance() const;
};

/// A partition, or why there is none.
struct PartitionResult {
  Partition partition; ///< meaningful only if ok()
  std::string error;   ///< lower-case message naming the offending values
  /// Set when the only problem is the memory budget. partitionOptimal (a
  /// layer alone, or every partition into K stages, exceeds it): the smallest
  /// per-stage budget for which some partition into K stages fits. Exact.
  /// partitionManual (a stage of the balance exceeds it): the smallest budget
  /// that balance fits, i.e. its largest stage memory.
  std::optional<int64_t> smallestFeasibleBudget;
  bool ok() const { return error.empty(); }
};

/// The partition into exactly problem.numStages non-empty contiguous stages
/// that minimizes the slowest stage's time, every stage within the memory
/// budget. Exact: the bottleneck is the minimum over all such partitions of
/// the floating-point stage times defined above. Ties are broken towards the
/// lexicographically smallest firstLayer vector (earlier cuts first).
/// O(63 * K * (L - K + 1)) time and O(K * (L - K + 1)) bytes (algorithm in
/// Partition.cpp); L = 10,000, K = 16 takes about 30 ms on two x86 cores.
PartitionResult partitionOptimal(const PartitionProblem &problem);

/// The partition with balance[s] layers in stage s, validated (K entries,
/// each >= 1, summing to L, every stage within the memory budget) and
/// evaluated like partitionOptimal's result.
PartitionResult partitionManual(const PartitionProblem &problem,
                                const std::vector<int> &balance);

/// The smallest per-stage memory budget for which `problem` has a partition
/// into problem.numStages stages (its own memoryBudget ignored), or
/// std::nullopt if the problem is malformed.
std::optional<int64_t> smallestFeasibleBudget(const PartitionProblem &problem);

/// Human-readable size: "512 B", "1.5 KiB", "3.2 MiB", "2.0 GiB" (binary
/// units, one decimal; GiB is the largest unit).
std::string formatBytes(int64_t bytes);

/// Parses a `--memory-budget` value: a non-negative decimal number with an
/// optional unit, case-insensitive, optional space before it: B; KiB, MiB,
/// GiB, TiB (powers of 1024); KB, MB, GB, TB (powers of 1000, so "1.5GB" is
/// 1,500,000,000 bytes); K, M, G, T as the binary units. Fractional bytes are
/// rounded down, exactly (no floating point). std::nullopt on anything else
/// or on overflow of int64_t.
std::optional<int64_t> parseBytes(std::string_view text);

/// The error for a `--memory-budget` given with an empty value (which is not
/// the same as no budget).
inline constexpr const char *kEmptyMemoryBudget =
    "empty memory budget; give a size such as 512MiB or leave the option out";

} // namespace mlir::gpipe

#endif // GPIPE_ANALYSIS_PARTITION_H
