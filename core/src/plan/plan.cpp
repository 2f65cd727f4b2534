#include "qforge/plan.h"

#include <cstring>

#include "qforge/error.h"

namespace qforge {

std::string_view to_string(PlanConcurrency c) noexcept {
  return c == PlanConcurrency::concurrent ? "concurrent" : "serialized";
}

Plan::Plan(OpDesc desc, std::string backend, int device, std::string kernel,
           PlanConcurrency concurrency, std::vector<bool> fixed_inputs)
    : desc_(std::move(desc)),
      backend_(std::move(backend)),
      device_(device),
      kernel_(std::move(kernel)),
      concurrency_(concurrency),
      fixed_(std::move(fixed_inputs)) {
  const OpOperands operands = op_operands(desc_);
  for (const auto& o : operands.inputs) in_bytes_.push_back(o.bytes);
  for (const auto& o : operands.outputs) out_bytes_.push_back(o.bytes);
}

Plan::~Plan() = default;

void Plan::check_pointers(std::span<const void* const> inputs,
                          std::span<void* const> outputs) const {
  if (inputs.size() != in_bytes_.size() || outputs.size() != out_bytes_.size())
    throw Error(ErrorCode::invalid_argument,
                std::string(to_string(desc_.op)) + " plan: run() got " +
                    std::to_string(inputs.size()) + " inputs and " +
                    std::to_string(outputs.size()) + " outputs; expected " +
                    std::to_string(in_bytes_.size()) + " and " + std::to_string(out_bytes_.size()) +
                    " (op_operands() of its descriptor)");
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i] && in_bytes_[i] && reads_input(i))
      throw Error(ErrorCode::invalid_argument,
                  std::string(to_string(desc_.op)) + " plan: input " + std::to_string(i) + " (" +
                      std::string(op_operands(desc_).inputs[i].name) + ", " +
                      std::to_string(in_bytes_[i]) + " bytes) is null; expected a pointer");
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i] && out_bytes_[i])
      throw Error(ErrorCode::invalid_argument,
                  std::string(to_string(desc_.op)) + " plan: output " + std::to_string(i) + " (" +
                      std::string(op_operands(desc_).outputs[i].name) + ", " +
                      std::to_string(out_bytes_[i]) + " bytes) is null; expected a pointer");
}

FixedWeights::FixedWeights(const OpDesc& op, const OpOperands& operands, const PlanRequest& request)
    : fixed_(operands.inputs.size(), false), copies_(operands.inputs.size()) {
  const auto& w = request.weights;
  if (w.empty()) return;
  if (w.size() != operands.inputs.size())
    throw Error(ErrorCode::invalid_argument,
                std::string(to_string(op.op)) + " plan: " + std::to_string(w.size()) +
                    " weight entries; expected none or one per input (" +
                    std::to_string(operands.inputs.size()) + ")");
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (!w[i]) continue;
    const OperandSpec& o = operands.inputs[i];
    if (o.role != OperandRole::weight)
      throw Error(ErrorCode::invalid_argument,
                  std::string(to_string(op.op)) + " plan: input " + std::to_string(i) + " ('" +
                      std::string(o.name) + "') is an " + std::string(to_string(o.role)) +
                      ", not a weight; expected a null entry for it in PlanRequest::weights");
    fixed_[i] = true;
    copies_[i].resize(o.bytes);
    if (o.bytes) std::memcpy(copies_[i].data(), w[i], o.bytes);
  }
}

const void* FixedWeights::data(std::size_t input) const noexcept {
  return input < fixed_.size() && fixed_[input] ? copies_[input].data() : nullptr;
}

std::array<const void*, kMaxOperands> FixedWeights::substitute(
    std::span<const void* const> inputs) const {
  std::array<const void*, kMaxOperands> p{};
  for (std::size_t i = 0; i < inputs.size() && i < kMaxOperands; ++i)
    p[i] = i < fixed_.size() && fixed_[i] ? copies_[i].data() : inputs[i];
  return p;
}

}  // namespace qforge
