// qforge-bench: the auto-tuning benchmark runner. Runs a suite of workloads (quick, full, or a
// JSON file) through the accelerator: each workload is tuned (or found in the tuning cache),
// and the run reports every candidate's time, the winner, its rate, the speed-ups over
// cpu_scalar and over an anchor measured in the same run, and whether the cache was hit. It
// writes the tuning cache that later runs and user programs reuse: a second run tunes nothing.
//
// Outputs: a table on stdout (and table.txt), results.json, results.csv and throughput.svg in
// --out-dir; the last lines printed say where each was written and where the cache lives.
// Exit status: 0 when every workload was decided, 1 when some could not be, 2 for bad usage.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "bench_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "qforge-bench: tunes a suite of workloads across every loaded plugin and reports "
      "each candidate's time, the winner, and speed-ups over cpu_scalar and an anchor"};
  qforge::bench::BenchCommand command;
  command.add_options(app);
  // Not CLI11_PARSE: its exit status for a usage error is CLI11's own code (105, 106, ...);
  // the documented one is 2 (0 for --help).
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int shown = app.exit(e);
    return shown == 0 ? 0 : 2;
  }
  try {
    return command.run();
  } catch (const std::exception& e) {
    std::cerr << "qforge-bench: " << e.what() << "\n";
    return 2;
  }
}
