// AcceleratorOptions::from_environment: the knobs a user can turn without code.
#include <cstdlib>
#include <string>

#include "qforge/accelerator.h"
#include "qforge/error.h"

namespace qforge {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

bool parse_switch(const char* name, const std::string& v) {
  if (v == "1" || v == "on" || v == "true" || v == "yes") return true;
  if (v == "0" || v == "off" || v == "false" || v == "no") return false;
  throw Error(ErrorCode::invalid_argument,
              std::string(name) + " = '" + v + "'; expected 1/on/true or 0/off/false");
}

double parse_seconds(const char* name, const std::string& v) {
  std::size_t used = 0;
  double s = -1;
  try {
    s = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || !(s > 0))
    throw Error(ErrorCode::invalid_argument,
                std::string(name) + " = '" + v + "'; expected a number of seconds > 0");
  return s;
}

}  // namespace

AcceleratorOptions AcceleratorOptions::from_environment() {
  AcceleratorOptions o;
  if (auto v = env("QFORGE_ONLINE_TUNING"))
    o.online_tuning = parse_switch("QFORGE_ONLINE_TUNING", *v);
  if (auto v = env("QFORGE_TUNING_CACHE")) {
    if (*v == "off") o.use_cache = false;
    else o.cache_path = *v;
  }
  if (auto v = env("QFORGE_TUNING_BUDGET"))
    o.budget.per_workload_s = parse_seconds("QFORGE_TUNING_BUDGET", *v);
  if (auto v = env("QFORGE_TUNING_TOTAL_BUDGET"))
    o.budget.total_s = parse_seconds("QFORGE_TUNING_TOTAL_BUDGET", *v);
  if (auto v = env("QFORGE_TUNING_HANG")) o.budget.hang_s = parse_seconds("QFORGE_TUNING_HANG", *v);
  return o;
}

}  // namespace qforge
