// Plans from decisions: Accelerator::prepare, and the plans the per-call ops run (dispatch.cpp).
// The winner of a workload's bucket makes the plan; should it refuse this exact descriptor, the
// other candidates are asked in measured order, then by availability score. A device winner
// for host-resident data gets its plan wrapped in a staged plan, which copies the arrays in and
// out around each run.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "accelerator/accelerator_impl.h"
#include "accelerator/staged_plan.h"
#include "log_format.h"
#include "qforge/error.h"

namespace qforge {

namespace {

std::shared_ptr<const Plan> fit(const Workload& w, const std::shared_ptr<QuantizationOps>& ops,
                                bool host_memory, std::shared_ptr<const Plan> plan) {
  if (w.residency == Residency::host && !host_memory)
    return accel::staged_plan(ops, std::move(plan));
  return plan;
}

}  // namespace

std::shared_ptr<const Plan> Accelerator::Impl::winner_plan(DecisionSlot& s, const Workload& w,
                                                           const std::vector<const void*>& weights,
                                                           std::string& refusals) {
  try {
    return fit(w, s.ops, s.host_memory,
               s.ops->plan(w.op, PlanRequest{s.id.device, s.id.kernel, weights}));
  } catch (const Error& err) {
    if (err.code() != ErrorCode::unsupported) throw;
    refusals += s.id.label() + ": " + err.what();
    return nullptr;
  }
}

std::shared_ptr<const Plan> Accelerator::Impl::make_plan(DecisionSlot& s, const Workload& w,
                                                         const std::vector<const void*>& weights) {
  std::string refusals;
  if (auto plan = winner_plan(s, w, weights, refusals)) return plan;
  std::vector<CandidateId> order = s.ranking;
  const accel::Enumeration e = enumerate(w.op);
  for (const auto& c : e.candidates) order.push_back(c.id);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const CandidateId& id = order[i];
    if (id == s.id || std::find(order.begin(), order.begin() + i, id) != order.begin() + i)
      continue;
    const auto it = std::find_if(e.candidates.begin(), e.candidates.end(),
                                 [&](const accel::Candidate& c) { return c.id == id; });
    if (it == e.candidates.end()) continue;  // does not accept this descriptor
    try {
      auto plan = fit(w, it->ops, it->host_memory,
                      it->ops->plan(w.op, PlanRequest{id.device, id.kernel, weights}));
      log_format(LogLevel::debug, "accelerator: {} refused a plan of {}; {} made it", s.id.label(),
                 describe(w.op), id.label());
      ++stats.unsupported_retries;
      return plan;
    } catch (const Error& err) {
      if (err.code() != ErrorCode::unsupported) throw;
      refusals += "; " + id.label() + ": " + err.what();
    }
  }
  if (e.candidates.empty()) accel::throw_no_candidate(w.op, e);
  throw Error(ErrorCode::unsupported,
              "accelerator: no plugin makes a plan of " + describe(w.op) + ": " + refusals);
}

std::shared_ptr<const Plan> Accelerator::prepare(const Workload& w,
                                                 const std::vector<const void*>& weights) {
  Impl& impl = *impl_;
  return impl.make_plan(impl.slot(accel::make_key(w), w), w, weights);
}

}  // namespace qforge
