// The persistent tuning cache: hits and misses, invalidation when the machine or a plugin
// changes, recovery from a damaged file, clearing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "qforge/fnv1a.h"
#include "support.h"

namespace {

using namespace qforge;
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  out << text;
}

std::vector<fs::path> files_starting(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  return out;
}

AcceleratorOptions fast(const fs::path& cache) {
  auto o = acc_test::options(cache);
  o.test_hooks = acc_test::injected({{"acc_good[0]/fast", 1e-6}, {"acc_good[0]/slow", 2e-6}});
  return o;
}

TEST(TuningCache, ASecondAcceleratorReusesTheDecision) {
  const auto cache =
      acc_test::scratch_dir("c") / "sub" / "tuning.json";  // the directory is created
  const auto w = acc_test::small_matmul(8);
  {
    Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
    const TuneReport r = acc.tune(w);
    EXPECT_EQ(r.source, DecisionSource::tuned);
    EXPECT_EQ(r.winner.label(), "acc_good[0]/fast");
    EXPECT_EQ(acc.stats().buckets_tuned, 1u);
    // Asked again: from memory, nothing measured.
    EXPECT_EQ(acc.tune(w).source, DecisionSource::memory);
    EXPECT_EQ(acc.stats().buckets_tuned, 1u);
  }
  ASSERT_TRUE(fs::exists(cache));
  Accelerator again(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
  const TuneReport r = again.tune(w);
  EXPECT_EQ(r.source, DecisionSource::cache);
  EXPECT_EQ(r.winner.label(), "acc_good[0]/fast");
  EXPECT_EQ(again.stats().cache_hits, 1u);
  EXPECT_EQ(again.stats().buckets_tuned, 0u);
  // The report read back carries every candidate's time.
  ASSERT_EQ(r.candidates.size(), 3u);
  for (const auto& c : r.candidates) {
    EXPECT_EQ(c.status, CandidateStatus::measured) << c.id.label();
    EXPECT_GT(c.seconds, 0) << c.id.label();
  }
  // Another shape of the same bucket is decided already; in a fresh process it hits the cache.
  EXPECT_EQ(again.tune(acc_test::small_matmul(7)).source, DecisionSource::memory);
  Accelerator third(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
  EXPECT_EQ(third.tune(acc_test::small_matmul(5)).source, DecisionSource::cache);
  // Another dtype misses.
  auto other = w;
  std::get<MatmulDesc>(other.op.desc).a =
      QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f);
  EXPECT_EQ(again.tune(other).source, DecisionSource::tuned);
  EXPECT_EQ(again.stats().buckets_tuned, 1u);
}

TEST(TuningCache, RetuneMeasuresAgainAndOverwrites) {
  const auto cache = acc_test::scratch_dir("c") / "tuning.json";
  const auto w = acc_test::small_matmul(8);
  Accelerator first(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
  first.tune(w);
  auto o = fast(cache);
  o.test_hooks = acc_test::injected({{"acc_good[0]/fast", 3e-6}, {"acc_good[0]/slow", 2e-6}});
  Accelerator second(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
  EXPECT_EQ(second.tune(w).winner.kernel, "fast");  // cached
  const TuneReport r = second.tune(w, /*retune=*/true);
  EXPECT_EQ(r.source, DecisionSource::tuned);
  EXPECT_EQ(r.winner.kernel, "slow");
  Accelerator third(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
  EXPECT_EQ(third.tune(w).winner.kernel, "slow");
}

TEST(TuningCache, AChangedPluginSetOrVersionRetunes) {
  const auto cache = acc_test::scratch_dir("c") / "tuning.json";
  const auto w = acc_test::small_matmul(8);
  ::unsetenv("QFORGE_ACC_FIXTURE_VERSION");
  HardwareFingerprint fp1;
  {
    Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
    acc.tune(w);
    fp1 = acc.fingerprint();
  }
  {
    // A plugin more (or less) is another machine as far as the cache is concerned.
    Accelerator acc(acc_test::plugins({"cpu_scalar"}), fast(cache));
    EXPECT_NE(acc.fingerprint().id(), fp1.id());
    EXPECT_EQ(acc.tune(w).source, DecisionSource::tuned);
  }
  {
    ::setenv("QFORGE_ACC_FIXTURE_VERSION", "2.0", 1);
    Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
    ::unsetenv("QFORGE_ACC_FIXTURE_VERSION");
    EXPECT_NE(acc.fingerprint().id(), fp1.id());
    EXPECT_EQ(acc.tune(w).source, DecisionSource::tuned);
  }
  TuningCache c(cache);
  EXPECT_EQ(c.machine_count(), 3u);
  // The original section is untouched and still serves the original plugins.
  Accelerator back(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
  EXPECT_EQ(back.fingerprint().id(), fp1.id());
  EXPECT_EQ(back.tune(w).source, DecisionSource::cache);
}

TEST(TuningCache, FingerprintNamesCpuPluginsAndDevices) {
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_device"}),
                  fast(acc_test::scratch_dir("c") / "t.json"));
  const HardwareFingerprint& fp = acc.fingerprint();
  EXPECT_FALSE(fp.cpu_model.empty());
  ASSERT_EQ(fp.plugins.size(), 2u);
  EXPECT_EQ(fp.plugins[0].name, "acc_device");  // sorted by name
  ASSERT_EQ(fp.plugins[0].devices.size(), 1u);
  EXPECT_EQ(fp.plugins[0].devices[0], "fixture accelerator (gpu)");
  EXPECT_EQ(fp.id().size(), 16u);
  HardwareFingerprint other = fp;
  other.plugins[0].devices[0] += " driver=2";
  EXPECT_NE(other.id(), fp.id());
}

// The fingerprint's hash must not change between builds, or every cache file in use would be
// tuned again: FNV-1a's published 64-bit test vectors.
TEST(TuningCache, FingerprintHashIsFnv1a) {
  static_assert(qforge::fnv1a("") == 0xcbf29ce484222325ull);
  EXPECT_EQ(qforge::fnv1a("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(qforge::fnv1a("foobar"), 0x85944171f73967e8ull);
}

class CorruptCache : public ::testing::TestWithParam<std::pair<const char*, std::string>> {};

TEST_P(CorruptCache, IsReportedOnceSetAsideAndRebuilt) {
  const auto dir = acc_test::scratch_dir("c");
  const auto cache = dir / "tuning.json";
  write(cache, GetParam().second);
  const auto w = acc_test::small_matmul(8);
  {
    Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
    ASSERT_NE(acc.cache(), nullptr);
    ASSERT_EQ(acc.cache()->warnings().size(), 1u);
    EXPECT_NE(acc.cache()->warnings()[0].find("set aside as"), std::string::npos)
        << acc.cache()->warnings()[0];
    EXPECT_EQ(acc.tune(w).source, DecisionSource::tuned);
    acc.tune(acc_test::small_matmul(64));
    EXPECT_EQ(acc.cache()->warnings().size(), 1u);  // once, however often the file is used
  }
  const auto moved = files_starting(dir, std::string("tuning.json.") + GetParam().first + "-");
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(slurp(moved[0]), GetParam().second);  // kept for inspection, byte for byte
  // The rebuilt file is valid and serves the next process.
  Accelerator next(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
  EXPECT_TRUE(next.cache()->warnings().empty());
  EXPECT_EQ(next.tune(w).source, DecisionSource::cache);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, CorruptCache,
    ::testing::Values(
        std::pair<const char*, std::string>{"corrupt", "this is not json {"},
        std::pair<const char*, std::string>{"corrupt", ""},
        std::pair<const char*, std::string>{
            "corrupt",
            R"({"format": "qforge-tuning-cache", "version": 1, "machines": {"0123": {"fingerp)"},
        std::pair<const char*, std::string>{"corrupt", R"({"format": "something else"})"},
        std::pair<const char*, std::string>{
            "corrupt",
            R"({"format": "qforge-tuning-cache", "version": 1, "machines": {"x": {"fingerprint": 3}}})"},
        std::pair<const char*, std::string>{
            "incompatible",
            R"({"format": "qforge-tuning-cache", "version": 99, "machines": {}})"}));

TEST(TuningCache, ReadOnlyReportsDamageButLeavesTheFile) {
  const auto dir = acc_test::scratch_dir("c");
  const auto cache = dir / "tuning.json";
  write(cache, "{ truncated");
  TuningCache c(cache, CacheMode::read_only);
  ASSERT_EQ(c.warnings().size(), 1u);
  EXPECT_NE(c.warnings()[0].find("left in place"), std::string::npos) << c.warnings()[0];
  EXPECT_EQ(slurp(cache), "{ truncated");
  EXPECT_TRUE(files_starting(dir, "tuning.json.corrupt").empty());
  EXPECT_THROW(c.store(HardwareFingerprint{}, CacheEntry{}), Error);
  EXPECT_THROW(c.clear(), Error);
}

TEST(TuningCache, ReadOnlyFindsWhatATunerWrote) {
  const auto cache = acc_test::scratch_dir("c") / "tuning.json";
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
  const auto w = acc_test::small_matmul(8);
  acc.tune(w);
  // What qforge-hwinfo does: the fingerprint of the loaded plugins, the workload's key.
  TuningCache c(cache, CacheMode::read_only);
  const auto e = c.find(hardware_fingerprint(acc.plugins()), workload_cache_key(w));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->winner.label(), "acc_good[0]/fast");
  EXPECT_EQ(c.entries(acc.fingerprint()).size(), 1u);
  EXPECT_FALSE(
      c.find(hardware_fingerprint(acc_test::plugins({"cpu_scalar"})), workload_cache_key(w)));
}

TEST(TuningCache, ClearForgetsEverything) {
  const auto cache = acc_test::scratch_dir("c") / "tuning.json";
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
  const auto w = acc_test::small_matmul(8);
  acc.tune(w);
  ASSERT_TRUE(fs::exists(cache));
  acc.clear_cache();
  EXPECT_FALSE(fs::exists(cache));
  EXPECT_EQ(acc.tune(w).source, DecisionSource::tuned);
}

TEST(TuningCache, FileIsReadableJsonWithTheDocumentedLayout) {
  const auto cache = acc_test::scratch_dir("c") / "tuning.json";
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), fast(cache));
  const TuneReport r = acc.tune(acc_test::small_matmul(8));
  const auto doc = nlohmann::json::parse(slurp(cache));
  EXPECT_EQ(doc.at("format"), "qforge-tuning-cache");
  EXPECT_EQ(doc.at("version"), 1);
  const auto& m = doc.at("machines").at(acc.fingerprint().id());
  EXPECT_EQ(m.at("fingerprint").at("cpu_model"), acc.fingerprint().cpu_model);
  const auto& e = m.at("entries").at(r.key);
  EXPECT_EQ(e.at("winner").at("plugin"), "acc_good");
  EXPECT_EQ(e.at("winner").at("kernel"), "fast");
  EXPECT_EQ(e.at("workload"), r.bucket);
  EXPECT_EQ(e.at("candidates").size(), 3u);
  // No temporary files are left behind.
  EXPECT_TRUE(files_starting(cache.parent_path(), "tuning.json.tmp").empty());
}

TEST(TuningCache, DefaultPathFollowsTheEnvironment) {
  const std::string home = std::getenv("HOME") ? std::getenv("HOME") : "";
  ::setenv("QFORGE_TUNING_CACHE", "/tmp/x/y.json", 1);
  EXPECT_EQ(TuningCache::default_path(), fs::path("/tmp/x/y.json"));
  ::unsetenv("QFORGE_TUNING_CACHE");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(TuningCache::default_path(), fs::path("/tmp/xdg/qforge/tuning.json"));
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/tmp/home", 1);
  EXPECT_EQ(TuningCache::default_path(), fs::path("/tmp/home/.cache/qforge/tuning.json"));
  ::setenv("HOME", home.c_str(), 1);
}

TEST(TuningCache, AnUnwritableCacheKeepsDecisionsInMemory) {
  const auto dir = acc_test::scratch_dir("c");
  write(dir / "file", "x");
  // The cache's directory would have to be inside a regular file: it cannot be created.
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}),
                  fast(dir / "file" / "tuning.json"));
  const auto w = acc_test::small_matmul(8);
  EXPECT_EQ(acc.tune(w).source, DecisionSource::tuned);
  EXPECT_EQ(acc.tune(w).source, DecisionSource::memory);
}

}  // namespace
