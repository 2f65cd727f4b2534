#include "json_report.h"

#include "cpu_report.h"

namespace qforge::hwinfo {

using json = nlohmann::ordered_json;

json cpu_json(const CpuInfo& cpu) {
  json caches = json::array();
  for (const CacheLevel& c : cpu.caches)
    caches.push_back({{"name", cache_name(c)},
                      {"level", c.level},
                      {"type", c.type},
                      {"size_bytes", c.size_bytes},
                      {"shared_by", c.shared_by_cores}});
  json features = json::object();
  for (const auto& [name, on] : cpu.features) features[name] = on;
  return {{"vendor", cpu.vendor},
          {"model", cpu.model},
          {"architecture", cpu.architecture},
          {"packages", cpu.packages},
          {"cores", cpu.cores},
          {"logical_processors", cpu.logical_processors},
          {"caches", std::move(caches)},
          {"features", std::move(features)}};
}

json plugin_json(const PluginReport& p) {
  json devices = json::array();
  for (const DeviceInfo& d : p.devices) {
    json props = json::object();
    for (const auto& [key, value] : d.properties) props[key] = value;
    devices.push_back({{"name", d.name},
                       {"kind", d.kind},
                       {"memory_bytes", d.memory_bytes},
                       {"properties", std::move(props)}});
  }
  json caps = json::array();
  for (const CapabilityAnswer& c : p.capabilities) {
    json entry = {{"op", std::string(to_string(c.op))},
                  {"case", c.label},
                  {"description", c.description},
                  {"supported", c.support.supported}};
    if (c.support.supported) entry["kernels"] = c.support.kernels;
    else entry["reason"] = c.support.reason;
    caps.push_back(std::move(entry));
  }
  return {{"name", p.name},
          {"version", p.version},
          {"path", p.path.string()},
          {"availability",
           {{"usable", p.availability.usable},
            {"score", p.availability.score},
            {"reason", p.availability.reason}}},
          {"errors", p.errors},
          {"devices", std::move(devices)},
          {"capabilities", std::move(caps)}};
}

json failure_json(const PluginFailure& f) {
  return {
      {"path", f.path.string()}, {"kind", std::string(to_string(f.kind))}, {"message", f.message}};
}

json report_json(const CpuInfo& cpu, const std::vector<std::filesystem::path>& search_path,
                 const std::vector<PluginReport>& plugins,
                 const std::vector<PluginFailure>& failures) {
  json paths = json::array();
  for (const auto& p : search_path) paths.push_back(p.string());
  json plugin_list = json::array();
  for (const PluginReport& p : plugins) plugin_list.push_back(plugin_json(p));
  json failure_list = json::array();
  for (const PluginFailure& f : failures) failure_list.push_back(failure_json(f));
  return {{"qforge_version", QFORGE_VERSION_STRING},
          {"cpu", cpu_json(cpu)},
          {"search_path", std::move(paths)},
          {"plugins", std::move(plugin_list)},
          {"failures", std::move(failure_list)}};
}

}  // namespace qforge::hwinfo
