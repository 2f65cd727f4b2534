#include "matmul_operands.h"

#include <algorithm>
#include <functional>

#include "support_rules.h"

namespace qforge::onednn {
namespace {

// One zero point per tensor, or the per-channel list; equal entries count as one.
ZeroPointSplit split(const QuantizationParams& p, std::int32_t shift) {
  ZeroPointSplit s;
  const auto zps = p.zero_points();
  if (zps.empty()) return s;
  const bool uniform = p.min_zero_point() == p.max_zero_point();  // kept by the params
  if (uniform) {
    s.whole = zps[0] - shift;
  } else {
    s.residual.reserve(zps.size());
    for (const std::int32_t z : zps) s.residual.push_back(z - shift);
  }
  return s;
}

// Element i of packed 4-bit or binary storage, as ONNX/qforge pack it (dtype.h).
inline std::int32_t unpack(DType t, const std::uint8_t* p, std::int64_t i) {
  switch (t) {
    case DType::int4: {
      const std::int32_t nib = (i & 1) ? p[i >> 1] >> 4 : p[i >> 1] & 0xF;
      return (nib ^ 8) - 8;
    }
    case DType::uint4: return (i & 1) ? p[i >> 1] >> 4 : p[i >> 1] & 0xF;
    case DType::binary: return ((p[i >> 3] >> (i & 7)) & 1) ? 1 : -1;
    default: return 0;  // 8-bit types never come here
  }
}

}  // namespace

OperandPlan plan_operands(const MatmulDesc& d) {
  OperandPlan plan;
  plan.a_unsigned = a_is_unsigned(d.a.dtype());
  plan.a_as_is = d.a.dtype() == DType::int8 || d.a.dtype() == DType::uint8;
  plan.b_as_is = d.b.dtype() == DType::int8;
  plan.za = split(d.a, 0);
  plan.zb = split(d.b, d.b.dtype() == DType::uint8 ? 128 : 0);
  return plan;
}

const void* widen_a(const MatmulDesc& d, const OperandPlan& plan, const void* a,
                    std::vector<std::uint8_t>& scratch) {
  if (plan.a_as_is) return a;
  const std::int64_t count = d.m * d.k;
  scratch.resize(static_cast<std::size_t>(count));
  const auto* p = static_cast<const std::uint8_t*>(a);
  for (std::int64_t i = 0; i < count; ++i)
    scratch[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(unpack(d.a.dtype(), p, i));
  return scratch.data();
}

const std::int8_t* widen_b(const MatmulDesc& d, const OperandPlan& plan, const void* b,
                           std::vector<std::int8_t>& scratch) {
  if (plan.b_as_is) return static_cast<const std::int8_t*>(b);
  const std::int64_t count = d.n * d.k;
  scratch.resize(static_cast<std::size_t>(count));
  const auto* p = static_cast<const std::uint8_t*>(b);
  if (d.b.dtype() == DType::uint8) {
    for (std::int64_t i = 0; i < count; ++i)  // b - 128 as s8
      scratch[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(p[i] ^ 0x80u);
  } else {
    for (std::int64_t i = 0; i < count; ++i)
      scratch[static_cast<std::size_t>(i)] = static_cast<std::int8_t>(unpack(d.b.dtype(), p, i));
  }
  return scratch.data();
}

std::vector<std::int64_t> row_sums(const void* a8, bool a_unsigned, std::int64_t m,
                                   std::int64_t k) {
  std::vector<std::int64_t> sums(static_cast<std::size_t>(m), 0);
  for (std::int64_t r = 0; r < m; ++r) {
    std::int64_t s = 0;
    if (a_unsigned) {
      const auto* row = static_cast<const std::uint8_t*>(a8) + r * k;
      for (std::int64_t i = 0; i < k; ++i) s += row[i];
    } else {
      const auto* row = static_cast<const std::int8_t*>(a8) + r * k;
      for (std::int64_t i = 0; i < k; ++i) s += row[i];
    }
    sums[static_cast<std::size_t>(r)] = s;
  }
  return sums;
}

std::vector<std::int64_t> column_sums(const std::int8_t* b8, MatrixLayout layout, std::int64_t n,
                                      std::int64_t k) {
  std::vector<std::int64_t> sums(static_cast<std::size_t>(n), 0);
  if (layout == MatrixLayout::nk) {
    for (std::int64_t c = 0; c < n; ++c) {
      std::int64_t s = 0;
      for (std::int64_t i = 0; i < k; ++i) s += b8[c * k + i];
      sums[static_cast<std::size_t>(c)] = s;
    }
  } else {
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t c = 0; c < n; ++c) sums[static_cast<std::size_t>(c)] += b8[i * n + c];
  }
  return sums;
}

}  // namespace qforge::onednn
