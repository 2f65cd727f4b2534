// qforge-hwinfo: what this machine can run. By default one screen: the CPU, each plugin the
// registry found in one line (loaded with its devices and kernels, or why not). `--verbose` (or
// `--op`) adds each plugin's devices and its answer for a grid of representative op descriptors
// and the default tuning suite. `--json` prints the full report as one JSON document and nothing
// else on stdout; logs go to stderr. Exits 0 even when plugins fail to load: reporting failures
// is the tool's job.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "capability_grid.h"
#include "cpu_report.h"
#include "json_report.h"
#include "plugin_report.h"
#include "qforge/hardware.h"
#include "qforge/op_desc.h"
#include "qforge/registry.h"
#include "suite_report.h"
#include "summary_report.h"

namespace {

std::string op_names() {
  std::string names;
  for (int i = 0; i < qforge::kOpKindCount; ++i)
    names += (i ? ", " : "") + std::string(qforge::to_string(static_cast<qforge::OpKind>(i)));
  return names;
}

// --plugin-path entries go in front of QFORGE_PLUGIN_PATH, so the global registry searches
// them first, exactly as a program started with that variable would.
void prepend_plugin_path(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return;
  std::string value;
  for (const auto& d : dirs) value += (value.empty() ? "" : ":") + d;
  if (const char* old = std::getenv("QFORGE_PLUGIN_PATH"); old != nullptr && *old != '\0')
    value += std::string(":") + old;
  ::setenv("QFORGE_PLUGIN_PATH", value.c_str(), 1);
}

int run(bool as_json, bool verbose, const std::vector<std::string>& plugin_dirs,
        std::optional<qforge::OpKind> only_op) {
  using namespace qforge;
  prepend_plugin_path(plugin_dirs);
  const CpuInfo& cpu = cpu_info();
  const auto search_path = PluginRegistry::default_search_path();
  PluginRegistry& registry = PluginRegistry::global();
  const auto plugins = hwinfo::collect_plugins(registry, hwinfo::ops_to_report(only_op));
  if (!as_json && !verbose) {
    hwinfo::print_summary(std::cout, cpu, search_path, plugins, registry.failures());
    return 0;
  }
  const auto suite = hwinfo::collect_suite(registry);

  if (as_json) {
    auto report = hwinfo::report_json(cpu, search_path, plugins, registry.failures());
    report["default_suite"] = hwinfo::suite_json(suite);
    // Replace invalid UTF-8 (a driver's device name) instead of failing the whole document.
    std::cout << report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << '\n';
    return 0;
  }
  hwinfo::print_cpu(std::cout, cpu);
  std::cout << '\n';
  hwinfo::print_search_path(std::cout, search_path);
  std::cout << '\n';
  hwinfo::print_plugins(std::cout, plugins);
  std::cout << '\n';
  hwinfo::print_failures(std::cout, registry.failures());
  std::cout << '\n';
  hwinfo::print_suite(std::cout, suite);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "qforge-hwinfo: the CPU, every qforge plugin found (or why it failed to load), "
      "its devices and its per-op capabilities"};
  bool as_json = false;
  bool verbose = false;
  std::vector<std::string> plugin_dirs;
  std::string op_name;
  app.add_flag("--json", as_json, "Print the report as one JSON document (schema: docs/HWINFO.md)");
  app.add_flag("--verbose,-v", verbose,
               "Print every plugin's devices, its per-op capability grid and the default suite");
  app.add_option("--plugin-path", plugin_dirs,
                 "Directory or plugin file searched before QFORGE_PLUGIN_PATH (repeatable)")
      ->check(CLI::ExistingPath)
      ->allow_extra_args(false);
  app.add_option("--op", op_name, "Report capabilities of this op only: " + op_names())
      ->check([](const std::string& text) -> std::string {
        if (qforge::parse_op_kind(text)) return {};
        return "unknown op '" + text + "'; expected one of: " + op_names();
      });
  // Not CLI11_PARSE: its exit status for a usage error is CLI11's own code (105, 106, ...);
  // the documented one is 2 (0 for --help).
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int shown = app.exit(e);
    return shown == 0 ? 0 : 2;
  }

  try {
    std::optional<qforge::OpKind> only_op;
    if (!op_name.empty()) only_op = qforge::parse_op_kind(op_name);
    // Asking for one op's capabilities is asking for the detailed report.
    return run(as_json, verbose || only_op.has_value(), plugin_dirs, only_op);
  } catch (const std::exception& e) {
    std::cerr << "qforge-hwinfo: " << e.what() << '\n';
    return 1;
  }
}
