// Random inputs and params for the testers. Everything draws from the test's Rng (seed.h), so a
// failure replays with its seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/seed.h"
#include "qforge/dtype.h"
#include "qforge/half.h"
#include "qforge/params.h"
#include "qforge/scheme.h"
#include "qforge/shape.h"

namespace qforge::conformance {

std::int64_t uniform_int(Rng& rng, std::int64_t lo, std::int64_t hi);  // inclusive
double uniform_real(Rng& rng, double lo, double hi);
double log_uniform(Rng& rng, double lo, double hi);
bool chance(Rng& rng, double p);

// A scale for one (channel | block): log-uniform in [2^-8, 4], a power of two one time in four
// (then (k + 1/2) * s is exact and quantize meets true ties, testing round-half-to-even).
float random_scale(Rng& rng);

// Number of (scale, zero point) pairs `scheme` needs for a tensor of `shape`.
std::size_t param_count(const Scheme& scheme, const Shape& shape);

// Random valid params: scales from random_scale, zero points uniform over the dtype's full range
// for affine mappings, the scheme's fixed zero point otherwise.
QuantizationParams random_params(Rng& rng, DType dtype, const Scheme& scheme, const Shape& shape);

// The values every quantizer must handle: NaN, +-inf, +-FLT_MAX, +-1e30, -0, denormals.
const std::vector<float>& special_floats();

// Float inputs for quantize under `params`: values around the whole code range and past it (to
// saturate), true ties, and with `specials` one of each special value (as room allows) plus
// about 8% more at random positions.
std::vector<float> quantize_inputs(Rng& rng, const QuantizationParams& params, const Shape& shape,
                                   bool specials);

// Stores float values as `type` (rounding to nearest even for float16/bfloat16).
std::vector<std::byte> store_floats(FloatType type, const std::vector<float>& values);

// Packed codes, each uniform in [lo, hi] (clamped to the dtype's range).
std::vector<std::byte> random_codes(Rng& rng, DType dtype, std::size_t count, std::int32_t lo,
                                    std::int32_t hi);
// Packed codes, each either lo or hi: the extremes that saturate narrow accumulators.
std::vector<std::byte> extreme_codes(Rng& rng, DType dtype, std::size_t count, std::int32_t lo,
                                     std::int32_t hi);

// Normal(0, sigma) floats.
std::vector<float> normal_floats(Rng& rng, std::size_t count, double sigma);

}  // namespace qforge::conformance
