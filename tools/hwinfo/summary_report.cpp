#include "summary_report.h"

#include <algorithm>
#include <ostream>
#include <string>

#include "cpu_report.h"

namespace qforge::hwinfo {
namespace {

std::string cpu_line(const CpuInfo& cpu) {
  std::string line = cpu.model.empty() ? cpu.vendor : cpu.model;
  line += " (" + cpu.architecture + ", " + std::to_string(cpu.cores) + " cores, " +
          std::to_string(cpu.logical_processors) + " threads";
  std::string features;
  for (const auto& [name, on] : cpu.features)
    if (on) features += (features.empty() ? "" : " ") + name;
  line += features.empty() ? ")" : "; " + features + ")";
  return line;
}

// Kernel families a plugin offered anywhere in the grid, in first-seen order.
std::vector<std::string> kernel_families(const PluginReport& plugin) {
  std::vector<std::string> kernels;
  for (const CapabilityAnswer& c : plugin.capabilities)
    for (const std::string& k : c.support.kernels)
      if (std::find(kernels.begin(), kernels.end(), k) == kernels.end()) kernels.push_back(k);
  return kernels;
}

std::string devices_text(const PluginReport& plugin) {
  if (plugin.devices.empty()) return "no devices";
  std::string text;
  for (const DeviceInfo& d : plugin.devices) {
    text += (text.empty() ? "" : ", ") + d.kind + " " + d.name;
    if (d.memory_bytes > 0) text += " " + format_bytes(d.memory_bytes);
  }
  return text;
}

// Long lists are cut so one plugin stays one line on an ordinary terminal.
std::string first_of(const std::vector<std::string>& items, std::size_t keep) {
  std::string text;
  for (std::size_t i = 0; i < items.size() && i < keep; ++i) text += (i ? ", " : "") + items[i];
  if (items.size() > keep) text += " and " + std::to_string(items.size() - keep) + " more";
  return text;
}

}  // namespace

void print_summary(std::ostream& out, const CpuInfo& cpu,
                   const std::vector<std::filesystem::path>& search_path,
                   const std::vector<PluginReport>& plugins,
                   const std::vector<PluginFailure>& failures) {
  out << "CPU      " << cpu_line(cpu) << '\n';
  std::size_t width = 0;
  for (const PluginReport& p : plugins) width = std::max(width, p.name.size());
  out << "Plugins  " << plugins.size() << " loaded, " << failures.size()
      << " failed to load (searched " << search_path.size() << " places)\n";
  for (const PluginReport& p : plugins) {
    out << "  " << p.name << std::string(width - p.name.size() + 2, ' ');
    if (!p.availability.usable) {
      out << "unusable here: " << p.availability.reason << '\n';
      continue;
    }
    out << devices_text(p);
    const auto kernels = kernel_families(p);
    if (!kernels.empty()) out << "; kernels: " << first_of(kernels, 6);
    if (!p.errors.empty()) out << "; " << p.errors.size() << " plugin call(s) threw";
    out << '\n';
  }
  for (const PluginFailure& f : failures)
    out << "  failed  " << f.path.filename().string() << ": " << to_string(f.kind) << ": "
        << f.message << '\n';
  out << "More: --verbose (devices, per-op capabilities, default suite), --op OP, --json\n";
}

}  // namespace qforge::hwinfo
