#include "plugin_report.h"

#include <algorithm>
#include <exception>
#include <ostream>

#include "cpu_report.h"

namespace qforge::hwinfo {
namespace {

// Runs one call into a plugin; an exception becomes a message rather than ending the report.
template <class F>
bool guarded(std::vector<std::string>& errors, const char* what, F&& call) {
  try {
    call();
    return true;
  } catch (const std::exception& e) {
    errors.push_back(std::string(what) + " threw: " + e.what());
  } catch (...) {
    errors.push_back(std::string(what) + " threw a non-standard exception");
  }
  return false;
}

Support ask(const QuantizationOps& ops, const OpDesc& desc) {
  try {
    return ops.supports(desc);
  } catch (const std::exception& e) {
    return Support::no(std::string("supports() threw: ") + e.what());
  } catch (...) {
    return Support::no("supports() threw a non-standard exception");
  }
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : sep) + item;
  return s;
}

void print_device(std::ostream& out, std::size_t index, const DeviceInfo& d) {
  out << "      [" << index << "] " << d.kind << "  " << d.name;
  if (d.memory_bytes > 0) out << "  " << format_bytes(d.memory_bytes);
  out << '\n';
  for (const auto& [key, value] : d.properties) out << "          " << key << ": " << value << '\n';
}

void print_capabilities(std::ostream& out, const std::vector<CapabilityAnswer>& caps) {
  std::size_t width = 0;
  for (const auto& c : caps) width = std::max(width, c.label.size());
  std::optional<OpKind> current;
  for (const auto& c : caps) {
    if (current != c.op) {
      current = c.op;
      out << "      " << to_string(c.op) << '\n';
    }
    out << "        " << c.label << std::string(width - c.label.size() + 2, ' ');
    if (c.support.supported) out << "yes  " << join(c.support.kernels, ", ") << '\n';
    else out << "no   " << c.support.reason << '\n';
  }
}

}  // namespace

std::vector<PluginReport> collect_plugins(const PluginRegistry& registry,
                                          const std::vector<OpKind>& ops) {
  std::vector<GridCase> grid;
  for (OpKind op : ops) {
    auto cases = capability_grid(op);
    grid.insert(grid.end(), std::make_move_iterator(cases.begin()),
                std::make_move_iterator(cases.end()));
  }
  std::vector<PluginReport> reports;
  for (const LoadedPlugin& plugin : registry.plugins()) {
    PluginReport r{plugin.name, plugin.version, plugin.path, {}, {}, {}, {}};
    const QuantizationOps& backend = *plugin.ops;
    if (!guarded(r.errors, "availability()", [&] { r.availability = backend.availability(); }))
      r.availability = {false, 0, r.errors.back()};
    guarded(r.errors, "devices()", [&] { r.devices = backend.devices(); });
    for (const GridCase& c : grid)
      r.capabilities.push_back({c.desc.op, c.label, describe(c.desc), ask(backend, c.desc)});
    reports.push_back(std::move(r));
  }
  return reports;
}

void print_search_path(std::ostream& out, const std::vector<std::filesystem::path>& path) {
  out << "Plugin search path\n";
  for (std::size_t i = 0; i < path.size(); ++i)
    out << "  " << i + 1 << ". " << path[i].string() << '\n';
}

void print_plugins(std::ostream& out, const std::vector<PluginReport>& plugins) {
  out << "Plugins (" << plugins.size() << " loaded)\n";
  for (const PluginReport& p : plugins) {
    out << "  " << p.name << ' ' << p.version << '\n';
    out << "    path       " << p.path.string() << '\n';
    if (p.availability.usable) out << "    available  yes (score " << p.availability.score << ")\n";
    else out << "    available  no: " << p.availability.reason << '\n';
    for (const auto& e : p.errors) out << "    error      " << e << '\n';
    out << "    devices    " << p.devices.size() << '\n';
    for (std::size_t i = 0; i < p.devices.size(); ++i) print_device(out, i, p.devices[i]);
    out << "    capabilities\n";
    print_capabilities(out, p.capabilities);
  }
}

void print_failures(std::ostream& out, const std::vector<PluginFailure>& failures) {
  out << "Plugin failures (" << failures.size() << ")\n";
  for (const PluginFailure& f : failures) {
    out << "  " << f.path.string() << '\n';
    out << "    " << to_string(f.kind) << ": " << f.message << '\n';
  }
}

}  // namespace qforge::hwinfo
