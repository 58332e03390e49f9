//===- Transport.cpp - What every transport shares -------------*- C++ -*-===//
//
// The interfaces' out-of-line members and the wording of failed waits that
// the transports and the engine's own collectives share.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Transport.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gpipe::rt {

RunControl::~RunControl() = default;
Transport::~Transport() = default;

std::string formatSeconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", seconds);
  if (std::fabs(std::strtod(buf, nullptr) - seconds) > 1e-9)
    std::snprintf(buf, sizeof buf, "%.3g", seconds);
  return buf;
}

/// How a run that stopped because another process failed says so.
static const char kRemoteFailure[] = "stopped because another process failed: ";

std::string remoteFailure(const std::string &message) {
  return kRemoteFailure + message;
}

bool isRemoteFailure(const std::string &message) {
  return message.find(kRemoteFailure) != std::string::npos;
}

bool Transport::startReduction(const Reduction &) { return false; }

bool Transport::finishReduction(int64_t, int64_t) { return false; }

int64_t getReduceShare(int64_t count, int64_t replicas) {
  return replicas > 0 ? (count + replicas - 1) / replicas : count;
}

std::pair<int64_t, int64_t> getReduceShareRange(int64_t count, int64_t replicas,
                                                int64_t replica) {
  const int64_t share = getReduceShare(count, replicas);
  const int64_t begin = std::min(count, replica * share);
  return {begin, std::min(count, begin + share)};
}

void sumShare(float *mine, const float *others, int64_t replicas,
              int64_t replica, int64_t count) {
  const int64_t share = getReduceShare(count, replicas);
  const auto [lo, hi] = getReduceShareRange(count, replicas, replica);
  // Blocks of the share, each summed over the replicas in replica order
  // (the first replica's value, plus the second's, ...): the same order for
  // every element, whoever sums it.
  constexpr int64_t kBlock = 512;
  float acc[kBlock];
  for (int64_t at = lo; at < hi; at += kBlock) {
    const int64_t n = std::min(kBlock, hi - at);
    for (int64_t j = 0; j < replicas; ++j) {
      const float *x =
          j == replica ? mine + at
                       : others + (j < replica ? j : j - 1) * share + (at - lo);
      if (j == 0)
        for (int64_t i = 0; i < n; ++i)
          acc[i] = x[i];
      else
        for (int64_t i = 0; i < n; ++i)
          acc[i] += x[i];
    }
    for (int64_t i = 0; i < n; ++i)
      mine[at + i] = acc[i];
  }
}

} // namespace gpipe::rt
