// The benchmark runner as a command: its options and its run, shared by the qforge-bench
// executable and `qforge bench`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace qforge::bench {

struct BenchCommand {
  std::string suite = "quick", workloads_file, out_dir = "qforge-bench-results";
  std::string json_path, csv_path, chart_path, cache_path, plugins, device_kind, residency;
  std::string progress = "auto";
  bool no_cache = false, retune = false, clear = false, exclude_transfers = false,
       list_only = false;
  bool verbose = false;
  double budget = 0, total_budget = 0, hang = 0;

  // Adds the options to `app` (the tool's top-level app or a subcommand).
  void add_options(CLI::App& app);
  // Runs the suite and writes the outputs; returns 0 when every workload was decided, 1 when
  // some could not be. Throws qforge::Error (exit status 2 in the tools) on bad input.
  int run() const;
};

}  // namespace qforge::bench
