// The reference's scalar formulas (core/src/reference: quantize_value, dequantize_value and
// requantize_value's float mode) restated inline, so that the plugin's loops vectorise instead
// of calling into libqforge_core once per element. They must give the same bits:
// tests/onednn/formulas_test.cpp compares them with qforge::reference on random values, exact
// ties, +/-inf, NaN, huge and tiny quotients.
//
// Round half to even is computed from the truncated integer and the exact fraction, so, like
// the reference, it does not depend on the thread's floating-point rounding mode.
#pragma once

#include <cstdint>

namespace qforge::onednn {

// sat(rne(v) + z) to [qmin, qmax]; NaN gives z. v is the float32 quotient x / s (or the
// requantization product float(c) * m) the reference rounds.
inline std::int32_t round_add_saturate(float v, std::int32_t z, std::int32_t qmin,
                                       std::int32_t qmax) noexcept {
  // Clamping v to [qmin - z, qmax - z] first changes no result: rne is monotonic and those
  // bounds are integers, so a v beyond one rounds to a value that saturates to the same code.
  // It keeps +/-inf and huge quotients inside int32 and makes the integer clamp unnecessary.
  // Both bounds are small integers (|.| <= 65535), exact in float32.
  const float lo = static_cast<float>(qmin - z);
  const float hi = static_cast<float>(qmax - z);
  const bool nan = v != v;
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  v = nan ? 0.0f : v;
  const std::int32_t t = static_cast<std::int32_t>(v);  // toward zero
  const float f = v - static_cast<float>(t);            // exact: |v| < 2^17
  const std::int32_t odd = t & 1;
  // Up when the fraction is above one half, or exactly one half and t is odd (ties to even);
  // the mirror image below zero.
  const std::int32_t up =
      static_cast<std::int32_t>(f > 0.5f) | (static_cast<std::int32_t>(f == 0.5f) & odd);
  const std::int32_t down =
      static_cast<std::int32_t>(f < -0.5f) | (static_cast<std::int32_t>(f == -0.5f) & odd);
  return t + up - down + z;
}

// reference::quantize_value for every linear mapping (not binary, which the caller handles).
inline std::int32_t quantize_linear(float x, float scale, std::int32_t z, std::int32_t qmin,
                                    std::int32_t qmax) noexcept {
  return round_add_saturate(x / scale, z, qmin, qmax);  // a true float32 division
}

// reference::quantize_value for binary: the sign decides; +0, -0 and NaN give +1.
inline std::int32_t quantize_binary(float x) noexcept { return x < 0.0f ? -1 : 1; }

// reference::dequantize_value: q - z is exact as a float, then one rounding.
inline float dequantize_linear(std::int32_t q, float scale, std::int32_t z) noexcept {
  return static_cast<float>(q - z) * scale;
}

// reference::requantize_value in RequantMode::float_multiplier (multiplier finite, >= 0).
inline std::int32_t requantize_float(std::int32_t c, float multiplier, std::int32_t z,
                                     std::int32_t qmin, std::int32_t qmax) noexcept {
  return round_add_saturate(static_cast<float>(c) * multiplier, z, qmin, qmax);
}

}  // namespace qforge::onednn
