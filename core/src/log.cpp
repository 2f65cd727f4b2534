#include "qforge/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace qforge {
namespace {

constexpr std::array<std::string_view, 7> kLevelNames = {"trace", "debug",    "info", "warn",
                                                         "error", "critical", "off"};

spdlog::level::level_enum to_spdlog(LogLevel level) {
  return static_cast<spdlog::level::level_enum>(static_cast<int>(level));
}

LogLevel level_from_environment() {
  const char* env = std::getenv("QFORGE_LOG_LEVEL");
  if (env == nullptr) return LogLevel::warn;
  return parse_log_level(env).value_or(LogLevel::warn);
}

std::atomic<LogLevel>& threshold() {
  static std::atomic<LogLevel> level{level_from_environment()};
  return level;
}

// The sinks users add, called under one lock, so that a sink is never called concurrently.
class UserSinks final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::uint64_t add(LogSink sink) {
    std::lock_guard lock(mutex_);
    sinks_.emplace(++last_id_, std::move(sink));
    return last_id_;
  }
  void remove(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    sinks_.erase(id);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    const auto level = static_cast<LogLevel>(static_cast<int>(msg.level));
    for (auto& [id, sink] : sinks_) sink(level, text);
  }
  void flush_() override {}

 private:
  std::map<std::uint64_t, LogSink> sinks_;
  std::uint64_t last_id_ = 0;
};

struct Logger {
  std::shared_ptr<UserSinks> user_sinks = std::make_shared<UserSinks>();
  std::shared_ptr<spdlog::logger> spd;
  Logger() {
    auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    console->set_pattern("[qforge %^%l%$] %v");
    // Not registered in spdlog's global registry: an application's own "qforge" logger, or its
    // spdlog::drop_all(), does not touch this one.
    spd = std::make_shared<spdlog::logger>("qforge", spdlog::sinks_init_list{console, user_sinks});
    spd->set_level(spdlog::level::trace);  // the threshold is checked before spdlog is called
  }
};

Logger& logger() {
  static Logger instance;
  return instance;
}

}  // namespace

std::string_view to_string(LogLevel level) noexcept {
  const auto i = static_cast<std::size_t>(level);
  return i < kLevelNames.size() ? kLevelNames[i] : "?";
}

std::optional<LogLevel> parse_log_level(std::string_view text) noexcept {
  for (std::size_t i = 0; i < kLevelNames.size(); ++i)
    if (text == kLevelNames[i]) return static_cast<LogLevel>(i);
  if (text == "warning") return LogLevel::warn;
  if (text == "err") return LogLevel::error;
  return std::nullopt;
}

LogLevel log_level() noexcept { return threshold().load(std::memory_order_relaxed); }

void set_log_level(LogLevel level) noexcept { threshold().store(level, std::memory_order_relaxed); }

void log_message(LogLevel level, std::string_view message) noexcept {
  if (!log_enabled(level)) return;
  try {
    logger().spd->log(to_spdlog(level), spdlog::string_view_t(message.data(), message.size()));
  } catch (...) {
    // A message that cannot be written is lost; the caller's work goes on.
  }
}

std::uint64_t add_log_sink(LogSink sink) { return logger().user_sinks->add(std::move(sink)); }

void remove_log_sink(std::uint64_t id) noexcept {
  try {
    logger().user_sinks->remove(id);
  } catch (...) {
  }
}

}  // namespace qforge
