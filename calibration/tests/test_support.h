// Shared helpers of the calibration tests: the run's seed, random data, and the quantization
// error of params on actual data measured with core's reference quantizer.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "qforge/params.h"
#include "qforge/reference.h"

namespace qforge::calibration::test {

// One seed per test run: QFORGE_TEST_SEED when set (to replay a failure), else fresh entropy.
inline std::uint64_t run_seed() {
  static const std::uint64_t seed = [] {
    if (const char* env = std::getenv("QFORGE_TEST_SEED"))
      return static_cast<std::uint64_t>(std::stoull(env));
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

inline std::string seed_text() {
  return "seed " + std::to_string(run_seed()) +
         " (replay with QFORGE_TEST_SEED=" + std::to_string(run_seed()) + ")";
}

// A generator per test, derived from the run's seed and a per-test salt so that tests do not
// share streams (and one can be replayed alone).
inline std::mt19937_64 rng(std::uint64_t salt) {
  return std::mt19937_64(run_seed() ^ (salt * 0x9E3779B97F4A7C15ull));
}

// Mean squared error of quantizing then dequantizing `x` with per-tensor params, measured with
// core's reference scalar kernels (the oracle).
inline double data_mse(std::span<const float> x, const QuantizationParams& p) {
  double sum = 0.0;
  for (float v : x) {
    const std::int32_t q =
        reference::quantize_value(v, p.scale(), p.zero_point(), p.qmin(), p.qmax());
    const double d =
        static_cast<double>(v) - reference::dequantize_value(q, p.scale(), p.zero_point());
    sum += d * d;
  }
  return x.empty() ? 0.0 : sum / static_cast<double>(x.size());
}

}  // namespace qforge::calibration::test
