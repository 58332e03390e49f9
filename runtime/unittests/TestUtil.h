//===- TestUtil.h - Helpers shared by the runtime kernel tests --*- C++ -*-===//
//
// Shapes, row-major index arithmetic, seeded random data and the last
// runtime error, for the kernel tests' float64 reference implementations.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_UNITTESTS_TESTUTIL_H
#define GPIPE_RUNTIME_UNITTESTS_TESTUTIL_H

#include "gpipe/Runtime/Common.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gpipe::rt::test {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline int32_t rankOf(const Shape &shape) { return int32_t(shape.size()); }

/// `n` floats uniform in [lo, hi) from a seeded generator.
inline std::vector<float> randomFloats(int64_t n, uint32_t seed,
                                       float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Row-major multi-index of flat position `flat`.
inline std::vector<int64_t> unravel(int64_t flat, const Shape &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

/// Row-major flat position of multi-index `idx`.
inline int64_t ravel(const std::vector<int64_t> &idx, const Shape &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + idx[d];
  return flat;
}

inline std::string lastError() { return gpipe_rt_last_error(); }

} // namespace gpipe::rt::test

#endif // GPIPE_RUNTIME_UNITTESTS_TESTUTIL_H
