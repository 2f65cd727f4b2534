#include "support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "qforge/error.h"

namespace qforge::cpu_x86_test {

std::uint64_t run_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* env = std::getenv("QFORGE_TEST_SEED")) return std::strtoull(env, nullptr, 0);
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

std::string seed_text() { return "QFORGE_TEST_SEED=" + std::to_string(run_seed()); }

Rng test_rng() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  return Rng(run_seed() ^ std::hash<std::string>{}(name));
}

Loaded load_plugin(const std::string& name) {
  Loaded l;
  l.registry = std::make_unique<PluginRegistry>();
  l.registry->load_default();
  l.ops = l.registry->find(name);
  if (!l.ops) {
    l.why_missing = "no plugin named " + name + " on the search path";
    for (const auto& f : l.registry->failures())
      if (f.path.filename().string().find(name) != std::string::npos)
        l.why_missing = f.path.string() + ": " + f.message;
  }
  return l;
}

std::vector<std::uint8_t> random_codes(Rng& rng, DType t, std::int64_t count, std::int32_t lo,
                                       std::int32_t hi) {
  std::vector<std::uint8_t> out(storage_bytes(t, static_cast<std::size_t>(count)) + 1, 0);
  std::uniform_int_distribution<std::int32_t> dist(lo, hi);
  for (std::int64_t i = 0; i < count; ++i)
    store_element(t, out.data(), static_cast<std::size_t>(i), dist(rng));
  out.resize(storage_bytes(t, static_cast<std::size_t>(count)));
  return out;
}

std::vector<std::uint8_t> random_codes(Rng& rng, DType t, std::int64_t count) {
  return random_codes(rng, t, count, traits(t).qmin, traits(t).qmax);
}

float random_scale(Rng& rng) {
  std::uniform_real_distribution<float> d(-9.0f, -2.0f);  // 2^-9 .. 2^-2, not powers of two
  return std::exp2(d(rng)) * 1.0f;
}

std::int32_t random_zero_point(Rng& rng, DType t) {
  std::uniform_int_distribution<std::int32_t> d(traits(t).qmin, traits(t).qmax);
  return d(rng);
}

QuantizationParams random_params(Rng& rng, DType t, Granularity g, bool symmetric,
                                 std::int64_t count, int axis, std::int64_t block) {
  const Mapping mapping = symmetric ? Mapping::symmetric : Mapping::affine;
  const std::int64_t pairs = g == Granularity::per_tensor ? 1 : count;
  std::vector<float> scales;
  std::vector<std::int32_t> zps;
  for (std::int64_t i = 0; i < pairs; ++i) {
    scales.push_back(random_scale(rng));
    if (!symmetric) zps.push_back(random_zero_point(rng, t));
  }
  Scheme s{mapping, g, axis, block};
  return QuantizationParams(t, s, scales, zps);
}

bool kernel_runnable(const QuantizationOps& ops, const std::string& kernel, std::string* why) {
  // devices() returns by value: keep the properties, not a reference into the temporary.
  const auto p = ops.devices().at(0).properties;
  const std::string kernels = p.count("kernels") ? p.at("kernels") : "";
  std::size_t start = 0;
  while (start <= kernels.size()) {
    const std::size_t end = std::min(kernels.find(',', start), kernels.size());
    if (kernels.compare(start, end - start, kernel) == 0) return true;
    start = end + 1;
  }
  if (why)
    *why = "kernel " + kernel +
           " cannot run here (ISA tiers in use: " + (p.count("isa_used") ? p.at("isa_used") : "?") +
           "; runnable kernels: " + kernels + ")";
  return false;
}

std::string own_kernel(QuantizationOps& ops, const OpDesc& op) {
  return ops.plan(op, PlanRequest{})->kernel();
}

std::shared_ptr<const Plan> plan_of(QuantizationOps& ops, const OpDesc& op,
                                    const std::string& kernel) {
  return ops.plan(op, PlanRequest{0, kernel, {}});
}

}  // namespace qforge::cpu_x86_test
