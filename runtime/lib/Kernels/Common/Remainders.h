//===- Remainders.h - Remainders and powers, CPU and CUDA -------*- C++ -*-===//
//
// The elementwise remainder and power of binary_f32 and binary_i64,
// written once for the CPU kernels and the CUDA kernels (host and device
// functions), so that both compute the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_KERNELS_COMMON_REMAINDERS_H
#define GPIPE_RUNTIME_KERNELS_COMMON_REMAINDERS_H

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define GPIPE_RT_HOST_DEVICE __host__ __device__
#else
#define GPIPE_RT_HOST_DEVICE
#endif

namespace gpipe::rt::math {

/// a - b * floor(a / b) with the divisor's sign (numpy.remainder's rule):
/// fmod's exact remainder, moved by b where its sign differs from b's; a
/// zero remainder takes b's sign, and an infinite b leaves a of b's sign
/// unchanged and gives b otherwise (a NaN where fmod gives one).
GPIPE_RT_HOST_DEVICE inline float floorRemainder(float a, float b) {
  float r = fmodf(a, b);
  if (r == 0.0f)
    return copysignf(0.0f, b);
  if ((r < 0.0f) != (b < 0.0f))
    r += b;
  return r;
}

/// The remainder of integers with the divisor's sign (b != 0).
GPIPE_RT_HOST_DEVICE inline int64_t integerRemainder(int64_t a, int64_t b) {
  if (b == -1)
    return 0; // INT64_MIN % -1 overflows in C++
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

/// a^b in float as PyTorch's CPU pow computes a scalar exponent
/// (ATen's pow_tensor_scalar special cases): a * a for 2 and a * a * a for
/// 3, a power function otherwise. The squares and cubes of a GPT's
/// tanh GELU (and of its gradient, 3 a^2) then cost a multiply instead of
/// a call of powf (a quarter of a Hugging Face GPT-2's step, measured).
GPIPE_RT_HOST_DEVICE inline float floatPower(float a, float b) {
  if (b == 2.0f)
    return a * a;
  if (b == 3.0f)
    return a * a * a;
  return powf(a, b);
}

/// a^b with two's complement wraparound, by repeated squaring; a negative
/// exponent gives 1 / a^-b truncated toward zero (1 for a = 1, +-1 for
/// a = -1, and 0 otherwise; 0^-b gives 0).
GPIPE_RT_HOST_DEVICE inline int64_t integerPower(int64_t a, int64_t b) {
  if (b < 0)
    return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t result = 1, base = uint64_t(a);
  for (uint64_t e = uint64_t(b); e; e >>= 1) {
    if (e & 1)
      result *= base;
    base *= base;
  }
  return int64_t(result);
}

} // namespace gpipe::rt::math

#undef GPIPE_RT_HOST_DEVICE

#endif // GPIPE_RUNTIME_KERNELS_COMMON_REMAINDERS_H
