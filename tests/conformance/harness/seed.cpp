#include "harness/seed.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdlib>

#include "qforge/error.h"
#include "qforge/fnv1a.h"

namespace qforge::conformance {
namespace {

std::uint64_t parse_seed(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    throw Error(ErrorCode::invalid_argument,
                "QFORGE_TEST_SEED = '" + std::string(text) +
                    "'; expected a decimal or 0x-prefixed hexadecimal 64-bit integer");
  return value;
}

std::uint64_t draw_seed() {
  if (const char* env = std::getenv("QFORGE_TEST_SEED"); env != nullptr && *env != '\0')
    return parse_seed(env);
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

// SplitMix64's finaliser: spreads a combined (seed, name) over all 64 bits.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t run_seed() {
  static const std::uint64_t seed = draw_seed();
  return seed;
}

std::string seed_text() { return "QFORGE_TEST_SEED=" + std::to_string(run_seed()); }

Rng rng_for(std::string_view test_full_name) {
  return Rng(mix(run_seed() ^ mix(fnv1a(test_full_name))));
}

Rng rng_for_current_test() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return rng_for("");
  return rng_for(std::string(info->test_suite_name()) + "." + info->name());
}

}  // namespace qforge::conformance
