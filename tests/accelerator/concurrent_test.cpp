// Two processes tuning into one cache file at the same time: every decision of both survives,
// the file is never torn, and nothing is left behind.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support.h"

extern char** environ;

namespace {

using namespace qforge;
namespace fs = std::filesystem;

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0) << args[0];
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ConcurrentWriters, TwoProcessesMergeIntoOneCache) {
  const auto dir = acc_test::scratch_dir("c");
  const auto cache = dir / "tuning.json";
  const std::string plugin = std::string(QFORGE_PLUGIN_DIR) + "/libqforge_plugin_cpu_scalar.so";
  const int per_child = 6;
  const pid_t a =
      spawn({QFORGE_TUNE_CHILD, cache.string(), plugin, "0", std::to_string(per_child)});
  const pid_t b = spawn({QFORGE_TUNE_CHILD, cache.string(), plugin, std::to_string(per_child),
                         std::to_string(per_child)});
  EXPECT_EQ(wait_for(a), 0);
  EXPECT_EQ(wait_for(b), 0);

  std::ifstream in(cache);
  const auto doc = nlohmann::json::parse(in);  // throws (fails the test) on a torn file
  ASSERT_EQ(doc.at("machines").size(), 1u);
  EXPECT_EQ(doc.at("machines").begin()->at("entries").size(),
            static_cast<std::size_t>(2 * per_child));

  // Nothing set aside as corrupt, no temporary file left.
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name == "tuning.json" || name == "tuning.json.lock") << name;
  }

  // And the next process finds every decision.
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(plugin));
  Accelerator acc(registry, acc_test::options(cache));
  for (int i = 0; i < 2 * per_child; ++i) {
    const Shape shape{std::int64_t{1} << i, 8};
    EXPECT_EQ(
        acc.tune({{OpKind::quantize, QuantizeDesc{shape, QuantizationParams::per_tensor_symmetric(
                                                             DType::int8, 0.5f)}}})
            .source,
        DecisionSource::cache)
        << i;
  }
}

}  // namespace
