#include "vulkan_ops.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "buffers.h"
#include "ops_internal.h"
#include "pipelines.h"
#include "qforge/error.h"
#include "support.h"

namespace qforge::vulkan {
namespace {

// The device used by default: QFORGE_VULKAN_DEVICE when set (and valid), else the first
// discrete GPU, else the first usable device; -1 when none is usable.
int preferred_device(const std::vector<DeviceCaps>& devices) {
  if (const char* env = std::getenv("QFORGE_VULKAN_DEVICE"); env && *env) {
    int index = -1;
    const auto [p, ec] = std::from_chars(env, env + std::strlen(env), index);
    if (ec != std::errc() || *p != '\0' || index < 0 || index >= static_cast<int>(devices.size()))
      throw Error(ErrorCode::invalid_argument,
                  "QFORGE_VULKAN_DEVICE = '" + std::string(env) +
                      "'; expected a device index in [0, " +
                      std::to_string(static_cast<int>(devices.size()) - 1) + "]");
    return index;
  }
  for (const auto& d : devices)
    if (d.unusable_reason.empty() && d.type == "discrete-gpu") return d.index;
  for (const auto& d : devices)
    if (d.unusable_reason.empty()) return d.index;
  return -1;
}

std::uint64_t parse_u64(std::string_view key, std::string_view value) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size())
    throw Error(ErrorCode::invalid_argument, "vulkan: option " + std::string(key) + " = '" +
                                                 std::string(value) +
                                                 "'; expected a non-negative integer");
  return v;
}

}  // namespace

VulkanOps::VulkanOps() {
  try {
    instance_ = Instance::create();
  } catch (const Error& e) {
    instance_error_ = e.what();
    return;
  }
  try {
    device_ = preferred_device(instance_->devices());
  } catch (const Error& e) {  // a bad QFORGE_VULKAN_DEVICE: loaded, but unusable until fixed
    device_error_ = e.what();
  }
}

VulkanOps::~VulkanOps() = default;

Availability VulkanOps::availability() const {
  if (!instance_) return {false, 0, "vulkan: " + instance_error_};
  const auto& devs = instance_->devices();
  if (devs.empty()) return {false, 0, "vulkan: the Vulkan loader found no physical device"};
  if (!device_error_.empty()) return {false, 0, "vulkan: " + device_error_};
  if (device_ < 0) {
    std::string why = "vulkan: no usable device:";
    for (const auto& d : devs) why += " " + d.unusable_reason + ";";
    return {false, 0, why};
  }
  const DeviceCaps& d = devs[static_cast<std::size_t>(device_)];
  if (!d.unusable_reason.empty()) return {false, 0, "vulkan: " + d.unusable_reason};
  // A GPU is worth trying before any CPU backend; a CPU implementation (lavapipe) only after
  // them, but above the scalar fallback.
  const int score = d.type == "discrete-gpu" ? 90 : d.type == "integrated-gpu" ? 60 : 2;
  return {true, score, {}};
}

std::vector<DeviceInfo> VulkanOps::devices() const {
  std::vector<DeviceInfo> out;
  if (!instance_) return out;
  for (const auto& d : instance_->devices()) {
    DeviceInfo info;
    info.name = d.name;
    info.kind = d.type == "cpu" ? "cpu" : "gpu";
    info.memory_bytes = d.device_local_bytes;
    info.properties = d.properties();
    std::string kernels;
    for (Kernel k : gemm_kernels(d)) {
      if (!kernels.empty()) kernels += ',';
      kernels += kernel_name(k);
    }
    info.properties["gemm_kernels"] = kernels;
    info.properties["default"] = d.index == device_ ? "yes" : "no";
    if (d.index == device_) {
      // The GPU time of the last op (timestamps around its submission) and its dispatch count:
      // read by the benchmarks and the splitting tests.
      info.properties["last_op_gpu_ns"] = std::to_string(static_cast<std::uint64_t>(last_gpu_ns_));
      info.properties["last_op_dispatches"] = std::to_string(last_dispatches_);
      info.properties["validation"] = instance_->validation_enabled() ? "on" : "off";
      // The compiler statistics of the last op's last kernel (QFORGE_VULKAN_PIPELINE_STATS=1).
      if (ctx_ && ctx_->stream().commands().last_pipeline() &&
          !ctx_->stream().commands().last_pipeline()->stats.empty())
        info.properties["last_op_pipeline_stats"] =
            ctx_->stream().commands().last_pipeline()->stats;
    }
    out.push_back(std::move(info));
  }
  return out;
}

Context& VulkanOps::context() {
  const Availability a = availability();
  if (!a.usable) throw Error(ErrorCode::unavailable, a.reason);
  if (!ctx_) ctx_ = context_of(device_);
  return *ctx_;
}

std::shared_ptr<Context> VulkanOps::context_of(int index) {
  if (contexts_.empty()) contexts_.resize(instance_->devices().size());
  auto& c = contexts_[static_cast<std::size_t>(index)];
  if (!c) {
    c = std::make_shared<Context>(instance_, instance_->devices()[static_cast<std::size_t>(index)]);
    c->limit(limit_storage_range_, limit_workgroups_);
  }
  return c;
}

std::shared_ptr<Buffer> VulkanOps::allocate(std::size_t bytes) {
  context();
  return std::make_shared<VulkanBuffer>(ctx_, bytes);
}

void VulkanOps::copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                               std::size_t bytes) {
  Context& ctx = context();
  VulkanBuffer& vb = vulkan_buffer(ctx, dst, "copy_to_device");
  if (dst_offset > vb.size() || bytes > vb.size() - dst_offset)
    throw Error(ErrorCode::invalid_argument,
                "copy_to_device: " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(dst_offset) + " of a " + std::to_string(vb.size()) +
                    "-byte buffer; expected the range to lie inside the buffer");
  std::lock_guard lock(ctx.mutex());
  upload(ctx.stream(), vb.storage(), dst_offset, src, bytes);
}

void VulkanOps::copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                             std::size_t bytes) {
  Context& ctx = context();
  VulkanBuffer& vb = vulkan_buffer(ctx, const_cast<Buffer&>(src), "copy_to_host");
  if (src_offset > vb.size() || bytes > vb.size() - src_offset)
    throw Error(ErrorCode::invalid_argument,
                "copy_to_host: " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(src_offset) + " of a " + std::to_string(vb.size()) +
                    "-byte buffer; expected the range to lie inside the buffer");
  std::lock_guard lock(ctx.mutex());
  download(ctx.stream(), dst, vb.storage(), src_offset, bytes);
}

bool VulkanOps::set_option(std::string_view key, std::string_view value) {
  // Test knobs: pretend the device has smaller limits, so that the splitting into several
  // dispatches runs on small tensors. 0 restores the device's limits.
  if (key == "max_storage_buffer_range") {
    const std::uint64_t v = parse_u64(key, value);
    if (v != 0 && v < 4096)
      throw Error(ErrorCode::invalid_argument, "vulkan: option max_storage_buffer_range = " +
                                                   std::string(value) + "; expected 0 or >= 4096");
    limit_storage_range_ = v;
  } else if (key == "max_workgroup_count") {
    const std::uint64_t v = parse_u64(key, value);
    if (v > UINT32_MAX)
      throw Error(ErrorCode::invalid_argument, "vulkan: option max_workgroup_count = " +
                                                   std::string(value) + "; expected < 2^32");
    limit_workgroups_ = static_cast<std::uint32_t>(v);
  } else {
    return false;
  }
  for (const auto& c : contexts_)
    if (c) {
      std::lock_guard lock(c->mutex());  // copies on other threads read them (plans must not run)
      c->limit(limit_storage_range_, limit_workgroups_);
    }
  return true;
}

const DeviceCaps& VulkanOps::caps() const {
  return ctx_ ? ctx_->caps() : instance_->devices()[static_cast<std::size_t>(device_)];
}

Support VulkanOps::supports(const OpDesc& op, int device) const {
  if (!instance_) return Support::no("vulkan: " + instance_error_);
  const auto& devs = instance_->devices();
  if (device < 0 || static_cast<std::size_t>(device) >= devs.size())
    return Support::no("vulkan: device " + std::to_string(device) + "; expected 0 to " +
                       std::to_string(static_cast<long long>(devs.size()) - 1));
  if (const auto* m = std::get_if<MatmulDesc>(&op.desc); m && m->a_params_at_run)
    return Support::no(
        "vulkan: A's params given at run (a_params_at_run); expected them in the descriptor "
        "(vulkan's plans upload A's scale and zero point when made)");
  const DeviceCaps& caps = devs[static_cast<std::size_t>(device)];
  if (!caps.unusable_reason.empty())
    return Support::no("vulkan: device " + std::to_string(device) + ": " + caps.unusable_reason);
  // The device's context may have smaller limits (set_option's test knobs).
  const auto& c = static_cast<std::size_t>(device) < contexts_.size()
                      ? contexts_[static_cast<std::size_t>(device)]
                      : nullptr;
  return check_support(op, c ? c->caps() : caps);
}

Kernel VulkanOps::begin(const Support& s) {
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
  context();
  return *parse_kernel(s.kernels.front());
}

void VulkanOps::finish(double gpu_ns) {
  last_gpu_ns_ = gpu_ns;
  last_dispatches_ = ctx_->stream().commands().dispatch_count();
}

void VulkanOps::quantize(const QuantizeDesc& desc, const void* x, void* q) {
  context();  // availability first: caps() needs a usable device
  begin(check_support(OpKind::quantize, desc, caps()));
  std::lock_guard lock(ctx_->mutex());
  finish(run_quantize(ctx_->stream(), desc, x, q));
}

void VulkanOps::dequantize(const QuantizeDesc& desc, const void* q, float* x) {
  context();
  begin(check_support(OpKind::dequantize, desc, caps()));
  std::lock_guard lock(ctx_->mutex());
  finish(run_dequantize(ctx_->stream(), desc, q, x));
}

void VulkanOps::requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) {
  context();
  begin(check_support(OpKind::requantize, desc, caps()));
  std::lock_guard lock(ctx_->mutex());
  finish(run_requantize(ctx_->stream(), desc, c, y));
}

void VulkanOps::gemm(const MatmulDesc& desc, OpKind op, const void* a, const void* b,
                     const PackedWeights* packed, const float* bias, void* out) {
  context();
  const Kernel k = begin(check_support(op, desc, caps()));
  std::lock_guard lock(ctx_->mutex());
  finish(run_gemm(ctx_->stream(), k, op, desc, a, b, packed, bias, out));
}

void VulkanOps::matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                               std::int32_t* c) {
  gemm(desc, OpKind::matmul_integer, a, b, nullptr, nullptr, c);
}

void VulkanOps::matmul_dequant(const MatmulDesc& desc, const void* a, const void* b,
                               const float* bias, void* y) {
  gemm(desc, OpKind::matmul_dequant, a, b, nullptr, bias, y);
}

void VulkanOps::qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) {
  gemm(desc, OpKind::qlinear_matmul, a, b, nullptr, nullptr, y);
}

void VulkanOps::conv(OpKind op, const ConvDesc& desc, const void* x, const void* w,
                     const void* bias, void* y) {
  context();
  begin(check_support(op, desc, caps()));
  std::lock_guard lock(ctx_->mutex());
  finish(run_conv(ctx_->stream(), op, desc, x, w, bias, y));
}

std::shared_ptr<PackedWeights> VulkanOps::pack_weights(const MatmulDesc& desc, const void* b) {
  // Packed weights serve every matmul op; check the descriptor as matmul_integer would.
  context();
  const Support s = check_support(OpKind::matmul_integer, desc, caps());
  if (!s.supported) {
    // The message names pack_weights, the call that was made.
    std::string why = s.reason;
    if (why.rfind("vulkan: ", 0) == 0) why.erase(0, 8);
    throw Error(ErrorCode::unsupported, "vulkan: pack_weights (checked as " + why + ")");
  }
  begin(s);
  std::lock_guard lock(ctx_->mutex());
  return pack_gemm_weights(ctx_, ctx_->stream(), desc, b);
}

void VulkanOps::matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      std::int32_t* c) {
  gemm(desc, OpKind::matmul_integer, a, nullptr, &b, nullptr, c);
}

void VulkanOps::matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      const float* bias, void* y) {
  gemm(desc, OpKind::matmul_dequant, a, nullptr, &b, bias, y);
}

void VulkanOps::qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      void* y) {
  gemm(desc, OpKind::qlinear_matmul, a, nullptr, &b, nullptr, y);
}

QuantizationParams VulkanOps::dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float*,
                                                      std::uint8_t*) {
  begin(supports({OpKind::dynamic_quantize_linear, desc}));  // throws: supports() says no
  throw Error(ErrorCode::internal, "vulkan: dynamic_quantize_linear reached");
}

QuantizationParams VulkanOps::linear_forward(const LinearDesc& desc, const float*,
                                             const std::int8_t*, const float*, std::int8_t*,
                                             float*) {
  begin(supports({OpKind::linear_forward, desc}));
  throw Error(ErrorCode::internal, "vulkan: linear_forward reached");
}

void VulkanOps::linear_backward(const LinearDesc& desc, const float*, const std::int8_t*,
                                const QuantizationParams&, const std::int8_t*, float*, float*,
                                float*) {
  begin(supports({OpKind::linear_backward, desc}));
  throw Error(ErrorCode::internal, "vulkan: linear_backward reached");
}

}  // namespace qforge::vulkan
