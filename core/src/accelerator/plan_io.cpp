#include "accelerator/plan_io.h"

#include <cstdint>
#include <cstring>

#include "op_table/array_call.h"
#include "qforge/error.h"

namespace qforge::accel {

PlanArgs::PlanArgs(const OpDesc& op) : op_(op.op) {
  const OpOperands operands = op_operands(op);
  inputs_ = operands.inputs.size();
  outputs_ = operands.outputs.size();
  int next = 0;
  for (std::size_t i = 0; i < inputs_; ++i) {
    const bool param = operands.inputs[i].params_in_calls;
    in_index_[i] = param ? -1 : next++;
  }
  next = 0;
  for (std::size_t i = 0; i < outputs_; ++i) {
    const bool param = operands.outputs[i].params_in_calls;
    out_index_[i] = param ? -1 : next++;
  }
}

std::optional<QuantizationParams> PlanArgs::run(
    const Plan& plan, const void* const* in, void* const* out,
    const std::optional<QuantizationParams>& xq_params) {
  std::array<const void*, kMaxOperands> pin{};
  std::array<void*, kMaxOperands> pout{};
  for (std::size_t i = 0; i < inputs_; ++i) {
    if (in_index_[i] >= 0) {
      pin[i] = in[in_index_[i]];
      continue;
    }
    // The only params an op reads are linear_backward's activation scale.
    if (!xq_params)
      throw Error(ErrorCode::internal,
                  "accelerator: " + std::string(to_string(op_)) + " run without its params");
    const float s = xq_params->scale();
    std::memcpy(in_param_[i].data(), &s, sizeof s);
    pin[i] = in_param_[i].data();
  }
  for (std::size_t i = 0; i < outputs_; ++i)
    pout[i] = out_index_[i] >= 0 ? out[out_index_[i]] : out_param_[i].data();
  plan.run(std::span<const void* const>(pin.data(), inputs_),
           std::span<void* const>(pout.data(), outputs_));
  switch (op_) {
    case OpKind::dynamic_quantize_linear: {  // y, y_scale, y_zero_point
      float scale;
      std::memcpy(&scale, out_param_[1].data(), sizeof scale);
      const auto zero_point = std::to_integer<std::uint8_t>(out_param_[2][0]);
      return QuantizationParams::per_tensor_affine(DType::uint8, scale, zero_point);
    }
    case OpKind::linear_forward:  // xq, y, x_scale
      return op_table_detail::linear_activation_params(out_param_[2].data());
    default: return std::nullopt;
  }
}

}  // namespace qforge::accel
