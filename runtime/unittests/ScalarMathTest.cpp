//===- ScalarMathTest.cpp - The shared float math ---------------*- C++ -*-===//
//
// The transcendental functions of ScalarMath.h against the C library in
// long double: their largest error in ulps over dense sweeps of the float
// range that matters, and the C library's special values.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/ScalarMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

using namespace gpipe::rt;

namespace {

/// The error of `got` against `want` in units of the float spacing at
/// `want`.
double ulps(float got, long double want) {
  float w = float(want);
  float spacing =
      std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) -
      std::fabs(w);
  if (spacing == 0 || !std::isfinite(spacing))
    spacing = std::numeric_limits<float>::denorm_min();
  return double(std::fabs((long double)got - want) / spacing);
}

/// The largest error of `f` against `ref` over n + 1 points evenly spread
/// on [lo, hi].
double maxUlps(const std::function<float(float)> &f,
               long double (*ref)(long double), float lo, float hi, int n,
               float &worst) {
  double most = 0;
  for (int i = 0; i <= n; ++i) {
    float x = lo + (hi - lo) * float(i) / float(n);
    double e = ulps(f(x), ref((long double)x));
    if (e > most) {
      most = e;
      worst = x;
    }
  }
  return most;
}

/// The largest error of `f` against `ref` from 1e-30 up to 1 in steps of
/// 1%: the small arguments, where the function is nearly linear.
double maxUlpsSmall(const std::function<float(float)> &f,
                    long double (*ref)(long double), float &worst) {
  double most = 0;
  for (float x = 1e-30f; x < 1.0f; x *= 1.01f) {
    double e = ulps(f(x), ref((long double)x));
    if (e > most) {
      most = e;
      worst = x;
    }
  }
  return most;
}

long double refExp(long double x) { return std::exp(x); }
long double refErf(long double x) { return std::erf(x); }
long double refTanh(long double x) { return std::tanh(x); }
long double refGelu(long double x) {
  return x * 0.5L * std::erfc(-x / std::sqrt(2.0L));
}
long double refErfc(long double x) { return std::erfc(x); }
float erfcNonNegativef(float z) {
  return math::erfcNonNegative(math::ScalarFloat(), z);
}

} // namespace

TEST(ScalarMath, ExpWithinTwoUlps) {
  float at = 0;
  EXPECT_LE(maxUlps(math::expf, refExp, -87.0f, 88.5f, 2000000, at), 2.0)
      << "at " << at;
  EXPECT_LE(maxUlps(math::expf, refExp, -1.0f, 1.0f, 200000, at), 2.0)
      << "at " << at;
  // Denormal results: within one unit of the least denormal.
  for (float x = -103.9f; x < -87.4f; x += 0.001f)
    EXPECT_NEAR(double(math::expf(x)), double(std::exp((long double)x)),
                double(std::numeric_limits<float>::denorm_min()))
        << x;
}

TEST(ScalarMath, ErfWithinThreeUlps) {
  float at = 0;
  EXPECT_LE(maxUlps(math::erff, refErf, -6.0f, 6.0f, 2000000, at), 3.0)
      << "at " << at;
  EXPECT_LE(maxUlpsSmall(math::erff, refErf, at), 3.0) << "at " << at;
}

TEST(ScalarMath, TanhWithinThreeUlps) {
  float at = 0;
  EXPECT_LE(maxUlps(math::tanhf, refTanh, -12.0f, 12.0f, 2000000, at), 3.0)
      << "at " << at;
  EXPECT_LE(maxUlpsSmall(math::tanhf, refTanh, at), 3.0) << "at " << at;
}

// GELU is x Phi(x) with Phi from erfc alone, and its error is relative
// everywhere (1 + erf in float would cancel in the left tail, to errors of
// hundreds of ulps by x = -3 and all the digits by x = -6). Near 0, erfc's
// fit (fractional error 1.2e-7, its polynomial summing to nearly 0 at
// t = 1) costs a few ulps; further left, the rounding of z^2 in e^-z^2
// grows with z^2. The bounds are the measured errors rounded up.
TEST(ScalarMath, GeluRelativeError) {
  float at = 0;
  EXPECT_LE(maxUlps(math::geluf, refGelu, -1.0f, 1.0f, 2000000, at), 8.0)
      << "at " << at;
  EXPECT_LE(maxUlpsSmall(math::geluf, refGelu, at), 8.0) << "at " << at;
  EXPECT_LE(maxUlps(math::geluf, refGelu, -3.0f, 12.0f, 2000000, at), 24.0)
      << "at " << at;
  EXPECT_LE(maxUlps(math::geluf, refGelu, -9.0f, -3.0f, 600000, at), 160.0)
      << "at " << at;
  EXPECT_LE(maxUlps(erfcNonNegativef, refErfc, 0.0f, 2.5f, 500000, at), 16.0)
      << "at " << at;
}

TEST(ScalarMath, SigmoidAndGeluFollowTheirDefinitions) {
  for (float x = -30.0f; x <= 30.0f; x += 0.01f) {
    long double s = 1.0L / (1.0L + std::exp(-(long double)x));
    EXPECT_LE(ulps(math::sigmoidf(x), s), 4.0) << x;
    long double g = (long double)x * 0.5L *
                    (1.0L + std::erf((long double)x / std::sqrt(2.0L)));
    // Absolute: 1 + erf cancels for negative x in float.
    EXPECT_NEAR(math::geluf(x), double(g),
                1e-6 * std::max(1.0, std::fabs(double(x))))
        << x;
    long double cdf =
        0.5L * (1.0L + std::erf((long double)x / std::sqrt(2.0L)));
    long double pdf = std::exp(-0.5L * x * x) / std::sqrt(2.0L * M_PI);
    EXPECT_NEAR(math::geluGradf(x, 1.5f), double(1.5L * (cdf + x * pdf)),
                2e-6 * std::max(1.0, std::fabs(double(x))))
        << x;
  }
}

TEST(ScalarMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(math::expf(0.0f), 1.0f);
  EXPECT_EQ(math::expf(-inf), 0.0f);
  EXPECT_EQ(math::expf(inf), inf);
  EXPECT_EQ(math::expf(89.0f), inf);
  EXPECT_EQ(math::expf(-104.0f), 0.0f);
  EXPECT_GT(math::expf(88.7f), 3.0e38f);
  EXPECT_TRUE(std::isnan(math::expf(nan)));
  EXPECT_EQ(math::erff(0.0f), 0.0f);
  EXPECT_EQ(math::erff(inf), 1.0f);
  EXPECT_EQ(math::erff(-inf), -1.0f);
  EXPECT_EQ(math::erff(5.0f), 1.0f);
  EXPECT_TRUE(std::signbit(math::erff(-0.0f)));
  EXPECT_TRUE(std::isnan(math::erff(nan)));
  EXPECT_EQ(math::tanhf(inf), 1.0f);
  EXPECT_EQ(math::tanhf(-inf), -1.0f);
  EXPECT_EQ(math::tanhf(50.0f), 1.0f);
  EXPECT_TRUE(std::signbit(math::tanhf(-0.0f)));
  EXPECT_TRUE(std::isnan(math::tanhf(nan)));
  EXPECT_EQ(math::sigmoidf(-inf), 0.0f);
  EXPECT_EQ(math::sigmoidf(inf), 1.0f);
  EXPECT_EQ(math::sigmoidf(0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(math::sigmoidf(nan)));
  EXPECT_EQ(math::geluf(0.0f), 0.0f);
  EXPECT_EQ(math::geluf(inf), inf);
  EXPECT_TRUE(std::isnan(math::geluf(nan)));
}
