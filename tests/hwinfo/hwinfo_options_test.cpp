// qforge-hwinfo's options: --op filters, --plugin-path is searched first, a broken plugin is
// reported without failing the run, and a bad argument is refused with the valid choices.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tool_runner.h"

namespace {

using json = nlohmann::ordered_json;
using qforge::test::run_hwinfo;
using qforge::test::run_hwinfo_json;
using qforge::test::shell_quote;
using qforge::test::TempDir;

TEST(HwinfoOptions, OpFilterKeepsOnlyThatOp) {
  const json doc = run_hwinfo_json("--op matmul_integer");
  ASSERT_TRUE(doc.contains("plugins"));
  ASSERT_FALSE(doc.at("plugins").empty());
  for (const json& p : doc.at("plugins")) {
    EXPECT_FALSE(p.at("capabilities").empty()) << p.at("name");
    for (const json& c : p.at("capabilities")) EXPECT_EQ(c.at("op"), "matmul_integer") << c.dump();
  }
}

TEST(HwinfoOptions, UnknownOpIsRefusedWithTheValidNames) {
  const auto run = run_hwinfo("--op matmul_float", /*merge_stderr=*/true);
  EXPECT_EQ(run.exit_code, 2) << run.output;  // docs/HWINFO.md: 2 for a bad argument
  EXPECT_NE(run.output.find("matmul_float"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("qlinear_matmul"), std::string::npos) << run.output;
}

TEST(HwinfoOptions, MissingPluginDirectoryIsRefused) {
  TempDir dir;
  const auto run = run_hwinfo("--plugin-path " + shell_quote((dir.path() / "absent").string()),
                              /*merge_stderr=*/true);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("absent"), std::string::npos) << run.output;
}

TEST(HwinfoOptions, PluginPathIsSearchedFirst) {
  TempDir dir;
  const json doc = run_hwinfo_json("--plugin-path " + shell_quote(dir.path().string()));
  ASSERT_TRUE(doc.contains("search_path"));
  ASSERT_FALSE(doc.at("search_path").empty());
  EXPECT_EQ(doc.at("search_path").front().get<std::string>(), dir.path().string());
}

// A file that only looks like a plugin: the report names it and why, the other plugins still
// load, and the tool still exits 0.
TEST(HwinfoOptions, BrokenPluginIsReportedAndTheRunSucceeds) {
  TempDir dir;
  const auto fake = dir.path() / "libqforge_plugin_hwinfo_test_fake.so";
  std::ofstream(fake) << "this is a text file, not an ELF shared library\n";
  const json doc = run_hwinfo_json("--plugin-path " + shell_quote(dir.path().string()));
  ASSERT_TRUE(doc.contains("failures"));
  bool reported = false;
  for (const json& f : doc.at("failures")) {
    if (f.at("path").get<std::string>() != fake.string()) continue;
    reported = true;
    EXPECT_EQ(f.at("kind"), "not_shared_library") << f.dump();
    EXPECT_FALSE(f.at("message").get<std::string>().empty());
  }
  EXPECT_TRUE(reported) << "no failure for " << fake << " in:\n" << doc.at("failures").dump(2);
  bool scalar_loaded = false;
  for (const json& p : doc.at("plugins")) scalar_loaded |= p.at("name") == "cpu_scalar";
  EXPECT_TRUE(scalar_loaded);
}

}  // namespace
