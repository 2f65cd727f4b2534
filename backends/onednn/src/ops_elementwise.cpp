// quantize, dequantize, requantize and DynamicQuantizeLinear.
#include "epilogue.h"
#include "onednn_ops.h"
#include "ops_common.h"
#include "quantize_loops.h"
#include "threads.h"

namespace qforge::onednn {

void OnednnOps::quantize(const QuantizeDesc& desc, const void* x, void* q) {
  const std::string k = begin(OpKind::quantize, desc);
  const std::int64_t n = element_count(desc.shape);
  require_data("quantize", "x", x, n);
  require_data("quantize", "q", q, n);
  const ThreadScope scope(threads_);
  quantize_loop(desc, x, q, scope.threads());
}

void OnednnOps::dequantize(const QuantizeDesc& desc, const void* q, float* x) {
  const std::string k = begin(OpKind::dequantize, desc);
  const std::int64_t n = element_count(desc.shape);
  require_data("dequantize", "q", q, n);
  require_data("dequantize", "x", x, n);
  dequantize_with(desc, q, x, k);
}

void OnednnOps::dequantize_with(const QuantizeDesc& desc, const void* q, float* x,
                                const std::string& k) {
  const ThreadScope scope(threads_);
  if (k == kernel::reorder_dequantize) reorder_.run(desc, q, x, scope.threads());
  else dequantize_loop(desc, q, x, scope.threads());
}

void OnednnOps::requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) {
  const std::string k = begin(OpKind::requantize, desc);
  const std::int64_t n = element_count(desc.shape);
  require_data("requantize", "c", c, n);
  require_data("requantize", "y", y, n);
  const ThreadScope scope(threads_);
  requantize_loop(desc, c, y, scope.threads());
}

QuantizationParams OnednnOps::dynamic_quantize_linear(const DynamicQuantizeDesc& desc,
                                                      const float* x, std::uint8_t* y) {
  const std::string k = begin(OpKind::dynamic_quantize_linear, desc);
  const ThreadScope scope(threads_);
  return dynamic_quantize_loop(desc, x, y, scope.threads());
}

}  // namespace qforge::onednn
