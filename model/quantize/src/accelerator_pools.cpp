#include "accelerator_pools.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "qforge/error.h"

namespace qforge::model::quantize {

const PoolLookup::Facts& PoolLookup::facts(const CandidateId& id) {
  const auto key = std::make_pair(id.plugin, id.device);
  if (const auto it = facts_.find(key); it != facts_.end()) return it->second;
  Facts f{id.plugin, false};
  for (const LoadedPlugin& p : accelerator_->plugins()) {
    if (p.name != id.plugin || !p.ops) continue;
    f.host_memory = p.ops->host_memory();
    const std::vector<DeviceInfo> devices = p.ops->devices();
    if (id.device < 0 || static_cast<std::size_t>(id.device) >= devices.size()) break;
    const DeviceInfo& d = devices[static_cast<std::size_t>(id.device)];
    if (const auto it = d.properties.find("thread_pool"); it != d.properties.end())
      f.pool = it->second;
    else if (d.kind != "cpu") f.pool = std::string(kCallerPool);
    break;
  }
  return facts_.emplace(key, std::move(f)).first->second;
}

bool PoolLookup::deferred(const CandidateId& id) const {
  for (const LoadedPlugin& p : accelerator_->plugins())
    if (p.name == id.plugin) return !p.deferred_identity.empty();
  return false;
}

PlanCandidates plan_candidates(Accelerator& accelerator, const Workload& workload,
                               PoolLookup& pools) {
  // decide() first: it honours online tuning off (the default, unmeasured) where tune() would
  // measure; tune() then answers from memory with the candidates' times.
  const Decision decision = accelerator.decide(workload);
  const TuneReport report = accelerator.tune(workload);
  const std::vector<std::string> quarantined = accelerator.quarantined();
  auto usable = [&](const CandidateId& id) {
    return std::none_of(quarantined.begin(), quarantined.end(), [&](const std::string& q) {
      return q.compare(0, id.plugin.size() + 1, id.plugin + ":") == 0;
    });
  };
  PlanCandidates out;
  out.winner = {decision.id, pools.pool(decision.id), 0};
  for (const CandidateResult& c : report.candidates) {
    if (c.status != CandidateStatus::measured || c.seconds <= 0) continue;
    if (c.id == decision.id) {
      out.winner.seconds = c.seconds;
      continue;
    }
    if (usable(c.id) && !pools.deferred(c.id) && pools.host_memory(c.id))
      out.others.push_back({c.id, pools.pool(c.id), c.seconds});
  }
  return out;
}

double hand_over_from_environment() {
  const char* env = std::getenv("QFORGE_MODEL_HAND_OVER");
  if (!env || !*env) return kDefaultHandOverSeconds;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(env, &end);
  if (errno != 0 || end == env || *end != '\0' || !std::isfinite(v) || v < 0)
    throw Error(ErrorCode::invalid_argument,
                std::string("QFORGE_MODEL_HAND_OVER is '") + env +
                    "'; expected seconds, a number >= 0 (0 keeps the accelerator's choice for "
                    "every plan)");
  return v;
}

}  // namespace qforge::model::quantize
