//===- kernel_bench.cpp - CPU kernels at model shapes, 1 and N threads ----===//
//
// Times the CPU kernels a transformer step spends its non-GEMM time in (and
// the attention GEMMs) at the GEMM-heavy GPT's shapes (bench/vs_pytorch.py:
// D = 256, T = 64, 8 heads, batch 16), on one kernel thread and on every
// core (gpipe_rt_cpu_set_blas_threads: the GEMMs split over them too). The
// two configurations alternate, call after call, and each keeps its median,
// so a machine whose speed drifts slows both alike. Prints per kernel the
// time per call, ns per element (of the output) and the speedup.
//
//   build/bench/kernel_bench [--steps N] [--quick]
//
//===----------------------------------------------------------------------===//

#include "BenchCommon.h"

#include "gpipe/Runtime/CPUKernels.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <thread>

using namespace gpipe;

namespace {

struct Case {
  const char *name;
  int64_t elements; // of the output, for ns per element
  std::function<gpipe_rt_status()> call;
  double flops = 0; // of a GEMM: its GFLOP/s are printed too
};

std::vector<float> randomFloats(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(gen);
  return v;
}

double secondsOf(const Case &c, int threads) {
  gpipe_rt_cpu_set_blas_threads(threads); // the kernel threads too
  auto start = std::chrono::steady_clock::now();
  gpipe_rt_status status = c.call();
  double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (status != GPIPE_RT_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", c.name, gpipe_rt_last_error());
    std::exit(1);
  }
  return s;
}

} // namespace

int main(int argc, char **argv) {
  auto opts = bench::parseOptions(argc, argv, "kernel_bench", 40, 8);
  if (!opts)
    return 2;
  int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("$ %s\n", bench::commandLine(argc, argv).c_str());
  std::printf("# CPU kernels at the GEMM-heavy GPT's shapes (batch 16, T 64, "
              "D 256, 8 heads of 32, MLP 1024); median of %d calls, 1 and "
              "%d threads alternating\n",
              opts->steps, cores);

  const int64_t B = 16, T = 64, D = 256, H = 8, Dh = 32, F = 1024;
  int64_t rows = B * T;
  auto x = randomFloats(rows * F, 1), g = randomFloats(rows * F, 2);
  auto out = std::vector<float>(size_t(rows * F));
  auto q = randomFloats(B * H * T * Dh, 3),
       kt = randomFloats(B * H * Dh * T, 4);
  auto scores = randomFloats(B * H * T * T, 5),
       sg = randomFloats(B * H * T * T, 6);
  auto sout = std::vector<float>(size_t(B * H * T * T));
  auto ln = randomFloats(rows * D, 7), lng = randomFloats(rows * D, 8);
  std::vector<float> scale(size_t(D), 1.0f), bias(size_t(D), 0.0f);
  std::vector<float> mean(static_cast<size_t>(rows)),
      rstd(static_cast<size_t>(rows));
  std::vector<float> dscale(static_cast<size_t>(D)),
      dbias(static_cast<size_t>(D)), lnOut(static_cast<size_t>(rows * D));
  std::vector<float> heads(static_cast<size_t>(rows * D));

  int64_t qShape[] = {B, H, T, Dh}, ktShape[] = {B, H, Dh, T},
          sShape[] = {B, H, T, T}, vShape[] = {B, H, T, Dh};
  int64_t lnShape[] = {B, T, D};
  int64_t splitShape[] = {B, T, H, Dh}, perm[] = {0, 2, 1, 3},
          keyPerm[] = {0, 2, 3, 1}, lastTwo[] = {0, 1, 3, 2};

  std::vector<Case> cases = {
      {"gelu (unary)", rows * F,
       [&] {
         return gpipe_rt_cpu_unary_f32(GPIPE_RT_GELU, x.data(), out.data(),
                                       rows * F);
       }},
      {"gelu_grad", rows * F,
       [&] {
         return gpipe_rt_cpu_gelu_grad_f32(x.data(), g.data(), out.data(),
                                           rows * F);
       }},
      {"matmul q k^T (128 x 64x32x64)", B * H * T * T,
       [&] {
         return gpipe_rt_cpu_matmul_f32(q.data(), qShape, 4, kt.data(), ktShape,
                                        4, 0, 0, sout.data(), sShape, 4);
       }},
      {"matmul p v (128 x 64x64x32)", B * H * T * Dh,
       [&] {
         return gpipe_rt_cpu_matmul_f32(scores.data(), sShape, 4, q.data(),
                                        vShape, 4, 0, 0, out.data(), qShape, 4);
       }},
      {"softmax (rows of 64)", B * H * T * T,
       [&] {
         return gpipe_rt_cpu_softmax_f32(scores.data(), sShape, 4, 3,
                                         sout.data());
       }},
      {"softmax_grad (rows of 64)", B * H * T * T,
       [&] {
         return gpipe_rt_cpu_softmax_grad_f32(scores.data(), sg.data(), sShape,
                                              4, 3, sout.data());
       }},
      {"layer_norm (rows of 256)", rows * D,
       [&] {
         return gpipe_rt_cpu_layer_norm_f32(
             ln.data(), lnShape, 3, 2, scale.data(), bias.data(), 1e-5f,
             lnOut.data(), mean.data(), rstd.data());
       }},
      {"layer_norm_grad (rows of 256)", rows * D,
       [&] {
         return gpipe_rt_cpu_layer_norm_grad_f32(
             ln.data(), lnShape, 3, 2, scale.data(), lng.data(), 1e-5f,
             lnOut.data(), dscale.data(), dbias.data());
       }},
      {"transpose heads (0 2 1 3)", rows * D,
       [&] {
         return gpipe_rt_cpu_transpose(GPIPE_RT_F32, ln.data(), splitShape, 4,
                                       perm, heads.data());
       }},
      {"transpose keys (0 2 3 1)", rows * D,
       [&] {
         return gpipe_rt_cpu_transpose(GPIPE_RT_F32, ln.data(), splitShape, 4,
                                       keyPerm, heads.data());
       }},
      {"transpose q (0 1 3 2, 64x32)", rows * D,
       [&] {
         return gpipe_rt_cpu_transpose(GPIPE_RT_F32, q.data(), qShape, 4,
                                       lastTwo, heads.data());
       }},
      {"transpose p (0 1 3 2, 64x64)", B * H * T * T,
       [&] {
         return gpipe_rt_cpu_transpose(GPIPE_RT_F32, scores.data(), sShape, 4,
                                       lastTwo, sout.data());
       }},
  };
  // The linear layers' GEMMs: forward (one sgemm each) and the weight
  // gradient (op(a) transposed, K = the 1024 rows, summed in slices).
  auto w1 = randomFloats(D * F, 9), w2 = randomFloats(F * D, 10);
  auto h = randomFloats(rows * F, 11), dw = std::vector<float>(size_t(D * F));
  int64_t xShape[] = {rows, D}, w1Shape[] = {D, F}, hShape[] = {rows, F},
          w2Shape[] = {F, D}, dwShape[] = {D, F};
  cases.push_back({"linear 1024x256 * 256x1024", rows * F,
                   [&] {
                     return gpipe_rt_cpu_linear_f32(ln.data(), xShape, 2,
                                                    w1.data(), w1Shape, nullptr,
                                                    0, out.data(), hShape, 2);
                   },
                   2.0 * double(rows * D * F)});
  cases.push_back({"linear 1024x1024 * 1024x256", rows * D,
                   [&] {
                     return gpipe_rt_cpu_linear_f32(h.data(), hShape, 2,
                                                    w2.data(), w2Shape, nullptr,
                                                    0, lnOut.data(), xShape, 2);
                   },
                   2.0 * double(rows * D * F)});
  cases.push_back({"gemm (1024x256)^T * 1024x1024", D * F,
                   [&] {
                     return gpipe_rt_cpu_gemm_f32(
                         ln.data(), xShape, h.data(), hShape, nullptr, nullptr,
                         0, 1.0f, 0.0f, 1, 0, dw.data(), dwShape);
                   },
                   2.0 * double(rows * D * F)});

  // The fused attention at the same shapes (a causal bias), and at the
  // small GPT's (batch 8, 4 heads, T 32, heads of 16): compare with the
  // matmuls and softmaxes above, which it replaces.
  std::vector<float> causal(size_t(T * T));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < T; ++j)
      causal[size_t(t * T + j)] =
          j > t ? -std::numeric_limits<float>::infinity() : 0.0f;
  int64_t causalShape[] = {T, T};
  auto dq = std::vector<float>(q.size()), dk = std::vector<float>(q.size()),
       dv = std::vector<float>(q.size());
  // Per score: q.k and p v (2 x 2 x Dh) forward; the backward recomputes
  // q.k, then dp, dq, dk and dv (5 x 2 x Dh).
  double scoresBig = double(B * H * T * T);
  cases.push_back({"attention (128 x 64x64, Dh 32)", B * H * T * Dh,
                   [&] {
                     return gpipe_rt_cpu_attention_f32(
                         q.data(), kt.data(), scores.data(), qShape, 4, T, Dh,
                         causal.data(), causalShape, 2, 0.17f, out.data());
                   },
                   scoresBig * 4 * Dh});
  cases.push_back({"attention_grad (same)", B * H * T * Dh,
                   [&] {
                     return gpipe_rt_cpu_attention_grad_f32(
                         q.data(), kt.data(), scores.data(), qShape, 4, T, Dh,
                         causal.data(), causalShape, 2, 0.17f, sg.data(),
                         dq.data(), dk.data(), dv.data());
                   },
                   scoresBig * 10 * Dh});
  const int64_t sb = 8, sh = 4, st = 32, sd = 16;
  int64_t smallShape[] = {sb, sh, st, sd}, smallCausalShape[] = {st, st};
  std::vector<float> smallCausal(size_t(st * st));
  for (int64_t t = 0; t < st; ++t)
    for (int64_t j = 0; j < st; ++j)
      smallCausal[size_t(t * st + j)] =
          j > t ? -std::numeric_limits<float>::infinity() : 0.0f;
  double scoresSmall = double(sb * sh * st * st);
  cases.push_back({"attention (32 x 32x32, Dh 16)", sb * sh * st * sd,
                   [&] {
                     return gpipe_rt_cpu_attention_f32(
                         q.data(), kt.data(), scores.data(), smallShape, 4, st,
                         sd, smallCausal.data(), smallCausalShape, 2, 0.25f,
                         out.data());
                   },
                   scoresSmall * 4 * sd});
  cases.push_back({"attention_grad (same)", sb * sh * st * sd,
                   [&] {
                     return gpipe_rt_cpu_attention_grad_f32(
                         q.data(), kt.data(), scores.data(), smallShape, 4, st,
                         sd, smallCausal.data(), smallCausalShape, 2, 0.25f,
                         sg.data(), dq.data(), dk.data(), dv.data());
                   },
                   scoresSmall * 10 * sd});
  int64_t smallScoresShape[] = {sb, sh, st, st},
          smallKtShape[] = {sb, sh, sd, st};
  cases.push_back({"matmul q k^T (32 x 32x16x32)", sb * sh * st * st,
                   [&] {
                     return gpipe_rt_cpu_matmul_f32(
                         q.data(), smallShape, 4, kt.data(), smallKtShape, 4, 0,
                         0, sout.data(), smallScoresShape, 4);
                   },
                   scoresSmall * 2 * sd});
  cases.push_back({"softmax (rows of 32)", sb * sh * st * st, [&] {
                     return gpipe_rt_cpu_softmax_f32(
                         scores.data(), smallScoresShape, 4, 3, sout.data());
                   }});

  std::printf("%-32s %12s %12s %10s %10s %8s\n", "kernel", "1 thr us",
              (std::to_string(cores) + " thr us").c_str(), "1 thr ns/el",
              "N thr ns/el", "speedup");
  for (const Case &c : cases) {
    secondsOf(c, 1);
    secondsOf(c, cores);
    std::vector<double> one, many;
    for (int i = 0; i < opts->steps; ++i) {
      one.push_back(secondsOf(c, 1));
      many.push_back(secondsOf(c, cores));
    }
    double a = bench::median(one), b = bench::median(many);
    std::printf("%-32s %12.1f %12.1f %10.2f %10.2f %7.2fx", c.name, a * 1e6,
                b * 1e6, a * 1e9 / double(c.elements),
                b * 1e9 / double(c.elements), a / b);
    if (c.flops > 0)
      std::printf("   GFLOP/s %.1f and %.1f", c.flops / a * 1e-9,
                  c.flops / b * 1e-9);
    std::printf("\n");
  }
  gpipe_rt_cpu_set_kernel_threads(1);
  return 0;
}
