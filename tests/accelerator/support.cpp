#include "support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "qforge/registry.h"

namespace acc_test {

std::uint64_t test_seed() {
  if (const char* s = std::getenv("QFORGE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

std::filesystem::path scratch_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test = info ? std::string(info->test_suite_name()) + "." + info->name() : "none";
  for (char& c : test)
    if (c == '/') c = '_';
  const auto dir = std::filesystem::path(QFORGE_ACC_SCRATCH_DIR) / test / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<qforge::LoadedPlugin> plugins(std::initializer_list<std::string> names) {
  static qforge::PluginRegistry& registry = []() -> qforge::PluginRegistry& {
    static qforge::PluginRegistry r;
    r.load_file(std::filesystem::path(QFORGE_PLUGIN_DIR) / "libqforge_plugin_cpu_scalar.so");
    for (const char* f : {"acc_good", "acc_device", "acc_liar", "acc_thrower", "acc_hang",
                          "acc_picky", "acc_resident"})
      r.load_file(std::filesystem::path(QFORGE_ACC_FIXTURE_DIR) /
                  ("libqforge_plugin_" + std::string(f) + ".so"));
    return r;
  }();
  std::vector<qforge::LoadedPlugin> out;
  for (const auto& n : names) {
    bool found = false;
    for (const auto& p : registry.plugins())
      if (p.name == n) {
        out.push_back(p);
        found = true;
      }
    if (!found) {
      std::string failures;
      for (const auto& f : registry.failures()) failures += "\n  " + f.message;
      ADD_FAILURE() << "test plugin " << n << " did not load" << failures;
    }
  }
  return out;
}

qforge::AcceleratorOptions options(const std::filesystem::path& cache) {
  qforge::AcceleratorOptions o;
  o.cache_path = cache;
  o.budget.per_workload_s = 2.0;
  o.budget.total_s = 30.0;
  o.tuner.min_samples = 3;
  o.tuner.stable_checks = 1;
  o.tuner.tolerance = 0.5;
  o.sample_seconds = 0.0005;
  return o;
}

std::shared_ptr<const qforge::detail::AcceleratorTestHooks> cost_hooks(CostFunction cost) {
  auto hooks = std::make_shared<qforge::detail::AcceleratorTestHooks>();
  hooks->injected_cost = std::move(cost);
  return hooks;
}

std::shared_ptr<const qforge::detail::AcceleratorTestHooks> injected(
    std::map<std::string, double> op, std::map<std::string, double> transfer) {
  return cost_hooks(
      [op = std::move(op), transfer = std::move(transfer)](
          const qforge::CandidateId& id, const qforge::OpDesc&, qforge::CostPhase phase) {
        const auto& table = phase == qforge::CostPhase::op ? op : transfer;
        const auto it = table.find(id.label());
        return it != table.end() ? it->second : (phase == qforge::CostPhase::op ? 1.0 : 0.0);
      });
}

qforge::Workload small_matmul(std::int64_t m, qforge::OpKind op) {
  using namespace qforge;
  MatmulDesc d{m,
               24,
               40,
               QuantizationParams::per_tensor_affine(DType::uint8, 0.05f, 128),
               QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 1,
                                               std::vector<float>(24, 0.02f)),
               MatrixLayout::kn,
               /*has_bias=*/op == OpKind::matmul_dequant,
               FloatType::f32,
               std::nullopt,
               RequantMode::float_multiplier};
  if (op == OpKind::qlinear_matmul)
    d.y = QuantizationParams::per_tensor_affine(DType::uint8, 2.0f, 100);
  return {{op, d}, Residency::host};
}

}  // namespace acc_test
