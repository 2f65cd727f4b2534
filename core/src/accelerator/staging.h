// Device-side copies of a call's arrays, for plugins whose op pointers are not host pointers
// (host_memory() == false): allocated through the plugin, filled with copy_to_device, read
// back with copy_to_host. Used by probes and by timing (where the copies may be part of what is
// timed); host-resident data for a device winner goes through a staged plan (staged_plan.h).
// Operands the op table marks host_resident that are arrays of the call (matmul_dequant's
// a_scale and a_zero_point under a_params_at_run) stay in host memory of this object's: the
// device plan reads them on the host.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "accelerator/operands.h"

namespace qforge::accel {

class DeviceArrays {
 public:
  // Makes sure every array of `layout` fits, reallocating through `ops` only when one grew.
  void reserve(QuantizationOps& ops, const IoLayout& layout);
  void upload_inputs(QuantizationOps& ops, const IoLayout& layout, const void* const* host);
  // Outputs too are uploaded before a probe, so that an output the plugin never writes keeps
  // the poison and differs from the reference.
  void upload_outputs(QuantizationOps& ops, const IoLayout& layout, const void* const* host);
  void download_outputs(QuantizationOps& ops, const IoLayout& layout, void* const* host);

  const void* const* inputs() const noexcept { return in_ptr_.data(); }
  void* const* outputs() const noexcept { return out_ptr_.data(); }

 private:
  std::vector<std::shared_ptr<Buffer>> in_, out_;           // null for host-resident operands
  std::vector<std::vector<std::byte>> host_in_, host_out_;  // those operands' host storage
  std::vector<const void*> in_ptr_;
  std::vector<void*> out_ptr_;
};

}  // namespace qforge::accel
