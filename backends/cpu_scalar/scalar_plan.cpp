// cpu_scalar's plans: the reference on the plan's arrays. They hold nothing but the descriptor
// and copies of fixed weights, so any number may run at once from any threads.
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "scalar_ops.h"

namespace qforge::cpu_scalar {
namespace {

class ScalarPlan final : public Plan {
 public:
  ScalarPlan(const OpDesc& op, FixedWeights weights)
      : Plan(op, kPluginName, 0, kKernelName, PlanConcurrency::concurrent, weights.fixed()),
        weights_(std::move(weights)) {}

  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const override {
    check_pointers(inputs, outputs);
    const auto in = weights_.substitute(inputs);
    run_reference(desc(), in.data(), outputs.data());
  }

 private:
  FixedWeights weights_;
};

}  // namespace

std::shared_ptr<const Plan> ScalarOps::plan(const OpDesc& op, const PlanRequest& request) {
  if (request.device != 0)
    throw Error(ErrorCode::invalid_argument, "cpu_scalar: plan for device " +
                                                 std::to_string(request.device) +
                                                 "; expected 0 (the host)");
  if (!request.kernel.empty() && request.kernel != kKernelName)
    throw Error(ErrorCode::unsupported, "cpu_scalar: unknown kernel '" + request.kernel +
                                            "'; expected '" + kKernelName + "' or an empty name");
  const Support s = supports(op);
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
  return std::make_shared<ScalarPlan>(op, FixedWeights(op, op_operands(op), request));
}

}  // namespace qforge::cpu_scalar
