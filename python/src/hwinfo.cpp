// qforge.hwinfo(): this machine's CPU and every plugin of the global registry (what it runs on,
// or why it cannot run here) as one dict, the facts qforge-hwinfo prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "qforge/hardware.h"
#include "qforge/registry.h"

namespace py = pybind11;

namespace qforge::python {

namespace {

py::dict cpu_dict() {
  const CpuInfo& c = cpu_info();
  py::dict d;
  d["vendor"] = c.vendor;
  d["model"] = c.model;
  d["architecture"] = c.architecture;
  d["packages"] = c.packages;
  d["cores"] = c.cores;
  d["logical_processors"] = c.logical_processors;
  py::list caches;
  for (const auto& l : c.caches) {
    py::dict e;
    e["level"] = l.level;
    e["type"] = l.type;
    e["size_bytes"] = l.size_bytes;
    e["shared_by_cores"] = l.shared_by_cores;
    caches.append(e);
  }
  d["caches"] = caches;
  py::dict features;
  for (const auto& [name, present] : c.features) features[py::str(name)] = present;
  d["features"] = features;
  return d;
}

py::dict plugin_dict(const LoadedPlugin& p) {
  py::dict d;
  d["name"] = p.name;
  d["version"] = p.version;
  d["path"] = p.path.string();
  const Availability a = p.ops->availability();
  d["usable"] = a.usable;
  d["score"] = a.score;
  d["reason"] = a.reason;
  py::list devices;
  if (a.usable) {
    for (const auto& dev : p.ops->devices()) {
      py::dict e;
      e["name"] = dev.name;
      e["kind"] = dev.kind;
      e["memory_bytes"] = dev.memory_bytes;
      e["properties"] = dev.properties;
      devices.append(e);
    }
  }
  d["devices"] = devices;
  return d;
}

}  // namespace

void bind_hwinfo(py::module_& m) {
  m.def(
      "hwinfo",
      []() {
        const PluginRegistry& registry = PluginRegistry::global();
        py::dict d;
        d["cpu"] = cpu_dict();
        py::list plugins;
        for (const auto& p : registry.plugins()) plugins.append(plugin_dict(p));
        d["plugins"] = plugins;
        py::list failures;
        for (const auto& f : registry.failures()) {
          py::dict e;
          e["path"] = f.path.string();
          e["kind"] = std::string(to_string(f.kind));
          e["message"] = f.message;
          failures.append(e);
        }
        d["plugin_failures"] = failures;
        std::vector<std::string> path;
        for (const auto& p : PluginRegistry::default_search_path()) path.push_back(p.string());
        d["plugin_search_path"] = path;
        return d;
      },
      "The CPU, each loaded plugin (devices, or why it cannot run here) and plugin failures");
}

}  // namespace qforge::python
