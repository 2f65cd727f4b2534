// The matmul ops, prepacked weights and the quantized linear layer.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "cpu_x86_ops.h"
#include "descriptor_rules.h"
#include "op_runs.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "quantize_kernels.h"

namespace qforge::cpu_x86 {
namespace {

void require_pointers(OpKind op, std::initializer_list<std::pair<const char*, const void*>> ptrs,
                      bool non_empty) {
  if (!non_empty) return;
  for (const auto& [what, p] : ptrs)
    if (!p)
      throw Error(ErrorCode::invalid_argument, "cpu_x86: " + std::string(to_string(op)) + ": " +
                                                   what +
                                                   " is null; expected a valid host pointer");
}

void require_no_bias(const MatmulDesc& desc, const char* call) {
  if (desc.has_bias)
    throw Error(ErrorCode::invalid_argument,
                std::string("cpu_x86: ") + call +
                    ": has_bias is set but this call takes no bias; expected qlinear_matmul_bias "
                    "(or a plan) for qlinear_matmul with an int32 bias");
}

}  // namespace

GemmOutput requant_output(const MatmulDesc& desc, void* y, const std::int32_t* bias) {
  const QuantizationParams& yp = *desc.y;
  GemmOutput out;
  out.kind = GemmOutput::Kind::requant;
  out.out = y;
  out.bias_i32 = desc.has_bias ? bias : nullptr;
  out.sy = yp.scale();
  out.zy = yp.zero_point();
  out.range = {yp.dtype() == DType::int8, yp.qmin(), yp.qmax()};
  // The fused activation's bounds in output codes (within [qmin, qmax], as quantize_value
  // saturates), as the reference's clamp: saturating to them is requantize-then-clamp.
  const auto q = [&](float v) {
    return reference::quantize_value(v, yp.scale(), yp.zero_point(), yp.qmin(), yp.qmax());
  };
  if (desc.activation == ConvActivation::relu) out.range.qmin = q(0.0f);
  if (desc.activation == ConvActivation::relu6) out.range.qmin = q(0.0f), out.range.qmax = q(6.0f);
  if (desc.activation == ConvActivation::clamp)
    out.range.qmin = q(desc.clamp_min), out.range.qmax = q(desc.clamp_max);
  out.mode = desc.requant_mode;
  return out;
}

bool matmul_bias_cannot_overflow(const MatmulDesc& d, const void* b, const std::int32_t* bias) {
  const auto& at = traits(d.a.dtype());
  std::int64_t max_a = 0;
  for (std::size_t i = 0; i < d.a.count(); ++i) {
    const std::int64_t za = d.a.zero_point(i);
    max_a = std::max({max_a, za - at.qmin, at.qmax - za});
  }
  if (d.b.dtype() != DType::int8 && d.b.dtype() != DType::uint8) return false;  // not one per byte
  const auto* src = static_cast<const std::uint8_t*>(b);
  const bool is_signed = d.b.dtype() == DType::int8;
  const bool kn = d.b_layout == MatrixLayout::kn;
  for (std::int64_t n = 0; n < d.n; ++n) {
    const std::int64_t zb = d.b.zero_point(d.b.count() == 1 ? 0 : static_cast<std::size_t>(n));
    std::int64_t sum = 0;
    for (std::int64_t k = 0; k < d.k; ++k) {
      const std::uint8_t code = src[kn ? k * d.n + n : n * d.k + k];
      sum += std::llabs((is_signed ? static_cast<std::int8_t>(code) : code) - zb);
    }
    if (max_a * sum + std::llabs(bias[n]) > std::numeric_limits<std::int32_t>::max()) return false;
  }
  return true;
}

const X86PackedWeights& CpuX86Ops::own_packed(const PackedWeights& b) const {
  const auto* w = dynamic_cast<const X86PackedWeights*>(&b);
  if (!w || b.backend() != name())
    throw Error(ErrorCode::invalid_argument, "cpu_x86: packed weights made by " + b.backend() +
                                                 " passed to cpu_x86; expected weights packed by "
                                                 "this backend's pack_weights");
  return *w;
}

bool CpuX86Ops::run_matmul(OpKind op, const MatmulDesc& desc, const void* a,
                           const X86PackedWeights& b, const GemmOutput& out) {
  const KernelInfo& k = gemm_kernel(desc, b, op, {});
  return run_gemm(k, desc, a, b, out, *pool_, scratch_, tuning());
}

std::shared_ptr<PackedWeights> CpuX86Ops::pack_weights(const MatmulDesc& desc, const void* b) {
  // The most permissive matmul: block-wise B is allowed (qlinear_matmul refuses it later).
  // M does not matter to packing; pick one that fits A's params so they validate.
  MatmulDesc d = desc;
  if (d.a.scheme().granularity == Granularity::per_channel)
    d.m = static_cast<std::int64_t>(d.a.count());
  // The checks are matmul_integer's; the messages name pack_weights, the call that was made.
  try {
    require_supported(OpKind::matmul_integer, d);
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind("cpu_x86: ", 0) == 0) what.erase(0, 9);
    throw Error(e.code(), "cpu_x86: pack_weights (checked as matmul_integer): " + what);
  }
  if (desc.n * desc.k > 0 && !b)
    throw Error(ErrorCode::invalid_argument,
                "cpu_x86: pack_weights: b is null; expected a valid host pointer");
  return std::make_shared<X86PackedWeights>(desc, b, pool_.get());
}

// The unpacked ops validate the whole descriptor, pack B for this call and run; the packed ops
// check only what the packing did not (descriptor_rules.h), so a GEMV with per-block weight
// params does not pay for re-validating them on every call.
void CpuX86Ops::matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                               std::int32_t* c) {
  require_supported(OpKind::matmul_integer, desc);
  require_pointers(OpKind::matmul_integer, {{"b", b}}, desc.n * desc.k > 0);
  require_pointers(OpKind::matmul_integer, {{"a", a}, {"c", c}}, desc.m * desc.n > 0);
  const X86PackedWeights packed(desc, b, pool_.get());
  run_matmul(OpKind::matmul_integer, desc, a, packed, {GemmOutput::Kind::int32, c});
}

void CpuX86Ops::matmul_dequant(const MatmulDesc& desc, const void* a, const void* b,
                               const float* bias, void* y) {
  require_supported(OpKind::matmul_dequant, desc);
  require_pointers(OpKind::matmul_dequant, {{"b", b}}, desc.n * desc.k > 0);
  require_pointers(OpKind::matmul_dequant, {{"a", a}, {"y", y}}, desc.m * desc.n > 0);
  if (desc.has_bias)
    require_pointers(OpKind::matmul_dequant, {{"bias (has_bias is set)", bias}}, desc.n > 0);
  const X86PackedWeights packed(desc, b, pool_.get());
  run_matmul(OpKind::matmul_dequant, desc, a, packed,
             {GemmOutput::Kind::dequant_f32, y, desc.has_bias ? bias : nullptr});
}

void CpuX86Ops::qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) {
  require_no_bias(desc, "qlinear_matmul");
  qlinear_matmul_bias(desc, a, b, nullptr, y);
}

void CpuX86Ops::qlinear_matmul_bias(const MatmulDesc& desc, const void* a, const void* b,
                                    const std::int32_t* bias, void* y) {
  require_supported(OpKind::qlinear_matmul, desc);
  require_pointers(OpKind::qlinear_matmul, {{"b", b}}, desc.n * desc.k > 0);
  require_pointers(OpKind::qlinear_matmul, {{"a", a}, {"y", y}}, desc.m * desc.n > 0);
  if (desc.has_bias)
    require_pointers(OpKind::qlinear_matmul, {{"bias (has_bias is set)", bias}}, desc.n > 0);
  const X86PackedWeights packed(desc, b, pool_.get());
  if (!run_matmul(OpKind::qlinear_matmul, desc, a, packed, requant_output(desc, y, bias)))
    reference::qlinear_matmul(desc, a, b, bias, y);  // reports the sum that leaves int32
}

void CpuX86Ops::matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      std::int32_t* c) {
  const X86PackedWeights& w = own_packed(b);
  check_packed_call(OpKind::matmul_integer, desc, w.desc(), w.facts);
  require_pointers(OpKind::matmul_integer, {{"a", a}, {"c", c}}, desc.m * desc.n > 0);
  run_matmul(OpKind::matmul_integer, desc, a, w, {GemmOutput::Kind::int32, c});
}

void CpuX86Ops::matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      const float* bias, void* y) {
  const X86PackedWeights& w = own_packed(b);
  check_packed_call(OpKind::matmul_dequant, desc, w.desc(), w.facts);
  require_pointers(OpKind::matmul_dequant, {{"a", a}, {"y", y}}, desc.m * desc.n > 0);
  if (desc.has_bias)
    require_pointers(OpKind::matmul_dequant, {{"bias (has_bias is set)", bias}}, desc.n > 0);
  run_matmul(OpKind::matmul_dequant, desc, a, w,
             {GemmOutput::Kind::dequant_f32, y, desc.has_bias ? bias : nullptr});
}

void CpuX86Ops::qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      void* y) {
  // The int32 bias has no packed call (ops.h): an overflow could not be reported from B.
  require_no_bias(desc, "qlinear_matmul_packed");
  const X86PackedWeights& w = own_packed(b);
  check_packed_call(OpKind::qlinear_matmul, desc, w.desc(), w.facts);
  require_pointers(OpKind::qlinear_matmul, {{"a", a}, {"y", y}}, desc.m * desc.n > 0);
  run_matmul(OpKind::qlinear_matmul, desc, a, w, requant_output(desc, y, nullptr));
}

MatmulDesc linear_matmul_desc(const LinearDesc& desc, float sx) {
  return MatmulDesc{.m = desc.m,
                    .n = desc.n,
                    .k = desc.k,
                    .a = QuantizationParams::per_tensor_symmetric(DType::int8, sx),
                    .b = desc.w,
                    .b_layout = MatrixLayout::nk,
                    .has_bias = desc.has_bias,
                    .out_type = FloatType::f32,
                    .y = std::nullopt};
}

std::optional<float> linear_forward_vector(const GemmContext& ctx, const KernelInfo& kernel,
                                           const LinearDesc& desc, const float* x,
                                           const X86PackedWeights& w, const float* bias,
                                           std::int8_t* xq, float* y) {
  const std::int64_t M = desc.m, K = desc.k;
  // sx = max(max|X| / 127, 1e-8), as the reference; a non-finite X is an error it names.
  float amax = 0.0f;
  if (M * K > 0) {
    const MinMax mm = minmax_f32_avx2(x, M * K);
    if (mm.has_nan || !std::isfinite(mm.lo) || !std::isfinite(mm.hi)) return std::nullopt;
    amax = std::max(std::fabs(mm.lo), std::fabs(mm.hi));
  }
  const auto& i8 = traits(DType::int8);
  const float sx = std::max(amax / static_cast<float>(i8.narrow_qmax), 1e-8f);
  const QuantRange range{true, i8.narrow_qmin, i8.narrow_qmax};
  const std::int64_t n = M * K;
  constexpr std::int64_t kChunk = 1 << 16;
  ctx.pool.parallel_for((n + kChunk - 1) / kChunk, [&](std::int64_t t) {
    const std::int64_t e0 = t * kChunk;
    quantize_run_avx2(x + e0, FloatKind::f32, xq + e0, std::min(n, e0 + kChunk) - e0, sx, 0, range);
  });
  // Y = ((float(Xq Wq^T) * sx) * sw[n]) + bias[n]: matmul_dequant with A = Xq, B = Wq as [N, K].
  run_gemm(exact_for_weights(kernel, w.holds_min), linear_matmul_desc(desc, sx), xq, w,
           {GemmOutput::Kind::dequant_f32, y, desc.has_bias ? bias : nullptr}, ctx.pool,
           ctx.scratch, ctx.tuning);
  return sx;
}

QuantizationParams CpuX86Ops::linear_forward(const LinearDesc& desc, const float* x,
                                             const std::int8_t* wq, const float* bias,
                                             std::int8_t* xq, float* y) {
  require_supported(OpKind::linear_forward, desc);
  if (!vector_linear(desc)) return reference::linear_forward(desc, x, wq, bias, xq, y);
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  require_pointers(OpKind::linear_forward, {{"x", x}, {"xq", xq}}, M * K > 0);
  require_pointers(OpKind::linear_forward, {{"wq", wq}}, N * K > 0);
  require_pointers(OpKind::linear_forward, {{"y", y}}, M * N > 0);
  if (desc.has_bias)
    require_pointers(OpKind::linear_forward, {{"bias (has_bias is set)", bias}}, N > 0);
  // The kernel is chosen before X is read, as for the matmuls.
  const MatmulDesc md = linear_matmul_desc(desc, 1.0f);
  const X86PackedWeights packed(md, wq, pool_.get());
  const KernelInfo& k = gemm_kernel(md, packed, OpKind::linear_forward, {});
  const auto sx =
      linear_forward_vector({*pool_, scratch_, tuning()}, k, desc, x, packed, bias, xq, y);
  if (!sx) return reference::linear_forward(desc, x, wq, bias, xq, y);
  return QuantizationParams::per_tensor_symmetric(DType::int8, *sx);
}

void CpuX86Ops::linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                                const QuantizationParams& xq_params, const std::int8_t* wq,
                                float* dx, float* dw, float* db) {
  require_supported(OpKind::linear_backward, desc);
  // Float gradients summed in double (reference.h): no int8 kernel applies.
  reference::linear_backward(desc, dy, xq, xq_params, wq, dx, dw, db);
}

}  // namespace qforge::cpu_x86
