// Validation and unpacking of the A and B operands shared by matmul_integer, matmul_dequant and
// qlinear_matmul, and the int32 safety bound that backends use to claim shapes.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "qforge/checked_size.h"
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace detail {
namespace {

void validate_operand(const std::string& op, const char* which, const QuantizationParams& p,
                      const Shape& shape, int channel_axis, const std::string& channel_text,
                      const std::string& block_refusal) {
  const std::string who = std::string(which) + " (" + p.to_string() + ")";
  if (p.scheme().mapping == Mapping::logarithmic)
    fail(ErrorCode::invalid_argument, op,
         who +
             " uses the logarithmic mapping; expected affine or symmetric (log codes are not "
             "linear in the value, so an integer dot product has no meaning)");
  switch (p.scheme().granularity) {
    case Granularity::per_tensor: break;
    case Granularity::per_channel: {
      const int axis = p.channel_axis(shape.size());
      if (axis != channel_axis)
        fail(ErrorCode::invalid_argument, op,
             who + " is per_channel along axis " + std::to_string(axis) + " of " +
                 to_string(shape) + "; expected axis " + std::to_string(channel_axis) + " (" +
                 channel_text + ")");
      break;
    }
    case Granularity::block:
      if (!block_refusal.empty()) fail(ErrorCode::invalid_argument, op, who + block_refusal);
      break;
  }
  p.validate_for(shape);
}

}  // namespace

std::size_t a_pair(const QuantizationParams& a, std::int64_t m) {
  return a.scheme().granularity == Granularity::per_tensor ? 0 : static_cast<std::size_t>(m);
}

std::size_t b_pair(const QuantizationParams& b, std::int64_t n, std::int64_t k,
                   std::int64_t depth) {
  switch (b.scheme().granularity) {
    case Granularity::per_tensor: return 0;
    case Granularity::per_channel: return static_cast<std::size_t>(n);
    case Granularity::block: break;
  }
  const std::int64_t bs = b.scheme().block_size;
  const std::int64_t blocks = (depth + bs - 1) / bs;
  return static_cast<std::size_t>(n * blocks + k / bs);
}

namespace {

// Bytes per element of the output [M, N] of a matmul op.
std::size_t output_element_bytes(const std::string& op, const MatmulDesc& desc) {
  if (op == "qlinear_matmul") return 1;
  if (op == "matmul_dequant") return static_cast<std::size_t>(size_of(desc.out_type));
  return sizeof(std::int32_t);  // matmul_integer
}

}  // namespace

void validate_matmul_a(const std::string& op, const MatmulDesc& desc) {
  require_non_negative(op, "m", desc.m);
  require_non_negative(op, "n", desc.n);
  require_non_negative(op, "k", desc.k);
  // Before anything multiplies them: every operand within qforge's size limit.
  const std::int64_t a_extents[] = {desc.m, desc.k};
  checked_operand(op, "A [M, K]", a_extents, desc.a.dtype());
  checked_operand(op, "output [M, N]", {desc.m, desc.n}, output_element_bytes(op, desc));
  validate_operand(op, "A", desc.a, desc.a_shape(), 0, "one pair per row of the [M, K] A",
                   " is block-wise; expected per_tensor or per_channel(axis 0): blocks are only "
                   "defined for B");
  validate_matmul_activation(op, desc);
  if (desc.a_params_at_run) {
    if (op != "matmul_dequant")
      fail(ErrorCode::invalid_argument, op,
           "a_params_at_run is set; expected it only on matmul_dequant (A's params as run-time "
           "inputs)");
    if (desc.a.scheme().granularity != Granularity::per_tensor)
      fail(ErrorCode::invalid_argument, op,
           "a_params_at_run with A " + desc.a.to_string() +
               "; expected per_tensor A (one scale and zero point per run)");
  }
}

void validate_matmul_activation(const std::string& op, const MatmulDesc& desc) {
  if (desc.activation == ConvActivation::none) return;
  if (op != "qlinear_matmul")
    fail(ErrorCode::invalid_argument, op,
         "activation " + std::string(to_string(desc.activation)) +
             "; expected none (only qlinear_matmul clamps its output)");
  if (desc.activation == ConvActivation::clamp &&
      !(std::isfinite(desc.clamp_min) && std::isfinite(desc.clamp_max) &&
        desc.clamp_min <= desc.clamp_max))
    fail(ErrorCode::invalid_argument, op,
         "clamp bounds [" + float_text(desc.clamp_min) + ", " + float_text(desc.clamp_max) +
             "]; expected finite bounds with clamp_min <= clamp_max");
}

std::pair<std::int32_t, std::int32_t> qlinear_matmul_clamp(const MatmulDesc& d) {
  const QuantizationParams& y = *d.y;
  const std::int32_t qmin = y.qmin(), qmax = y.qmax();
  auto q = [&](float v) { return quantize_value(v, y.scale(), y.zero_point(), qmin, qmax); };
  switch (d.activation) {
    case ConvActivation::none: return {qmin, qmax};
    case ConvActivation::relu: return {q(0.0f), qmax};
    case ConvActivation::relu6: return {q(0.0f), q(6.0f)};
    case ConvActivation::clamp: return {q(d.clamp_min), q(d.clamp_max)};
  }
  return {qmin, qmax};
}

void validate_qlinear_output(const std::string& op, const MatmulDesc& desc) {
  if (!desc.y)
    fail(ErrorCode::invalid_argument, op,
         "no output params (desc.y is empty); expected per-tensor int8 or uint8 params");
  const QuantizationParams& yp = *desc.y;
  if (yp.scheme().granularity != Granularity::per_tensor ||
      yp.scheme().mapping == Mapping::logarithmic ||
      (yp.dtype() != DType::int8 && yp.dtype() != DType::uint8))
    fail(ErrorCode::invalid_argument, op,
         "output params " + yp.to_string() +
             "; expected per-tensor affine or symmetric int8 or uint8");
}

void validate_matmul(const std::string& op, const MatmulDesc& desc, bool allow_block_b) {
  validate_matmul_a(op, desc);
  validate_matmul_b(op, desc, allow_block_b);
}

void validate_matmul_b(const std::string& op, const MatmulDesc& desc, bool allow_block_b) {
  const bool kn = desc.b_layout == MatrixLayout::kn;
  std::string block_refusal;
  if (!allow_block_b)
    block_refusal =
        " is block-wise; expected per_tensor or per_channel B (block-wise partial "
        "sums cannot be requantized to one output scale)";
  else if (kn)
    block_refusal =
        " is block-wise with b_layout kn; expected b_layout nk (blocks run along "
        "the last axis, which must be K)";
  const std::int64_t kn_extents[] = {desc.k, desc.n}, nk_extents[] = {desc.n, desc.k};
  checked_operand(op, kn ? "B [K, N]" : "B [N, K]", kn ? kn_extents : nk_extents, desc.b.dtype());
  if (desc.has_bias && (op == "matmul_dequant" || op == "matmul_weight_only"))
    checked_operand(op, "bias [N]", {desc.n}, sizeof(float));
  if (desc.has_bias && op == "qlinear_matmul")
    checked_operand(op, "bias [N] (int32)", {desc.n}, sizeof(std::int32_t));
  validate_operand(
      op, "B", desc.b, desc.b_shape(), kn ? 1 : 0,
      kn ? "one pair per column N of the [K, N] B" : "one pair per row N of the [N, K] B",
      block_refusal);
}

CenteredOperands center_operands(const MatmulDesc& desc, const void* a, const void* b) {
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  CenteredOperands ops;
  ops.a.resize(static_cast<std::size_t>(checked_element_count("A [M, K]", {M, K})));
  ops.b.resize(static_cast<std::size_t>(checked_element_count("B [N, K]", {N, K})));
  for (std::int64_t m = 0; m < M; ++m) {
    const std::int32_t za = desc.a.zero_point(a_pair(desc.a, m));
    for (std::int64_t k = 0; k < K; ++k) {
      const auto i = static_cast<std::size_t>(m * K + k);
      ops.a[i] = load_element(desc.a.dtype(), a, i) - za;
    }
  }
  const bool kn = desc.b_layout == MatrixLayout::kn;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t k = 0; k < K; ++k) {
      const auto src = static_cast<std::size_t>(kn ? k * N + n : n * K + k);
      const std::int32_t zb = desc.b.zero_point(b_pair(desc.b, n, k, K));
      ops.b[static_cast<std::size_t>(n * K + k)] = load_element(desc.b.dtype(), b, src) - zb;
    }
  return ops;
}

std::int64_t dot(const CenteredOperands& ops, std::int64_t k, std::int64_t m, std::int64_t n,
                 std::int64_t k0, std::int64_t k1) {
  std::int64_t acc = 0;
  const std::int32_t* a = ops.a.data() + m * k;
  const std::int32_t* b = ops.b.data() + n * k;
  for (std::int64_t i = k0; i < k1; ++i)
    acc += static_cast<std::int64_t>(a[i]) * static_cast<std::int64_t>(b[i]);
  return acc;
}

std::int32_t checked_int32(const std::string& op, std::int64_t v, std::int64_t m, std::int64_t n,
                           const std::string& context) {
  if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
    fail(ErrorCode::overflow, op,
         "C[" + std::to_string(m) + ", " + std::to_string(n) + "]" + context + " = " +
             std::to_string(v) +
             " does not fit int32; expected a result in [-2147483648, "
             "2147483647] (reduce K or the operand ranges; int32_safe_k gives a safe K)");
  return static_cast<std::int32_t>(v);
}

}  // namespace detail

namespace detail {

// |qmin - z| and |qmax - z| are convex in z, so the extremes of the zero points decide (kept by
// the params: every matmul call of a backend asks this, and a scan of 8192 per-channel zero
// points cost about 5 us).
std::int64_t max_centered_magnitude(const QuantizationParams& p) {
  if (p.zero_points().empty()) return 0;
  const std::int64_t lo = p.min_zero_point(), hi = p.max_zero_point();
  const auto& tr = traits(p.dtype());
  const std::int64_t qmin = tr.qmin, qmax = tr.qmax;
  return std::max(
      {std::llabs(qmin - lo), std::llabs(qmin - hi), std::llabs(qmax - lo), std::llabs(qmax - hi)});
}

}  // namespace detail

std::int64_t int32_safe_k(const MatmulDesc& desc) {
  // A run may bring any zero point of A's dtype (MatmulDesc::a_params_at_run).
  if (desc.a_params_at_run) return int32_safe_k(a_params_at_run_bound(desc));
  for (const auto* p : {&desc.a, &desc.b})
    if (p->scheme().mapping == Mapping::logarithmic)
      detail::fail(ErrorCode::invalid_argument, "int32_safe_k",
                   "operand " + p->to_string() +
                       " uses the logarithmic mapping; expected "
                       "affine or symmetric");
  // At least 1, so that the division below is defined whatever the params.
  const std::int64_t worst = std::max<std::int64_t>(
      1, detail::max_centered_magnitude(desc.a) * detail::max_centered_magnitude(desc.b));
  return std::numeric_limits<std::int32_t>::max() / worst;
}

}  // namespace qforge::reference
