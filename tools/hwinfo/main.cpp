// qforge-hwinfo: what this machine can run. By default one screen: the CPU, each plugin the
// registry found in one line (loaded with its devices and kernels, or why not). `--verbose` (or
// `--op`) adds each plugin's devices and its answer for a grid of representative op descriptors
// and the default tuning suite. `--json` prints the full report as one JSON document and nothing
// else on stdout; logs go to stderr. Exits 0 even when plugins fail to load: reporting failures
// is the tool's job.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "hwinfo_command.h"

int main(int argc, char** argv) {
  CLI::App app{
      "qforge-hwinfo: the CPU, every qforge plugin found (or why it failed to load), "
      "its devices and its per-op capabilities"};
  qforge::hwinfo::HwinfoCommand command;
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
    std::cerr << "qforge-hwinfo: " << e.what() << '\n';
    return 1;
  }
}
