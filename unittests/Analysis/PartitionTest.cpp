//===- PartitionTest.cpp - Stage partitioning tests -------------*- C++ -*-===//
//
// Checks partitionOptimal against brute force (every set of K-1 cuts) on
// thousands of random small instances, against a quadratic DP on medium ones,
// and on a 10,000-layer model; partitionManual, every error message, and
// parseBytes / formatBytes.
//
// Exactness: the brute force evaluates stage times with the formula the
// header documents, (P[b] + out(b)) - (P[a] - in(a)) with P summed left to
// right, so bottlenecks, stage times and (with the same lexicographic
// tie-break) boundaries are compared with exact equality. Instances whose
// values are small multiples of 1/4 make every sum exact, and for those a
// second brute force that adds each stage's terms naively must agree exactly
// too.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

using namespace mlir::gpipe;

namespace {

//===----------------------------------------------------------------------===//
// Brute force
//===----------------------------------------------------------------------===//

struct BruteResult {
  bool feasible = false;
  std::vector<int> firstLayer;
  double bottleneck = 0;
  /// Smallest budget any K-partition fits (budget ignored); always set.
  int64_t smallestBudget = std::numeric_limits<int64_t>::max();
};

double boundaryAt(const PartitionProblem &p, int cut) {
  // Cost of the cut before layer `cut` (after layer cut-1).
  return p.boundaryTime.empty() ? 0.0 : p.boundaryTime[cut - 1];
}

/// The header's canonical stage time.
double canonicalStageTime(const PartitionProblem &p, int first, int end) {
  int l = static_cast<int>(p.layerTime.size());
  double pa = 0, pb = 0, prefix = 0;
  for (int i = 0; i <= l; ++i) {
    if (i > 0)
      prefix = prefix + p.layerTime[i - 1];
    if (i == first)
      pa = prefix;
    if (i == end)
      pb = prefix;
  }
  double out = end < l ? boundaryAt(p, end) : 0.0;
  double in = first > 0 ? boundaryAt(p, first) : 0.0;
  return (pb + out) - (pa - in);
}

/// Each stage's terms added one by one: exact only for dyadic instances.
double naiveStageTime(const PartitionProblem &p, int first, int end) {
  int l = static_cast<int>(p.layerTime.size());
  double t = 0;
  if (first > 0)
    t += boundaryAt(p, first);
  for (int i = first; i < end; ++i)
    t += p.layerTime[i];
  if (end < l)
    t += boundaryAt(p, end);
  return t;
}

int64_t stageMemoryOf(const PartitionProblem &p, int first, int end) {
  int64_t m = p.stageFixedMemory;
  for (int i = first; i < end && !p.layerMemory.empty(); ++i)
    m += p.layerMemory[i];
  return m;
}

/// Enumerates every choice of K-1 cuts among the L-1 positions in
/// lexicographic order, keeping the first of minimal bottleneck.
BruteResult bruteForce(const PartitionProblem &p, bool naive) {
  int l = static_cast<int>(p.layerTime.size());
  int k = p.numStages;
  BruteResult best;
  std::vector<int> cuts{0};
  // Recursive enumeration; depth K <= 12.
  auto recurse = [&](auto &self) -> void {
    int placed = static_cast<int>(cuts.size()) - 1;
    if (placed == k - 1) {
      cuts.push_back(l);
      double bottleneck = 0;
      int64_t maxMemory = 0;
      bool fits = true;
      for (int s = 0; s < k; ++s) {
        double t = naive ? naiveStageTime(p, cuts[s], cuts[s + 1])
                         : canonicalStageTime(p, cuts[s], cuts[s + 1]);
        bottleneck = s == 0 ? t : std::max(bottleneck, t);
        int64_t m = stageMemoryOf(p, cuts[s], cuts[s + 1]);
        maxMemory = std::max(maxMemory, m);
        if (p.memoryBudget && m > *p.memoryBudget)
          fits = false;
      }
      best.smallestBudget = std::min(best.smallestBudget, maxMemory);
      if (fits && (!best.feasible || bottleneck < best.bottleneck)) {
        best.feasible = true;
        best.bottleneck = bottleneck;
        best.firstLayer = cuts;
      }
      cuts.pop_back();
      return;
    }
    // Leave room for the remaining cuts.
    for (int c = cuts.back() + 1; c <= l - (k - 1 - placed); ++c) {
      cuts.push_back(c);
      self(self);
      cuts.pop_back();
    }
  };
  recurse(recurse);
  return best;
}

//===----------------------------------------------------------------------===//
// Random instances
//===----------------------------------------------------------------------===//

/// Draws an instance; `dyadic` is set when every value is a multiple of 1/4
/// small enough that all sums are exact in double.
PartitionProblem randomProblem(std::mt19937 &rng, bool &dyadic) {
  auto uniform = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  auto real = [&]() {
    return std::uniform_real_distribution<double>(0, 1)(rng);
  };

  PartitionProblem p;
  int l = uniform(1, 12);
  p.numStages = uniform(1, l);
  int timeMode = uniform(0, 3);
  dyadic = timeMode <= 1;
  for (int i = 0; i < l; ++i) {
    double t = 0;
    switch (timeMode) {
    case 0: // many ties and zeros
      t = uniform(0, 3);
      break;
    case 1: // quarters
      t = uniform(0, 40) / 4.0;
      break;
    case 2: // reals, some zeros
      t = uniform(0, 4) == 0 ? 0.0 : real();
      break;
    default: // wide dynamic range
      t = std::ldexp(real(), uniform(-30, 30));
      break;
    }
    p.layerTime.push_back(t);
  }

  int boundaryMode = uniform(0, 4);
  if (boundaryMode != 0 && l > 1) {
    for (int i = 0; i + 1 < l; ++i) {
      double b = 0;
      switch (boundaryMode) {
      case 1:
        b = 0;
        break;
      case 2: // dominant, non-monotone
        b = dyadic ? uniform(0, 20) : real() * 10;
        break;
      default: // comparable to the layers
        b = dyadic ? uniform(0, 8) / 4.0 : real() * 0.5;
        break;
      }
      p.boundaryTime.push_back(b);
    }
  }

  int memoryMode = uniform(0, 3);
  if (memoryMode != 0) {
    for (int i = 0; i < l; ++i)
      p.layerMemory.push_back(uniform(0, 3) == 0 ? 0 : uniform(1, 100));
    if (uniform(0, 1))
      p.stageFixedMemory = uniform(0, 30);
  }
  if (memoryMode >= 2) {
    int64_t total = p.stageFixedMemory;
    for (int64_t m : p.layerMemory)
      total += m;
    // From hopeless to generous, often right at the threshold.
    p.memoryBudget = uniform(0, static_cast<int>(total) + 10);
  }
  return p;
}

void expectValid(const PartitionProblem &p, const Partition &part) {
  int l = static_cast<int>(p.layerTime.size());
  int k = p.numStages;
  ASSERT_EQ(part.firstLayer.size(), static_cast<size_t>(k + 1));
  EXPECT_EQ(part.firstLayer.front(), 0);
  EXPECT_EQ(part.firstLayer.back(), l);
  ASSERT_EQ(part.stageTime.size(), static_cast<size_t>(k));
  ASSERT_EQ(part.stageMemory.size(), static_cast<size_t>(k));
  double bottleneck = 0;
  for (int s = 0; s < k; ++s) {
    EXPECT_LT(part.firstLayer[s], part.firstLayer[s + 1]);
    EXPECT_EQ(part.stageTime[s], canonicalStageTime(p, part.firstLayer[s],
                                                    part.firstLayer[s + 1]));
    EXPECT_EQ(part.stageMemory[s],
              stageMemoryOf(p, part.firstLayer[s], part.firstLayer[s + 1]));
    if (p.memoryBudget) {
      EXPECT_LE(part.stageMemory[s], *p.memoryBudget);
    }
    bottleneck = std::max(bottleneck, part.stageTime[s]);
  }
  EXPECT_EQ(part.bottleneck, bottleneck);
}

std::string describe(const PartitionProblem &p) {
  std::string s = "L=" + std::to_string(p.layerTime.size()) +
                  " K=" + std::to_string(p.numStages) + " times:";
  char buf[64];
  for (double t : p.layerTime) {
    std::snprintf(buf, sizeof(buf), " %.17g", t);
    s += buf;
  }
  s += " boundary:";
  for (double t : p.boundaryTime) {
    std::snprintf(buf, sizeof(buf), " %.17g", t);
    s += buf;
  }
  s += " memory:";
  for (int64_t m : p.layerMemory)
    s += " " + std::to_string(m);
  s += " fixed=" + std::to_string(p.stageFixedMemory);
  if (p.memoryBudget)
    s += " budget=" + std::to_string(*p.memoryBudget);
  return s;
}

//===----------------------------------------------------------------------===//
// Optimal partition vs. brute force
//===----------------------------------------------------------------------===//

TEST(PartitionOptimal, MatchesBruteForceOnRandomInstances) {
  std::mt19937 rng(20240613);
  const int numInstances = 3000;
  int feasible = 0, infeasible = 0, dyadicCount = 0, withBudget = 0;
  for (int n = 0; n < numInstances; ++n) {
    bool dyadic = false;
    PartitionProblem p = randomProblem(rng, dyadic);
    SCOPED_TRACE("instance " + std::to_string(n) + ": " + describe(p));
    BruteResult brute = bruteForce(p, /*naive=*/false);
    PartitionResult result = partitionOptimal(p);
    withBudget += p.memoryBudget.has_value();

    ASSERT_EQ(result.ok(), brute.feasible) << result.error;
    if (!brute.feasible) {
      ++infeasible;
      ASSERT_TRUE(result.smallestFeasibleBudget.has_value());
      EXPECT_EQ(*result.smallestFeasibleBudget, brute.smallestBudget);
      continue;
    }
    ++feasible;
    expectValid(p, result.partition);
    EXPECT_EQ(result.partition.bottleneck, brute.bottleneck);
    EXPECT_EQ(result.partition.firstLayer, brute.firstLayer);

    // The manual evaluation of the same cuts agrees bit for bit.
    PartitionResult manual = partitionManual(p, result.partition.balance());
    ASSERT_TRUE(manual.ok()) << manual.error;
    EXPECT_EQ(manual.partition.stageTime, result.partition.stageTime);
    EXPECT_EQ(manual.partition.bottleneck, result.partition.bottleneck);

    if (dyadic) {
      ++dyadicCount;
      BruteResult naive = bruteForce(p, /*naive=*/true);
      ASSERT_TRUE(naive.feasible);
      EXPECT_EQ(result.partition.bottleneck, naive.bottleneck);
      EXPECT_EQ(result.partition.firstLayer, naive.firstLayer);
    }
    // The smallest budget agrees with brute force whether or not it binds.
    std::optional<int64_t> smallest = smallestFeasibleBudget(p);
    ASSERT_TRUE(smallest.has_value());
    EXPECT_EQ(*smallest, brute.smallestBudget);
  }
  std::printf("[ brute    ] %d instances: %d feasible (%d dyadic), %d over "
              "budget, %d with a budget\n",
              numInstances, feasible, dyadicCount, infeasible, withBudget);
  // The generator must exercise both outcomes.
  EXPECT_GT(feasible, 1000);
  EXPECT_GT(infeasible, 100);
}

/// Exact min-max by the textbook O(K L^2) DP on the canonical stage times.
double quadraticDp(const PartitionProblem &p) {
  int l = static_cast<int>(p.layerTime.size());
  int k = p.numStages;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> prefix(l + 1, 0.0);
  for (int i = 0; i < l; ++i)
    prefix[i + 1] = prefix[i] + p.layerTime[i];
  auto time = [&](int a, int b) {
    double out = b < l ? boundaryAt(p, b) : 0.0;
    double in = a > 0 ? boundaryAt(p, a) : 0.0;
    return (prefix[b] + out) - (prefix[a] - in);
  };
  std::vector<int64_t> mem(l + 1, 0);
  for (int i = 0; i < l; ++i)
    mem[i + 1] = mem[i] + (p.layerMemory.empty() ? 0 : p.layerMemory[i]);
  std::vector<double> prev(l + 1, inf), cur(l + 1, inf);
  prev[0] = 0;
  for (int s = 1; s <= k; ++s) {
    std::fill(cur.begin(), cur.end(), inf);
    for (int b = s; b <= l; ++b)
      for (int a = s - 1; a < b; ++a) {
        if (prev[a] == inf)
          continue;
        if (p.memoryBudget &&
            p.stageFixedMemory + mem[b] - mem[a] > *p.memoryBudget)
          continue;
        cur[b] = std::min(cur[b], std::max(prev[a], time(a, b)));
      }
    std::swap(prev, cur);
  }
  return prev[l];
}

TEST(PartitionOptimal, MatchesQuadraticDpOnMediumInstances) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> real(0, 1);
  for (int n = 0; n < 60; ++n) {
    PartitionProblem p;
    int l = std::uniform_int_distribution<int>(1, 150)(rng);
    p.numStages = std::uniform_int_distribution<int>(1, std::min(l, 24))(rng);
    for (int i = 0; i < l; ++i) {
      p.layerTime.push_back(real(rng) < 0.1 ? 0.0 : real(rng));
      p.layerMemory.push_back(
          std::uniform_int_distribution<int64_t>(0, 1000)(rng));
    }
    for (int i = 0; i + 1 < l; ++i)
      p.boundaryTime.push_back(real(rng) * (n % 3));
    if (n % 2) {
      std::optional<int64_t> smallest = smallestFeasibleBudget(p);
      ASSERT_TRUE(smallest.has_value());
      p.memoryBudget = *smallest + (n % 4 == 1 ? 0 : 300);
    }
    SCOPED_TRACE("instance " + std::to_string(n));
    PartitionResult result = partitionOptimal(p);
    ASSERT_TRUE(result.ok()) << result.error;
    expectValid(p, result.partition);
    EXPECT_EQ(result.partition.bottleneck, quadraticDp(p));
  }
}

TEST(PartitionOptimal, NonMonotoneBoundaryCosts) {
  // Cutting after layer 0 or 2 is cheap, after layer 1 very expensive: the
  // even split [0,2) [2,4), best by compute alone, pays 100 on both sides.
  PartitionProblem p;
  p.layerTime = {1, 1, 1, 1};
  p.boundaryTime = {0.5, 100, 0.5};
  p.numStages = 2;
  PartitionResult result = partitionOptimal(p);
  ASSERT_TRUE(result.ok()) << result.error;
  // Cut after layer 0: stages 1 + 0.5 and 3 + 0.5; after layer 2: 3.5, 1.5.
  EXPECT_EQ(result.partition.firstLayer, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(result.partition.bottleneck, 3.5);
  EXPECT_EQ(result.partition.stageTime, (std::vector<double>{1.5, 3.5}));
}

TEST(PartitionOptimal, TieBreakPrefersEarlierCuts) {
  PartitionProblem p;
  p.layerTime = {1, 0, 0, 1};
  p.numStages = 2;
  PartitionResult result = partitionOptimal(p);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.partition.firstLayer, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(result.partition.bottleneck, 1.0);
}

TEST(PartitionOptimal, BudgetForcesUnevenSplit) {
  PartitionProblem p;
  p.layerTime = {1, 1, 1, 1};
  p.layerMemory = {10, 10, 10, 40};
  p.memoryBudget = 40;
  p.numStages = 2;
  PartitionResult result = partitionOptimal(p);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.partition.firstLayer, (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(result.partition.bottleneck, 3.0);
  EXPECT_EQ(result.partition.stageMemory, (std::vector<int64_t>{30, 40}));
}

TEST(PartitionOptimal, SingleStageAndOneLayerPerStage) {
  PartitionProblem p;
  p.layerTime = {1, 2, 3};
  p.boundaryTime = {0.25, 0.5};
  p.numStages = 1;
  PartitionResult one = partitionOptimal(p);
  ASSERT_TRUE(one.ok()) << one.error;
  EXPECT_EQ(one.partition.firstLayer, (std::vector<int>{0, 3}));
  EXPECT_EQ(one.partition.bottleneck, 6.0);
  p.numStages = 3;
  PartitionResult each = partitionOptimal(p);
  ASSERT_TRUE(each.ok()) << each.error;
  EXPECT_EQ(each.partition.stageTime, (std::vector<double>{1.25, 2.75, 3.5}));
  EXPECT_EQ(each.partition.bottleneck, 3.5);
}

TEST(PartitionOptimal, TenThousandLayersSixteenStages) {
  std::mt19937 rng(10000);
  std::uniform_real_distribution<double> real(0, 1);
  PartitionProblem p;
  const int l = 10000;
  p.numStages = 16;
  for (int i = 0; i < l; ++i) {
    p.layerTime.push_back(1e-3 * (0.5 + real(rng)));
    p.layerMemory.push_back(
        std::uniform_int_distribution<int64_t>(1 << 20, 64 << 20)(rng));
  }
  for (int i = 0; i + 1 < l; ++i)
    p.boundaryTime.push_back(1e-4 * real(rng));
  p.stageFixedMemory = int64_t(1) << 30;

  auto run = [&](const char *what) {
    auto start = std::chrono::steady_clock::now();
    PartitionResult result = partitionOptimal(p);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf("[ timing   ] partitionOptimal L=%d K=%d %s: %.3f ms\n", l,
                p.numStages, what, seconds * 1e3);
    return result;
  };
  PartitionResult free = run("no budget");
  ASSERT_TRUE(free.ok()) << free.error;
  expectValid(p, free.partition);
  double total = 0;
  for (double t : p.layerTime)
    total += t;
  EXPECT_GE(free.partition.bottleneck, total / p.numStages);

  std::optional<int64_t> smallest = smallestFeasibleBudget(p);
  ASSERT_TRUE(smallest.has_value());
  p.memoryBudget = *smallest;
  PartitionResult tight = run("tightest budget");
  ASSERT_TRUE(tight.ok()) << tight.error;
  expectValid(p, tight.partition);
  EXPECT_GE(tight.partition.bottleneck, free.partition.bottleneck);
}

//===----------------------------------------------------------------------===//
// Manual balance
//===----------------------------------------------------------------------===//

TEST(PartitionManual, EvaluatesBalance) {
  PartitionProblem p;
  p.layerTime = {1, 2, 3, 4, 5};
  p.boundaryTime = {0.5, 0.25, 0.125, 1};
  p.layerMemory = {1, 2, 3, 4, 5};
  p.stageFixedMemory = 10;
  p.numStages = 3;
  PartitionResult result = partitionManual(p, {2, 2, 1});
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.partition.firstLayer, (std::vector<int>{0, 2, 4, 5}));
  EXPECT_EQ(result.partition.stageTime,
            (std::vector<double>{3.25, 0.25 + 7 + 1, 1 + 5}));
  EXPECT_EQ(result.partition.bottleneck, 8.25);
  EXPECT_EQ(result.partition.stageMemory, (std::vector<int64_t>{13, 17, 15}));
  EXPECT_EQ(result.partition.balance(), (std::vector<int>{2, 2, 1}));
}

TEST(PartitionManual, Errors) {
  PartitionProblem p;
  p.layerTime.assign(12, 1.0);
  p.numStages = 4;
  EXPECT_EQ(partitionManual(p, {3, 3, 6}).error,
            "expected 4 balance entries, one per stage, got 3");
  EXPECT_EQ(partitionManual(p, {3, 3, 6, 0}).error,
            "balance entry 3 is 0 but every stage needs at least 1 layer");
  EXPECT_EQ(partitionManual(p, {3, -1, 6, 4}).error,
            "balance entry 1 is -1 but every stage needs at least 1 layer");
  EXPECT_EQ(partitionManual(p, {3, 3, 3, 2}).error,
            "balance entries sum to 11 but the model has 12 layers");
  EXPECT_EQ(partitionManual(p, {3, 3, 3, 4}).error,
            "balance entries sum to 13 but the model has 12 layers");

  p.layerMemory.assign(12, int64_t(1) << 29); // 512 MiB each
  p.memoryBudget = int64_t(2) << 30;
  PartitionResult over = partitionManual(p, {2, 2, 5, 3});
  EXPECT_EQ(over.error,
            "stage 2 (layers 4 to 8) needs 2.5 GiB but the memory budget "
            "is 2.0 GiB");
  ASSERT_TRUE(over.smallestFeasibleBudget.has_value());
  EXPECT_EQ(*over.smallestFeasibleBudget, int64_t(5) << 29);
  EXPECT_TRUE(partitionManual(p, {3, 3, 3, 3}).ok());
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(PartitionErrors, StageCount) {
  PartitionProblem p;
  p.layerTime = {1, 2, 3};
  p.numStages = 0;
  EXPECT_EQ(partitionOptimal(p).error, "expected at least 1 stage, got 0");
  EXPECT_EQ(partitionManual(p, {}).error, "expected at least 1 stage, got 0");
  p.numStages = -2;
  EXPECT_EQ(partitionOptimal(p).error, "expected at least 1 stage, got -2");
  p.numStages = 4;
  EXPECT_EQ(partitionOptimal(p).error, "cannot cut 3 layers into 4 stages");
  p.layerTime.clear();
  p.numStages = 1;
  EXPECT_EQ(partitionOptimal(p).error, "expected at least 1 layer, got 0");
}

TEST(PartitionErrors, Shapes) {
  PartitionProblem p;
  p.layerTime = {1, 2, 3};
  p.numStages = 2;
  p.boundaryTime = {1, 2, 3, 4, 5};
  EXPECT_EQ(partitionOptimal(p).error,
            "expected 2 boundary times for 3 layers, got 5");
  p.boundaryTime = {1, 2};
  p.layerMemory = {1};
  EXPECT_EQ(partitionOptimal(p).error,
            "expected 3 layer memory sizes, one per layer, got 1");
}

TEST(PartitionErrors, Values) {
  PartitionProblem p;
  p.layerTime = {1, -2, 3};
  p.numStages = 2;
  EXPECT_EQ(partitionOptimal(p).error,
            "expected a non-negative finite time for layer 1, got -2");
  p.layerTime = {1, 2, std::nan("")};
  EXPECT_EQ(partitionOptimal(p).error,
            "expected a non-negative finite time for layer 2, got nan");
  p.layerTime = {1, 2, 3};
  p.boundaryTime = {0, std::numeric_limits<double>::infinity()};
  EXPECT_EQ(partitionOptimal(p).error,
            "expected a non-negative finite boundary time after layer 1, got "
            "inf");
  p.boundaryTime.clear();
  p.layerMemory = {1, 2, -3};
  EXPECT_EQ(partitionOptimal(p).error,
            "expected a non-negative memory size for layer 2, got -3");
  p.layerMemory.clear();
  p.stageFixedMemory = -1;
  EXPECT_EQ(partitionOptimal(p).error,
            "expected a non-negative fixed stage memory, got -1");
  p.stageFixedMemory = 0;
  p.memoryBudget = -5;
  EXPECT_EQ(partitionOptimal(p).error,
            "expected a non-negative memory budget, got -5");
  p.memoryBudget.reset();
  double big = std::numeric_limits<double>::max();
  p.layerTime = {big, big, 1};
  EXPECT_EQ(partitionOptimal(p).error,
            "expected the layer and boundary times to have a finite sum, got "
            "an overflow at layer 1");
  // Each prefix is finite, but stage [1, 3) costs big + 0 + big.
  p.layerTime = {0, 0, big};
  p.boundaryTime = {big, 0};
  EXPECT_EQ(partitionOptimal(p).error,
            "expected the layer and boundary times to have a finite sum, got "
            "an overflow");
  p.layerTime = {1, 2, 3};
  p.boundaryTime.clear();
  int64_t huge = std::numeric_limits<int64_t>::max() / 2 + 1;
  p.layerMemory = {huge, huge, 0};
  EXPECT_EQ(partitionOptimal(p).error,
            "expected the memory of all layers plus the fixed stage memory to "
            "fit in 64 bits, got an overflow at layer 1");
}

TEST(PartitionErrors, LayerExceedsBudget) {
  PartitionProblem p;
  p.layerTime.assign(10, 1.0);
  p.layerMemory.assign(10, int64_t(1) << 30);
  p.layerMemory[7] = int64_t(3435973837); // 3.2 GiB
  p.memoryBudget = int64_t(2) << 30;
  p.numStages = 4;
  PartitionResult result = partitionOptimal(p);
  EXPECT_EQ(result.error,
            "layer 7 needs 3.2 GiB but the memory budget is 2.0 GiB");
  ASSERT_TRUE(result.smallestFeasibleBudget.has_value());
  EXPECT_EQ(*result.smallestFeasibleBudget, smallestFeasibleBudget(p));

  p.layerMemory[7] = int64_t(1) << 30;
  p.stageFixedMemory = int64_t(3) << 29; // 1.5 GiB
  EXPECT_EQ(partitionOptimal(p).error,
            "layer 0 needs 2.5 GiB (including 1.5 GiB of fixed stage memory) "
            "but the memory budget is 2.0 GiB");

  // Sizes that print alike come with their exact byte counts.
  p.stageFixedMemory = 0;
  p.layerMemory[0] = (int64_t(2) << 30) + 1;
  EXPECT_EQ(partitionOptimal(p).error,
            "layer 0 needs 2.0 GiB (2147483649 bytes) but the memory budget "
            "is 2.0 GiB (2147483648 bytes)");
}

TEST(PartitionErrors, NoPartitionFitsBudget) {
  PartitionProblem p;
  p.layerTime.assign(10, 1.0);
  p.layerMemory.assign(10, int64_t(1) << 30); // 10 GiB in all
  p.memoryBudget = int64_t(2) << 30;
  p.numStages = 4;
  // Four stages of at most 2 GiB hold 8 layers; 3 GiB per stage is needed.
  PartitionResult result = partitionOptimal(p);
  EXPECT_EQ(result.error,
            "no partition into 4 stages fits the memory budget of 2.0 GiB; "
            "the smallest budget that fits is 3.0 GiB (3221225472 bytes)");
  ASSERT_TRUE(result.smallestFeasibleBudget.has_value());
  EXPECT_EQ(*result.smallestFeasibleBudget, int64_t(3) << 30);
  p.memoryBudget = *result.smallestFeasibleBudget;
  EXPECT_TRUE(partitionOptimal(p).ok());
  p.memoryBudget = *result.smallestFeasibleBudget - 1;
  EXPECT_FALSE(partitionOptimal(p).ok());
}

//===----------------------------------------------------------------------===//
// Byte sizes
//===----------------------------------------------------------------------===//

TEST(ByteSizes, Format) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes((1 << 20) - 1), "1.0 MiB");
  EXPECT_EQ(formatBytes(512 << 20), "512.0 MiB");
  EXPECT_EQ(formatBytes(3435973837), "3.2 GiB");
  EXPECT_EQ(formatBytes(int64_t(16) << 30), "16.0 GiB");
  EXPECT_EQ(formatBytes(int64_t(1) << 40), "1024.0 GiB");
  EXPECT_EQ(formatBytes(-1024), "-1.0 KiB");
  EXPECT_EQ(formatBytes(std::numeric_limits<int64_t>::min()),
            "-8589934592.0 GiB");
}

TEST(ByteSizes, Parse) {
  EXPECT_EQ(parseBytes("16GiB"), int64_t(16) << 30);
  EXPECT_EQ(parseBytes("512MiB"), int64_t(512) << 20);
  EXPECT_EQ(parseBytes("1.5GB"), int64_t(1500000000));
  EXPECT_EQ(parseBytes("4096"), int64_t(4096));
  EXPECT_EQ(parseBytes("4096B"), int64_t(4096));
  EXPECT_EQ(parseBytes("0"), int64_t(0));
  EXPECT_EQ(parseBytes("1.5 KiB"), int64_t(1536));
  EXPECT_EQ(parseBytes("1.1KiB"), int64_t(1126)); // 1126.4, rounded down
  EXPECT_EQ(parseBytes("16gib"), int64_t(16) << 30);
  EXPECT_EQ(parseBytes(" 8G "), int64_t(8) << 30);
  EXPECT_EQ(parseBytes("2k"), int64_t(2048));
  EXPECT_EQ(parseBytes("3KB"), int64_t(3000));
  EXPECT_EQ(parseBytes("1TiB"), int64_t(1) << 40);
  EXPECT_EQ(parseBytes("2TB"), int64_t(2000000000000));
  EXPECT_EQ(parseBytes("0.000000001GB"), int64_t(1));
  EXPECT_EQ(parseBytes("0.0000000019GB"), int64_t(1));
  EXPECT_EQ(parseBytes("007MB"), int64_t(7000000));
  EXPECT_EQ(parseBytes("9223372036854775807"),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(parseBytes("8388607.999999999999TiB"),
            int64_t(9223372036854775806)); // floor(2^63 - 1.0995)

  EXPECT_EQ(parseBytes(""), std::nullopt);
  EXPECT_EQ(parseBytes("  "), std::nullopt);
  EXPECT_EQ(parseBytes("GiB"), std::nullopt);
  EXPECT_EQ(parseBytes("-1GiB"), std::nullopt);
  EXPECT_EQ(parseBytes("1.GiB"), std::nullopt);
  EXPECT_EQ(parseBytes(".5GiB"), std::nullopt);
  EXPECT_EQ(parseBytes("1..5GiB"), std::nullopt);
  EXPECT_EQ(parseBytes("1e9"), std::nullopt);
  EXPECT_EQ(parseBytes("12XB"), std::nullopt);
  EXPECT_EQ(parseBytes("16 GiB extra"), std::nullopt);
  EXPECT_EQ(parseBytes("1 6GiB"), std::nullopt);
  EXPECT_EQ(parseBytes("9223372036854775808"), std::nullopt);
  EXPECT_EQ(parseBytes("8388608TiB"), std::nullopt); // 2^63
  EXPECT_EQ(parseBytes("99999999999999999999999999GiB"), std::nullopt);
}

TEST(ByteSizes, RoundTripThroughGiB) {
  for (int64_t gib : {1, 2, 16, 80, 141})
    EXPECT_EQ(parseBytes(std::to_string(gib) + "GiB"), gib << 30);
}

} // namespace
