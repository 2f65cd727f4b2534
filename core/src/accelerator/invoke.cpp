// The reference called generically, from arrays in io_layout order: each kind's own call is its
// OpHooks::invoke_reference.
#include "accelerator/operands.h"
#include "op_table/op_hooks.h"

namespace qforge::accel {

std::optional<QuantizationParams> invoke_reference(
    const OpDesc& op, const void* const* in, void* const* out,
    const std::optional<QuantizationParams>& xq_params) {
  return op_hooks(op.op).invoke_reference(op, in, out, xq_params);
}

}  // namespace qforge::accel
