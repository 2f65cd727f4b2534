// What one qforge-bench run measured: the data every output (table, JSON, CSV, chart) is
// written from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qforge/accelerator.h"

namespace qforge::bench {

// How much work one call does, to turn seconds into a rate.
struct Work {
  double amount = 0;  // operations (2 per multiply-add) or bytes moved
  std::string unit;   // "GOPS" or "GB/s"
  double rate(double seconds) const { return seconds > 0 ? amount / seconds / 1e9 : 0; }
};

struct Anchor {
  std::string name;    // "memcpy", "onednn", "openblas sgemm"
  double seconds = 0;  // per call, same work
};

struct WorkloadResult {
  std::string name;
  std::string op;
  std::string description;
  std::string residency;
  Work work;
  std::optional<TuneReport> report;      // empty when the workload could not be decided
  std::string error;                     // why, then
  std::optional<double> scalar_seconds;  // cpu_scalar's best measured time
  std::optional<Anchor> anchor;

  bool cache_hit() const { return report && report->source == DecisionSource::cache; }
  double winner_rate() const { return report ? work.rate(report->winner_seconds) : 0; }
  std::optional<double> speedup_vs_scalar() const;
  std::optional<double> speedup_vs_anchor() const;
};

struct PluginLine {
  std::string name, version;
  bool usable = false;
  std::string reason;
};

struct BenchRun {
  std::string suite;  // "quick", "full", or the workload file
  std::string date;   // UTC
  std::string cpu;
  std::string fingerprint;
  std::string policy;
  std::vector<PluginLine> plugins;
  std::vector<std::string> load_failures;
  std::string cache_path;  // empty without a cache
  std::vector<std::string> cache_warnings;
  std::vector<WorkloadResult> workloads;
  AcceleratorStats stats;
  double seconds = 0;  // wall time of the run
};

}  // namespace qforge::bench
