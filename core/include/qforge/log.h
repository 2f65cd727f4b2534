// qforge's log: messages at a level, written to stderr as "[qforge LEVEL] message" when the level
// is at or above the threshold. The threshold comes from QFORGE_LOG_LEVEL (trace, debug, info,
// warn, error, critical, off; default warn; an unknown name keeps warn) and can be changed at run
// time. Applications that route messages into their own logging add a sink.
//
// Only qforge types cross this header, so that users and plugins need no logging library of
// ours; spdlog writes the messages inside libqforge_base. Callers format the text themselves
// and test log_enabled() first where formatting costs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "qforge/export.h"

namespace qforge {

enum class LogLevel : std::uint8_t { trace, debug, info, warn, error, critical, off };
QFORGE_API std::string_view to_string(LogLevel level) noexcept;
QFORGE_API std::optional<LogLevel> parse_log_level(std::string_view text) noexcept;

QFORGE_API LogLevel log_level() noexcept;
QFORGE_API void set_log_level(LogLevel level) noexcept;
inline bool log_enabled(LogLevel level) noexcept {
  return level != LogLevel::off && level >= log_level();
}

// Writes `message` when log_enabled(level). Never throws (a failing sink loses the message).
QFORGE_API void log_message(LogLevel level, std::string_view message) noexcept;

// Receives every message that passes the threshold, besides stderr, until removed. Sinks may be
// called from any thread; calls to one sink are not concurrent.
using LogSink = std::function<void(LogLevel, std::string_view)>;
QFORGE_API std::uint64_t add_log_sink(LogSink sink);
QFORGE_API void remove_log_sink(std::uint64_t id) noexcept;

}  // namespace qforge
