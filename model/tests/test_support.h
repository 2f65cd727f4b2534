// Shared helpers of the model tests: the run's seed and random tensors.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "qforge/model/tensor.h"

namespace qforge::model::test {

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

inline std::mt19937_64 rng(std::uint64_t salt) {
  return std::mt19937_64(run_seed() ^ (salt * 0x9E3779B97F4A7C15ull));
}

inline std::vector<float> random_values(std::mt19937_64& g, std::size_t n, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

inline Tensor random_tensor(std::mt19937_64& g, Shape shape, float lo = -1.0f, float hi = 1.0f) {
  const auto v = random_values(g, static_cast<std::size_t>(qforge::element_count(shape)), lo, hi);
  return Tensor::from_values<float>(std::move(shape), std::span<const float>(v));
}

}  // namespace qforge::model::test
