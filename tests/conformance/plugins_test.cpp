// The suite's own preconditions: plugins were found, the requested ones loaded, and each
// plugin's identity and memory functions behave, before any op is compared.
#include "harness/plugins.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "harness/fixture.h"
#include "harness/guarded_buffer.h"
#include "harness/random_data.h"

namespace qforge::conformance {
namespace {

TEST(Plugins, AtLeastOneUnderTest) {
  EXPECT_FALSE(plugins_under_test().empty())
      << "no plugin to test; nothing else in this binary checks anything\n"
      << registry_report();
}

TEST(Plugins, RequestedPluginsLoaded) {
  const auto& loaded = plugins_under_test();
  for (const auto& name : requested_plugins())
    EXPECT_NE(std::find(loaded.begin(), loaded.end(), name), loaded.end())
        << "QFORGE_CONFORMANCE_PLUGINS names " << name << ", which did not load\n"
        << registry_report();
  if (requested_plugins().empty()) {
    EXPECT_NE(find_plugin(kMustSupportEverything), nullptr)
        << kMustSupportEverything << " is always built and must load\n"
        << registry_report();
  }
}

// A plugin in the build's own plugin directory that fails to load would silently escape every
// test below, so that is a failure here. Copies shadowed by QFORGE_PLUGIN_PATH are fine.
TEST(Plugins, BuildDirPluginsLoad) {
  const std::filesystem::path build_dir = std::filesystem::weakly_canonical(QFORGE_PLUGIN_DIR);
  for (const auto& failure : conformance_registry().failures()) {
    if (failure.kind == PluginFailureKind::shadowed) continue;
    const auto dir = std::filesystem::weakly_canonical(failure.path).parent_path();
    EXPECT_NE(dir, build_dir) << failure.path.string() << " [" << to_string(failure.kind)
                              << "]: " << failure.message;
  }
}

struct PluginParam {
  std::string plugin;
  std::string name() const { return plugin; }
  friend void PrintTo(const PluginParam& p, std::ostream* os) { *os << p.name(); }
};

std::vector<PluginParam> all_plugins() {
  std::vector<PluginParam> out;
  for (const auto& p : plugins_under_test()) out.push_back({p});
  return out;
}

class PluginBasics : public PluginTest<PluginParam> {};

TEST_P(PluginBasics, IdentityAndDevices) {
  QuantizationOps& ops = *target_.ops;
  EXPECT_EQ(ops.name(), target_.name);
  EXPECT_FALSE(ops.version().empty());
  const Availability availability = ops.availability();
  EXPECT_GT(availability.score, 0) << "a usable plugin scores above 0";
  const auto devices = ops.devices();
  ASSERT_FALSE(devices.empty()) << "a usable plugin exposes at least one device";
  EXPECT_FALSE(devices.front().name.empty());
  EXPECT_GE(ops.default_device(), 0);
  EXPECT_LT(ops.default_device(), static_cast<int>(devices.size()));
}

// The memory path every op test relies on: bytes written through the plugin (copy_to_device
// or host memory) come back unchanged with the canaries intact.
TEST_P(PluginBasics, MemoryRoundTrip) {
  for (const std::size_t bytes :
       {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{4097}}) {
    SCOPED_TRACE(std::to_string(bytes) + " bytes");
    GuardedBuffer buffer(*target_.ops, bytes, "round trip");
    std::vector<std::byte> data(bytes);
    for (auto& b : data) b = static_cast<std::byte>(uniform_int(rng_, 0, 255));
    buffer.write(data);
    EXPECT_TRUE(buffer.read() == data) << "bytes changed on the way through the plugin's memory";
    EXPECT_TRUE(buffer.guards_intact());
  }
}

INSTANTIATE_TEST_SUITE_P(Conformance, PluginBasics, ::testing::ValuesIn(all_plugins()),
                         param_name<PluginParam>);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PluginBasics);

}  // namespace
}  // namespace qforge::conformance
