// Formatted log messages inside core: the text is formatted (fmt) only when the level passes.
#pragma once

#include <fmt/format.h>

#include <utility>

#include "qforge/log.h"

namespace qforge {

template <class... Args>
void log_format(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(level)) log_message(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace qforge
