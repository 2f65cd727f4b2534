// How a MatmulDesc's operands reach dnnl::matmul.
//
// oneDNN 2.6's int8 matmul takes u8 or s8 activations, s8 weights, and zero points only per
// tensor (mask 0; a per-row source zero point is rejected and weights zero points must be
// common). So:
//   - A: uint8/uint4 become u8, int8/int4/binary s8 (4-bit and binary widened, one byte each);
//   - B: int8 as is; uint8 shifted to s8 (b - 128, with zb - 128: (b - zb) is unchanged);
//     int4/uint4/binary widened to s8;
//   - zero points: the per-tensor part goes to oneDNN as runtime zero points; per-row za and
//     per-column zb that differ along the row/column stay behind as residuals, which the
//     plugin compensates exactly (epilogue.h) with row sums of A and column sums of B.
#pragma once

#include <cstdint>
#include <vector>

#include "qforge/op_desc.h"

namespace qforge::onednn {

struct ZeroPointSplit {
  std::int32_t whole = 0;              // per tensor, handed to oneDNN (0 = none)
  std::vector<std::int32_t> residual;  // per row / per column, compensated; empty = none
};

struct OperandPlan {
  bool a_unsigned = false;  // oneDNN's A type: u8 (true) or s8
  bool a_as_is = false;     // A is int8/uint8: oneDNN reads the caller's buffer
  bool b_as_is = false;     // B is int8: oneDNN reads the caller's buffer
  ZeroPointSplit za;
  ZeroPointSplit zb;  // in the shifted s8 domain of B
  bool compensated() const { return !za.residual.empty() || !zb.residual.empty(); }
};

// The plan for a descriptor check_support() accepted.
OperandPlan plan_operands(const MatmulDesc& d);

// A as the 8-bit [M, K] values oneDNN reads: the caller's buffer, or `scratch` filled.
const void* widen_a(const MatmulDesc& d, const OperandPlan& plan, const void* a,
                    std::vector<std::uint8_t>& scratch);
// B as s8 in its own layout (kn or nk): the caller's buffer, or `scratch` filled.
const std::int8_t* widen_b(const MatmulDesc& d, const OperandPlan& plan, const void* b,
                           std::vector<std::int8_t>& scratch);

// Exact sums for the compensation: sum over k of A[m, k] (A as widen_a gives it) and of
// B[k, n] (B as widen_b gives it, in `layout`).
std::vector<std::int64_t> row_sums(const void* a8, bool a_unsigned, std::int64_t m, std::int64_t k);
std::vector<std::int64_t> column_sums(const std::int8_t* b8, MatrixLayout layout, std::int64_t n,
                                      std::int64_t k);

}  // namespace qforge::onednn
