//===- AttentionKernels.cpp - CPU fused attention --------------*- C++ -*-===//
//
// nn.attention and its gradient on the CPU: softmax(scale * q k^T + bias) v
// per leading index (batch and heads) and query row, without the T x S
// matrix of scores or probabilities in memory. A row's scores live in a
// thread-local buffer of S floats; the backward recomputes a row's
// probabilities with the forward's code (as FlashAttention does) instead of
// reading them back.
//
// Each leading index is one unit of work: its rows are computed in order
// and its key and value gradients summed over the rows in order, so the
// bits depend on neither the thread count nor the micro-batch it runs in.
// The inner loops run along one row of a transposed copy of k (or v) with
// an accumulator per key, which the compiler vectorizes without reordering
// any sum.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/ScalarMath.h"

#include "CPU/CPUInternal.h"
#include "CPU/Parallel.h"
#include "Common/KernelArgs.h"

#include <algorithm>
#include <limits>
#include <vector>

using namespace gpipe::rt;
using namespace gpipe::rt::args;

namespace {

/// `count` floats of this thread's scratch `slot`, only ever grown: after
/// the first steps the kernels allocate nothing.
float *scratch(int slot, int64_t count) {
  thread_local std::vector<float> buffers[4];
  std::vector<float> &buffer = buffers[slot];
  if (buffer.size() < size_t(count))
    buffer.resize(size_t(count));
  return buffer.data();
}

/// `dst` [cols, rows] = `src` [rows, cols] transposed.
void transpose(const float *src, int64_t rows, int64_t cols, float *dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[c * rows + r] = src[r * cols + c];
}

/// One leading index's operands and shapes.
struct Head {
  const float *q, *k, *v, *bias;
  int64_t rows, depth, keys, valueDim;
  int64_t biasRowStride, biasKeyStride;
  float scale;
  /// k transposed, [D, S].
  const float *kT;
};

/// Row `t`'s probabilities into `p` [S]: the scores summed over D in
/// order, scaled, biased, then nn.softmax's kernel (max, e^(x - max), the
/// sum in double, one division each).
GPIPE_RT_CPU_CLONES void rowProbabilities(const Head &h, int64_t t,
                                          float *__restrict p) {
  const int64_t keys = h.keys, depth = h.depth;
  std::fill(p, p + keys, 0.0f);
  const float *qt = h.q + t * depth;
  for (int64_t d = 0; d < depth; ++d) {
    float qd = qt[d];
    const float *__restrict kd = h.kT + d * keys;
    for (int64_t s = 0; s < keys; ++s)
      p[s] += qd * kd[s];
  }
  const float scale = h.scale;
  if (h.bias) {
    const float *b = h.bias + t * h.biasRowStride;
    const int64_t bs = h.biasKeyStride;
    for (int64_t s = 0; s < keys; ++s)
      p[s] = p[s] * scale + b[s * bs];
  } else {
    for (int64_t s = 0; s < keys; ++s)
      p[s] = p[s] * scale;
  }
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t s = 0; s < keys; ++s)
    m = p[s] > m ? p[s] : m;
  for (int64_t s = 0; s < keys; ++s)
    p[s] = math::expNonPositivef(p[s] - m);
  double sum = 0.0;
  for (int64_t s = 0; s < keys; ++s)
    sum += double(p[s]);
  float total = float(sum);
  for (int64_t s = 0; s < keys; ++s)
    p[s] = p[s] / total;
}

/// The forward of one leading index: out [T, E].
GPIPE_RT_CPU_CLONES void attentionHead(const Head &h, float *__restrict out) {
  const int64_t keys = h.keys, valueDim = h.valueDim;
  float *p = scratch(1, keys);
  for (int64_t t = 0; t < h.rows; ++t) {
    rowProbabilities(h, t, p);
    float *__restrict o = out + t * valueDim;
    std::fill(o, o + valueDim, 0.0f);
    for (int64_t s = 0; s < keys; ++s) {
      float ps = p[s];
      const float *__restrict vs = h.v + s * valueDim;
      for (int64_t e = 0; e < valueDim; ++e)
        o[e] += ps * vs[e];
    }
  }
}

/// The backward of one leading index: dq [T, D], dk [S, D], dv [S, E] from
/// the output's gradient g [T, E].
GPIPE_RT_CPU_CLONES void attentionGradHead(const Head &h,
                                           const float *__restrict g,
                                           float *__restrict dq,
                                           float *__restrict dk,
                                           float *__restrict dv) {
  const int64_t keys = h.keys, depth = h.depth, valueDim = h.valueDim;
  float *vT = scratch(2, valueDim * keys);
  transpose(h.v, keys, valueDim, vT);
  float *p = scratch(1, keys);
  float *ds = scratch(3, keys);
  std::fill(dk, dk + keys * depth, 0.0f);
  std::fill(dv, dv + keys * valueDim, 0.0f);
  for (int64_t t = 0; t < h.rows; ++t) {
    rowProbabilities(h, t, p);
    const float *gt = g + t * valueDim;
    // dp[s] = g_t . v_s, into ds.
    std::fill(ds, ds + keys, 0.0f);
    for (int64_t e = 0; e < valueDim; ++e) {
      float ge = gt[e];
      const float *__restrict ve = vT + e * keys;
      for (int64_t s = 0; s < keys; ++s)
        ds[s] += ge * ve[s];
    }
    double dot = 0.0;
    for (int64_t s = 0; s < keys; ++s)
      dot += double(p[s]) * double(ds[s]);
    float rowDot = float(dot);
    for (int64_t s = 0; s < keys; ++s)
      ds[s] = p[s] * (ds[s] - rowDot);
    // dq_t = scale * sum_s ds[s] k_s.
    float *__restrict dqt = dq + t * depth;
    std::fill(dqt, dqt + depth, 0.0f);
    for (int64_t s = 0; s < keys; ++s) {
      float c = ds[s];
      const float *__restrict ks = h.k + s * depth;
      for (int64_t d = 0; d < depth; ++d)
        dqt[d] += c * ks[d];
    }
    for (int64_t d = 0; d < depth; ++d)
      dqt[d] = dqt[d] * h.scale;
    // dk_s += (scale ds[s]) q_t; dv_s += p[s] g_t.
    const float *__restrict qt = h.q + t * depth;
    for (int64_t s = 0; s < keys; ++s) {
      float c = h.scale * ds[s];
      float *__restrict dks = dk + s * depth;
      for (int64_t d = 0; d < depth; ++d)
        dks[d] += c * qt[d];
      float ps = p[s];
      float *__restrict dvs = dv + s * valueDim;
      for (int64_t e = 0; e < valueDim; ++e)
        dvs[e] += ps * gt[e];
    }
  }
}

/// Leading index `n`'s operands; its k transposed into this thread's
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
  float *kT = scratch(0, a.depth * a.keys);
  transpose(h.k, a.keys, a.depth, kT);
  h.kT = kT;
  return h;
}

/// Leading indices per thread's range: about the elementwise kernels'
/// grain of score elements.
int64_t headGrain(const AttentionArgs &a) {
  int64_t perHead = std::max<int64_t>(
      1, a.rows * a.keys * std::max<int64_t>(1, a.depth + a.valueDim) / 8);
  return std::max<int64_t>(1, cpu::kParallelGrain / perHead);
}

} // namespace

extern "C" gpipe_rt_status gpipe_rt_cpu_attention_f32(
    const float *q, const float *k, const float *v, const int64_t *qShape,
    int32_t rank, int64_t keys, int64_t valueDim, const float *bias,
    const int64_t *biasShape, int32_t biasRank, float scale, float *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  AttentionArgs a;
  float *outs[1] = {out};
  GPIPE_RT_TRY(checkAttention(cpu::kernelNamed("attention"), q, k, v, qShape,
                              rank, keys, valueDim, bias, biasShape, biasRank,
                              scale, nullptr, outs, 1, a));
  cpu::parallelFor(a.count, headGrain(a), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      attentionHead(headAt(a, q, k, v, bias, scale, n),
                    out + n * a.rows * a.valueDim);
  });
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_attention_grad_f32(
    const float *q, const float *k, const float *v, const int64_t *qShape,
    int32_t rank, int64_t keys, int64_t valueDim, const float *bias,
    const int64_t *biasShape, int32_t biasRank, float scale, const float *grad,
    float *qGrad, float *kGrad, float *vGrad) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  AttentionArgs a;
  float *outs[3] = {qGrad, kGrad, vGrad};
  GPIPE_RT_TRY(checkAttention(cpu::kernelNamed("attention_grad"), q, k, v,
                              qShape, rank, keys, valueDim, bias, biasShape,
                              biasRank, scale, grad, outs, 3, a));
  cpu::parallelFor(a.count, headGrain(a), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      attentionGradHead(
          headAt(a, q, k, v, bias, scale, n), grad + n * a.rows * a.valueDim,
          qGrad + n * a.rows * a.depth, kGrad + n * a.keys * a.depth,
          vGrad + n * a.keys * a.valueDim);
  });
  return GPIPE_RT_SUCCESS;
}
