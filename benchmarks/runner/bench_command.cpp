#include "bench_command.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "outputs.h"
#include "progress.h"
#include "qforge/accelerator.h"
#include "qforge/bench/suites.h"
#include "qforge/error.h"
#include "qforge/registry.h"
#include "run_suite.h"
#include "workload_file.h"

namespace {

namespace fs = std::filesystem;
using namespace qforge;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

void list(const std::vector<NamedWorkload>& workloads) {
  for (const auto& w : workloads)
    std::cout << w.name << "\n    " << describe(w.workload.op)
              << "\n    bucket: " << workload_bucket(w.workload) << "\n";
}

}  // namespace

namespace qforge::bench {

void BenchCommand::add_options(CLI::App& app) {
  // A later option wins over an earlier one, so a script can set defaults and pass the user's
  // arguments after them (scripts/run: --suite quick ... "$@").
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--suite", suite, "Workload suite: quick (about a minute on a small CPU) or full")
      ->check(CLI::IsMember({"quick", "full"}));
  app.add_option("--workloads", workloads_file,
                 "Run the workloads of this JSON file instead of a suite")
      ->check(CLI::ExistingFile);
  app.add_flag("--list", list_only, "List the workloads and their buckets, run nothing");
  app.add_option("--out-dir", out_dir,
                 "Directory for table.txt, results.json, results.csv, throughput.svg");
  app.add_option("--json", json_path, "Write the JSON results here (default OUT_DIR/results.json)");
  app.add_option("--csv", csv_path, "Write the CSV results here (default OUT_DIR/results.csv)");
  app.add_option("--chart", chart_path,
                 "Write the SVG chart here (default OUT_DIR/throughput.svg)");
  app.add_option("--cache", cache_path,
                 "Tuning cache file (default: $QFORGE_TUNING_CACHE, else "
                 "$XDG_CACHE_HOME/qforge/tuning.json, else ~/.cache/qforge/tuning.json)");
  app.add_flag("--no-cache", no_cache, "Neither read nor write a tuning cache");
  app.add_flag("--retune", retune,
               "Measure every workload even when cached, and overwrite the cache");
  app.add_flag("--clear-cache", clear, "Empty the tuning cache before running");
  app.add_option("--budget", budget, "Seconds of tuning per workload (default 2)")
      ->check(CLI::PositiveNumber);
  app.add_option("--total-budget", total_budget,
                 "Seconds of tuning for the whole run (default 600)")
      ->check(CLI::PositiveNumber);
  app.add_option("--hang", hang, "Seconds one call may take before it counts as hung (default 10)")
      ->check(CLI::PositiveNumber);
  app.add_option("--plugins", plugins, "Only these plugins, comma-separated");
  app.add_option("--device-kind", device_kind, "Only devices of this kind")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  app.add_flag("--exclude-transfers", exclude_transfers,
               "Do not count host<->device copies when timing device plugins on host data");
  app.add_option("--residency", residency, "Override every workload's residency")
      ->check(CLI::IsMember({"host", "device"}));
  app.add_option("--progress", progress,
                 "Progress display: auto (a bar on a terminal, lines "
                 "otherwise), bar, lines, none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}));
  app.add_flag("--verbose,-v", verbose,
               "Print every candidate of every workload on stdout too (table.txt always has them)");
}

int BenchCommand::run() const {
  const std::vector<NamedWorkload> workloads = !workloads_file.empty()
                                                   ? load_workloads(workloads_file)
                                               : suite == "full" ? full_suite()
                                                                 : quick_suite();
  if (list_only) {
    list(workloads);
    return 0;
  }

  RunSettings s;
  s.accelerator = AcceleratorOptions::from_environment();
  s.accelerator.online_tuning = true;
  s.accelerator.budget.total_s = 600;
  if (budget > 0) s.accelerator.budget.per_workload_s = budget;
  if (total_budget > 0) s.accelerator.budget.total_s = total_budget;
  if (hang > 0) s.accelerator.budget.hang_s = hang;
  if (no_cache) s.accelerator.use_cache = false;
  if (!cache_path.empty()) {
    s.accelerator.use_cache = true;
    s.accelerator.cache_path = cache_path;
  }
  s.accelerator.policy.plugins = split(plugins);
  s.accelerator.policy.device_kind = device_kind;
  s.accelerator.policy.include_transfers = !exclude_transfers;
  if (!residency.empty()) s.residency = residency == "host" ? Residency::host : Residency::device;
  s.retune = retune;
  s.clear_cache = clear;
  s.progress = parse_progress_mode(progress);

  PluginRegistry& registry = PluginRegistry::global();
  const std::string suite_name = workloads_file.empty() ? suite : workloads_file;
  const BenchRun run = run_suite(suite_name, workloads, registry, s);

  // stdout gets the one-line-per-workload summary unless asked for more; table.txt always
  // holds every candidate, so nothing is lost by keeping the terminal short.
  const std::string table = table_text(run, /*with_candidates=*/true);
  std::cout << (verbose ? table : table_text(run, /*with_candidates=*/false));
  const fs::path dir = out_dir;
  const fs::path table_file = dir / "table.txt";
  const fs::path json_file = json_path.empty() ? dir / "results.json" : fs::path(json_path);
  const fs::path csv_file = csv_path.empty() ? dir / "results.csv" : fs::path(csv_path);
  const fs::path chart_file = chart_path.empty() ? dir / "throughput.svg" : fs::path(chart_path);
  write_file(table_file, table);
  write_file(json_file, json_text(run));
  write_file(csv_file, csv_text(run));
  write_file(chart_file, svg_chart(run));

  auto where = [](const fs::path& p) { return fs::absolute(p).lexically_normal().string(); };
  std::cout << "\ntable: " << where(table_file)
            << (verbose ? "" : " (every candidate, with reasons)")
            << "\nchart: " << where(chart_file) << "\njson:  " << where(json_file)
            << "\ncsv:   " << where(csv_file) << "\ncache: "
            << (run.cache_path.empty()
                    ? std::string(no_cache ? "none (--no-cache)"
                                           : "none (it could not be used; see the warning above)")
                    : where(run.cache_path))
            << "\n";
  for (const auto& w : run.workloads)
    if (!w.report) return 1;
  return 0;
}

}  // namespace qforge::bench
