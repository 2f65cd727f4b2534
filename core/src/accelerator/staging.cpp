#include "accelerator/staging.h"

namespace qforge::accel {
namespace {

// Grows `buffers` to `specs.size()` entries, each at least as large as its spec (at least one
// byte: a zero-byte allocation is not something every device API accepts).
void fit(QuantizationOps& ops, std::vector<std::shared_ptr<Buffer>>& buffers,
         const std::vector<ArraySpec>& specs) {
  if (buffers.size() < specs.size()) buffers.resize(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::size_t want = specs[i].bytes == 0 ? 1 : specs[i].bytes;
    if (!buffers[i] || buffers[i]->size() < want) buffers[i] = ops.allocate(want);
  }
}

}  // namespace

void DeviceArrays::reserve(QuantizationOps& ops, const IoLayout& layout) {
  fit(ops, in_, layout.inputs);
  fit(ops, out_, layout.outputs);
  in_ptr_.assign(in_.size(), nullptr);
  out_ptr_.assign(out_.size(), nullptr);
  for (std::size_t i = 0; i < in_.size(); ++i) in_ptr_[i] = in_[i]->data();
  for (std::size_t i = 0; i < out_.size(); ++i) out_ptr_[i] = out_[i]->data();
}

void DeviceArrays::upload_inputs(QuantizationOps& ops, const IoLayout& layout,
                                 const void* const* host) {
  for (std::size_t i = 0; i < layout.inputs.size(); ++i)
    if (layout.inputs[i].bytes) ops.copy_to_device(*in_[i], 0, host[i], layout.inputs[i].bytes);
}

void DeviceArrays::upload_outputs(QuantizationOps& ops, const IoLayout& layout,
                                  const void* const* host) {
  for (std::size_t i = 0; i < layout.outputs.size(); ++i)
    if (layout.outputs[i].bytes) ops.copy_to_device(*out_[i], 0, host[i], layout.outputs[i].bytes);
}

void DeviceArrays::download_outputs(QuantizationOps& ops, const IoLayout& layout,
                                    void* const* host) {
  for (std::size_t i = 0; i < layout.outputs.size(); ++i)
    if (layout.outputs[i].bytes) ops.copy_to_host(host[i], *out_[i], 0, layout.outputs[i].bytes);
  ops.synchronize();
}

}  // namespace qforge::accel
