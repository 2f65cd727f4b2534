// What qforge-hwinfo learns about each loaded plugin: identity, availability, devices and the
// answer of supports() for every case of the capability grid. Gathered once, then printed as
// text (here) or as JSON (json_report.h).
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "capability_grid.h"
#include "qforge/ops.h"
#include "qforge/registry.h"

namespace qforge::hwinfo {

struct CapabilityAnswer {
  OpKind op;
  std::string label;
  std::string description;  // qforge::describe() of the descriptor
  Support support;
};

struct PluginReport {
  std::string name;
  std::string version;
  std::filesystem::path path;
  Availability availability;
  std::vector<DeviceInfo> devices;
  std::vector<CapabilityAnswer> capabilities;
  // Calls into the plugin that threw (availability, devices): a plugin bug worth showing.
  std::vector<std::string> errors;
};

// Queries every loaded plugin of `registry`. Never throws for a plugin's misbehaviour: an
// exception from a plugin call is recorded in `errors` or as the unsupported reason.
std::vector<PluginReport> collect_plugins(const PluginRegistry& registry,
                                          const std::vector<OpKind>& ops);

void print_search_path(std::ostream& out, const std::vector<std::filesystem::path>& path);
void print_plugins(std::ostream& out, const std::vector<PluginReport>& plugins);
void print_failures(std::ostream& out, const std::vector<PluginFailure>& failures);

}  // namespace qforge::hwinfo
