// float16 / bfloat16 conversions done on the bit patterns, so the result does not depend on the
// compiler, the FPU's rounding mode or F16C being present: this is the reference path.
#include "qforge/half.h"

#include <cstring>

namespace qforge {
namespace {

std::uint32_t bits_of(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(std::uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Drops the low `shift` bits of `v`, rounding half to even (shift in [1, 31]).
std::uint32_t shift_right_rne(std::uint32_t v, int shift) noexcept {
  const std::uint32_t q = v >> shift;
  const std::uint32_t rem = v & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1);
  return (rem > half || (rem == half && (q & 1u))) ? q + 1u : q;
}

}  // namespace

float to_float(Float16 h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t exp = (h.bits >> 10) & 0x1Fu;
  const std::uint32_t mant = h.bits & 0x3FFu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float32.
    const float mag = static_cast<float>(mant) * float_of(0x33800000u);  // 2^-24
    return float_of(bits_of(mag) | sign);
  }
  if (exp == 0x1F) return float_of(sign | 0x7F800000u | (mant << 13));  // inf / NaN (payload kept)
  return float_of(sign | ((exp + (127 - 15)) << 23) | (mant << 13));
}

float to_float(BFloat16 h) noexcept { return float_of(static_cast<std::uint32_t>(h.bits) << 16); }

Float16 to_float16(float f) noexcept {
  const std::uint32_t u = bits_of(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u)  // NaN: keep it a (quiet) NaN and the top of the payload
    return {static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu))};
  // 65520 is the midpoint between the largest half (65504) and 2^16; ties go to even = inf.
  if (a >= 0x477FF000u) return {static_cast<std::uint16_t>(sign | 0x7C00u)};
  if (a >= 0x38800000u) {  // >= 2^-14: a normal half
    const std::uint32_t rebased = a - ((127u - 15u) << 23);
    // A carry out of the mantissa correctly bumps the exponent.
    return {static_cast<std::uint16_t>(sign | shift_right_rne(rebased, 13))};
  }
  // Subnormal half (units of 2^-24). At or below 2^-25 everything rounds to zero (2^-25 itself
  // is a tie with an even zero), which also covers float subnormals.
  if (a <= 0x33000000u) return {sign};
  const int exp = static_cast<int>(a >> 23);               // 102..112 here
  const std::uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;  // value = mant * 2^(exp - 150)
  return {static_cast<std::uint16_t>(sign | shift_right_rne(mant, 126 - exp))};
}

BFloat16 to_bfloat16(float f) noexcept {
  const std::uint32_t u = bits_of(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u)  // NaN: truncating could give inf, so force the quiet bit
    return {static_cast<std::uint16_t>((u >> 16) | 0x0040u)};
  // Overflow past the largest bfloat16 rounds to inf through the carry, as IEEE requires.
  return {static_cast<std::uint16_t>(shift_right_rne(u, 16))};
}

float load_float(FloatType t, const void* data, std::size_t i) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  switch (t) {
    case FloatType::f32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case FloatType::f16: {
      Float16 h;
      std::memcpy(&h.bits, p + 2 * i, 2);
      return to_float(h);
    }
    case FloatType::bf16: {
      BFloat16 h;
      std::memcpy(&h.bits, p + 2 * i, 2);
      return to_float(h);
    }
  }
  return 0.0f;
}

void store_float(FloatType t, void* data, std::size_t i, float v) noexcept {
  auto* p = static_cast<unsigned char*>(data);
  switch (t) {
    case FloatType::f32: std::memcpy(p + 4 * i, &v, 4); return;
    case FloatType::f16: {
      const Float16 h = to_float16(v);
      std::memcpy(p + 2 * i, &h.bits, 2);
      return;
    }
    case FloatType::bf16: {
      const BFloat16 h = to_bfloat16(v);
      std::memcpy(p + 2 * i, &h.bits, 2);
      return;
    }
  }
}

}  // namespace qforge
