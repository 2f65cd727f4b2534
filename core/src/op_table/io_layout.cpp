// The per-call view of the op table's operands.
#include "accelerator/operands.h"

namespace qforge::accel {
std::size_t IoLayout::input_bytes() const {
  std::size_t n = 0;
  for (const auto& a : inputs) n += a.bytes;
  return n;
}

std::size_t IoLayout::output_bytes() const {
  std::size_t n = 0;
  for (const auto& a : outputs) n += a.bytes;
  return n;
}

IoLayout io_layout(const OpDesc& op) {
  const OpOperands operands = op_operands(op);
  IoLayout l;
  for (const auto& o : operands.inputs)
    if (o.params_in_calls) l.needs_xq_params = true;
    else l.inputs.push_back(o);
  for (const auto& o : operands.outputs)
    if (o.params_in_calls) l.returns_params = true;
    else l.outputs.push_back(o);
  return l;
}

std::vector<const void*> HostArrays::input_pointers() const {
  std::vector<const void*> p;
  for (const auto& a : inputs) p.push_back(a.data());
  return p;
}

std::vector<void*> HostArrays::output_pointers() {
  std::vector<void*> p;
  for (auto& a : outputs) p.push_back(a.data());
  return p;
}

}  // namespace qforge::accel
