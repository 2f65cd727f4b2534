// The suite's randomness. Every run draws fresh inputs from one 64-bit seed: QFORGE_TEST_SEED
// when set (replay), otherwise std::random_device. Each test derives its own generator from
// the seed and its full name, so one test replays alone:
//   QFORGE_TEST_SEED=<seed> qforge_test_conformance --gtest_filter=<that test>
// The seed is part of every failure message (see PluginTest in fixture.h).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace qforge::conformance {

using Rng = std::mt19937_64;

// The process's seed, fixed on first call. Throws qforge::Error when QFORGE_TEST_SEED is set
// but is not a decimal or 0x-prefixed hexadecimal 64-bit integer.
std::uint64_t run_seed();

// "QFORGE_TEST_SEED=<seed>" — what to set to replay this run.
std::string seed_text();

// A generator for one test, from the run seed and the test's full name.
Rng rng_for(std::string_view test_full_name);
// The same for the test that is running now.
Rng rng_for_current_test();

}  // namespace qforge::conformance
