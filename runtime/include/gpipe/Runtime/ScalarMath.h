//===- ScalarMath.h - The float math of the elementwise ops -----*- C++ -*-===//
//
// One definition of the transcendental functions the elementwise nn ops
// compute (exp, erf, tanh, sigmoid, GELU and its gradient), written once as
// templates over a backend that says what add, multiply, compare and select
// are. The CPU kernels instantiate them with ScalarFloat (plain float
// arithmetic, which the C++ compiler vectorizes: there are no branches and
// no library calls), and the compiler instantiates them with a backend that
// emits the same operations as LLVM IR into the loops it fuses. Both
// evaluate the same IEEE operations in the same order, without fused
// multiply-adds (the runtime builds with -ffp-contract=off, the emitted IR
// carries no `contract` flag), so a fused loop computes bitwise what the
// kernels compute, and the interpreter (which calls the kernels) reproduces
// both.
//
// A backend B provides:
//   using Value;                     a float (or a vector of floats)
//   using Mask;                      a comparison's result
//   Value lit(float) const;          a constant
//   Value add, sub, mul, div(Value, Value) const;
//   Value neg(Value) const;
//   Value sqrt(Value) const;          correctly rounded
//   Mask lt(Value, Value) const;     ordered a < b (false with a NaN)
//   Mask gt(Value, Value) const;     ordered a > b
//   Mask isNan(Value) const;
//   Value select(Mask, Value a, Value b) const;   m ? a : b
//   Value exp2i(Value n) const;      2^n for an integral n in [-126, 127],
//                                    built from its bits
//
// Accuracy (float against long double, measured in
// runtime/unittests/ScalarMathTest.cpp): exp within 2 ulp, erf and tanh
// within 3 ulp, GELU's relative error within 8 ulp on [-1, 1] and 24 on
// [-3, 12], and the special values of the C library (NaN in, NaN out;
// exp(-inf) = 0, exp(inf) = inf; erf and tanh saturate to +-1).
//
// What bounds these loops is latency: each element is one long chain of
// dependent operations, and a core keeps only a couple of vector iterations
// in flight. So the polynomials are evaluated by Estrin's scheme (shorter
// chains, the same number of operations), and GELU takes Phi from erfc
// alone instead of computing erf's two branches and selecting one.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_SCALARMATH_H
#define GPIPE_RUNTIME_SCALARMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>

// Every function is inlined into its caller's loop, which the compiler
// then vectorizes (a call in the loop would stop it).
#if defined(__GNUC__) || defined(__clang__)
#define GPIPE_RT_MATH_INLINE inline __attribute__((always_inline))
#else
#define GPIPE_RT_MATH_INLINE inline
#endif

namespace gpipe::rt::math {

/// Plain float arithmetic: what the CPU kernels compute.
struct ScalarFloat {
  using Value = float;
  using Mask = bool;
  GPIPE_RT_MATH_INLINE float lit(float c) const { return c; }
  GPIPE_RT_MATH_INLINE float add(float a, float b) const { return a + b; }
  GPIPE_RT_MATH_INLINE float sub(float a, float b) const { return a - b; }
  GPIPE_RT_MATH_INLINE float mul(float a, float b) const { return a * b; }
  GPIPE_RT_MATH_INLINE float div(float a, float b) const { return a / b; }
  GPIPE_RT_MATH_INLINE float neg(float a) const { return -a; }
  GPIPE_RT_MATH_INLINE float sqrt(float a) const { return std::sqrt(a); }
  GPIPE_RT_MATH_INLINE bool lt(float a, float b) const { return a < b; }
  GPIPE_RT_MATH_INLINE bool gt(float a, float b) const { return a > b; }
  GPIPE_RT_MATH_INLINE bool isNan(float a) const { return a != a; }
  GPIPE_RT_MATH_INLINE float select(bool m, float a, float b) const {
    return m ? a : b;
  }
  GPIPE_RT_MATH_INLINE float exp2i(float n) const {
    int32_t bits = (int32_t(n) + 127) << 23;
    float out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
  }
};

/// Rounds |v| < 2^22 to the nearest integer (ties to even) in the default
/// rounding mode: adding 1.5 x 2^23 leaves no fraction bits.
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value roundToInt(const B &b,
                                                  typename B::Value v) {
  return b.sub(b.add(v, b.lit(12582912.0f)), b.lit(12582912.0f));
}

/// Cephes' expf core (S. L. Moshier, Cephes Math Library, 1984-2000) for a
/// finite x: x = n ln 2 + r with ln 2 in two parts (0.693359375 exact,
/// -2.12194440e-4), |r| <= ln 2 / 2; returns e^r = 1 + r + r^2 P(r), P of
/// degree 5, and sets `n`. e^x is the result times 2^n. P is evaluated by
/// Estrin's scheme (pairs of terms, then pairs of pairs in r^2 and r^4:
/// about half of Horner's chain of dependent operations, which is what
/// bounds these loops).
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value
expReduced(const B &b, typename B::Value x, typename B::Value &n) {
  using V = typename B::Value;
  n = roundToInt(b, b.mul(x, b.lit(1.44269504088896341f)));
  V r = b.sub(b.sub(x, b.mul(n, b.lit(0.693359375f))),
              b.mul(n, b.lit(-2.12194440e-4f)));
  V r2 = b.mul(r, r);
  V p01 = b.add(b.lit(5.0000001201e-1f), b.mul(b.lit(1.6666665459e-1f), r));
  V p23 = b.add(b.lit(4.1665795894e-2f), b.mul(b.lit(8.3334519073e-3f), r));
  V p45 = b.add(b.lit(1.3981999507e-3f), b.mul(b.lit(1.9875691500e-4f), r));
  V p = b.add(b.add(p01, b.mul(p23, r2)), b.mul(p45, b.mul(r2, r2)));
  return b.add(b.add(b.mul(p, r2), r), b.lit(1.0f));
}

/// e^x: expReduced's e^r times 2^n, applied in two halves so that n = 128
/// (x just below the overflow) and the denormal results stay
/// representable.
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value exp(const B &b, typename B::Value x) {
  using V = typename B::Value;
  const float kMax = 88.72283935546875f;   // e^kMax just below FLT_MAX
  const float kMin = -103.97207641601562f; // e^kMin: half the least denormal
  // Finite whatever x is (NaN computes at 0 and is put back at the end):
  // converting NaN to an integer is undefined.
  V clamped =
      b.select(b.isNan(x), b.lit(0.0f),
               b.select(b.gt(x, b.lit(kMax)), b.lit(kMax),
                        b.select(b.lt(x, b.lit(kMin)), b.lit(kMin), x)));
  V n;
  V y = expReduced(b, clamped, n);
  // n in [-150, 128]: halves in [-75, 64], each a normal power of two; the
  // second product rounds once, to a denormal below FLT_MIN.
  V half = roundToInt(b, b.mul(n, b.lit(0.5f)));
  half = b.select(b.gt(half, b.mul(n, b.lit(0.5f))), b.sub(half, b.lit(1.0f)),
                  half); // floor(n / 2)
  y = b.mul(b.mul(y, b.exp2i(half)), b.exp2i(b.sub(n, half)));
  y = b.select(b.gt(x, b.lit(kMax)), b.lit(__builtin_huge_valf()), y);
  y = b.select(b.lt(x, b.lit(kMin)), b.lit(0.0f), y);
  return b.select(b.isNan(x), x, y);
}

/// e^x for the arguments that are never large: the softmax's x - max, the
/// exponent of erfc and the GELU gradient's density (any x <= 88
/// computes). exp's reduction and polynomial without its overflow
/// and denormal handling: 2^n is applied in one multiplication, which rounds
/// as exp's two halves do while 2^n is a normal float, so the bits are
/// exp's down to x = -87.5 (e^x ~ 1e-38); below, 0 where exp gives
/// denormals. About two thirds of exp's instructions.
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value expNonPositive(const B &b,
                                                      typename B::Value x) {
  using V = typename B::Value;
  const float kLow = -87.5f; // n = -126: 2^n the least normal power
  auto tiny = b.lt(x, b.lit(kLow));
  // NaN computes at 0 and is put back at the end (converting NaN to an
  // integer is undefined).
  V clamped = b.select(b.isNan(x), b.lit(0.0f), b.select(tiny, b.lit(kLow), x));
  V n;
  V y = expReduced(b, clamped, n);
  y = b.select(tiny, b.lit(0.0f), b.mul(y, b.exp2i(n)));
  return b.select(b.isNan(x), x, y);
}

/// erfc(z) for z >= 0 (or NaN): t exp(-z^2 + Q(t)), t = 1 / (1 + z / 2), Q
/// of degree 9: the Chebyshev fit of Numerical Recipes' erfcc (Press et
/// al., 2nd ed., 6.2; fractional error below 1.2e-7 for every z >= 0),
/// evaluated by Estrin's scheme. 0 for z = inf.
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value erfcNonNegative(const B &b,
                                                       typename B::Value z) {
  using V = typename B::Value;
  V t = b.div(b.lit(1.0f), b.add(b.lit(1.0f), b.mul(b.lit(0.5f), z)));
  V t2 = b.mul(t, t);
  V t4 = b.mul(t2, t2);
  V q01 = b.add(b.lit(-1.26551223f), b.mul(b.lit(1.00002368f), t));
  V q23 = b.add(b.lit(0.37409196f), b.mul(b.lit(0.09678418f), t));
  V q45 = b.add(b.lit(-0.18628806f), b.mul(b.lit(0.27886807f), t));
  V q67 = b.add(b.lit(-1.13520398f), b.mul(b.lit(1.48851587f), t));
  V q89 = b.add(b.lit(-0.82215223f), b.mul(b.lit(0.17087277f), t));
  V q03 = b.add(q01, b.mul(q23, t2));
  V q47 = b.add(q45, b.mul(q67, t2));
  V q = b.add(b.add(q03, b.mul(q47, t4)), b.mul(q89, b.mul(t4, t4)));
  return b.mul(t, expNonPositive(b, b.sub(q, b.mul(z, z))));
}

/// erf(x): below |x| = 0.75 its Taylor series, 2/sqrt(pi) sum_n (-1)^n
/// x^(2n+1) / (n! (2n+1)) to n = 8 (Horner in x^2; the first term left out
/// is below 1e-9 of erf there); above, 1 - erfc(|x|) with the sign of x.
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value erf(const B &b, typename B::Value x) {
  using V = typename B::Value;
  V x2 = b.mul(x, x);
  V p = b.lit(1.646211437e-06f);
  p = b.add(b.mul(p, x2), b.lit(-1.492565036e-05f));
  p = b.add(b.mul(p, x2), b.lit(1.205533298e-04f));
  p = b.add(b.mul(p, x2), b.lit(-8.548327023e-04f));
  p = b.add(b.mul(p, x2), b.lit(5.223977625e-03f));
  p = b.add(b.mul(p, x2), b.lit(-2.686617065e-02f));
  p = b.add(b.mul(p, x2), b.lit(1.128379167e-01f));
  p = b.add(b.mul(p, x2), b.lit(-3.761263890e-01f));
  p = b.add(b.mul(p, x2), b.lit(1.128379167e+00f));
  V small = b.mul(p, x);
  V z = b.select(b.lt(x, b.lit(0.0f)), b.neg(x), x);
  V large = b.sub(b.lit(1.0f), erfcNonNegative(b, z));
  large = b.select(b.lt(x, b.lit(0.0f)), b.neg(large), large);
  V out = b.select(b.lt(z, b.lit(0.75f)), small, large);
  return b.select(b.isNan(x), x, out);
}

/// Phi(x) = (1 + erf(x / sqrt 2)) / 2, the standard normal distribution
/// function, from erfc alone: erfc(|x| / sqrt 2) / 2 below 0 (no
/// cancellation in the left tail) and 1 - erfc(x / sqrt 2) / 2 above. Where
/// erf's Taylor branch would serve (|x| / sqrt 2 < 0.75), Phi is near 1/2
/// and erfc's fractional error of 1.2e-7 is about one ulp of it, so GELU
/// needs no second branch.
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value normalCdf(const B &b,
                                                 typename B::Value x) {
  using V = typename B::Value;
  V z = b.mul(b.select(b.lt(x, b.lit(0.0f)), b.neg(x), x),
              b.lit(0.70710678118654752f));
  V half = b.mul(b.lit(0.5f), erfcNonNegative(b, z));
  return b.select(b.lt(x, b.lit(0.0f)), half, b.sub(b.lit(1.0f), half));
}

/// tanh(x), after Cephes' tanhf: x + x^3 P(x^2) for |x| < 0.625, else
/// sign(x) (1 - 2 / (e^{2|x|} + 1)).
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value tanh(const B &b, typename B::Value x) {
  using V = typename B::Value;
  V negative = b.neg(x);
  V a = b.select(b.lt(x, b.lit(0.0f)), negative, x); // |x| (NaN stays)
  V z = b.mul(x, x);
  V p = b.lit(-5.70498872745e-3f);
  p = b.add(b.mul(p, z), b.lit(2.06390887954e-2f));
  p = b.add(b.mul(p, z), b.lit(-5.37397155531e-2f));
  p = b.add(b.mul(p, z), b.lit(1.33314422036e-1f));
  p = b.add(b.mul(p, z), b.lit(-3.33332819422e-1f));
  V small = b.add(b.mul(b.mul(p, z), x), x);
  V e = exp(b, b.add(a, a));
  V large = b.sub(b.lit(1.0f), b.div(b.lit(2.0f), b.add(e, b.lit(1.0f))));
  large = b.select(b.lt(x, b.lit(0.0f)), b.neg(large), large);
  V out = b.select(b.lt(a, b.lit(0.625f)), small, large);
  // +-0 (and NaN) is itself: the polynomial's x + (+0) would lose -0's sign.
  return b.select(b.isNan(x), x,
                  b.select(b.lt(a, b.lit(1.17549435e-38f)), x, out));
}

/// 1 / (1 + e^-x), never exponentiating a positive number (no overflow, no
/// cancellation): e = e^{-|x|}, then 1 / (1 + e) for x >= 0 and
/// e / (1 + e) below.
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value sigmoid(const B &b,
                                               typename B::Value x) {
  using V = typename B::Value;
  V negAbs = b.select(b.lt(x, b.lit(0.0f)), x, b.neg(x));
  V e = exp(b, negAbs);
  V onePlus = b.add(b.lit(1.0f), e);
  V out = b.select(b.lt(x, b.lit(0.0f)), b.div(e, onePlus),
                   b.div(b.lit(1.0f), onePlus));
  return b.select(b.isNan(x), x, out);
}

/// GELU with the exact (erf) form: x Phi(x) = x / 2 (1 + erf(x / sqrt 2)).
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value gelu(const B &b, typename B::Value x) {
  return b.mul(x, normalCdf(b, x));
}

/// dy d/dx GELU(x) = dy (Phi(x) + x phi(x)), phi(x) = e^{-x^2 / 2} /
/// sqrt(2 pi).
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value geluGrad(const B &b, typename B::Value x,
                                                typename B::Value dy) {
  using V = typename B::Value;
  V pdf = b.mul(b.lit(0.39894228040143268f),
                expNonPositive(b, b.mul(b.mul(x, x), b.lit(-0.5f))));
  return b.mul(dy, b.add(normalCdf(b, x), b.mul(x, pdf)));
}

/// max(x, 0) that keeps NaN (as PyTorch's ReLU does).
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value relu(const B &b, typename B::Value x) {
  return b.select(b.lt(x, b.lit(0.0f)), b.lit(0.0f), x);
}

/// 1 / x.
template <typename B>
GPIPE_RT_MATH_INLINE typename B::Value reciprocal(const B &b,
                                                  typename B::Value x) {
  return b.div(b.lit(1.0f), x);
}

/// Scalar entry points for the kernels.
GPIPE_RT_MATH_INLINE float expf(float x) { return exp(ScalarFloat(), x); }
GPIPE_RT_MATH_INLINE float expNonPositivef(float x) {
  return expNonPositive(ScalarFloat(), x);
}
GPIPE_RT_MATH_INLINE float erff(float x) { return erf(ScalarFloat(), x); }
GPIPE_RT_MATH_INLINE float tanhf(float x) { return tanh(ScalarFloat(), x); }
GPIPE_RT_MATH_INLINE float sigmoidf(float x) {
  return sigmoid(ScalarFloat(), x);
}
GPIPE_RT_MATH_INLINE float geluf(float x) { return gelu(ScalarFloat(), x); }
GPIPE_RT_MATH_INLINE float geluGradf(float x, float dy) {
  return geluGrad(ScalarFloat(), x, dy);
}

} // namespace gpipe::rt::math

#endif // GPIPE_RUNTIME_SCALARMATH_H
