#include "hwinfo_command.h"

#include <cstdlib>
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

int report(bool as_json, bool verbose, const std::vector<std::string>& plugin_dirs,
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

namespace qforge::hwinfo {

void HwinfoCommand::add_options(CLI::App& app) {
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
}

int HwinfoCommand::run() const {
  std::optional<qforge::OpKind> only_op;
  if (!op_name.empty()) only_op = qforge::parse_op_kind(op_name);
  // Asking for one op's capabilities is asking for the detailed report.
  return report(as_json, verbose || only_op.has_value(), plugin_dirs, only_op);
}

}  // namespace qforge::hwinfo
