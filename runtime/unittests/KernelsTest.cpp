//===- KernelsTest.cpp - CPU kernels against float64 references -*- C++ -*-===//
//
// Each CPU kernel on random inputs against a naive float64 implementation
// written from the op's definition (relative tolerance 1e-5, scaled by the
// magnitude of the terms for sums), plus broadcasting corner cases, shape
// errors, out-of-range indices and labels, and run-to-run bitwise
// reproducibility.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace gpipe::rt::test;

/// The flat index of `in` read at output index `outIdx` under numpy
/// broadcasting.
int64_t broadcastIndex(const Shape &in, const std::vector<int64_t> &outIdx) {
  size_t lead = outIdx.size() - in.size();
  std::vector<int64_t> idx(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    idx[d] = in[d] == 1 ? 0 : outIdx[lead + d];
  return ravel(idx, in);
}

Shape broadcastShapes(const Shape &a, const Shape &b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    size_t ia = i + a.size() - out.size(), ib = i + b.size() - out.size();
    int64_t da = i + a.size() >= out.size() ? a[ia] : 1;
    int64_t db = i + b.size() >= out.size() ? b[ib] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// |got - want| <= atol + rtol * |want| for every element.
void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(double(got[i]) - want[i]),
              atol + rtol * std::abs(want[i]))
        << "element " << i << ": got " << got[i] << ", want " << want[i];
}

/// |got - want| <= rtol * bound[i] (bound: the sum of the magnitudes of the
/// terms that make up the element).
void expectWithin(const std::vector<float> &got,
                  const std::vector<double> &want,
                  const std::vector<double> &bound, double rtol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(double(got[i]) - want[i]), 1e-7 + rtol * bound[i])
        << "element " << i << ": got " << got[i] << ", want " << want[i];
}

//===----------------------------------------------------------------------===//
// Binary ops
//===----------------------------------------------------------------------===//

double applyBinary(gpipe_rt_binary_op op, double a, double b) {
  switch (op) {
  case GPIPE_RT_ADD:
    return a + b;
  case GPIPE_RT_SUB:
    return a - b;
  case GPIPE_RT_MUL:
    return a * b;
  case GPIPE_RT_DIV:
    return a / b;
  case GPIPE_RT_MAX:
    return a != a ? a : b != b ? b : std::max(a, b);
  case GPIPE_RT_MIN:
    return a != a ? a : b != b ? b : std::min(a, b);
  case GPIPE_RT_POW:
    return std::pow(a, b);
  case GPIPE_RT_REMAINDER: {
    // a - b * floor(a / b): fmod's exact remainder moved to b's sign.
    double r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
  case GPIPE_RT_FMOD:
    return std::fmod(a, b);
  }
  return 0;
}

struct BinaryCase {
  Shape lhs, rhs;
};

class BinaryTest : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryTest, MatchesReferenceForEveryOp) {
  const BinaryCase &c = GetParam();
  Shape out = broadcastShapes(c.lhs, c.rhs);
  for (gpipe_rt_binary_op op :
       {GPIPE_RT_ADD, GPIPE_RT_SUB, GPIPE_RT_MUL, GPIPE_RT_DIV, GPIPE_RT_POW,
        GPIPE_RT_MAX, GPIPE_RT_MIN, GPIPE_RT_REMAINDER, GPIPE_RT_FMOD}) {
    std::vector<float> a = randomFloats(numel(c.lhs), 1);
    std::vector<float> b = randomFloats(numel(c.rhs), 2);
    if (op == GPIPE_RT_POW)
      for (float &x : a)
        x = std::abs(x) + 0.25f;
    if (op == GPIPE_RT_DIV || op == GPIPE_RT_REMAINDER || op == GPIPE_RT_FMOD)
      for (float &x : b)
        x = x < 0 ? x - 0.5f : x + 0.5f;
    std::vector<float> got(static_cast<size_t>(numel(out)), -1.0f);
    ASSERT_EQ(gpipe_rt_cpu_binary_f32(op, a.data(), c.lhs.data(), rankOf(c.lhs),
                                      b.data(), c.rhs.data(), rankOf(c.rhs),
                                      got.data(), out.data(), rankOf(out)),
              GPIPE_RT_SUCCESS)
        << lastError();
    std::vector<double> want(got.size());
    for (int64_t i = 0; i < numel(out); ++i) {
      std::vector<int64_t> idx = unravel(i, out);
      want[size_t(i)] = applyBinary(op, a[size_t(broadcastIndex(c.lhs, idx))],
                                    b[size_t(broadcastIndex(c.rhs, idx))]);
    }
    expectClose(got, want);
  }
}

// A square and a cube are multiplications, as PyTorch's CPU pow computes a
// scalar exponent of 2 and 3 (a * a, a * a * a: bitwise); other exponents,
// among them 2 and 3 nudged by an ulp, go to the power function.
TEST(Binary, PowSquaresAndCubesByMultiplying) {
  std::vector<float> a = randomFloats(257, 3);
  int64_t shape[1] = {257}, scalar[1] = {1};
  for (float e : {2.0f, 3.0f, std::nextafter(2.0f, 3.0f),
                  std::nextafter(3.0f, 2.0f), 2.5f}) {
    std::vector<float> got(a.size());
    ASSERT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_POW, a.data(), shape, 1, &e,
                                      scalar, 1, got.data(), shape, 1),
              GPIPE_RT_SUCCESS)
        << lastError();
    for (size_t i = 0; i < a.size(); ++i) {
      float want = e == 2.0f   ? a[i] * a[i]
                   : e == 3.0f ? a[i] * a[i] * a[i]
                               : std::pow(a[i], e);
      ASSERT_EQ(std::memcmp(&got[i], &want, sizeof(float)), 0)
          << "a " << a[i] << " e " << e << ": " << got[i] << " vs " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Broadcasting, BinaryTest,
    ::testing::Values(
        BinaryCase{{4, 8}, {4, 8}}, BinaryCase{{4, 8}, {8}},
        BinaryCase{{8}, {4, 8}}, BinaryCase{{4, 1}, {1, 8}},
        BinaryCase{{}, {3, 2}}, BinaryCase{{3, 2}, {}}, BinaryCase{{}, {}},
        BinaryCase{{2, 1, 3}, {4, 1}}, BinaryCase{{3, 1, 5, 1}, {1, 4, 1, 6}},
        BinaryCase{{2, 3, 4, 5}, {3, 1, 5}}, BinaryCase{{1, 1, 7}, {1, 7}},
        BinaryCase{{5, 1, 1}, {1, 1, 1}}, BinaryCase{{2, 16, 32}, {16, 32}},
        BinaryCase{{8, 16, 16}, {1, 16, 16}}));

TEST(BinaryErrors, IncompatibleShapesAreReported) {
  Shape a{4, 8}, b{3}, out{4, 8};
  std::vector<float> x(32), y(3), z(32);
  EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, x.data(), a.data(), 2,
                                    y.data(), b.data(), 1, z.data(), out.data(),
                                    2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "add: operands [4, 8], [3] do not broadcast");
}

TEST(BinaryErrors, WrongResultShapeIsReported) {
  Shape a{4, 1}, b{8}, out{4, 4};
  std::vector<float> x(4), y(8), z(32);
  EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_MUL, x.data(), a.data(), 2,
                                    y.data(), b.data(), 1, z.data(), out.data(),
                                    2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "mul: operands [4, 1], [8] broadcast to [4, 8], not "
                         "to the result shape [4, 4]");
}

TEST(BinaryErrors, BadRanksAndDimsAreReported) {
  Shape big(GPIPE_RT_MAX_RANK + 1, 1), neg{2, -1};
  float x = 0, y = 0, z = 0;
  EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, &x, big.data(), rankOf(big),
                                    &y, nullptr, 0, &z, big.data(),
                                    rankOf(big)),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("lhs has rank 9"), std::string::npos);
  EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, &x, neg.data(), 2, &y,
                                    nullptr, 0, &z, neg.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "add: lhs dim 1 is negative (-1)");
  // Sub-products of the dims must fit too, even when the tensor is empty.
  Shape huge{0, int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, &x, huge.data(), 3, &y,
                                    nullptr, 0, &z, huge.data(), 3),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "add: lhs [0, 1099511627776, 1099511627776] has more "
                         "elements than int64 holds");
}

TEST(BinaryCorners, EmptyTensorsBroadcast) {
  Shape a{0, 3}, b{3}, out{0, 3};
  std::vector<float> y{1, 2, 3};
  EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, nullptr, a.data(), 2,
                                    y.data(), b.data(), 1, nullptr, out.data(),
                                    2),
            GPIPE_RT_SUCCESS);
  // A dim of 1 stretches to 0.
  Shape c{1, 3}, d{0, 1}, res{0, 3};
  EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, y.data(), c.data(), 2,
                                    nullptr, d.data(), 2, nullptr, res.data(),
                                    2),
            GPIPE_RT_SUCCESS);
}

TEST(BinaryCorners, InPlaceOnTheFullShapeOperand) {
  Shape a{3, 4}, b{4};
  std::vector<float> x = randomFloats(12, 3), y = randomFloats(4, 4);
  std::vector<double> want(12);
  for (int i = 0; i < 12; ++i)
    want[size_t(i)] = double(x[size_t(i)]) * y[size_t(i % 4)];
  ASSERT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_MUL, x.data(), a.data(), 2,
                                    y.data(), b.data(), 1, x.data(), a.data(),
                                    2),
            GPIPE_RT_SUCCESS);
  expectClose(x, want);
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

double applyUnary(gpipe_rt_unary_op op, double x) {
  switch (op) {
  case GPIPE_RT_NEG:
    return -x;
  case GPIPE_RT_RECIPROCAL:
    return 1.0 / x;
  case GPIPE_RT_SQRT:
    return std::sqrt(x);
  case GPIPE_RT_EXP:
    return std::exp(x);
  case GPIPE_RT_LOG:
    return std::log(x);
  case GPIPE_RT_ERF:
    return std::erf(x);
  case GPIPE_RT_TANH:
    return std::tanh(x);
  case GPIPE_RT_SIGMOID:
    return 1.0 / (1.0 + std::exp(-x));
  case GPIPE_RT_RELU:
    return x > 0 ? x : 0;
  case GPIPE_RT_GELU:
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case GPIPE_RT_SIN:
    return std::sin(x);
  case GPIPE_RT_COS:
    return std::cos(x);
  case GPIPE_RT_FLOOR:
    return std::floor(x);
  case GPIPE_RT_CEIL:
    return std::ceil(x);
  case GPIPE_RT_ROUND:
    return std::nearbyint(x);
  }
  return 0;
}

TEST(Unary, EveryOpMatchesReference) {
  for (gpipe_rt_unary_op op :
       {GPIPE_RT_NEG, GPIPE_RT_RECIPROCAL, GPIPE_RT_SQRT, GPIPE_RT_EXP,
        GPIPE_RT_LOG, GPIPE_RT_ERF, GPIPE_RT_TANH, GPIPE_RT_SIGMOID,
        GPIPE_RT_RELU, GPIPE_RT_GELU, GPIPE_RT_SIN, GPIPE_RT_COS,
        GPIPE_RT_FLOOR, GPIPE_RT_CEIL, GPIPE_RT_ROUND}) {
    SCOPED_TRACE(int(op));
    // 1003 elements: a vector body and a remainder.
    std::vector<float> x = randomFloats(1003, 5, -3.0f, 3.0f);
    if (op == GPIPE_RT_SQRT || op == GPIPE_RT_LOG)
      for (float &v : x)
        v = std::abs(v) + (op == GPIPE_RT_LOG ? 0.01f : 0.0f);
    if (op == GPIPE_RT_RECIPROCAL)
      for (float &v : x)
        v = v < 0 ? v - 0.1f : v + 0.1f;
    std::vector<float> got(x.size());
    ASSERT_EQ(
        gpipe_rt_cpu_unary_f32(op, x.data(), got.data(), int64_t(x.size())),
        GPIPE_RT_SUCCESS);
    std::vector<double> want(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      want[i] = applyUnary(op, x[i]);
    expectClose(got, want);
  }
}

TEST(Unary, SigmoidAndGeluAtExtremes) {
  std::vector<float> x{-100.0f, -30.0f, 0.0f, 30.0f, 100.0f};
  std::vector<float> s(x.size()), g(x.size());
  ASSERT_EQ(gpipe_rt_cpu_unary_f32(GPIPE_RT_SIGMOID, x.data(), s.data(), 5),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_unary_f32(GPIPE_RT_GELU, x.data(), g.data(), 5),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(s[0], std::exp(-100.0f) / (1.0f + std::exp(-100.0f)));
  EXPECT_EQ(s[2], 0.5f);
  EXPECT_EQ(s[4], 1.0f);
  EXPECT_EQ(g[0], -0.0f);
  EXPECT_EQ(g[4], 100.0f);
  for (float v : s)
    EXPECT_FALSE(std::isnan(v));
}

TEST(Unary, ReluKeepsNaN) {
  float x = std::nanf(""), y = 0;
  ASSERT_EQ(gpipe_rt_cpu_unary_f32(GPIPE_RT_RELU, &x, &y, 1), GPIPE_RT_SUCCESS);
  EXPECT_TRUE(std::isnan(y));
}

TEST(Unary, SinAndCosAtSpecialValues) {
  std::vector<float> x{0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, 100.0f};
  std::vector<float> s(x.size()), c(x.size());
  ASSERT_EQ(gpipe_rt_cpu_unary_f32(GPIPE_RT_SIN, x.data(), s.data(),
                                   int64_t(x.size())),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_unary_f32(GPIPE_RT_COS, x.data(), c.data(),
                                   int64_t(x.size())),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_TRUE(std::signbit(s[1]));
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(c[1], 1.0f);
  for (size_t i : {2, 3, 4}) {
    EXPECT_TRUE(std::isnan(s[i])) << i;
    EXPECT_TRUE(std::isnan(c[i])) << i;
  }
  EXPECT_EQ(s[5], 1e-30f);
  EXPECT_EQ(c[5], 1.0f);
  EXPECT_NEAR(s[6], std::sin(100.0), 1e-6);
  EXPECT_NEAR(c[6], std::cos(100.0), 1e-6);
}

TEST(Unary, UnknownOpIsReported) {
  float x = 1.0f, y = 0.0f;
  EXPECT_EQ(gpipe_rt_cpu_unary_f32(GPIPE_RT_ROUND, &x, &y, 1),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(
      gpipe_rt_cpu_unary_f32(gpipe_rt_unary_op(GPIPE_RT_ROUND + 1), &x, &y, 1),
      GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "unary: unknown op 15");
  EXPECT_EQ(gpipe_rt_cpu_unary_f32(gpipe_rt_unary_op(-1), &x, &y, 1),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "unary: unknown op -1");
}

TEST(Unary, InPlace) {
  std::vector<float> x = randomFloats(17, 6);
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = std::tanh(double(x[i]));
  ASSERT_EQ(gpipe_rt_cpu_unary_f32(GPIPE_RT_TANH, x.data(), x.data(), 17),
            GPIPE_RT_SUCCESS);
  expectClose(x, want);
}

//===----------------------------------------------------------------------===//
// equal, where, not, cast
//===----------------------------------------------------------------------===//

TEST(Equal, BroadcastsOverEveryType) {
  Shape a{3, 4}, b{4}, out{3, 4};
  std::vector<int64_t> x(12), y{0, 5, 2, 7};
  std::iota(x.begin(), x.end(), 0);
  std::vector<uint8_t> got(12);
  ASSERT_EQ(gpipe_rt_cpu_equal(GPIPE_RT_I64, x.data(), a.data(), 2, y.data(),
                               b.data(), 1, got.data(), out.data(), 2),
            GPIPE_RT_SUCCESS);
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(got[size_t(i)], uint8_t(x[size_t(i)] == y[size_t(i % 4)]));

  std::vector<float> fx{1.0f, 2.0f, 3.0f}, fy{2.0f};
  Shape fa{3}, fb{};
  std::vector<uint8_t> fgot(3);
  ASSERT_EQ(gpipe_rt_cpu_equal(GPIPE_RT_F32, fx.data(), fa.data(), 1, fy.data(),
                               fb.data(), 0, fgot.data(), fa.data(), 1),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(fgot, (std::vector<uint8_t>{0, 1, 0}));

  // Booleans compare by truth, not by byte value.
  std::vector<uint8_t> bx{0, 1, 2}, by{0, 2, 1}, bgot(3);
  ASSERT_EQ(gpipe_rt_cpu_equal(GPIPE_RT_BOOL, bx.data(), fa.data(), 1,
                               by.data(), fa.data(), 1, bgot.data(), fa.data(),
                               1),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(bgot, (std::vector<uint8_t>{1, 1, 1}));
}

TEST(Where, BroadcastsAllThreeOperands) {
  // The causal-mask pattern: [T, T] mask, [B, H, T, T] scores, scalar -inf.
  Shape cs{4, 4}, xs{2, 3, 4, 4}, ys{}, out{2, 3, 4, 4};
  std::vector<uint8_t> cond(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      cond[size_t(i * 4 + j)] = j <= i;
  std::vector<float> x = randomFloats(numel(xs), 7);
  float y = -INFINITY;
  std::vector<float> got(static_cast<size_t>(numel(out)));
  ASSERT_EQ(gpipe_rt_cpu_where(cond.data(), cs.data(), 2, GPIPE_RT_F32,
                               x.data(), xs.data(), 4, &y, ys.data(), 0,
                               got.data(), out.data(), 4),
            GPIPE_RT_SUCCESS);
  for (int64_t i = 0; i < numel(out); ++i) {
    std::vector<int64_t> idx = unravel(i, out);
    float want = idx[3] <= idx[2] ? x[size_t(i)] : y;
    EXPECT_EQ(got[size_t(i)], want) << i;
  }
}

TEST(Where, MovesI64AndReportsShapes) {
  Shape cs{3}, xs{2, 3}, ys{2, 1};
  std::vector<uint8_t> cond{1, 0, 1};
  std::vector<int64_t> x{1, 2, 3, 4, 5, 6}, y{-1, -2}, got(6);
  ASSERT_EQ(gpipe_rt_cpu_where(cond.data(), cs.data(), 1, GPIPE_RT_I64,
                               x.data(), xs.data(), 2, y.data(), ys.data(), 2,
                               got.data(), xs.data(), 2),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(got, (std::vector<int64_t>{1, -1, 3, 4, -2, 6}));
  Shape bad{4};
  EXPECT_EQ(gpipe_rt_cpu_where(cond.data(), bad.data(), 1, GPIPE_RT_I64,
                               x.data(), xs.data(), 2, y.data(), ys.data(), 2,
                               got.data(), xs.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(),
            "where: operands [4], [2, 3], [2, 1] do not broadcast");
}

TEST(Not, FlipsTruth) {
  std::vector<uint8_t> x{0, 1, 7}, y(3);
  ASSERT_EQ(gpipe_rt_cpu_not(x.data(), y.data(), 3), GPIPE_RT_SUCCESS);
  EXPECT_EQ(y, (std::vector<uint8_t>{1, 0, 0}));
}

TEST(Cast, ConvertsBetweenTypes) {
  std::vector<float> f{-2.7f, -0.0f, 0.5f, 3.9f, 1e30f, -1e30f, NAN};
  std::vector<int64_t> i64(f.size());
  ASSERT_EQ(gpipe_rt_cpu_cast(GPIPE_RT_F32, f.data(), GPIPE_RT_I64, i64.data(),
                              int64_t(f.size())),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(i64, (std::vector<int64_t>{-2, 0, 0, 3, INT64_MAX, INT64_MIN, 0}));
  std::vector<int32_t> i32(f.size());
  ASSERT_EQ(gpipe_rt_cpu_cast(GPIPE_RT_F32, f.data(), GPIPE_RT_I32, i32.data(),
                              int64_t(f.size())),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(i32[4], INT32_MAX);
  std::vector<uint8_t> b(f.size());
  ASSERT_EQ(gpipe_rt_cpu_cast(GPIPE_RT_F32, f.data(), GPIPE_RT_BOOL, b.data(),
                              int64_t(f.size())),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(b, (std::vector<uint8_t>{1, 0, 1, 1, 1, 1, 1}));
  std::vector<float> back(b.size());
  ASSERT_EQ(gpipe_rt_cpu_cast(GPIPE_RT_BOOL, b.data(), GPIPE_RT_F32,
                              back.data(), int64_t(b.size())),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(back[1], 0.0f);
  EXPECT_EQ(back[0], 1.0f);
  std::vector<int64_t> ints{-3, 0, 1 << 20};
  std::vector<double> d(3);
  ASSERT_EQ(
      gpipe_rt_cpu_cast(GPIPE_RT_I64, ints.data(), GPIPE_RT_F64, d.data(), 3),
      GPIPE_RT_SUCCESS);
  EXPECT_EQ(d, (std::vector<double>{-3.0, 0.0, double(1 << 20)}));
  EXPECT_EQ(
      gpipe_rt_cpu_cast(GPIPE_RT_F16, ints.data(), GPIPE_RT_F32, d.data(), 1),
      GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cast: unsupported conversion from f16 to f32 "
                         "(supported: f32, f64, i32, i64, i1)");
}

//===----------------------------------------------------------------------===//
// compare, logical, cumsum, broadcast, clip
//===----------------------------------------------------------------------===//

const std::vector<std::pair<Shape, Shape>> kBroadcastPairs = {
    {{3, 4}, {3, 4}}, {{3, 4}, {4}},          {{4}, {3, 4}},
    {{3, 1}, {1, 4}}, {{}, {2, 3}},           {{2, 3}, {}},
    {{}, {}},         {{2, 1, 3}, {4, 1}},    {{3, 1, 5, 1}, {1, 4, 1, 6}},
    {{0, 3}, {3}},    {{2, 16, 32}, {16, 32}}};

const gpipe_rt_compare_op kCompareOps[] = {GPIPE_RT_CMP_EQ, GPIPE_RT_CMP_NE,
                                           GPIPE_RT_CMP_LT, GPIPE_RT_CMP_LE,
                                           GPIPE_RT_CMP_GT, GPIPE_RT_CMP_GE};

template <typename T> bool applyCompare(gpipe_rt_compare_op op, T a, T b) {
  switch (op) {
  case GPIPE_RT_CMP_EQ:
    return a == b;
  case GPIPE_RT_CMP_NE:
    return a != b;
  case GPIPE_RT_CMP_LT:
    return a < b;
  case GPIPE_RT_CMP_LE:
    return a <= b;
  case GPIPE_RT_CMP_GT:
    return a > b;
  case GPIPE_RT_CMP_GE:
    return a >= b;
  }
  return false;
}

/// Runs compare on `lhs` and `rhs` (of type `dtype`, stored as T) and checks
/// every element against applyCompare on `key` of the operands.
template <typename T, typename Key>
void expectCompareMatches(gpipe_rt_dtype dtype, const Shape &ls,
                          const std::vector<T> &lhs, const Shape &rs,
                          const std::vector<T> &rhs, Key key) {
  Shape out = broadcastShapes(ls, rs);
  for (gpipe_rt_compare_op op : kCompareOps) {
    SCOPED_TRACE(std::string(gpipe_rt_dtype_name(dtype)) + " op " +
                 std::to_string(int(op)));
    std::vector<uint8_t> got(static_cast<size_t>(numel(out)), 7);
    ASSERT_EQ(gpipe_rt_cpu_compare(op, dtype, lhs.data(), ls.data(), rankOf(ls),
                                   rhs.data(), rs.data(), rankOf(rs),
                                   got.data(), out.data(), rankOf(out)),
              GPIPE_RT_SUCCESS)
        << lastError();
    for (int64_t i = 0; i < numel(out); ++i) {
      std::vector<int64_t> idx = unravel(i, out);
      T a = lhs[size_t(broadcastIndex(ls, idx))];
      T b = rhs[size_t(broadcastIndex(rs, idx))];
      ASSERT_EQ(got[size_t(i)], uint8_t(applyCompare(op, key(a), key(b))))
          << "element " << i;
    }
  }
}

TEST(Compare, EveryOpAndTypeBroadcasts) {
  uint32_t seed = 30;
  for (auto [ls, rs] : kBroadcastPairs) {
    SCOPED_TRACE(::testing::PrintToString(ls) + " vs " +
                 ::testing::PrintToString(rs));
    // Few distinct values, so that every predicate sees ties; NaNs and
    // signed zeros among the floats.
    std::mt19937 gen(seed++);
    auto values = [&](const Shape &s) {
      std::vector<int64_t> v(static_cast<size_t>(numel(s)));
      for (int64_t &x : v)
        x = int64_t(gen() % 5) - 2;
      return v;
    };
    std::vector<int64_t> li = values(ls), ri = values(rs);
    std::vector<int32_t> l32(li.begin(), li.end()), r32(ri.begin(), ri.end());
    std::vector<float> lf(li.begin(), li.end()), rf(ri.begin(), ri.end());
    for (size_t i = 0; i < lf.size(); i += 3)
      lf[i] = li[i] == 2 ? NAN : li[i] == 0 ? -0.0f : lf[i];
    for (size_t i = 1; i < rf.size(); i += 4)
      rf[i] = ri[i] == -2 ? NAN : rf[i];
    std::vector<double> ld(lf.begin(), lf.end()), rd(rf.begin(), rf.end());
    std::vector<uint8_t> lb(li.size()), rb(ri.size());
    for (size_t i = 0; i < li.size(); ++i)
      lb[i] = uint8_t(li[i] + 2); // 0 to 4: several bytes are true
    for (size_t i = 0; i < ri.size(); ++i)
      rb[i] = uint8_t(ri[i] + 2);
    auto same = [](auto v) { return v; };
    expectCompareMatches(GPIPE_RT_F32, ls, lf, rs, rf, same);
    expectCompareMatches(GPIPE_RT_F64, ls, ld, rs, rd, same);
    expectCompareMatches(GPIPE_RT_I32, ls, l32, rs, r32, same);
    expectCompareMatches(GPIPE_RT_I64, ls, li, rs, ri, same);
    // Booleans compare by truth, not by byte value: false < true.
    expectCompareMatches(GPIPE_RT_BOOL, ls, lb, rs, rb,
                         [](uint8_t v) { return int(v != 0); });
  }
}

TEST(Compare, NaNComparesFalseExceptNotEqual) {
  std::vector<float> x{NAN, NAN, 1.0f}, y{NAN, 1.0f, NAN};
  Shape s{3};
  for (gpipe_rt_compare_op op : kCompareOps) {
    std::vector<uint8_t> got(3);
    ASSERT_EQ(gpipe_rt_cpu_compare(op, GPIPE_RT_F32, x.data(), s.data(), 1,
                                   y.data(), s.data(), 1, got.data(), s.data(),
                                   1),
              GPIPE_RT_SUCCESS);
    uint8_t want = op == GPIPE_RT_CMP_NE ? 1 : 0;
    EXPECT_EQ(got, (std::vector<uint8_t>{want, want, want})) << int(op);
  }
  // -0 and +0 are equal.
  float neg = -0.0f, pos = 0.0f;
  uint8_t eq = 0;
  ASSERT_EQ(gpipe_rt_cpu_compare(GPIPE_RT_CMP_EQ, GPIPE_RT_F32, &neg, nullptr,
                                 0, &pos, nullptr, 0, &eq, nullptr, 0),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(eq, 1);
}

TEST(Compare, ErrorsAreReported) {
  Shape a{2, 3}, b{4}, out{2, 3};
  std::vector<float> x(6), y(4);
  std::vector<uint8_t> z(6);
  EXPECT_EQ(gpipe_rt_cpu_compare(gpipe_rt_compare_op(6), GPIPE_RT_F32, x.data(),
                                 a.data(), 2, x.data(), a.data(), 2, z.data(),
                                 out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "compare: unknown op 6");
  EXPECT_EQ(gpipe_rt_cpu_compare(gpipe_rt_compare_op(-1), GPIPE_RT_F32,
                                 x.data(), a.data(), 2, x.data(), a.data(), 2,
                                 z.data(), out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "compare: unknown op -1");
  EXPECT_EQ(gpipe_rt_cpu_compare(GPIPE_RT_CMP_LT, GPIPE_RT_F16, x.data(),
                                 a.data(), 2, x.data(), a.data(), 2, z.data(),
                                 out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "compare: unsupported element type f16");
  EXPECT_EQ(gpipe_rt_cpu_compare(GPIPE_RT_CMP_LT, GPIPE_RT_F32, x.data(),
                                 a.data(), 2, y.data(), b.data(), 1, z.data(),
                                 out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "compare: operands [2, 3], [4] do not broadcast");
  Shape wrong{3, 3};
  EXPECT_EQ(gpipe_rt_cpu_compare(GPIPE_RT_CMP_GE, GPIPE_RT_F32, x.data(),
                                 a.data(), 2, x.data(), a.data(), 2, z.data(),
                                 wrong.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "compare: operands [2, 3], [2, 3] broadcast to "
                         "[2, 3], not to the result shape [3, 3]");
  EXPECT_EQ(gpipe_rt_cpu_compare(GPIPE_RT_CMP_EQ, GPIPE_RT_F32, x.data(),
                                 a.data(), 2, nullptr, a.data(), 2, z.data(),
                                 out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "compare: rhs is null but holds 6 elements");
  // An empty result computes nothing.
  Shape empty{0, 3};
  EXPECT_EQ(gpipe_rt_cpu_compare(GPIPE_RT_CMP_EQ, GPIPE_RT_I64, nullptr,
                                 empty.data(), 2, nullptr, empty.data(), 2,
                                 nullptr, empty.data(), 2),
            GPIPE_RT_SUCCESS);
}

TEST(Logical, EveryOpBroadcastsOverTruth) {
  uint32_t seed = 60;
  for (auto [ls, rs] : kBroadcastPairs) {
    SCOPED_TRACE(::testing::PrintToString(ls) + " vs " +
                 ::testing::PrintToString(rs));
    Shape out = broadcastShapes(ls, rs);
    std::mt19937 gen(seed++);
    auto bytes = [&](const Shape &s) {
      std::vector<uint8_t> v(static_cast<size_t>(numel(s)));
      for (uint8_t &x : v)
        x = uint8_t(gen() % 3 == 0 ? 0 : gen() % 255 + 1);
      return v;
    };
    std::vector<uint8_t> a = bytes(ls), b = bytes(rs);
    for (gpipe_rt_logical_op op : {GPIPE_RT_AND, GPIPE_RT_OR, GPIPE_RT_XOR}) {
      std::vector<uint8_t> got(static_cast<size_t>(numel(out)), 7);
      ASSERT_EQ(gpipe_rt_cpu_logical(op, a.data(), ls.data(), rankOf(ls),
                                     b.data(), rs.data(), rankOf(rs),
                                     got.data(), out.data(), rankOf(out)),
                GPIPE_RT_SUCCESS)
          << lastError();
      for (int64_t i = 0; i < numel(out); ++i) {
        std::vector<int64_t> idx = unravel(i, out);
        bool x = a[size_t(broadcastIndex(ls, idx))] != 0;
        bool y = b[size_t(broadcastIndex(rs, idx))] != 0;
        bool want = op == GPIPE_RT_AND  ? x && y
                    : op == GPIPE_RT_OR ? x || y
                                        : x != y;
        ASSERT_EQ(got[size_t(i)], uint8_t(want))
            << "op " << int(op) << " element " << i;
      }
    }
  }
}

TEST(Logical, ErrorsAreReported) {
  Shape a{2, 3}, b{2}, out{2, 3};
  std::vector<uint8_t> x(6), y(2), z(6);
  EXPECT_EQ(gpipe_rt_cpu_logical(gpipe_rt_logical_op(3), x.data(), a.data(), 2,
                                 x.data(), a.data(), 2, z.data(), out.data(),
                                 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "logical: unknown op 3");
  EXPECT_EQ(gpipe_rt_cpu_logical(GPIPE_RT_OR, x.data(), a.data(), 2, y.data(),
                                 b.data(), 1, z.data(), out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "logical: operands [2, 3], [2] do not broadcast");
  EXPECT_EQ(gpipe_rt_cpu_logical(GPIPE_RT_XOR, x.data(), a.data(), 2, x.data(),
                                 a.data(), 2, nullptr, out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "logical: result is null but holds 6 elements");
}

/// ONNX CumSum written from its definition: element i of a line is the sum
/// of the terms j <= i (j < i if `exclusive`; j >= i, or j > i, if
/// `reverse`), added one at a time in summation order starting from the
/// first term (0 when there is none). `add` adds two terms.
template <typename T, typename Add>
std::vector<T> referenceCumsum(const std::vector<T> &x, const Shape &s,
                               int64_t axis, bool exclusive, bool reverse,
                               Add add) {
  std::vector<T> out(x.size());
  int64_t n = s[size_t(axis)];
  for (int64_t flat = 0; flat < numel(s); ++flat) {
    std::vector<int64_t> idx = unravel(flat, s);
    int64_t i = idx[size_t(axis)];
    bool any = false;
    T acc = T(0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t j = reverse ? n - 1 - k : k;
      bool included =
          reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
      if (!included)
        continue;
      idx[size_t(axis)] = j;
      T term = x[size_t(ravel(idx, s))];
      acc = any ? add(acc, term) : term;
      any = true;
    }
    out[size_t(flat)] = acc;
  }
  return out;
}

float addF32(float a, float b) { return a + b; }

/// i64 sums wrap: two's complement addition through uint64_t.
int64_t addI64(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}

/// Runs cumsum on `x` (of `dtype`, stored as T) and returns the result.
template <typename T>
std::vector<T> runCumsum(gpipe_rt_dtype dtype, const std::vector<T> &x,
                         const Shape &s, int64_t axis, bool exclusive,
                         bool reverse) {
  std::vector<T> got(x.size(), T(7));
  EXPECT_EQ(gpipe_rt_cpu_cumsum(dtype, x.data(), s.data(), rankOf(s), axis,
                                exclusive, reverse, got.data()),
            GPIPE_RT_SUCCESS)
      << lastError();
  return got;
}

/// Bitwise equality (tells -0 from +0).
template <typename T>
void expectSameBits(const std::vector<T> &got, const std::vector<T> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(T)), 0)
        << "element " << i << ": got " << got[i] << ", want " << want[i];
}

TEST(Cumsum, EveryAxisAndFlagMatchesReference) {
  const std::vector<Shape> shapes = {{3, 4, 5}, {2, 1, 37}, {9}};
  uint32_t seed = 70;
  for (const Shape &s : shapes) {
    std::vector<float> xf = randomFloats(numel(s), seed++, -4.0f, 4.0f);
    // Signed zeros and values of different magnitudes, so that a sum in
    // another order or from +0 would show.
    for (size_t i = 0; i < xf.size(); i += 7)
      xf[i] = -0.0f;
    for (size_t i = 3; i < xf.size(); i += 11)
      xf[i] *= 1e7f;
    std::mt19937_64 gen(seed++);
    std::vector<int64_t> xi(static_cast<size_t>(numel(s)));
    for (int64_t &v : xi)
      v = int64_t(gen());
    for (size_t i = 0; i < xi.size(); i += 5)
      xi[i] = std::numeric_limits<int64_t>::max() - int64_t(i);
    for (int64_t axis = 0; axis < rankOf(s); ++axis) {
      for (int flags = 0; flags < 4; ++flags) {
        bool exclusive = flags & 1, reverse = flags & 2;
        SCOPED_TRACE(::testing::PrintToString(s) + " axis " +
                     std::to_string(axis) + " exclusive " +
                     std::to_string(exclusive) + " reverse " +
                     std::to_string(reverse));
        expectSameBits(
            runCumsum(GPIPE_RT_F32, xf, s, axis, exclusive, reverse),
            referenceCumsum(xf, s, axis, exclusive, reverse, addF32));
        expectSameBits(
            runCumsum(GPIPE_RT_I64, xi, s, axis, exclusive, reverse),
            referenceCumsum(xi, s, axis, exclusive, reverse, addI64));
      }
    }
  }
}

TEST(Cumsum, OnnxExamplesSignedZerosAndWraparound) {
  Shape s{5};
  std::vector<float> x{1, 2, 3, 4, 5};
  EXPECT_EQ(runCumsum(GPIPE_RT_F32, x, s, 0, false, false),
            (std::vector<float>{1, 3, 6, 10, 15}));
  EXPECT_EQ(runCumsum(GPIPE_RT_F32, x, s, 0, true, false),
            (std::vector<float>{0, 1, 3, 6, 10}));
  EXPECT_EQ(runCumsum(GPIPE_RT_F32, x, s, 0, false, true),
            (std::vector<float>{15, 14, 12, 9, 5}));
  EXPECT_EQ(runCumsum(GPIPE_RT_F32, x, s, 0, true, true),
            (std::vector<float>{14, 12, 9, 5, 0}));
  // A 2-D input along either axis.
  Shape m{2, 3};
  std::vector<float> y{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(runCumsum(GPIPE_RT_F32, y, m, 0, false, false),
            (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(runCumsum(GPIPE_RT_F32, y, m, 1, false, false),
            (std::vector<float>{1, 3, 6, 4, 9, 15}));
  // The sum starts from the first term: -0 stays -0; the empty sum of an
  // exclusive scan is +0.
  Shape two{2};
  std::vector<float> zeros{-0.0f, -0.0f};
  std::vector<float> inclusive =
      runCumsum(GPIPE_RT_F32, zeros, two, 0, false, false);
  EXPECT_TRUE(std::signbit(inclusive[0]));
  EXPECT_TRUE(std::signbit(inclusive[1]));
  std::vector<float> exclusive =
      runCumsum(GPIPE_RT_F32, zeros, two, 0, true, false);
  EXPECT_FALSE(std::signbit(exclusive[0]));
  EXPECT_TRUE(std::signbit(exclusive[1]));
  // In order from the first term: (1 + 1e8) - 1e8 is 0 in f32; from the
  // last, (-1e8 + 1e8) + 1 is 1.
  std::vector<float> order{1.0f, 1e8f, -1e8f};
  EXPECT_EQ(runCumsum(GPIPE_RT_F32, order, Shape{3}, 0, false, false)[2], 0.0f);
  EXPECT_EQ(runCumsum(GPIPE_RT_F32, order, Shape{3}, 0, false, true)[0], 1.0f);
  // i64 wraps around.
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> big{max, 1, -1, min};
  EXPECT_EQ(runCumsum(GPIPE_RT_I64, big, Shape{4}, 0, false, false),
            (std::vector<int64_t>{max, min, max, -1}));
  EXPECT_EQ(runCumsum(GPIPE_RT_I64, big, Shape{4}, 0, true, true),
            (std::vector<int64_t>{min, max, min, 0}));
}

TEST(Cumsum, ErrorsAreReported) {
  Shape s{3, 4, 5};
  std::vector<float> x(60), y(60);
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F64, x.data(), s.data(), 3, 0, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(),
            "cumsum: unsupported element type f64 (supported: f32, i64)");
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_I32, x.data(), s.data(), 3, 0, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(),
            "cumsum: unsupported element type i32 (supported: f32, i64)");
  EXPECT_EQ(gpipe_rt_cpu_cumsum(gpipe_rt_dtype(42), x.data(), s.data(), 3, 0, 0,
                                0, y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: unknown element type 42");
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, x.data(), s.data(), 3, 3, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: axis 3 is out of range for [3, 4, 5]");
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, x.data(), s.data(), 3, -1, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: axis -1 is out of range for [3, 4, 5]");
  // A scalar has no axis.
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, x.data(), nullptr, 0, 0, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: axis 0 is out of range for []");
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, nullptr, s.data(), 3, 1, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: input is null but holds 60 elements");
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_I64, x.data(), s.data(), 3, 1, 1, 1,
                                nullptr),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: result is null but holds 60 elements");
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, x.data(), nullptr, 2, 0, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: input has rank 2 but a null shape");
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, x.data(), s.data(), 9, 0, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: input has rank 9, expected 0 to 8");
  Shape neg{3, -4};
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, x.data(), neg.data(), 2, 0, 0, 0,
                                y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "cumsum: input dim 1 is negative (-4)");
  // An empty tensor computes nothing, along its empty axis or another.
  Shape empty{0, 3};
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, nullptr, empty.data(), 2, 0, 0, 0,
                                nullptr),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_I64, nullptr, empty.data(), 2, 1, 1, 1,
                                nullptr),
            GPIPE_RT_SUCCESS);
}

TEST(Broadcast, MatchesReferenceForEveryElementSize) {
  struct Case {
    Shape in, out;
  };
  std::vector<Case> cases = {{{3}, {2, 3}},
                             {{2, 1}, {2, 3}},
                             {{}, {4, 2}},
                             {{1, 3, 1}, {2, 3, 4}},
                             {{2, 3}, {2, 3}},
                             {{5}, {5}},
                             {{}, {}},
                             {{1}, {0, 1}},
                             {{4, 1, 6}, {3, 4, 5, 6}},
                             {{1, 1}, {1, 1}},
                             {{7, 1}, {2, 7, 300}}};
  uint32_t seed = 80;
  for (const Case &c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.in) + " to " +
                 ::testing::PrintToString(c.out));
    for (gpipe_rt_dtype dtype : {GPIPE_RT_F32, GPIPE_RT_F64, GPIPE_RT_I32,
                                 GPIPE_RT_I64, GPIPE_RT_BOOL, GPIPE_RT_BF16}) {
      size_t elem = gpipe_rt_dtype_size(dtype);
      std::mt19937 gen(seed++);
      std::vector<uint8_t> in(size_t(numel(c.in)) * elem);
      for (uint8_t &x : in)
        x = uint8_t(gen());
      std::vector<uint8_t> got(size_t(numel(c.out)) * elem, 0xA5);
      ASSERT_EQ(gpipe_rt_cpu_broadcast(dtype, in.data(), c.in.data(),
                                       rankOf(c.in), got.data(), c.out.data(),
                                       rankOf(c.out)),
                GPIPE_RT_SUCCESS)
          << lastError();
      for (int64_t i = 0; i < numel(c.out); ++i) {
        int64_t from = broadcastIndex(c.in, unravel(i, c.out));
        ASSERT_EQ(
            std::memcmp(&got[size_t(i) * elem], &in[size_t(from) * elem], elem),
            0)
            << gpipe_rt_dtype_name(dtype) << " element " << i;
      }
    }
  }
}

TEST(Broadcast, ErrorsAreReported) {
  std::vector<float> x(6), y(12);
  Shape in{2, 3}, out{4, 3}, lower{3}, scalar{};
  EXPECT_EQ(gpipe_rt_cpu_broadcast(GPIPE_RT_F32, x.data(), in.data(), 2,
                                   y.data(), out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "broadcast: input [2, 3] does not broadcast to the "
                         "result shape [4, 3]");
  // The result cannot have fewer dims than the input.
  EXPECT_EQ(gpipe_rt_cpu_broadcast(GPIPE_RT_F32, x.data(), in.data(), 2,
                                   y.data(), lower.data(), 1),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "broadcast: input [2, 3] does not broadcast to the "
                         "result shape [3]");
  EXPECT_EQ(gpipe_rt_cpu_broadcast(gpipe_rt_dtype(42), x.data(), in.data(), 2,
                                   y.data(), in.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "broadcast: unknown element type 42");
  EXPECT_EQ(gpipe_rt_cpu_broadcast(GPIPE_RT_F32, nullptr, scalar.data(), 0,
                                   y.data(), out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "broadcast: input is null but holds 1 elements");
  Shape neg{-1};
  EXPECT_EQ(gpipe_rt_cpu_broadcast(GPIPE_RT_F32, x.data(), neg.data(), 1,
                                   y.data(), out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "broadcast: input dim 0 is negative (-1)");
  Shape empty{0, 3};
  EXPECT_EQ(gpipe_rt_cpu_broadcast(GPIPE_RT_F32, nullptr, lower.data(), 1,
                                   nullptr, empty.data(), 2),
            GPIPE_RT_SUCCESS);
}

TEST(Clip, MatchesReferenceAndKeepsNaN) {
  // 1003 elements: a vector body and a remainder.
  std::vector<float> x = randomFloats(1003, 90, -8.0f, 8.0f);
  x[0] = NAN;
  x[1] = INFINITY;
  x[2] = -INFINITY;
  x[3] = 0.0f;
  x[4] = 6.0f;
  x[5] = -0.0f;
  const std::vector<std::pair<float, float>> bounds = {
      {0.0f, 6.0f}, {-1.5f, 2.25f}, {3.0f, 3.0f}, {-INFINITY, INFINITY}};
  for (auto [lo, hi] : bounds) {
    SCOPED_TRACE(std::to_string(lo) + " " + std::to_string(hi));
    std::vector<float> got(x.size());
    ASSERT_EQ(
        gpipe_rt_cpu_clip_f32(x.data(), got.data(), int64_t(x.size()), lo, hi),
        GPIPE_RT_SUCCESS)
        << lastError();
    EXPECT_TRUE(std::isnan(got[0]));
    for (size_t i = 1; i < x.size(); ++i) {
      float want = std::min(std::max(x[i], lo), hi);
      ASSERT_EQ(got[i], want) << "element " << i << " of " << x[i];
      ASSERT_GE(got[i], lo);
      ASSERT_LE(got[i], hi);
    }
  }
  // In place.
  std::vector<float> y = x;
  ASSERT_EQ(
      gpipe_rt_cpu_clip_f32(y.data(), y.data(), int64_t(y.size()), 0.0f, 6.0f),
      GPIPE_RT_SUCCESS);
  for (size_t i = 1; i < x.size(); ++i)
    ASSERT_EQ(y[i], std::min(std::max(x[i], 0.0f), 6.0f)) << i;
}

TEST(Clip, ErrorsAreReported) {
  float x = 1.0f, y = 0.0f;
  EXPECT_EQ(gpipe_rt_cpu_clip_f32(&x, &y, 1, 2.0f, 1.0f),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "clip: lo must not exceed hi, got lo 2 and hi 1");
  EXPECT_EQ(gpipe_rt_cpu_clip_f32(&x, &y, 1, NAN, 1.0f),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(gpipe_rt_cpu_clip_f32(nullptr, &y, 2, 0.0f, 1.0f),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "clip: input is null but holds 2 elements");
  EXPECT_EQ(gpipe_rt_cpu_clip_f32(&x, &y, -1, 0.0f, 1.0f),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "clip: negative element count -1");
  EXPECT_EQ(gpipe_rt_cpu_clip_f32(nullptr, nullptr, 0, 0.0f, 1.0f),
            GPIPE_RT_SUCCESS);
}

TEST(ClipGrad, PassesGradientStrictlyInside) {
  std::vector<float> x = randomFloats(1003, 91, -8.0f, 8.0f);
  std::vector<float> g = randomFloats(1003, 92);
  x[0] = NAN;
  x[1] = 0.0f; // at lo
  x[2] = 6.0f; // at hi
  x[3] = INFINITY;
  x[4] = -INFINITY;
  x[5] = std::nextafter(0.0f, 1.0f);
  x[6] = std::nextafter(6.0f, 0.0f);
  const float lo = 0.0f, hi = 6.0f;
  std::vector<float> got(x.size(), NAN);
  ASSERT_EQ(gpipe_rt_cpu_clip_grad_f32(x.data(), g.data(), got.data(),
                                       int64_t(x.size()), lo, hi),
            GPIPE_RT_SUCCESS)
      << lastError();
  for (size_t i = 0; i < x.size(); ++i) {
    float want = x[i] > lo && x[i] < hi ? g[i] : 0.0f;
    ASSERT_EQ(got[i], want) << "element " << i << " of " << x[i];
  }
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[1], 0.0f);
  EXPECT_EQ(got[2], 0.0f);
  EXPECT_EQ(got[5], g[5]);
  EXPECT_EQ(got[6], g[6]);
  // In place over the gradient.
  std::vector<float> h = g;
  ASSERT_EQ(gpipe_rt_cpu_clip_grad_f32(x.data(), h.data(), h.data(),
                                       int64_t(x.size()), lo, hi),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(h, got);
}

TEST(ClipGrad, ErrorsAreReported) {
  float x = 1.0f, g = 1.0f, y = 0.0f;
  EXPECT_EQ(gpipe_rt_cpu_clip_grad_f32(&x, nullptr, &y, 1, 0.0f, 1.0f),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "clip_grad: grad is null but holds 1 elements");
  EXPECT_EQ(gpipe_rt_cpu_clip_grad_f32(&x, &g, nullptr, 1, 0.0f, 1.0f),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "clip_grad: result is null but holds 1 elements");
  EXPECT_EQ(gpipe_rt_cpu_clip_grad_f32(&x, &g, &y, -3, 0.0f, 1.0f),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "clip_grad: negative element count -3");
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// Reference numpy matmul; `bound` gets sum |a_ik b_kj| per element.
void referenceMatmul(const std::vector<float> &a, const Shape &as,
                     const std::vector<float> &b, const Shape &bs,
                     const Shape &out, std::vector<double> &want,
                     std::vector<double> &bound) {
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  Shape oBatch(out.begin(), out.end() - 2);
  want.assign(size_t(numel(out)), 0.0);
  bound.assign(size_t(numel(out)), 0.0);
  for (int64_t bi = 0; bi < numel(oBatch); ++bi) {
    std::vector<int64_t> idx = unravel(bi, oBatch);
    int64_t ai = broadcastIndex(aBatch, idx), bj = broadcastIndex(bBatch, idx);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, t = 0;
        for (int64_t p = 0; p < k; ++p) {
          double term = double(a[size_t((ai * m + i) * k + p)]) *
                        b[size_t((bj * k + p) * n + j)];
          s += term;
          t += std::abs(term);
        }
        want[size_t((bi * m + i) * n + j)] = s;
        bound[size_t((bi * m + i) * n + j)] = t;
      }
  }
}

struct MatmulCase {
  Shape lhs, rhs, out;
};

class MatmulTest : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulTest, MatchesReference) {
  const MatmulCase &c = GetParam();
  std::vector<float> a = randomFloats(numel(c.lhs), 11);
  std::vector<float> b = randomFloats(numel(c.rhs), 12);
  std::vector<float> got(static_cast<size_t>(numel(c.out)), NAN);
  ASSERT_EQ(gpipe_rt_cpu_matmul_f32(a.data(), c.lhs.data(), rankOf(c.lhs),
                                    b.data(), c.rhs.data(), rankOf(c.rhs), 0, 0,
                                    got.data(), c.out.data(), rankOf(c.out)),
            GPIPE_RT_SUCCESS)
      << lastError();
  std::vector<double> want, bound;
  referenceMatmul(a, c.lhs, b, c.rhs, c.out, want, bound);
  expectWithin(got, want, bound);
}

/// `x` of shape `shape` with its last two dims swapped (data and shape).
std::vector<float> swapLastTwo(const std::vector<float> &x, Shape &shape) {
  size_t r = shape.size();
  int64_t rows = shape[r - 2], cols = shape[r - 1];
  std::vector<float> out(x.size());
  for (int64_t base = 0; base < int64_t(x.size()); base += rows * cols)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        out[size_t(base + j * rows + i)] = x[size_t(base + i * cols + j)];
  std::swap(shape[r - 2], shape[r - 1]);
  return out;
}

// The transpose flags read an operand stored with its last two dims
// swapped: the same product, whatever the broadcast or batch folding.
TEST_P(MatmulTest, TransposedOperands) {
  const MatmulCase &c = GetParam();
  std::vector<float> a = randomFloats(numel(c.lhs), 11);
  std::vector<float> b = randomFloats(numel(c.rhs), 12);
  std::vector<double> want, bound;
  referenceMatmul(a, c.lhs, b, c.rhs, c.out, want, bound);
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(::testing::Message()
                   << "transLhs=" << ta << " transRhs=" << tb);
      Shape ls = c.lhs, rs = c.rhs;
      std::vector<float> sa = ta ? swapLastTwo(a, ls) : a;
      std::vector<float> sb = tb ? swapLastTwo(b, rs) : b;
      std::vector<float> got(static_cast<size_t>(numel(c.out)), NAN);
      ASSERT_EQ(gpipe_rt_cpu_matmul_f32(sa.data(), ls.data(), rankOf(ls),
                                        sb.data(), rs.data(), rankOf(rs), ta,
                                        tb, got.data(), c.out.data(),
                                        rankOf(c.out)),
                GPIPE_RT_SUCCESS)
          << lastError();
      expectWithin(got, want, bound);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, MatmulTest,
    ::testing::Values(MatmulCase{{3, 5}, {5, 4}, {3, 4}},
                      MatmulCase{{2, 3, 5}, {2, 5, 4}, {2, 3, 4}},
                      // rhs shared: the batch folds into one sgemm.
                      MatmulCase{{2, 16, 32}, {32, 96}, {2, 16, 96}},
                      MatmulCase{{2, 3, 5}, {1, 5, 4}, {2, 3, 4}},
                      // lhs broadcast.
                      MatmulCase{{3, 5}, {2, 5, 4}, {2, 3, 4}},
                      MatmulCase{{2, 1, 3, 5}, {4, 5, 6}, {2, 4, 3, 6}},
                      MatmulCase{{8, 16, 8}, {8, 8, 16}, {8, 16, 16}},
                      MatmulCase{{1, 1}, {1, 1}, {1, 1}},
                      MatmulCase{{4, 0}, {0, 3}, {4, 3}},
                      MatmulCase{{65, 70}, {70, 33}, {65, 33}}));

TEST(Matmul, ShapeErrors) {
  Shape a{3, 5}, b{4, 2}, out{3, 2};
  std::vector<float> x(15), y(8), z(6);
  EXPECT_EQ(gpipe_rt_cpu_matmul_f32(x.data(), a.data(), 2, y.data(), b.data(),
                                    2, 0, 0, z.data(), out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "matmul: inner dimensions differ: [3, 5] and [4, 2]");
  Shape a3{2, 3, 5}, b3{3, 5, 2}, o3{2, 3, 2};
  std::vector<float> x3(30), y3(30), z3(12);
  EXPECT_EQ(gpipe_rt_cpu_matmul_f32(x3.data(), a3.data(), 3, y3.data(),
                                    b3.data(), 3, 0, 0, z3.data(), o3.data(),
                                    3),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(),
            "matmul: batch dims of [2, 3, 5] and [3, 5, 2] do not broadcast");
  // [3, 5] transposed is [5, 3]: its 3 columns do not meet [4, 2]'s rows.
  EXPECT_EQ(gpipe_rt_cpu_matmul_f32(x.data(), a.data(), 2, y.data(), b.data(),
                                    2, 1, 0, z.data(), out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(),
            "matmul: inner dimensions differ: [3, 5] transposed and [4, 2]");
  // [3, 5] x [2, 5] transposed is [3, 2]: the result shape is checked too.
  Shape bt{2, 5}, wrong{3, 5};
  std::vector<float> y2(10), z2(15);
  EXPECT_EQ(gpipe_rt_cpu_matmul_f32(x.data(), a.data(), 2, y2.data(), bt.data(),
                                    2, 0, 1, z2.data(), wrong.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "matmul: [3, 5] x [2, 5] transposed gives [3, 2], "
                         "not the result shape [3, 5]");
}

TEST(Gemm, EveryTransposeAlphaBetaAndBias) {
  const int64_t m = 5, n = 7, k = 6;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (const Shape &cs : {Shape{}, Shape{n}, Shape{m, 1}, Shape{m, n}}) {
        SCOPED_TRACE(::testing::Message() << "transA=" << ta << " transB=" << tb
                                          << " c rank=" << cs.size());
        Shape as = ta ? Shape{k, m} : Shape{m, k};
        Shape bs = tb ? Shape{n, k} : Shape{k, n};
        Shape out{m, n};
        std::vector<float> a = randomFloats(m * k, 21),
                           b = randomFloats(k * n, 22);
        std::vector<float> c = randomFloats(numel(cs), 23);
        float alpha = 0.75f, beta = -1.5f;
        std::vector<float> got(static_cast<size_t>(m * n), NAN);
        ASSERT_EQ(gpipe_rt_cpu_gemm_f32(a.data(), as.data(), b.data(),
                                        bs.data(), c.data(), cs.data(),
                                        rankOf(cs), alpha, beta, ta, tb,
                                        got.data(), out.data()),
                  GPIPE_RT_SUCCESS)
            << lastError();
        std::vector<double> want(static_cast<size_t>(m * n)),
            bound(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0, t = 0;
            for (int64_t p = 0; p < k; ++p) {
              double av = ta ? a[size_t(p * m + i)] : a[size_t(i * k + p)];
              double bv = tb ? b[size_t(j * k + p)] : b[size_t(p * n + j)];
              s += av * bv;
              t += std::abs(av * bv);
            }
            double cv = c[size_t(broadcastIndex(cs, {i, j}))];
            want[size_t(i * n + j)] = alpha * s + beta * cv;
            bound[size_t(i * n + j)] =
                std::abs(alpha) * t + std::abs(beta * cv);
          }
        expectWithin(got, want, bound);
      }
}

TEST(Gemm, WithoutC) {
  Shape as{2, 3}, bs{3, 2}, out{2, 2};
  std::vector<float> a{1, 2, 3, 4, 5, 6}, b{1, 0, 0, 1, 1, 1};
  std::vector<float> got(4, NAN);
  ASSERT_EQ(gpipe_rt_cpu_gemm_f32(a.data(), as.data(), b.data(), bs.data(),
                                  nullptr, nullptr, 0, 2.0f, 5.0f, 0, 0,
                                  got.data(), out.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(got, (std::vector<float>{8, 10, 20, 22}));
}

TEST(Linear, BothWeightLayoutsWithAndWithoutBias) {
  Shape in{2, 3, 8};
  const int64_t inF = 8, outF = 5, rows = 6;
  std::vector<float> x = randomFloats(numel(in), 31);
  std::vector<float> w = randomFloats(inF * outF, 32);
  std::vector<float> bias = randomFloats(outF, 33);
  for (int transpose = 0; transpose < 2; ++transpose)
    for (int withBias = 0; withBias < 2; ++withBias) {
      SCOPED_TRACE(::testing::Message()
                   << "transpose=" << transpose << " bias=" << withBias);
      Shape ws = transpose ? Shape{outF, inF} : Shape{inF, outF};
      Shape out{2, 3, outF};
      std::vector<float> got(static_cast<size_t>(numel(out)), NAN);
      ASSERT_EQ(gpipe_rt_cpu_linear_f32(x.data(), in.data(), 3, w.data(),
                                        ws.data(),
                                        withBias ? bias.data() : nullptr,
                                        transpose, got.data(), out.data(), 3),
                GPIPE_RT_SUCCESS)
          << lastError();
      std::vector<double> want(got.size()), bound(got.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < outF; ++o) {
          double s = withBias ? bias[size_t(o)] : 0.0, t = std::abs(s);
          for (int64_t i = 0; i < inF; ++i) {
            double wv =
                transpose ? w[size_t(o * inF + i)] : w[size_t(i * outF + o)];
            s += double(x[size_t(r * inF + i)]) * wv;
            t += std::abs(double(x[size_t(r * inF + i)]) * wv);
          }
          want[size_t(r * outF + o)] = s;
          bound[size_t(r * outF + o)] = t;
        }
      expectWithin(got, want, bound);
    }
}

/// `x` rounded to bf16 by clearing the low 16 bits after adding half an
/// ulp with ties to even (the reference for the kernels' rounding).
float bf16Reference(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  uint32_t low = u & 0xffffu, kept = u >> 16;
  if (low > 0x8000u || (low == 0x8000u && (kept & 1u)))
    ++kept;
  u = kept << 16;
  std::memcpy(&x, &u, 4);
  return x;
}

TEST(Bf16, OperandsRoundToNearestEven) {
  // 1 x 1 products show the rounding of each operand: halfway cases go to
  // the even neighbour.
  const float ulp = std::ldexp(1.0f, -7); // bf16's spacing at 1
  struct Case {
    float a, want;
  } cases[] = {{1.0f + ulp / 2, 1.0f},
               {1.0f + 3 * ulp / 2, 1.0f + 2 * ulp},
               {1.0f + ulp / 2 + ulp / 64, 1.0f + ulp},
               {-3.0f - ulp / 4, -3.0f}};
  Shape s{1, 1};
  for (const Case &c : cases) {
    float one = 1.0f, out = NAN;
    ASSERT_EQ(gpipe_rt_cpu_matmul_bf16(&c.a, s.data(), 2, &one, s.data(), 2, 0,
                                       0, &out, s.data(), 2),
              GPIPE_RT_SUCCESS)
        << lastError();
    EXPECT_EQ(out, c.want) << c.a;
    EXPECT_EQ(out, bf16Reference(c.a));
  }
}

TEST(Bf16, ContractionsAreFp32OnRoundedOperands) {
  // Each _bf16 kernel gives exactly its _f32 twin's bits on operands
  // rounded beforehand, and differs on the raw ones.
  Shape in{2, 3, 8}, ws{5, 8}, out{2, 3, 5};
  std::vector<float> x = randomFloats(numel(in), 41);
  std::vector<float> w = randomFloats(numel(ws), 42);
  std::vector<float> bias = randomFloats(5, 43);
  std::vector<float> xr(x), wr(w);
  for (float &v : xr)
    v = bf16Reference(v);
  for (float &v : wr)
    v = bf16Reference(v);
  std::vector<float> got(static_cast<size_t>(numel(out))), want(got), raw(got);
  ASSERT_EQ(gpipe_rt_cpu_linear_bf16(x.data(), in.data(), 3, w.data(),
                                     ws.data(), bias.data(), 1, got.data(),
                                     out.data(), 3),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_linear_f32(xr.data(), in.data(), 3, wr.data(),
                                    ws.data(), bias.data(), 1, want.data(),
                                    out.data(), 3),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_linear_f32(x.data(), in.data(), 3, w.data(), ws.data(),
                                    bias.data(), 1, raw.data(), out.data(), 3),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(got, want);
  EXPECT_NE(got, raw);

  Shape a{3, 8}, b{5, 8}, c{3, 5};
  std::vector<float> g16(15), g32(15);
  ASSERT_EQ(gpipe_rt_cpu_gemm_bf16(x.data(), a.data(), w.data(), b.data(),
                                   nullptr, nullptr, 0, 0.5f, 0.0f, 0, 1,
                                   g16.data(), c.data()),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_gemm_f32(xr.data(), a.data(), wr.data(), b.data(),
                                  nullptr, nullptr, 0, 0.5f, 0.0f, 0, 1,
                                  g32.data(), c.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(g16, g32);

  // Batched matmul, rhs broadcast over the batch.
  Shape l{2, 3, 8}, r{8, 5}, o{2, 3, 5};
  std::vector<float> m16(30), m32(30);
  ASSERT_EQ(gpipe_rt_cpu_matmul_bf16(x.data(), l.data(), 3, w.data(), r.data(),
                                     2, 0, 0, m16.data(), o.data(), 3),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_matmul_f32(xr.data(), l.data(), 3, wr.data(), r.data(),
                                    2, 0, 0, m32.data(), o.data(), 3),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(m16, m32);
  // The scope ends with the call: the next f32 GEMM is plain fp32 again.
  std::vector<float> again(got.size());
  ASSERT_EQ(gpipe_rt_cpu_linear_f32(x.data(), in.data(), 3, w.data(), ws.data(),
                                    bias.data(), 1, again.data(), out.data(),
                                    3),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(again, raw);
}

TEST(Linear, ReportsFeatureMismatch) {
  Shape in{4, 8}, ws{5, 7}, out{4, 5};
  std::vector<float> x(32), w(35), y(20);
  EXPECT_EQ(gpipe_rt_cpu_linear_f32(x.data(), in.data(), 2, w.data(), ws.data(),
                                    nullptr, 1, y.data(), out.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "linear: input [4, 8] has 8 features but weight "
                         "[5, 7] ([out, in]) takes 7");
}

//===----------------------------------------------------------------------===//
// Softmax and layer norm
//===----------------------------------------------------------------------===//

TEST(Softmax, EveryAxisMatchesReference) {
  Shape s{3, 4, 5};
  std::vector<float> x = randomFloats(numel(s), 41, -5.0f, 5.0f);
  for (int64_t axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE(axis);
    std::vector<float> got(x.size());
    ASSERT_EQ(gpipe_rt_cpu_softmax_f32(x.data(), s.data(), 3, axis, got.data()),
              GPIPE_RT_SUCCESS);
    std::vector<double> want(x.size());
    for (int64_t i = 0; i < numel(s); ++i) {
      std::vector<int64_t> idx = unravel(i, s);
      double denom = 0;
      for (int64_t j = 0; j < s[size_t(axis)]; ++j) {
        std::vector<int64_t> other = idx;
        other[size_t(axis)] = j;
        denom += std::exp(double(x[size_t(ravel(other, s))]));
      }
      want[size_t(i)] = std::exp(double(x[size_t(i)])) / denom;
    }
    expectClose(got, want, 1e-5, 0.0);
  }
}

TEST(Softmax, LargeLogitsAndMaskedEntriesStayFinite) {
  Shape s{2, 4};
  std::vector<float> x{1000.0f,   1001.0f, 1002.0f,   1003.0f,
                       -INFINITY, 0.0f,    -INFINITY, 0.0f};
  std::vector<float> got(8);
  ASSERT_EQ(gpipe_rt_cpu_softmax_f32(x.data(), s.data(), 2, 1, got.data()),
            GPIPE_RT_SUCCESS);
  double denom = 1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0);
  EXPECT_NEAR(got[3], 1.0 / denom, 1e-6);
  EXPECT_EQ(got[4], 0.0f);
  EXPECT_EQ(got[5], 0.5f);
}

TEST(Softmax, InPlaceAndBadAxis) {
  Shape s{4, 6};
  std::vector<float> x = randomFloats(24, 42), copy(24);
  ASSERT_EQ(gpipe_rt_cpu_softmax_f32(x.data(), s.data(), 2, 1, copy.data()),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_softmax_f32(x.data(), s.data(), 2, 1, x.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(x, copy);
  EXPECT_EQ(gpipe_rt_cpu_softmax_f32(x.data(), s.data(), 2, 2, x.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "softmax: axis 2 is out of range for [4, 6]");
}

TEST(LayerNorm, MatchesReferenceOverTrailingDims) {
  Shape s{2, 3, 8};
  std::vector<float> x = randomFloats(numel(s), 51, -3.0f, 5.0f);
  for (int64_t axis : {1, 2}) {
    for (int withBias = 0; withBias < 2; ++withBias) {
      SCOPED_TRACE(::testing::Message()
                   << "axis=" << axis << " bias=" << withBias);
      int64_t n = 1;
      for (size_t d = size_t(axis); d < s.size(); ++d)
        n *= s[d];
      int64_t rows = numel(s) / n;
      std::vector<float> scale = randomFloats(n, 52),
                         bias = randomFloats(n, 53);
      std::vector<float> got(x.size()), mean(static_cast<size_t>(rows)),
          rstd(static_cast<size_t>(rows));
      const float eps = 1e-5f;
      ASSERT_EQ(
          gpipe_rt_cpu_layer_norm_f32(x.data(), s.data(), 3, axis, scale.data(),
                                      withBias ? bias.data() : nullptr, eps,
                                      got.data(), mean.data(), rstd.data()),
          GPIPE_RT_SUCCESS);
      std::vector<double> want(x.size()), bound(x.size());
      for (int64_t r = 0; r < rows; ++r) {
        double mu = 0, var = 0;
        for (int64_t j = 0; j < n; ++j)
          mu += x[size_t(r * n + j)];
        mu /= double(n);
        for (int64_t j = 0; j < n; ++j)
          var += (x[size_t(r * n + j)] - mu) * (x[size_t(r * n + j)] - mu);
        var /= double(n);
        double rs = 1.0 / std::sqrt(var + eps);
        EXPECT_NEAR(mean[size_t(r)], mu, 1e-6 * (1 + std::abs(mu)));
        EXPECT_NEAR(rstd[size_t(r)], rs, 1e-6 * rs);
        for (int64_t j = 0; j < n; ++j) {
          double xv = x[size_t(r * n + j)];
          double b = withBias ? bias[size_t(j)] : 0.0;
          want[size_t(r * n + j)] = (xv - mu) * rs * scale[size_t(j)] + b;
          bound[size_t(r * n + j)] =
              (std::abs(xv) + std::abs(mu)) * rs * std::abs(scale[size_t(j)]) +
              std::abs(b);
        }
      }
      expectWithin(got, want, bound);
    }
  }
}

//===----------------------------------------------------------------------===//
// Gather, transpose, slice, split, concat
//===----------------------------------------------------------------------===//

TEST(Gather, EmbeddingLookup) {
  Shape table{10, 4}, ids{2, 3};
  std::vector<float> t = randomFloats(40, 61);
  std::vector<int64_t> idx{0, 9, 3, 3, 1, 0};
  std::vector<float> got(24);
  ASSERT_EQ(gpipe_rt_cpu_gather(GPIPE_RT_F32, t.data(), table.data(), 2,
                                GPIPE_RT_I64, idx.data(), ids.data(), 2, 0,
                                got.data()),
            GPIPE_RT_SUCCESS);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(got[size_t(i * 4 + j)], t[size_t(idx[size_t(i)] * 4 + j)]);
}

TEST(Gather, MiddleAxisWithI32Indices) {
  Shape data{2, 5, 3}, ids{4};
  std::vector<int64_t> d(30);
  std::iota(d.begin(), d.end(), 100);
  std::vector<int32_t> idx{4, 0, 2, 4};
  std::vector<int64_t> got(24);
  ASSERT_EQ(gpipe_rt_cpu_gather(GPIPE_RT_I64, d.data(), data.data(), 3,
                                GPIPE_RT_I32, idx.data(), ids.data(), 1, 1,
                                got.data()),
            GPIPE_RT_SUCCESS);
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(got[size_t((o * 4 + i) * 3 + k)],
                  d[size_t((o * 5 + idx[size_t(i)]) * 3 + k)]);
}

TEST(Gather, BadIndexIsReportedWithItsPosition) {
  Shape table{10, 4}, ids{2, 3};
  std::vector<float> t(40), got(24, 7.0f);
  std::vector<int64_t> idx{0, 1, 2, 3, 10, 5};
  EXPECT_EQ(gpipe_rt_cpu_gather(GPIPE_RT_F32, t.data(), table.data(), 2,
                                GPIPE_RT_I64, idx.data(), ids.data(), 2, 0,
                                got.data()),
            GPIPE_RT_OUT_OF_RANGE);
  EXPECT_EQ(lastError(), "gather: index 10 at position [1, 1] of indices "
                         "[2, 3] is out of range [0, 10) for axis 0 of data "
                         "[10, 4]");
  // Nothing was written.
  EXPECT_EQ(got, std::vector<float>(24, 7.0f));
  idx[4] = -1;
  EXPECT_EQ(gpipe_rt_cpu_gather(GPIPE_RT_F32, t.data(), table.data(), 2,
                                GPIPE_RT_I64, idx.data(), ids.data(), 2, 0,
                                got.data()),
            GPIPE_RT_OUT_OF_RANGE);
  EXPECT_NE(lastError().find("index -1 at position [1, 1]"), std::string::npos);
}

/// Reference transpose: out[i] = in[perm-mapped index].
template <typename T>
std::vector<T> referenceTranspose(const std::vector<T> &in, const Shape &s,
                                  const Shape &perm) {
  Shape out(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    out[i] = s[size_t(perm[i])];
  std::vector<T> res(in.size());
  for (int64_t i = 0; i < numel(out); ++i) {
    std::vector<int64_t> oi = unravel(i, out), ii(s.size());
    for (size_t d = 0; d < s.size(); ++d)
      ii[size_t(perm[d])] = oi[d];
    res[size_t(i)] = in[size_t(ravel(ii, s))];
  }
  return res;
}

TEST(Transpose, EveryPermutationOfRank4) {
  Shape s{2, 3, 4, 5}, perm{0, 1, 2, 3};
  std::vector<float> x = randomFloats(numel(s), 71);
  do {
    std::vector<float> got(x.size());
    ASSERT_EQ(gpipe_rt_cpu_transpose(GPIPE_RT_F32, x.data(), s.data(), 4,
                                     perm.data(), got.data()),
              GPIPE_RT_SUCCESS);
    EXPECT_EQ(got, referenceTranspose(x, s, perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(Transpose, LargeTiledAndOtherTypes) {
  Shape s{3, 67, 131}, perm{0, 2, 1};
  std::vector<int64_t> x(static_cast<size_t>(numel(s)));
  std::iota(x.begin(), x.end(), 0);
  std::vector<int64_t> got(x.size());
  ASSERT_EQ(gpipe_rt_cpu_transpose(GPIPE_RT_I64, x.data(), s.data(), 3,
                                   perm.data(), got.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(got, referenceTranspose(x, s, perm));
  Shape s2{40, 3, 50}, perm2{2, 1, 0};
  std::vector<uint8_t> b(static_cast<size_t>(numel(s2)));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = uint8_t(i * 7);
  std::vector<uint8_t> bgot(b.size());
  ASSERT_EQ(gpipe_rt_cpu_transpose(GPIPE_RT_BOOL, b.data(), s2.data(), 3,
                                   perm2.data(), bgot.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(bgot, referenceTranspose(b, s2, perm2));
}

TEST(Transpose, RejectsBadPermutation) {
  Shape s{2, 3}, perm{0, 0};
  std::vector<float> x(6), y(6);
  EXPECT_EQ(gpipe_rt_cpu_transpose(GPIPE_RT_F32, x.data(), s.data(), 2,
                                   perm.data(), y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(),
            "transpose: perm [0, 0] is not a permutation of 2 dims");
}

TEST(Slice, StridedWindows) {
  Shape s{6, 7}, off{1, 2}, sizes{3, 2}, strides{2, 3};
  std::vector<float> x(42);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<float> got(6);
  ASSERT_EQ(gpipe_rt_cpu_slice(GPIPE_RT_F32, x.data(), s.data(), 2, off.data(),
                               sizes.data(), strides.data(), got.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(got, (std::vector<float>{9, 12, 23, 26, 37, 40}));
  // The last row would be 7: one past the end.
  Shape tooFar{4, 2};
  EXPECT_EQ(gpipe_rt_cpu_slice(GPIPE_RT_F32, x.data(), s.data(), 2, off.data(),
                               tooFar.data(), strides.data(), got.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "slice: dim 0: offset 1, size 4, stride 2 do not fit "
                         "in 6 (input [6, 7])");
}

TEST(SplitConcat, RoundTripAlongEachAxis) {
  Shape s{4, 6, 5};
  std::vector<float> x = randomFloats(numel(s), 81);
  for (int64_t axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE(axis);
    int64_t dim = s[size_t(axis)];
    Shape sizes{1, dim - 3, 2};
    std::vector<std::vector<float>> pieces;
    std::vector<Shape> shapes;
    std::vector<void *> outs;
    for (int64_t size : sizes) {
      Shape ps = s;
      ps[size_t(axis)] = size;
      shapes.push_back(ps);
      pieces.emplace_back(size_t(numel(ps)));
    }
    for (auto &p : pieces)
      outs.push_back(p.data());
    ASSERT_EQ(gpipe_rt_cpu_split(GPIPE_RT_F32, x.data(), s.data(), 3, axis,
                                 sizes.data(), 3, outs.data()),
              GPIPE_RT_SUCCESS);
    // Each piece is the matching slice.
    int64_t offset = 0;
    for (size_t p = 0; p < pieces.size(); ++p) {
      Shape off{0, 0, 0}, strides{1, 1, 1};
      off[size_t(axis)] = offset;
      std::vector<float> slice(pieces[p].size());
      ASSERT_EQ(gpipe_rt_cpu_slice(GPIPE_RT_F32, x.data(), s.data(), 3,
                                   off.data(), shapes[p].data(), strides.data(),
                                   slice.data()),
                GPIPE_RT_SUCCESS);
      EXPECT_EQ(slice, pieces[p]);
      offset += sizes[p];
    }
    std::vector<const void *> ins;
    std::vector<const int64_t *> inShapes;
    for (size_t p = 0; p < pieces.size(); ++p) {
      ins.push_back(pieces[p].data());
      inShapes.push_back(shapes[p].data());
    }
    std::vector<float> back(x.size());
    ASSERT_EQ(gpipe_rt_cpu_concat(GPIPE_RT_F32, 3, ins.data(), inShapes.data(),
                                  3, axis, back.data()),
              GPIPE_RT_SUCCESS);
    EXPECT_EQ(back, x);
  }
}

TEST(SplitConcat, Errors) {
  Shape s{4, 6}, sizes{2, 3};
  std::vector<float> x(24), a(8), b(12);
  void *outs[] = {a.data(), b.data()};
  EXPECT_EQ(gpipe_rt_cpu_split(GPIPE_RT_F32, x.data(), s.data(), 2, 1,
                               sizes.data(), 2, outs),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "split: sizes sum to 5, not to dim 1 of [4, 6]");
  Shape s1{2, 3}, s2{3, 3};
  const int64_t *shapes[] = {s1.data(), s2.data()};
  const void *ins[] = {a.data(), b.data()};
  EXPECT_EQ(gpipe_rt_cpu_concat(GPIPE_RT_F32, 2, ins, shapes, 2, 1, x.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "concat: input 1 [3, 3] does not match input 0 "
                         "[2, 3] outside axis 1");
}

TEST(Copy, CopiesAndAllowsAliasing) {
  std::vector<int64_t> x{1, 2, 3}, y(3);
  ASSERT_EQ(gpipe_rt_cpu_copy(GPIPE_RT_I64, x.data(), y.data(), 3),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(x, y);
  ASSERT_EQ(gpipe_rt_cpu_copy(GPIPE_RT_I64, x.data(), x.data(), 3),
            GPIPE_RT_SUCCESS);
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

double referenceCrossEntropy(const std::vector<float> &logits, int64_t classes,
                             const std::vector<int64_t> &labels) {
  double total = 0;
  int64_t rows = int64_t(labels.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY;
    for (int64_t c = 0; c < classes; ++c)
      m = std::max(m, double(logits[size_t(r * classes + c)]));
    double s = 0;
    for (int64_t c = 0; c < classes; ++c)
      s += std::exp(double(logits[size_t(r * classes + c)]) - m);
    total += m + std::log(s) - logits[size_t(r * classes + labels[size_t(r)])];
  }
  return total / double(rows);
}

TEST(CrossEntropy, MatchesReference) {
  Shape s{2, 16, 32};
  std::vector<float> logits = randomFloats(numel(s), 91, -4.0f, 4.0f);
  std::mt19937 gen(92);
  std::vector<int64_t> labels(32);
  for (int64_t &l : labels)
    l = int64_t(gen() % 32);
  float loss = NAN;
  ASSERT_EQ(gpipe_rt_cpu_cross_entropy_f32(logits.data(), s.data(), 3,
                                           GPIPE_RT_I64, labels.data(), &loss),
            GPIPE_RT_SUCCESS);
  double want = referenceCrossEntropy(logits, 32, labels);
  EXPECT_NEAR(loss, want, 1e-5 * want);

  std::vector<int32_t> labels32(labels.begin(), labels.end());
  float loss32 = NAN;
  ASSERT_EQ(gpipe_rt_cpu_cross_entropy_f32(logits.data(), s.data(), 3,
                                           GPIPE_RT_I32, labels32.data(),
                                           &loss32),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(loss, loss32);
}

TEST(CrossEntropy, StableForLargeLogits) {
  Shape s{1, 3};
  std::vector<float> logits{1000.0f, 1000.0f, 1000.0f};
  int64_t label = 1;
  float loss = NAN;
  ASSERT_EQ(gpipe_rt_cpu_cross_entropy_f32(logits.data(), s.data(), 2,
                                           GPIPE_RT_I64, &label, &loss),
            GPIPE_RT_SUCCESS);
  EXPECT_NEAR(loss, std::log(3.0), 1e-6);
}

TEST(CrossEntropy, BadLabelIsReportedWithItsPosition) {
  Shape s{2, 3, 4};
  std::vector<float> logits(24);
  std::vector<int64_t> labels{0, 1, 2, 3, 4, 0};
  float loss = 0;
  EXPECT_EQ(gpipe_rt_cpu_cross_entropy_f32(logits.data(), s.data(), 3,
                                           GPIPE_RT_I64, labels.data(), &loss),
            GPIPE_RT_OUT_OF_RANGE);
  EXPECT_EQ(lastError(), "cross_entropy: label 4 at position [1, 1] is out of "
                         "range [0, 4)");
}

TEST(MSE, MatchesReference) {
  std::vector<float> a = randomFloats(1001, 101), b = randomFloats(1001, 102);
  float loss = NAN;
  ASSERT_EQ(gpipe_rt_cpu_mse_f32(a.data(), b.data(), 1001, &loss),
            GPIPE_RT_SUCCESS);
  double want = 0;
  for (size_t i = 0; i < a.size(); ++i)
    want += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  want /= 1001.0;
  EXPECT_NEAR(loss, want, 1e-6 * want);
}

//===----------------------------------------------------------------------===//
// Init, reproducibility, BLAS threads
//===----------------------------------------------------------------------===//

TEST(Dropout, CounterBasedMaskScaledAndChecked) {
  const int64_t n = 40000;
  const size_t size = static_cast<size_t>(n);
  std::vector<float> in(size, 2.0f), out(size), prefix(64), again(size),
      other(size);
  const float ratio = 0.25f;
  ASSERT_EQ(gpipe_rt_cpu_dropout_f32(in.data(), out.data(), n, ratio, 11, 3),
            GPIPE_RT_SUCCESS);
  // Kept elements are scaled by 1 / (1 - ratio) in float, dropped ones are
  // zero, and about `ratio` of them are dropped.
  int64_t dropped = 0;
  for (float v : out) {
    if (v == 0.0f)
      ++dropped;
    else
      EXPECT_EQ(v, 2.0f * float(1.0 / 0.75));
  }
  EXPECT_NEAR(double(dropped) / double(n), 0.25, 0.01);
  // The mask depends on (key, stream, index) only: a prefix, a repeat and
  // the output in place give the same bits; another key another mask.
  ASSERT_EQ(
      gpipe_rt_cpu_dropout_f32(in.data(), prefix.data(), 64, ratio, 11, 3),
      GPIPE_RT_SUCCESS);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), out.begin()));
  again = in;
  ASSERT_EQ(
      gpipe_rt_cpu_dropout_f32(again.data(), again.data(), n, ratio, 11, 3),
      GPIPE_RT_SUCCESS);
  EXPECT_EQ(again, out);
  ASSERT_EQ(gpipe_rt_cpu_dropout_f32(in.data(), other.data(), n, ratio, 12, 3),
            GPIPE_RT_SUCCESS);
  EXPECT_NE(other, out);
  // Ratio 0 keeps everything as is.
  ASSERT_EQ(gpipe_rt_cpu_dropout_f32(in.data(), other.data(), n, 0.0f, 11, 3),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(other, in);
  for (float bad : {1.0f, -0.1f, NAN}) {
    EXPECT_EQ(gpipe_rt_cpu_dropout_f32(in.data(), out.data(), n, bad, 1, 1),
              GPIPE_RT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(gpipe_rt_last_error()).find("ratio must lie in"),
              std::string::npos);
  }
}

TEST(FillInit, CounterBasedAndWellDistributed) {
  const int64_t n = 20000;
  std::vector<float> a(static_cast<size_t>(n)), prefix(100);
  uint64_t stream = gpipe_rt_hash_name("fc.weight", 9);
  ASSERT_EQ(gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, a.data(), n, 0.02,
                                       7, stream),
            GPIPE_RT_SUCCESS);
  ASSERT_EQ(gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, prefix.data(), 100,
                                       0.02, 7, stream),
            GPIPE_RT_SUCCESS);
  EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), a.begin()));
  double mean = 0, sq = 0;
  for (float v : a) {
    mean += v;
    sq += double(v) * v;
  }
  mean /= double(n);
  double sd = std::sqrt(sq / double(n) - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(sd, 0.02, 0.001);

  std::vector<float> u(static_cast<size_t>(n));
  ASSERT_EQ(gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_UNIFORM, u.data(), n, 0.5,
                                       7, stream),
            GPIPE_RT_SUCCESS);
  auto [lo, hi] = std::minmax_element(u.begin(), u.end());
  EXPECT_GE(*lo, -0.5f);
  EXPECT_LT(*hi, 0.5f);
  EXPECT_LT(*lo, -0.49f);
  EXPECT_GT(*hi, 0.49f);

  // Another stream or seed gives other values.
  std::vector<float> other(100);
  ASSERT_EQ(gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, other.data(), 100,
                                       0.02, 8, stream),
            GPIPE_RT_SUCCESS);
  EXPECT_NE(other, prefix);

  std::vector<float> ones(5);
  ASSERT_EQ(
      gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_ONES, ones.data(), 5, 0, 0, 0),
      GPIPE_RT_SUCCESS);
  EXPECT_EQ(ones, std::vector<float>(5, 1.0f));
}

TEST(Reproducibility, RepeatedCallsAreBitwiseIdentical) {
  Shape a{4, 33, 70}, b{70, 29}, out{4, 33, 29};
  std::vector<float> x = randomFloats(numel(a), 111),
                     w = randomFloats(numel(b), 112);
  std::vector<float> first(static_cast<size_t>(numel(out))),
      second(first.size());
  for (std::vector<float> *dst : {&first, &second}) {
    ASSERT_EQ(gpipe_rt_cpu_matmul_f32(x.data(), a.data(), 3, w.data(), b.data(),
                                      2, 0, 0, dst->data(), out.data(), 3),
              GPIPE_RT_SUCCESS);
    ASSERT_EQ(
        gpipe_rt_cpu_softmax_f32(dst->data(), out.data(), 3, 1, dst->data()),
        GPIPE_RT_SUCCESS);
  }
  EXPECT_EQ(
      std::memcmp(first.data(), second.data(), first.size() * sizeof(float)),
      0);
}

TEST(Blas, ThreadCountIsSettable) {
  gpipe_rt_cpu_set_blas_threads(1);
  EXPECT_EQ(gpipe_rt_cpu_get_blas_threads(), 1);
  gpipe_rt_cpu_set_blas_threads(0);
  EXPECT_EQ(gpipe_rt_cpu_get_blas_threads(), 1);
}

// gpipe-run gives a lone rank every core for its GEMMs: the kernels split
// C into blocks of rows whose height keeps every element in the same kind
// of tile as one call (gpipe_rt_cpu_gemm_row_block), so the bits are those
// of one thread. Shapes big enough to be split, tails of every size, deep
// K (400, 513, 600, 1000), smaller ones that split by a block decided for
// their shape (a small transformer's 256 x 64 x 256 and the like, and
// 100 x 70 x 301, which no fixed tile height splits), both transposes, a
// beta that reads C.
TEST(Blas, GemmBitsDoNotDependOnTheThreadCount) {
  if (gpipe_rt_cpu_gemm_row_block() == 0)
    GTEST_SKIP() << "no block of rows keeps one call's bits on this CPU: "
                    "GEMMs run whole";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct Case {
    int64_t m, n, k;
  };
  for (Case c : {Case{256, 256, 256}, Case{1024, 96, 200}, Case{64, 777, 513},
                 Case{300, 300, 40}, Case{128, 200, 400}, Case{96, 130, 600},
                 Case{200, 64, 1000}, Case{256, 64, 256}, Case{256, 64, 64},
                 Case{64, 256, 256}, Case{256, 192, 64}, Case{100, 70, 301},
                 Case{37, 100, 80}, Case{512, 64, 32}})
    for (int32_t transA : {0, 1})
      for (int32_t transB : {0, 1}) {
        std::vector<float> a(size_t(c.m * c.k)), b(size_t(c.k * c.n)),
            bias(size_t(c.m * c.n));
        for (std::vector<float> *v : {&a, &b, &bias})
          for (float &x : *v)
            x = dist(rng);
        int64_t aShape[2] = {transA ? c.k : c.m, transA ? c.m : c.k};
        int64_t bShape[2] = {transB ? c.n : c.k, transB ? c.k : c.n};
        int64_t outShape[2] = {c.m, c.n};
        // An alpha that rounds (OpenBLAS's edge tiles apply it otherwise
        // than its main tiles) and one that does not, each into a C that
        // is not zero.
        for (float alpha : {0.5f, 0.3f}) {
          std::vector<std::vector<float>> outs;
          for (int32_t threads : {1, 2, 3}) {
            gpipe_rt_cpu_set_blas_threads(threads);
            std::vector<float> out(size_t(c.m * c.n));
            ASSERT_EQ(gpipe_rt_cpu_gemm_f32(a.data(), aShape, b.data(), bShape,
                                            bias.data(), outShape, 2, alpha,
                                            0.25f, transA, transB, out.data(),
                                            outShape),
                      GPIPE_RT_SUCCESS);
            outs.push_back(std::move(out));
          }
          gpipe_rt_cpu_set_blas_threads(1);
          for (size_t i = 1; i < outs.size(); ++i)
            EXPECT_EQ(std::memcmp(outs[0].data(), outs[i].data(),
                                  outs[0].size() * sizeof(float)),
                      0)
                << c.m << "x" << c.n << "x" << c.k << " transA " << transA
                << " transB " << transB << " alpha " << alpha << ": " << i + 1
                << " threads";
        }
      }
}

// Where a rank runs alone, the elementwise, row and data-movement kernels split
// their work over the kernel threads; every element is computed by the
// same code on any thread, so the bits are those of one thread. Sizes well
// above the grain, odd so the chunks end off any vector width, and a
// broadcast, a strided softmax axis and both transpose paths.
TEST(KernelThreads, SameBitsOnAnyNumberOfThreads) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  auto random = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float &x : v)
      x = dist(rng);
    return v;
  };
  const int64_t rows = 1031, n = 97, count = rows * n;
  std::vector<float> a = random(count), b = random(count), bias = random(n),
                     scale = random(n);
  std::vector<uint8_t> mask(static_cast<size_t>(count));
  for (size_t i = 0; i < mask.size(); ++i)
    mask[i] = uint8_t((i * 7) % 3 == 0);
  int64_t shape[2] = {rows, n}, rowShape[1] = {n};
  int64_t shape3[3] = {rows, 13, n / 13 + 1};
  int64_t count3 = shape3[0] * shape3[1] * shape3[2];
  std::vector<float> c = random(count3);
  int64_t perm3[3] = {0, 2, 1}, perm2[2] = {1, 0};
  int64_t perm3b[3] = {1, 0, 2};

  // Every kernel's outputs, concatenated.
  auto runAll = [&] {
    std::vector<float> all;
    std::vector<float> out(static_cast<size_t>(count)),
        out2(static_cast<size_t>(count)), outs(static_cast<size_t>(count3)),
        stats(static_cast<size_t>(2 * rows)), grads(static_cast<size_t>(2 * n));
    auto keep = [&](const std::vector<float> &v) {
      all.insert(all.end(), v.begin(), v.end());
    };
    for (gpipe_rt_unary_op op : {GPIPE_RT_GELU, GPIPE_RT_EXP, GPIPE_RT_TANH}) {
      EXPECT_EQ(gpipe_rt_cpu_unary_f32(op, a.data(), out.data(), count),
                GPIPE_RT_SUCCESS);
      keep(out);
    }
    EXPECT_EQ(gpipe_rt_cpu_gelu_grad_f32(a.data(), b.data(), out.data(), count),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, a.data(), shape, 2,
                                      bias.data(), rowShape, 1, out.data(),
                                      shape, 2),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_DIV, a.data(), shape, 2,
                                      b.data(), shape, 2, out.data(), shape, 2),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_where(mask.data(), shape, 2, GPIPE_RT_F32, a.data(),
                                 shape, 2, b.data(), shape, 2, out.data(),
                                 shape, 2),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_clip_f32(a.data(), out.data(), count, -1.0f, 2.0f),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_clip_grad_f32(a.data(), b.data(), out.data(), count,
                                         -1.0f, 2.0f),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_broadcast(GPIPE_RT_F32, bias.data(), rowShape, 1,
                                     out.data(), shape, 2),
              GPIPE_RT_SUCCESS);
    keep(out);
    // Along the contiguous axis, along the first (one block of lines) and
    // along a middle one (blocks split between threads).
    EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, a.data(), shape, 2, 1, 0, 0,
                                  out.data()),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, a.data(), shape, 2, 0, 1, 1,
                                  out.data()),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_cumsum(GPIPE_RT_F32, c.data(), shape3, 3, 1, 0, 1,
                                  outs.data()),
              GPIPE_RT_SUCCESS);
    keep(outs);
    std::vector<uint8_t> less(static_cast<size_t>(count));
    EXPECT_EQ(gpipe_rt_cpu_compare(GPIPE_RT_CMP_LT, GPIPE_RT_F32, a.data(),
                                   shape, 2, bias.data(), rowShape, 1,
                                   less.data(), shape, 2),
              GPIPE_RT_SUCCESS);
    all.insert(all.end(), less.begin(), less.end());
    EXPECT_EQ(gpipe_rt_cpu_softmax_f32(a.data(), shape, 2, 1, out.data()),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_softmax_grad_f32(out.data(), b.data(), shape, 2, 1,
                                            out2.data()),
              GPIPE_RT_SUCCESS);
    keep(out2);
    EXPECT_EQ(gpipe_rt_cpu_softmax_f32(c.data(), shape3, 3, 1, outs.data()),
              GPIPE_RT_SUCCESS);
    keep(outs);
    EXPECT_EQ(gpipe_rt_cpu_layer_norm_f32(a.data(), shape, 2, 1, scale.data(),
                                          bias.data(), 1e-5f, out.data(),
                                          stats.data(), stats.data() + rows),
              GPIPE_RT_SUCCESS);
    keep(out);
    keep(stats);
    EXPECT_EQ(gpipe_rt_cpu_layer_norm_grad_f32(
                  a.data(), shape, 2, 1, scale.data(), b.data(), 1e-5f,
                  out.data(), grads.data(), grads.data() + n),
              GPIPE_RT_SUCCESS);
    keep(out);
    keep(grads);
    EXPECT_EQ(gpipe_rt_cpu_transpose(GPIPE_RT_F32, a.data(), shape, 2, perm2,
                                     out.data()),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(gpipe_rt_cpu_transpose(GPIPE_RT_F32, c.data(), shape3, 3, perm3,
                                     outs.data()),
              GPIPE_RT_SUCCESS);
    keep(outs);
    EXPECT_EQ(gpipe_rt_cpu_transpose(GPIPE_RT_F32, c.data(), shape3, 3, perm3b,
                                     outs.data()),
              GPIPE_RT_SUCCESS);
    keep(outs);
    // Data movement: a strided slice and a plain copy, each apart from its
    // source; and a copy within one buffer (kept in order).
    int64_t offsets[2] = {3, 1}, sizes[2] = {rows - 5, n / 2 - 1},
            steps[2] = {1, 2};
    std::vector<float> sliced(static_cast<size_t>(sizes[0] * sizes[1]));
    EXPECT_EQ(gpipe_rt_cpu_slice(GPIPE_RT_F32, a.data(), shape, 2, offsets,
                                 sizes, steps, sliced.data()),
              GPIPE_RT_SUCCESS);
    keep(sliced);
    EXPECT_EQ(gpipe_rt_cpu_copy(GPIPE_RT_F32, b.data(), out.data(), count),
              GPIPE_RT_SUCCESS);
    keep(out);
    EXPECT_EQ(
        gpipe_rt_cpu_copy(GPIPE_RT_F32, out.data(), out.data() + 7, count - 7),
        GPIPE_RT_SUCCESS);
    keep(out);
    return all;
  };
  gpipe_rt_cpu_set_kernel_threads(1);
  std::vector<float> one = runAll();
  for (int32_t threads : {2, 3}) {
    gpipe_rt_cpu_set_kernel_threads(threads);
    EXPECT_EQ(gpipe_rt_cpu_get_kernel_threads(), threads);
    std::vector<float> many = runAll();
    ASSERT_EQ(one.size(), many.size());
    EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)),
              0)
        << threads << " threads";
  }
  gpipe_rt_cpu_set_kernel_threads(1);
}

// Fused attention against softmax(scale q k^T + bias) v and its gradients
// computed in double from the definition; a -inf causal mask, a per-key
// padding bias over the batch, none; the same bits on 1 and 3 threads.
TEST(Attention, MatchesTheDefinitionInDouble) {
  struct Case {
    Shape q;
    int64_t keys, valueDim;
    Shape bias; // empty: none; {0}: a causal -inf mask [T, S]
    const char *name;
  };
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<Case> cases = {
      {{2, 3, 5, 4}, 5, 6, {0}, "causal"},
      {{2, 3, 5, 4}, 7, 3, {2, 1, 1, 7}, "padding"},
      {{4, 9, 16}, 9, 16, {}, "no bias"},
      {{8, 4, 16, 8}, 16, 8, {8, 1, 16, 16}, "per-sample mask"},
      {{1, 1, 1}, 1, 1, {}, "one"}};
  uint32_t seed = 900;
  for (const Case &c : cases) {
    int64_t rank = int64_t(c.q.size());
    int64_t T = c.q[rank - 2], D = c.q[rank - 1], S = c.keys, E = c.valueDim;
    int64_t N = numel(c.q) / (T * D);
    Shape ks = c.q, vs = c.q, os = c.q;
    ks[rank - 2] = S;
    vs[rank - 2] = S;
    vs[rank - 1] = E;
    os[rank - 1] = E;
    std::vector<float> q = randomFloats(numel(c.q), seed++);
    std::vector<float> k = randomFloats(numel(ks), seed++);
    std::vector<float> v = randomFloats(numel(vs), seed++);
    std::vector<float> g = randomFloats(numel(os), seed++);
    Shape biasShape = c.bias;
    std::vector<float> bias;
    if (biasShape == Shape{0}) {
      biasShape = {T, S};
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < S; ++j)
          bias.push_back(j > t ? ninf : 0.0f);
    } else if (!biasShape.empty()) {
      bias = randomFloats(numel(biasShape), seed++);
    }
    // The bias at (n, t, s), broadcast from the right.
    auto biasAt = [&](int64_t n, int64_t t, int64_t j) -> double {
      if (bias.empty())
        return 0.0;
      if (biasShape.size() == 2)
        return bias[size_t(t * S + j)];
      int64_t b0 = n / (numel(c.q) / (c.q[0] * T * D));
      if (biasShape.size() == 4 && biasShape[2] == T)
        return bias[size_t((b0 * T + t) * S + j)];
      return bias[size_t(b0 * S + j)];
    };
    const float scale = 0.37f;
    // The definition, in double.
    std::vector<double> want(size_t(N * T * E)), dq(size_t(N * T * D)),
        dk(size_t(N * S * D)), dv(size_t(N * S * E));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = 0; t < T; ++t) {
        std::vector<double> p(static_cast<size_t>(S)),
            dp(static_cast<size_t>(S));
        double m = -INFINITY, sum = 0.0, dot = 0.0;
        for (int64_t j = 0; j < S; ++j) {
          double x = 0.0;
          for (int64_t d = 0; d < D; ++d)
            x += double(q[size_t((n * T + t) * D + d)]) *
                 k[size_t((n * S + j) * D + d)];
          p[size_t(j)] = x * scale + biasAt(n, t, j);
          m = std::max(m, p[size_t(j)]);
        }
        for (int64_t j = 0; j < S; ++j)
          sum += p[size_t(j)] = std::exp(p[size_t(j)] - m);
        for (int64_t j = 0; j < S; ++j) {
          p[size_t(j)] /= sum;
          for (int64_t e = 0; e < E; ++e) {
            want[size_t((n * T + t) * E + e)] +=
                p[size_t(j)] * v[size_t((n * S + j) * E + e)];
            dp[size_t(j)] += double(g[size_t((n * T + t) * E + e)]) *
                             v[size_t((n * S + j) * E + e)];
          }
          dot += p[size_t(j)] * dp[size_t(j)];
        }
        for (int64_t j = 0; j < S; ++j) {
          double ds = p[size_t(j)] * (dp[size_t(j)] - dot) * scale;
          for (int64_t d = 0; d < D; ++d) {
            dq[size_t((n * T + t) * D + d)] +=
                ds * k[size_t((n * S + j) * D + d)];
            dk[size_t((n * S + j) * D + d)] +=
                ds * q[size_t((n * T + t) * D + d)];
          }
          for (int64_t e = 0; e < E; ++e)
            dv[size_t((n * S + j) * E + e)] +=
                p[size_t(j)] * g[size_t((n * T + t) * E + e)];
        }
      }
    auto expectNear = [&](const std::vector<float> &got,
                          const std::vector<double> &ref, const char *what) {
      ASSERT_EQ(got.size(), ref.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], ref[i], 2e-6 + 2e-5 * std::abs(ref[i]))
            << c.name << ": " << what << "[" << i << "]";
    };
    const float *b = bias.empty() ? nullptr : bias.data();
    int32_t biasRank = int32_t(biasShape.size());
    std::vector<float> runs[2][4];
    for (int32_t threads : {1, 3}) {
      gpipe_rt_cpu_set_kernel_threads(threads);
      std::vector<float> out(size_t(N * T * E), -1.0f), gq(size_t(N * T * D)),
          gk(size_t(N * S * D), -1.0f), gv(size_t(N * S * E), -1.0f);
      ASSERT_EQ(gpipe_rt_cpu_attention_f32(
                    q.data(), k.data(), v.data(), c.q.data(), int32_t(rank), S,
                    E, b, biasShape.data(), biasRank, scale, out.data()),
                GPIPE_RT_SUCCESS)
          << lastError();
      ASSERT_EQ(gpipe_rt_cpu_attention_grad_f32(
                    q.data(), k.data(), v.data(), c.q.data(), int32_t(rank), S,
                    E, b, biasShape.data(), biasRank, scale, g.data(),
                    gq.data(), gk.data(), gv.data()),
                GPIPE_RT_SUCCESS)
          << lastError();
      expectNear(out, want, "out");
      expectNear(gq, dq, "q grad");
      expectNear(gk, dk, "k grad");
      expectNear(gv, dv, "v grad");
      int slot = threads == 1 ? 0 : 1;
      runs[slot][0] = out;
      runs[slot][1] = gq;
      runs[slot][2] = gk;
      runs[slot][3] = gv;
    }
    gpipe_rt_cpu_set_kernel_threads(1);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(std::memcmp(runs[0][i].data(), runs[1][i].data(),
                            runs[0][i].size() * sizeof(float)),
                0)
          << c.name << ": result " << i << " differs on 3 threads";
  }
}

TEST(Attention, RejectsABiasThatDoesNotBroadcast) {
  Shape q = {2, 4, 3};
  std::vector<float> x(24), out(2 * 4 * 3), bias(5);
  Shape bs = {5};
  EXPECT_EQ(gpipe_rt_cpu_attention_f32(x.data(), x.data(), x.data(), q.data(),
                                       3, 4, 3, bias.data(), bs.data(), 1, 1.0f,
                                       out.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "attention: bias [5] does not broadcast to the scores "
                         "[2, 4, 4]");
}

// A model library's fused loop: every row run exactly once, in ranges of
// at least the grain, split over threads only when there are enough rows.
TEST(Parallel, FusedRowsRunEveryRowOnce) {
  struct Rows {
    std::vector<std::atomic<int>> count;
    std::atomic<int64_t> calls{0}, shortest{INT64_MAX};
    explicit Rows(int64_t n) : count(size_t(n)) {}
  };
  auto fn = [](const void *argv, int64_t first, int64_t end) {
    auto *rows = static_cast<Rows *>(const_cast<void *>(argv));
    for (int64_t r = first; r < end; ++r)
      rows->count[size_t(r)].fetch_add(1);
    rows->calls.fetch_add(1);
    int64_t len = end - first, seen = rows->shortest.load();
    while (len < seen && !rows->shortest.compare_exchange_weak(seen, len)) {
    }
  };
  for (int32_t threads : {1, 3})
    for (auto [rows, elements] : {std::pair<int64_t, int64_t>{1000, 1024},
                                  {7, 1024},
                                  {5, 100000},
                                  {0, 8}}) {
      gpipe_rt_cpu_set_kernel_threads(threads);
      Rows seen(rows);
      gpipe_rt_cpu_fused_rows(fn, &seen, rows, elements);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(seen.count[size_t(r)].load(), 1)
            << "row " << r << " of " << rows << ", " << threads << " threads";
      // 4096 elements per range at least: 4 rows of 1024.
      int64_t grain = std::max<int64_t>(1, 4096 / elements);
      if (threads > 1 && rows >= 2 * grain) {
        EXPECT_GT(seen.calls.load(), 1) << rows << " rows";
        EXPECT_GE(seen.shortest.load(), std::min(grain, rows)) << rows;
      } else {
        EXPECT_EQ(seen.calls.load(), rows > 0 ? 1 : 0) << rows << " rows";
      }
    }
  gpipe_rt_cpu_set_kernel_threads(1);
}

TEST(Errors, LastErrorIsPerCallAndClearable) {
  gpipe_rt_clear_error();
  EXPECT_EQ(lastError(), "");
  EXPECT_EQ(gpipe_rt_cpu_unary_f32(GPIPE_RT_NEG, nullptr, nullptr, -1),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "unary: negative element count -1");
  EXPECT_EQ(gpipe_rt_dtype_size(GPIPE_RT_BF16), 2u);
  EXPECT_STREQ(gpipe_rt_dtype_name(GPIPE_RT_BOOL), "i1");
}

} // namespace

// Kernel timing: each entry point counts in its class on the calling
// thread, sgemm inside GEMM as well; nothing is counted while it is off.
TEST(KernelTiming, CountsEachClassOnTheCallingThread) {
  auto read = [](gpipe_rt_kernel_class c) {
    return gpipe_rt_cpu_thread_kernel_nanoseconds(c);
  };
  Shape in{64, 64}, ws{64, 64}, out{64, 64};
  std::vector<float> x = randomFloats(numel(in), 1),
                     w = randomFloats(64 * 64, 2);
  std::vector<float> y(size_t(numel(out)));
  auto linear = [&] {
    ASSERT_EQ(gpipe_rt_cpu_linear_f32(x.data(), in.data(), 2, w.data(),
                                      ws.data(), nullptr, 0, y.data(),
                                      out.data(), 2),
              GPIPE_RT_SUCCESS)
        << lastError();
  };
  uint64_t gemm = read(GPIPE_RT_KERNEL_CLASS_GEMM);
  linear();
  EXPECT_EQ(read(GPIPE_RT_KERNEL_CLASS_GEMM), gemm);
  gpipe_rt_cpu_set_kernel_timing(1);
  uint64_t sgemm = read(GPIPE_RT_KERNEL_CLASS_SGEMM);
  uint64_t elementwise = read(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE);
  uint64_t movement = read(GPIPE_RT_KERNEL_CLASS_MOVEMENT);
  for (int i = 0; i < 20; ++i)
    linear();
  uint64_t gemmSpent = read(GPIPE_RT_KERNEL_CLASS_GEMM) - gemm;
  uint64_t sgemmSpent = read(GPIPE_RT_KERNEL_CLASS_SGEMM) - sgemm;
  EXPECT_GT(gemmSpent, 0u);
  EXPECT_GT(sgemmSpent, 0u);
  EXPECT_LE(sgemmSpent, gemmSpent);
  EXPECT_EQ(read(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE), elementwise);
  ASSERT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_ADD, x.data(), in.data(), 2,
                                    w.data(), ws.data(), 2, y.data(),
                                    out.data(), 2),
            GPIPE_RT_SUCCESS);
  EXPECT_GT(read(GPIPE_RT_KERNEL_CLASS_ELEMENTWISE), elementwise);
  ASSERT_EQ(gpipe_rt_cpu_copy(GPIPE_RT_F32, x.data(), y.data(), numel(in)),
            GPIPE_RT_SUCCESS);
  EXPECT_GT(read(GPIPE_RT_KERNEL_CLASS_MOVEMENT), movement);
  // Another thread's kernels count on that thread.
  uint64_t before = read(GPIPE_RT_KERNEL_CLASS_GEMM);
  uint64_t other = 0;
  std::thread t([&] {
    linear();
    other = read(GPIPE_RT_KERNEL_CLASS_GEMM);
  });
  t.join();
  EXPECT_GT(other, 0u);
  EXPECT_EQ(read(GPIPE_RT_KERNEL_CLASS_GEMM), before);
  gpipe_rt_cpu_set_kernel_timing(0);
  EXPECT_EQ(read(GPIPE_RT_KERNEL_CLASS_COUNT), 0u);
}

// GEMM times by shape: each sgemm's (M, N, K, transposes) on the calling
// thread while kernel timing is on, a batch of small products as its
// products; more shapes than kept say so; reset forgets them.
TEST(KernelTiming, RecordsGemmShapes) {
  gpipe_rt_gemm_shape_time shapes[GPIPE_RT_GEMM_SHAPES];
  auto held = [&] {
    return gpipe_rt_cpu_thread_gemm_shapes(shapes, GPIPE_RT_GEMM_SHAPES);
  };
  gpipe_rt_cpu_reset_thread_gemm_shapes();
  Shape in{64, 32}, ws{48, 32}, out{64, 48};
  std::vector<float> x = randomFloats(numel(in), 1),
                     w = randomFloats(numel(ws), 2);
  std::vector<float> y(size_t(numel(out)));
  auto linear = [&] {
    ASSERT_EQ(gpipe_rt_cpu_linear_f32(x.data(), in.data(), 2, w.data(),
                                      ws.data(), nullptr, 1, y.data(),
                                      out.data(), 2),
              GPIPE_RT_SUCCESS)
        << lastError();
  };
  linear();
  EXPECT_EQ(held(), 0); // timing off
  gpipe_rt_cpu_set_kernel_timing(1);
  for (int i = 0; i < 3; ++i)
    linear();
  Shape a{8, 4, 5}, b{8, 5, 3}, c{8, 4, 3};
  std::vector<float> p = randomFloats(numel(a), 3),
                     q = randomFloats(numel(b), 4), r(size_t(numel(c)));
  ASSERT_EQ(gpipe_rt_cpu_matmul_f32(p.data(), a.data(), 3, q.data(), b.data(),
                                    3, 0, 0, r.data(), c.data(), 3),
            GPIPE_RT_SUCCESS)
      << lastError();
  ASSERT_EQ(held(), 2);
  EXPECT_EQ(shapes[0].m, 64);
  EXPECT_EQ(shapes[0].n, 48);
  EXPECT_EQ(shapes[0].k, 32);
  EXPECT_EQ(shapes[0].trans_a, 0);
  EXPECT_EQ(shapes[0].trans_b, 1);
  EXPECT_EQ(shapes[0].calls, 3u);
  EXPECT_GT(shapes[0].nanoseconds, 0u);
  EXPECT_EQ(shapes[1].m, 4);
  EXPECT_EQ(shapes[1].n, 3);
  EXPECT_EQ(shapes[1].k, 5);
  EXPECT_EQ(shapes[1].calls, 8u); // the batch's products
  // Past the table: the count says some were not kept.
  for (int64_t rows = 1; rows <= GPIPE_RT_GEMM_SHAPES; ++rows) {
    Shape sin{rows, 32}, sout{rows, 48};
    ASSERT_EQ(gpipe_rt_cpu_linear_f32(x.data(), sin.data(), 2, w.data(),
                                      ws.data(), nullptr, 1, y.data(),
                                      sout.data(), 2),
              GPIPE_RT_SUCCESS);
  }
  EXPECT_EQ(held(), -1);
  gpipe_rt_cpu_reset_thread_gemm_shapes();
  EXPECT_EQ(held(), 0);
  gpipe_rt_cpu_set_kernel_timing(0);
}

// Integer arithmetic (position ids): broadcasting, wraparound, truncating
// division, both remainders, exact powers and a zero divisor.
TEST(BinaryI64, OpsBroadcastWrapAndErrors) {
  const int64_t lhs[6] = {7, -7, INT64_MAX, 0, 5, -9};
  const int64_t rhs[3] = {2, 3, -4};
  const int64_t lhsShape[2] = {2, 3}, rhsShape[1] = {3}, outShape[2] = {2, 3};
  auto reference = [](gpipe_rt_binary_op op, int64_t a, int64_t b) {
    switch (op) {
    case GPIPE_RT_ADD:
      return int64_t(uint64_t(a) + uint64_t(b));
    case GPIPE_RT_SUB:
      return int64_t(uint64_t(a) - uint64_t(b));
    case GPIPE_RT_MUL:
      return int64_t(uint64_t(a) * uint64_t(b));
    case GPIPE_RT_DIV:
      return a / b;
    case GPIPE_RT_MAX:
      return std::max(a, b);
    case GPIPE_RT_FMOD:
      return a % b;
    case GPIPE_RT_REMAINDER:
      return (a % b != 0 && ((a % b < 0) != (b < 0))) ? a % b + b : a % b;
    case GPIPE_RT_POW: {
      uint64_t r = 1;
      for (int64_t i = 0; i < b; ++i)
        r *= uint64_t(a);
      return b < 0 ? (a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0) : int64_t(r);
    }
    default:
      return std::min(a, b);
    }
  };
  for (gpipe_rt_binary_op op :
       {GPIPE_RT_ADD, GPIPE_RT_SUB, GPIPE_RT_MUL, GPIPE_RT_DIV, GPIPE_RT_MAX,
        GPIPE_RT_MIN, GPIPE_RT_FMOD, GPIPE_RT_REMAINDER, GPIPE_RT_POW}) {
    int64_t out[6] = {};
    ASSERT_EQ(gpipe_rt_cpu_binary_i64(op, lhs, lhsShape, 2, rhs, rhsShape, 1,
                                      out, outShape, 2),
              GPIPE_RT_SUCCESS);
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(out[i], reference(op, lhs[i], rhs[i % 3])) << op << " " << i;
  }
  // -7 / 3 truncates toward zero; INT64_MAX * -4 wraps.
  int64_t out[6] = {};
  ASSERT_EQ(gpipe_rt_cpu_binary_i64(GPIPE_RT_DIV, lhs, lhsShape, 2, rhs,
                                    rhsShape, 1, out, outShape, 2),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(out[1], -2);
  ASSERT_EQ(gpipe_rt_cpu_binary_i64(GPIPE_RT_MUL, lhs, lhsShape, 2, rhs,
                                    rhsShape, 1, out, outShape, 2),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(out[2], int64_t(uint64_t(INT64_MAX) * uint64_t(-4)));
  const int64_t zero[3] = {1, 0, 1};
  EXPECT_EQ(gpipe_rt_cpu_binary_i64(GPIPE_RT_DIV, lhs, lhsShape, 2, zero,
                                    rhsShape, 1, out, outShape, 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpipe_rt_last_error()).find("division by zero"),
            std::string::npos);
  // -7 mod 3 is 2 (the divisor's sign), fmod -1 (the dividend's); 7^-4
  // truncates to 0; a zero divisor of either remainder is an error.
  ASSERT_EQ(gpipe_rt_cpu_binary_i64(GPIPE_RT_REMAINDER, lhs, lhsShape, 2, rhs,
                                    rhsShape, 1, out, outShape, 2),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(out[1], 2);
  ASSERT_EQ(gpipe_rt_cpu_binary_i64(GPIPE_RT_FMOD, lhs, lhsShape, 2, rhs,
                                    rhsShape, 1, out, outShape, 2),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(out[1], -1);
  ASSERT_EQ(gpipe_rt_cpu_binary_i64(GPIPE_RT_POW, lhs, lhsShape, 2, rhs,
                                    rhsShape, 1, out, outShape, 2),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(out[0], 49);
  EXPECT_EQ(out[1], -343);
  EXPECT_EQ(out[2], 0);
  EXPECT_EQ(gpipe_rt_cpu_binary_i64(GPIPE_RT_REMAINDER, lhs, lhsShape, 2, zero,
                                    rhsShape, 1, out, outShape, 2),
            GPIPE_RT_INVALID_ARGUMENT);
}

// The float remainders' special values: ONNX's Mod edge cases (numpy's
// rules): a zero remainder takes the divisor's sign, an infinite divisor
// leaves a dividend of its sign and gives the divisor otherwise, and an
// infinite dividend or a zero divisor gives NaN.
TEST(Binary, RemainderSpecialValues) {
  const float inf = INFINITY;
  std::vector<float> a = {0.0f, -0.0f, -3.0f, 3.0f, -1.0f,
                          1.0f, inf,   1.0f,  -4.5f};
  std::vector<float> b = {-2.0f, 2.0f, inf, inf, -inf, -inf, 2.0f, 0.0f, 2.0f};
  std::vector<float> got(a.size());
  const int64_t shape[1] = {int64_t(a.size())};
  ASSERT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_REMAINDER, a.data(), shape, 1,
                                    b.data(), shape, 1, got.data(), shape, 1),
            GPIPE_RT_SUCCESS);
  EXPECT_TRUE(got[0] == 0.0f && std::signbit(got[0]));
  EXPECT_TRUE(got[1] == 0.0f && !std::signbit(got[1]));
  EXPECT_EQ(got[2], inf);
  EXPECT_EQ(got[3], 3.0f);
  EXPECT_EQ(got[4], -1.0f);
  EXPECT_EQ(got[5], -inf);
  EXPECT_TRUE(std::isnan(got[6]));
  EXPECT_TRUE(std::isnan(got[7]));
  EXPECT_EQ(got[8], 1.5f);
  ASSERT_EQ(gpipe_rt_cpu_binary_f32(GPIPE_RT_FMOD, a.data(), shape, 1, b.data(),
                                    shape, 1, got.data(), shape, 1),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(got[2], -3.0f);
  EXPECT_EQ(got[8], -0.5f);
}
