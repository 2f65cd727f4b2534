#include "support.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "windows.h"

namespace qforge::vulkan {
namespace {

// Thrown inside the checks and turned into Support::no by check_support().
struct Refusal {
  std::string why;
};
[[noreturn]] void refuse(std::string why) { throw Refusal{std::move(why)}; }

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

void require_q8(const char* which, DType t) {
  if (t != DType::int8 && t != DType::uint8)
    refuse(std::string(which) + " dtype is " + std::string(name(t)) +
           "; the vulkan backend runs int8 and uint8");
}

void check_params_size(const DeviceCaps& caps, std::size_t count, std::size_t bytes_each) {
  if (count * bytes_each > window_capacity(caps))
    refuse(std::to_string(count) + " scale/zero-point pairs exceed one storage-buffer binding (" +
           std::to_string(window_capacity(caps)) + " bytes) on device '" + caps.name + "'");
}

void check_quantize(const QuantizeDesc& d, const DeviceCaps& caps) {
  element_count(d.shape);
  d.params.validate_for(d.shape);
  require_q8("params", d.params.dtype());
  if (d.params.scheme().mapping == Mapping::logarithmic)
    refuse(
        "the logarithmic mapping is not implemented by the vulkan backend; expected affine or "
        "symmetric");
  if (d.float_type != FloatType::f32)
    refuse(std::string("float side is ") + name(d.float_type) +
           "; the vulkan backend quantizes float32");
  // Per-channel params are bound whole; block-wise ones per dispatch (op_elementwise.cpp).
  if (d.params.scheme().granularity == Granularity::per_channel)
    check_params_size(caps, d.params.count(), 8);
}

void check_requantize(const RequantizeDesc& d, const DeviceCaps& caps) {
  element_count(d.shape);
  if (d.out_dtype != DType::int8 && d.out_dtype != DType::uint8)
    refuse("out_dtype = " + std::string(name(d.out_dtype)) + "; expected int8 or uint8");
  const auto& tr = traits(d.out_dtype);
  if (d.out_zero_point < tr.qmin || d.out_zero_point > tr.qmax)
    refuse("out_zero_point = " + std::to_string(d.out_zero_point) + "; expected a value in the " +
           std::string(tr.name) + " range [" + std::to_string(tr.qmin) + ", " +
           std::to_string(tr.qmax) + "]");
  if (d.multipliers.empty())
    refuse("no multipliers; expected 1 (per tensor) or one per index along axis");
  for (std::size_t i = 0; i < d.multipliers.size(); ++i) {
    const float m = d.multipliers[i];
    if (!std::isfinite(m) || m < 0.0f)
      refuse("multipliers[" + std::to_string(i) + "] = " + float_text(m) +
             "; expected a finite value >= 0");
    if (d.mode == RequantMode::fixed_point) reference::quantize_multiplier(m);  // throws >= 2^31
  }
  if (d.multipliers.size() > 1) {
    const int rank = static_cast<int>(d.shape.size());
    const int axis = d.axis < 0 ? d.axis + rank : d.axis;
    if (axis < 0 || axis >= rank)
      refuse("axis " + std::to_string(d.axis) + " for shape " + to_string(d.shape) +
             "; expected an axis in [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) +
             "]");
    const std::int64_t extent = d.shape[static_cast<std::size_t>(axis)];
    if (extent != static_cast<std::int64_t>(d.multipliers.size()))
      refuse(std::to_string(d.multipliers.size()) + " multipliers for shape " + to_string(d.shape) +
             " along axis " + std::to_string(axis) + "; expected 1 or " + std::to_string(extent));
  }
  check_params_size(caps, d.multipliers.size(), 4);
}

void check_operand(const char* which, const QuantizationParams& p, const Shape& shape,
                   int channel_axis) {
  const std::string who = std::string(which) + " (" + p.to_string() + ")";
  require_q8(which, p.dtype());
  if (p.scheme().mapping == Mapping::logarithmic)
    refuse(who + " uses the logarithmic mapping; expected affine or symmetric");
  if (p.scheme().granularity == Granularity::per_channel) {
    const int axis = p.channel_axis(shape.size());
    if (axis != channel_axis)
      refuse(who + " is per_channel along axis " + std::to_string(axis) + " of " +
             to_string(shape) + "; expected axis " + std::to_string(channel_axis));
  }
  if (p.scheme().granularity == Granularity::block)
    refuse(who +
           " is block-wise; the vulkan backend's GEMM takes per_tensor or per_channel "
           "operands (block-wise B runs on the CPU backends)");
  p.validate_for(shape);
}

void check_matmul(const MatmulDesc& d, OpKind op, const DeviceCaps& caps) {
  for (auto [what, v] : {std::pair{"m", d.m}, {"n", d.n}, {"k", d.k}})
    if (v < 0) refuse(std::string(what) + " = " + std::to_string(v) + "; expected >= 0");
  check_operand("A", d.a, d.a_shape(), 0);
  check_operand("B", d.b, d.b_shape(), d.b_layout == MatrixLayout::kn ? 1 : 0);
  const std::int64_t safe_k = reference::int32_safe_k(d);
  if (d.k > safe_k)
    refuse("k = " + std::to_string(d.k) +
           " can overflow the int32 accumulator for these dtypes "
           "and zero points; the vulkan backend accumulates in int32 and takes k <= " +
           std::to_string(safe_k) + " (reference::int32_safe_k)");
  check_params_size(caps, d.a.count() + d.b.count(), 8);
  // Packing a [K, N] B reads at least four of its rows through one binding.
  if (d.b_layout == MatrixLayout::kn && static_cast<std::uint64_t>(d.n) * 4 > window_capacity(caps))
    refuse("B is [K, N] with N = " + std::to_string(d.n) +
           ": four rows exceed one storage-buffer "
           "binding on device '" +
           caps.name + "'; expected b_layout nk for so wide a B");
  if (op == OpKind::matmul_dequant && d.out_type != FloatType::f32)
    refuse(std::string("out_type ") + name(d.out_type) +
           " is not implemented by the vulkan backend; expected float32");
  if (op != OpKind::qlinear_matmul) return;
  if (!d.y) refuse("no output params (desc.y is empty); expected per-tensor int8 or uint8");
  const QuantizationParams& y = *d.y;
  if (y.scheme().granularity != Granularity::per_tensor ||
      y.scheme().mapping == Mapping::logarithmic ||
      (y.dtype() != DType::int8 && y.dtype() != DType::uint8))
    refuse("output params " + y.to_string() +
           "; expected per-tensor affine or symmetric int8 or uint8");
  if (d.has_bias || d.activation != ConvActivation::none)
    refuse(
        "qlinear_matmul with an int32 bias or an output clamp is not implemented by the vulkan "
        "backend; cpu_x86 runs it");
  if (!caps.storage_buffer_8bit)
    refuse("device '" + caps.name +
           "' lacks storageBuffer8BitAccess, which the requantizing "
           "epilogue needs to store bytes");
  // Rounded multiplication and division are monotonic, so the largest scales give the largest
  // multiplier: if it is finite (and below 2^31 for fixed point) every one is.
  if (d.m > 0 && d.n > 0) {
    const float sa = *std::max_element(d.a.scales().begin(), d.a.scales().end());
    const float sb = *std::max_element(d.b.scales().begin(), d.b.scales().end());
    const float most = (sa * sb) / y.scale();
    if (!std::isfinite(most))
      refuse("multiplier (sa * sb) / sy = (" + float_text(sa) + " * " + float_text(sb) + ") / " +
             float_text(y.scale()) + " is not finite; expected scales whose ratio fits float32");
    if (d.requant_mode == RequantMode::fixed_point) reference::quantize_multiplier(most);
  }
}

// What conv_direct.comp runs in one dispatch with 32-bit index arithmetic (op_conv.cpp).
void check_conv(const ConvDesc& d, OpKind op, const DeviceCaps& caps) {
  const std::int64_t safe = reference::int32_safe_reduction(d);
  if (d.reduction() > safe)
    refuse("C / groups * KH * KW = " + std::to_string(d.reduction()) +
           " can overflow the int32 accumulator for these dtypes and zero points; the vulkan "
           "backend accumulates in int32 and takes reductions <= " +
           std::to_string(safe) + " (reference::int32_safe_reduction)");
  // Every operand in one binding keeps each index the shader computes below 2^31.
  const std::uint64_t cap = window_capacity(caps);
  auto fits = [&](const char* what, const Shape& shape, std::uint64_t elt) {
    std::uint64_t n = 1;
    for (const auto e : shape) n *= static_cast<std::uint64_t>(e);  // bounded by the checks
    if (n * elt > cap)
      refuse(std::string(what) + " " + to_string(shape) + " spans " + std::to_string(n * elt) +
             " bytes, more than one storage-buffer binding (" + std::to_string(cap) +
             " bytes) on device '" + caps.name +
             "'; the direct convolution binds each operand whole (split the batch)");
  };
  fits("X", d.x_shape(), 1);
  fits("W", d.w_shape(), 1);
  fits("Y", d.y_shape(), op == OpKind::qlinear_conv ? 1 : 4);
  if (d.bias != ConvBias::none) fits("bias", {d.out_channels}, 4);
  // Input coordinates (oh * stride - pad + kh * dilation) are int32 in the shader.
  const std::int64_t limit = std::int64_t{1} << 30;
  if (d.h + d.pad_top + d.pad_bottom > limit || d.w + d.pad_left + d.pad_right > limit)
    refuse("padded input " + std::to_string(d.h + d.pad_top + d.pad_bottom) + " x " +
           std::to_string(d.w + d.pad_left + d.pad_right) +
           "; the vulkan convolution takes padded extents up to 2^30");
  const std::uint64_t outputs = static_cast<std::uint64_t>(d.n * d.out_channels) *
                                static_cast<std::uint64_t>(d.out_h() * d.out_w());
  if ((outputs + 255) / 256 > max_linear_groups(caps))
    refuse(std::to_string(outputs) +
           " outputs exceed one dispatch of 256-invocation workgroups "
           "on device '" +
           caps.name + "'; split the batch");
  check_params_size(caps, d.w_params.count(), 8);
  if (op == OpKind::qlinear_conv && d.requant_mode == RequantMode::fixed_point &&
      d.out_channels > 0) {
    // The multipliers are monotonic in the scales: the largest must have a fixed-point form.
    const float sw = *std::max_element(d.w_params.scales().begin(), d.w_params.scales().end());
    reference::quantize_multiplier((d.x_params.scale() * sw) / d.y_params->scale());
  }
}

}  // namespace

std::vector<Kernel> gemm_kernels(const DeviceCaps& caps) {
  std::vector<Kernel> out;
  for (const GemmKernelInfo& g : gemm_kernel_table())
    if (g.coop_n != 0 && kernel_unavailable_reason(g.kernel, caps).empty()) out.push_back(g.kernel);
  // The packed dot product first where the hardware has it; elsewhere (lavapipe) it is emulated
  // and the plain kernel is the better guess.
  const bool dot = kernel_unavailable_reason(Kernel::gemm_dot, caps).empty();
  if (dot && caps.dot_4x8_packed_accelerated) out.push_back(Kernel::gemm_dot);
  out.push_back(Kernel::gemm_plain);
  if (dot && !caps.dot_4x8_packed_accelerated) out.push_back(Kernel::gemm_dot);
  return out;
}

namespace {

template <class F>
Support answer(OpKind op, F&& check) {
  const std::string prefix = "vulkan: " + std::string(to_string(op)) + ": ";
  try {
    std::vector<std::string> names;
    for (Kernel k : check()) names.emplace_back(kernel_name(k));
    return Support::yes(std::move(names));
  } catch (const Refusal& r) {
    return Support::no(prefix + r.why);
  } catch (const Error& e) {
    return Support::no(prefix + e.what());
  }
}

}  // namespace

Support check_support(OpKind op, const QuantizeDesc& d, const DeviceCaps& caps) {
  return answer(op, [&]() -> std::vector<Kernel> {
    if (op != OpKind::quantize && op != OpKind::dequantize) refuse("descriptor is a QuantizeDesc");
    reference::check_descriptor(op, d);  // what the reference rejects (sizes included), nobody runs
    check_quantize(d, caps);
    return {op == OpKind::quantize ? Kernel::quantize : Kernel::dequantize};
  });
}

Support check_support(OpKind op, const RequantizeDesc& d, const DeviceCaps& caps) {
  return answer(op, [&]() -> std::vector<Kernel> {
    if (op != OpKind::requantize) refuse("descriptor is a RequantizeDesc");
    reference::check_descriptor(op, d);
    check_requantize(d, caps);
    return {Kernel::requantize};
  });
}

Support check_support(OpKind op, const MatmulDesc& d, const DeviceCaps& caps) {
  return answer(op, [&]() -> std::vector<Kernel> {
    if (op == OpKind::matmul_weight_only) {
      reference::check_descriptor(op, d);  // a malformed descriptor is refused for what is wrong
      refuse("not implemented by the vulkan backend (float A with int4/int8 weights)");
    }
    if (op != OpKind::matmul_integer && op != OpKind::matmul_dequant &&
        op != OpKind::qlinear_matmul)
      refuse("descriptor is a MatmulDesc");
    reference::check_descriptor(op, d);
    check_matmul(d, op, caps);
    return gemm_kernels(caps);
  });
}

Support check_support(OpKind op, const ConvDesc& d, const DeviceCaps& caps) {
  return answer(op, [&]() -> std::vector<Kernel> {
    if (op != OpKind::conv_integer && op != OpKind::qlinear_conv && op != OpKind::conv_dequant)
      refuse("descriptor is a ConvDesc");
    reference::check_descriptor(op, d);  // what the reference rejects, nobody runs
    check_conv(d, op, caps);
    return {Kernel::conv_direct};
  });
}

Support check_support(const OpDesc& op, const DeviceCaps& caps) {
  if (const auto* d = std::get_if<QuantizeDesc>(&op.desc)) return check_support(op.op, *d, caps);
  if (const auto* d = std::get_if<RequantizeDesc>(&op.desc)) return check_support(op.op, *d, caps);
  if (const auto* d = std::get_if<MatmulDesc>(&op.desc)) return check_support(op.op, *d, caps);
  if (const auto* d = std::get_if<ConvDesc>(&op.desc)) return check_support(op.op, *d, caps);
  // A malformed descriptor is refused for what is wrong with it (an operand over the size limit
  // included), before "not implemented".
  return answer(op.op, [&]() -> std::vector<Kernel> {
    reference::check_descriptor(op);
    refuse(
        "not implemented by the vulkan backend (its float reductions and float GEMMs run on "
        "the CPU backends)");
  });
}

}  // namespace qforge::vulkan
