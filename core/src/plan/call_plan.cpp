// The default QuantizationOps::plan(): a plan over the per-call ops. Each run takes the
// instance's lock and makes the call, so plans of one instance run one at a time; the
// descriptor, kernel and device are checked once, here. The per-call ops run the backend's own
// kernel on its default device, so that is the only kernel and device such a plan can fix.
#include <algorithm>
#include <cstring>

#include "op_table/op_hooks.h"
#include "qforge/error.h"
#include "qforge/ops.h"
#include "qforge/reference.h"

namespace qforge {

class CallPlan final : public Plan {
 public:
  CallPlan(QuantizationOps& ops, const OpDesc& op, const OpOperands& operands,
           const PlanRequest& request, std::string kernel, FixedWeights weights)
      : Plan(op, ops.name(), request.device, std::move(kernel), PlanConcurrency::serialized,
             weights.fixed()),
        ops_(ops),
        weights_(std::move(weights)),
        device_weights_(operands.inputs.size()) {
    // Fixed weights go to the device first: the ops, pack_weights included, take pointers in
    // the backend's memory.
    if (!ops_.host_memory())
      for (std::size_t i = 0; i < operands.inputs.size(); ++i) {
        if (!weights_.fixed()[i]) continue;
        const std::size_t bytes = operands.inputs[i].bytes;
        std::lock_guard lock(ops_.call_plan_mutex_);
        device_weights_[i] = ops_.allocate(bytes);
        ops_.copy_to_device(*device_weights_[i], 0, weights_.data(i), bytes);
      }
    // qlinear_matmul's int32 bias has no packed call: a biased one runs unpacked.
    const bool matmul =
        op.op == OpKind::matmul_integer || op.op == OpKind::matmul_dequant ||
        (op.op == OpKind::qlinear_matmul && !std::get<MatmulDesc>(op.desc).has_bias);
    if (matmul && weights_.fixed()[1]) {
      try {
        std::lock_guard lock(ops_.call_plan_mutex_);
        // Packing B does not depend on A's values; with A's params given at run, the packing
        // is checked against the widest zero point a run may bring.
        packed_ = ops_.pack_weights(reference::a_params_at_run_bound(std::get<MatmulDesc>(op.desc)),
                                    weight(1));
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;  // no packed form: B stays as given
      }
    }
  }

  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const override {
    check_pointers(inputs, outputs);
    std::array<const void*, kMaxOperands> in = weights_.substitute(inputs);
    for (std::size_t i = 0; i < device_weights_.size(); ++i)
      if (device_weights_[i]) in[i] = device_weights_[i]->data();
    std::lock_guard lock(ops_.call_plan_mutex_);
    if (!packed_) {
      op_table_detail::call_with_arrays(&ops_, desc(), in.data(), outputs.data());
      return;
    }
    const auto& d = std::get<MatmulDesc>(desc().desc);
    switch (desc().op) {
      case OpKind::matmul_integer:
        ops_.matmul_integer_packed(d, in[0], *packed_, static_cast<std::int32_t*>(outputs[0]));
        return;
      case OpKind::matmul_dequant: {
        const float* bias = d.has_bias ? static_cast<const float*>(in[2]) : nullptr;
        if (!d.a_params_at_run) {
          ops_.matmul_dequant_packed(d, in[0], *packed_, bias, outputs[0]);
          return;
        }
        // A's params given at run follow the other inputs (op_table.h).
        float sa = 0;
        std::int32_t za = 0;
        std::memcpy(&sa, in[d.has_bias ? 3 : 2], sizeof sa);
        std::memcpy(&za, in[d.has_bias ? 4 : 3], sizeof za);
        ops_.matmul_dequant_packed(reference::with_a_params_at_run(d, sa, za), in[0], *packed_,
                                   bias, outputs[0]);
        return;
      }
      default: ops_.qlinear_matmul_packed(d, in[0], *packed_, outputs[0]); return;
    }
  }

 private:
  // A fixed weight in the backend's memory.
  const void* weight(std::size_t i) const {
    return device_weights_[i] ? device_weights_[i]->data() : weights_.data(i);
  }

  QuantizationOps& ops_;
  FixedWeights weights_;
  std::shared_ptr<PackedWeights> packed_;                // a fixed matmul B, packed
  std::vector<std::shared_ptr<Buffer>> device_weights_;  // fixed weights on a device backend
};

std::shared_ptr<const Plan> QuantizationOps::plan(const OpDesc& op, const PlanRequest& request) {
  const auto devs = devices();
  if (request.device < 0 || static_cast<std::size_t>(request.device) >= devs.size())
    throw Error(ErrorCode::invalid_argument,
                name() + ": plan for device " + std::to_string(request.device) +
                    "; expected 0 to " + std::to_string(static_cast<long long>(devs.size()) - 1));
  if (request.device != default_device())
    throw Error(ErrorCode::unsupported,
                name() + ": plan for device " + std::to_string(request.device) +
                    "; this backend's plans run its per-call ops, which serve only device " +
                    std::to_string(default_device()));
  const Support s = supports(op, request.device);
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
  // Whatever a backend claims, a plan is never made of a descriptor the reference rejects.
  op_info(op.op).check(op);
  const std::string own = s.kernels.empty() ? std::string() : s.kernels.front();
  if (!request.kernel.empty() && request.kernel != own) {
    const bool listed =
        std::find(s.kernels.begin(), s.kernels.end(), request.kernel) != s.kernels.end();
    std::string names;
    for (const auto& k : s.kernels) names += (names.empty() ? "" : ", ") + k;
    throw Error(ErrorCode::unsupported,
                name() + ": kernel '" + request.kernel + "' cannot run " + describe(op) +
                    (listed ? " in a plan: this backend's plans run its per-call ops, which run "
                              "its own choice '" +
                                  own + "'"
                            : "; expected one of " + names));
  }
  const OpOperands operands = op_operands(op);
  if (!host_memory()) {
    auto computes_params = [](const OperandSpec& o) { return o.params_in_calls; };
    if (std::any_of(operands.inputs.begin(), operands.inputs.end(), computes_params) ||
        std::any_of(operands.outputs.begin(), operands.outputs.end(), computes_params))
      throw Error(ErrorCode::unsupported,
                  name() + ": plans of " + std::string(to_string(op.op)) +
                      " (which reads or writes params) need host memory; this backend's "
                      "per-call op serves it");
  }
  FixedWeights weights(op, operands, request);
  return std::make_shared<CallPlan>(*this, op, operands, request, own, std::move(weights));
}

}  // namespace qforge
