// The vulkan backend: QuantizationOps on one Vulkan device (docs/VULKAN.md).
//
// Construction never throws for a missing driver: availability() then says why (no loader, no
// device, vkCreateInstance failed). Devices are listed in vkEnumeratePhysicalDevices order; the
// per-call ops use (default_device()) is QFORGE_VULKAN_DEVICE=<index> when set, else the first
// discrete GPU, else the first usable device; plans run on any usable device. A logical device
// is created on first use.
//
// Memory is device memory (host_memory() is false): allocate() returns a VulkanBuffer whose
// data() is an opaque handle (buffers.h), and ops take pointers inside such buffers. Ops are
// synchronous: each records its work, submits it and waits.
//
// Plans (vulkan_plan.cpp) fix their device's context, their kernel and their uploaded (and, for
// a matmul B, packed) weights when made; a run reads nothing of this object. Each device has one
// context for the life of the instance, shared by the per-call ops (on the default device) and by
// every plan made for it, so buffers from allocate() serve the plans of the default device.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "context.h"
#include "instance.h"
#include "kernels.h"
#include "qforge/ops.h"

namespace qforge::vulkan {

inline constexpr const char* kPluginName = "vulkan";
inline constexpr const char* kPluginVersion = "0.2.0";

class VulkanOps final : public QuantizationOps {
 public:
  VulkanOps();
  ~VulkanOps() override;

  std::string name() const override { return kPluginName; }
  std::string version() const override { return kPluginVersion; }
  Availability availability() const override;
  std::vector<DeviceInfo> devices() const override;
  int default_device() const override { return device_ < 0 ? 0 : device_; }

  bool host_memory() const override { return false; }
  std::shared_ptr<Buffer> allocate(std::size_t bytes) override;
  void copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                      std::size_t bytes) override;
  void copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                    std::size_t bytes) override;
  void synchronize() override {}

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
  void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
            void* y) override;
  std::shared_ptr<PackedWeights> pack_weights(const MatmulDesc& desc, const void* b) override;
  void matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             std::int32_t* c) override;
  void matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             const float* bias, void* y) override;
  void qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             void* y) override;
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                             std::uint8_t* y) override;
  QuantizationParams linear_forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y) override;
  void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                       float* dw, float* db) override;

  std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request) override;

 private:
  // The context of device `index` (a valid, usable index), created on first use.
  std::shared_ptr<Context> context_of(int index);
  // The default device's context, created on first use; throws unavailable.
  Context& context();
  // Throws unsupported with supports()'s reason when it says no; returns the kernel to run.
  Kernel begin(const Support& s);
  const DeviceCaps& caps() const;
  void finish(double gpu_ns);
  void gemm(const MatmulDesc& desc, OpKind op, const void* a, const void* b,
            const PackedWeights* packed, const float* bias, void* out);

  std::shared_ptr<Instance> instance_;
  std::string instance_error_;    // why the instance could not be created
  std::string device_error_;      // why QFORGE_VULKAN_DEVICE could not be honoured
  int device_ = -1;               // the default device; -1: none usable
  std::shared_ptr<Context> ctx_;  // the default device's, once used
  std::vector<std::shared_ptr<Context>> contexts_;  // per device, created on first use
  double last_gpu_ns_ = 0.0;
  // Test knobs (set_option): smaller limits so the splitting runs on small data.
  std::uint64_t limit_storage_range_ = 0;
  std::uint32_t limit_workgroups_ = 0;
  std::uint32_t last_dispatches_ = 0;
};

}  // namespace qforge::vulkan
