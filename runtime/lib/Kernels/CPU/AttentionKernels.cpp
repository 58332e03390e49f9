//===- AttentionKernels.cpp - CPU fused attention --------------*- C++ -*-===//
//
// nn.attention and its gradient on the CPU: softmax(scale * q k^T + bias) v
// per leading index (batch and heads), a block of query rows at a time,
// without the scores or probabilities of the whole batch in memory: a
// block's (at most 64 KiB) lives in thread-local scratch between its two
// products. The backward recomputes a block's probabilities with the
// forward's code (as FlashAttention does) instead of reading them back.
//
// The products are the runtime's checked sgemm (the GEMM choice applies);
// the softmax is nn.softmax's kernel. Each leading index is one unit of
// work: its blocks run in order and its key and value gradients add the
// blocks in order, so the bits depend on neither the thread count nor the
// micro-batch it runs in.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/ScalarMath.h"

#include "CPU/CPUInternal.h"
#include "CPU/Parallel.h"
#include "CPU/Reductions.h"
#include "Common/KernelArgs.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <vector>

using namespace gpipe::rt;
using namespace gpipe::rt::args;

namespace {

/// `dst` [cols, rows] = `src` [rows, cols] transposed.
void transpose(const float *src, int64_t rows, int64_t cols, float *dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[c * rows + r] = src[r * cols + c];
}

/// One leading index's operands and shapes; k transposed ([D, S]: the
/// scores' GEMM then reads both operands as stored, OpenBLAS's fast case
/// at these small shapes).
struct Head {
  const float *q, *k, *v, *bias, *kT;
  int64_t rows, depth, keys, valueDim;
  int64_t biasRowStride, biasKeyStride;
  float scale;
};

/// Query rows per block: a block's scores (rows x S floats) stay within
/// 64 KiB, in the core's cache between the two products.
int64_t rowBlock(const Head &h) {
  return std::clamp<int64_t>(16384 / std::max<int64_t>(h.keys, 1), 1,
                             std::max<int64_t>(h.rows, 1));
}

/// Scale, bias and nn.softmax's kernel (the max, e^(x - max), their sum in
/// double as eight interleaved partial sums, one division each) on each of
/// the `n` score rows at `p`, rows t0.. of the head.
GPIPE_RT_CPU_CLONES void softmaxRows(const Head &h, int64_t t0, int64_t n,
                                     float *p) {
  const int64_t keys = h.keys;
  const float scale = h.scale;
  for (int64_t r = 0; r < n; ++r) {
    float *__restrict x = p + r * keys;
    const float *__restrict b =
        h.bias ? h.bias + (t0 + r) * h.biasRowStride : nullptr;
    if (b && h.biasKeyStride == 1) {
      for (int64_t s = 0; s < keys; ++s)
        x[s] = x[s] * scale + b[s];
    } else if (b) {
      const int64_t bs = h.biasKeyStride;
      for (int64_t s = 0; s < keys; ++s)
        x[s] = x[s] * scale + b[s * bs];
    } else {
      for (int64_t s = 0; s < keys; ++s)
        x[s] = x[s] * scale;
    }
    float m = cpu::maxOf(x, keys);
    // Every key masked out: zeros (as the exported scaled_dot_product_
    // attention's guard makes of the softmax's NaN).
    if (m == -std::numeric_limits<float>::infinity()) {
      std::fill(x, x + keys, 0.0f);
      continue;
    }
    for (int64_t s = 0; s < keys; ++s)
      x[s] = math::expNonPositivef(x[s] - m);
    float total =
        float(cpu::sumMapped(x, keys, [](float v) { return double(v); }));
    for (int64_t s = 0; s < keys; ++s)
      x[s] = x[s] / total;
  }
}

/// The probabilities of rows [t0, t0 + n) into `p` [n, S]: the scores as
/// one GEMM (those rows of q times k^T), then softmaxRows.
gpipe_rt_status blockProbabilities(const Kernel &kernel, const Head &h,
                                   int64_t t0, int64_t n, float *p) {
  GPIPE_RT_TRY(cpu::sgemm(kernel, false, false, n, h.keys, h.depth, 1.0f,
                          h.q + t0 * h.depth, h.depth, h.kT, h.keys, 0.0f, p,
                          h.keys));
  softmaxRows(h, t0, n, p);
  return GPIPE_RT_SUCCESS;
}

/// The forward of one leading index: out [T, E], a block of rows at a time.
gpipe_rt_status attentionHead(const Kernel &kernel, const Head &h, float *out) {
  int64_t block = rowBlock(h);
  float *p = cpu::threadScratch<float, 20>(block * h.keys);
  for (int64_t t0 = 0; t0 < h.rows; t0 += block) {
    int64_t n = std::min(block, h.rows - t0);
    GPIPE_RT_TRY(blockProbabilities(kernel, h, t0, n, p));
    GPIPE_RT_TRY(cpu::sgemm(kernel, false, false, n, h.valueDim, h.keys, 1.0f,
                            p, h.keys, h.v, h.valueDim, 0.0f,
                            out + t0 * h.valueDim, h.valueDim));
  }
  return GPIPE_RT_SUCCESS;
}

/// ds = p * (dp - sum_s p dp) per row of a block (the sum in double, eight
/// partial sums), in place of dp.
GPIPE_RT_CPU_CLONES void scoreGrads(const float *p, float *dp, int64_t n,
                                    int64_t keys) {
  for (int64_t r = 0; r < n; ++r) {
    const float *__restrict pr = p + r * keys;
    float *__restrict d = dp + r * keys;
    float rowDot = float(cpu::sumLanes(
        keys, [&](int64_t s) { return double(pr[s]) * double(d[s]); }));
    for (int64_t s = 0; s < keys; ++s)
      d[s] = pr[s] * (d[s] - rowDot);
  }
}

/// x[0, n) *= scale.
GPIPE_RT_CPU_CLONES void scaleAll(float *__restrict x, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = x[i] * scale;
}

/// The backward of one leading index: dq [T, D], dk [S, D], dv [S, E] from
/// the output's gradient g [T, E], a block of rows at a time (the blocks'
/// key and value gradients added in order), the scale applied last.
gpipe_rt_status attentionGradHead(const Kernel &kernel, const Head &h,
                                  const float *g, float *dq, float *dk,
                                  float *dv) {
  const int64_t keys = h.keys, depth = h.depth, valueDim = h.valueDim;
  int64_t block = rowBlock(h);
  float *p = cpu::threadScratch<float, 20>(block * keys);
  float *ds = cpu::threadScratch<float, 21>(block * keys);
  float *vT = cpu::threadScratch<float, 23>(valueDim * keys);
  transpose(h.v, keys, valueDim, vT);
  if (h.rows == 0) {
    std::fill(dk, dk + keys * depth, 0.0f);
    std::fill(dv, dv + keys * valueDim, 0.0f);
  }
  for (int64_t t0 = 0; t0 < h.rows; t0 += block) {
    int64_t n = std::min(block, h.rows - t0);
    float beta = t0 == 0 ? 0.0f : 1.0f;
    GPIPE_RT_TRY(blockProbabilities(kernel, h, t0, n, p));
    // dv += p^T g.
    GPIPE_RT_TRY(cpu::sgemm(kernel, true, false, keys, valueDim, n, 1.0f, p,
                            keys, g + t0 * valueDim, valueDim, beta, dv,
                            valueDim));
    // dp = g v^T, then ds in its place.
    GPIPE_RT_TRY(cpu::sgemm(kernel, false, false, n, keys, valueDim, 1.0f,
                            g + t0 * valueDim, valueDim, vT, keys, 0.0f, ds,
                            keys));
    scoreGrads(p, ds, n, keys);
    // dq = ds k; dk += ds^T q (both scaled below).
    GPIPE_RT_TRY(cpu::sgemm(kernel, false, false, n, depth, keys, 1.0f, ds,
                            keys, h.k, depth, 0.0f, dq + t0 * depth, depth));
    GPIPE_RT_TRY(cpu::sgemm(kernel, true, false, keys, depth, n, 1.0f, ds, keys,
                            h.q + t0 * depth, depth, beta, dk, depth));
  }
  scaleAll(dq, h.rows * depth, h.scale);
  scaleAll(dk, keys * depth, h.scale);
  return GPIPE_RT_SUCCESS;
}

/// Leading index `n`'s operands, its k transposed into this thread's
/// scratch.
Head headAt(const AttentionArgs &a, const float *q, const float *k,
            const float *v, const float *bias, float scale, int64_t n) {
  Head h;
  h.rows = a.rows;
  h.depth = a.depth;
  h.keys = a.keys;
  h.valueDim = a.valueDim;
  h.q = q + n * a.rows * a.depth;
  h.k = k + n * a.keys * a.depth;
  h.v = v + n * a.keys * a.valueDim;
  h.bias = a.hasBias ? bias + a.biasOffset(n) : nullptr;
  h.biasRowStride = a.hasBias ? a.biasRowStride() : 0;
  h.biasKeyStride = a.hasBias ? a.biasKeyStride() : 0;
  h.scale = scale;
  float *kT = cpu::threadScratch<float, 22>(a.depth * a.keys);
  transpose(h.k, a.keys, a.depth, kT);
  h.kT = kT;
  return h;
}

/// Runs `head(n)` for every leading index, split over the kernel threads
/// (about the elementwise kernels' grain of score elements per range);
/// the first failure's status.
template <typename HeadFn>
gpipe_rt_status forEachHead(const AttentionArgs &a, const HeadFn &head) {
  int64_t perHead = std::max<int64_t>(
      1, a.rows * a.keys * std::max<int64_t>(1, a.depth + a.valueDim) / 8);
  int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / perHead);
  std::atomic<int> failed{GPIPE_RT_SUCCESS};
  cpu::parallelFor(a.count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end && failed.load() == GPIPE_RT_SUCCESS; ++n)
      if (gpipe_rt_status s = head(n); s != GPIPE_RT_SUCCESS) {
        int expected = GPIPE_RT_SUCCESS;
        failed.compare_exchange_strong(expected, int(s));
      }
  });
  return gpipe_rt_status(failed.load());
}

} // namespace

extern "C" gpipe_rt_status gpipe_rt_cpu_attention_f32(
    const float *q, const float *k, const float *v, const int64_t *qShape,
    int32_t rank, int64_t keys, int64_t valueDim, const float *bias,
    const int64_t *biasShape, int32_t biasRank, float scale, float *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Kernel kernel = cpu::kernelNamed("attention");
  AttentionArgs a;
  float *outs[1] = {out};
  GPIPE_RT_TRY(checkAttention(kernel, q, k, v, qShape, rank, keys, valueDim,
                              bias, biasShape, biasRank, scale, nullptr, outs,
                              1, a));
  return forEachHead(a, [&](int64_t n) {
    return attentionHead(kernel, headAt(a, q, k, v, bias, scale, n),
                         out + n * a.rows * a.valueDim);
  });
}

extern "C" gpipe_rt_status gpipe_rt_cpu_attention_grad_f32(
    const float *q, const float *k, const float *v, const int64_t *qShape,
    int32_t rank, int64_t keys, int64_t valueDim, const float *bias,
    const int64_t *biasShape, int32_t biasRank, float scale, const float *grad,
    float *qGrad, float *kGrad, float *vGrad) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Kernel kernel = cpu::kernelNamed("attention_grad");
  AttentionArgs a;
  float *outs[3] = {qGrad, kGrad, vGrad};
  GPIPE_RT_TRY(checkAttention(kernel, q, k, v, qShape, rank, keys, valueDim,
                              bias, biasShape, biasRank, scale, grad, outs, 3,
                              a));
  return forEachHead(a, [&](int64_t n) {
    return attentionGradHead(
        kernel, headAt(a, q, k, v, bias, scale, n),
        grad + n * a.rows * a.valueDim, qGrad + n * a.rows * a.depth,
        kGrad + n * a.keys * a.depth, vGrad + n * a.keys * a.valueDim);
  });
}
