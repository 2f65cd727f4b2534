#include "test_support.h"

#include <cstdlib>
#include <mutex>
#include <random>

#include "qforge/log.h"

namespace qforge::test {

ScopedEnv::ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
  if (const char* old = std::getenv(name_.c_str())) old_ = old;
  if (value) ::setenv(name_.c_str(), value->c_str(), 1);
  else ::unsetenv(name_.c_str());
}

ScopedEnv::~ScopedEnv() {
  if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
  else ::unsetenv(name_.c_str());
}

TempDir::TempDir() {
  std::random_device rd;
  const auto base = std::filesystem::temp_directory_path();
  for (;;) {
    path_ = base / ("qforge_plugin_test_" + std::to_string(rd()));
    if (std::filesystem::create_directory(path_)) break;
  }
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path TempDir::copy_in(const std::filesystem::path& file, std::string name) const {
  const auto target = path_ / (name.empty() ? file.filename().string() : name);
  std::filesystem::copy_file(file, target, std::filesystem::copy_options::overwrite_existing);
  return target;
}

struct LogCapture::Impl {
  std::mutex mutex;
  std::string text;
  std::uint64_t sink = 0;
  LogLevel old_level = LogLevel::warn;
};

LogCapture::LogCapture() : impl_(std::make_unique<Impl>()) {
  impl_->old_level = log_level();
  // Whatever QFORGE_LOG_LEVEL says, the tests need to see the warnings.
  if (log_level() > LogLevel::warn) set_log_level(LogLevel::warn);
  Impl* impl = impl_.get();
  impl_->sink = add_log_sink([impl](LogLevel level, std::string_view message) {
    if (level < LogLevel::warn) return;
    std::lock_guard lock(impl->mutex);
    impl->text.append(to_string(level)).append(" ").append(message).append("\n");
  });
}

LogCapture::~LogCapture() {
  remove_log_sink(impl_->sink);
  set_log_level(impl_->old_level);
}

std::string LogCapture::text() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->text;
}

int LogCapture::count(std::string_view needle) const {
  std::istringstream lines(text());
  int n = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find(needle) != std::string::npos) ++n;
  return n;
}

const PluginFailure* failure_for(const PluginRegistry& registry, std::string_view file_name) {
  const PluginFailure* found = nullptr;
  for (const auto& f : registry.failures())
    if (f.path.filename() == file_name) found = &f;
  return found;
}

int failure_count(const PluginRegistry& registry, std::string_view file_name) {
  int n = 0;
  for (const auto& f : registry.failures())
    if (f.path.filename() == file_name) ++n;
  return n;
}

std::uint64_t test_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* env = std::getenv("QFORGE_TEST_SEED")) return std::stoull(env);
    std::random_device rd;
    return (std::uint64_t{rd()} << 32) | std::uint64_t{rd()};
  }();
  return seed;
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec);
}

}  // namespace qforge::test
