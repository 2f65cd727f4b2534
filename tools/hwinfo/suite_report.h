// Which workloads of the default tuning suite (qforge-bench --suite quick) each loaded plugin can
// serve, and the tuned winner of each workload when the tuning cache holds one for this machine
// and plugin set. The cache is opened read-only: the report never writes or moves it.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qforge/registry.h"
#include "qforge/tuning_cache.h"

namespace qforge::hwinfo {

struct SuiteRow {
  std::string workload;                // the suite's name for it
  std::string description;             // qforge::describe() of its descriptor
  std::vector<std::string> served_by;  // plugins whose supports() accepts it
  std::optional<CacheEntry> tuned;     // the cached decision, if any
};

struct SuiteReport {
  std::string cache_path;  // empty when no cache location could be determined
  std::string cache_note;  // why no cache was read, or its warnings
  std::vector<SuiteRow> rows;
};

// Never throws for a plugin's or the cache's misbehaviour; problems land in cache_note or as
// "not served".
SuiteReport collect_suite(const PluginRegistry& registry);

void print_suite(std::ostream& out, const SuiteReport& report);
nlohmann::ordered_json suite_json(const SuiteReport& report);

}  // namespace qforge::hwinfo
