// A tuning cache damaged in every way the disk or a user can damage it heals: the file is set
// aside with one warning naming it, the field and the reason, and the next run works. Files that
// are no cache at all (a FIFO, a device, 64 MiB of anything) are refused without blocking or
// reading without bound; a read-only cache is used but left alone; temporary files of a killed
// writer are cleaned up.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <random>

#include "qforge/input_file.h"
#include "support.h"

namespace {

using namespace qforge;
namespace fs = std::filesystem;
using nlohmann::json;

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

std::vector<LoadedPlugin> plugins() { return acc_test::plugins({"cpu_scalar", "acc_good"}); }

// A valid cache with one entry, as a tuner writes it.
json valid_document(const fs::path& dir) {
  const auto cache = dir / "valid.json";
  Accelerator acc(plugins(), fast(cache));
  acc.tune(acc_test::small_matmul(8));
  return json::parse(slurp(cache));
}

json& first_entry(json& doc) { return doc["machines"].begin().value()["entries"].begin().value(); }

struct Damage {
  const char* name;
  const char* kind;   // what the set-aside name says: "corrupt" or "incompatible"
  const char* field;  // what the warning must name
  std::function<std::string(json)> make;
};

std::string dump_with(json doc, const std::function<void(json&)>& f) {
  f(doc);
  return doc.dump(1);
}

const Damage kDamages[] = {
    {"MachinesIsAnArray", "corrupt", "machines",
     [](json d) { return dump_with(d, [](json& j) { j["machines"] = json::array(); }); }},
    {"EntriesIsAnArray", "corrupt", "entries",
     [](json d) {
       return dump_with(d,
                        [](json& j) { j["machines"].begin().value()["entries"] = json::array(); });
     }},
    {"SamplesIs1e300", "corrupt", "samples",
     [](json d) {
       return dump_with(d, [](json& j) { first_entry(j)["candidates"][0]["samples"] = 1e300; });
     }},
    {"SamplesIsAFraction", "corrupt", "samples",
     [](json d) {
       return dump_with(d, [](json& j) { first_entry(j)["candidates"][0]["samples"] = 2.5; });
     }},
    {"WinnerDeviceIs3e9", "corrupt", "winner.device",
     [](json d) {
       return dump_with(d, [](json& j) { first_entry(j)["winner"]["device"] = 3e9; });
     }},
    {"WinnerDeviceIsBeyondInt", "corrupt", "winner.device",
     [](json d) {
       return dump_with(d, [](json& j) { first_entry(j)["winner"]["device"] = 4294967297u; });
     }},
    {"WinnerDeviceIsNegative", "corrupt", "winner.device",
     [](json d) { return dump_with(d, [](json& j) { first_entry(j)["winner"]["device"] = -1; }); }},
    {"SecondsIsAString", "corrupt", "seconds",
     [](json d) { return dump_with(d, [](json& j) { first_entry(j)["seconds"] = "fast"; }); }},
    {"VersionIs2To32Plus1", "incompatible", "4294967297",
     [](json d) { return dump_with(d, [](json& j) { j["version"] = 4294967297u; }); }},
    {"VersionIsAFloat", "corrupt", "version",
     [](json d) { return dump_with(d, [](json& j) { j["version"] = 1.0; }); }},
    {"NumberTooLargeForADouble", "corrupt", "1e400",
     [](json d) {
       // nlohmann throws out_of_range (not parse_error) for this while parsing.
       std::string text = d.dump(1);
       const auto at = text.find("\"seconds\": ");
       return text.substr(0, at) + "\"seconds\": 1e400" + text.substr(text.find(',', at));
     }},
    {"FingerprintPluginsIsAnObject", "corrupt", "fingerprint.plugins",
     [](json d) {
       return dump_with(d, [](json& j) {
         j["machines"].begin().value()["fingerprint"]["plugins"] = json::object();
       });
     }},
};

class DamagedCache : public ::testing::TestWithParam<Damage> {};

TEST_P(DamagedCache, IsSetAsideOnceWithFileAndFieldNamedAndTheNextRunWorks) {
  const auto dir = acc_test::scratch_dir("c");
  const std::string text = GetParam().make(valid_document(dir));
  const auto cache = dir / "tuning.json";
  write(cache, text);

  const auto problem = tuning_cache_problem(text);
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find(GetParam().field), std::string::npos) << *problem;

  const auto w = acc_test::small_matmul(8);
  for (int run = 0; run < 2; ++run) {
    // Before the fix every run after the damage ended in an nlohmann exception.
    Accelerator acc(plugins(), fast(cache));
    ASSERT_NE(acc.cache(), nullptr);
    if (run == 0) {
      ASSERT_EQ(acc.cache()->warnings().size(), 1u);
      const std::string warning = acc.cache()->warnings()[0];
      EXPECT_NE(warning.find(cache.string()), std::string::npos) << warning;
      EXPECT_NE(warning.find(GetParam().field), std::string::npos) << warning;
      EXPECT_NE(warning.find("set aside as"), std::string::npos) << warning;
      EXPECT_EQ(acc.tune(w).source, DecisionSource::tuned);
    } else {
      EXPECT_TRUE(acc.cache()->warnings().empty());
      EXPECT_EQ(acc.tune(w).source, DecisionSource::cache);
    }
  }
  const auto moved = files_starting(dir, std::string("tuning.json.") + GetParam().kind + "-");
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(slurp(moved[0]), text);
}

INSTANTIATE_TEST_SUITE_P(Kinds, DamagedCache, ::testing::ValuesIn(kDamages),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HostileCache, RandomDamageNeverEscapesTheCheck) {
  const auto dir = acc_test::scratch_dir("c");
  const std::string text = valid_document(dir).dump(1);
  ASSERT_EQ(tuning_cache_problem(text), std::nullopt);
  const std::uint64_t seed = acc_test::test_seed();
  std::mt19937_64 rng(seed);
  const char pieces[] = "{}[]\",:0123456789.eE-+ntf ";
  int refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string t = text;
    for (int i = 0; i < 2; ++i)
      t[std::uniform_int_distribution<std::size_t>(0, t.size() - 1)(rng)] =
          pieces[std::uniform_int_distribution<std::size_t>(0, sizeof pieces - 2)(rng)];
    std::optional<std::string> p;
    ASSERT_NO_THROW(p = tuning_cache_problem(t)) << "seed " << seed << "\n" << t;
    refused += p.has_value();
  }
  EXPECT_GT(refused, 0) << "seed " << seed;
}

// Runs `f` on another thread; fails when it takes longer than 10 s.
template <class F>
void finishes_quickly(F&& f, const fs::path& fifo) {
  auto done = std::async(std::launch::async, std::forward<F>(f));
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "blocked on the FIFO";
    const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);  // releases a blocked reader
    if (fd >= 0) ::close(fd);
  }
  done.get();
}

TEST(HostileCache, FifoIsRefusedWithoutBlocking) {
  const auto dir = acc_test::scratch_dir("c");
  const auto fifo = dir / "tuning.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  finishes_quickly(
      [&] {
        try {
          TuningCache c(fifo);
          ADD_FAILURE() << "a FIFO was accepted as a tuning cache";
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::io);
          EXPECT_NE(std::string(e.what()).find("FIFO"), std::string::npos) << e.what();
        }
        // The accelerator works without a cache.
        Accelerator acc(plugins(), fast(fifo));
        EXPECT_EQ(acc.cache(), nullptr);
        EXPECT_EQ(acc.tune(acc_test::small_matmul(8)).source, DecisionSource::tuned);
      },
      fifo);
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO is not renamed or replaced";
}

TEST(HostileCache, DeviceIsRefusedWithoutReading) {
  // Before: read until bad_alloc.
  try {
    TuningCache c("/dev/zero");
    ADD_FAILURE() << "/dev/zero was accepted as a tuning cache";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::io);
    EXPECT_NE(std::string(e.what()).find("character device"), std::string::npos) << e.what();
  }
  Accelerator acc(plugins(), fast("/dev/zero"));
  EXPECT_EQ(acc.cache(), nullptr);
}

TEST(HostileCache, OversizedFileIsSetAsideUnread) {
  const auto dir = acc_test::scratch_dir("c");
  const auto cache = dir / "tuning.json";
  write(cache, "{");
  fs::resize_file(cache, kMaxInputFileBytes + 1);  // sparse: costs no disk
  TuningCache c(cache);
  ASSERT_EQ(c.warnings().size(), 1u);
  EXPECT_NE(c.warnings()[0].find("expected at most 64 MiB"), std::string::npos) << c.warnings()[0];
  EXPECT_EQ(files_starting(dir, "tuning.json.corrupt-").size(), 1u);
  EXPECT_FALSE(fs::exists(cache));
}

TEST(HostileCache, ReadOnlyCacheIsUsedButNeverReplaced) {
  const auto dir = acc_test::scratch_dir("c");
  const auto cache = dir / "tuning.json";
  {
    Accelerator acc(plugins(), fast(cache));
    acc.tune(acc_test::small_matmul(8));
  }
  fs::permissions(cache, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string before = slurp(cache);
  struct stat st_before {};
  ASSERT_EQ(::stat(cache.c_str(), &st_before), 0);
  {
    Accelerator acc(plugins(), fast(cache));
    ASSERT_NE(acc.cache(), nullptr);
    EXPECT_FALSE(acc.cache()->writable());
    ASSERT_EQ(acc.cache()->warnings().size(), 1u);
    EXPECT_NE(acc.cache()->warnings()[0].find("read-only"), std::string::npos);
    EXPECT_EQ(acc.tune(acc_test::small_matmul(8)).source, DecisionSource::cache);  // still read
    EXPECT_EQ(acc.tune(acc_test::small_matmul(64)).source, DecisionSource::tuned);
    EXPECT_THROW(acc.cache()->store(acc.fingerprint(), CacheEntry{}), Error);
    EXPECT_THROW(acc.cache()->clear(), Error);
  }
  struct stat st_after {};
  ASSERT_EQ(::stat(cache.c_str(), &st_after), 0);
  EXPECT_EQ(st_after.st_ino, st_before.st_ino) << "the read-only file was replaced";
  EXPECT_EQ(slurp(cache), before);
}

TEST(HostileCache, DamagedReadOnlyCacheIsLeftInPlace) {
  const auto dir = acc_test::scratch_dir("c");
  const auto cache = dir / "tuning.json";
  write(cache, R"({"format": "qforge-tuning-cache", "version": 1, "machines": []})");
  fs::permissions(cache, fs::perms::owner_read);
  Accelerator acc(plugins(), fast(cache));
  ASSERT_NE(acc.cache(), nullptr);
  EXPECT_EQ(acc.tune(acc_test::small_matmul(8)).source, DecisionSource::tuned);
  EXPECT_TRUE(fs::exists(cache));
  EXPECT_TRUE(files_starting(dir, "tuning.json.corrupt").empty());
  bool said = false;
  for (const auto& w : acc.cache()->warnings())
    said |= w.find("left in place (the file is read-only)") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(HostileCache, StaleTemporaryFilesOfAKilledWriterAreRemoved) {
  const auto dir = acc_test::scratch_dir("c");
  const auto cache = dir / "tuning.json";
  const auto stale = dir / "tuning.json.tmp-4242-123456";
  const auto fresh = dir / "tuning.json.tmp-4243-654321";
  const auto other = dir / "other.json.tmp-4244-1";
  for (const auto& p : {stale, fresh, other}) write(p, "{ half written");
  const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(5);
  fs::last_write_time(stale, old);
  fs::last_write_time(other, old);
  Accelerator acc(plugins(), fast(cache));
  acc.tune(acc_test::small_matmul(8));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh)) << "a live writer's file is not touched";
  EXPECT_TRUE(fs::exists(other)) << "only this cache's temporary files";
}

}  // namespace
