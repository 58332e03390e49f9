//===- GemmChoiceTest.cpp - The per-shape GEMM choice and libxsmm --------===//
//
// gpipe_rt_cpu_set_gemm_choice: which shapes take which implementation,
// the grid's cells, the errors; and libxsmm's GEMMs through the kernel
// entry points against OpenBLAS's, with bits that do not depend on the
// thread count.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

/// Puts every GEMM back on OpenBLAS, on one thread, after each test.
class GemmChoice : public ::testing::Test {
protected:
  void TearDown() override {
    ASSERT_EQ(gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_OPENBLAS, nullptr, 0,
                                           nullptr),
              GPIPE_RT_SUCCESS);
    gpipe_rt_cpu_set_blas_threads(1);
  }
  bool haveLibxsmm() const {
    return gpipe_rt_cpu_gemm_impl_available(GPIPE_RT_GEMM_LIBXSMM) != 0;
  }
};

TEST_F(GemmChoice, GridCellsAreNearestInLogScale) {
  const int64_t grid[] = {2, 8, 64, 1024};
  // Boundaries at the geometric means 4, sqrt(512) = 22.6 and 256.
  EXPECT_EQ(gpipe_rt_gemm_grid_cell(1, grid, 4), 0);
  EXPECT_EQ(gpipe_rt_gemm_grid_cell(4, grid, 4), 0);
  EXPECT_EQ(gpipe_rt_gemm_grid_cell(5, grid, 4), 1);
  EXPECT_EQ(gpipe_rt_gemm_grid_cell(22, grid, 4), 1);
  EXPECT_EQ(gpipe_rt_gemm_grid_cell(23, grid, 4), 2);
  EXPECT_EQ(gpipe_rt_gemm_grid_cell(256, grid, 4), 2);
  EXPECT_EQ(gpipe_rt_gemm_grid_cell(257, grid, 4), 3);
  EXPECT_EQ(gpipe_rt_gemm_grid_cell(int64_t(1) << 40, grid, 4), 3);
}

TEST_F(GemmChoice, OpenBlasUntilAChoiceIsInstalled) {
  for (int ta : {0, 1})
    for (int tb : {0, 1})
      EXPECT_EQ(gpipe_rt_cpu_gemm_impl_for(ta, tb, 64, 64, 64),
                GPIPE_RT_GEMM_OPENBLAS);
  EXPECT_STREQ(gpipe_rt_gemm_impl_name(GPIPE_RT_GEMM_OPENBLAS), "openblas");
  EXPECT_STREQ(gpipe_rt_gemm_impl_name(GPIPE_RT_GEMM_LIBXSMM), "libxsmm");
  EXPECT_EQ(gpipe_rt_gemm_impl_name(7), nullptr);
}

TEST_F(GemmChoice, LibxsmmTakesEveryLayout) {
  if (!haveLibxsmm())
    GTEST_SKIP() << "built without libxsmm";
  ASSERT_EQ(
      gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_LIBXSMM, nullptr, 0, nullptr),
      GPIPE_RT_SUCCESS);
  for (int ta : {0, 1})
    for (int tb : {0, 1})
      EXPECT_EQ(gpipe_rt_cpu_gemm_impl_for(ta, tb, 32, 16, 8),
                GPIPE_RT_GEMM_LIBXSMM);
}

TEST_F(GemmChoice, CellsDecidePerShapeClass) {
  if (!haveLibxsmm())
    GTEST_SKIP() << "built without libxsmm";
  const int64_t grid[] = {8, 64};
  // NN: libxsmm only where M is in the large cell; TN: everywhere; NT:
  // nowhere; TT: no cells, so OpenBLAS.
  std::string nn = "00001111", tn = "11111111", nt = "00000000";
  const char *cells[4] = {nn.c_str(), nt.c_str(), tn.c_str(), nullptr};
  ASSERT_EQ(gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_LIBXSMM, grid, 2, cells),
            GPIPE_RT_SUCCESS);
  EXPECT_EQ(gpipe_rt_cpu_gemm_impl_for(0, 0, 16, 100, 3),
            GPIPE_RT_GEMM_OPENBLAS);
  EXPECT_EQ(gpipe_rt_cpu_gemm_impl_for(0, 0, 40, 100, 3),
            GPIPE_RT_GEMM_LIBXSMM);
  EXPECT_EQ(gpipe_rt_cpu_gemm_impl_for(1, 0, 1, 1, 1), GPIPE_RT_GEMM_LIBXSMM);
  EXPECT_EQ(gpipe_rt_cpu_gemm_impl_for(0, 1, 40, 100, 3),
            GPIPE_RT_GEMM_OPENBLAS);
  EXPECT_EQ(gpipe_rt_cpu_gemm_impl_for(1, 1, 40, 100, 3),
            GPIPE_RT_GEMM_OPENBLAS);
}

TEST_F(GemmChoice, MalformedChoicesAreRefusedAndTheOldOneStays) {
  EXPECT_EQ(gpipe_rt_cpu_set_gemm_choice(9, nullptr, 0, nullptr),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpipe_rt_last_error()).find("9 is unknown"),
            std::string::npos)
      << gpipe_rt_last_error();
  const int64_t unsorted[] = {8, 8};
  EXPECT_EQ(gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_OPENBLAS, unsorted, 2,
                                         nullptr),
            GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpipe_rt_last_error()).find("dimension 1 is 8"),
            std::string::npos)
      << gpipe_rt_last_error();
  const int64_t grid[] = {8, 64};
  const char *shortCells[4] = {"0101", nullptr, nullptr, nullptr};
  EXPECT_EQ(
      gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_OPENBLAS, grid, 2, shortCells),
      GPIPE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gpipe_rt_last_error()).find("has 4 cells, the grid 8"),
            std::string::npos)
      << gpipe_rt_last_error();
  EXPECT_EQ(gpipe_rt_cpu_gemm_impl_for(0, 0, 64, 64, 64),
            GPIPE_RT_GEMM_OPENBLAS);
  if (!haveLibxsmm()) {
    EXPECT_EQ(gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_LIBXSMM, nullptr, 0,
                                           nullptr),
              GPIPE_RT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(gpipe_rt_last_error()).find("libxsmm-dev"),
              std::string::npos);
  }
}

/// C = alpha op(A) op(B) + beta C through gemm_f32 on `threads` threads.
std::vector<float> runGemm(int64_t m, int64_t n, int64_t k, int ta, int tb,
                           float alpha, float beta, const std::vector<float> &a,
                           const std::vector<float> &b,
                           const std::vector<float> &c, int threads) {
  gpipe_rt_cpu_set_blas_threads(threads);
  int64_t aShape[2] = {ta ? k : m, ta ? m : k};
  int64_t bShape[2] = {tb ? n : k, tb ? k : n};
  int64_t outShape[2] = {m, n};
  std::vector<float> out(size_t(m * n), std::nanf(""));
  EXPECT_EQ(gpipe_rt_cpu_gemm_f32(a.data(), aShape, b.data(), bShape, c.data(),
                                  outShape, 2, alpha, beta, ta, tb, out.data(),
                                  outShape),
            GPIPE_RT_SUCCESS)
      << gpipe_rt_last_error();
  return out;
}

TEST_F(GemmChoice, LibxsmmAgreesWithOpenBlasAndKeepsItsBitsOnAnyThreads) {
  if (!haveLibxsmm())
    GTEST_SKIP() << "built without libxsmm";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct Case {
    int64_t m, n, k;
  };
  for (Case s : {Case{32, 16, 32}, Case{16, 1024, 144}, Case{100, 70, 301},
                 Case{256, 64, 256}, Case{1024, 96, 200}, Case{3, 5, 7},
                 Case{600, 33, 257}})
    for (int ta : {0, 1})
      for (int tb : {0, 1})
        for (auto [alpha, beta] :
             {std::pair{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, 0.25f}}) {
          std::vector<float> a(size_t(s.m * s.k)), b(size_t(s.k * s.n)),
              c(size_t(s.m * s.n));
          for (std::vector<float> *v : {&a, &b, &c})
            for (float &x : *v)
              x = dist(rng);
          ASSERT_EQ(gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_OPENBLAS,
                                                 nullptr, 0, nullptr),
                    GPIPE_RT_SUCCESS);
          std::vector<float> reference =
              runGemm(s.m, s.n, s.k, ta, tb, alpha, beta, a, b, c, 1);
          ASSERT_EQ(gpipe_rt_cpu_set_gemm_choice(GPIPE_RT_GEMM_LIBXSMM, nullptr,
                                                 0, nullptr),
                    GPIPE_RT_SUCCESS);
          std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) +
                             "x" + std::to_string(s.k) + (ta ? " T" : " N") +
                             (tb ? "T" : "N") + " alpha " +
                             std::to_string(alpha) + " beta " +
                             std::to_string(beta);
          std::vector<float> one =
              runGemm(s.m, s.n, s.k, ta, tb, alpha, beta, a, b, c, 1);
          // Each within a few roundings of the exact (double) result, and
          // libxsmm no further from it than OpenBLAS, give or take.
          double errOpenBlas = 0, errXsmm = 0;
          for (int64_t i = 0; i < s.m; ++i)
            for (int64_t j = 0; j < s.n; ++j) {
              double exact = 0;
              for (int64_t l = 0; l < s.k; ++l)
                exact += double(ta ? a[size_t(l * s.m + i)]
                                   : a[size_t(i * s.k + l)]) *
                         double(tb ? b[size_t(j * s.k + l)]
                                   : b[size_t(l * s.n + j)]);
              exact = double(alpha) * exact +
                      double(beta) * double(c[size_t(i * s.n + j)]);
              size_t at = size_t(i * s.n + j);
              errOpenBlas = std::max(errOpenBlas,
                                     std::fabs(double(reference[at]) - exact));
              errXsmm = std::max(errXsmm, std::fabs(double(one[at]) - exact));
            }
          EXPECT_LE(errXsmm, 1e-6 * std::sqrt(double(s.k)) * 4) << what;
          EXPECT_LE(errXsmm, 2 * errOpenBlas + 1e-6) << what;
          for (int threads : {2, 3}) {
            std::vector<float> more =
                runGemm(s.m, s.n, s.k, ta, tb, alpha, beta, a, b, c, threads);
            EXPECT_EQ(std::memcmp(one.data(), more.data(),
                                  one.size() * sizeof(float)),
                      0)
                << what << ": " << threads << " threads";
          }
        }
}

} // namespace
