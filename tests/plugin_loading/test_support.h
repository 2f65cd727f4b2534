// Helpers shared by the plugin-loading tests: fixture locations, environment and temporary
// directories that clean up after themselves, and a capture of qforge's log.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "qforge/registry.h"

namespace qforge::test {

// Set by tests/plugin_loading/CMakeLists.txt.
inline std::filesystem::path broken_plugin_dir() { return QFORGE_BROKEN_PLUGIN_DIR; }
inline std::filesystem::path fixture_plugin_dir() { return QFORGE_FIXTURE_PLUGIN_DIR; }
inline std::filesystem::path plugin_dir() { return QFORGE_PLUGIN_DIR; }
inline std::filesystem::path cpu_scalar_file() {
  return plugin_dir() / "libqforge_plugin_cpu_scalar.so";
}
inline std::filesystem::path fixture_file() {
  return fixture_plugin_dir() / "libqforge_plugin_fixture.so";
}

// Sets (or with nullopt, unsets) an environment variable and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// A fresh directory under the system temp dir, removed with its contents afterwards.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Copies `file` into this directory under `name` (default: its own name); returns the copy.
  std::filesystem::path copy_in(const std::filesystem::path& file, std::string name = {}) const;

 private:
  std::filesystem::path path_;
};

// Collects what qforge's log (log.h) writes at warn level and above while it lives.
class LogCapture {
 public:
  LogCapture();
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::string text() const;
  // Lines containing `needle`.
  int count(std::string_view needle) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The one failure recorded for a file of this name, or nullptr.
const PluginFailure* failure_for(const PluginRegistry& registry, std::string_view file_name);
// The failures recorded for a file of this name.
int failure_count(const PluginRegistry& registry, std::string_view file_name);

// The seed of this test run: QFORGE_TEST_SEED when set, else fresh from std::random_device.
std::uint64_t test_seed();

// Same file, whichever spelling of its path (symlinks, "..").
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace qforge::test
