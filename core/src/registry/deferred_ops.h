// The QuantizationOps the registry hands out for a deferred plugin (qforge/plugin/abi.h,
// QFORGE_PLUGIN_DEFERRED_IDENTITY_SYMBOL): name() and version() come from the descriptor; any
// other call first runs the plugin's create(), once, from whichever thread gets there first,
// and is then forwarded to the object it made. Starting a Vulkan instance (its loader and every
// driver it finds, Mesa's llvmpipe with LLVM among them) or a CUDA context costs more than a
// small model's whole calibration, so a program pays for it only when it asks that plugin
// something.
#pragma once

#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "registry/plugin_library.h"

namespace qforge::detail {

// The deferred identity a plugin exports, or nullopt when it exports none, returns NULL or
// throws (then it is created as it loads, like any plugin).
std::optional<std::string> deferred_identity(const OpenedPlugin& plugin);

class DeferredOps final : public QuantizationOps {
 public:
  // `identity`: what deferred_identity() said when the plugin was loaded.
  DeferredOps(OpenedPlugin plugin, std::filesystem::path file, std::string identity);
  ~DeferredOps() override;

  std::string name() const override { return name_; }
  std::string version() const override { return version_; }
  Availability availability() const override;
  std::vector<DeviceInfo> devices() const override;
  int default_device() const override;
  bool host_memory() const override;
  std::shared_ptr<Buffer> allocate(std::size_t bytes) override;
  void copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                      std::size_t bytes) override;
  void copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                    std::size_t bytes) override;
  void synchronize() override;
  bool set_option(std::string_view key, std::string_view value) override;
  using QuantizationOps::supports;
  Support supports(const OpDesc& op, int device) const override;
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
  std::shared_ptr<PackedWeights> pack_weights(const MatmulDesc& desc, const void* b) override;
  void matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             std::int32_t* c) override;
  void matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             const float* bias, void* y) override;
  void qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             void* y) override;
  void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
            void* y) override;
  void matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b, const float* bias,
                          float* y) override;
  std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request) override;
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                             std::uint8_t* y) override;
  QuantizationParams linear_forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y) override;
  void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                       float* dw, float* db) override;

 private:
  // The created object, or null when create() failed (failure_ says why).
  QuantizationOps* created() const;
  // The created object; throws ErrorCode::unavailable with failure_ when create() failed.
  QuantizationOps& real() const;

  OpenedPlugin plugin_;
  std::filesystem::path file_;
  std::string name_;
  std::string version_;
  std::string identity_;
  mutable std::once_flag once_;
  mutable std::shared_ptr<QuantizationOps> real_;
  mutable std::string failure_;
};

}  // namespace qforge::detail
