//===- gemm_libs_bench.cpp - The benchmark models' GEMMs in three libraries
//===//
//
// Which GEMM library is worth keeping beside OpenBLAS, per shape: every
// GEMM shape and layout the benchmark models run (bench/vs_pytorch.py's
// GPTs and MLPs, the ResNet preset's convolutions; row-major C = op(A)
// op(B), M x N x K), timed on one thread
//
//   - through gpipe's own kernel entry (gpipe_rt_cpu_matmul_f32: OpenBLAS
//     0.3.21 behind the argument checks, what a compiled model calls);
//   - BLIS's typed API (bli_sgemm with row and column strides, no copy),
//     loaded with dlopen so that its BLAS symbols stay apart from
//     OpenBLAS's;
//   - libxsmm's JIT kernel for the shape (libxsmm_smmdispatch, dispatched
//     once, as a compiler would at load; "-" where libxsmm makes none),
//
// each the fastest of a few batches of calls on the same operands. Prints
// GFLOP/s per library and shape, and the single-core ceiling (1024^3, the
// best library). Built when libxsmm and BLIS's header are installed
// (apt-get install libxsmm-dev libblis-dev); run on an idle machine:
//
//   build/bench/gemm_libs_bench [--blis PATH-TO-libblis.so]
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"

#include <blis.h>
#include <libxsmm.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  const char *model;
  int64_t m, n, k;
  bool ta, tb;
};

/// The fastest seconds per call over 5 batches of about 2 ms each.
double timeCall(const std::function<void()> &call) {
  call();
  auto t0 = Clock::now();
  call();
  double one = std::chrono::duration<double>(Clock::now() - t0).count();
  int64_t calls =
      std::clamp<int64_t>(int64_t(2e-3 / std::max(one, 1e-9)), 1, 100000);
  double best = one;
  for (int r = 0; r < 5; ++r) {
    auto start = Clock::now();
    for (int64_t i = 0; i < calls; ++i)
      call();
    best = std::min(
        best, std::chrono::duration<double>(Clock::now() - start).count() /
                  double(calls));
  }
  return best;
}

using BliSgemm = void (*)(trans_t, trans_t, dim_t, dim_t, dim_t, float *,
                          float *, inc_t, inc_t, float *, inc_t, inc_t, float *,
                          float *, inc_t, inc_t);
using BliSetThreads = void (*)(dim_t);

} // namespace

int main(int argc, char **argv) {
  std::string blisPath = "/usr/lib/x86_64-linux-gnu/blis-openmp/libblis.so.4";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--blis") == 0 && i + 1 < argc) {
      blisPath = argv[++i];
    } else {
      std::fprintf(stderr, "usage: gemm_libs_bench [--blis libblis.so]\n");
      return 2;
    }
  }
  gpipe_rt_cpu_set_blas_threads(1);
  void *blis = dlopen(blisPath.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  BliSgemm bliSgemm =
      blis ? reinterpret_cast<BliSgemm>(dlsym(blis, "bli_sgemm")) : nullptr;
  if (blis)
    if (auto setThreads = reinterpret_cast<BliSetThreads>(
            dlsym(blis, "bli_thread_set_num_threads")))
      setThreads(1);
  if (!bliSgemm)
    std::printf("# BLIS not loaded from %s: %s\n", blisPath.c_str(), dlerror());
  libxsmm_init();

  const Shape shapes[] = {
      {"gpt-64", 256, 64, 256, false, true},
      {"gpt-64", 256, 256, 64, false, true},
      {"gpt-64", 256, 192, 64, false, true},
      {"gpt-64", 64, 256, 256, true, false},
      {"gpt-64", 256, 64, 256, false, false},
      {"gpt-64", 256, 64, 64, false, true},
      {"gpt-64", 32, 32, 16, false, true},
      {"gpt-64", 32, 16, 32, false, false},
      {"gpt-64", 16, 32, 32, true, false},
      {"mlp-deep", 64, 256, 256, false, true},
      {"mlp-deep", 64, 256, 256, false, false},
      {"mlp-deep", 256, 256, 64, true, false},
      {"gpt-256", 1024, 768, 256, false, true},
      {"gpt-256", 1024, 256, 1024, false, true},
      {"gpt-256", 1024, 1024, 256, false, true},
      {"gpt-256", 256, 1024, 1024, true, false},
      {"gpt-256", 64, 64, 32, false, true},
      {"gpt-256", 64, 32, 64, false, false},
      {"resnet", 16, 1024, 144, false, false},
      {"resnet", 16, 144, 1024, false, true},
      {"resnet", 144, 1024, 16, true, false},
      {"resnet", 32, 256, 288, false, false},
      {"resnet", 64, 64, 576, false, false},
      {"ceiling", 1024, 1024, 1024, false, false},
  };
  std::printf("# one thread, GFLOP/s (C = op(A) op(B), M x N x K, row-major; "
              "N: as stored, T: transposed)\n");
  std::printf("%-9s %-20s %10s %10s %10s  %s\n", "model", "shape", "openblas",
              "blis", "libxsmm", "best");
  for (const Shape &s : shapes) {
    std::vector<float> a(size_t(s.m * s.k), 0.5f), b(size_t(s.k * s.n), 0.25f),
        c(size_t(s.m * s.n), 0.0f);
    double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
    int64_t aShape[2] = {s.ta ? s.k : s.m, s.ta ? s.m : s.k};
    int64_t bShape[2] = {s.tb ? s.n : s.k, s.tb ? s.k : s.n};
    int64_t cShape[2] = {s.m, s.n};
    double openblas =
        flops / timeCall([&] {
          gpipe_rt_cpu_matmul_f32(a.data(), aShape, 2, b.data(), bShape, 2,
                                  s.ta, s.tb, c.data(), cShape, 2);
        }) /
        1e9;
    double viaBlis = 0;
    if (bliSgemm) {
      float one = 1.0f, zero = 0.0f;
      // Row-major operands as stored: a row stride of the stored width.
      inc_t lda = inc_t(aShape[1]), ldb = inc_t(bShape[1]);
      viaBlis = flops / timeCall([&] {
                  bliSgemm(s.ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                           s.tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s.m, s.n,
                           s.k, &one, a.data(), lda, 1, b.data(), ldb, 1, &zero,
                           c.data(), inc_t(s.n), 1);
                }) /
                1e9;
    }
    // Column-major libxsmm: row-major C = op(A) op(B) is column-major
    // C^T = op(B)^T op(A)^T, so B goes first; a transposed row-major
    // operand is a transposed column-major one too.
    double viaXsmm = 0;
    {
      libxsmm_blasint m = libxsmm_blasint(s.n), n = libxsmm_blasint(s.m),
                      k = libxsmm_blasint(s.k);
      libxsmm_blasint lda = libxsmm_blasint(bShape[1]),
                      ldb = libxsmm_blasint(aShape[1]), ldc = m;
      float alpha = 1.0f, beta = 0.0f;
      int flags = (s.tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) |
                  (s.ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
      libxsmm_smmfunction kernel = libxsmm_smmdispatch(
          m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
      if (kernel)
        viaXsmm = flops /
                  timeCall([&] { kernel(b.data(), a.data(), c.data()); }) / 1e9;
    }
    char shape[32];
    std::snprintf(shape, sizeof shape, "%lldx%lldx%lld %c%c", (long long)s.m,
                  (long long)s.n, (long long)s.k, s.ta ? 'T' : 'N',
                  s.tb ? 'T' : 'N');
    auto cell = [](double v) {
      char text[16];
      if (v > 0)
        std::snprintf(text, sizeof text, "%10.1f", v);
      else
        std::snprintf(text, sizeof text, "%10s", "-");
      return std::string(text);
    };
    const char *best = "openblas";
    if (viaBlis > openblas && viaBlis >= viaXsmm)
      best = "blis";
    else if (viaXsmm > openblas && viaXsmm > viaBlis)
      best = "libxsmm";
    std::printf("%-9s %-20s %s %s %s  %s\n", s.model, shape,
                cell(openblas).c_str(), cell(viaBlis).c_str(),
                cell(viaXsmm).c_str(), best);
  }
  libxsmm_finalize();
  return 0;
}
