// The hardware report as a command: its options and its run, shared by the qforge-hwinfo
// executable and `qforge hwinfo`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace qforge::hwinfo {

struct HwinfoCommand {
  bool as_json = false;
  bool verbose = false;
  std::vector<std::string> plugin_dirs;
  std::string op_name;

  // Adds the options to `app` (the tool's top-level app or a subcommand).
  void add_options(CLI::App& app);
  // Prints the report; returns the exit status (0, also when plugins fail to load: reporting
  // failures is the tool's job). Throws on unexpected errors (exit status 1 in the tools).
  int run() const;
};

}  // namespace qforge::hwinfo
