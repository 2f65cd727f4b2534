#include "support_rules.h"

#include <algorithm>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <variant>

#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::onednn {
namespace {

// Thrown by the checks below and turned into Support::no by check_support().
struct Refusal {
  std::string why;
};
[[noreturn]] void refuse(std::string why) { throw Refusal{std::move(why)}; }

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "isa " + std::to_string(static_cast<int>(isa));
  }
}

// One zero point throughout (the params keep their range: no scan per call).
bool uniform_zero_points(const QuantizationParams& p) {
  return p.min_zero_point() == p.max_zero_point();
}
bool uniform(std::span<const float> v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end();
}

bool widenable_to_8bit(DType t) {
  return t == DType::int8 || t == DType::uint8 || t == DType::int4 || t == DType::uint4 ||
         t == DType::binary;
}

// What oneDNN's matmul takes of an operand the reference accepts.
void check_operand(const char* which, const QuantizationParams& p) {
  const std::string who = std::string(which) + " (" + p.to_string() + ")";
  if (!widenable_to_8bit(p.dtype()))
    refuse(who + " is " + std::string(name(p.dtype())) +
           "; expected int8, uint8, int4, uint4 or binary (oneDNN 2.6 has no 16-bit integer "
           "matmul; cpu_scalar runs it)");
  if (p.scheme().granularity == Granularity::block)
    refuse(who +
           " is block-wise; expected per_tensor or per_channel (block-wise partial sums "
           "are not claimed by onednn; cpu_scalar and cpu_x86 run them)");
}

void check_matmul(const MatmulDesc& d, const Facts& facts) {
  check_operand("A", d.a);
  check_operand("B", d.b);
  if (!facts.int8_exact) refuse(facts.int8_refusal);
  const std::int64_t safe = reference::int32_safe_k(d);
  if (d.k > safe)
    refuse("k = " + std::to_string(d.k) + " exceeds " + std::to_string(safe) +
           ", the largest K whose int32 accumulation cannot overflow for these dtypes and zero "
           "points (reference::int32_safe_k); oneDNN accumulates in int32");
}

std::string matmul_s32_kernel(const MatmulDesc& d) {
  return a_is_unsigned(d.a.dtype()) ? kernel::matmul_u8s8_s32 : kernel::matmul_s8s8_s32;
}
std::string matmul_f32_kernel(const MatmulDesc& d) {
  return a_is_unsigned(d.a.dtype()) ? kernel::matmul_u8s8_f32 : kernel::matmul_s8s8_f32;
}

// The kernels for a descriptor the reference accepts (check_support asked it first), or a
// refusal naming the limit of oneDNN or of this plugin.
struct Check {
  OpKind op;
  const Facts& facts;

  std::vector<std::string> operator()(const QuantizeDesc& d) const {
    if (op == OpKind::quantize) return {kernel::loop_quantize};
    // Both are bit-exact; the loop measured faster on both machines (docs/ONEDNN.md), so it
    // comes first and the reorder stays selectable.
    if (reorder_can_dequantize(d)) return {kernel::loop_dequantize, kernel::reorder_dequantize};
    return {kernel::loop_dequantize};
  }
  std::vector<std::string> operator()(const RequantizeDesc& d) const {
    (void)d;
    return {kernel::loop_requantize};
  }
  std::vector<std::string> operator()(const MatmulDesc& d) const {
    if (op == OpKind::matmul_weight_only)
      refuse("not implemented by onednn (float A with int4/int8 weights); cpu_x86 runs it");
    check_matmul(d, facts);
    if (op == OpKind::qlinear_matmul && (d.has_bias || d.activation != ConvActivation::none))
      refuse(
          "qlinear_matmul with an int32 bias or an output clamp is not implemented by onednn; "
          "cpu_x86 runs it");
    // The fused kernel first: oneDNN's post-ops save the int32 round trip through memory and
    // measured as fast or faster on every benchmark shape (docs/ONEDNN.md).
    if (op == OpKind::matmul_dequant && fused_dequant_possible(d))
      return {matmul_f32_kernel(d), matmul_s32_kernel(d)};
    return {matmul_s32_kernel(d)};
  }
  std::vector<std::string> operator()(const DynamicQuantizeDesc& d) const {
    (void)d;
    return {kernel::loop_dynamic_quantize};
  }
  std::vector<std::string> operator()(const LinearDesc& d) const {
    if (op == OpKind::linear_backward) return {kernel::matmul_f32};
    if (!facts.int8_exact) refuse(facts.int8_refusal);
    // Xq (narrow int8) times W (raw int8 codes): the matmul bound of those operands.
    MatmulDesc md{.m = d.m,
                  .n = d.n,
                  .k = d.k,
                  .a = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                  .b = d.w,
                  .b_layout = MatrixLayout::nk,
                  .has_bias = false,
                  .out_type = FloatType::f32,
                  .y = std::nullopt};
    const std::int64_t safe = reference::int32_safe_k(md);
    if (d.k > safe)
      refuse("k = " + std::to_string(d.k) + " exceeds " + std::to_string(safe) +
             ", the largest K whose int32 accumulation of int8 x int8 cannot overflow");
    return {kernel::matmul_s8s8_f32, kernel::matmul_s8s8_s32};
  }
  std::vector<std::string> operator()(const ConvDesc& d) const {
    if (!facts.int8_exact) refuse(facts.conv_refusal);
    // Grouped convolutions other than depthwise with one output per channel go to oneDNN 2.6's
    // gemm-based int8 implementation, which gave wrong sums on random grouped geometries on
    // AVX-512 VNNI/AMX (tests/onednn/conv_test.cpp, seeds in docs/ONEDNN.md).
    if (d.groups > 1 && !(d.c == d.groups && d.out_channels == d.groups))
      refuse("groups = " + std::to_string(d.groups) + " with C = " + std::to_string(d.c) +
             " and O = " + std::to_string(d.out_channels) +
             ": oneDNN 2.6 runs grouped int8 convolution through its gemm-based implementation, "
             "which is not exact here; expected groups = 1, or depthwise with C = O = groups");
    const std::int64_t safe = reference::int32_safe_reduction(d);
    if (d.reduction() > safe)
      refuse("reduction C / groups * KH * KW = " + std::to_string(d.reduction()) + " exceeds " +
             std::to_string(safe) +
             ", the longest whose int32 accumulation cannot overflow for these dtypes and zero "
             "points (reference::int32_safe_reduction); oneDNN accumulates in int32");
    // The plugin splits the reduction into slices of input channels whose sums stay within
    // 2^24 (conv_weights.h); one channel's slice is the smallest there is.
    const std::int64_t taps = d.kernel_h * d.kernel_w;
    if (taps * 128 * conv_x_magnitude(d) > kConvExactBound)
      refuse("a kernel of " + std::to_string(d.kernel_h) + "x" + std::to_string(d.kernel_w) +
             " taps can sum one input channel to more than 2^24 (|x - zx| up to " +
             std::to_string(conv_x_magnitude(d)) +
             ", |w| up to 128), and oneDNN 2.6 converts each int32 convolution sum to float32 "
             "before storing it; expected KH * KW * 128 * max|x - zx| <= 2^24");
    return {d.x_params.dtype() == DType::uint8 ? kernel::conv_u8s8_s32 : kernel::conv_s8s8_s32};
  }
};

}  // namespace

const std::vector<std::string>& all_kernels() {
  static const std::vector<std::string> names = {
      kernel::loop_quantize,      kernel::loop_dequantize,
      kernel::loop_requantize,    kernel::loop_dynamic_quantize,
      kernel::reorder_dequantize, kernel::matmul_u8s8_s32,
      kernel::matmul_s8s8_s32,    kernel::matmul_u8s8_f32,
      kernel::matmul_s8s8_f32,    kernel::matmul_f32,
      kernel::conv_u8s8_s32,      kernel::conv_s8s8_s32};
  return names;
}

Facts detect_facts() {
  Facts f;
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  f.int8_exact = isa == dnnl::cpu_isa::avx512_core_vnni || isa == dnnl::cpu_isa::avx512_core_bf16 ||
                 isa == dnnl::cpu_isa::avx512_core_amx || isa == dnnl::cpu_isa::avx2_vnni;
  if (!f.int8_exact)
    f.int8_refusal =
        "oneDNN's effective ISA here is " + isa_name(isa) +
        ", on which oneDNN 2.6 computes int8 matmul with vpmaddubsw, whose int16 pair sums "
        "saturate (measured: wrong results on random u8 x s8 data); exact int8 matmul needs "
        "AVX-512 VNNI, AVX-VNNI or AMX (check DNNL_MAX_CPU_ISA); cpu_x86 or cpu_scalar run it";
  if (!f.int8_exact)
    f.conv_refusal =
        "oneDNN's effective ISA here is " + isa_name(isa) +
        ", on which oneDNN 2.6 computes int8 convolution with vpmaddubsw, whose int16 pair sums "
        "saturate (as its int8 matmul, measured); exact int8 convolution needs AVX-512 VNNI, "
        "AVX-VNNI or AMX (check DNNL_MAX_CPU_ISA); cpu_x86 or cpu_scalar run it";
  return f;
}

std::string effective_isa_name() { return isa_name(dnnl::get_effective_cpu_isa()); }

std::int64_t conv_x_magnitude(const ConvDesc& d) {
  const std::int64_t zx = d.x_params.zero_point();
  const auto& t = traits(d.x_params.dtype());
  return std::max<std::int64_t>(zx - t.qmin, t.qmax - zx);
}

bool a_is_unsigned(DType a) { return a == DType::uint8 || a == DType::uint4; }

bool reorder_can_dequantize(const QuantizeDesc& d) {
  const QuantizationParams& p = d.params;
  if (p.dtype() != DType::int8 && p.dtype() != DType::uint8) return false;
  if (p.scheme().mapping == Mapping::logarithmic) return false;
  if (d.shape.empty() || element_count(d.shape) == 0) return false;
  // oneDNN 2.6's reorder creates a primitive for per-channel source zero points but fails to
  // execute it ("could not execute a primitive", measured): zero points go as one value.
  if (!uniform_zero_points(p)) return false;
  if (p.scheme().granularity == Granularity::block)
    return d.shape.back() % p.scheme().block_size == 0;  // whole blocks: a [rows, nb, B] view
  return true;
}

bool fused_dequant_possible(const MatmulDesc& d) {
  return d.out_type == FloatType::f32 && uniform(d.a.scales()) && uniform_zero_points(d.a) &&
         uniform_zero_points(d.b);
}

template <class Desc>
Support check_support(OpKind op, const Desc& desc, const Facts& facts) {
  try {
    reference::check_descriptor(op, desc);  // what the reference rejects, nobody runs
  } catch (const Error& e) {
    return Support::no("onednn: " + std::string(e.what()));
  }
  try {
    return Support::yes(Check{op, facts}(desc));
  } catch (const Refusal& r) {
    return Support::no("onednn: " + std::string(to_string(op)) + ": " + r.why);
  } catch (const Error& e) {
    return Support::no("onednn: " + std::string(to_string(op)) + ": " + e.what());
  }
}
template Support check_support(OpKind, const QuantizeDesc&, const Facts&);
template Support check_support(OpKind, const RequantizeDesc&, const Facts&);
template Support check_support(OpKind, const MatmulDesc&, const Facts&);
template Support check_support(OpKind, const DynamicQuantizeDesc&, const Facts&);
template Support check_support(OpKind, const LinearDesc&, const Facts&);
template Support check_support(OpKind, const ConvDesc&, const Facts&);

Support check_support(const OpDesc& op, const Facts& facts) {
  return std::visit([&](const auto& d) { return check_support(op.op, d, facts); }, op.desc);
}

}  // namespace qforge::onednn
