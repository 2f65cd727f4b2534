#include "support.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace qforge::onednn_test {

std::uint64_t run_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* env = std::getenv("QFORGE_TEST_SEED")) return std::strtoull(env, nullptr, 0);
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

std::string seed_text() { return "replay with QFORGE_TEST_SEED=" + std::to_string(run_seed()); }

Rng test_rng() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
  return Rng(run_seed() ^ std::hash<std::string>{}(name));
}

Loaded load_onednn() {
  Loaded l;
  l.registry = std::make_unique<PluginRegistry>();
  l.registry->load_default();
  l.ops = l.registry->find("onednn");
  if (!l.ops) {
    l.why_missing = "no plugin named onednn on the search path";
    for (const auto& f : l.registry->failures())
      if (f.path.filename().string().find("onednn") != std::string::npos)
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
  std::uniform_real_distribution<float> d(-9.0f, -2.0f);
  return std::exp2(d(rng));
}

QuantizationParams random_params(Rng& rng, DType t, bool symmetric, std::int64_t count, int axis) {
  const std::int64_t pairs = count == 0 ? 1 : count;
  std::vector<float> scales;
  std::vector<std::int32_t> zps;
  std::uniform_int_distribution<std::int32_t> z(traits(t).qmin, traits(t).qmax);
  for (std::int64_t i = 0; i < pairs; ++i) {
    scales.push_back(random_scale(rng));
    if (!symmetric && t != DType::binary) zps.push_back(z(rng));
  }
  const Mapping m = symmetric || t == DType::binary ? Mapping::symmetric : Mapping::affine;
  const Scheme s =
      count == 0 ? Scheme{m, Granularity::per_tensor} : Scheme{m, Granularity::per_channel, axis};
  return QuantizationParams(t, s, scales, zps);
}

std::string device_property(const QuantizationOps& ops, const std::string& key) {
  const auto devices = ops.devices();
  if (devices.empty()) return {};
  const auto it = devices.front().properties.find(key);
  return it == devices.front().properties.end() ? std::string() : it->second;
}

std::map<std::string, std::uint64_t> counters(const std::string& text) {
  std::map<std::string, std::uint64_t> out;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const auto eq = item.find('=');
    if (eq != std::string::npos) out[item.substr(0, eq)] = std::stoull(item.substr(eq + 1));
  }
  return out;
}

::testing::AssertionResult same_bytes(const void* got, const void* want, std::size_t bytes,
                                      std::size_t element_size) {
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  std::size_t differ = 0, first = bytes;
  for (std::size_t i = 0; i < bytes; ++i)
    if (g[i] != w[i]) {
      if (first == bytes) first = i;
      ++differ;
    }
  if (differ == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << differ << " of " << bytes << " bytes differ; first in element " << first / element_size
         << " (byte " << first << ")";
}

}  // namespace qforge::onednn_test
