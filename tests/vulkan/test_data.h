// Random inputs that reach the corners of the quantization arithmetic: exact half-integer
// quotients and their neighbours, saturation, NaN, infinities, signed zeros, subnormals.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace qforge::vktest {

// A value whose quotient by `scale` lands near the interesting places for a q range of about
// `span` codes.
inline float tricky_value(std::mt19937_64& rng, float scale, float span) {
  std::uniform_int_distribution<int> kind(0, 19);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> n(-static_cast<int>(span), static_cast<int>(span));
  std::uniform_int_distribution<int> ulps(-3, 3);
  switch (kind(rng)) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1:
      return u(rng) < 0 ? -std::numeric_limits<float>::infinity()
                        : std::numeric_limits<float>::infinity();
    case 2: return u(rng) < 0 ? -0.0f : 0.0f;
    case 3: return u(rng) * 1e30f;                                               // saturates
    case 4: return u(rng) * std::numeric_limits<float>::denorm_min() * 1000.0f;  // subnormal
    case 5:
    case 6:
    case 7:
    case 8: {  // fl((n + 0.5) * s) and a few ULPs around it: the rounding ties
      float x = (static_cast<float>(n(rng)) + 0.5f) * scale;
      for (int i = ulps(rng); i != 0; i += i > 0 ? -1 : 1)
        x = std::nextafter(x, i > 0 ? INFINITY : -INFINITY);
      return x;
    }
    default: return u(rng) * scale * span * 1.25f;  // the range, with some saturation
  }
}

inline std::vector<float> tricky_values(std::mt19937_64& rng, std::size_t n,
                                        const std::vector<float>& scales, float span) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = tricky_value(rng, scales[i % scales.size()], span);
  return x;
}

// A positive scale with a random exponent in [lo_exp, hi_exp].
inline float random_scale(std::mt19937_64& rng, int lo_exp = -12, int hi_exp = 4) {
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> e(lo_exp, hi_exp);
  return std::ldexp(mant(rng), e(rng));
}

}  // namespace qforge::vktest

#include "qforge/op_desc.h"

namespace qforge::vktest {

// MatmulDesc has no default constructor (its params must be valid): build one field by field.
inline MatmulDesc make_matmul(std::int64_t m, std::int64_t n, std::int64_t k, QuantizationParams a,
                              QuantizationParams b, MatrixLayout layout = MatrixLayout::kn) {
  return MatmulDesc{.m = m,
                    .n = n,
                    .k = k,
                    .a = std::move(a),
                    .b = std::move(b),
                    .b_layout = layout,
                    .has_bias = false,
                    .out_type = FloatType::f32,
                    .y = std::nullopt,
                    .requant_mode = RequantMode::float_multiplier};
}

}  // namespace qforge::vktest
