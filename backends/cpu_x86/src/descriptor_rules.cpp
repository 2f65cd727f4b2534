#include "descriptor_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <variant>

#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86 {
namespace {

[[noreturn]] void reject(const std::string& what) { throw Error(ErrorCode::unsupported, what); }

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

void non_negative(const char* what, std::int64_t v) {
  if (v < 0) reject(std::string(what) + " = " + std::to_string(v) + "; expected >= 0");
}

void check_quantize(const QuantizeDesc& d) {
  element_count(d.shape);  // throws on a negative extent
  d.params.validate_for(d.shape);
}

void check_requantize(const RequantizeDesc& d) {
  element_count(d.shape);
  if (d.out_dtype != DType::int8 && d.out_dtype != DType::uint8)
    reject("out_dtype = " + std::string(name(d.out_dtype)) + "; expected int8 or uint8");
  const auto& tr = traits(d.out_dtype);
  if (d.out_zero_point < tr.qmin || d.out_zero_point > tr.qmax)
    reject("out_zero_point = " + std::to_string(d.out_zero_point) + "; expected a value in the " +
           std::string(tr.name) + " range [" + std::to_string(tr.qmin) + ", " +
           std::to_string(tr.qmax) + "]");
  if (d.multipliers.empty()) reject("no multipliers; expected 1 (per tensor) or one per index along axis");
  for (std::size_t i = 0; i < d.multipliers.size(); ++i)
    if (!std::isfinite(d.multipliers[i]) || d.multipliers[i] < 0.0f)
      reject("multipliers[" + std::to_string(i) + "] = " + float_text(d.multipliers[i]) +
             "; expected a finite value >= 0");
  if (d.multipliers.size() > 1) {
    const int rank = static_cast<int>(d.shape.size());
    const int axis = d.axis < 0 ? d.axis + rank : d.axis;
    if (axis < 0 || axis >= rank)
      reject("axis " + std::to_string(d.axis) + " for shape " + to_string(d.shape) +
             "; expected an axis in [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
    const std::int64_t extent = d.shape[static_cast<std::size_t>(axis)];
    if (extent != static_cast<std::int64_t>(d.multipliers.size()))
      reject(std::to_string(d.multipliers.size()) + " multipliers for shape " + to_string(d.shape) +
             " along axis " + std::to_string(axis) + "; expected 1 or " + std::to_string(extent));
  }
}

void check_operand(const char* which, const QuantizationParams& p, const Shape& shape,
                   int channel_axis, const std::string& block_refusal) {
  const std::string who = std::string(which) + " (" + p.to_string() + ")";
  if (p.scheme().mapping == Mapping::logarithmic)
    reject(who + " uses the logarithmic mapping; expected affine or symmetric");
  if (p.scheme().granularity == Granularity::per_channel) {
    const int axis = p.channel_axis(shape.size());
    if (axis != channel_axis)
      reject(who + " is per_channel along axis " + std::to_string(axis) + " of " +
             to_string(shape) + "; expected axis " + std::to_string(channel_axis));
  }
  if (p.scheme().granularity == Granularity::block && !block_refusal.empty())
    reject(who + " " + block_refusal);
  p.validate_for(shape);
}

// The largest |q - z| over the dtype's full range and every zero point (reference::int32_safe_k).
std::int64_t max_centered(const QuantizationParams& p) {
  const auto& tr = traits(p.dtype());
  std::int64_t best = 0;
  for (const std::int32_t z : p.zero_points())
    best = std::max<std::int64_t>({best, std::llabs(static_cast<std::int64_t>(tr.qmin) - z),
                                   std::llabs(static_cast<std::int64_t>(tr.qmax) - z)});
  return best;
}

void check_a_side(const MatmulDesc& d) {
  non_negative("m", d.m);
  non_negative("n", d.n);
  non_negative("k", d.k);
  check_operand("A", d.a, d.a_shape(), 0,
                "is block-wise; expected per_tensor or per_channel(axis 0): blocks are only "
                "defined for B");
  if (d.a.dtype() != DType::int8 && d.a.dtype() != DType::uint8)
    reject("A dtype " + std::string(name(d.a.dtype())) +
           "; cpu_x86 expects int8 or uint8 activations (cpu_scalar runs the others)");
}

void check_b_side(const MatmulDesc& d, OpKind op) {
  const bool kn = d.b_layout == MatrixLayout::kn;
  std::string block_refusal;
  if (op == OpKind::qlinear_matmul)
    block_refusal = "is block-wise; expected per_tensor or per_channel B (block-wise partial "
                    "sums cannot be requantized to one output scale)";
  else if (kn)
    block_refusal = "is block-wise with b_layout kn; expected b_layout nk (blocks run along "
                    "the last axis, which must be K)";
  check_operand("B", d.b, d.b_shape(), kn ? 1 : 0, block_refusal);
  const DType bt = d.b.dtype();
  if (bt != DType::int8 && bt != DType::uint8 && bt != DType::int4 && bt != DType::uint4)
    reject("B dtype " + std::string(name(bt)) +
           "; cpu_x86 expects int8, uint8, int4 or uint4 weights (cpu_scalar runs the others)");
  if (d.b.scheme().granularity == Granularity::block && d.b.scheme().block_size % 4 != 0)
    reject("B block size " + std::to_string(d.b.scheme().block_size) +
           "; cpu_x86 expects a multiple of 4 (blocks must align with the kernels' 4-k groups)");
}

void check_k_bound(const MatmulDesc& d, std::int64_t max_b) {
  const std::int64_t worst = std::max<std::int64_t>(1, max_centered(d.a) * max_b);
  const std::int64_t safe = std::numeric_limits<std::int32_t>::max() / worst;
  if (d.k > safe)
    reject("K = " + std::to_string(d.k) + " exceeds the int32-safe depth " + std::to_string(safe) +
           " for these dtypes and zero points; cpu_x86 accumulates in int32 and expects K <= " +
           std::to_string(safe) + " (cpu_scalar accumulates in int64)");
}

void check_output(const MatmulDesc& d, OpKind op, float max_sb) {
  if (op == OpKind::matmul_dequant && d.out_type != FloatType::f32)
    reject(std::string("out_type ") + name(d.out_type) + "; cpu_x86 writes float32 only");
  if (op != OpKind::qlinear_matmul) return;
  if (d.b.scheme().granularity == Granularity::block)
    reject("B (" + d.b.to_string() + ") is block-wise; expected per_tensor or per_channel B "
           "(block-wise partial sums cannot be requantized to one output scale)");
  if (!d.y) reject("no output params (desc.y is empty); expected per-tensor int8 or uint8");
  const QuantizationParams& y = *d.y;
  if (y.scheme().granularity != Granularity::per_tensor || y.scheme().mapping == Mapping::logarithmic ||
      (y.dtype() != DType::int8 && y.dtype() != DType::uint8))
    reject("output params " + y.to_string() + "; expected per-tensor affine or symmetric int8 or uint8");
  // Every multiplier (sa * sb) / sy must be finite; rounded float multiplication and division
  // are monotonic, so the largest scales decide for all pairs.
  if (d.m > 0 && d.n > 0) {
    const float sa = *std::max_element(d.a.scales().begin(), d.a.scales().end());
    if (!std::isfinite((sa * max_sb) / y.scale()))
      reject("multiplier (sa * sb) / sy overflows float32 for sa = " + float_text(sa) +
             ", sb = " + float_text(max_sb) + ", sy = " + float_text(y.scale()) +
             "; expected scales whose ratio fits float32");
  }
}

float max_scale(const QuantizationParams& p) {
  return p.scales().empty() ? 0.0f : *std::max_element(p.scales().begin(), p.scales().end());
}

void check_matmul(const MatmulDesc& d, OpKind op) {
  check_a_side(d);
  check_b_side(d, op);
  check_k_bound(d, max_centered(d.b));
  check_output(d, op, max_scale(d.b));
}

void check_linear(const LinearDesc& d) {
  non_negative("m", d.m);
  non_negative("n", d.n);
  non_negative("k", d.k);
  const QuantizationParams& w = d.w;
  const bool per_row = w.scheme().granularity == Granularity::per_channel && w.channel_axis(2) == 0;
  if (w.dtype() != DType::int8 || w.scheme().mapping != Mapping::symmetric ||
      !(w.scheme().granularity == Granularity::per_tensor || per_row))
    reject("weight params " + w.to_string() +
           "; expected int8 symmetric, per_tensor or per_channel(axis 0) of [N, K]");
  w.validate_for({d.n, d.k});
}

struct Check {
  OpKind op;
  void operator()(const QuantizeDesc& d) const {
    if (op != OpKind::quantize && op != OpKind::dequantize) mismatch("QuantizeDesc");
    check_quantize(d);
  }
  void operator()(const RequantizeDesc& d) const {
    if (op != OpKind::requantize) mismatch("RequantizeDesc");
    check_requantize(d);
  }
  void operator()(const MatmulDesc& d) const {
    if (op != OpKind::matmul_integer && op != OpKind::matmul_dequant && op != OpKind::qlinear_matmul)
      mismatch("MatmulDesc");
    check_matmul(d, op);
  }
  void operator()(const DynamicQuantizeDesc& d) const {
    if (op != OpKind::dynamic_quantize_linear) mismatch("DynamicQuantizeDesc");
    element_count(d.shape);
  }
  void operator()(const LinearDesc& d) const {
    if (op != OpKind::linear_forward && op != OpKind::linear_backward) mismatch("LinearDesc");
    check_linear(d);
  }
  [[noreturn]] void mismatch(const char* given) const {
    reject(std::string("descriptor is a ") + given + "; expected the descriptor type of this op (op_desc.h)");
  }
};

// Whether two params are the same, by their bytes. Up to 64K pairs every byte is compared; a
// larger set (block-wise weights: N*K/32 pairs, a quarter of an int4 matrix's bytes) is
// compared at its ends and in 64 windows spread over it, so that checking a GEMV's weights
// does not cost as much as the GEMV. The kernels always use the packed copy of the params.
bool same_params(const QuantizationParams& x, const QuantizationParams& y) {
  if (x.dtype() != y.dtype() || !(x.scheme() == y.scheme()) || x.count() != y.count() ||
      x.zero_points().size() != y.zero_points().size())
    return false;
  auto same_range = [&](std::size_t i0, std::size_t i1) {
    return std::memcmp(x.scales().data() + i0, y.scales().data() + i0, (i1 - i0) * sizeof(float)) == 0 &&
           std::memcmp(x.zero_points().data() + i0, y.zero_points().data() + i0,
                       (i1 - i0) * sizeof(std::int32_t)) == 0;
  };
  const std::size_t n = x.count();
  if (n <= 65536) return same_range(0, n);
  if (!same_range(0, 4096) || !same_range(n - 4096, n)) return false;
  for (std::size_t w = 1; w <= 64; ++w) {
    const std::size_t at = n / 65 * w;
    if (!same_range(at, at + 64)) return false;
  }
  return true;
}

}  // namespace

PackedFacts packed_facts(const MatmulDesc& d) { return {max_centered(d.b), max_scale(d.b)}; }

void check_packed_call(OpKind op, const MatmulDesc& d, const MatmulDesc& packed,
                       const PackedFacts& facts) {
  if (d.n != packed.n || d.k != packed.k || d.b_layout != packed.b_layout || !same_params(d.b, packed.b))
    throw Error(ErrorCode::shape_mismatch,
                "cpu_x86: packed weights for n=" + std::to_string(packed.n) + " k=" +
                    std::to_string(packed.k) + " " + packed.b.to_string() + " used with n=" +
                    std::to_string(d.n) + " k=" + std::to_string(d.k) + " " + d.b.to_string() +
                    "; expected the same B shape, layout and params it was packed for");
  try {
    check_a_side(d);
    check_k_bound(d, facts.max_b_centered);
    check_output(d, op, facts.max_sb);
  } catch (const Error& e) {
    throw Error(ErrorCode::unsupported, "cpu_x86: " + std::string(to_string(op)) + ": " + e.what());
  }
}

void check_descriptor(const OpDesc& op) {
  try {
    std::visit(Check{op.op}, op.desc);
  } catch (const Error& e) {
    throw Error(ErrorCode::unsupported,
                "cpu_x86: " + std::string(to_string(op.op)) + ": " + e.what());
  }
}

bool vector_quantize(const QuantizeDesc& d) {
  const DType t = d.params.dtype();
  return (t == DType::int8 || t == DType::uint8) && d.params.scheme().mapping != Mapping::logarithmic;
}

bool vector_linear(const LinearDesc& d) {
  const MatmulDesc m{.m = d.m,
                     .n = d.n,
                     .k = d.k,
                     .a = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                     .b = d.w,
                     .y = std::nullopt};
  return d.k <= reference::int32_safe_k(m);
}

}  // namespace qforge::cpu_x86
