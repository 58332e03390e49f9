//===- Partition.cpp - Stage partitioning -----------------------*- C++ -*-===//
//
// Implements the exact min-max contiguous partitioner, manual balances and
// byte-size parsing. The algorithm of partitionOptimal:
//
// Write the stage time as stageTime(a, b) = fl(A[b] - B[a]) with
// A[b] = fl(P[b] + out(b)) and B[a] = fl(P[a] - in(a)) (Partition.h). For a
// threshold T, feasible(T) asks whether some partition into exactly K
// non-empty stages has every stage time <= T and every stage in the memory
// budget. It is a DP over suffixes: g[k][i] = "layers i..L-1 split into
// exactly k such stages", g[0][L] = true and
//
//   g[k][i] = exists j in (i, hi(i)] with g[k-1][j] and fl(A[j] - B[i]) <= T
//
// where hi(i) is the last end that keeps [i, j) in the budget (prefix memory
// is non-decreasing, so the valid ends of a stage starting at i form the
// interval (i, hi(i)], and hi is non-decreasing in i). Floating-point
// subtraction is monotone in its first operand, so the test holds for some j
// iff it holds for the j of smallest A[j]: a sliding-window minimum (monotone
// deque) over the window (i, hi(i)], whose two ends only move left as i
// decreases, answers each row in O(L). Boundary costs need not be monotone:
// they enter through A and B, and nothing assumes that a sub-interval of a
// feasible stage is feasible. Row k is needed only for i in [K-k, L-k], so
// feasible(T) costs O(K * (L - K + 1)); it is exact with respect to the
// floating-point stage times.
//
// feasible is monotone in T and the optimum is the smallest T for which it
// holds. Non-negative doubles are ordered like their bit patterns read as
// unsigned integers, so a binary search over the 2^63 bit patterns in
// [+0.0, +inf] finds that smallest double exactly in at most 63 probes,
// without ever listing the O(L^2) candidate stage times: O(63 * K * L) in all
// (L = 10,000, K = 16: about 10^7 deque steps, ~30 ms). The optimal T is then
// the bottleneck of some partition, bit for bit. (A plain O(K * L^2) DP would
// take 1.6e9 steps there.)
//
// The partition is rebuilt front to back from the g table at the optimum,
// taking at each stage the smallest end j that leaves a feasible suffix: the
// lexicographically smallest firstLayer among all optimal partitions.
//
// Memory feasibility alone (stage memory only grows with the stage, so
// splitting never hurts and "at most K stages" equals "exactly K stages" when
// K <= L) is a greedy count, and the smallest budget that fits is a binary
// search over integers with that count as the test; both exact.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Partition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

namespace mlir::gpipe {

std::vector<int> Partition::balance() const {
  std::vector<int> result;
  for (size_t s = 0; s + 1 < firstLayer.size(); ++s)
    result.push_back(firstLayer[s + 1] - firstLayer[s]);
  return result;
}

//===----------------------------------------------------------------------===//
// Byte sizes
//===----------------------------------------------------------------------===//

static std::string formatMagnitude(uint64_t bytes) {
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  static const char *const units[] = {"KiB", "MiB", "GiB"};
  int unit = 0;
  double scale = 1024.0;
  while (unit < 2 && static_cast<double>(bytes) >= scale * 1024.0) {
    scale *= 1024.0;
    ++unit;
  }
  double value = static_cast<double>(bytes) / scale;
  // 1048575 B is 1023.999 KiB: print it as 1.0 MiB, not 1024.0 KiB.
  if (unit < 2 && std::round(value * 10.0) >= 1024.0 * 10.0) {
    value /= 1024.0;
    ++unit;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.1f %s", value, units[unit]);
  return buffer;
}

std::string formatBytes(int64_t bytes) {
  if (bytes >= 0)
    return formatMagnitude(static_cast<uint64_t>(bytes));
  // Negate in unsigned arithmetic: -INT64_MIN does not fit in int64_t.
  return "-" + formatMagnitude(0 - static_cast<uint64_t>(bytes));
}

std::optional<int64_t> parseBytes(std::string_view text) {
  auto isSpace = [](char c) { return c == ' ' || c == '\t'; };
  auto isDigit = [](char c) { return c >= '0' && c <= '9'; };
  size_t pos = 0, end = text.size();
  while (pos < end && isSpace(text[pos]))
    ++pos;
  while (end > pos && isSpace(text[end - 1]))
    --end;

  // number := digits ('.' digits)?
  std::vector<int> digits; // integer then fraction digits, most significant
  size_t fractionDigits = 0;
  while (pos < end && isDigit(text[pos]))
    digits.push_back(text[pos++] - '0');
  if (digits.empty())
    return std::nullopt;
  if (pos < end && text[pos] == '.') {
    ++pos;
    while (pos < end && isDigit(text[pos])) {
      digits.push_back(text[pos++] - '0');
      ++fractionDigits;
    }
    if (fractionDigits == 0)
      return std::nullopt;
  }
  while (pos < end && isSpace(text[pos]))
    ++pos;

  std::string unit;
  for (; pos < end; ++pos) {
    char c = text[pos];
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
    if (c < 'a' || c > 'z')
      return std::nullopt;
    unit.push_back(c);
  }
  static const std::pair<const char *, uint64_t> units[] = {
      {"", 1},
      {"b", 1},
      {"k", 1ull << 10},
      {"kib", 1ull << 10},
      {"kb", 1000ull},
      {"m", 1ull << 20},
      {"mib", 1ull << 20},
      {"mb", 1000000ull},
      {"g", 1ull << 30},
      {"gib", 1ull << 30},
      {"gb", 1000000000ull},
      {"t", 1ull << 40},
      {"tib", 1ull << 40},
      {"tb", 1000000000000ull},
  };
  uint64_t multiplier = 0;
  for (const auto &[name, value] : units)
    if (unit == name)
      multiplier = value;
  if (multiplier == 0)
    return std::nullopt;

  // Exact: multiply the decimal digit string by the unit (digit * unit +
  // carry stays below 2^64 for units up to 10^12), then drop the fraction
  // digits, which rounds down.
  uint64_t carry = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    uint64_t v = static_cast<uint64_t>(digits[i]) * multiplier + carry;
    digits[i] = static_cast<int>(v % 10);
    carry = v / 10;
  }
  std::vector<int> high;
  for (; carry > 0; carry /= 10)
    high.push_back(static_cast<int>(carry % 10));
  std::reverse(high.begin(), high.end());
  digits.insert(digits.begin(), high.begin(), high.end());
  digits.resize(digits.size() - fractionDigits);

  const uint64_t limit = std::numeric_limits<int64_t>::max();
  uint64_t result = 0;
  for (int d : digits) {
    if (result > (limit - static_cast<uint64_t>(d)) / 10)
      return std::nullopt;
    result = result * 10 + static_cast<uint64_t>(d);
  }
  return static_cast<int64_t>(result);
}

//===----------------------------------------------------------------------===//
// Problem preparation
//===----------------------------------------------------------------------===//

namespace {

/// A validated problem in the form the algorithms use.
struct Prepared {
  int numLayers = 0;
  int numStages = 0;
  std::vector<double> a;      ///< L+1: A[b] = P[b] + out(b)
  std::vector<double> b;      ///< L+1: B[a] = P[a] - in(a)
  std::vector<int64_t> mem;   ///< L+1: prefix sums of layerMemory
  int64_t fixed = 0;          ///< stageFixedMemory
  std::optional<int64_t> cap; ///< memoryBudget

  double stageTime(int first, int end) const { return a[end] - b[first]; }
  int64_t stageMemory(int first, int end) const {
    return fixed + (mem[end] - mem[first]);
  }
};

} // namespace

static std::string formatNumber(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%g", value);
  return buffer;
}

/// Two sizes for one message: if they print alike, add the exact byte counts
/// so that "needs 2.0 GiB but the budget is 2.0 GiB" cannot happen.
static std::pair<std::string, std::string> formatBytePair(int64_t x,
                                                          int64_t y) {
  std::string fx = formatBytes(x), fy = formatBytes(y);
  if (fx == fy) {
    fx += " (" + std::to_string(x) + " bytes)";
    fy += " (" + std::to_string(y) + " bytes)";
  }
  return {fx, fy};
}

/// Checks the shape and values of `problem` and fills `prepared`; returns an
/// error message or "". Does not look at the memory budget's feasibility.
static std::string prepare(const PartitionProblem &problem,
                           Prepared &prepared) {
  int k = problem.numStages;
  if (k < 1)
    return "expected at least 1 stage, got " + std::to_string(k);
  size_t numLayers = problem.layerTime.size();
  if (numLayers == 0)
    return "expected at least 1 layer, got 0";
  if (numLayers > static_cast<size_t>(std::numeric_limits<int>::max() - 1))
    return "too many layers: " + std::to_string(numLayers);
  if (static_cast<size_t>(k) > numLayers)
    return "cannot cut " + std::to_string(numLayers) + " layers into " +
           std::to_string(k) + " stages";
  if (!problem.boundaryTime.empty() &&
      problem.boundaryTime.size() != numLayers - 1)
    return "expected " + std::to_string(numLayers - 1) +
           " boundary times for " + std::to_string(numLayers) +
           " layers, got " + std::to_string(problem.boundaryTime.size());
  if (!problem.layerMemory.empty() && problem.layerMemory.size() != numLayers)
    return "expected " + std::to_string(numLayers) +
           " layer memory sizes, one per layer, got " +
           std::to_string(problem.layerMemory.size());

  for (size_t i = 0; i < numLayers; ++i) {
    double t = problem.layerTime[i];
    if (!std::isfinite(t) || t < 0)
      return "expected a non-negative finite time for layer " +
             std::to_string(i) + ", got " + formatNumber(t);
  }
  for (size_t i = 0; i < problem.boundaryTime.size(); ++i) {
    double t = problem.boundaryTime[i];
    if (!std::isfinite(t) || t < 0)
      return "expected a non-negative finite boundary time after layer " +
             std::to_string(i) + ", got " + formatNumber(t);
  }
  for (size_t i = 0; i < problem.layerMemory.size(); ++i) {
    int64_t m = problem.layerMemory[i];
    if (m < 0)
      return "expected a non-negative memory size for layer " +
             std::to_string(i) + ", got " + std::to_string(m);
  }
  if (problem.stageFixedMemory < 0)
    return "expected a non-negative fixed stage memory, got " +
           std::to_string(problem.stageFixedMemory);
  if (problem.memoryBudget && *problem.memoryBudget < 0)
    return "expected a non-negative memory budget, got " +
           std::to_string(*problem.memoryBudget);

  int l = static_cast<int>(numLayers);
  prepared.numLayers = l;
  prepared.numStages = k;
  prepared.fixed = problem.stageFixedMemory;
  prepared.cap = problem.memoryBudget;

  auto boundary = [&](int i) {
    return problem.boundaryTime.empty() ? 0.0 : problem.boundaryTime[i];
  };
  prepared.a.assign(l + 1, 0.0);
  prepared.b.assign(l + 1, 0.0);
  // A[i] = P[i] + out(i), B[i] = P[i] - in(i); a cut at i (after layer i-1)
  // exists only for 0 < i < L, so out(L) = in(0) = 0 (and A[0], B[L], which
  // no stage uses, get no boundary term either).
  double prefix = 0.0;
  for (int i = 0; i <= l; ++i) {
    if (i > 0)
      prefix = prefix + problem.layerTime[i - 1];
    double cut = i > 0 && i < l ? boundary(i - 1) : 0.0;
    prepared.a[i] = prefix + cut;
    prepared.b[i] = prefix - cut;
    if (!std::isfinite(prepared.a[i]) || !std::isfinite(prepared.b[i]))
      return "expected the layer and boundary times to have a finite sum, "
             "got an overflow at layer " +
             std::to_string(i - 1);
  }
  // Every stage time A[b] - B[a] is then at most max A - min B.
  double largestA = *std::max_element(prepared.a.begin(), prepared.a.end());
  double smallestB = *std::min_element(prepared.b.begin(), prepared.b.end());
  if (!std::isfinite(largestA - smallestB))
    return "expected the layer and boundary times to have a finite sum, got "
           "an overflow";

  prepared.mem.assign(l + 1, 0);
  const int64_t maxBytes = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < l; ++i) {
    int64_t m = problem.layerMemory.empty() ? 0 : problem.layerMemory[i];
    if (m > maxBytes - prepared.fixed - prepared.mem[i])
      return "expected the memory of all layers plus the fixed stage memory "
             "to fit in 64 bits, got an overflow at layer " +
             std::to_string(i);
    prepared.mem[i + 1] = prepared.mem[i] + m;
  }
  return "";
}

/// The fewest stages into which `p` splits with every stage's memory at most
/// `cap`, stopping the count at `limit` + 1; requires each layer to fit.
static int minStagesWithin(const Prepared &p, int64_t cap, int limit) {
  int count = 0;
  int first = 0;
  int64_t room = cap - p.fixed; // callers ensure cap >= fixed
  while (first < p.numLayers && count <= limit) {
    int end = p.numLayers;
    if (room < p.mem[p.numLayers] - p.mem[first]) {
      // Last end with mem[end] <= mem[first] + room.
      end =
          static_cast<int>(std::upper_bound(p.mem.begin() + first + 1,
                                            p.mem.end(), p.mem[first] + room) -
                           p.mem.begin() - 1);
    }
    if (end == first) // a layer that fits in no stage
      return limit + 1;
    first = end;
    ++count;
  }
  return count;
}

static int64_t smallestBudget(const Prepared &p) {
  int64_t lo = 0;
  for (int i = 0; i < p.numLayers; ++i)
    lo = std::max(lo, p.mem[i + 1] - p.mem[i]);
  lo += p.fixed;
  int64_t hi = p.fixed + p.mem[p.numLayers];
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (minStagesWithin(p, mid, p.numStages) <= p.numStages)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

std::optional<int64_t> smallestFeasibleBudget(const PartitionProblem &problem) {
  Prepared p;
  if (!prepare(problem, p).empty())
    return std::nullopt;
  return smallestBudget(p);
}

static PartitionResult failure(std::string error,
                               std::optional<int64_t> budget = std::nullopt) {
  PartitionResult result;
  result.error = std::move(error);
  result.smallestFeasibleBudget = budget;
  return result;
}

/// The error for a budget that fits no partition, or "".
static std::string checkBudget(const Prepared &p, int64_t &smallest) {
  if (!p.cap)
    return "";
  int64_t cap = *p.cap;
  for (int i = 0; i < p.numLayers; ++i) {
    int64_t need = p.stageMemory(i, i + 1);
    if (need <= cap)
      continue;
    smallest = smallestBudget(p);
    auto [needText, capText] = formatBytePair(need, cap);
    std::string fixedNote;
    if (p.fixed > 0)
      fixedNote =
          " (including " + formatBytes(p.fixed) + " of fixed stage memory)";
    return "layer " + std::to_string(i) + " needs " + needText + fixedNote +
           " but the memory budget is " + capText;
  }
  if (minStagesWithin(p, cap, p.numStages) <= p.numStages)
    return "";
  smallest = smallestBudget(p);
  return "no partition into " + std::to_string(p.numStages) +
         " stages fits the memory budget of " + formatBytes(cap) +
         "; the smallest budget that fits is " + formatBytes(smallest) + " (" +
         std::to_string(smallest) + " bytes)";
}

static Partition evaluate(const Prepared &p, std::vector<int> firstLayer) {
  Partition partition;
  partition.firstLayer = std::move(firstLayer);
  for (int s = 0; s < p.numStages; ++s) {
    int first = partition.firstLayer[s], end = partition.firstLayer[s + 1];
    double time = p.stageTime(first, end);
    partition.stageTime.push_back(time);
    partition.stageMemory.push_back(p.stageMemory(first, end));
    partition.bottleneck = s == 0 ? time : std::max(partition.bottleneck, time);
  }
  return partition;
}

//===----------------------------------------------------------------------===//
// Optimal partition
//===----------------------------------------------------------------------===//

namespace {

/// The suffix DP of the file comment, its scratch space kept across probes.
class FeasibilityTable {
public:
  explicit FeasibilityTable(const Prepared &prepared)
      : p(prepared), width(p.numLayers - p.numStages + 1) {
    int l = p.numLayers;
    reach.assign(static_cast<size_t>(p.numStages + 1) * width, 0);
    window.assign(l + 1, 0);
    lastEnd.assign(l + 1, l);
    if (p.cap) {
      // Two pointers: lastEnd[i] = max j with stageMemory(i, j) <= cap.
      int end = 0;
      for (int i = 0; i < l; ++i) {
        end = std::max(end, i);
        while (end < l && p.stageMemory(i, end + 1) <= *p.cap)
          ++end;
        lastEnd[i] = end;
      }
    }
  }

  /// Fills the table for threshold `limit`; true if layers 0..L-1 split into
  /// K stages of time <= limit within the budget. Row `stages` is computed
  /// only for the suffix starts that can matter, i in [K - stages, L -
  /// stages] (K - stages stages in front, `stages` non-empty ones behind),
  /// which are also the only entries anything reads.
  bool run(double limit) {
    int l = p.numLayers, k = p.numStages;
    for (int i = k; i <= l; ++i)
      at(0, i) = i == l;
    for (int stages = 1; stages <= k; ++stages) {
      int front = 0, back = 0; // window[front..back): ends, A increasing
      bool any = false;
      for (int i = l - stages; i >= k - stages; --i) {
        int j = i + 1;
        if (at(stages - 1, j)) {
          while (back > front && p.a[window[back - 1]] >= p.a[j])
            --back;
          window[back++] = j;
        }
        while (back > front && window[front] > lastEnd[i])
          ++front;
        bool ok = back > front && p.a[window[front]] - p.b[i] <= limit;
        at(stages, i) = ok;
        any |= ok;
      }
      if (!any)
        return false;
    }
    return at(k, 0);
  }

  /// The lexicographically smallest firstLayer among the partitions `run`
  /// found for `limit`; requires run(limit) to have returned true.
  std::vector<int> rebuild(double limit) {
    int l = p.numLayers, k = p.numStages;
    std::vector<int> firstLayer{0};
    int first = 0;
    for (int s = 0; s < k; ++s) {
      int remaining = k - s - 1;
      int last = std::min(lastEnd[first], l - remaining);
      int end = first + 1;
      while (end <= last &&
             !(at(remaining, end) && p.stageTime(first, end) <= limit))
        ++end;
      // run() proved a suffix exists; a miss would be a bug, not bad input.
      if (end > last)
        return {};
      firstLayer.push_back(end);
      first = end;
    }
    return firstLayer;
  }

private:
  /// g[stages][i], stored for i in [K - stages, L - stages] only.
  char &at(int stages, int i) {
    return reach[static_cast<size_t>(stages) * width +
                 (i - (p.numStages - stages))];
  }

  const Prepared &p;
  size_t width;             ///< L - K + 1 entries per row
  std::vector<char> reach;  ///< (K+1) rows of g
  std::vector<int> window;  ///< deque storage
  std::vector<int> lastEnd; ///< hi(i)
};

} // namespace

static uint64_t bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

static double doubleOf(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

PartitionResult partitionOptimal(const PartitionProblem &problem) {
  Prepared p;
  std::string error = prepare(problem, p);
  if (!error.empty())
    return failure(error);
  int64_t smallest = 0;
  error = checkBudget(p, smallest);
  if (!error.empty())
    return failure(error, smallest);

  FeasibilityTable table(p);
  // Smallest non-negative double T with run(T): T = +inf is feasible (the
  // budget check above passed and every stage time is finite).
  uint64_t lo = bitsOf(0.0);
  uint64_t hi = bitsOf(std::numeric_limits<double>::infinity());
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (table.run(doubleOf(mid)))
      hi = mid;
    else
      lo = mid + 1;
  }
  double best = doubleOf(lo);
  if (!table.run(best))
    return failure("internal error: no partition at the optimal bottleneck " +
                   formatNumber(best));
  std::vector<int> firstLayer = table.rebuild(best);
  if (firstLayer.empty())
    return failure("internal error: cannot rebuild the partition at " +
                   formatNumber(best));
  PartitionResult result;
  result.partition = evaluate(p, std::move(firstLayer));
  return result;
}

//===----------------------------------------------------------------------===//
// Manual balance
//===----------------------------------------------------------------------===//

PartitionResult partitionManual(const PartitionProblem &problem,
                                const std::vector<int> &balance) {
  Prepared p;
  std::string error = prepare(problem, p);
  if (!error.empty())
    return failure(error);
  if (balance.size() != static_cast<size_t>(p.numStages))
    return failure("expected " + std::to_string(p.numStages) +
                   " balance entries, one per stage, got " +
                   std::to_string(balance.size()));
  int64_t sum = 0;
  for (size_t s = 0; s < balance.size(); ++s) {
    if (balance[s] < 1)
      return failure("balance entry " + std::to_string(s) + " is " +
                     std::to_string(balance[s]) +
                     " but every stage needs at least 1 layer");
    sum += balance[s];
  }
  if (sum != p.numLayers)
    return failure("balance entries sum to " + std::to_string(sum) +
                   " but the model has " + std::to_string(p.numLayers) +
                   " layers");

  std::vector<int> firstLayer{0};
  for (int n : balance)
    firstLayer.push_back(firstLayer.back() + n);
  Partition partition = evaluate(p, std::move(firstLayer));
  if (p.cap) {
    int64_t largest = *std::max_element(partition.stageMemory.begin(),
                                        partition.stageMemory.end());
    for (int s = 0; s < p.numStages; ++s) {
      int64_t need = partition.stageMemory[s];
      if (need <= *p.cap)
        continue;
      auto [needText, capText] = formatBytePair(need, *p.cap);
      return failure("stage " + std::to_string(s) + " (layers " +
                         std::to_string(partition.firstLayer[s]) + " to " +
                         std::to_string(partition.firstLayer[s + 1] - 1) +
                         ") needs " + needText + " but the memory budget is " +
                         capText,
                     largest);
    }
  }
  PartitionResult result;
  result.partition = std::move(partition);
  return result;
}

} // namespace mlir::gpipe
