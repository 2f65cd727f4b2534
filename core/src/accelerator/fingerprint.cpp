// The hardware fingerprint the tuning cache is keyed by. It names everything whose change can
// change which candidate is fastest: the CPU (model and usable features), each plugin's name
// and version, each device's name, and the facts plugins report about drivers, runtimes and
// the ISA or thread settings they run with. A deferred plugin (registry.h) is named by its
// cheap identity instead of its devices, so that computing the fingerprint starts no runtime.
#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>

#include "qforge/fnv1a.h"
#include "qforge/hardware.h"
#include "qforge/tuning_cache.h"

namespace qforge {
namespace {

// DeviceInfo::properties that enter the fingerprint. Others (free memory, last op timings)
// change from run to run and would make every run a new machine.
constexpr std::array<std::string_view, 7> kFingerprintProperties = {
    "driver",      "driver_version", "runtime", "api_version", "compute_capability",
    "isa_allowed", "threads_used"};

}  // namespace

std::string HardwareFingerprint::id() const {
  // One field per line, so that no two different fingerprints share a text.
  std::string text = "cpu:" + cpu_model + "\n";
  for (const auto& f : cpu_features) text += "feature:" + f + "\n";
  for (const auto& p : plugins) {
    text += "plugin:" + p.name + "@" + p.version + "\n";
    for (const auto& d : p.devices) text += "device:" + d + "\n";
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  return hex;
}

HardwareFingerprint hardware_fingerprint(const std::vector<LoadedPlugin>& loaded) {
  HardwareFingerprint fp;
  const CpuInfo& cpu = cpu_info();
  fp.cpu_model = cpu.model.empty() ? cpu.vendor + " " + cpu.architecture : cpu.model;
  for (const auto& [name, present] : cpu.features)
    if (present) fp.cpu_features.push_back(name);
  for (const auto& lp : loaded) {
    HardwareFingerprint::Plugin p;
    p.name = lp.ops ? lp.ops->name() : lp.name;
    p.version = lp.ops ? lp.ops->version() : lp.version;
    if (!lp.deferred_identity.empty()) {
      // A deferred plugin's devices() would start its runtime; its identity names what that
      // runtime would find (drivers, GPUs, the variables that select them) and changes with it.
      std::size_t begin = 0;
      while (begin < lp.deferred_identity.size()) {
        std::size_t end = lp.deferred_identity.find('\n', begin);
        if (end == std::string::npos) end = lp.deferred_identity.size();
        if (end > begin)
          p.devices.push_back("identity: " + lp.deferred_identity.substr(begin, end - begin));
        begin = end + 1;
      }
    } else if (lp.ops) {
      std::vector<DeviceInfo> devices;
      try {
        devices = lp.ops->devices();
      } catch (const std::exception& e) {
        p.devices.push_back(std::string("devices() threw: ") + e.what());
      }
      for (const auto& d : devices) {
        std::string text = d.name + " (" + d.kind + ")";
        for (auto key : kFingerprintProperties)
          if (auto it = d.properties.find(std::string(key)); it != d.properties.end())
            text += " " + it->first + "=" + it->second;
        p.devices.push_back(std::move(text));
      }
    }
    fp.plugins.push_back(std::move(p));
  }
  std::sort(fp.plugins.begin(), fp.plugins.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return fp;
}

}  // namespace qforge
