#include "accelerator/staging.h"

#include <cstring>

namespace qforge::accel {
namespace {

// Grows `buffers` to `specs.size()` entries, each at least as large as its spec (at least one
// byte: a zero-byte allocation is not something every device API accepts). A host-resident
// operand (op_table.h: matmul_dequant's a_scale and a_zero_point under a_params_at_run) gets
// host storage in `host` instead, since the device plan reads it on the host.
void fit(QuantizationOps& ops, std::vector<std::shared_ptr<Buffer>>& buffers,
         std::vector<std::vector<std::byte>>& host, const std::vector<ArraySpec>& specs) {
  if (buffers.size() < specs.size()) buffers.resize(specs.size());
  if (host.size() < specs.size()) host.resize(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::size_t want = specs[i].bytes == 0 ? 1 : specs[i].bytes;
    if (specs[i].host_resident) {
      buffers[i].reset();
      if (host[i].size() < want) host[i].resize(want);
      continue;
    }
    if (!buffers[i] || buffers[i]->size() < want) buffers[i] = ops.allocate(want);
  }
}

}  // namespace

void DeviceArrays::reserve(QuantizationOps& ops, const IoLayout& layout) {
  fit(ops, in_, host_in_, layout.inputs);
  fit(ops, out_, host_out_, layout.outputs);
  in_ptr_.assign(in_.size(), nullptr);
  out_ptr_.assign(out_.size(), nullptr);
  for (std::size_t i = 0; i < in_.size(); ++i)
    in_ptr_[i] = in_[i] ? in_[i]->data() : host_in_[i].data();
  for (std::size_t i = 0; i < out_.size(); ++i)
    out_ptr_[i] = out_[i] ? out_[i]->data() : host_out_[i].data();
}

void DeviceArrays::upload_inputs(QuantizationOps& ops, const IoLayout& layout,
                                 const void* const* host) {
  for (std::size_t i = 0; i < layout.inputs.size(); ++i) {
    if (!layout.inputs[i].bytes) continue;
    if (layout.inputs[i].host_resident) {
      std::memcpy(host_in_[i].data(), host[i], layout.inputs[i].bytes);
      continue;
    }
    ops.copy_to_device(*in_[i], 0, host[i], layout.inputs[i].bytes);
  }
}

void DeviceArrays::upload_outputs(QuantizationOps& ops, const IoLayout& layout,
                                  const void* const* host) {
  for (std::size_t i = 0; i < layout.outputs.size(); ++i) {
    if (!layout.outputs[i].bytes) continue;
    if (layout.outputs[i].host_resident) {
      std::memcpy(host_out_[i].data(), host[i], layout.outputs[i].bytes);
      continue;
    }
    ops.copy_to_device(*out_[i], 0, host[i], layout.outputs[i].bytes);
  }
}

void DeviceArrays::download_outputs(QuantizationOps& ops, const IoLayout& layout,
                                    void* const* host) {
  for (std::size_t i = 0; i < layout.outputs.size(); ++i)
    if (layout.outputs[i].bytes && !layout.outputs[i].host_resident)
      ops.copy_to_host(host[i], *out_[i], 0, layout.outputs[i].bytes);
  ops.synchronize();
  for (std::size_t i = 0; i < layout.outputs.size(); ++i)
    if (layout.outputs[i].bytes && layout.outputs[i].host_resident)
      std::memcpy(host[i], host_out_[i].data(), layout.outputs[i].bytes);
}

}  // namespace qforge::accel
