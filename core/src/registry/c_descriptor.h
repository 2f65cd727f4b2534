// A qforge::OpDesc seen through the C boundary's structs (qforge/plugin/c_api.h), and the
// mapping of the boundary's status codes to ErrorCode.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "qforge/error.h"
#include "qforge/op_desc.h"
#include "qforge/plugin/c_api.h"

namespace qforge::detail {

// The C structs for one op. They point into `op` (shapes, scales, zero points), which must
// outlive this object; neither is copied, so a per-call op costs no allocation here.
class CDescriptor {
 public:
  explicit CDescriptor(const OpDesc& op);
  CDescriptor(const CDescriptor&) = delete;
  CDescriptor& operator=(const CDescriptor&) = delete;

  const qforge_c_op* op() const noexcept { return &op_; }

 private:
  const qforge_c_params* params(std::size_t slot, const QuantizationParams& p);

  qforge_c_op op_{};
  std::array<qforge_c_params, 3> params_{};
  qforge_c_quantize_desc quantize_{};
  qforge_c_requantize_desc requantize_{};
  qforge_c_matmul_desc matmul_{};
  qforge_c_dynamic_quantize_desc dynamic_{};
  qforge_c_linear_desc linear_{};
  qforge_c_conv_desc conv_{};
};

// The ErrorCode of a QFORGE_C_ERROR_* value; internal for a value this host does not know.
ErrorCode error_code_from_c(std::uint32_t code) noexcept;

// A key that is equal for two ops exactly when their descriptors are (scales and zero points
// included), for caching plans.
std::string descriptor_key(const OpDesc& op);

}  // namespace qforge::detail
