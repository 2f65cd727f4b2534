// Shared helpers of the onednn plugin tests: the plugin (loaded through the registry, as users
// load it), the run's seed, random operands and exact comparisons against qforge::reference.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/ops.h"
#include "qforge/registry.h"

namespace qforge::onednn_test {

using Rng = std::mt19937_64;

// QFORGE_TEST_SEED when set, else std::random_device; one per process.
std::uint64_t run_seed();
// "QFORGE_TEST_SEED=<seed>": every test puts it in its failure messages (SCOPED_TRACE).
std::string seed_text();
// A generator for the running test: the run's seed mixed with the test's full name, so that
// QFORGE_TEST_SEED=<seed> --gtest_filter=<test> replays one test exactly.
Rng test_rng();

// A fresh registry with the plugins of the build's bin directory (the executable's directory).
struct Loaded {
  std::unique_ptr<PluginRegistry> registry;
  QuantizationOps* ops = nullptr;
  std::string why_missing;
};
Loaded load_onednn();

// Loads onednn (a fresh instance) or skips the test with the reason; also traces the seed.
#define ONEDNN_OR_SKIP(var)                                                                   \
  SCOPED_TRACE(::qforge::onednn_test::seed_text());                                           \
  auto var##_loaded = ::qforge::onednn_test::load_onednn();                                   \
  if (!var##_loaded.ops) GTEST_SKIP() << "onednn did not load: " << var##_loaded.why_missing; \
  ::qforge::QuantizationOps& var = *var##_loaded.ops

// Random packed codes of a dtype over [lo, hi] (default: the full range).
std::vector<std::uint8_t> random_codes(Rng& rng, DType t, std::int64_t count);
std::vector<std::uint8_t> random_codes(Rng& rng, DType t, std::int64_t count, std::int32_t lo,
                                       std::int32_t hi);
float random_scale(Rng& rng);
// Per-tensor (count 0) or `count` pairs per channel along `axis`; affine with random zero points
// or symmetric.
QuantizationParams random_params(Rng& rng, DType t, bool symmetric, std::int64_t count = 0,
                                 int axis = 0);

// One property of devices()[0], e.g. "matmul_primitives".
std::string device_property(const QuantizationOps& ops, const std::string& key);
// "entries=3 hits=10 misses=3" -> {entries: 3, hits: 10, misses: 3}
std::map<std::string, std::uint64_t> counters(const std::string& text);

// Bytes equal; on a mismatch, says where.
::testing::AssertionResult same_bytes(const void* got, const void* want, std::size_t bytes,
                                      std::size_t element_size = 1);

}  // namespace qforge::onednn_test
