// Shared helpers of the cpu_x86 tests: loading the plugin, the run's seed, random operands.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "qforge/ops.h"
#include "qforge/registry.h"

namespace qforge::cpu_x86_test {

using Rng = std::mt19937_64;

// QFORGE_TEST_SEED when set, else std::random_device; fixed for the process.
std::uint64_t run_seed();
// "QFORGE_TEST_SEED=<seed>", for failure messages.
std::string seed_text();
// A generator for the running test, from the seed and the test's name.
Rng test_rng();

// A fresh registry (so a fresh cpu_x86 instance, which reads QFORGE_CPU_X86_ISA when made).
struct Loaded {
  std::unique_ptr<PluginRegistry> registry;
  QuantizationOps* ops = nullptr;  // cpu_x86, or null
  std::string why_missing;         // when ops is null
};
Loaded load_plugin(const std::string& name = "cpu_x86");

// Skips the test (GTEST_SKIP) unless cpu_x86 loaded and is usable here; use as
//   auto l = load_plugin(); SKIP_UNLESS_USABLE(l);
#define SKIP_UNLESS_USABLE(l)                                                        \
  do {                                                                               \
    if (!(l).ops) GTEST_SKIP() << "cpu_x86 did not load: " << (l).why_missing;       \
    const auto avail = (l).ops->availability();                                      \
    if (!avail.usable) GTEST_SKIP() << "cpu_x86 is unusable here: " << avail.reason; \
  } while (0)

// Uniform random codes of a dtype, packed (int4/uint4 two per byte).
std::vector<std::uint8_t> random_codes(Rng& rng, DType t, std::int64_t count, std::int32_t lo,
                                       std::int32_t hi);
std::vector<std::uint8_t> random_codes(Rng& rng, DType t, std::int64_t count);
float random_scale(Rng& rng);
std::int32_t random_zero_point(Rng& rng, DType t);
// Params for one matmul operand: per tensor or `channels` pairs (per channel on `axis`), or
// block-wise over `blocks` pairs; affine with random zero points or symmetric.
QuantizationParams random_params(Rng& rng, DType t, Granularity g, bool symmetric,
                                 std::int64_t count, int axis = 0, std::int64_t block = 32);

// Whether the plugin can run a kernel here (its device lists it in "kernels").
bool kernel_runnable(const QuantizationOps& ops, const std::string& kernel,
                     std::string* why = nullptr);
// The kernel the plugin chooses for `op` on its own (what its per-call op runs), as a plan made
// without a kernel names it.
std::string own_kernel(QuantizationOps& ops, const OpDesc& op);
// A plan of `op` with `kernel` (weights as given on each run).
std::shared_ptr<const Plan> plan_of(QuantizationOps& ops, const OpDesc& op,
                                    const std::string& kernel);

}  // namespace qforge::cpu_x86_test
