// Shared helpers of the reference tests: the run's random seed and small comparison utilities.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "qforge/error.h"

namespace qforge::test {

// One seed per test run: QFORGE_TEST_SEED when set (to replay a failure), else fresh entropy.
inline std::uint64_t run_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* env = std::getenv("QFORGE_TEST_SEED")) return std::stoull(env);
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

inline std::string seed_text() {
  return "replay with QFORGE_TEST_SEED=" + std::to_string(run_seed());
}

// A generator seeded from the run seed and the test's name, so tests stay independent of the
// order they run in while one environment variable replays them all.
inline std::mt19937_64 make_rng() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  return std::mt19937_64(run_seed() ^ std::hash<std::string>{}(name));
}

// Declares `rng` and attaches the seed to every failure in the scope.
#define QFORGE_SEEDED_RNG(rng)               \
  SCOPED_TRACE(::qforge::test::seed_text()); \
  auto rng = ::qforge::test::make_rng()

inline float uniform(std::mt19937_64& rng, float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(rng);
}
inline std::int64_t uniform_int(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// ggml's normalised mean squared error: sum (a - b)^2 / sum a^2 (a is the reference).
inline double nmse(const std::vector<float>& ref, const std::vector<float>& got) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(ref[i]) - got[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return den == 0 ? num : num / den;
}

}  // namespace qforge::test

// Expects `stmt` to throw qforge::Error with `code` and a message containing `text`.
#define EXPECT_QFORGE_ERROR(stmt_, code_, text_)                                              \
  do {                                                                                        \
    try {                                                                                     \
      stmt_;                                                                                  \
      ADD_FAILURE() << "expected qforge::Error(" #code_ ") containing \"" << (text_) << "\""; \
    } catch (const ::qforge::Error& qforge_error_) {                                          \
      EXPECT_EQ(qforge_error_.code(), code_) << qforge_error_.what();                         \
      EXPECT_NE(std::string(qforge_error_.what()).find(text_), std::string::npos)             \
          << "message: " << qforge_error_.what() << "\nexpected to contain: " << (text_);     \
    }                                                                                         \
  } while (0)
