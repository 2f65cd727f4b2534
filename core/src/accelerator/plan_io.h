// Running a plan from the accelerator's per-call view of an op's arrays (operands.h: arrays in
// io_layout order, params as QuantizationParams), as probes and timing hold them. A plan takes
// the op table's operands, where params an op reads or computes are arrays of one element;
// PlanArgs keeps those elements and converts them, so that verifying or timing a candidate is
// one plan run with the same arrays the reference was given.
#pragma once

#include <array>
#include <cstddef>
#include <optional>

#include "accelerator/operands.h"
#include "qforge/plan.h"

namespace qforge::accel {

class PlanArgs {
 public:
  explicit PlanArgs(const OpDesc& op);

  // Runs `plan` (made for the op given above) on arrays in io_layout order, in the plan's
  // memory; the params elements are PlanArgs' own, in host memory, as the op table says
  // (OperandSpec::host_resident) for every device. Returns the params the op computed, as the
  // per-call op would.
  std::optional<QuantizationParams> run(const Plan& plan, const void* const* in, void* const* out,
                                        const std::optional<QuantizationParams>& xq_params);

 private:
  OpKind op_;
  std::size_t inputs_ = 0, outputs_ = 0;
  // Per operand of the op table: its index in io_layout order, or -1 for a params element.
  std::array<int, kMaxOperands> in_index_{}, out_index_{};
  // One params element per operand slot (a float scale or a uint8 zero point).
  std::array<std::array<std::byte, 4>, kMaxOperands> in_param_{}, out_param_{};
};

}  // namespace qforge::accel
