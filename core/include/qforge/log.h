// Logging through spdlog. The level comes from QFORGE_LOG_LEVEL (trace, debug, info, warn,
// error, critical, off; default warn). Messages go to stderr.
#pragma once

#include <memory>

#include "qforge/export.h"

namespace spdlog {
class logger;
}

namespace qforge {

// The "qforge" logger, created on first use with the level from QFORGE_LOG_LEVEL.
QFORGE_API spdlog::logger& logger();

}  // namespace qforge
