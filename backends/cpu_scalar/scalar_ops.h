// The cpu_scalar backend: QuantizationOps over qforge::reference.
//
// It is the fallback and the oracle at once: complete for every op, dtype, scheme and layout
// the reference accepts, on any CPU, and slow. One kernel, "scalar_reference".
#pragma once

#include <string>

#include "qforge/ops.h"

namespace qforge::cpu_scalar {

inline constexpr const char* kPluginName = "cpu_scalar";
inline constexpr const char* kPluginVersion = "0.1.0";
inline constexpr const char* kKernelName = "scalar_reference";

class ScalarOps final : public QuantizationOps {
 public:
  std::string name() const override { return kPluginName; }
  std::string version() const override { return kPluginVersion; }
  Availability availability() const override;
  std::vector<DeviceInfo> devices() const override;
  bool host_memory() const override { return true; }

  using QuantizationOps::supports;
  Support supports(const OpDesc& op, int device) const override;
  // Plans run the reference directly: concurrent, nothing kept on this instance.
  std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request) override;

  void quantize(const QuantizeDesc& desc, const void* x, void* q) override;
  void dequantize(const QuantizeDesc& desc, const void* q, float* x) override;
  void requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) override;
  void matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                      std::int32_t* c) override;
  void matmul_dequant(const MatmulDesc& desc, const void* a, const void* b, const float* bias,
                      void* y) override;
  void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) override;
  void qlinear_matmul_bias(const MatmulDesc& desc, const void* a, const void* b,
                           const std::int32_t* bias, void* y) override;
  void matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b, const float* bias,
                          float* y) override;
  void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
            void* y) override;
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                             std::uint8_t* y) override;
  QuantizationParams linear_forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y) override;
  void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                       float* dw, float* db) override;

 private:
  // Throws ErrorCode::unsupported with supports()'s reason when it says no.
  void begin(const OpDesc& op) const;
};

}  // namespace qforge::cpu_scalar
