#include "accelerator/candidates.h"

#include <algorithm>

#include "qforge/error.h"

namespace qforge::accel {
bool policy_allows(const Policy& policy, const std::string& name) {
  return policy.plugins.empty() ||
         std::find(policy.plugins.begin(), policy.plugins.end(), name) != policy.plugins.end();
}

Enumeration enumerate_candidates(const OpDesc& op, const std::vector<PluginState>& plugins,
                                 const Policy& policy) {
  Enumeration e;
  for (const auto& wanted : policy.plugins) {
    const bool loaded = std::any_of(plugins.begin(), plugins.end(),
                                    [&](const PluginState& p) { return p.plugin.name == wanted; });
    if (!loaded) e.notes.push_back("the policy names plugin '" + wanted + "', which is not loaded");
  }
  for (std::size_t pi = 0; pi < plugins.size(); ++pi) {
    const PluginState& p = plugins[pi];
    const std::string& name = p.plugin.name;
    if (!policy_allows(policy, name)) {
      e.notes.push_back(name + ": left out by the policy (" + policy.tag() + ")");
      continue;
    }
    if (!p.quarantine.empty()) {
      e.refusals.push_back(name + ": not used any more: " + p.quarantine);
      continue;
    }
    if (!p.read)
      throw Error(ErrorCode::internal, "accelerator: plugin " + name + " enumerated unread");
    if (!p.availability.usable) {
      e.refusals.push_back(name + ": cannot run here: " + p.availability.reason);
      continue;
    }
    const QuantizationOps& ops = *p.plugin.ops;
    const int ndev = static_cast<int>(p.devices.size());
    bool any_device_of_kind = false;
    for (int d = 0; d < std::max(ndev, 1); ++d) {
      const std::string kind = d < ndev ? p.devices[static_cast<std::size_t>(d)].kind : "";
      if (!policy.device_kind.empty() && kind != policy.device_kind) continue;
      any_device_of_kind = true;
      const std::string where = ndev > 1 ? name + "[" + std::to_string(d) + "]" : name;
      Support s;
      try {
        s = ops.supports(op, d);
      } catch (const std::exception& ex) {
        e.refusals.push_back(where + ": supports() threw: " + ex.what());
        continue;
      }
      if (!s.supported) {
        e.refusals.push_back(where + ": " + (s.reason.empty() ? "unsupported" : s.reason));
        continue;
      }
      if (s.kernels.empty()) s.kernels.emplace_back();  // the plugin's own choice
      for (const auto& k : s.kernels)
        e.candidates.push_back(
            {{name, d, k}, p.plugin.ops, pi, p.availability.score, p.host_memory});
    }
    if (!any_device_of_kind)
      e.notes.push_back(name + ": no device of kind '" + policy.device_kind + "'");
  }
  std::stable_sort(e.candidates.begin(), e.candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  return e;
}

void throw_no_candidate(const OpDesc& op, const Enumeration& e) {
  std::string msg = "accelerator: no plugin can run " + describe(op);
  if (e.refusals.empty() && e.notes.empty()) msg += ": no plugin is loaded";
  for (const auto& r : e.refusals) msg += "; " + r;
  for (const auto& n : e.notes) msg += "; " + n;
  throw Error(ErrorCode::unsupported, msg);
}

}  // namespace qforge::accel
