// Fused dequantizing matmul: Y[m, n] = float(C[m, n]) * sa * sb + bias[n].
//
// Evaluation order (float32, no fused multiply-add), the one backends are measured against:
//   per-tensor / per-channel B:  y = ((float(C) * sa[m]) * sb[n]) + bias[n]
//   block-wise B:                acc = 0; for each block j along K in order:
//                                  acc = acc + ((float(C_j) * sa[m]) * sb[n, j])
//                                y = acc + bias[n]
// C (or each block's C_j) is the exact integer sum; it must fit int32, as it does in every
// backend that accumulates in int32.
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {

void matmul_dequant(const MatmulDesc& desc, const void* a, const void* b, const float* bias,
                    void* y) {
  const std::string op = "matmul_dequant";
  if (desc.a_params_at_run)
    detail::fail(ErrorCode::invalid_argument, op,
                 "a_params_at_run is set, but this call takes A's params from the descriptor; "
                 "expected a plan (or run_reference) given a_scale and a_zero_point, or the flag "
                 "cleared");
  detail::validate_matmul(op, desc, /*allow_block_b=*/true);
  // validate_matmul bounded every operand (checked_size.h): these products are exact.
  detail::require_data(op, "a", a, desc.m * desc.k);
  detail::require_data(op, "b", b, desc.n * desc.k);
  detail::require_data(op, "y", y, desc.m * desc.n);
  if (desc.has_bias) detail::require_data(op, "bias (has_bias is set)", bias, desc.n);
  const detail::CenteredOperands ops = detail::center_operands(desc, a, b);
  const bool blocked = desc.b.scheme().granularity == Granularity::block;
  const std::int64_t bs = blocked ? desc.b.scheme().block_size : 0;
  for (std::int64_t m = 0; m < desc.m; ++m) {
    const float sa = desc.a.scale(detail::a_pair(desc.a, m));
    for (std::int64_t n = 0; n < desc.n; ++n) {
      float v = 0.0f;
      if (!blocked) {
        const std::int32_t c =
            detail::checked_int32(op, detail::dot(ops, desc.k, m, n, 0, desc.k), m, n);
        v = (static_cast<float>(c) * sa) * desc.b.scale(detail::b_pair(desc.b, n, 0, desc.k));
      } else {
        for (std::int64_t k0 = 0; k0 < desc.k; k0 += bs) {
          const std::int64_t k1 = std::min(k0 + bs, desc.k);
          const std::int32_t c =
              detail::checked_int32(op, detail::dot(ops, desc.k, m, n, k0, k1), m, n,
                                    " (block " + std::to_string(k0 / bs) + ")");
          const float sb = desc.b.scale(detail::b_pair(desc.b, n, k0, desc.k));
          v = v + (static_cast<float>(c) * sa) * sb;
        }
      }
      if (desc.has_bias) v = v + bias[n];
      store_float(desc.out_type, y, static_cast<std::size_t>(m * desc.n + n), v);
    }
  }
}

}  // namespace qforge::reference
