#include "scalar_ops.h"

#include <unistd.h>

#include "descriptor_check.h"
#include "qforge/error.h"
#include "qforge/hardware.h"
#include "qforge/reference.h"

namespace qforge::cpu_scalar {
namespace {

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size)
             : 0;
}

}  // namespace

Availability ScalarOps::availability() const {
  // Plain C++ with no ISA requirement: it runs wherever it loads. The lowest usable score, so
  // any backend that can run an op is preferred until something is measured.
  return {true, 1, {}};
}

std::vector<DeviceInfo> ScalarOps::devices() const {
  const CpuInfo& cpu = cpu_info();
  DeviceInfo host;
  host.name = cpu.model.empty() ? "host CPU" : cpu.model;
  host.kind = "cpu";
  host.memory_bytes = physical_memory_bytes();
  host.properties["vendor"] = cpu.vendor;
  if (!cpu.architecture.empty()) host.properties["architecture"] = cpu.architecture;
  if (cpu.cores > 0) host.properties["cores"] = std::to_string(cpu.cores);
  if (cpu.logical_processors > 0)
    host.properties["logical_processors"] = std::to_string(cpu.logical_processors);
  host.properties["threads_used"] = "1";
  host.properties["thread_pool"] = "caller";  // docs/PLUGINS.md, "Device properties"
  host.properties["kernels"] = kKernelName;
  return {host};
}

Support ScalarOps::supports(const OpDesc& op, int device) const {
  if (device != 0)
    return Support::no("cpu_scalar: device " + std::to_string(device) + "; expected 0 (the host)");
  return check_descriptor(op);
}

void ScalarOps::begin(const OpDesc& op) const {
  const Support s = supports(op);
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
}

void ScalarOps::quantize(const QuantizeDesc& desc, const void* x, void* q) {
  begin({OpKind::quantize, desc});
  reference::quantize(desc, x, q);
}

void ScalarOps::dequantize(const QuantizeDesc& desc, const void* q, float* x) {
  begin({OpKind::dequantize, desc});
  reference::dequantize(desc, q, x);
}

void ScalarOps::requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) {
  begin({OpKind::requantize, desc});
  reference::requantize(desc, c, y);
}

void ScalarOps::matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                               std::int32_t* c) {
  begin({OpKind::matmul_integer, desc});
  reference::matmul_integer(desc, a, b, c);
}

void ScalarOps::matmul_dequant(const MatmulDesc& desc, const void* a, const void* b,
                               const float* bias, void* y) {
  begin({OpKind::matmul_dequant, desc});
  reference::matmul_dequant(desc, a, b, bias, y);
}

void ScalarOps::qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) {
  begin({OpKind::qlinear_matmul, desc});
  reference::qlinear_matmul(desc, a, b, y);
}

void ScalarOps::qlinear_matmul_bias(const MatmulDesc& desc, const void* a, const void* b,
                                    const std::int32_t* bias, void* y) {
  begin({OpKind::qlinear_matmul, desc});
  reference::qlinear_matmul(desc, a, b, bias, y);
}

void ScalarOps::matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b,
                                   const float* bias, float* y) {
  begin({OpKind::matmul_weight_only, desc});
  reference::matmul_weight_only(desc, a, b, bias, y);
}

void ScalarOps::conv(OpKind op, const ConvDesc& desc, const void* x, const void* w,
                     const void* bias, void* y) {
  begin({op, desc});
  reference::conv(op, desc, x, w, bias, y);
}

QuantizationParams ScalarOps::dynamic_quantize_linear(const DynamicQuantizeDesc& desc,
                                                      const float* x, std::uint8_t* y) {
  begin({OpKind::dynamic_quantize_linear, desc});
  return reference::dynamic_quantize_linear(desc, x, y);
}

QuantizationParams ScalarOps::linear_forward(const LinearDesc& desc, const float* x,
                                             const std::int8_t* wq, const float* bias,
                                             std::int8_t* xq, float* y) {
  begin({OpKind::linear_forward, desc});
  return reference::linear_forward(desc, x, wq, bias, xq, y);
}

void ScalarOps::linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                                const QuantizationParams& xq_params, const std::int8_t* wq,
                                float* dx, float* dw, float* db) {
  begin({OpKind::linear_backward, desc});
  reference::linear_backward(desc, dy, xq, xq_params, wq, dx, dw, db);
}

}  // namespace qforge::cpu_scalar
