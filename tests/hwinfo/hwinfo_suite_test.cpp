// qforge-hwinfo's default-suite section: which plugins serve each workload of the quick tuning
// suite, and the tuned winner read (read-only) from the tuning cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "qforge/accelerator.h"
#include "qforge/bench/suites.h"
#include "qforge/registry.h"
#include "qforge/tuning_cache.h"
#include "tool_runner.h"

namespace {

using json = nlohmann::ordered_json;
using qforge::test::run_hwinfo;
using qforge::test::run_hwinfo_json;
using qforge::test::TempDir;

// Points the tool (a child process) at a cache file inside `dir`.
class CacheInTempDir {
 public:
  explicit CacheInTempDir(const TempDir& dir) : path_(dir.path() / "tuning.json") {
    if (const char* old = std::getenv("QFORGE_TUNING_CACHE")) old_ = old;
    ::setenv("QFORGE_TUNING_CACHE", path_.c_str(), 1);
  }
  ~CacheInTempDir() {
    if (old_) ::setenv("QFORGE_TUNING_CACHE", old_->c_str(), 1);
    else ::unsetenv("QFORGE_TUNING_CACHE");
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::optional<std::string> old_;
};

TEST(HwinfoSuite, EveryWorkloadIsListedWithThePluginsServingIt) {
  TempDir dir;
  CacheInTempDir cache(dir);
  const json doc = run_hwinfo_json();
  ASSERT_TRUE(doc.contains("default_suite")) << doc.dump(2);
  const json& suite = doc.at("default_suite");
  EXPECT_EQ(suite.at("cache_path").get<std::string>(), cache.path().string());
  const auto expected = qforge::default_suite();
  ASSERT_EQ(suite.at("workloads").size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const json& w = suite.at("workloads")[i];
    EXPECT_EQ(w.at("name").get<std::string>(), expected[i].name);
    EXPECT_TRUE(w.at("winner").is_null()) << "no cache was written, yet: " << w.dump();
    bool scalar = false;
    for (const json& p : w.at("served_by")) scalar |= p.get<std::string>() == "cpu_scalar";
    EXPECT_TRUE(scalar) << "cpu_scalar runs every op the reference defines: " << w.dump();
  }
  EXPECT_FALSE(std::filesystem::exists(cache.path())) << "the report must not write the cache";
}

TEST(HwinfoSuite, ShowsTheTunedWinnerFromTheCache) {
  TempDir dir;
  CacheInTempDir cache(dir);
  // The same plugins the tool will load (same search path: this binary sits beside it), so the
  // same fingerprint.
  qforge::PluginRegistry registry;
  registry.load_default();
  const auto fingerprint = qforge::hardware_fingerprint(registry.plugins());
  const auto workload = qforge::default_suite().front();
  qforge::CacheEntry entry;
  entry.key = qforge::workload_cache_key(workload.workload);
  entry.workload = workload.name;
  entry.winner = {"cpu_scalar", 0, "scalar_reference"};
  entry.seconds = 2.5e-6;
  {
    qforge::TuningCache writer(cache.path());
    writer.store(fingerprint, entry);
  }

  const json doc = run_hwinfo_json();
  const json& first = doc.at("default_suite").at("workloads").at(0);
  EXPECT_EQ(first.at("winner").get<std::string>(), entry.winner.label()) << first.dump();
  EXPECT_DOUBLE_EQ(first.at("winner_seconds").get<double>(), 2.5e-6);

  const auto text = run_hwinfo("--verbose");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.output.find("Default tuning suite"), std::string::npos);
  EXPECT_NE(text.output.find("winner     " + entry.winner.label()), std::string::npos)
      << text.output;
}

TEST(HwinfoSuite, ACorruptCacheIsReportedAndLeftInPlace) {
  TempDir dir;
  CacheInTempDir cache(dir);
  { std::ofstream(cache.path()) << "{ \"truncated\": "; }
  const json doc = run_hwinfo_json();
  EXPECT_EQ(doc.at("plugins").empty(), false);
  EXPECT_FALSE(doc.at("default_suite").at("cache_note").get<std::string>().empty());
  EXPECT_TRUE(std::filesystem::exists(cache.path())) << "read-only: the damaged file stays";
}

}  // namespace
