#include "descriptor_check.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>

#include "qforge/error.h"

namespace qforge::cpu_scalar {
namespace {

// check_descriptor() adds "cpu_scalar: <op>: " in front.
[[noreturn]] void reject(const std::string& what) { throw Error(ErrorCode::unsupported, what); }

void require_non_negative(const char* what, std::int64_t v) {
  if (v < 0) reject(std::string(what) + " = " + std::to_string(v) + "; expected >= 0");
}

std::string describe(const QuantizationParams& p) { return p.to_string(); }

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
    reject("out_zero_point = " + std::to_string(d.out_zero_point) +
                   "; expected a value in the " + std::string(tr.name) + " range [" +
                   std::to_string(tr.qmin) + ", " + std::to_string(tr.qmax) + "]");
  if (d.multipliers.empty())
    reject("no multipliers; expected 1 (per tensor) or one per index along axis");
  for (std::size_t i = 0; i < d.multipliers.size(); ++i)
    if (!std::isfinite(d.multipliers[i]) || d.multipliers[i] < 0.0f)
      reject("multipliers[" + std::to_string(i) + "] = " + std::to_string(d.multipliers[i]) +
                     "; expected a finite value >= 0");
  if (d.multipliers.size() > 1) {
    const int rank = static_cast<int>(d.shape.size());
    const int axis = d.axis < 0 ? d.axis + rank : d.axis;
    if (axis < 0 || axis >= rank)
      reject("axis " + std::to_string(d.axis) + " for shape " + to_string(d.shape) +
                     "; expected an axis in [" + std::to_string(-rank) + ", " +
                     std::to_string(rank - 1) + "]");
    const std::int64_t extent = d.shape[static_cast<std::size_t>(axis)];
    if (extent != static_cast<std::int64_t>(d.multipliers.size()))
      reject(std::to_string(d.multipliers.size()) + " multipliers for shape " +
                     to_string(d.shape) + " along axis " + std::to_string(axis) +
                     "; expected 1 or " + std::to_string(extent));
  }
}

// One matmul operand: linear mapping, per-channel only along the output axis, blocks only
// where the op allows them; then the counts must fit the shape.
void check_operand(const char* which, const QuantizationParams& p,
                   const Shape& shape, int channel_axis, const std::string& block_refusal) {
  const std::string who = std::string(which) + " (" + describe(p) + ")";
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

void check_matmul(const MatmulDesc& d, bool allow_block_b) {
  require_non_negative("m", d.m);
  require_non_negative("n", d.n);
  require_non_negative("k", d.k);
  check_operand("A", d.a, d.a_shape(), 0,
                "is block-wise; expected per_tensor or per_channel(axis 0): blocks are only "
                "defined for B");
  const bool kn = d.b_layout == MatrixLayout::kn;
  std::string block_refusal;
  if (!allow_block_b)
    block_refusal = "is block-wise; expected per_tensor or per_channel B (block-wise partial "
                    "sums cannot be requantized to one output scale)";
  else if (kn)
    block_refusal = "is block-wise with b_layout kn; expected b_layout nk (blocks run along "
                    "the last axis, which must be K)";
  check_operand("B", d.b, d.b_shape(), kn ? 1 : 0, block_refusal);
}

void check_qlinear(const MatmulDesc& d) {
  check_matmul(d, /*allow_block_b=*/false);
  if (!d.y) reject("no output params (desc.y is empty); expected per-tensor int8 or uint8");
  const QuantizationParams& y = *d.y;
  if (y.scheme().granularity != Granularity::per_tensor ||
      y.scheme().mapping == Mapping::logarithmic ||
      (y.dtype() != DType::int8 && y.dtype() != DType::uint8))
    reject("output params " + describe(y) +
                   "; expected per-tensor affine or symmetric int8 or uint8");
  // The reference requires every multiplier (sa * sb) / sy to be finite. Rounded float
  // multiplication and division are monotonic, so the largest scales decide for all pairs.
  if (d.m > 0 && d.n > 0) {
    const float sa = *std::max_element(d.a.scales().begin(), d.a.scales().end());
    const float sb = *std::max_element(d.b.scales().begin(), d.b.scales().end());
    if (!std::isfinite((sa * sb) / y.scale()))
      reject("multiplier (sa * sb) / sy overflows float32 for sa = " + std::to_string(sa) +
                     ", sb = " + std::to_string(sb) + ", sy = " + std::to_string(y.scale()) +
                     "; expected scales whose ratio fits float32");
  }
}

void check_linear(const LinearDesc& d) {
  require_non_negative("m", d.m);
  require_non_negative("n", d.n);
  require_non_negative("k", d.k);
  const QuantizationParams& w = d.w;
  const bool per_row =
      w.scheme().granularity == Granularity::per_channel && w.channel_axis(2) == 0;
  if (w.dtype() != DType::int8 || w.scheme().mapping != Mapping::symmetric ||
      !(w.scheme().granularity == Granularity::per_tensor || per_row))
    reject("weight params " + describe(w) +
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
    if (op == OpKind::matmul_integer || op == OpKind::matmul_dequant)
      check_matmul(d, /*allow_block_b=*/true);
    else if (op == OpKind::qlinear_matmul)
      check_qlinear(d);
    else
      mismatch("MatmulDesc");
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
    reject(std::string("descriptor is a ") + given +
                              "; expected the descriptor type of this op (op_desc.h)");
  }
};

}  // namespace

Support check_descriptor(const OpDesc& op) {
  try {
    std::visit(Check{op.op}, op.desc);
  } catch (const Error& e) {
    return Support::no("cpu_scalar: " + std::string(to_string(op.op)) + ": " + e.what());
  }
  return Support::yes({"scalar_reference"});
}

}  // namespace qforge::cpu_scalar
