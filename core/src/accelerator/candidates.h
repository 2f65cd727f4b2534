// Which (plugin, device, kernel) may run a workload: every usable plugin allowed by the policy,
// on every device of the policy's kind, with every kernel its supports() lists.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "qforge/accelerator.h"

namespace qforge::accel {

// The accelerator's view of one loaded plugin, read once: when the accelerator is built, or for
// a deferred plugin (registry.h) when a decision first needs it (its cache entry names it, or
// candidates are enumerated under a policy that allows it), since reading it creates it.
struct PluginState {
  LoadedPlugin plugin;
  bool read = false;  // availability, devices and host_memory hold the plugin's answers
  Availability availability;
  std::vector<DeviceInfo> devices;
  bool host_memory = true;
  std::string quarantine;  // non-empty once it hung: why it is not used any more
};

struct Candidate {
  CandidateId id;
  std::shared_ptr<QuantizationOps> ops;
  std::size_t plugin = 0;  // index into the accelerator's PluginState list
  int score = 0;
  bool host_memory = true;
};

struct Enumeration {
  std::vector<Candidate> candidates;  // highest availability score first
  std::vector<std::string> refusals;  // what each plugin (or device) said, for error messages
  std::vector<std::string> notes;     // exclusions by policy, quarantined plugins
};

// Whether the policy lets `plugin` run anything.
bool policy_allows(const Policy& policy, const std::string& plugin);

// `plugins` must have been read (PluginState::read) where the policy allows them.
Enumeration enumerate_candidates(const OpDesc& op, const std::vector<PluginState>& plugins,
                                 const Policy& policy);

// "no plugin can run <op>: cpu_scalar: ...; cuda: ..." as an ErrorCode::unsupported.
[[noreturn]] void throw_no_candidate(const OpDesc& op, const Enumeration& e);

}  // namespace qforge::accel
