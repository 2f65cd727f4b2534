#include "accelerator/staged_plan.h"

#include <array>
#include <mutex>
#include <vector>

#include "qforge/op_table.h"

namespace qforge::accel {
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
      if (operands_.inputs[i].host_resident) {
        in[i] = inputs[i];  // the device plan reads it from the host
        continue;
      }
      if (operands_.inputs[i].bytes)
        ops_->copy_to_device(*in_[i], 0, inputs[i], operands_.inputs[i].bytes);
      in[i] = in_[i]->data();
    }
    for (std::size_t i = 0; i < outputs.size(); ++i)
      out[i] = operands_.outputs[i].host_resident ? outputs[i] : out_[i]->data();
    inner_->run({in.data(), inputs.size()}, {out.data(), outputs.size()});
    for (std::size_t i = 0; i < outputs.size(); ++i)
      if (operands_.outputs[i].bytes && !operands_.outputs[i].host_resident)
        ops_->copy_to_host(outputs[i], *out_[i], 0, operands_.outputs[i].bytes);
    ops_->synchronize();
  }

 private:
  static std::vector<bool> fixed_of(const Plan& p) {
    std::vector<bool> fixed;
    for (std::size_t i = 0; i < op_operands(p.desc()).inputs.size(); ++i)
      fixed.push_back(!p.reads_input(i));
    return fixed;
  }
  // Device buffers are made on the first run, so that a plan never run holds none; at least one
  // byte each (not every device API accepts a zero-byte allocation). Host-resident operands get
  // none: the caller's pointers are passed through.
  void ensure(std::vector<std::shared_ptr<Buffer>>& buffers,
              const std::vector<OperandSpec>& specs) const {
    if (!buffers.empty()) return;
    for (const auto& s : specs)
      buffers.push_back(s.host_resident ? nullptr : ops_->allocate(s.bytes ? s.bytes : 1));
  }

  std::shared_ptr<QuantizationOps> ops_;
  std::shared_ptr<const Plan> inner_;
  OpOperands operands_;
  mutable std::mutex mutex_;
  mutable std::vector<std::shared_ptr<Buffer>> in_, out_;
};

}  // namespace

std::shared_ptr<const Plan> staged_plan(std::shared_ptr<QuantizationOps> ops,
                                        std::shared_ptr<const Plan> device_plan) {
  return std::make_shared<StagedPlan>(std::move(ops), std::move(device_plan));
}

}  // namespace qforge::accel
