// The per-call convolution op and its kernel choice (the plans share the choice, x86_plan.cpp).
#include "conv.h"
#include "cpu_x86_ops.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86 {

bool CpuX86Ops::implicit_first(const ConvDesc& desc) const {
  return conv_implicit_preferred(desc) && runnable(*find_kernel(kAmxImplicitConv));
}

ConvPath CpuX86Ops::conv_path(const ConvDesc& desc, OpKind op, std::string_view forced) const {
  if (forced.empty())
    return implicit_first(desc)           ? ConvPath::implicit
           : conv_small_k_preferred(desc) ? ConvPath::small_k
           : conv_depthwise_direct(desc)  ? ConvPath::depthwise
                                          : ConvPath::gemm;
  const KernelInfo& k = *find_kernel(forced);
  if (k.role == KernelRole::gemm || k.role == KernelRole::gemv) return ConvPath::gemm;
  if (k.role == KernelRole::conv_depthwise && conv_depthwise_direct(desc))
    return ConvPath::depthwise;
  if (k.role == KernelRole::conv_small_k && conv_small_k_direct(desc)) return ConvPath::small_k;
  if (k.role == KernelRole::conv_implicit && conv_implicit_direct(desc)) return ConvPath::implicit;
  std::string direct;
  if (conv_depthwise_direct(desc)) direct += ", q8_dwconv_c32__avx512vnni, q8_dwconv_c32__avx2";
  if (conv_small_k_direct(desc)) direct += ", q8_conv_k64__avx2_maddwd";
  if (conv_implicit_direct(desc)) direct += ", q8_iconv_32x32c4__amx, q8_iconv_32x32c4__scalar";
  throw Error(ErrorCode::unsupported,
              "cpu_x86: the forced kernel '" + std::string(forced) + "' cannot run " +
                  std::string(to_string(op)) + " for " + describe(OpDesc{op, desc}) +
                  "; expected a q8_gemm_ / q8_gemv_ kernel, 'reference'" + direct);
}

const KernelInfo& CpuX86Ops::conv_kernel(const ConvDesc& desc, ConvPath path, bool holds_min,
                                         std::string_view forced) const {
  if (!forced.empty()) return exact_for_weights(*find_kernel(forced), holds_min);
  const KernelRole role = path == ConvPath::depthwise         ? KernelRole::conv_depthwise
                          : path == ConvPath::small_k         ? KernelRole::conv_small_k
                          : path == ConvPath::implicit        ? KernelRole::conv_implicit
                          : desc.out_h() * desc.out_w() <= 16 ? KernelRole::gemv
                                                              : KernelRole::gemm;
  for (const KernelInfo& k : all_kernels())
    if (k.role == role && runnable(k) && !(k.needs_no_min && holds_min) &&
        desc.out_h() * desc.out_w() >= k.min_rows)
      return k;
  throw Error(ErrorCode::internal,
              "cpu_x86: no convolution kernel; the maddwd and direct kernels need only AVX2");
}

void CpuX86Ops::conv(OpKind op, const ConvDesc& desc, const void* x, const void* w,
                     const void* bias, void* y) {
  require_supported(op, desc);
  if (op != OpKind::conv_integer && op != OpKind::qlinear_conv && op != OpKind::conv_dequant)
    throw Error(ErrorCode::invalid_argument,
                "cpu_x86: conv called with " + std::string(to_string(op)) +
                    "; expected conv_integer, qlinear_conv or conv_dequant");
  const std::string name(to_string(op));
  auto require = [&](const char* what, const void* p, std::int64_t count) {
    if (count > 0 && !p)
      throw Error(ErrorCode::invalid_argument,
                  "cpu_x86: " + name + ": " + what + " is null; expected a valid host pointer");
  };
  const Shape xs = desc.x_shape(), ws = desc.w_shape(), ys = desc.y_shape();
  auto count = [](const Shape& s) {
    std::int64_t n = 1;
    for (const auto e : s) n *= e;  // bounded by the descriptor check
    return n;
  };
  require("x", x, count(xs));
  require("w", w, count(ws));
  require("y", y, count(ys));
  if (desc.bias != ConvBias::none) require("bias (desc.bias is set)", bias, desc.out_channels);
  const ConvPath path = conv_path(desc, op, {});
  const ConvWeights weights(desc, w, path, pool_.get());
  const KernelInfo& k = conv_kernel(desc, path, weights.holds_min(), {});
  if (!run_conv({*pool_, scratch_, tuning()}, k, op, desc, x, weights, bias, y))
    reference::conv(op, desc, x, w, bias, y);  // reports the sum that leaves int32
}

}  // namespace qforge::cpu_x86
