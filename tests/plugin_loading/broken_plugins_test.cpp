// Each deliberately broken plugin fails in its own way, and the registry says so: the right
// PluginFailureKind and a message that names the file and the fact a user needs to fix it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <string>

#include "qforge/plugin/abi.h"
#include "qforge/registry.h"
#include "test_support.h"

namespace qforge::test {
namespace {

using ::testing::HasSubstr;

struct Expected {
  const char* file;
  PluginFailureKind kind;
};

constexpr std::array<Expected, 7> kBroken = {{
    {"libqforge_plugin_not_a_library.so", PluginFailureKind::not_shared_library},
    {"libqforge_plugin_wrong_arch.so", PluginFailureKind::wrong_architecture},
    {"libqforge_plugin_missing_dep.so", PluginFailureKind::missing_dependency},
    {"libqforge_plugin_no_entry.so", PluginFailureKind::missing_entry},
    {"libqforge_plugin_abi_mismatch.so", PluginFailureKind::abi_mismatch},
    {"libqforge_plugin_init_throws.so", PluginFailureKind::create_failed},
    {"libqforge_plugin_create_throws.so", PluginFailureKind::create_failed},
}};

class BrokenPlugins : public ::testing::Test {
 protected:
  void SetUp() override { registry.load_from({broken_plugin_dir()}); }

  // The failure of `file`, which must be the only one for it and carry the full path.
  const PluginFailure& failure(const char* file) {
    const PluginFailure* f = failure_for(registry, file);
    if (!f) {
      ADD_FAILURE() << "no failure recorded for " << file;
      static const PluginFailure none{};
      return none;
    }
    EXPECT_EQ(failure_count(registry, file), 1) << file;
    EXPECT_THAT(f->message, HasSubstr((broken_plugin_dir() / file).string()));
    return *f;
  }

  LogCapture log;  // before the registry: the loads in SetUp() are what it must see
  PluginRegistry registry;
};

TEST_F(BrokenPlugins, NoneLoadsAndEachIsReportedWithItsKind) {
  EXPECT_TRUE(registry.plugins().empty());
  ASSERT_EQ(registry.failures().size(), kBroken.size());
  for (const auto& e : kBroken) {
    SCOPED_TRACE(e.file);
    EXPECT_EQ(failure(e.file).kind, e.kind)
        << "got " << to_string(failure(e.file).kind) << ": " << failure(e.file).message;
  }
}

TEST_F(BrokenPlugins, NotALibraryShowsHowTheFileStarts) {
  const auto& f = failure("libqforge_plugin_not_a_library.so");
  EXPECT_EQ(f.kind, PluginFailureKind::not_shared_library);
  EXPECT_THAT(f.message, HasSubstr("is not a shared library: no ELF header"));
  EXPECT_THAT(f.message, HasSubstr("starts with \"This is not a sh"));
}

TEST_F(BrokenPlugins, WrongArchitectureNamesBothArchitectures) {
  const auto& f = failure("libqforge_plugin_wrong_arch.so");
  EXPECT_EQ(f.kind, PluginFailureKind::wrong_architecture);
  EXPECT_THAT(f.message, HasSubstr("built for aarch64"));
#if defined(__x86_64__)
  EXPECT_THAT(f.message, HasSubstr("this process is x86_64"));
#endif
}

TEST_F(BrokenPlugins, MissingDependencyNamesTheLibrary) {
  const auto& f = failure("libqforge_plugin_missing_dep.so");
  EXPECT_EQ(f.kind, PluginFailureKind::missing_dependency);
  EXPECT_THAT(f.message, HasSubstr("needs the library libqforge_test_missing_dep.so"));
  EXPECT_THAT(f.message, HasSubstr("LD_LIBRARY_PATH"));
}

TEST_F(BrokenPlugins, MissingEntryNamesTheSymbol) {
  const auto& f = failure("libqforge_plugin_no_entry.so");
  EXPECT_EQ(f.kind, PluginFailureKind::missing_entry);
  EXPECT_THAT(f.message, HasSubstr("does not export the entry symbol qforge_plugin_entry"));
  EXPECT_THAT(f.message, HasSubstr("QFORGE_DEFINE_PLUGIN"));
}

TEST_F(BrokenPlugins, AbiMismatchNamesBothVersions) {
  const auto& f = failure("libqforge_plugin_abi_mismatch.so");
  EXPECT_EQ(f.kind, PluginFailureKind::abi_mismatch);
  EXPECT_THAT(f.message, HasSubstr("ABI version 999"));
  EXPECT_THAT(f.message,
              HasSubstr("expects ABI version " + std::to_string(QFORGE_PLUGIN_ABI_VERSION)));
}

TEST_F(BrokenPlugins, ThrowingConstructorIsReportedWithItsMessage) {
  const auto& f = failure("libqforge_plugin_init_throws.so");
  EXPECT_EQ(f.kind, PluginFailureKind::create_failed);
  EXPECT_THAT(f.message, HasSubstr("plugin 'init_throws'"));
  EXPECT_THAT(f.message,
              HasSubstr("fixture device init failed on purpose (simulated driver error 42)"));
}

TEST_F(BrokenPlugins, ExceptionEscapingCreateIsCaught) {
  const auto& f = failure("libqforge_plugin_create_throws.so");
  EXPECT_EQ(f.kind, PluginFailureKind::create_failed);
  EXPECT_THAT(f.message, HasSubstr("create() threw: fixture create() escaped on purpose"));
}

TEST_F(BrokenPlugins, EachFailureIsLoggedOnceAtWarn) {
  for (const auto& e : kBroken) EXPECT_EQ(log.count(e.file), 1) << e.file << "\n" << log.text();
  EXPECT_EQ(log.count("warn "), static_cast<int>(kBroken.size())) << log.text();
  // Scanning again neither retries the files nor repeats the reports.
  registry.load_from({broken_plugin_dir()});
  EXPECT_EQ(registry.failures().size(), kBroken.size());
  EXPECT_EQ(log.count("warn "), static_cast<int>(kBroken.size())) << log.text();
}

TEST(BrokenPluginFiles, LoadFileReturnsFalseForEach) {
  for (const auto& e : kBroken) {
    SCOPED_TRACE(e.file);
    PluginRegistry registry;
    EXPECT_FALSE(registry.load_file(broken_plugin_dir() / e.file));
    ASSERT_EQ(registry.failures().size(), 1u);
    EXPECT_EQ(registry.failures()[0].kind, e.kind);
    // Asking again answers the same without a second report.
    EXPECT_FALSE(registry.load_file(broken_plugin_dir() / e.file));
    EXPECT_EQ(registry.failures().size(), 1u);
  }
}

TEST(BrokenPluginFiles, FileThatDoesNotExist) {
  PluginRegistry registry;
  const auto file = broken_plugin_dir() / "libqforge_plugin_never_built.so";
  EXPECT_FALSE(registry.load_file(file));
  ASSERT_EQ(registry.failures().size(), 1u);
  EXPECT_EQ(registry.failures()[0].kind, PluginFailureKind::load_failed);
  EXPECT_THAT(registry.failures()[0].message, HasSubstr(file.string() + " does not exist"));
}

TEST(BrokenPluginFiles, EmptyFileIsNotASharedLibrary) {
  TempDir dir;
  const auto file = dir.path() / "libqforge_plugin_empty.so";
  { std::ofstream touch(file); }
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(file));
  ASSERT_EQ(registry.failures().size(), 1u);
  EXPECT_EQ(registry.failures()[0].kind, PluginFailureKind::not_shared_library);
  EXPECT_THAT(registry.failures()[0].message, HasSubstr("the file is empty"));
}

TEST(BrokenPluginFiles, RelocatableObjectIsNotASharedLibrary) {
  // A valid ELF header of the right machine but of type ET_REL: take the fixture plugin's
  // header and rewrite e_type (offset 16, little endian on every machine this runs on).
  TempDir dir;
  const auto file = dir.copy_in(fixture_file(), "libqforge_plugin_object.so");
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16);
    const char et_rel[2] = {1, 0};
    f.write(et_rel, 2);
  }
  PluginRegistry registry;
  EXPECT_FALSE(registry.load_file(file));
  ASSERT_EQ(registry.failures().size(), 1u);
  EXPECT_EQ(registry.failures()[0].kind, PluginFailureKind::not_shared_library);
  EXPECT_THAT(registry.failures()[0].message, HasSubstr("relocatable object"));
}

TEST(PluginFailureKinds, HaveNames) {
  EXPECT_EQ(to_string(PluginFailureKind::not_shared_library), "not_shared_library");
  EXPECT_EQ(to_string(PluginFailureKind::wrong_architecture), "wrong_architecture");
  EXPECT_EQ(to_string(PluginFailureKind::missing_dependency), "missing_dependency");
  EXPECT_EQ(to_string(PluginFailureKind::load_failed), "load_failed");
  EXPECT_EQ(to_string(PluginFailureKind::missing_entry), "missing_entry");
  EXPECT_EQ(to_string(PluginFailureKind::abi_mismatch), "abi_mismatch");
  EXPECT_EQ(to_string(PluginFailureKind::create_failed), "create_failed");
  EXPECT_EQ(to_string(PluginFailureKind::shadowed), "shadowed");
}

}  // namespace
}  // namespace qforge::test
