//===- partition_bench.cpp - Partitioner scaling benchmark ------*- C++ -*-===//
//
// Times partitionOptimal on random models from 1,000 to 100,000 layers and
// 4 to 256 stages, without a memory budget and with the tightest feasible
// one. Built with everything as build/bench/partition_bench. On the 2-core
// build machine L = 10,000, K = 16 takes about 30 ms; time grows as
// K * (L - K + 1).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Partition.h"

#include <chrono>
#include <cstdio>
#include <random>

using namespace mlir::gpipe;

static PartitionProblem randomProblem(int numLayers, int numStages,
                                      unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> real(0, 1);
  std::uniform_int_distribution<int64_t> bytes(1 << 20, 64 << 20);
  PartitionProblem p;
  p.numStages = numStages;
  for (int i = 0; i < numLayers; ++i) {
    p.layerTime.push_back(1e-3 * (0.5 + real(rng)));
    p.layerMemory.push_back(bytes(rng));
  }
  for (int i = 0; i + 1 < numLayers; ++i)
    p.boundaryTime.push_back(1e-4 * real(rng));
  p.stageFixedMemory = int64_t(1) << 30;
  return p;
}

static double millisecondsOf(const PartitionProblem &p, double &bottleneck) {
  auto start = std::chrono::steady_clock::now();
  PartitionResult result = partitionOptimal(p);
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  bottleneck = result.ok() ? result.partition.bottleneck : -1;
  return ms;
}

int main() {
  std::printf("%8s %5s %14s %14s %12s\n", "layers", "K", "no budget ms",
              "tight ms", "bottleneck");
  for (int numLayers : {1000, 10000, 100000}) {
    for (int numStages : {4, 16, 64, 256}) {
      PartitionProblem p = randomProblem(numLayers, numStages, 42);
      double bottleneck = 0, tightBottleneck = 0;
      double freeMs = millisecondsOf(p, bottleneck);
      p.memoryBudget = smallestFeasibleBudget(p);
      double tightMs = millisecondsOf(p, tightBottleneck);
      std::printf("%8d %5d %14.2f %14.2f %12.6f\n", numLayers, numStages,
                  freeMs, tightMs, tightBottleneck);
    }
  }
  return 0;
}
