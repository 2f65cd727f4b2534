// Where the registry looks, in which order, and what happens when a plugin is found twice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "qforge/registry.h"
#include "test_support.h"

namespace qforge::test {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kInstallDir = QFORGE_TEST_INSTALL_PLUGINDIR;

TEST(SearchPath, EnvironmentThenInstallDirThenExecutableDir) {
  ScopedEnv env("QFORGE_PLUGIN_PATH", "/first/dir::/second/libqforge_plugin_x.so:");
  const auto path = PluginRegistry::default_search_path();
  ASSERT_EQ(path.size(), 4u);
  EXPECT_EQ(path[0], "/first/dir");
  EXPECT_EQ(path[1], "/second/libqforge_plugin_x.so");  // empty entries are dropped
  EXPECT_EQ(path[2], kInstallDir);
  // The test executable lives in bin/, next to the shipped plugins.
  EXPECT_TRUE(same_file(path[3], plugin_dir())) << path[3];
}

TEST(SearchPath, WithoutEnvironment) {
  ScopedEnv env("QFORGE_PLUGIN_PATH", std::nullopt);
  const auto path = PluginRegistry::default_search_path();
  ASSERT_EQ(path.size(), 2u);
  EXPECT_EQ(path[0], kInstallDir);
  EXPECT_TRUE(same_file(path[1], plugin_dir())) << path[1];
}

TEST(SearchPath, EarlierDirectoryWinsAndLaterCopyIsShadowed) {
  TempDir first, second;
  const auto winner = first.copy_in(cpu_scalar_file());
  const auto loser = second.copy_in(cpu_scalar_file());
  PluginRegistry registry;
  registry.load_from({first.path(), second.path()});
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0].name, "cpu_scalar");
  EXPECT_TRUE(same_file(registry.plugins()[0].path, winner));
  ASSERT_EQ(registry.failures().size(), 1u);
  const auto& f = registry.failures()[0];
  EXPECT_EQ(f.kind, PluginFailureKind::shadowed);
  EXPECT_TRUE(same_file(f.path, loser));
  EXPECT_THAT(f.message, HasSubstr("plugin 'cpu_scalar' in " + loser.string()));
  EXPECT_THAT(f.message, HasSubstr("already loaded from " + registry.plugins()[0].path.string()));
  EXPECT_EQ(registry.find("cpu_scalar"), registry.plugins()[0].ops.get());
}

TEST(SearchPath, LoadDefaultPutsQforgePluginPathFirst) {
  TempDir dir;
  const auto copy = dir.copy_in(cpu_scalar_file());
  ScopedEnv env("QFORGE_PLUGIN_PATH", dir.path().string() + ":" + fixture_plugin_dir().string());
  PluginRegistry registry;
  registry.load_default();
  // The copy on QFORGE_PLUGIN_PATH wins over the one next to the executable.
  const LoadedPlugin* scalar = nullptr;
  const LoadedPlugin* fixture = nullptr;
  for (const auto& p : registry.plugins()) {
    if (p.name == "cpu_scalar") scalar = &p;
    if (p.name == "fixture") fixture = &p;
  }
  ASSERT_NE(scalar, nullptr);
  EXPECT_TRUE(same_file(scalar->path, copy));
  ASSERT_NE(fixture, nullptr);
  EXPECT_TRUE(same_file(fixture->path, fixture_file()));
  const PluginFailure* shadowed = failure_for(registry, "libqforge_plugin_cpu_scalar.so");
  ASSERT_NE(shadowed, nullptr);
  EXPECT_EQ(shadowed->kind, PluginFailureKind::shadowed);
  EXPECT_TRUE(same_file(shadowed->path, cpu_scalar_file()));
}

TEST(SearchPath, EnvironmentMayNameAFile) {
  ScopedEnv env("QFORGE_PLUGIN_PATH", fixture_file().string());
  PluginRegistry registry;
  registry.load_from({PluginRegistry::default_search_path()[0]});
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0].name, "fixture");
  EXPECT_EQ(registry.plugins()[0].version, "1.0.0");
  EXPECT_TRUE(registry.failures().empty());
}

TEST(SearchPath, SameFileReachedTwiceLoadsOnceWithoutShadowing) {
  TempDir dir;
  dir.copy_in(fixture_file());
  std::filesystem::create_directory_symlink(dir.path(), dir.path() / "link");
  PluginRegistry registry;
  registry.load_from({dir.path(), dir.path() / "link", dir.path() / ".." / dir.path().filename()});
  EXPECT_EQ(registry.plugins().size(), 1u);
  EXPECT_TRUE(registry.failures().empty());
  EXPECT_TRUE(registry.load_file(dir.path() / "link" / "libqforge_plugin_fixture.so"));
  EXPECT_EQ(registry.plugins().size(), 1u);
}

TEST(SearchPath, OnlyPluginNamedFilesAreCandidates) {
  TempDir dir;
  const auto odd = dir.copy_in(fixture_file(), "fixture.so");
  dir.copy_in(fixture_file(), "libqforge_plugin_fixture.so.bak");
  dir.copy_in(fixture_file(), "libqforge_plugin_.so");
  std::filesystem::create_directory(dir.path() / "libqforge_plugin_dir.so");
  PluginRegistry registry;
  registry.load_from({dir.path()});
  EXPECT_TRUE(registry.plugins().empty());
  EXPECT_TRUE(registry.failures().empty());
  // Named explicitly, a file loads whatever its name.
  EXPECT_TRUE(registry.load_file(odd));
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0].name, "fixture");
}

TEST(SearchPath, MissingEntriesAreSkippedQuietly) {
  TempDir dir;
  PluginRegistry registry;
  registry.load_from({dir.path() / "does_not_exist", dir.path()});
  EXPECT_TRUE(registry.plugins().empty());
  EXPECT_TRUE(registry.failures().empty());
}

TEST(SearchPath, TypoInQforgePluginPathIsWarned) {
  TempDir dir;
  const auto typo = dir.path() / "plugns";
  ScopedEnv env("QFORGE_PLUGIN_PATH", typo.string());
  LogCapture log;
  PluginRegistry registry;
  registry.load_default();
  EXPECT_EQ(log.count("QFORGE_PLUGIN_PATH names " + typo.string() + ", which does not exist"), 1)
      << log.text();
}

}  // namespace
}  // namespace qforge::test
