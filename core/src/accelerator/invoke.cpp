// One generic call per op, on a plugin or on the reference, from arrays in io_layout order:
// each kind's own call is its OpHooks::invoke.
#include "accelerator/operands.h"
#include "op_table/op_hooks.h"

namespace qforge::accel {

std::optional<QuantizationParams> invoke(QuantizationOps& ops, const OpDesc& op,
                                         const void* const* in, void* const* out,
                                         const std::optional<QuantizationParams>& xq_params) {
  return op_hooks(op.op).invoke(ops, op, in, out, xq_params);
}

std::optional<QuantizationParams> invoke_reference(
    const OpDesc& op, const void* const* in, void* const* out,
    const std::optional<QuantizationParams>& xq_params) {
  return op_hooks(op.op).invoke_reference(op, in, out, xq_params);
}

}  // namespace qforge::accel
