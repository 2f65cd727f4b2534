#include "descriptor_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <variant>

#include "gemm_kernels.h"
#include "qforge/checked_size.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86 {
namespace {

[[noreturn]] void reject(const std::string& what) { throw Error(ErrorCode::unsupported, what); }

// The largest |q - z| over the dtype's full range and every zero point (reference::int32_safe_k):
// |q - z| is convex in z, so the params' smallest and largest zero points decide (kept by the
// params, no scan per call).
std::int64_t max_centered(const QuantizationParams& p) {
  if (p.zero_points().empty()) return 0;
  const auto& tr = traits(p.dtype());
  const std::int64_t lo = p.min_zero_point(), hi = p.max_zero_point();
  return std::max({std::llabs(tr.qmin - lo), std::llabs(tr.qmin - hi), std::llabs(tr.qmax - lo),
                   std::llabs(tr.qmax - hi)});
}

// What the kernels need of A beyond the reference's checks.
void check_a_dtype(const MatmulDesc& d) {
  if (d.a.dtype() != DType::int8 && d.a.dtype() != DType::uint8)
    reject("A dtype " + std::string(name(d.a.dtype())) +
           "; cpu_x86 expects int8 or uint8 activations (cpu_scalar runs the others)");
}

// What the kernels need of B beyond the reference's checks.
void check_b_dtype(const MatmulDesc& d) {
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

void check_out_type(const MatmulDesc& d, OpKind op) {
  if (op == OpKind::matmul_dequant && d.out_type != FloatType::f32)
    reject(std::string("out_type ") + name(d.out_type) + "; cpu_x86 writes float32 only");
}

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// The packed forms' sizes (packing.cpp) within qforge's size limit, so that supports() never
// accepts what packing then cannot allocate. The descriptor check bounded M, N, K and their
// products, so the padded extents below are exact; checked_* names what does not fit.
void check_packed_b_size(const MatmulDesc& d) {
  const std::int64_t blocks =
      d.b.scheme().granularity == Granularity::block
          ? std::max<std::int64_t>(1, (d.k + d.b.scheme().block_size - 1) / d.b.scheme().block_size)
          : 1;
  const std::int64_t pn = round_up(d.n, kPanel);
  checked_bytes(
      "packed B [N padded, K padded]",
      checked_element_count("packed B [N padded, K padded]", {pn, round_up(d.k, kDepthAlign)}), 1);
  checked_bytes("packed B sums [blocks, N padded]",
                checked_element_count("packed B sums [blocks, N padded]", {blocks, pn}),
                sizeof(std::int32_t));
}

void check_packed_a_size(const MatmulDesc& d) {
  const std::int64_t rows = round_up(std::max<std::int64_t>(d.m, 1), kRowAlign);
  checked_bytes("packed A [M padded, K padded]",
                checked_element_count("packed A [M padded, K padded]",
                                      {rows, round_up(d.k, kDepthAlign) + 64}),
                1);
}

float max_scale(const QuantizationParams& p) {
  return p.scales().empty() ? 0.0f : *std::max_element(p.scales().begin(), p.scales().end());
}

// The kernels' own rules for a matmul the reference accepts.
void check_matmul(const MatmulDesc& d, OpKind op) {
  check_a_dtype(d);
  check_b_dtype(d);
  check_k_bound(d, max_centered(d.b));
  check_out_type(d, op);
  check_packed_b_size(d);
  check_packed_a_size(d);
}

// The kernels' rules for a convolution the reference accepts (conv.h): int32 sums, so the
// reduction within reference::int32_safe_reduction, and GEMM operands within the size limit.
void check_conv(const ConvDesc& d) {
  const std::int64_t safe = reference::int32_safe_reduction(d);
  if (d.reduction() > safe)
    reject("reduction C / groups * KH * KW = " + std::to_string(d.reduction()) +
           " exceeds the int32-safe length " + std::to_string(safe) +
           " for these dtypes and zero points (reference::int32_safe_reduction); cpu_x86 "
           "accumulates in int32 and expects at most " +
           std::to_string(safe) + " (cpu_scalar accumulates in int64)");
  // One group's GEMM: A is the im2col matrix of one image, or the whole batch for a 1x1
  // convolution that reads X as A; B the group's packed weights.
  const std::int64_t pixels = d.out_h() * d.out_w();
  const MatmulDesc m{.m = d.n * pixels,
                     .n = d.out_channels / d.groups,
                     .k = d.reduction(),
                     .a = d.x_params,
                     .b = QuantizationParams::per_tensor_symmetric(d.w_params.dtype(), 1.0f),
                     .b_layout = MatrixLayout::nk,
                     .y = std::nullopt};
  check_packed_b_size(m);
  check_packed_a_size(m);
  checked_bytes(
      "im2col A [OH * OW, C / groups * KH * KW]",
      checked_element_count("im2col A [OH * OW, C / groups * KH * KW]", {pixels, d.reduction()}),
      1);
}

}  // namespace

PackedFacts packed_facts(const MatmulDesc& d) { return {max_centered(d.b), max_scale(d.b)}; }

void check_packed_call(OpKind op, const MatmulDesc& d, const MatmulDesc& packed,
                       const PackedFacts& facts) {
  if (d.n != packed.n || d.k != packed.k || d.b_layout != packed.b_layout || !(d.b == packed.b))
    throw Error(ErrorCode::shape_mismatch,
                "cpu_x86: packed weights for n=" + std::to_string(packed.n) +
                    " k=" + std::to_string(packed.k) + " " + packed.b.to_string() +
                    " used with n=" + std::to_string(d.n) + " k=" + std::to_string(d.k) + " " +
                    d.b.to_string() +
                    "; expected the same B shape, layout and params it was packed for");
  try {
    reference::check_matmul_a(op, d);
    if (op == OpKind::qlinear_matmul) reference::check_qlinear_output(d, facts.max_sb);
  } catch (const Error& e) {
    throw Error(ErrorCode::unsupported, "cpu_x86: " + std::string(e.what()));
  }
  try {
    check_a_dtype(d);
    check_k_bound(d, facts.max_b_centered);
    check_out_type(d, op);
    check_packed_a_size(d);
  } catch (const Error& e) {
    throw Error(ErrorCode::unsupported, "cpu_x86: " + std::string(to_string(op)) + ": " + e.what());
  }
}

template <class Desc>
void check_descriptor(OpKind op, const Desc& desc) {
  try {
    reference::check_descriptor(op, desc);
  } catch (const Error& e) {
    throw Error(ErrorCode::unsupported, "cpu_x86: " + std::string(e.what()));
  }
  // Every op the reference accepts runs (vector kernels or the reference).
  try {
    if constexpr (std::is_same_v<Desc, MatmulDesc>) {
      // Float activations: no int32 bound; the reference's checks are the kernel's.
      if (op != OpKind::matmul_weight_only) check_matmul(desc, op);
    }
    if constexpr (std::is_same_v<Desc, ConvDesc>) check_conv(desc);
    // The vector forward packs W as the B of a matmul.
    if constexpr (std::is_same_v<Desc, LinearDesc>) {
      if (op == OpKind::linear_forward && vector_linear(desc)) {
        const MatmulDesc m{.m = desc.m,
                           .n = desc.n,
                           .k = desc.k,
                           .a = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                           .b = desc.w,
                           .b_layout = MatrixLayout::nk,
                           .y = std::nullopt};
        check_packed_b_size(m);
        check_packed_a_size(m);
      }
    }
  } catch (const Error& e) {
    throw Error(ErrorCode::unsupported, "cpu_x86: " + std::string(to_string(op)) + ": " + e.what());
  }
}
template void check_descriptor(OpKind, const QuantizeDesc&);
template void check_descriptor(OpKind, const RequantizeDesc&);
template void check_descriptor(OpKind, const MatmulDesc&);
template void check_descriptor(OpKind, const DynamicQuantizeDesc&);
template void check_descriptor(OpKind, const LinearDesc&);
template void check_descriptor(OpKind, const ConvDesc&);

void check_descriptor(const OpDesc& op) {
  std::visit([&](const auto& d) { check_descriptor(op.op, d); }, op.desc);
}

bool vector_quantize(const QuantizeDesc& d) {
  const DType t = d.params.dtype();
  return (t == DType::int8 || t == DType::uint8) &&
         d.params.scheme().mapping != Mapping::logarithmic;
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
