#include "suite_report.h"

#include <exception>
#include <filesystem>
#include <iomanip>
#include <ostream>

#include "qforge/accelerator.h"
#include "qforge/bench/suites.h"

namespace qforge::hwinfo {
namespace {

bool serves(QuantizationOps& ops, const OpDesc& op) {
  try {
    return ops.availability().usable && ops.supports(op).supported;
  } catch (const std::exception&) {
    return false;  // a plugin that throws from supports() serves nothing
  }
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

}  // namespace

SuiteReport collect_suite(const PluginRegistry& registry) {
  SuiteReport report;
  std::optional<TuningCache> cache;
  try {
    const auto path = TuningCache::default_path();
    report.cache_path = path.string();
    if (std::filesystem::exists(path)) {
      cache.emplace(path, CacheMode::read_only);
      for (const auto& w : cache->warnings()) report.cache_note += w + " ";
    } else {
      report.cache_note = "no tuning cache yet (qforge-bench writes it)";
    }
  } catch (const std::exception& e) {
    report.cache_note = std::string("tuning cache not read: ") + e.what();
  }
  const HardwareFingerprint fingerprint = hardware_fingerprint(registry.plugins());

  for (const auto& named : default_suite()) {
    SuiteRow row{named.name, describe(named.workload.op), {}, std::nullopt};
    for (const auto& plugin : registry.plugins())
      if (serves(*plugin.ops, named.workload.op)) row.served_by.push_back(plugin.name);
    if (cache) {
      try {
        row.tuned = cache->find(fingerprint, workload_cache_key(named.workload));
      } catch (const std::exception&) {
        row.tuned.reset();
      }
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

void print_suite(std::ostream& out, const SuiteReport& report) {
  out << "Default tuning suite (qforge-bench --suite quick)\n";
  out << "  cache  " << (report.cache_path.empty() ? "(none)" : report.cache_path) << '\n';
  if (!report.cache_note.empty()) out << "         " << report.cache_note << '\n';
  for (const auto& row : report.rows) {
    out << "  " << row.workload << '\n';
    out << "    served by  " << joined(row.served_by) << '\n';
    out << "    winner     ";
    if (row.tuned) {
      out << row.tuned->winner.label();
      if (row.tuned->seconds > 0)
        out << "  " << std::setprecision(3) << row.tuned->seconds * 1e6 << " us";
      if (!row.tuned->complete) out << "  (budget ran out before every candidate was measured)";
    } else {
      out << "not tuned on this machine and plugin set";
    }
    out << '\n';
  }
}

nlohmann::ordered_json suite_json(const SuiteReport& report) {
  nlohmann::ordered_json j;
  j["cache_path"] = report.cache_path;
  j["cache_note"] = report.cache_note;
  j["workloads"] = nlohmann::ordered_json::array();
  for (const auto& row : report.rows) {
    nlohmann::ordered_json w;
    w["name"] = row.workload;
    w["description"] = row.description;
    w["served_by"] = row.served_by;
    if (row.tuned) {
      w["winner"] = row.tuned->winner.label();
      w["winner_seconds"] = row.tuned->seconds;
      w["complete"] = row.tuned->complete;
    } else {
      w["winner"] = nullptr;
    }
    j["workloads"].push_back(std::move(w));
  }
  return j;
}

}  // namespace qforge::hwinfo
