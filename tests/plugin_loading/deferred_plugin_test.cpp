// Deferred plugins (docs/PLUGINS.md, "Deferred plugins"): the registry loads them without
// creating them, the tuning cache's fingerprint names them by their identity, and the
// accelerator creates one only when a decision needs it. The fixture counts its create() calls.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "qforge/accelerator.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "qforge/registry.h"
#include "qforge/tuning_cache.h"
#include "test_support.h"

namespace qforge {
namespace {

using test::ScopedEnv;
using test::TempDir;

std::filesystem::path deferred_file() {
  return std::filesystem::path(QFORGE_DEFERRED_PLUGIN_DIR) / "libqforge_plugin_deferred.so";
}

// How often the fixture's create() ran in this process (every registry shares its library).
std::uint64_t creates() {
  void* handle = ::dlopen(deferred_file().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return ~std::uint64_t{0};
  auto* fn = reinterpret_cast<std::uint64_t (*)()>(::dlsym(handle, "qforge_test_deferred_creates"));
  const std::uint64_t n = fn ? fn() : ~std::uint64_t{0};
  ::dlclose(handle);
  return n;
}

const LoadedPlugin* find(const PluginRegistry& r, std::string_view name) {
  for (const auto& p : r.plugins())
    if (p.name == name) return &p;
  return nullptr;
}

Workload quantize_workload() {
  return {{OpKind::quantize,
           QuantizeDesc{{4, 40}, QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f)}}};
}

AcceleratorOptions options_with_cache(const std::filesystem::path& cache) {
  AcceleratorOptions o;
  o.cache_path = cache;
  o.budget.per_workload_s = 1;
  return o;
}

TEST(DeferredPlugin, LoadsWithoutCreatingAndCreatesOnceOnFirstQuestion) {
  ScopedEnv identity("QFORGE_TEST_DEFERRED_IDENTITY", std::nullopt);
  ScopedEnv fails("QFORGE_TEST_DEFERRED_CREATE_FAILS", std::nullopt);
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(deferred_file()));
  const std::uint64_t before = creates();
  const LoadedPlugin* p = find(registry, "deferred");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->version, "1.0.0");
  EXPECT_EQ(p->deferred_identity, "deferred fixture runtime 1\nfixture gpu 0");
  EXPECT_EQ(p->ops->name(), "deferred");
  EXPECT_EQ(p->ops->version(), "1.0.0");
  EXPECT_EQ(creates(), before) << "name() and version() must not create the plugin";
  EXPECT_TRUE(p->ops->availability().usable);
  EXPECT_EQ(creates(), before + 1);
  EXPECT_EQ(p->ops->devices().size(), 1u);
  EXPECT_FALSE(p->ops->supports(quantize_workload().op).supported);
  EXPECT_EQ(creates(), before + 1) << "created once, whatever is asked afterwards";
}

TEST(DeferredPlugin, AnIdentityChangedBeforeCreationIsWarnedAbout) {
  ScopedEnv fails("QFORGE_TEST_DEFERRED_CREATE_FAILS", std::nullopt);
  std::optional<ScopedEnv> identity(std::in_place, "QFORGE_TEST_DEFERRED_IDENTITY", "driver A");
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(deferred_file()));
  identity.reset();
  ScopedEnv changed("QFORGE_TEST_DEFERRED_IDENTITY", "driver B");
  test::LogCapture log;
  EXPECT_TRUE(find(registry, "deferred")->ops->availability().usable);
  EXPECT_EQ(log.count("changed since it was loaded"), 1) << log.text();
}

TEST(DeferredPlugin, FingerprintUsesTheIdentityAndCreatesNothing) {
  ScopedEnv fails("QFORGE_TEST_DEFERRED_CREATE_FAILS", std::nullopt);
  std::string first_id;
  {
    ScopedEnv identity("QFORGE_TEST_DEFERRED_IDENTITY", "driver A\ngpu X");
    PluginRegistry registry;
    ASSERT_TRUE(registry.load_file(deferred_file()));
    const std::uint64_t before = creates();
    const HardwareFingerprint fp = hardware_fingerprint(registry.plugins());
    EXPECT_EQ(creates(), before);
    ASSERT_EQ(fp.plugins.size(), 1u);
    EXPECT_EQ(fp.plugins[0].devices,
              (std::vector<std::string>{"identity: driver A", "identity: gpu X"}));
    first_id = fp.id();
  }
  // Another driver (or GPU) is another identity, hence another machine for the cache.
  ScopedEnv identity("QFORGE_TEST_DEFERRED_IDENTITY", "driver B\ngpu X");
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(deferred_file()));
  EXPECT_NE(hardware_fingerprint(registry.plugins()).id(), first_id);
}

TEST(DeferredPlugin, ACachedDecisionForAnotherPluginNeverCreatesIt) {
  ScopedEnv identity("QFORGE_TEST_DEFERRED_IDENTITY", std::nullopt);
  ScopedEnv fails("QFORGE_TEST_DEFERRED_CREATE_FAILS", std::nullopt);
  TempDir dir;
  const auto cache = dir.path() / "tuning.json";
  const Workload w = quantize_workload();
  std::string fingerprint;
  {
    // Tuning asks every plugin the policy allows: the deferred one is created and refuses.
    PluginRegistry registry;
    ASSERT_TRUE(registry.load_file(test::cpu_scalar_file()));
    ASSERT_TRUE(registry.load_file(deferred_file()));
    Accelerator acc(registry, options_with_cache(cache));
    const std::uint64_t before = creates();
    const TuneReport r = acc.tune(w);
    EXPECT_EQ(r.source, DecisionSource::tuned);
    EXPECT_EQ(r.winner.plugin, "cpu_scalar");
    EXPECT_EQ(creates(), before + 1);
    fingerprint = acc.fingerprint().id();
  }
  // A later process (a fresh registry) finds the decision in the cache and runs it without
  // creating the deferred plugin.
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(test::cpu_scalar_file()));
  ASSERT_TRUE(registry.load_file(deferred_file()));
  const std::uint64_t before = creates();
  Accelerator acc(registry, options_with_cache(cache));
  EXPECT_EQ(acc.fingerprint().id(), fingerprint);
  const Decision d = acc.decide(w);
  EXPECT_EQ(d.source, DecisionSource::cache);
  EXPECT_EQ(d.id.plugin, "cpu_scalar");
  const std::uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-40.f, 40.f);
  std::vector<float> x(160);
  for (float& v : x) v = u(rng);
  std::vector<std::int8_t> got(160), want(160);
  const auto& desc = std::get<QuantizeDesc>(w.op.desc);
  acc.quantize(desc, x.data(), got.data());
  reference::quantize(desc, x.data(), want.data());
  EXPECT_EQ(got, want) << "seed " << seed;
  EXPECT_EQ(creates(), before) << "the deferred plugin was created for a cached CPU decision";
}

TEST(DeferredPlugin, APolicyThatLeavesItOutNeverCreatesIt) {
  ScopedEnv fails("QFORGE_TEST_DEFERRED_CREATE_FAILS", std::nullopt);
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(test::cpu_scalar_file()));
  ASSERT_TRUE(registry.load_file(deferred_file()));
  const std::uint64_t before = creates();
  AcceleratorOptions o;
  o.use_cache = false;
  o.budget.per_workload_s = 1;
  o.policy.plugins = {"cpu_scalar"};
  Accelerator acc(registry, o);
  EXPECT_EQ(acc.tune(quantize_workload()).winner.plugin, "cpu_scalar");
  EXPECT_EQ(creates(), before);
}

TEST(DeferredPlugin, AFailedCreateIsReportedWhereverItIsAsked) {
  ScopedEnv fails("QFORGE_TEST_DEFERRED_CREATE_FAILS", "1");
  PluginRegistry registry;
  test::LogCapture log;
  ASSERT_TRUE(registry.load_file(deferred_file()));  // loading does not create it
  const LoadedPlugin* p = find(registry, "deferred");
  ASSERT_NE(p, nullptr);
  const Availability a = p->ops->availability();
  EXPECT_FALSE(a.usable);
  EXPECT_NE(a.reason.find("plugin 'deferred' in " + deferred_file().string() +
                          " failed to initialise: simulated runtime start failure: no device"),
            std::string::npos)
      << a.reason;
  EXPECT_EQ(log.count("create_failed"), 1) << log.text();
  EXPECT_TRUE(p->ops->devices().empty());
  EXPECT_EQ(p->ops->supports(quantize_workload().op).reason, a.reason);
  std::vector<float> x(160, 1.f);
  std::vector<std::int8_t> q(160);
  try {
    p->ops->quantize(std::get<QuantizeDesc>(quantize_workload().op.desc), x.data(), q.data());
    FAIL() << "quantize on a plugin whose create() failed did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable);
    EXPECT_NE(std::string(e.what()).find("failed to initialise"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("simulated runtime start failure"), std::string::npos)
        << e.what();
  }
  // The accelerator says why it cannot use it.
  AcceleratorOptions o;
  o.use_cache = false;
  o.policy.plugins = {"deferred"};
  Accelerator acc(registry, o);
  try {
    acc.tune(quantize_workload());
    FAIL() << "tune() with only a plugin whose create() failed did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("deferred: cannot run here: plugin 'deferred'"),
              std::string::npos)
        << e.what();
  }
}

TEST(RestrictTo, SkipsOtherPluginsWithoutCreatingOrReportingThem) {
  PluginRegistry registry;
  registry.restrict_to({"cpu_scalar"});
  const std::uint64_t before = creates();
  registry.load_from({test::plugin_dir(), QFORGE_DEFERRED_PLUGIN_DIR});
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0].name, "cpu_scalar");
  EXPECT_TRUE(registry.failures().empty());
  EXPECT_EQ(creates(), before);
  // Lifting the restriction loads what was skipped.
  registry.restrict_to({});
  EXPECT_TRUE(registry.load_file(deferred_file()));
  EXPECT_NE(find(registry, "deferred"), nullptr);
}

}  // namespace
}  // namespace qforge
