//===- ConvKernels.cpp - CPU convolution, pooling, batch norm --*- C++ -*-===//
//
// The CPU backend's kernels over NCHW images: conv2d and its gradient
// (im2col per image and group, then one sgemm), max and average pooling and
// their gradients, batch normalization and its gradient, and the update of
// a batch norm's running statistics. Arguments are validated by the checks
// the CUDA kernels share (Common/KernelArgs.h), failures going to the
// message gpipe_rt_last_error() reads.
//
// Determinism: every sum runs in a fixed order that depends only on the
// image it belongs to, so an image's results are the same bits whatever
// micro-batch it falls in. The forward convolution and the input gradient
// are one sgemm per image and group; the weight and bias gradients add the
// images in order 0, 1, ..., N-1; the batch-norm statistics are double sums
// over images, then positions.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"

#include "CPU/CPUInternal.h"
#include "Common/KernelArgs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace gpipe::rt;
using namespace gpipe::rt::args;

namespace {

//===----------------------------------------------------------------------===//
// im2col and col2im
//===----------------------------------------------------------------------===//

/// Column scratch of at least `count` floats. Thread-local and only ever
/// grown: every rank runs its kernels on its own thread, so after the first
/// steps a convolution allocates nothing. `slot` picks one of two buffers
/// (the gradient needs the input's columns and the columns of its own
/// result at once).
float *scratch(int slot, int64_t count) {
  return slot == 0 ? cpu::threadScratch<float, 10>(size_t(count))
                   : cpu::threadScratch<float, 11>(size_t(count));
}

/// A 1x1 window with unit strides and no padding reads the image itself:
/// its column matrix is the image, no copy needed.
bool isPointwise(const Window2d &a) {
  return a.kh == 1 && a.kw == 1 && a.strideH == 1 && a.strideW == 1 &&
         a.padTop == 0 && a.padLeft == 0 && a.padBottom == 0 &&
         a.padRight == 0 && a.oh == a.h && a.ow == a.w;
}

/// Lays out the windows over `channels` channels of one image (`img`,
/// a.h x a.w each) as a [channels * kh * kw, oh * ow] matrix: row (c, i, j),
/// column (y, x) holds the input at row y * strideH - padTop + i * dilationH
/// and column x * strideW - padLeft + j * dilationW, 0 in the padding.
void im2col(const Window2d &a, const float *img, int64_t channels, float *col) {
  int64_t positions = a.oh * a.ow;
  for (int64_t c = 0; c < channels; ++c) {
    const float *plane = img + c * a.h * a.w;
    for (int64_t i = 0; i < a.kh; ++i) {
      for (int64_t j = 0; j < a.kw; ++j) {
        float *row = col + ((c * a.kh + i) * a.kw + j) * positions;
        for (int64_t y = 0; y < a.oh; ++y) {
          float *dst = row + y * a.ow;
          int64_t r = y * a.strideH - a.padTop + i * a.dilationH;
          if (r < 0 || r >= a.h) {
            std::fill(dst, dst + a.ow, 0.0f);
            continue;
          }
          const float *src = plane + r * a.w;
          for (int64_t x = 0; x < a.ow; ++x) {
            int64_t q = x * a.strideW - a.padLeft + j * a.dilationW;
            dst[x] = q >= 0 && q < a.w ? src[q] : 0.0f;
          }
        }
      }
    }
  }
}

/// The adjoint of im2col: adds every entry of `col` to the image position it
/// was read from (padding entries are dropped). An image element receives
/// its terms in the order of the window taps (i, then j), the order the
/// CUDA col2im sums them in.
void col2imAdd(const Window2d &a, const float *col, int64_t channels,
               float *img) {
  int64_t positions = a.oh * a.ow;
  for (int64_t c = 0; c < channels; ++c) {
    float *plane = img + c * a.h * a.w;
    for (int64_t i = 0; i < a.kh; ++i) {
      for (int64_t j = 0; j < a.kw; ++j) {
        const float *row = col + ((c * a.kh + i) * a.kw + j) * positions;
        for (int64_t y = 0; y < a.oh; ++y) {
          int64_t r = y * a.strideH - a.padTop + i * a.dilationH;
          if (r < 0 || r >= a.h)
            continue;
          const float *src = row + y * a.ow;
          float *dst = plane + r * a.w;
          for (int64_t x = 0; x < a.ow; ++x) {
            int64_t q = x * a.strideW - a.padLeft + j * a.dilationW;
            if (q >= 0 && q < a.w)
              dst[q] += src[x];
          }
        }
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// The flat position in its plane of the input max pooling picks for output
/// (y, x): the window's first largest input in row-major order, a NaN over
/// any number; -1 when the window holds no input position.
int64_t maxPoolArgmax(const Window2d &a, const float *plane, int64_t y,
                      int64_t x) {
  int64_t best = -1;
  float bestValue = 0.0f;
  for (int64_t i = 0; i < a.kh; ++i) {
    int64_t r = y * a.strideH - a.padTop + i * a.dilationH;
    if (r < 0 || r >= a.h)
      continue;
    for (int64_t j = 0; j < a.kw; ++j) {
      int64_t q = x * a.strideW - a.padLeft + j * a.dilationW;
      if (q < 0 || q >= a.w)
        continue;
      float v = plane[r * a.w + q];
      if (best < 0 || v > bestValue ||
          (std::isnan(v) && !std::isnan(bestValue))) {
        best = r * a.w + q;
        bestValue = v;
      }
    }
  }
  return best;
}

} // namespace

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cpu_conv2d_f32(const float *in, const int64_t *inShape,
                        const float *weight, const int64_t *weightShape,
                        const float *bias, const int64_t *strides,
                        const int64_t *pads, const int64_t *dilations,
                        int64_t groups, float *out, const int64_t *outShape) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Kernel kernel = cpu::kernelNamed("conv2d");
  Window2d a;
  GPIPE_RT_TRY(checkConv2d(kernel, in, inShape, weight, weightShape, bias,
                           strides, pads, dilations, groups, out, outShape, a));
  if (a.outCount == 0)
    return GPIPE_RT_SUCCESS;
  int64_t rows = a.groupIn * a.kh * a.kw, positions = a.oh * a.ow;
  bool pointwise = isPointwise(a);
  float *col = pointwise ? nullptr : scratch(0, rows * positions);
  // One [groupOut, rows] x [rows, positions] product per image and group:
  // an image's result never depends on the batch's other images.
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t g = 0; g < a.groups; ++g) {
      const float *img = in + (n * a.c + g * a.groupIn) * a.h * a.w;
      const float *cols = img;
      if (!pointwise) {
        im2col(a, img, a.groupIn, col);
        cols = col;
      }
      float *o = out + (n * a.outC + g * a.groupOut) * positions;
      GPIPE_RT_TRY(cpu::sgemm(kernel, false, false, a.groupOut, positions, rows,
                              1.0f, weight + g * a.groupOut * rows,
                              leadingDim(rows), cols, leadingDim(positions),
                              0.0f, o, leadingDim(positions)));
      if (bias) {
        for (int64_t k = 0; k < a.groupOut; ++k) {
          float b = bias[g * a.groupOut + k];
          float *row = o + k * positions;
          for (int64_t p = 0; p < positions; ++p)
            row[p] = row[p] + b;
        }
      }
    }
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_conv2d_grad_f32(
    const float *in, const int64_t *inShape, const float *weight,
    const int64_t *weightShape, const float *grad, const int64_t *gradShape,
    const int64_t *strides, const int64_t *pads, const int64_t *dilations,
    int64_t groups, float *inputGrad, float *weightGrad, float *biasGrad) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_GEMM);
  Kernel kernel = cpu::kernelNamed("conv2d_grad");
  Window2d a;
  GPIPE_RT_TRY(checkConv2dGrad(kernel, in, inShape, weight, weightShape, grad,
                               gradShape, strides, pads, dilations, groups,
                               inputGrad, weightGrad, biasGrad, a));
  int64_t rows = a.groupIn * a.kh * a.kw, positions = a.oh * a.ow;
  if (biasGrad) {
    for (int64_t o = 0; o < a.outC; ++o) {
      double sum = 0.0;
      for (int64_t n = 0; n < a.n; ++n) {
        const float *g = grad + (n * a.outC + o) * positions;
        for (int64_t p = 0; p < positions; ++p)
          sum += double(g[p]);
      }
      biasGrad[o] = float(sum);
    }
  }
  if (weightGrad && (a.n == 0 || positions == 0))
    std::fill(weightGrad, weightGrad + a.weightCount, 0.0f);
  if (inputGrad)
    std::fill(inputGrad, inputGrad + a.inCount, 0.0f);
  if ((!weightGrad || a.weightCount == 0) && (!inputGrad || a.inCount == 0))
    return GPIPE_RT_SUCCESS;
  if (a.n == 0 || positions == 0)
    return GPIPE_RT_SUCCESS;
  bool pointwise = isPointwise(a);
  float *col = pointwise ? nullptr : scratch(0, rows * positions);
  float *colGrad = pointwise ? nullptr : scratch(1, rows * positions);
  for (int64_t n = 0; n < a.n; ++n) {
    for (int64_t g = 0; g < a.groups; ++g) {
      int64_t imgOffset = (n * a.c + g * a.groupIn) * a.h * a.w;
      const float *dy = grad + (n * a.outC + g * a.groupOut) * positions;
      // weightGrad[group] (+)= dy [groupOut, positions] x cols^T, the images
      // added in order.
      if (weightGrad && a.weightCount > 0) {
        const float *cols = in + imgOffset;
        if (!pointwise) {
          im2col(a, in + imgOffset, a.groupIn, col);
          cols = col;
        }
        GPIPE_RT_TRY(
            cpu::sgemm(kernel, false, true, a.groupOut, rows, positions, 1.0f,
                       dy, leadingDim(positions), cols, leadingDim(positions),
                       n == 0 ? 0.0f : 1.0f, weightGrad + g * a.groupOut * rows,
                       leadingDim(rows)));
      }
      // inputGrad[image, group] = col2im(weight[group]^T x dy).
      if (inputGrad && a.inCount > 0) {
        float *target = pointwise ? inputGrad + imgOffset : colGrad;
        GPIPE_RT_TRY(cpu::sgemm(
            kernel, true, false, rows, positions, a.groupOut, 1.0f,
            weight + g * a.groupOut * rows, leadingDim(rows), dy,
            leadingDim(positions), 0.0f, target, leadingDim(positions)));
        if (!pointwise)
          col2imAdd(a, colGrad, a.groupIn, inputGrad + imgOffset);
      }
    }
  }
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status
gpipe_rt_cpu_max_pool2d_f32(const float *in, const int64_t *inShape,
                            const int64_t *kernelDims, const int64_t *strides,
                            const int64_t *pads, const int64_t *dilations,
                            float *out, const int64_t *outShape) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  Window2d a;
  GPIPE_RT_TRY(checkMaxPool2d(cpu::kernelNamed("max_pool2d"), in, inShape,
                              kernelDims, strides, pads, dilations, out,
                              outShape, a));
  if (a.outCount == 0)
    return GPIPE_RT_SUCCESS;
  for (int64_t p = 0; p < a.n * a.c; ++p) {
    const float *plane = in + p * a.h * a.w;
    float *o = out + p * a.oh * a.ow;
    for (int64_t y = 0; y < a.oh; ++y)
      for (int64_t x = 0; x < a.ow; ++x) {
        int64_t at = maxPoolArgmax(a, plane, y, x);
        o[y * a.ow + x] =
            at < 0 ? -std::numeric_limits<float>::infinity() : plane[at];
      }
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_max_pool2d_grad_f32(
    const float *in, const int64_t *inShape, const float *grad,
    const int64_t *gradShape, const int64_t *kernelDims, const int64_t *strides,
    const int64_t *pads, const int64_t *dilations, float *inputGrad) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  Window2d a;
  GPIPE_RT_TRY(checkMaxPool2dGrad(cpu::kernelNamed("max_pool2d_grad"), in,
                                  inShape, grad, gradShape, kernelDims, strides,
                                  pads, dilations, inputGrad, a));
  if (a.inCount == 0)
    return GPIPE_RT_SUCCESS;
  std::fill(inputGrad, inputGrad + a.inCount, 0.0f);
  for (int64_t p = 0; p < a.n * a.c; ++p) {
    const float *plane = in + p * a.h * a.w;
    const float *dy = grad + p * a.oh * a.ow;
    float *dx = inputGrad + p * a.h * a.w;
    for (int64_t y = 0; y < a.oh; ++y)
      for (int64_t x = 0; x < a.ow; ++x) {
        int64_t at = maxPoolArgmax(a, plane, y, x);
        if (at >= 0)
          dx[at] += dy[y * a.ow + x];
      }
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status
gpipe_rt_cpu_avg_pool2d_f32(const float *in, const int64_t *inShape,
                            const int64_t *kernelDims, const int64_t *strides,
                            const int64_t *pads, int32_t countIncludePad,
                            float *out, const int64_t *outShape) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  Window2d a;
  GPIPE_RT_TRY(checkAvgPool2d(cpu::kernelNamed("avg_pool2d"), in, inShape,
                              kernelDims, strides, pads, out, outShape, a));
  if (a.outCount == 0)
    return GPIPE_RT_SUCCESS;
  for (int64_t p = 0; p < a.n * a.c; ++p) {
    const float *plane = in + p * a.h * a.w;
    float *o = out + p * a.oh * a.ow;
    for (int64_t y = 0; y < a.oh; ++y)
      for (int64_t x = 0; x < a.ow; ++x) {
        double sum = 0.0;
        for (int64_t i = 0; i < a.kh; ++i) {
          int64_t r = y * a.strideH - a.padTop + i;
          if (r < 0 || r >= a.h)
            continue;
          for (int64_t j = 0; j < a.kw; ++j) {
            int64_t q = x * a.strideW - a.padLeft + j;
            if (q >= 0 && q < a.w)
              sum += double(plane[r * a.w + q]);
          }
        }
        // A window without input positions (only possible without
        // countIncludePad) divides 0 by 0: NaN.
        int64_t divisor = avgPoolDivisor(a, y, x, countIncludePad != 0);
        o[y * a.ow + x] = float(sum / double(divisor));
      }
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_avg_pool2d_grad_f32(
    const float *grad, const int64_t *gradShape, const int64_t *kernelDims,
    const int64_t *strides, const int64_t *pads, int32_t countIncludePad,
    float *inputGrad, const int64_t *inShape) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  Window2d a;
  GPIPE_RT_TRY(checkAvgPool2dGrad(cpu::kernelNamed("avg_pool2d_grad"), grad,
                                  gradShape, kernelDims, strides, pads,
                                  inputGrad, inShape, a));
  if (a.inCount == 0)
    return GPIPE_RT_SUCCESS;
  std::fill(inputGrad, inputGrad + a.inCount, 0.0f);
  for (int64_t p = 0; p < a.n * a.c; ++p) {
    const float *dy = grad + p * a.oh * a.ow;
    float *dx = inputGrad + p * a.h * a.w;
    for (int64_t y = 0; y < a.oh; ++y)
      for (int64_t x = 0; x < a.ow; ++x) {
        int64_t divisor = avgPoolDivisor(a, y, x, countIncludePad != 0);
        if (divisor == 0)
          continue;
        float g = dy[y * a.ow + x] / float(divisor);
        for (int64_t i = 0; i < a.kh; ++i) {
          int64_t r = y * a.strideH - a.padTop + i;
          if (r < 0 || r >= a.h)
            continue;
          for (int64_t j = 0; j < a.kw; ++j) {
            int64_t q = x * a.strideW - a.padLeft + j;
            if (q >= 0 && q < a.w)
              dx[r * a.w + q] += g;
          }
        }
      }
  }
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

namespace {

/// Per channel: the mean and the biased variance of its m = n * inner
/// values, each a double sum over images, then positions.
void channelMoments(const ChannelSplit &s, const float *x, int64_t c,
                    double &mean, double &var) {
  double m = double(s.n * s.inner);
  double sum = 0.0;
  for (int64_t n = 0; n < s.n; ++n) {
    const float *v = x + (n * s.c + c) * s.inner;
    for (int64_t p = 0; p < s.inner; ++p)
      sum += double(v[p]);
  }
  mean = sum / m;
  double squares = 0.0;
  for (int64_t n = 0; n < s.n; ++n) {
    const float *v = x + (n * s.c + c) * s.inner;
    for (int64_t p = 0; p < s.inner; ++p) {
      double d = double(v[p]) - mean;
      squares += d * d;
    }
  }
  var = squares / m;
}

} // namespace

extern "C" gpipe_rt_status
gpipe_rt_cpu_batch_norm_f32(const float *in, const int64_t *shape, int32_t rank,
                            const float *scale, const float *bias,
                            float epsilon, float *out) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  ChannelSplit s;
  GPIPE_RT_TRY(checkBatchNorm(cpu::kernelNamed("batch_norm"), in, shape, rank,
                              scale, bias, epsilon, out, s));
  if (s.count == 0)
    return GPIPE_RT_SUCCESS;
  for (int64_t c = 0; c < s.c; ++c) {
    double mean, var;
    channelMoments(s, in, c, mean, var);
    double rstd = 1.0 / std::sqrt(var + double(epsilon));
    double k = double(scale[c]), b = double(bias[c]);
    for (int64_t n = 0; n < s.n; ++n) {
      const float *x = in + (n * s.c + c) * s.inner;
      float *y = out + (n * s.c + c) * s.inner;
      for (int64_t p = 0; p < s.inner; ++p)
        y[p] = float((double(x[p]) - mean) * rstd * k + b);
    }
  }
  return GPIPE_RT_SUCCESS;
}

extern "C" gpipe_rt_status gpipe_rt_cpu_batch_norm_grad_f32(
    const float *in, const int64_t *shape, int32_t rank, const float *scale,
    const float *grad, float epsilon, const float *shift, float *inputGrad,
    float *scaleGrad, float *biasGrad, float *meanStat, float *varStat) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_NORMALIZATION);
  ChannelSplit s;
  GPIPE_RT_TRY(checkBatchNormGrad(
      cpu::kernelNamed("batch_norm_grad"), in, shape, rank, scale, grad,
      epsilon, shift, inputGrad, scaleGrad, biasGrad, meanStat, varStat, s));
  double m = double(s.n * s.inner);
  for (int64_t c = 0; c < s.c; ++c) {
    if (s.count == 0) {
      // Sums over no values.
      for (float *r : {scaleGrad, biasGrad, meanStat, varStat})
        if (r)
          r[c] = 0.0f;
      continue;
    }
    if (inputGrad || scaleGrad || biasGrad) {
      double mean, var;
      channelMoments(s, in, c, mean, var);
      double rstd = 1.0 / std::sqrt(var + double(epsilon));
      double sumDy = 0.0, sumDyXhat = 0.0;
      for (int64_t n = 0; n < s.n; ++n) {
        const float *x = in + (n * s.c + c) * s.inner;
        const float *dy = grad + (n * s.c + c) * s.inner;
        for (int64_t p = 0; p < s.inner; ++p) {
          sumDy += double(dy[p]);
          sumDyXhat += double(dy[p]) * ((double(x[p]) - mean) * rstd);
        }
      }
      if (inputGrad) {
        double k = double(scale[c]) * rstd;
        double meanDy = sumDy / m, meanDyXhat = sumDyXhat / m;
        for (int64_t n = 0; n < s.n; ++n) {
          const float *x = in + (n * s.c + c) * s.inner;
          const float *dy = grad + (n * s.c + c) * s.inner;
          float *dx = inputGrad + (n * s.c + c) * s.inner;
          for (int64_t p = 0; p < s.inner; ++p) {
            double xhat = (double(x[p]) - mean) * rstd;
            dx[p] = float(k * (double(dy[p]) - meanDy - xhat * meanDyXhat));
          }
        }
      }
      if (scaleGrad)
        scaleGrad[c] = float(sumDyXhat);
      if (biasGrad)
        biasGrad[c] = float(sumDy);
    }
    if (meanStat || varStat) {
      double center = double(shift[c]);
      double sum = 0.0, squares = 0.0;
      for (int64_t n = 0; n < s.n; ++n) {
        const float *x = in + (n * s.c + c) * s.inner;
        for (int64_t p = 0; p < s.inner; ++p) {
          double d = double(x[p]) - center;
          sum += d;
          squares += d * d;
        }
      }
      if (meanStat)
        meanStat[c] = float(sum);
      if (varStat)
        varStat[c] = float(squares);
    }
  }
  return GPIPE_RT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Running statistics
//===----------------------------------------------------------------------===//

extern "C" gpipe_rt_status gpipe_rt_cpu_running_stats_update_f32(
    float *runningMean, float *runningVar, const float *meanStat,
    const float *varStat, int64_t channels, int64_t count, double momentum) {
  cpu::KernelTimer timer(GPIPE_RT_KERNEL_CLASS_OPTIMIZER);
  GPIPE_RT_TRY(checkRunningStatsUpdate(cpu::kernelNamed("running_stats_update"),
                                       runningMean, runningVar, meanStat,
                                       varStat, channels, count, momentum));
  double n = double(count);
  for (int64_t c = 0; c < channels; ++c) {
    double d = double(meanStat[c]) / n;
    double var = double(varStat[c]) / n - d * d;
    double mean = double(runningMean[c]);
    runningMean[c] = float((1.0 - momentum) * mean + momentum * (mean + d));
    runningVar[c] = float((1.0 - momentum) * double(runningVar[c]) +
                          momentum * var * n / (n - 1.0));
  }
  return GPIPE_RT_SUCCESS;
}
