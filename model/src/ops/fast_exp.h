// exp for float32 without libm, in operations the compiler vectorises: Softmax takes one exp per
// attention score (MiniLM: 6.3 million a layer at batch 32 × 128), which as scalar expf calls
// cost as much as the rest of Softmax together.
//
// Cephes' expf: x = n·ln2 + r with n = round(x / ln2) and |r| <= ln2/2 (ln2 split in two parts
// so r is accurate), e^r = 1 + r·(1 + r·P(r)) with P of degree 5, 2^n put into the exponent bits.
// Every multiply-add is a fused one, written as std::fma: one rounding each, 10 FMAs where
// separate multiplies and adds took 20 operations. std::fma is exact wherever it runs, so code
// compiled for any instruction set gives the same bits; where the target has FMA it is one
// vfmadd instruction (and vectorises), elsewhere a libm call (Softmax's baseline x86-64 clone,
// run only on CPUs without AVX2 and FMA). Within 0.9 units in the last place of double-precision
// exp over the whole range (checked for every float once, docs/PERFORMANCE.md, branch expfma;
// fast_exp_test.cpp checks every 61st float against a bound of 1); below ln(FLT_MIN) ≈ -87.34 it
// returns 0 (where expf gives subnormals under 1.2e-38), above 88.72 infinity; NaN stays NaN. No
// branches, so a loop over it vectorises.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace qforge::model::ops {

// e^r for |r| <= ln2/2: 1 + r·(1 + r·P(r)) by Horner's rule in FMAs (Cephes' P). Of the orders
// tried for the last steps, this one is the most accurate (0.89 units in the last place at
// worst, against 0.99 for Cephes' r²·P + r + 1 without FMA and 1.01 for fma(P, r², r) + 1).
[[gnu::always_inline]] inline float exp_reduced(float r) {
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  return std::fma(std::fma(p, r, 1.0f), r, 1.0f);
}

inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kLow = -87.3365448f;   // ln(FLT_MIN): smaller results are subnormal
  constexpr float kHigh = 88.7228394f;   // ln(FLT_MAX)
  constexpr float kRound = 12582912.0f;  // 1.5 · 2^23: adding it rounds to an integer
  // The range checks on the bits and the selects as masks: with float comparisons and ?:, GCC
  // folds the constant arms into branches and then refuses to vectorise (a float operation
  // moved into a branch "could trap"). Sign-magnitude bits order floats of one sign by
  // magnitude; NaN is neither under nor over, so it passes through to a NaN result.
  const std::uint32_t ux = std::bit_cast<std::uint32_t>(x);
  const bool under = (ux > std::bit_cast<std::uint32_t>(kLow)) & (ux <= 0xff800000u);  // -inf too
  const bool over = (ux > std::bit_cast<std::uint32_t>(kHigh)) & (ux <= 0x7f800000u);  // +inf too
  const std::uint32_t mu = 0u - under, mo = 0u - over;  // all ones where true
  const float c =
      std::bit_cast<float>((std::bit_cast<std::uint32_t>(kLow) & mu) |
                           (std::bit_cast<std::uint32_t>(kHigh) & mo) | (ux & ~(mu | mo)));
  const float t = std::fma(c, kLog2e, kRound);
  const float n = t - kRound;
  // n as an integer from t's mantissa bits (t lies in [2^23, 2^24), where floats step by 1).
  const std::int32_t ni = std::bit_cast<std::int32_t>(t) - std::bit_cast<std::int32_t>(kRound);
  const float r = std::fma(n, -kLn2Lo, std::fma(n, -kLn2Hi, c));
  const float p = exp_reduced(r);
  // 2^n in two halves, so that n = 128 (x just below ln(FLT_MAX)) stays representable.
  const std::int32_t half = ni >> 1;
  const float s1 = std::bit_cast<float>(static_cast<std::uint32_t>(half + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<std::uint32_t>(ni - half + 127) << 23);
  float e = p * s1 * s2;
  return std::bit_cast<float>((0x7f800000u & mo) | (std::bit_cast<std::uint32_t>(e) & ~(mu | mo)));
}

// fast_exp(x) bit for bit where x <= 0, -inf or NaN (Softmax's x - max), in fewer operations:
// no result can overflow, so the clamp to ln(FLT_MAX) goes, and 2^n is one float: with
// x >= ln(FLT_MIN), n >= -126 and 2^n is normal, so p * 2^n is rounded once, as
// p * 2^half * 2^(n - half) is (p * 2^half is exact). Nor is x clamped to ln(FLT_MIN): the lanes
// below it compute garbage (infinities, NaN, a wrong exponent field, in unsigned arithmetic, so
// without overflow) that the final mask replaces by 0. Checked against fast_exp for every such
// float (docs/PERFORMANCE.md, branches attn2 and expfma).
inline float fast_exp_nonpositive(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kLow = -87.3365448f;
  constexpr float kRound = 12582912.0f;
  const std::uint32_t ux = std::bit_cast<std::uint32_t>(x);
  const bool under = (ux > std::bit_cast<std::uint32_t>(kLow)) & (ux <= 0xff800000u);  // -inf too
  const std::uint32_t mu = 0u - under;
  const float t = std::fma(x, kLog2e, kRound);
  const float n = t - kRound;
  const std::uint32_t ni = std::bit_cast<std::uint32_t>(t) - std::bit_cast<std::uint32_t>(kRound);
  const float r = std::fma(n, -kLn2Lo, std::fma(n, -kLn2Hi, x));
  const float p = exp_reduced(r);
  const float e = p * std::bit_cast<float>((ni + 127u) << 23);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(e) & ~mu);
}

}  // namespace qforge::model::ops
