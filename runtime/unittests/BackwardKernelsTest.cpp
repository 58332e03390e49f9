//===- BackwardKernelsTest.cpp - Gradient kernels vs float64 ----*- C++ -*-===//
//
// The CPU kernels of the ops reverse-mode autodiff emits (reduce_sum,
// insert_slice, gather_grad, softmax_grad, layer_norm_grad, gelu_grad,
// cross_entropy_grad) and the SGD update, each on random inputs against a
// naive float64 implementation written from the op's definition (relative
// tolerance 1e-5, scaled by the magnitude of the terms for sums); plus
// shape and index errors, aliasing where a kernel allows it, and bitwise
// reproducibility of repeated calls.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace gpipe::rt::test;

/// |got - want| <= 1e-7 + rtol * bound[i] (bound: the sum of the magnitudes
/// of the terms that make up the element).
void expectWithin(const std::vector<float> &got,
                  const std::vector<double> &want,
                  const std::vector<double> &bound, double rtol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(double(got[i]) - want[i]), 1e-7 + rtol * bound[i])
        << "element " << i << ": got " << got[i] << ", want " << want[i];
}

void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double rtol = 1e-5, double atol = 1e-7) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(double(got[i]) - want[i]),
              atol + rtol * std::abs(want[i]))
        << "element " << i << ": got " << got[i] << ", want " << want[i];
}

bool bitwiseEqual(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

//===----------------------------------------------------------------------===//
// reduce_sum
//===----------------------------------------------------------------------===//

/// Every subset of the dims of each shape, against a float64 sum.
TEST(ReduceSum, EverySubsetOfAxes) {
  for (const Shape &s : {Shape{}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4},
                         Shape{2, 1, 3, 5}, Shape{3, 17, 2}}) {
    std::vector<float> x = randomFloats(numel(s), 201);
    int32_t rank = rankOf(s);
    for (uint32_t mask = 0; mask < (1u << rank); ++mask) {
      Shape axes, kept;
      for (int32_t d = 0; d < rank; ++d) {
        if (mask & (1u << d))
          axes.push_back(d);
        else
          kept.push_back(s[size_t(d)]);
      }
      SCOPED_TRACE(::testing::Message() << "rank " << rank << " mask " << mask);
      std::vector<float> got(size_t(numel(kept)), NAN);
      ASSERT_EQ(gpipe_rt_cpu_reduce_sum_f32(x.data(), s.data(), rank,
                                            axes.data(), rankOf(axes),
                                            got.data()),
                GPIPE_RT_SUCCESS)
          << lastError();
      std::vector<double> want(got.size(), 0.0), bound(got.size(), 0.0);
      for (int64_t i = 0; i < numel(s); ++i) {
        std::vector<int64_t> idx = unravel(i, s), keptIdx;
        for (int32_t d = 0; d < rank; ++d)
          if (!(mask & (1u << d)))
            keptIdx.push_back(idx[size_t(d)]);
        int64_t o = ravel(keptIdx, kept);
        want[size_t(o)] += x[size_t(i)];
        bound[size_t(o)] += std::abs(x[size_t(i)]);
      }
      expectWithin(got, want, bound);
    }
  }
}

/// The sum runs in increasing index order: it equals a sequential double
/// sum rounded once, bit for bit.
TEST(ReduceSum, SequentialOrderInDouble) {
  Shape s{4, 1000};
  std::vector<float> x = randomFloats(numel(s), 202, -1e3f, 1e3f);
  Shape axes{0};
  std::vector<float> got(1000);
  ASSERT_EQ(gpipe_rt_cpu_reduce_sum_f32(x.data(), s.data(), 2, axes.data(), 1,
                                        got.data()),
            GPIPE_RT_SUCCESS);
  for (int64_t j = 0; j < 1000; ++j) {
    double acc = 0;
    for (int64_t i = 0; i < 4; ++i)
      acc += double(x[size_t(i * 1000 + j)]);
    ASSERT_EQ(got[size_t(j)], float(acc)) << j;
  }
  Shape all{0, 1};
  float total = NAN;
  ASSERT_EQ(
      gpipe_rt_cpu_reduce_sum_f32(x.data(), s.data(), 2, all.data(), 2, &total),
      GPIPE_RT_SUCCESS);
  double acc = 0;
  for (float v : x)
    acc += double(v);
  EXPECT_EQ(total, float(acc));
}

TEST(ReduceSum, EmptyDimsAndErrors) {
  Shape s{3, 0, 2};
  Shape axes{1};
  std::vector<float> out(6, NAN);
  ASSERT_EQ(gpipe_rt_cpu_reduce_sum_f32(nullptr, s.data(), 3, axes.data(), 1,
                                        out.data()),
            GPIPE_RT_SUCCESS);
  for (float v : out)
    EXPECT_EQ(v, 0.0f);

  Shape t{2, 3};
  std::vector<float> x(6);
  Shape unsorted{1, 0};
  EXPECT_EQ(gpipe_rt_cpu_reduce_sum_f32(x.data(), t.data(), 2, unsorted.data(),
                                        2, out.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "reduce_sum: axes must be sorted, distinct and below "
                         "rank 2 (axis 0 at position 1)");
  Shape tooBig{2};
  EXPECT_EQ(gpipe_rt_cpu_reduce_sum_f32(x.data(), t.data(), 2, tooBig.data(), 1,
                                        out.data()),
            GPIPE_RT_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// insert_slice
//===----------------------------------------------------------------------===//

TEST(InsertSlice, StridedWindowsMatchReference) {
  struct Case {
    Shape dest, source, offsets, strides;
  };
  for (const Case &c : {Case{{4, 16}, {4, 8}, {0, 8}, {1, 1}},
                        Case{{5, 7, 3}, {2, 3, 3}, {1, 0, 0}, {3, 3, 1}},
                        Case{{6}, {3}, {1}, {2}}, Case{{}, {}, {}, {}},
                        Case{{2, 3, 4}, {2, 3, 4}, {0, 0, 0}, {1, 1, 1}},
                        Case{{3, 4}, {0, 2}, {3, 1}, {1, 2}}}) {
    std::vector<float> dest = randomFloats(numel(c.dest), 211);
    std::vector<float> src = randomFloats(numel(c.source), 212);
    std::vector<float> got(dest.size(), NAN);
    ASSERT_EQ(gpipe_rt_cpu_insert_slice(
                  GPIPE_RT_F32, src.data(), c.source.data(), dest.data(),
                  c.dest.data(), rankOf(c.dest), c.offsets.data(),
                  c.strides.data(), got.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    std::vector<float> want = dest;
    for (int64_t i = 0; i < numel(c.source); ++i) {
      std::vector<int64_t> idx = unravel(i, c.source);
      for (size_t d = 0; d < idx.size(); ++d)
        idx[d] = c.offsets[d] + idx[d] * c.strides[d];
      want[size_t(ravel(idx, c.dest))] = src[size_t(i)];
    }
    EXPECT_TRUE(bitwiseEqual(got, want));
    // In place on dest.
    ASSERT_EQ(gpipe_rt_cpu_insert_slice(
                  GPIPE_RT_F32, src.data(), c.source.data(), dest.data(),
                  c.dest.data(), rankOf(c.dest), c.offsets.data(),
                  c.strides.data(), dest.data()),
              GPIPE_RT_SUCCESS);
    EXPECT_TRUE(bitwiseEqual(dest, want));
  }
}

TEST(InsertSlice, OtherTypesAndErrors) {
  Shape dest{2, 4}, src{2, 2}, off{0, 1}, st{1, 2};
  std::vector<int64_t> d{0, 1, 2, 3, 4, 5, 6, 7}, s{-1, -2, -3, -4}, out(8);
  ASSERT_EQ(gpipe_rt_cpu_insert_slice(GPIPE_RT_I64, s.data(), src.data(),
                                      d.data(), dest.data(), 2, off.data(),
                                      st.data(), out.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(out, (std::vector<int64_t>{0, -1, 2, -2, 4, -3, 6, -4}));
  Shape badOff{0, 2};
  EXPECT_EQ(gpipe_rt_cpu_insert_slice(GPIPE_RT_I64, s.data(), src.data(),
                                      d.data(), dest.data(), 2, badOff.data(),
                                      st.data(), out.data()),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "insert_slice: dim 1: offset 2, size 2, stride 2 do "
                         "not fit in 4 (source [2, 2], dest [2, 4])");
}

//===----------------------------------------------------------------------===//
// gather_grad
//===----------------------------------------------------------------------===//

/// Reference: scatter-add of grad into a zero table in float64.
std::vector<double> referenceGatherGrad(const std::vector<int64_t> &indices,
                                        const std::vector<float> &grad,
                                        const Shape &table, int64_t axis,
                                        std::vector<double> &bound) {
  int64_t outer = 1, inner = 1, count = int64_t(indices.size());
  for (int64_t d = 0; d < axis; ++d)
    outer *= table[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < table.size(); ++d)
    inner *= table[d];
  std::vector<double> want(size_t(numel(table)), 0.0);
  bound.assign(want.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < count; ++i)
      for (int64_t k = 0; k < inner; ++k) {
        size_t at =
            size_t((o * table[size_t(axis)] + indices[size_t(i)]) * inner + k);
        double g = grad[size_t((o * count + i) * inner + k)];
        want[at] += g;
        bound[at] += std::abs(g);
      }
  return want;
}

TEST(GatherGrad, EmbeddingWithRepeatedRows) {
  Shape table{10, 4}, ids{3, 5};
  std::mt19937 gen(221);
  std::vector<int64_t> indices(15);
  for (int64_t &i : indices)
    i = int64_t(gen() % 4); // many repeats
  Shape gradShape{3, 5, 4};
  std::vector<float> grad = randomFloats(numel(gradShape), 222);
  std::vector<float> got(40, NAN);
  ASSERT_EQ(gpipe_rt_cpu_gather_grad_f32(
                GPIPE_RT_I64, indices.data(), ids.data(), 2, grad.data(),
                gradShape.data(), 3, 0, got.data(), table.data(), 2),
            GPIPE_RT_SUCCESS)
      << lastError();
  std::vector<double> bound;
  std::vector<double> want =
      referenceGatherGrad(indices, grad, table, 0, bound);
  expectWithin(got, want, bound);
  // Rows nobody reads are exactly zero.
  for (int64_t r = 4; r < 10; ++r)
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(got[size_t(r * 4 + k)], 0.0f);
  // The same with i32 indices, bit for bit.
  std::vector<int32_t> indices32(indices.begin(), indices.end());
  std::vector<float> got32(40, NAN);
  ASSERT_EQ(gpipe_rt_cpu_gather_grad_f32(
                GPIPE_RT_I32, indices32.data(), ids.data(), 2, grad.data(),
                gradShape.data(), 3, 0, got32.data(), table.data(), 2),
            GPIPE_RT_SUCCESS);
  EXPECT_TRUE(bitwiseEqual(got, got32));
}

TEST(GatherGrad, MiddleAxis) {
  Shape table{2, 5, 3}, ids{4};
  std::vector<int64_t> indices{4, 0, 4, 2};
  Shape gradShape{2, 4, 3};
  std::vector<float> grad = randomFloats(numel(gradShape), 223);
  std::vector<float> got(30, NAN);
  ASSERT_EQ(gpipe_rt_cpu_gather_grad_f32(
                GPIPE_RT_I64, indices.data(), ids.data(), 1, grad.data(),
                gradShape.data(), 3, 1, got.data(), table.data(), 3),
            GPIPE_RT_SUCCESS)
      << lastError();
  std::vector<double> bound;
  expectWithin(got, referenceGatherGrad(indices, grad, table, 1, bound), bound);
}

TEST(GatherGrad, Errors) {
  Shape table{3, 2}, ids{2};
  std::vector<int64_t> indices{0, 3};
  Shape gradShape{2, 2};
  std::vector<float> grad(4), out(6, 7.0f);
  EXPECT_EQ(gpipe_rt_cpu_gather_grad_f32(
                GPIPE_RT_I64, indices.data(), ids.data(), 1, grad.data(),
                gradShape.data(), 2, 0, out.data(), table.data(), 2),
            GPIPE_RT_OUT_OF_RANGE);
  EXPECT_EQ(lastError(), "gather_grad: index 3 at position [1] of indices [2] "
                         "is out of range [0, 3) for axis 0 of [3, 2]");
  for (float v : out)
    EXPECT_EQ(v, 7.0f);
  Shape wrongGrad{2, 3};
  indices[1] = 1;
  EXPECT_EQ(gpipe_rt_cpu_gather_grad_f32(
                GPIPE_RT_I64, indices.data(), ids.data(), 1, grad.data(),
                wrongGrad.data(), 2, 0, out.data(), table.data(), 2),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "gather_grad: grad [2, 3] does not have the shape of "
                         "gathering [2] along axis 0 of [3, 2]");
}

//===----------------------------------------------------------------------===//
// softmax_grad
//===----------------------------------------------------------------------===//

TEST(SoftmaxGrad, EveryAxisMatchesReference) {
  Shape s{3, 4, 5};
  for (int64_t axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE(axis);
    std::vector<float> x = randomFloats(numel(s), 231, -3.0f, 3.0f);
    std::vector<float> y(x.size());
    ASSERT_EQ(gpipe_rt_cpu_softmax_f32(x.data(), s.data(), 3, axis, y.data()),
              GPIPE_RT_SUCCESS);
    std::vector<float> dy = randomFloats(numel(s), 232);
    std::vector<float> got(x.size(), NAN);
    ASSERT_EQ(gpipe_rt_cpu_softmax_grad_f32(y.data(), dy.data(), s.data(), 3,
                                            axis, got.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    std::vector<double> want(x.size()), bound(x.size());
    for (int64_t i = 0; i < numel(s); ++i) {
      std::vector<int64_t> idx = unravel(i, s);
      double dot = 0, mag = 0;
      for (int64_t j = 0; j < s[size_t(axis)]; ++j) {
        std::vector<int64_t> k = idx;
        k[size_t(axis)] = j;
        size_t at = size_t(ravel(k, s));
        dot += double(dy[at]) * y[at];
        mag += std::abs(double(dy[at]) * y[at]);
      }
      want[size_t(i)] = double(y[size_t(i)]) * (dy[size_t(i)] - dot);
      bound[size_t(i)] = y[size_t(i)] * (std::abs(dy[size_t(i)]) + mag);
    }
    expectWithin(got, want, bound);
    // In place on grad.
    ASSERT_EQ(gpipe_rt_cpu_softmax_grad_f32(y.data(), dy.data(), s.data(), 3,
                                            axis, dy.data()),
              GPIPE_RT_SUCCESS);
    EXPECT_TRUE(bitwiseEqual(dy, got));
  }
}

//===----------------------------------------------------------------------===//
// layer_norm_grad
//===----------------------------------------------------------------------===//

TEST(LayerNormGrad, MatchesReferenceOverTrailingDims) {
  Shape s{2, 3, 8};
  const float eps = 1e-5f;
  std::vector<float> x = randomFloats(numel(s), 241, -3.0f, 5.0f);
  std::vector<float> dy = randomFloats(numel(s), 242);
  for (int64_t axis : {0, 1, 2}) {
    SCOPED_TRACE(axis);
    int64_t n = 1;
    for (size_t d = size_t(axis); d < s.size(); ++d)
      n *= s[d];
    int64_t rows = numel(s) / n;
    std::vector<float> scale = randomFloats(n, 243);
    std::vector<float> dx(x.size(), NAN), dg(size_t(n), NAN),
        db(size_t(n), NAN);
    ASSERT_EQ(gpipe_rt_cpu_layer_norm_grad_f32(x.data(), s.data(), 3, axis,
                                               scale.data(), dy.data(), eps,
                                               dx.data(), dg.data(), db.data()),
              GPIPE_RT_SUCCESS)
        << lastError();
    std::vector<double> wantDx(x.size()), boundDx(x.size());
    std::vector<double> wantDg(size_t(n), 0), boundDg(size_t(n), 0);
    std::vector<double> wantDb(size_t(n), 0), boundDb(size_t(n), 0);
    for (int64_t r = 0; r < rows; ++r) {
      double mu = 0, var = 0;
      for (int64_t j = 0; j < n; ++j)
        mu += x[size_t(r * n + j)];
      mu /= double(n);
      for (int64_t j = 0; j < n; ++j)
        var += (x[size_t(r * n + j)] - mu) * (x[size_t(r * n + j)] - mu);
      var /= double(n);
      double rs = 1.0 / std::sqrt(var + eps);
      double mg = 0, mgx = 0, mag = 0;
      for (int64_t j = 0; j < n; ++j) {
        size_t at = size_t(r * n + j);
        double xh = (x[at] - mu) * rs, g = double(dy[at]) * scale[size_t(j)];
        mg += g / double(n);
        mgx += g * xh / double(n);
        mag += std::abs(g) * (1 + std::abs(xh)) / double(n);
        wantDg[size_t(j)] += dy[at] * xh;
        boundDg[size_t(j)] += std::abs(dy[at] * xh);
        wantDb[size_t(j)] += dy[at];
        boundDb[size_t(j)] += std::abs(dy[at]);
      }
      for (int64_t j = 0; j < n; ++j) {
        size_t at = size_t(r * n + j);
        double xh = (x[at] - mu) * rs, g = double(dy[at]) * scale[size_t(j)];
        wantDx[at] = rs * (g - mg - xh * mgx);
        boundDx[at] = rs * (std::abs(g) + mag * (1 + std::abs(xh)));
      }
    }
    expectWithin(dx, wantDx, boundDx);
    expectWithin(dg, wantDg, boundDg);
    expectWithin(db, wantDb, boundDb);

    // Null outputs are skipped; the others do not change.
    std::vector<float> dx2(x.size(), NAN);
    ASSERT_EQ(gpipe_rt_cpu_layer_norm_grad_f32(x.data(), s.data(), 3, axis,
                                               scale.data(), dy.data(), eps,
                                               dx2.data(), nullptr, nullptr),
              GPIPE_RT_SUCCESS);
    EXPECT_TRUE(bitwiseEqual(dx, dx2));
  }
}

/// The input gradient of a layer norm is orthogonal to constant shifts and
/// to the normalized input: sum(dx) = 0 and sum(dx * xhat) = 0 per row.
TEST(LayerNormGrad, InvariancesOfTheInputGradient) {
  Shape s{4, 64};
  std::vector<float> x = randomFloats(numel(s), 244, 10.0f, 12.0f);
  std::vector<float> dy = randomFloats(numel(s), 245);
  std::vector<float> scale(64, 1.0f), dx(x.size());
  ASSERT_EQ(gpipe_rt_cpu_layer_norm_grad_f32(x.data(), s.data(), 2, 1,
                                             scale.data(), dy.data(), 0.0f,
                                             dx.data(), nullptr, nullptr),
            GPIPE_RT_SUCCESS);
  for (int64_t r = 0; r < 4; ++r) {
    double sum = 0, mag = 0;
    for (int64_t j = 0; j < 64; ++j) {
      sum += dx[size_t(r * 64 + j)];
      mag += std::abs(dx[size_t(r * 64 + j)]);
    }
    EXPECT_LE(std::abs(sum), 1e-6 * mag);
  }
}

//===----------------------------------------------------------------------===//
// gelu_grad
//===----------------------------------------------------------------------===//

TEST(GeluGrad, MatchesReferenceAndDerivative) {
  std::vector<float> x = randomFloats(1003, 251, -6.0f, 6.0f);
  x[0] = 0.0f;
  x[1] = -40.0f;
  x[2] = 40.0f;
  std::vector<float> dy = randomFloats(1003, 252);
  std::vector<float> got(x.size(), NAN);
  ASSERT_EQ(gpipe_rt_cpu_gelu_grad_f32(x.data(), dy.data(), got.data(),
                                       int64_t(x.size())),
            GPIPE_RT_SUCCESS);
  std::vector<double> want(x.size());
  auto gelu = [](double v) {
    return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  };
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    double cdf = 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
    double pdf = std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
    want[i] = dy[i] * (cdf + v * pdf);
    // The formula is the derivative of GELU.
    double h = 1e-5;
    double fd = (gelu(v + h) - gelu(v - h)) / (2 * h);
    EXPECT_NEAR(cdf + v * pdf, fd, 1e-8) << v;
  }
  expectClose(got, want);
  EXPECT_EQ(got[1], 0.0f * dy[1]);
  EXPECT_EQ(got[2], dy[2]);
  // In place on either operand.
  std::vector<float> inPlace = dy;
  ASSERT_EQ(gpipe_rt_cpu_gelu_grad_f32(x.data(), inPlace.data(), inPlace.data(),
                                       int64_t(x.size())),
            GPIPE_RT_SUCCESS);
  EXPECT_TRUE(bitwiseEqual(inPlace, got));
}

//===----------------------------------------------------------------------===//
// cross_entropy_grad
//===----------------------------------------------------------------------===//

TEST(CrossEntropyGrad, MatchesReference) {
  Shape s{2, 5, 7};
  std::vector<float> logits = randomFloats(numel(s), 261, -4.0f, 4.0f);
  std::mt19937 gen(262);
  std::vector<int64_t> labels(10);
  for (int64_t &l : labels)
    l = int64_t(gen() % 7);
  const float dloss = 0.37f;
  std::vector<float> got(logits.size(), NAN);
  ASSERT_EQ(gpipe_rt_cpu_cross_entropy_grad_f32(logits.data(), s.data(), 3,
                                                GPIPE_RT_I64, labels.data(),
                                                dloss, got.data()),
            GPIPE_RT_SUCCESS)
      << lastError();
  std::vector<double> want(logits.size());
  for (int64_t r = 0; r < 10; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < 7; ++c)
      m = std::max(m, double(logits[size_t(r * 7 + c)]));
    for (int64_t c = 0; c < 7; ++c)
      sum += std::exp(logits[size_t(r * 7 + c)] - m);
    for (int64_t c = 0; c < 7; ++c) {
      double p = std::exp(logits[size_t(r * 7 + c)] - m) / sum;
      want[size_t(r * 7 + c)] =
          double(dloss) * (p - (c == labels[size_t(r)] ? 1 : 0)) / 10.0;
    }
  }
  expectClose(got, want, 1e-5, 1e-9);
  // Each row's gradient sums to zero.
  for (int64_t r = 0; r < 10; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < 7; ++c)
      sum += got[size_t(r * 7 + c)];
    EXPECT_NEAR(sum, 0.0, 1e-8);
  }
  // i32 labels give the same bits; large logits stay finite.
  std::vector<int32_t> labels32(labels.begin(), labels.end());
  std::vector<float> got32(logits.size());
  ASSERT_EQ(gpipe_rt_cpu_cross_entropy_grad_f32(logits.data(), s.data(), 3,
                                                GPIPE_RT_I32, labels32.data(),
                                                dloss, got32.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_TRUE(bitwiseEqual(got, got32));
  Shape one{1, 3};
  std::vector<float> big{1000.0f, 1000.0f, 1000.0f}, out(3);
  int64_t label = 1;
  ASSERT_EQ(gpipe_rt_cpu_cross_entropy_grad_f32(big.data(), one.data(), 2,
                                                GPIPE_RT_I64, &label, 1.0f,
                                                out.data()),
            GPIPE_RT_SUCCESS);
  EXPECT_NEAR(out[0], 1.0 / 3, 1e-7);
  EXPECT_NEAR(out[1], -2.0 / 3, 1e-7);
}

TEST(CrossEntropyGrad, BadLabelIsReportedWithItsPosition) {
  Shape s{2, 3, 4};
  std::vector<float> logits(24), out(24);
  std::vector<int64_t> labels{0, 1, 2, 3, -1, 0};
  EXPECT_EQ(gpipe_rt_cpu_cross_entropy_grad_f32(logits.data(), s.data(), 3,
                                                GPIPE_RT_I64, labels.data(),
                                                1.0f, out.data()),
            GPIPE_RT_OUT_OF_RANGE);
  EXPECT_EQ(lastError(), "cross_entropy_grad: label -1 at position [1, 1] is "
                         "out of range [0, 4)");
}

//===----------------------------------------------------------------------===//
// SGD and reproducibility
//===----------------------------------------------------------------------===//

TEST(SGD, UpdatesInPlaceInFloat) {
  std::vector<float> p = randomFloats(37, 271), g = randomFloats(37, 272);
  std::vector<float> want(p.size());
  const float lr = 0.1f;
  for (size_t i = 0; i < p.size(); ++i) {
    volatile float step = lr * g[i];
    want[i] = p[i] - step;
  }
  ASSERT_EQ(gpipe_rt_cpu_sgd_update_f32(p.data(), g.data(), 37, lr),
            GPIPE_RT_SUCCESS);
  EXPECT_TRUE(bitwiseEqual(p, want));
  EXPECT_EQ(gpipe_rt_cpu_sgd_update_f32(nullptr, g.data(), 3, lr),
            GPIPE_RT_INVALID_ARGUMENT);
}

TEST(BackwardReproducibility, RepeatedCallsAreBitwiseIdentical) {
  Shape s{16, 33};
  std::vector<float> x = randomFloats(numel(s), 281);
  std::vector<float> dy = randomFloats(numel(s), 282);
  std::vector<float> scale = randomFloats(33, 283);
  auto run = [&] {
    std::vector<float> dx(x.size()), dg(33), db(33), sum(33);
    Shape axes{0};
    EXPECT_EQ(gpipe_rt_cpu_layer_norm_grad_f32(x.data(), s.data(), 2, 1,
                                               scale.data(), dy.data(), 1e-5f,
                                               dx.data(), dg.data(), db.data()),
              GPIPE_RT_SUCCESS);
    EXPECT_EQ(gpipe_rt_cpu_reduce_sum_f32(dy.data(), s.data(), 2, axes.data(),
                                          1, sum.data()),
              GPIPE_RT_SUCCESS);
    dx.insert(dx.end(), dg.begin(), dg.end());
    dx.insert(dx.end(), db.begin(), db.end());
    dx.insert(dx.end(), sum.begin(), sum.end());
    return dx;
  };
  std::vector<float> first = run();
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(bitwiseEqual(first, run()));
}

} // namespace
