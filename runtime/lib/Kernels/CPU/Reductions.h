//===- Reductions.h - The CPU kernels' sums and maxima ----------*- C++ -*-===//
//
// Reductions in a fixed order, shared by the CPU kernel files: eight
// interleaved partial sums in double, and maxima. Inlined into their
// callers, so that a kernel compiled for AVX2 or AVX-512
// (GPIPE_RT_CPU_CLONES) runs them in its own instructions: called, they run
// the baseline build, and the calls and the switches between vector widths
// took two thirds of a row softmax's time.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_LIB_KERNELS_CPU_REDUCTIONS_H
#define GPIPE_RUNTIME_LIB_KERNELS_CPU_REDUCTIONS_H

#include "gpipe/Runtime/ScalarMath.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace gpipe::rt::cpu {

constexpr int kLanes = 8;

GPIPE_RT_MATH_INLINE double combineLanes(const double (&acc)[kLanes]) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) +
         ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

/// body(i, i mod 8) for i in [0, n) in order: whole groups of eight first,
/// a loop the compiler vectorizes, then the rest.
template <typename Body>
GPIPE_RT_MATH_INLINE void forEachLane(int64_t n, Body body) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k)
      body(i + k, k);
  for (int k = 0; i + k < n; ++k)
    body(i + k, k);
}

/// sum of term(i) for i in [0, n), in double: eight interleaved partial
/// sums (term i into sum i mod 8), combined by combineLanes.
template <typename Term>
GPIPE_RT_MATH_INLINE double sumLanes(int64_t n, Term term) {
  double acc[kLanes] = {};
  forEachLane(n, [&](int64_t i, int k) { acc[k] += term(i); });
  return combineLanes(acc);
}

/// sum of map(x[i]) in double, as sumLanes.
template <typename Map>
GPIPE_RT_MATH_INLINE double sumMapped(const float *x, int64_t n, Map map) {
  return sumLanes(n, [&](int64_t i) { return map(x[i]); });
}

/// The largest of x[0, n) that is not NaN (-inf for none): eight
/// interleaved maxima, so the loop vectorizes. The value does not depend on
/// the order (a max is exact); only which zero of +0 and -0 wins may.
GPIPE_RT_MATH_INLINE float maxOf(const float *x, int64_t n) {
  float acc[kLanes];
  std::fill(acc, acc + kLanes, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k)
      acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
  for (int k = 0; i + k < n; ++k)
    acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
  float m = acc[0];
  for (int k = 1; k < kLanes; ++k)
    m = acc[k] > m ? acc[k] : m;
  return m;
}

} // namespace gpipe::rt::cpu

#endif // GPIPE_RUNTIME_LIB_KERNELS_CPU_REDUCTIONS_H
