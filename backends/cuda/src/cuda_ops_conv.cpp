// conv_integer, qlinear_conv and conv_dequant: kernel choice, operand preparation (NHWC X,
// packed weights and their sums), the epilogue's parameters, and the int32-bias overflow check
// (kernels/conv.h explains the kernels).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "check.h"
#include "cuda_ops.h"
#include "kernel_names.h"
#include "kernels/conv.h"
#include "kernels/gemm_prep.h"
#include "qforge/conv_bound.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cuda {
namespace {

std::int64_t count(const Shape& s) {
  std::int64_t n = 1;
  for (const auto e : s) n *= e;  // bounded by the descriptor check
  return n;
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

template <class T>
std::vector<T> to_host(const void* device, std::int64_t n, cudaStream_t s) {
  std::vector<T> v(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
  if (n > 0)
    check(cudaMemcpyAsync(v.data(), device, static_cast<std::size_t>(n) * sizeof(T),
                          cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync(convolution operands to host)");
  return v;
}

// qlinear_conv's per-channel multipliers (sx * sw[o]) / sy in float32, in this order (the
// reference's), and their fixed-point forms when the descriptor asks for them.
struct ConvMultipliers {
  std::vector<float> multiplier;
  std::vector<std::int32_t> fixed_multiplier, fixed_shift;
};

ConvMultipliers conv_multipliers(const ConvDesc& desc) {
  const QuantizationParams& wp = desc.w_params;
  const bool per_tensor = wp.scheme().granularity == Granularity::per_tensor;
  const float sx = desc.x_params.scale(), sy = desc.y_params->scale();
  ConvMultipliers m;
  m.multiplier.resize(static_cast<std::size_t>(desc.out_channels));
  for (std::size_t o = 0; o < m.multiplier.size(); ++o)
    m.multiplier[o] = (sx * wp.scale(per_tensor ? 0 : o)) / sy;
  if (desc.requant_mode != RequantMode::fixed_point) return m;
  m.fixed_multiplier.resize(m.multiplier.size());
  m.fixed_shift.resize(m.multiplier.size());
  for (std::size_t o = 0; o < m.multiplier.size(); ++o) {
    const auto q = reference::quantize_multiplier(static_cast<double>(m.multiplier[o]));
    m.fixed_multiplier[o] = q.multiplier;
    m.fixed_shift[o] = q.shift;
  }
  return m;
}

}  // namespace

std::string CudaOps::conv_kernel(OpKind op, const ConvDesc& desc) const {
  const auto candidates = conv_candidates(desc, props().multiprocessors);
  if (forced_kernel_.empty()) return candidates.front();
  if (std::find(candidates.begin(), candidates.end(), forced_kernel_) == candidates.end()) {
    std::string list;
    for (const auto& c : candidates) list += (list.empty() ? "" : ", ") + c;
    std::string why;
    if (conv_pipelined_tile(forced_kernel_))
      if (auto r = conv_pipelined_refusal(conv_geometry(desc))) why = " (" + *r + ")";
    if (forced_kernel_ == kConvDepthwiseTiledKernel)
      if (auto r = conv_depthwise_tiled_refusal(conv_geometry(desc))) why = " (" + *r + ")";
    throw Error(ErrorCode::unsupported,
                "cuda: " + std::string(to_string(op)) + ": the forced kernel '" + forced_kernel_ +
                    "' cannot run " + describe(OpDesc{op, desc}) + why + "; expected " + list);
  }
  return forced_kernel_;
}

void CudaOps::pack_conv_weights(const ConvDesc& desc, const void* w, std::int8_t* packed,
                                std::int32_t* sums, cudaStream_t s) {
  const ConvGeometry g = conv_geometry(desc);
  launch_pack_conv_weights(static_cast<const std::uint8_t*>(w),
                           desc.w_params.dtype() == DType::uint8, g, packed, s);
  if (sums) launch_row_sums(packed, g.o, g.kp, sums, s);
  conv_weight_packs.fetch_add(1, std::memory_order_relaxed);
}

CudaOps::ConvConstants CudaOps::conv_constants(OpKind op, const ConvDesc& desc,
                                               const void* device_w, const void* host_w,
                                               const void* host_bias) {
  ConvConstants c;
  c.kernel = conv_kernel(op, desc);
  auto device_array = [&](const void* host, std::size_t bytes) {
    c.buffers.push_back(std::make_unique<DeviceBuffer>(bytes, device_));
    if (bytes > 0) copy_to_device(*c.buffers.back(), 0, host, bytes);
    return c.buffers.back()->data();
  };
  if (op == OpKind::qlinear_conv && desc.out_channels > 0) {
    const ConvMultipliers m = conv_multipliers(desc);
    if (desc.requant_mode == RequantMode::fixed_point) {
      c.fixed_multiplier = static_cast<const std::int32_t*>(
          device_array(m.fixed_multiplier.data(), m.fixed_multiplier.size() * 4));
      c.fixed_shift = static_cast<const std::int32_t*>(
          device_array(m.fixed_shift.data(), m.fixed_shift.size() * 4));
    } else {
      c.multiplier =
          static_cast<const float*>(device_array(m.multiplier.data(), m.multiplier.size() * 4));
    }
  }
  // The bound needs W and the bias on the host: a bias given on each run, or weights that are
  // not fixed, keep the per-run check.
  if (desc.bias == ConvBias::int32 && host_w && host_bias)
    c.bias_cannot_overflow = reference::conv_int32_cannot_overflow(
        op, desc, host_w, static_cast<const std::int32_t*>(host_bias));

  // Fixed weights in the implicit-GEMM kernel's form, with their row sums when X has a zero
  // point. The depthwise kernels read W as given, so they keep the plan's uploaded copy.
  if (!device_w || c.kernel == kConvDepthwiseKernel || c.kernel == kConvDepthwiseTiledKernel)
    return c;
  const ConvGeometry g = conv_geometry(desc);
  if (g.o * g.kp == 0) return c;  // nothing to pack; the per-run path handles empty shapes
  c.buffers.push_back(
      std::make_unique<DeviceBuffer>(static_cast<std::size_t>(g.o * g.kp), device_));
  auto* packed = static_cast<std::int8_t*>(c.buffers.back()->data());
  std::int32_t* sums = nullptr;
  if (desc.x_params.zero_point() != 0) {
    c.buffers.push_back(std::make_unique<DeviceBuffer>(
        static_cast<std::size_t>(g.o) * sizeof(std::int32_t), device_));
    sums = static_cast<std::int32_t*>(c.buffers.back()->data());
  }
  cudaStream_t s = stream();
  pack_conv_weights(desc, device_w, packed, sums, s);
  // A packing error surfaces here, when the plan is made, not in a later run.
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  c.packed = packed;
  c.sums = sums;
  return c;
}

void CudaOps::conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
                   void* y) {
  run_conv(op, desc, x, w, bias, y, nullptr);
}

void CudaOps::run_conv(OpKind op, const ConvDesc& desc, const void* x, const void* w,
                       const void* bias, void* y, const ConvConstants* fixed) {
  // A plan's descriptor was checked and its kernel chosen when it was made.
  if (!planned_) begin(OpDesc{op, desc});
  const std::string name(to_string(op));
  const std::string kernel = fixed ? fixed->kernel : conv_kernel(op, desc);
  const ConvGeometry g = conv_geometry(desc);
  const std::int64_t xs = count(desc.x_shape()), ws = count(desc.w_shape()),
                     ys = count(desc.y_shape());
  auto require = [&](const char* what, const void* p, std::int64_t n) {
    if (n > 0 && !p)
      throw Error(ErrorCode::invalid_argument,
                  "cuda: " + name + ": " + what + " is null; expected a device pointer");
  };
  require("x", x, xs);
  require("w", w, ws);
  require("y", y, ys);
  if (desc.bias != ConvBias::none) require("bias (desc.bias is set)", bias, g.o);
  if (ys == 0) return;
  cudaStream_t s = stream();

  ConvEpilogue e;
  e.nchw = desc.layout == ConvLayout::nchw;
  e.y = y;
  e.zx = desc.x_params.zero_point();
  e.k = static_cast<std::int32_t>(g.k);
  if (desc.bias == ConvBias::int32) e.bias_i32 = static_cast<const std::int32_t*>(bias);
  // A plan that proved acc + bias stays inside int32 for every X (conv_constants) leaves the
  // flag null: its kernels then never write it.
  if (desc.bias == ConvBias::int32 && !(fixed && fixed->bias_cannot_overflow)) {
    e.overflow = static_cast<int*>(workspace_.get(Slot::conv_overflow, sizeof(int), device_, s));
    check(cudaMemsetAsync(e.overflow, 0, sizeof(int), s), "cudaMemsetAsync(overflow flag)");
    conv_overflow_checks.fetch_add(1, std::memory_order_relaxed);
  }
  if (desc.bias == ConvBias::f32) e.bias_f32 = static_cast<const float*>(bias);
  const QuantizationParams& wp = desc.w_params;
  if (op == OpKind::conv_integer) {
    e.kind = ConvOut::int32;
  } else if (op == OpKind::conv_dequant) {
    e.kind = ConvOut::dequantize;
    e.sx = desc.x_params.scale();
    e.sw = float_vec(wp);
    e.lo = -std::numeric_limits<float>::infinity();
    e.hi = std::numeric_limits<float>::infinity();
    if (desc.activation == ConvActivation::relu) e.lo = 0.0f;
    if (desc.activation == ConvActivation::relu6) e.lo = 0.0f, e.hi = 6.0f;
    if (desc.activation == ConvActivation::clamp) e.lo = desc.clamp_min, e.hi = desc.clamp_max;
  } else {
    e.kind = ConvOut::requantize;
    const QuantizationParams& yp = *desc.y_params;
    const float sy = yp.scale();
    e.zy = yp.zero_point();
    e.qmin = yp.qmin();
    e.qmax = yp.qmax();
    // The activation's bounds in output codes, as the reference's conv_output_clamp.
    auto q = [&](float v) { return reference::quantize_value(v, sy, e.zy, e.qmin, e.qmax); };
    e.qlo = e.qmin, e.qhi = e.qmax;
    if (desc.activation == ConvActivation::relu) e.qlo = q(0.0f);
    if (desc.activation == ConvActivation::relu6) e.qlo = q(0.0f), e.qhi = q(6.0f);
    if (desc.activation == ConvActivation::clamp)
      e.qlo = q(desc.clamp_min), e.qhi = q(desc.clamp_max);
    if (fixed && (fixed->multiplier || fixed->fixed_multiplier)) {
      e.multiplier = fixed->multiplier;
      e.fixed_multiplier = fixed->fixed_multiplier;
      e.fixed_shift = fixed->fixed_shift;
    } else {
      const ConvMultipliers m = conv_multipliers(desc);
      if (desc.requant_mode == RequantMode::fixed_point) {
        e.fixed_multiplier = upload(std::span<const std::int32_t>(m.fixed_multiplier));
        e.fixed_shift = upload(std::span<const std::int32_t>(m.fixed_shift));
      } else {
        e.multiplier = upload(std::span<const float>(m.multiplier));
      }
    }
  }

  // X as NHWC codes.
  const auto* xh = static_cast<const std::uint8_t*>(x);
  if (e.nchw && g.c > 1 && g.h * g.w > 1) {
    auto* t =
        workspace_.get<std::uint8_t>(Slot::conv_input, static_cast<std::size_t>(xs), device_, s);
    launch_nchw_to_nhwc(xh, g.n, g.c, g.h * g.w, t, s);
    xh = t;
  }

  const bool w_unsigned = wp.dtype() == DType::uint8;
  if (kernel == kConvDepthwiseKernel || kernel == kConvDepthwiseTiledKernel) {
    // The zero points as stored (int_vec's cache holds them shifted for the packed weights).
    const auto zps = wp.zero_points();
    const IntVec zw =
        zps.size() == 1 ? IntVec{nullptr, zps[0], 1} : IntVec{device_zero_points(wp), 0, 1};
    if (kernel == kConvDepthwiseTiledKernel)
      launch_conv_depthwise_tiled(xh, static_cast<const std::uint8_t*>(w), w_unsigned, zw, g, e, s);
    else launch_conv_depthwise(xh, static_cast<const std::uint8_t*>(w), w_unsigned, zw, g, e, s);
  } else {
    if (!aligned16(xh)) {  // the vector gather reads 16-byte words
      auto* t =
          workspace_.get<std::uint8_t>(Slot::conv_input, static_cast<std::size_t>(xs), device_, s);
      check(cudaMemcpyAsync(t, xh, static_cast<std::size_t>(xs), cudaMemcpyDeviceToDevice, s),
            "cudaMemcpyAsync(aligned X)");
      xh = t;
    }
    const std::int8_t* packed = nullptr;
    if (fixed && fixed->packed) {
      packed = fixed->packed;
      e.wsum = fixed->sums;  // packed with sums whenever X has a zero point
    } else {
      auto* p = workspace_.get<std::int8_t>(Slot::conv_weights,
                                            static_cast<std::size_t>(g.o * g.kp), device_, s);
      std::int32_t* sums = nullptr;
      if (e.zx != 0)
        sums = workspace_.get<std::int32_t>(Slot::conv_weight_sums, static_cast<std::size_t>(g.o),
                                            device_, s);
      pack_conv_weights(desc, w, p, sums, s);
      packed = p;
      e.wsum = sums;
    }
    bool zw_zero = false;
    e.zw = int_vec(wp, w_unsigned ? 128 : 0, zw_zero);
    e.need_xsum = !zw_zero;
    if (const auto tile = conv_pipelined_tile(kernel)) {
      const int splits = conv_splits(g, *tile, props().multiprocessors);
      std::int32_t *partial = nullptr, *partial_xsum = nullptr;
      if (splits > 1) {
        const auto m = static_cast<std::size_t>(g.n * g.oh * g.ow);
        partial = workspace_.get<std::int32_t>(Slot::conv_partial,
                                               m * static_cast<std::size_t>(g.o), device_, s);
        if (e.need_xsum)
          partial_xsum = workspace_.get<std::int32_t>(
              Slot::conv_partial_xsum, m * static_cast<std::size_t>(g.groups), device_, s);
      }
      launch_conv_igemm_pipelined(xh, packed, g, e, *tile, splits, partial, partial_xsum, device_,
                                  s);
    } else {
      launch_conv_implicit_gemm(xh, packed, g, e, s);
    }
  }

  if (e.overflow) {
    int flag = 0;
    check(cudaMemcpyAsync(&flag, e.overflow, sizeof flag, cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync(overflow flag)");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    if (flag != 0) {
      // Some acc + bias left int32: the reference names the first such position.
      const auto hx = to_host<std::uint8_t>(x, xs, s);
      const auto hw = to_host<std::uint8_t>(w, ws, s);
      const auto hb = to_host<std::int32_t>(bias, g.o, s);
      check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      std::vector<std::uint8_t> hy(static_cast<std::size_t>(ys) * 4);
      reference::conv(op, desc, hx.data(), hw.data(), hb.data(), hy.data());
      throw Error(ErrorCode::internal, "cuda: " + name +
                                           ": the kernel flagged an int32 overflow of acc + "
                                           "bias that the reference does not find");
    }
  }
}

}  // namespace qforge::cuda
