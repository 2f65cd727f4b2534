// What thread_pool_choice.h decides from, read from an accelerator: each plan's measured
// candidates with the thread pool of their device.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "qforge/accelerator.h"
#include "thread_pool_choice.h"

namespace qforge::model::quantize {

// The thread pool of each (plugin, device) of one accelerator, asked once: the device's
// "thread_pool" property (docs/PLUGINS.md, "Device properties"); a device that is not a CPU
// only makes its calling thread wait (kCallerPool); a CPU device that does not say is taken
// to have a pool of its own, named after its plugin.
class PoolLookup {
 public:
  explicit PoolLookup(const Accelerator& accelerator) : accelerator_(&accelerator) {}
  std::string pool(const CandidateId& id) { return facts(id).pool; }
  // Whether the plugin's plans take host pointers (a plan of one that does not would need the
  // accelerator's staging, so only the accelerator's own choice may run there).
  bool host_memory(const CandidateId& id) { return facts(id).host_memory; }
  // Whether the plugin is deferred (registry.h): asking it anything creates it, which is
  // worth it for the decision's winner only. Deferred plugins start a device runtime, whose
  // plans are staged, so they are never another thread pool's candidate.
  bool deferred(const CandidateId& id) const;

 private:
  struct Facts {
    std::string pool;
    bool host_memory = false;
  };
  const Facts& facts(const CandidateId& id);
  const Accelerator* accelerator_;
  std::map<std::pair<std::string, int>, Facts> facts_;
};

// The accelerator's decision for the workload (made as its plans would make it: memory,
// cache, measuring or default) with every measured candidate of its bucket, skipping plugins
// the accelerator stopped using.
PlanCandidates plan_candidates(Accelerator& accelerator, const Workload& workload,
                               PoolLookup& pools);

// QFORGE_MODEL_HAND_OVER (seconds, >= 0; 0 keeps the accelerator's choice for every plan),
// else kDefaultHandOverSeconds. A malformed value throws invalid_argument naming the variable.
double hand_over_from_environment();

}  // namespace qforge::model::quantize
