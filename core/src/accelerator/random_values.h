// The values random inputs are drawn from (random_inputs.cpp), for each kind's
// OpHooks::random_inputs: codes inside windows that keep int32 sums exact, floats around a
// quantizer's code range with ties and special values, and their byte images.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "accelerator/operands.h"

namespace qforge::accel {

std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi);
float log_uniform(Rng& rng, double lo, double hi);
std::vector<std::byte> filled(std::size_t bytes, std::byte value);
std::vector<std::byte> float_bytes(FloatType t, const std::vector<float>& v);
std::vector<float> normal_floats(Rng& rng, std::size_t n, double sigma);
// Codes drawn per element from [z - window, z + window] clipped to the dtype's range, where z
// is the element's own zero point: keeps sum_k (a - za)(b - zb) inside int32 for any K.
std::vector<std::byte> window_codes(Rng& rng, const QuantizationParams& p, const Shape& shape,
                                    std::int64_t window);
// The window that keeps a sum of `k` products inside int32.
std::int64_t overflow_window(std::int64_t k);
// Values around and past the code range of `p` (so some saturate), a quarter of them exact
// ties (k + 1/2) * s, and with `specials` the values every quantizer must handle.
std::vector<float> quantize_inputs(Rng& rng, const QuantizationParams& p, std::size_t n,
                                   bool specials);
// Codes over the dtype's whole range.
std::vector<std::byte> full_range_codes(Rng& rng, DType t, std::size_t n);
std::vector<std::byte> int32_bytes(const std::vector<std::int32_t>& v);

}  // namespace qforge::accel
