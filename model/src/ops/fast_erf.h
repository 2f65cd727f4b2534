// erf for float32 without libm: polynomials that the compiler vectorises, so the Erf of a GELU
// (BERT's feed-forward layers) costs a few operations per element instead of a scalar erff call.
//
// |x| < 0.9:         erf(x) = x * P(x^2), P of degree 5;
// 0.9 <= |x| < 2:    erf(|x|) = Q1(t), t = (|x| - 1.45) / 0.55 in [-1, 1], degree 10;
// 2 <= |x| < 3.92:   erf(|x|) = Q2(t), t = (|x| - 2.96) / 0.96, degree 10;
// beyond:            erf(|x|) = 1 (erf(3.92) = 1 - 4.6e-9 rounds to 1 in float32); NaN stays NaN.
// The coefficients are least-squares fits in double on Chebyshev nodes of each interval, rounded
// to float. Evaluated in float32 with Horner's rule, each step one fused multiply-add
// (std::fma: exact wherever it runs, so the vector kernels' FMA instructions give these bits),
// the worst error against double-precision erf over [-4.5, 4.5] (erf_test.cpp,
// Erf.WithinOneUnitOfDoublePrecision) is under 2.2e-7 relative below 0.9 and under 1e-7 absolute
// above: about one unit in the last place, where libm's erff is within one too. Both polynomials
// are computed and one is selected, so the loop has no branches.
#pragma once

#include <cmath>

namespace qforge::model::ops {

// The polynomials' coefficients, highest degree first (P for |x| < 0.9, Q1, Q2), shared by
// fast_erf and the vector kernels (fused_gelu.cpp), which must give its bits.
inline constexpr float kErfSmall[6] = {-0.0006144085782580078f, 0.0050232866778969765f,
                                       -0.026787400245666504f,  0.11282408982515335f,
                                       -0.3761255443096161f,    1.1283791065216064f};
inline constexpr float kErfMiddle[11] = {
    2.766270199572318e-07f,  6.836703050794313e-06f, -2.6404291929793544e-05f,
    -5.440372842713259e-05f, 0.0005759043851867318f, -0.0010520863579586148f,
    -0.0036728852428495884f, 0.024498935788869858f,  -0.06045667827129364f,
    0.07580774277448654f,    0.959695041179657f};
inline constexpr float kErfLarge[11] = {
    1.733851786411833e-05f,  -1.511374648544006e-05f, -0.00010334001126466319f,
    0.0003454822872299701f,  -0.00066648970823735f,   0.0009761981200426817f,
    -0.0010758958524093032f, 0.0008626913768239319f,  -0.00048211286775767803f,
    0.00016960092762019485f, 0.9999716281890869f};

inline float horner(float t, const float* c, int n) {
  float p = c[0];
  for (int i = 1; i < n; ++i) p = std::fma(p, t, c[i]);
  return p;
}

inline float fast_erf(float x) {
  const float a = std::fabs(x);
  const float small = x * horner(x * x, kErfSmall, 6);
  // The two outer intervals share one Horner loop, each lane taking its interval's
  // coefficients (a select per step instead of a second polynomial).
  const bool middle = a < 2.0f;
  const float t = middle ? (a - 1.45f) * (1.0f / 0.55f) : (a - 2.96f) * (1.0f / 0.96f);
  float p = middle ? kErfMiddle[0] : kErfLarge[0];
  for (int i = 1; i < 11; ++i) p = std::fma(p, t, middle ? kErfMiddle[i] : kErfLarge[i]);
  const float far = std::copysign(a < 3.92f ? p : 1.0f, x);
  // NaN fails every comparison: it takes `small`, which is NaN.
  return !(a >= 0.9f) ? small : far;
}

}  // namespace qforge::model::ops
