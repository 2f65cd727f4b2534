// ONNX MatMulInteger: C[m, n] = sum_k (A[m, k] - za) * (B[k, n] - zb), exact.
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {

void matmul_integer(const MatmulDesc& desc, const void* a, const void* b, std::int32_t* c) {
  const std::string op = "matmul_integer";
  detail::validate_matmul(op, desc, /*allow_block_b=*/true);
  // validate_matmul bounded every operand (checked_size.h): these products are exact.
  detail::require_data(op, "a", a, desc.m * desc.k);
  detail::require_data(op, "b", b, desc.n * desc.k);
  detail::require_data(op, "c", c, desc.m * desc.n);
  const detail::CenteredOperands ops = detail::center_operands(desc, a, b);
  // Accumulating in int64 keeps the sum exact for any K this process can hold; only the final
  // value must fit int32, and when it does not the caller hears about it.
  for (std::int64_t m = 0; m < desc.m; ++m)
    for (std::int64_t n = 0; n < desc.n; ++n)
      c[m * desc.n + n] =
          detail::checked_int32(op, detail::dot(ops, desc.k, m, n, 0, desc.k), m, n);
}

}  // namespace qforge::reference
