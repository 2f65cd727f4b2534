#include "support.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "kernel_names.h"
#include "kernels/conv.h"
#include "kernels/gemm_blockwise.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cuda {
namespace {

Refusal unsupported(std::string why) { return {false, std::move(why)}; }
Refusal invalid(std::string why) { return {true, std::move(why)}; }

// validate_for's message when the params do not fit the shape.
std::optional<Refusal> fits(const QuantizationParams& p, const Shape& shape, const char* what) {
  try {
    p.validate_for(shape);
  } catch (const Error& e) {
    return invalid(std::string(what) + ": " + e.what());
  }
  return std::nullopt;
}

bool elementwise_dtype(DType t) { return t != DType::binary; }

std::optional<Refusal> check_quantize(const QuantizeDesc& d) {
  const auto& p = d.params;
  if (p.scheme().mapping == Mapping::logarithmic)
    return unsupported(
        "the CUDA backend does not implement the logarithmic mapping; expected "
        "affine or symmetric params");
  if (!elementwise_dtype(p.dtype()))
    return unsupported(
        "the CUDA backend does not implement binary codes; expected int8, uint8, "
        "int16, uint16, int4 or uint4");
  return fits(p, d.shape, "params");
}

std::optional<Refusal> check_requantize(const RequantizeDesc& d) {
  if (d.out_dtype != DType::int8 && d.out_dtype != DType::uint8)
    return invalid("out_dtype = " + std::string(name(d.out_dtype)) + "; expected int8 or uint8");
  const auto& tr = traits(d.out_dtype);
  if (d.out_zero_point < tr.qmin || d.out_zero_point > tr.qmax)
    return invalid("out_zero_point = " + std::to_string(d.out_zero_point) +
                   "; expected a value in [" + std::to_string(tr.qmin) + ", " +
                   std::to_string(tr.qmax) + "]");
  if (d.multipliers.empty())
    return invalid("no multipliers; expected 1 (per tensor) or one per index along axis");
  for (std::size_t i = 0; i < d.multipliers.size(); ++i)
    if (!std::isfinite(d.multipliers[i]) || d.multipliers[i] < 0.0f)
      return invalid("multipliers[" + std::to_string(i) +
                     "] = " + std::to_string(d.multipliers[i]) + "; expected a finite value >= 0");
  if (d.multipliers.size() > 1) {
    const int rank = static_cast<int>(d.shape.size());
    const int axis = d.axis < 0 ? d.axis + rank : d.axis;
    if (axis < 0 || axis >= rank)
      return invalid("axis " + std::to_string(d.axis) + " for shape " + to_string(d.shape) +
                     "; expected an axis in [" + std::to_string(-rank) + ", " +
                     std::to_string(rank - 1) + "]");
    if (d.shape[static_cast<std::size_t>(axis)] != static_cast<std::int64_t>(d.multipliers.size()))
      return invalid(std::to_string(d.multipliers.size()) + " multipliers for shape " +
                     to_string(d.shape) + " along axis " + std::to_string(axis) +
                     "; expected 1 or " + std::to_string(d.shape[static_cast<std::size_t>(axis)]));
  }
  if (d.mode == RequantMode::fixed_point) {
    try {
      for (const float m : d.multipliers) reference::quantize_multiplier(m);
    } catch (const Error& e) {
      return invalid(e.what());
    }
  }
  return std::nullopt;
}

std::optional<Refusal> check_operand(const QuantizationParams& p, const Shape& shape,
                                     int channel_axis, const char* which) {
  const std::string who = std::string(which) + " (" + p.to_string() + ")";
  if (p.scheme().mapping == Mapping::logarithmic)
    return invalid(who + " uses the logarithmic mapping; expected affine or symmetric");
  if (p.dtype() != DType::int8 && p.dtype() != DType::uint8 && p.dtype() != DType::int4 &&
      p.dtype() != DType::uint4)
    return unsupported(who + ": the CUDA matmuls take int8, uint8, int4 or uint4 operands");
  if (p.scheme().granularity == Granularity::block) return std::nullopt;  // check_blockwise_b
  if (p.scheme().granularity == Granularity::per_channel) {
    int axis = 0;
    try {
      axis = p.channel_axis(shape.size());
    } catch (const Error& e) {
      return invalid(who + ": " + e.what());
    }
    if (axis != channel_axis)
      return invalid(who + " is per_channel along axis " + std::to_string(axis) +
                     "; expected axis " + std::to_string(channel_axis));
  }
  return fits(p, shape, which);
}

// The largest |q - z| a block-wise B can hold without reading its zero points: the fixed zero
// point of a symmetric mapping, any zero point in the dtype's range for affine (a conservative
// stand-in for reference::int32_safe_k, which scans all N * K / block of them on every call).
std::int64_t blockwise_b_magnitude(const QuantizationParams& b) {
  const auto& tr = traits(b.dtype());
  if (b.scheme().mapping == Mapping::symmetric) {
    const std::int64_t z = b.zero_point(0);
    return std::max<std::int64_t>(std::llabs(tr.qmin - z), std::llabs(tr.qmax - z));
  }
  return static_cast<std::int64_t>(tr.qmax) - tr.qmin;
}

// Block-wise B: nk, int4/uint4/int8/uint8 (checked before), blocks of 16 or a multiple of 32 up
// to blockwise_max_block; not for qlinear_matmul (the reference rejects it: per-block partial
// sums have no single output scale). matmul_integer keeps K within the int32-safe bound with
// B's magnitude bounded as above; matmul_dequant needs only each block's sum to fit int32,
// which every accepted block size guarantees.
std::optional<Refusal> check_blockwise_b(OpKind kind, const MatmulDesc& d) {
  const auto& b = d.b;
  const std::string who = "B (" + b.to_string() + ")";
  if (kind == OpKind::qlinear_matmul)
    return invalid(who +
                   " is block-wise; expected per_tensor or per_channel B (block-wise partial "
                   "sums cannot be requantized to one output scale)");
  if (d.b_layout != MatrixLayout::nk)
    return invalid(who +
                   " is block-wise with b_layout kn; expected b_layout nk (blocks run along "
                   "the last axis, which must be K)");
  if (auto r = fits(b, d.b_shape(), "B")) return r;
  const int bits = traits(b.dtype()).bits;
  const std::int64_t block = b.scheme().block_size;
  if (!blockwise_block_ok(block, bits))
    return unsupported(who + ": block_size " + std::to_string(block) +
                       " is not implemented; the CUDA block-wise GEMM takes blocks of 16 or a "
                       "multiple of 32 up to " +
                       std::to_string(blockwise_max_block(bits)) + " for " +
                       std::string(name(b.dtype())) +
                       " B (one or two blocks per 32-code tensor-core "
                       "step, per-block sums exact in float32)");
  if (kind == OpKind::matmul_integer) {
    std::int64_t a_mag = 1;
    const auto& ta = traits(d.a.dtype());
    for (const std::int32_t z : d.a.zero_points())
      a_mag = std::max<std::int64_t>({a_mag, std::llabs(static_cast<std::int64_t>(ta.qmin) - z),
                                      std::llabs(static_cast<std::int64_t>(ta.qmax) - z)});
    const std::int64_t safe =
        std::numeric_limits<std::int32_t>::max() / (a_mag * blockwise_b_magnitude(b));
    if (d.k > safe)
      return unsupported("k = " + std::to_string(d.k) + " exceeds " + std::to_string(safe) +
                         ", the largest depth whose int32 accumulation cannot overflow for these A "
                         "params and any B zero point of this dtype; the CUDA kernels accumulate "
                         "in int32");
  }
  return std::nullopt;
}

std::optional<Refusal> check_matmul(OpKind kind, const MatmulDesc& d) {
  if (d.m < 0 || d.n < 0 || d.k < 0)
    return invalid("m, n, k = " + std::to_string(d.m) + ", " + std::to_string(d.n) + ", " +
                   std::to_string(d.k) + "; expected sizes >= 0");
  if (d.a.scheme().granularity == Granularity::block)
    return invalid("A (" + d.a.to_string() +
                   ") is block-wise; expected per_tensor or per_channel(axis 0): "
                   "blocks are only defined for B");
  if (auto r = check_operand(d.a, d.a_shape(), 0, "A")) return r;
  if (auto r = check_operand(d.b, d.b_shape(), d.b_layout == MatrixLayout::kn ? 1 : 0, "B"))
    return r;
  if (d.b.scheme().granularity == Granularity::block) return check_blockwise_b(kind, d);
  if (kind == OpKind::qlinear_matmul) {
    if (!d.y)
      return invalid(
          "no output params (desc.y is empty); expected per-tensor int8 or uint8 params");
    const auto& y = *d.y;
    if (y.scheme().granularity != Granularity::per_tensor ||
        y.scheme().mapping == Mapping::logarithmic ||
        (y.dtype() != DType::int8 && y.dtype() != DType::uint8))
      return invalid("output params " + y.to_string() +
                     "; expected per-tensor affine or symmetric int8 or uint8");
    if (d.has_bias || d.activation != ConvActivation::none)
      return unsupported(
          "qlinear_matmul with an int32 bias or an output clamp is not implemented by the CUDA "
          "backend; cpu_x86 runs it");
  }
  const std::int64_t safe = reference::int32_safe_k(d);
  if (d.k > safe)
    return unsupported("k = " + std::to_string(d.k) + " exceeds " + std::to_string(safe) +
                       ", the largest depth whose int32 accumulation cannot overflow for these "
                       "operand types and zero points; the CUDA kernels accumulate in int32");
  return std::nullopt;
}

std::optional<Refusal> check_linear(const LinearDesc& d, bool forward) {
  if (d.m < 0 || d.n < 0 || d.k < 0)
    return invalid("m, n, k = " + std::to_string(d.m) + ", " + std::to_string(d.n) + ", " +
                   std::to_string(d.k) + "; expected sizes >= 0");
  const auto& w = d.w;
  const bool per_row = w.scheme().granularity == Granularity::per_channel && w.channel_axis(2) == 0;
  if (w.dtype() != DType::int8 || w.scheme().mapping != Mapping::symmetric ||
      !(w.scheme().granularity == Granularity::per_tensor || per_row))
    return invalid("weight params " + w.to_string() +
                   "; expected int8 symmetric, per_tensor or per_channel(axis 0) of [N, K]");
  if (auto r = fits(w, {d.n, d.k}, "weight params")) return r;
  if (forward) {
    const MatmulDesc md{d.m,
                        d.n,
                        d.k,
                        QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                        QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                        MatrixLayout::nk,
                        false,
                        FloatType::f32,
                        std::nullopt,
                        RequantMode::float_multiplier};
    const std::int64_t safe = reference::int32_safe_k(md);
    if (d.k > safe)
      return unsupported("k = " + std::to_string(d.k) + " exceeds " + std::to_string(safe) +
                         ", the int32-safe depth of an int8 x int8 product");
  }
  return std::nullopt;
}

// The convolution kernels' own limits beyond the reference's check: int32 sums (the reduction
// within reference::int32_safe_reduction, as cpu_x86 claims), and grids that hold the shape.
std::optional<Refusal> check_conv(const ConvDesc& d) {
  const std::int64_t safe = reference::int32_safe_reduction(d);
  if (d.reduction() > safe)
    return unsupported("reduction C / groups * KH * KW = " + std::to_string(d.reduction()) +
                       " exceeds the int32-safe length " + std::to_string(safe) +
                       " for these dtypes and zero points (reference::int32_safe_reduction); the "
                       "CUDA convolution kernels accumulate in int32");
  if (d.layout == ConvLayout::nchw && d.c > 65535 * 32)
    return unsupported("C = " + std::to_string(d.c) +
                       " with nchw activations; the CUDA NCHW-to-NHWC pass takes C up to " +
                       std::to_string(65535 * 32) + " (use nhwc)");
  if (conv_candidates(d, 1).empty())
    return unsupported("groups = " + std::to_string(d.groups) +
                       " with O / groups = " + std::to_string(d.out_channels / d.groups) +
                       " needs more than 65535 CTA rows of the implicit GEMM (groups times "
                       "ceil(O / groups / 64)); only depthwise (groups == C) takes more");
  return std::nullopt;
}

// QFORGE_CUDA_KERNELS: a comma-separated list of the GEMM kernels that may run (all when unset),
// so that every path can be forced or excluded without rebuilding (ruy's RUY_PATHS).
bool allowed_by_environment(GemmKernel k) {
  static const std::vector<std::string> allowed = [] {
    std::vector<std::string> v;
    const char* env = std::getenv("QFORGE_CUDA_KERNELS");
    if (env == nullptr || *env == '\0') return v;
    std::string text(env);
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = std::min(text.find(',', start), text.size());
      if (end > start) v.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return v;
  }();
  return allowed.empty() ||
         std::find(allowed.begin(), allowed.end(), gemm_kernel_name(k)) != allowed.end();
}

std::vector<std::string> names(const std::vector<GemmKernel>& ks) {
  std::vector<std::string> out;
  for (const auto k : ks) out.emplace_back(gemm_kernel_name(k));
  return out;
}

}  // namespace

std::optional<Refusal> refusal_for(const OpDesc& op) {
  try {
    reference::check_descriptor(op);  // what the reference rejects (sizes included), nobody runs
    switch (op.op) {
      case OpKind::quantize:
      case OpKind::dequantize: return check_quantize(std::get<QuantizeDesc>(op.desc));
      case OpKind::requantize: return check_requantize(std::get<RequantizeDesc>(op.desc));
      case OpKind::matmul_integer:
      case OpKind::matmul_dequant:
      case OpKind::qlinear_matmul: return check_matmul(op.op, std::get<MatmulDesc>(op.desc));
      case OpKind::dynamic_quantize_linear: return std::nullopt;
      case OpKind::linear_forward: return check_linear(std::get<LinearDesc>(op.desc), true);
      case OpKind::linear_backward: return check_linear(std::get<LinearDesc>(op.desc), false);
      case OpKind::conv_integer:
      case OpKind::qlinear_conv:
      case OpKind::conv_dequant: return check_conv(std::get<ConvDesc>(op.desc));
      case OpKind::matmul_weight_only:
        return unsupported(
            "not implemented by the cuda backend yet; expected cpu_scalar to run it");
    }
  } catch (const std::bad_variant_access&) {
    return invalid("descriptor type does not match op " + std::string(to_string(op.op)));
  } catch (const Error& e) {
    return invalid(e.what());
  }
  return invalid("unknown op");
}

std::optional<Refusal> refusal_for_quantize(const QuantizeDesc& desc) {
  try {
    reference::check_descriptor(OpKind::quantize, desc);
    return check_quantize(desc);
  } catch (const Error& e) {
    return invalid(e.what());
  }
}

std::optional<Refusal> refusal_for_matmul(OpKind kind, const MatmulDesc& desc) {
  try {
    reference::check_descriptor(kind, desc);
    return check_matmul(kind, desc);
  } catch (const Error& e) {
    return invalid(e.what());
  }
}

bool blockwise_gemv_takes(OpKind kind, const MatmulDesc& d) {
  return d.b.scheme().granularity == Granularity::block &&
         blockwise_gemv_ok(kind == OpKind::matmul_dequant, d.m, traits(d.b.dtype()).bits,
                           d.b.scheme().block_size);
}

std::vector<GemmKernel> gemm_candidates(std::int64_t m, std::int64_t n, std::int64_t k,
                                        const DeviceFacts& device, bool blockwise, bool gemv) {
  std::vector<GemmKernel> out;
  if (device.cc < 80) return out;
  if (blockwise) {
    // The CUDA-core GEMV where it applies (M <= 4, 4-bit B, float out); then the 16-row tile
    // for GEMV-like M <= 8 (weight streaming: 1x8192x8192 took 0.053 ms against 0.087 ms with
    // the 128x128 tile on an H200), the 128x128 tile from M = 9 on (16x4096x4096: 0.042 ms
    // against 0.074 ms); docs/CUDA.md, "Block-wise B".
    if (m <= 8) out = {GemmKernel::qbw_16x128, GemmKernel::qbw_128x128};
    else out = {GemmKernel::qbw_128x128, GemmKernel::qbw_16x128};
    if (gemv) out.insert(out.begin(), GemmKernel::qbw_gemv);
    std::erase_if(out, [](GemmKernel kk) { return !allowed_by_environment(kk); });
    return out;
  }
  // On Hopper the wgmma kernel leads, splitting K when there are fewer tiles than SMs, except
  // for M <= 32: there the skinny kernel, which streams B straight into mma fragments, leads,
  // then the 32-row split-K mma.sync tile, which wastes less of each tensor-core tile than
  // wgmma (measured on an H200, docs/PERFORMANCE.md). The skinny kernel handles any M (in
  // slices of 32 rows), so it is listed for every shape and can be forced.
  const bool wgmma = device.wgmma && k > 0;
  if (m <= 32) out.push_back(GemmKernel::mma_skinny);
  if (wgmma && m > 32) out.push_back(GemmKernel::wgmma_128x256);
  if (m <= 64) {
    out.insert(out.end(),
               {GemmKernel::mma_32x128, GemmKernel::mma_128x128, GemmKernel::mma_128x256});
    if (wgmma && m <= 32) out.push_back(GemmKernel::wgmma_128x256);
  } else {
    // The large tile only when it still gives every SM a CTA.
    const std::int64_t big_tiles = ((m + 127) / 128) * ((n + 255) / 256);
    if (big_tiles >= device.multiprocessors)
      out.insert(out.end(), {GemmKernel::mma_128x256, GemmKernel::mma_128x128});
    else out.insert(out.end(), {GemmKernel::mma_128x128, GemmKernel::mma_128x256});
    out.push_back(GemmKernel::mma_32x128);
  }
  // grid.z walks M in slices of 32 rows: at most 65535 of them.
  if (m > 32 && (m + 31) / 32 <= 65535) out.push_back(GemmKernel::mma_skinny);
  out.push_back(GemmKernel::dp4a_128x128);
  std::erase_if(out, [](GemmKernel k) { return !allowed_by_environment(k); });
  return out;
}

ConvGeometry conv_geometry(const ConvDesc& d) {
  ConvGeometry g;
  g.n = d.n, g.h = d.h, g.w = d.w, g.c = d.c;
  g.oh = d.out_h(), g.ow = d.out_w(), g.o = d.out_channels;
  g.kh = d.kernel_h, g.kw = d.kernel_w;
  g.stride_h = d.stride_h, g.stride_w = d.stride_w;
  g.dilation_h = d.dilation_h, g.dilation_w = d.dilation_w;
  g.pad_top = d.pad_top, g.pad_left = d.pad_left;
  g.groups = d.groups, g.cg = d.c / d.groups, g.og = d.out_channels / d.groups;
  g.k = d.reduction();
  g.kp = std::max<std::int64_t>(64, (g.k + 63) / 64 * 64);
  g.x_unsigned = d.x_params.dtype() == DType::uint8;
  return g;
}

bool conv_is_depthwise(const ConvDesc& d) { return d.c > 0 && d.groups == d.c; }

std::vector<std::string> conv_candidates(const ConvDesc& d, int multiprocessors) {
  std::vector<std::string> out;
  const ConvGeometry g = conv_geometry(d);
  if (conv_is_depthwise(d)) {
    if (!conv_depthwise_tiled_refusal(g)) out.emplace_back(kConvDepthwiseTiledKernel);
    out.emplace_back(kConvDepthwiseKernel);
  }
  // The pipelined kernel where it takes the shape (conv_pipelined_refusal says why not), then
  // the register-gather kernel, which takes every shape its grid holds.
  if (!conv_pipelined_refusal(g))
    for (const ConvTileKind t : conv_tile_order(g, multiprocessors))
      out.emplace_back(kConvPipelinedKernels[static_cast<int>(t)]);
  if (conv_implicit_gemm_fits(g)) out.emplace_back(kConvImplicitGemmKernel);
  return out;
}

std::optional<ConvTileKind> conv_pipelined_tile(std::string_view kernel) {
  for (int i = 0; i < 4; ++i)
    if (kernel == kConvPipelinedKernels[i]) return static_cast<ConvTileKind>(i);
  return std::nullopt;
}

Support support_for(const OpDesc& op, const DeviceFacts& device) {
  if (auto r = refusal_for(op)) return Support::no(r->reason);
  switch (op.op) {
    case OpKind::quantize: return Support::yes({kQuantizeKernel});
    case OpKind::dequantize: return Support::yes({kDequantizeKernel});
    case OpKind::requantize: return Support::yes({kRequantizeKernel});
    case OpKind::dynamic_quantize_linear: return Support::yes({kDynamicQuantizeKernel});
    case OpKind::linear_backward: return Support::yes({kLinearBackwardKernel});
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      return Support::yes(names(gemm_candidates(d.m, d.n, d.k, device,
                                                d.b.scheme().granularity == Granularity::block,
                                                blockwise_gemv_takes(op.op, d))));
    }
    case OpKind::linear_forward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      return Support::yes(names(gemm_candidates(d.m, d.n, d.k, device)));
    }
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant:
      return Support::yes(conv_candidates(std::get<ConvDesc>(op.desc), device.multiprocessors));
    case OpKind::matmul_weight_only: break;  // refused by refusal_for()
  }
  return Support::no("unknown op");
}

}  // namespace qforge::cuda
