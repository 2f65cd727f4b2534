#include "qforge/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>

namespace qforge {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::get("qforge");
    if (!l) l = spdlog::stderr_color_mt("qforge");
    auto level = spdlog::level::warn;
    if (const char* env = std::getenv("QFORGE_LOG_LEVEL"))
      level = spdlog::level::from_str(env);  // unknown names give "off" in spdlog; keep warn
    if (const char* env = std::getenv("QFORGE_LOG_LEVEL");
        env && level == spdlog::level::off && std::string_view(env) != "off")
      level = spdlog::level::warn;
    l->set_level(level);
    l->set_pattern("[qforge %^%l%$] %v");
    return l;
  }();
  return *instance;
}

}  // namespace qforge
