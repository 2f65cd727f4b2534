// Accelerator::prepare: the winner of a workload's bucket (decided as for the per-call ops)
// makes a plan of the workload. A device winner for host-resident data gets its plan wrapped
// in a StagedPlan, which copies the arrays in and out around each run.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "accelerator/accelerator_impl.h"
#include "log_format.h"
#include "qforge/error.h"

namespace qforge {
namespace {

class StagedPlan final : public Plan {
 public:
  StagedPlan(std::shared_ptr<QuantizationOps> ops, std::shared_ptr<const Plan> inner)
      : Plan(inner->desc(), inner->backend(), inner->device(), inner->kernel(),
             PlanConcurrency::serialized, fixed_of(*inner)),
        ops_(std::move(ops)),
        inner_(std::move(inner)),
        operands_(op_operands(desc())) {}

  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const override {
    check_pointers(inputs, outputs);
    std::lock_guard lock(mutex_);
    std::array<const void*, kMaxOperands> in{};
    std::array<void*, kMaxOperands> out{};
    ensure(in_, operands_.inputs);
    ensure(out_, operands_.outputs);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!inner_->reads_input(i)) continue;  // fixed in the device plan
      ops_->copy_to_device(*in_[i], 0, inputs[i], operands_.inputs[i].bytes);
      in[i] = in_[i]->data();
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) out[i] = out_[i]->data();
    inner_->run({in.data(), inputs.size()}, {out.data(), outputs.size()});
    for (std::size_t i = 0; i < outputs.size(); ++i)
      ops_->copy_to_host(outputs[i], *out_[i], 0, operands_.outputs[i].bytes);
  }

 private:
  static std::vector<bool> fixed_of(const Plan& p) {
    std::vector<bool> fixed;
    for (std::size_t i = 0; i < op_operands(p.desc()).inputs.size(); ++i)
      fixed.push_back(!p.reads_input(i));
    return fixed;
  }
  // Device buffers are made on the first run, so that a plan never run holds none.
  void ensure(std::vector<std::shared_ptr<Buffer>>& buffers,
              const std::vector<OperandSpec>& specs) const {
    if (!buffers.empty()) return;
    for (const auto& s : specs) buffers.push_back(ops_->allocate(s.bytes));
  }

  std::shared_ptr<QuantizationOps> ops_;
  std::shared_ptr<const Plan> inner_;
  OpOperands operands_;
  mutable std::mutex mutex_;
  mutable std::vector<std::shared_ptr<Buffer>> in_, out_;
};

}  // namespace

std::shared_ptr<const Plan> Accelerator::prepare(const Workload& w,
                                                 const std::vector<const void*>& weights) {
  Impl& impl = *impl_;
  DecisionSlot& s = impl.slot(accel::make_key(w), w);
  // The winner first; should it refuse this shape of its bucket, the others in measured order,
  // then by availability score (as the per-call ops fall back).
  std::vector<CandidateId> order{s.id};
  order.insert(order.end(), s.ranking.begin(), s.ranking.end());
  const accel::Enumeration e = accel::enumerate_candidates(w.op, impl.plugins, impl.options.policy);
  for (const auto& c : e.candidates) order.push_back(c.id);
  std::string refusals;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const CandidateId& id = order[i];
    if (std::find(order.begin(), order.begin() + i, id) != order.begin() + i) continue;
    const auto it = std::find_if(e.candidates.begin(), e.candidates.end(),
                                 [&](const accel::Candidate& c) { return c.id == id; });
    if (it == e.candidates.end()) continue;  // does not accept this descriptor
    try {
      auto plan = it->ops->plan(w.op, PlanRequest{id.device, id.kernel, weights});
      if (i > 0)
        log_format(LogLevel::debug, "accelerator: {} refused a plan of {}; {} made it",
                   s.id.label(), describe(w.op), id.label());
      if (w.residency == Residency::host && !it->host_memory)
        return std::make_shared<StagedPlan>(it->ops, std::move(plan));
      return plan;
    } catch (const Error& err) {
      if (err.code() != ErrorCode::unsupported) throw;
      refusals += (refusals.empty() ? "" : "; ") + id.label() + ": " + err.what();
    }
  }
  throw Error(ErrorCode::unsupported,
              "accelerator: no plugin makes a plan of " + describe(w.op) + ": " + refusals);
}

}  // namespace qforge
