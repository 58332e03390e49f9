//===- ConvKernelsTest.cpp - Convolution, pooling, batch norm ---*- C++ -*-===//
//
// The CPU kernels over NCHW images (conv2d, max and average pooling, batch
// normalization, their gradients, and the running-statistics update) on
// random inputs against naive float64 implementations written from the
// ops' definitions: direct convolution loops and their adjoints, windows
// walked position by position, batch norm's gradient by central finite
// differences of a float64 forward. Sums are compared with a tolerance
// scaled by the magnitudes of their terms. Plus the output sizes of floor
// and ceil mode, max pooling's ties, bitwise independence of an image's
// results from the rest of its batch, and argument errors.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace gpipe::rt::test;

/// |got - want| <= 1e-6 + rtol * bound[i] (bound: the sum of the magnitudes
/// of the terms that make up the element).
void expectWithin(const std::vector<float> &got,
                  const std::vector<double> &want,
                  const std::vector<double> &bound, double rtol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(double(got[i]) - want[i]), 1e-6 + rtol * bound[i])
        << "element " << i << ": got " << got[i] << ", want " << want[i];
}

bool bitwiseEqual(const float *a, const float *b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

/// The ONNX output size along one dim, floor or ceil; in ceil mode a last
/// window starting past the input and its leading padding is dropped.
int64_t outDim(int64_t size, int64_t before, int64_t after, int64_t k,
               int64_t s, int64_t d, bool ceilMode) {
  int64_t span = size + before + after - ((k - 1) * d + 1);
  int64_t out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
  if (ceilMode && (out - 1) * s >= size + before)
    --out;
  return out;
}

//===----------------------------------------------------------------------===//
// conv2d and conv2d_grad
//===----------------------------------------------------------------------===//

struct ConvCase {
  const char *name;
  Shape in;     // [N, C, H, W]
  int64_t outC; // O
  int64_t k[2]; // [kh, kw]
  int64_t s[2]; // strides
  int64_t p[4]; // [top, left, bottom, right]
  int64_t d[2]; // dilations
  int64_t groups;
  bool bias;
  bool ceilMode = false;

  Shape weightShape() const { return {outC, in[1] / groups, k[0], k[1]}; }
  Shape outShape() const {
    return {in[0], outC, outDim(in[2], p[0], p[2], k[0], s[0], d[0], ceilMode),
            outDim(in[3], p[1], p[3], k[1], s[1], d[1], ceilMode)};
  }
};

std::vector<ConvCase> convCases() {
  // clang-format off
  return {
      {"3x3 pad 1", {2, 3, 7, 9}, 4, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1,
       true},
      {"3x3 stride 2 asymmetric pads, 2 groups", {2, 4, 8, 6}, 6, {3, 3},
       {2, 2}, {0, 1, 2, 1}, {1, 1}, 2, false},
      {"3x3 dilation 2 depthwise", {1, 3, 9, 10}, 3, {3, 3}, {1, 1},
       {2, 2, 2, 2}, {2, 2}, 3, true},
      {"1x1 pointwise", {2, 5, 5, 4}, 3, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1},
       1, true},
      {"1x1 stride 2", {2, 4, 7, 5}, 6, {1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1},
       2, false},
      {"7x7 stride 2 pad 3", {1, 2, 11, 13}, 4, {7, 7}, {2, 2}, {3, 3, 3, 3},
       {1, 1}, 1, true},
      {"3x2 mixed strides and dilations", {3, 2, 10, 7}, 2, {3, 2}, {2, 1},
       {1, 0, 0, 2}, {1, 3}, 1, true},
      {"ceil mode", {2, 2, 8, 7}, 3, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1,
       true, /*ceilMode=*/true},
  };
  // clang-format on
}

/// The input element convolution tap (i, j) at output (oh, ow) reads, or
/// false in the padding.
bool convTap(const ConvCase &cc, int64_t oh, int64_t ow, int64_t i, int64_t j,
             int64_t &r, int64_t &q) {
  r = oh * cc.s[0] - cc.p[0] + i * cc.d[0];
  q = ow * cc.s[1] - cc.p[1] + j * cc.d[1];
  return r >= 0 && r < cc.in[2] && q >= 0 && q < cc.in[3];
}

/// Calls fn(xIndex, wIndex, yIndex) for every product of the convolution.
template <typename Fn> void forEachConvTerm(const ConvCase &cc, Fn &&fn) {
  Shape in = cc.in, w = cc.weightShape(), out = cc.outShape();
  int64_t cg = w[1], og = cc.outC / cc.groups;
  for (int64_t n = 0; n < in[0]; ++n)
    for (int64_t o = 0; o < cc.outC; ++o)
      for (int64_t oh = 0; oh < out[2]; ++oh)
        for (int64_t ow = 0; ow < out[3]; ++ow)
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < cc.k[0]; ++i)
              for (int64_t j = 0; j < cc.k[1]; ++j) {
                int64_t r, q;
                if (!convTap(cc, oh, ow, i, j, r, q))
                  continue;
                int64_t ch = (o / og) * cg + c;
                fn(ravel({n, ch, r, q}, in), ravel({o, c, i, j}, w),
                   ravel({n, o, oh, ow}, out));
              }
}

TEST(Conv2d, MatchesDirectConvolution) {
  uint32_t seed = 1;
  for (const ConvCase &cc : convCases()) {
    SCOPED_TRACE(cc.name);
    Shape wShape = cc.weightShape(), oShape = cc.outShape();
    std::vector<float> x = randomFloats(numel(cc.in), seed++);
    std::vector<float> w = randomFloats(numel(wShape), seed++);
    std::vector<float> b = randomFloats(cc.outC, seed++);
    std::vector<double> want(size_t(numel(oShape)), 0.0);
    std::vector<double> bound(want.size(), 0.0);
    forEachConvTerm(cc, [&](int64_t xi, int64_t wi, int64_t yi) {
      double t = double(x[size_t(xi)]) * double(w[size_t(wi)]);
      want[size_t(yi)] += t;
      bound[size_t(yi)] += std::abs(t);
    });
    if (cc.bias)
      for (size_t yi = 0; yi < want.size(); ++yi) {
        double bv = b[size_t(unravel(int64_t(yi), oShape)[1])];
        want[yi] += bv;
        bound[yi] += std::abs(bv);
      }
    std::vector<float> got(want.size(), NAN);
    ASSERT_EQ(
        gpipe_rt_cpu_conv2d_f32(x.data(), cc.in.data(), w.data(), wShape.data(),
                                cc.bias ? b.data() : nullptr, cc.s, cc.p, cc.d,
                                cc.groups, got.data(), oShape.data()),
        GPIPE_RT_SUCCESS)
        << lastError();
    expectWithin(got, want, bound);
  }
}

TEST(Conv2dGrad, MatchesDirectAdjoints) {
  uint32_t seed = 100;
  for (const ConvCase &cc : convCases()) {
    SCOPED_TRACE(cc.name);
    Shape wShape = cc.weightShape(), oShape = cc.outShape();
    std::vector<float> x = randomFloats(numel(cc.in), seed++);
    std::vector<float> w = randomFloats(numel(wShape), seed++);
    std::vector<float> dy = randomFloats(numel(oShape), seed++);
    std::vector<double> dx(x.size(), 0.0), dxBound(x.size(), 0.0);
    std::vector<double> dw(w.size(), 0.0), dwBound(w.size(), 0.0);
    std::vector<double> db(size_t(cc.outC), 0.0), dbBound(db.size(), 0.0);
    forEachConvTerm(cc, [&](int64_t xi, int64_t wi, int64_t yi) {
      double g = dy[size_t(yi)];
      dx[size_t(xi)] += g * w[size_t(wi)];
      dxBound[size_t(xi)] += std::abs(g * w[size_t(wi)]);
      dw[size_t(wi)] += g * x[size_t(xi)];
      dwBound[size_t(wi)] += std::abs(g * x[size_t(xi)]);
    });
    for (size_t yi = 0; yi < dy.size(); ++yi) {
      size_t o = size_t(unravel(int64_t(yi), oShape)[1]);
      db[o] += dy[yi];
      dbBound[o] += std::abs(dy[yi]);
    }
    std::vector<float> gotDx(x.size(), NAN), gotDw(w.size(), NAN),
        gotDb(db.size(), NAN);
    ASSERT_EQ(gpipe_rt_cpu_conv2d_grad_f32(
                  x.data(), cc.in.data(), w.data(), wShape.data(), dy.data(),
                  oShape.data(), cc.s, cc.p, cc.d, cc.groups, gotDx.data(),
                  gotDw.data(), gotDb.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    expectWithin(gotDx, dx, dxBound);
    expectWithin(gotDw, dw, dwBound);
    expectWithin(gotDb, db, dbBound);

    // Each result alone gives the same bits as all three together.
    std::vector<float> onlyDx(x.size(), NAN), onlyDw(w.size(), NAN),
        onlyDb(db.size(), NAN);
    ASSERT_EQ(gpipe_rt_cpu_conv2d_grad_f32(
                  nullptr, cc.in.data(), w.data(), wShape.data(), dy.data(),
                  oShape.data(), cc.s, cc.p, cc.d, cc.groups, onlyDx.data(),
                  nullptr, nullptr),
              GPIPE_RT_SUCCESS)
        << lastError();
    ASSERT_EQ(gpipe_rt_cpu_conv2d_grad_f32(
                  x.data(), cc.in.data(), nullptr, wShape.data(), dy.data(),
                  oShape.data(), cc.s, cc.p, cc.d, cc.groups, nullptr,
                  onlyDw.data(), nullptr),
              GPIPE_RT_SUCCESS)
        << lastError();
    ASSERT_EQ(gpipe_rt_cpu_conv2d_grad_f32(
                  nullptr, cc.in.data(), nullptr, wShape.data(), dy.data(),
                  oShape.data(), cc.s, cc.p, cc.d, cc.groups, nullptr, nullptr,
                  onlyDb.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    EXPECT_TRUE(bitwiseEqual(onlyDx.data(), gotDx.data(), x.size()));
    EXPECT_TRUE(bitwiseEqual(onlyDw.data(), gotDw.data(), w.size()));
    EXPECT_TRUE(bitwiseEqual(onlyDb.data(), gotDb.data(), db.size()));
  }
}

/// An image's forward result and input gradient are the same bits in a
/// batch of 1 and at position 2 of a batch of 4.
TEST(Conv2d, ImageResultsDoNotDependOnTheBatch) {
  for (const ConvCase &base : convCases()) {
    SCOPED_TRACE(base.name);
    ConvCase one = base, four = base;
    one.in[0] = 1;
    four.in[0] = 4;
    Shape wShape = base.weightShape();
    Shape oneOut = one.outShape(), fourOut = four.outShape();
    std::vector<float> x4 = randomFloats(numel(four.in), 7);
    std::vector<float> dy4 = randomFloats(numel(fourOut), 8);
    std::vector<float> w = randomFloats(numel(wShape), 9);
    std::vector<float> b = randomFloats(base.outC, 10);
    int64_t imgIn = numel(one.in), imgOut = numel(oneOut);
    std::vector<float> x1(x4.begin() + 2 * imgIn, x4.begin() + 3 * imgIn);
    std::vector<float> dy1(dy4.begin() + 2 * imgOut, dy4.begin() + 3 * imgOut);

    std::vector<float> y1(static_cast<size_t>(imgOut)),
        y4(static_cast<size_t>(numel(fourOut)));
    ASSERT_EQ(gpipe_rt_cpu_conv2d_f32(
                  x1.data(), one.in.data(), w.data(), wShape.data(), b.data(),
                  one.s, one.p, one.d, one.groups, y1.data(), oneOut.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    ASSERT_EQ(gpipe_rt_cpu_conv2d_f32(x4.data(), four.in.data(), w.data(),
                                      wShape.data(), b.data(), four.s, four.p,
                                      four.d, four.groups, y4.data(),
                                      fourOut.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    EXPECT_TRUE(bitwiseEqual(y1.data(), y4.data() + 2 * imgOut, y1.size()));

    std::vector<float> dx1(x1.size()), dx4(x4.size());
    ASSERT_EQ(gpipe_rt_cpu_conv2d_grad_f32(
                  x1.data(), one.in.data(), w.data(), wShape.data(), dy1.data(),
                  oneOut.data(), one.s, one.p, one.d, one.groups, dx1.data(),
                  nullptr, nullptr),
              GPIPE_RT_SUCCESS)
        << lastError();
    ASSERT_EQ(gpipe_rt_cpu_conv2d_grad_f32(
                  x4.data(), four.in.data(), w.data(), wShape.data(),
                  dy4.data(), fourOut.data(), four.s, four.p, four.d,
                  four.groups, dx4.data(), nullptr, nullptr),
              GPIPE_RT_SUCCESS)
        << lastError();
    EXPECT_TRUE(bitwiseEqual(dx1.data(), dx4.data() + 2 * imgIn, dx1.size()));
  }
}

TEST(Conv2d, RepeatedCallsGiveTheSameBits) {
  ConvCase cc = convCases()[1];
  Shape wShape = cc.weightShape(), oShape = cc.outShape();
  std::vector<float> x = randomFloats(numel(cc.in), 3);
  std::vector<float> w = randomFloats(numel(wShape), 4);
  std::vector<float> a(size_t(numel(oShape))), b(a.size());
  for (std::vector<float> *y : {&a, &b})
    ASSERT_EQ(gpipe_rt_cpu_conv2d_f32(x.data(), cc.in.data(), w.data(),
                                      wShape.data(), nullptr, cc.s, cc.p, cc.d,
                                      cc.groups, y->data(), oShape.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
  EXPECT_TRUE(bitwiseEqual(a.data(), b.data(), a.size()));
}

TEST(Conv2d, BadArgumentsNameTheProblem) {
  Shape in{1, 4, 6, 6}, w{4, 2, 3, 3}, out{1, 4, 4, 4};
  int64_t s[2] = {1, 1}, p[4] = {0, 0, 0, 0}, d[2] = {1, 1};
  std::vector<float> x(size_t(numel(in))), wv(size_t(numel(w))),
      y(size_t(numel(out)));
  auto run = [&](const Shape &inS, const Shape &wS, const Shape &outS,
                 const int64_t *st, const int64_t *pd, const int64_t *dl,
                 int64_t groups) {
    return gpipe_rt_cpu_conv2d_f32(x.data(), inS.data(), wv.data(), wS.data(),
                                   nullptr, st, pd, dl, groups, y.data(),
                                   outS.data());
  };
  ASSERT_EQ(run(in, w, out, s, p, d, 2), GPIPE_RT_SUCCESS) << lastError();

  int64_t zeroStride[2] = {0, 1};
  EXPECT_EQ(run(in, w, out, zeroStride, p, d, 2), GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("conv2d: strides [0, 1] must be positive"),
            std::string::npos)
      << lastError();
  int64_t negPad[4] = {0, -1, 0, 0};
  EXPECT_EQ(run(in, w, out, s, negPad, d, 2), GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("pads [0, -1, 0, 0]"), std::string::npos)
      << lastError();
  int64_t zeroDil[2] = {1, 0};
  EXPECT_EQ(run(in, w, out, s, p, zeroDil, 2), GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("dilations [1, 0] must be positive"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(run(in, w, out, s, p, d, 3), GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("not divisible by groups 3"), std::string::npos)
      << lastError();
  EXPECT_EQ(run(in, w, out, s, p, d, 1), GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("has 4 channels"), std::string::npos)
      << lastError();
  EXPECT_EQ(run(in, w, out, s, p, d, 0), GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("groups must be positive"), std::string::npos)
      << lastError();
  EXPECT_EQ(run(in, w, Shape{1, 4, 5, 4}, s, p, d, 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("result height 5 is neither the floor (4) nor "
                             "the ceil (4)"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(run(in, w, Shape{1, 3, 4, 4}, s, p, d, 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("does not match input"), std::string::npos)
      << lastError();
  EXPECT_EQ(run(in, Shape{4, 2, 9, 3}, out, s, p, d, 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("the window spans 9 along the height"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(gpipe_rt_cpu_conv2d_f32(nullptr, in.data(), wv.data(), w.data(),
                                    nullptr, s, p, d, 2, y.data(), out.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("input is null"), std::string::npos)
      << lastError();
  EXPECT_EQ(gpipe_rt_cpu_conv2d_f32(x.data(), in.data(), wv.data(), w.data(),
                                    nullptr, nullptr, p, d, 2, y.data(),
                                    out.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("strides is null"), std::string::npos)
      << lastError();
  std::vector<float> dx(x.size());
  EXPECT_EQ(gpipe_rt_cpu_conv2d_grad_f32(
                x.data(), in.data(), wv.data(), w.data(), y.data(), out.data(),
                zeroStride, p, d, 2, dx.data(), nullptr, nullptr),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("conv2d_grad: strides"), std::string::npos)
      << lastError();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  const char *name;
  Shape in;
  int64_t k[2], s[2], p[4], d[2];
  bool ceilMode;

  Shape outShape() const {
    return {in[0], in[1], outDim(in[2], p[0], p[2], k[0], s[0], d[0], ceilMode),
            outDim(in[3], p[1], p[3], k[1], s[1], d[1], ceilMode)};
  }
};

std::vector<PoolCase> poolCases(bool dilated) {
  // clang-format off
  std::vector<PoolCase> cases = {
      {"2x2 stride 2", {2, 3, 6, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1},
       false},
      {"3x3 stride 2 pad 1", {2, 2, 7, 9}, {3, 3}, {2, 2}, {1, 1, 1, 1},
       {1, 1}, false},
      {"3x3 stride 2 ceil mode", {1, 2, 8, 7}, {3, 3}, {2, 2}, {0, 0, 0, 0},
       {1, 1}, true},
      {"2x3 asymmetric pads ceil mode", {2, 1, 5, 6}, {2, 3}, {2, 2},
       {1, 0, 0, 2}, {1, 1}, true},
      {"3x3 stride 1 pad 1", {1, 2, 5, 5}, {3, 3}, {1, 1}, {1, 1, 1, 1},
       {1, 1}, false},
  };
  // clang-format on
  if (dilated)
    cases.push_back({"3x2 dilation 2",
                     {1, 2, 9, 8},
                     {3, 2},
                     {1, 2},
                     {1, 0, 1, 1},
                     {2, 2},
                     true});
  return cases;
}

/// Calls fn(window positions as flat input indices) per output element, in
/// row-major order.
template <typename Fn> void forEachWindow(const PoolCase &pc, Fn &&fn) {
  Shape out = pc.outShape();
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t c = 0; c < out[1]; ++c)
      for (int64_t oh = 0; oh < out[2]; ++oh)
        for (int64_t ow = 0; ow < out[3]; ++ow) {
          std::vector<int64_t> window;
          for (int64_t i = 0; i < pc.k[0]; ++i)
            for (int64_t j = 0; j < pc.k[1]; ++j) {
              int64_t r = oh * pc.s[0] - pc.p[0] + i * pc.d[0];
              int64_t q = ow * pc.s[1] - pc.p[1] + j * pc.d[1];
              if (r >= 0 && r < pc.in[2] && q >= 0 && q < pc.in[3])
                window.push_back(ravel({n, c, r, q}, pc.in));
            }
          fn(ravel({n, c, oh, ow}, out), oh, ow, window);
        }
}

TEST(Pool2d, CeilModeOutputSizes) {
  // floor(3 / 2) + 1 = 2, ceil = 3: both are accepted.
  EXPECT_EQ(outDim(5, 0, 0, 2, 2, 1, false), 2);
  EXPECT_EQ(outDim(5, 0, 0, 2, 2, 1, true), 3);
  // ceil would start a window at row 4 = the input's end: dropped.
  EXPECT_EQ(outDim(4, 0, 1, 2, 2, 1, true), 2);
  Shape in{1, 1, 5, 5};
  int64_t k[2] = {2, 2}, s[2] = {2, 2}, p[4] = {0, 0, 0, 0}, d[2] = {1, 1};
  std::vector<float> x = randomFloats(25, 1), y(9);
  for (int64_t oh : {2, 3}) {
    Shape out{1, 1, oh, oh};
    EXPECT_EQ(gpipe_rt_cpu_max_pool2d_f32(x.data(), in.data(), k, s, p, d,
                                          y.data(), out.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    EXPECT_EQ(gpipe_rt_cpu_avg_pool2d_f32(x.data(), in.data(), k, s, p, 1,
                                          y.data(), out.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
  }
  Shape four{1, 1, 4, 4};
  EXPECT_EQ(gpipe_rt_cpu_max_pool2d_f32(x.data(), in.data(), k, s, p, d,
                                        y.data(), four.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("max_pool2d: result height 4 is neither the "
                             "floor (2) nor the ceil (3)"),
            std::string::npos)
      << lastError();
  // A window that would start in the trailing padding does not count.
  Shape in4{1, 1, 4, 4}, out3{1, 1, 3, 2};
  int64_t bottom[4] = {0, 0, 1, 0};
  EXPECT_EQ(gpipe_rt_cpu_avg_pool2d_f32(x.data(), in4.data(), k, s, bottom, 0,
                                        y.data(), out3.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("neither the floor (2) nor the ceil (2)"),
            std::string::npos)
      << lastError();
}

TEST(MaxPool2d, MatchesWindowMaxima) {
  uint32_t seed = 300;
  for (const PoolCase &pc : poolCases(true)) {
    SCOPED_TRACE(pc.name);
    Shape out = pc.outShape();
    std::vector<float> x = randomFloats(numel(pc.in), seed++);
    std::vector<float> dy = randomFloats(numel(out), seed++);
    std::vector<float> want(size_t(numel(out)));
    std::vector<float> wantDx(x.size(), 0.0f);
    forEachWindow(pc, [&](int64_t o, int64_t, int64_t,
                          const std::vector<int64_t> &window) {
      ASSERT_FALSE(window.empty());
      int64_t best = window[0];
      for (int64_t i : window)
        if (x[size_t(i)] > x[size_t(best)])
          best = i;
      want[size_t(o)] = x[size_t(best)];
      wantDx[size_t(best)] += dy[size_t(o)];
    });
    std::vector<float> got(want.size(), NAN), gotDx(x.size(), NAN);
    ASSERT_EQ(gpipe_rt_cpu_max_pool2d_f32(x.data(), pc.in.data(), pc.k, pc.s,
                                          pc.p, pc.d, got.data(), out.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    EXPECT_TRUE(bitwiseEqual(got.data(), want.data(), want.size()));
    ASSERT_EQ(gpipe_rt_cpu_max_pool2d_grad_f32(x.data(), pc.in.data(),
                                               dy.data(), out.data(), pc.k,
                                               pc.s, pc.p, pc.d, gotDx.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    // Same additions in the same order: the same bits.
    EXPECT_TRUE(bitwiseEqual(gotDx.data(), wantDx.data(), wantDx.size()));
  }
}

TEST(MaxPool2d, TiesPickTheFirstAndNaNWins) {
  // A constant image: every window's gradient goes to its first position.
  PoolCase pc{"ties",       {1, 1, 4, 4}, {2, 2}, {1, 1},
              {0, 0, 0, 0}, {1, 1},       false};
  Shape out = pc.outShape();
  std::vector<float> x(16, 1.5f), dy(size_t(numel(out)), 1.0f), dx(16, NAN);
  ASSERT_EQ(gpipe_rt_cpu_max_pool2d_grad_f32(x.data(), pc.in.data(), dy.data(),
                                             out.data(), pc.k, pc.s, pc.p, pc.d,
                                             dx.data()),
            GPIPE_RT_SUCCESS)
      << lastError();
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t q = 0; q < 4; ++q)
      EXPECT_EQ(dx[size_t(r * 4 + q)], r < 3 && q < 3 ? 1.0f : 0.0f)
          << r << ", " << q;
  // NaN beats a larger number that comes after it.
  std::vector<float> y(size_t(numel(out)));
  x[5] = NAN;
  x[6] = 9.0f;
  ASSERT_EQ(gpipe_rt_cpu_max_pool2d_f32(x.data(), pc.in.data(), pc.k, pc.s,
                                        pc.p, pc.d, y.data(), out.data()),
            GPIPE_RT_SUCCESS)
      << lastError();
  EXPECT_TRUE(std::isnan(y[0])); // window rows 0-1, cols 0-1 holds x[5]
  EXPECT_TRUE(std::isnan(y[1])); // cols 1-2: NaN at (1, 1), 9 at (1, 2)
  EXPECT_EQ(y[2], 9.0f);
}

TEST(AvgPool2d, MatchesWindowMeansBothPaddingModes) {
  uint32_t seed = 400;
  for (const PoolCase &pc : poolCases(false)) {
    for (int32_t includePad : {0, 1}) {
      SCOPED_TRACE(::testing::Message()
                   << pc.name << " countIncludePad " << includePad);
      Shape out = pc.outShape();
      std::vector<float> x = randomFloats(numel(pc.in), seed++);
      std::vector<float> dy = randomFloats(numel(out), seed++);
      std::vector<double> want(size_t(numel(out))), bound(want.size());
      std::vector<double> wantDx(x.size(), 0.0), dxBound(x.size(), 0.0);
      forEachWindow(pc, [&](int64_t o, int64_t oh, int64_t ow,
                            const std::vector<int64_t> &window) {
        double divisor = double(window.size());
        if (includePad) {
          // Rows and columns of the padded image the window covers.
          int64_t r0 = oh * pc.s[0] - pc.p[0], q0 = ow * pc.s[1] - pc.p[1];
          int64_t rows = std::min(r0 + pc.k[0], pc.in[2] + pc.p[2]) - r0;
          int64_t cols = std::min(q0 + pc.k[1], pc.in[3] + pc.p[3]) - q0;
          divisor = double(rows * cols);
        }
        double sum = 0.0, mag = 0.0;
        for (int64_t i : window) {
          sum += x[size_t(i)];
          mag += std::abs(x[size_t(i)]);
          wantDx[size_t(i)] += dy[size_t(o)] / divisor;
          dxBound[size_t(i)] += std::abs(dy[size_t(o)] / divisor);
        }
        want[size_t(o)] = sum / divisor;
        bound[size_t(o)] = mag / divisor;
      });
      std::vector<float> got(want.size(), NAN), gotDx(x.size(), NAN);
      ASSERT_EQ(gpipe_rt_cpu_avg_pool2d_f32(x.data(), pc.in.data(), pc.k, pc.s,
                                            pc.p, includePad, got.data(),
                                            out.data()),
                GPIPE_RT_SUCCESS)
          << lastError();
      expectWithin(got, want, bound, 1e-6);
      ASSERT_EQ(gpipe_rt_cpu_avg_pool2d_grad_f32(dy.data(), out.data(), pc.k,
                                                 pc.s, pc.p, includePad,
                                                 gotDx.data(), pc.in.data()),
                GPIPE_RT_SUCCESS)
          << lastError();
      expectWithin(gotDx, wantDx, dxBound);
    }
  }
}

TEST(AvgPool2d, CountIncludePadDivisor) {
  // One 3x3 window at the corner of a 2x2 image of ones padded by 1: 4
  // inputs; 9 positions with padding, all inside the padded image.
  Shape in{1, 1, 2, 2}, out{1, 1, 1, 1};
  int64_t k[2] = {3, 3}, s[2] = {1, 1}, p[4] = {1, 1, 0, 0};
  std::vector<float> x(4, 1.0f);
  float y = NAN;
  ASSERT_EQ(gpipe_rt_cpu_avg_pool2d_f32(x.data(), in.data(), k, s, p, 0, &y,
                                        out.data()),
            GPIPE_RT_SUCCESS)
      << lastError();
  EXPECT_EQ(y, 1.0f);
  ASSERT_EQ(gpipe_rt_cpu_avg_pool2d_f32(x.data(), in.data(), k, s, p, 1, &y,
                                        out.data()),
            GPIPE_RT_SUCCESS)
      << lastError();
  EXPECT_EQ(y, float(4.0 / 9.0));
}

TEST(Pool2d, BadArgumentsNameTheProblem) {
  Shape in{1, 2, 6, 6}, out{1, 2, 3, 3};
  int64_t k[2] = {2, 2}, s[2] = {2, 2}, p[4] = {0, 0, 0, 0}, d[2] = {1, 1};
  std::vector<float> x(72), y(18);
  int64_t zeroK[2] = {0, 2};
  EXPECT_EQ(gpipe_rt_cpu_max_pool2d_f32(x.data(), in.data(), zeroK, s, p, d,
                                        y.data(), out.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("max_pool2d: kernel [0, 2] must be positive"),
            std::string::npos)
      << lastError();
  int64_t negStride[2] = {2, -1};
  EXPECT_EQ(gpipe_rt_cpu_avg_pool2d_f32(x.data(), in.data(), k, negStride, p, 0,
                                        y.data(), out.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("avg_pool2d: strides [2, -1] must be positive"),
            std::string::npos)
      << lastError();
  Shape wrongC{1, 3, 3, 3};
  EXPECT_EQ(gpipe_rt_cpu_avg_pool2d_grad_f32(y.data(), wrongC.data(), k, s, p,
                                             0, x.data(), in.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("avg_pool2d_grad: grad shape [1, 3, 3, 3] does "
                             "not match input [1, 2, 6, 6]"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(gpipe_rt_cpu_max_pool2d_grad_f32(x.data(), in.data(), y.data(),
                                             out.data(), k, s, p, d, nullptr),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("max_pool2d_grad: input grad is null"),
            std::string::npos)
      << lastError();
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

/// Float64 batch norm of `x` ([N, C, inner...]) in training mode.
std::vector<double> refBatchNorm(const std::vector<double> &x, const Shape &s,
                                 const std::vector<float> &scale,
                                 const std::vector<float> &bias, double eps) {
  int64_t n = s[0], c = s[1], inner = numel(s) / (n * c);
  std::vector<double> y(x.size());
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0.0, sq = 0.0, m = double(n * inner);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < inner; ++p)
        sum += x[size_t((i * c + ch) * inner + p)];
    double mean = sum / m;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < inner; ++p) {
        double d = x[size_t((i * c + ch) * inner + p)] - mean;
        sq += d * d;
      }
    double rstd = 1.0 / std::sqrt(sq / m + eps);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < inner; ++p) {
        size_t at = size_t((i * c + ch) * inner + p);
        y[at] = (x[at] - mean) * rstd * scale[size_t(ch)] + bias[size_t(ch)];
      }
  }
  return y;
}

TEST(BatchNorm, MatchesReference) {
  uint32_t seed = 500;
  for (const Shape &s : {Shape{4, 3, 5, 6}, Shape{2, 5}, Shape{3, 2, 7}}) {
    SCOPED_TRACE(::testing::Message() << "rank " << s.size());
    std::vector<float> x = randomFloats(numel(s), seed++, -3.0f, 5.0f);
    std::vector<float> scale = randomFloats(s[1], seed++);
    std::vector<float> bias = randomFloats(s[1], seed++);
    std::vector<double> want = refBatchNorm(
        std::vector<double>(x.begin(), x.end()), s, scale, bias, 1e-5);
    std::vector<double> bound(want.size());
    for (size_t i = 0; i < want.size(); ++i)
      bound[i] = std::abs(want[i]) + 1.0;
    std::vector<float> got(x.size(), NAN);
    ASSERT_EQ(gpipe_rt_cpu_batch_norm_f32(x.data(), s.data(), rankOf(s),
                                          scale.data(), bias.data(), 1e-5f,
                                          got.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    expectWithin(got, want, bound, 1e-6);
  }
}

TEST(BatchNormGrad, MatchesFiniteDifferencesAndSums) {
  uint32_t seed = 600;
  for (const Shape &s : {Shape{3, 2, 3, 4}, Shape{4, 3}, Shape{2, 3, 5}}) {
    SCOPED_TRACE(::testing::Message() << "rank " << s.size());
    int64_t n = s[0], c = s[1], inner = numel(s) / (n * c);
    float eps = 1e-3f;
    std::vector<float> x = randomFloats(numel(s), seed++, -1.0f, 3.0f);
    std::vector<float> dy = randomFloats(numel(s), seed++);
    std::vector<float> scale = randomFloats(c, seed++, 0.5f, 2.0f);
    std::vector<float> bias = randomFloats(c, seed++);
    std::vector<float> shift = randomFloats(c, seed++);
    std::vector<float> dx(x.size(), NAN), dScale(size_t(c), NAN),
        dBias(size_t(c), NAN), meanStat(size_t(c), NAN),
        varStat(size_t(c), NAN);
    ASSERT_EQ(gpipe_rt_cpu_batch_norm_grad_f32(
                  x.data(), s.data(), rankOf(s), scale.data(), dy.data(), eps,
                  shift.data(), dx.data(), dScale.data(), dBias.data(),
                  meanStat.data(), varStat.data()),
              GPIPE_RT_SUCCESS)
        << lastError();

    // inputGrad: d/dx of sum(dy * batch_norm(x)) by central differences.
    std::vector<double> xd(x.begin(), x.end());
    auto loss = [&](const std::vector<double> &v) {
      std::vector<double> y = refBatchNorm(v, s, scale, bias, eps);
      double l = 0.0;
      for (size_t i = 0; i < y.size(); ++i)
        l += double(dy[i]) * y[i];
      return l;
    };
    std::vector<double> fd(x.size()), fdBound(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      double h = 1e-5;
      std::vector<double> plus = xd, minus = xd;
      plus[i] += h;
      minus[i] -= h;
      fd[i] = (loss(plus) - loss(minus)) / (2 * h);
      fdBound[i] = 10.0;
    }
    expectWithin(dx, fd, fdBound, 1e-5);

    // scaleGrad and biasGrad: sums of dy * xhat and dy; the statistics:
    // sums of (x - shift) and its square.
    std::vector<double> xhat =
        refBatchNorm(xd, s, std::vector<float>(size_t(c), 1.0f),
                     std::vector<float>(size_t(c), 0.0f), eps);
    size_t nc = static_cast<size_t>(c);
    std::vector<double> wantScale(nc), wantBias(nc), wantMean(nc), wantVar(nc),
        bScale(nc), bBias(nc), bMean(nc), bVar(nc);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < inner; ++p) {
          size_t at = size_t((i * c + ch) * inner + p), k = size_t(ch);
          double d = double(x[at]) - double(shift[k]);
          wantScale[k] += dy[at] * xhat[at];
          bScale[k] += std::abs(dy[at] * xhat[at]);
          wantBias[k] += dy[at];
          bBias[k] += std::abs(dy[at]);
          wantMean[k] += d;
          bMean[k] += std::abs(d);
          wantVar[k] += d * d;
          bVar[k] += d * d;
        }
    expectWithin(dScale, wantScale, bScale);
    expectWithin(dBias, wantBias, bBias);
    expectWithin(meanStat, wantMean, bMean);
    expectWithin(varStat, wantVar, bVar);

    // Null outputs are skipped; the others keep their bits.
    std::vector<float> onlyMean(size_t(c), NAN);
    ASSERT_EQ(gpipe_rt_cpu_batch_norm_grad_f32(
                  x.data(), s.data(), rankOf(s), nullptr, nullptr, eps,
                  shift.data(), nullptr, nullptr, nullptr, onlyMean.data(),
                  nullptr),
              GPIPE_RT_SUCCESS)
        << lastError();
    EXPECT_TRUE(bitwiseEqual(onlyMean.data(), meanStat.data(), size_t(c)));
  }
}

TEST(BatchNorm, BadArgumentsNameTheProblem) {
  Shape s{4};
  std::vector<float> x(4), scale(1), bias(1), y(4);
  EXPECT_EQ(gpipe_rt_cpu_batch_norm_f32(x.data(), s.data(), 1, scale.data(),
                                        bias.data(), 1e-5f, y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("batch_norm: input [4] must have rank >= 2"),
            std::string::npos)
      << lastError();
  Shape s2{2, 2};
  EXPECT_EQ(gpipe_rt_cpu_batch_norm_f32(x.data(), s2.data(), 2, scale.data(),
                                        bias.data(), -1.0f, y.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("epsilon must be non-negative"), std::string::npos)
      << lastError();
  EXPECT_EQ(gpipe_rt_cpu_batch_norm_grad_f32(
                x.data(), s2.data(), 2, scale.data(), y.data(), 1e-5f, nullptr,
                nullptr, nullptr, nullptr, y.data(), nullptr),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("batch_norm_grad: shift is null"),
            std::string::npos)
      << lastError();
}

TEST(RunningStatsUpdate, MatchesDoubleReference) {
  int64_t channels = 5, count = 24;
  double momentum = 0.1;
  std::vector<float> mean = randomFloats(channels, 700);
  std::vector<float> var = randomFloats(channels, 701, 0.5f, 2.0f);
  std::vector<float> meanStat = randomFloats(channels, 702, -5.0f, 5.0f);
  std::vector<float> varStat = randomFloats(channels, 703, 30.0f, 60.0f);
  std::vector<float> wantMean(static_cast<size_t>(channels)),
      wantVar(static_cast<size_t>(channels));
  for (size_t c = 0; c < size_t(channels); ++c) {
    double n = double(count);
    double d = double(meanStat[c]) / n;
    double v = double(varStat[c]) / n - d * d;
    wantMean[c] = float((1.0 - momentum) * double(mean[c]) +
                        momentum * (double(mean[c]) + d));
    wantVar[c] =
        float((1.0 - momentum) * double(var[c]) + momentum * v * n / (n - 1.0));
  }
  ASSERT_EQ(gpipe_rt_cpu_running_stats_update_f32(
                mean.data(), var.data(), meanStat.data(), varStat.data(),
                channels, count, momentum),
            GPIPE_RT_SUCCESS)
      << lastError();
  EXPECT_TRUE(bitwiseEqual(mean.data(), wantMean.data(), size_t(channels)));
  EXPECT_TRUE(bitwiseEqual(var.data(), wantVar.data(), size_t(channels)));

  EXPECT_EQ(gpipe_rt_cpu_running_stats_update_f32(
                mean.data(), var.data(), meanStat.data(), varStat.data(),
                channels, 1, momentum),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("running_stats_update: count must be at least 2"),
            std::string::npos)
      << lastError();
  EXPECT_EQ(gpipe_rt_cpu_running_stats_update_f32(mean.data(), var.data(),
                                                  nullptr, varStat.data(),
                                                  channels, count, momentum),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("mean stat is null"), std::string::npos)
      << lastError();
}

} // namespace
