// supports(): which descriptors the vulkan backend runs, decided from the descriptor and the
// device's features before any data exists. Invalid descriptors (what the reference rejects)
// and valid ones this backend does not implement both answer no, with the reason.
#pragma once

#include <optional>

#include "device_caps.h"
#include "kernels.h"
#include "qforge/ops.h"

namespace qforge::vulkan {

// Support::yes(kernel names, best first) or Support::no(reason).
Support check_support(const OpDesc& op, const DeviceCaps& caps);

// The same for one descriptor type, without building an OpDesc (which would copy the params:
// block-wise params of a large tensor are tens of MB).
Support check_support(OpKind op, const QuantizeDesc& d, const DeviceCaps& caps);
Support check_support(OpKind op, const RequantizeDesc& d, const DeviceCaps& caps);
Support check_support(OpKind op, const ConvDesc& d, const DeviceCaps& caps);
Support check_support(OpKind op, const MatmulDesc& d, const DeviceCaps& caps);

// The GEMM kernels this device runs, best first.
std::vector<Kernel> gemm_kernels(const DeviceCaps& caps);

}  // namespace qforge::vulkan
