// What the plugin computes after oneDNN's int32 matmul, with the reference's arithmetic:
// zero-point compensation, the dequantizing epilogue, the requantizing epilogue of
// QLinearMatMul, and the standalone requantize op.
//
// oneDNN could requantize itself (s8/u8 dst with output scales and a dst zero point), but it
// rounds after adding the zero point (rne(c * m + zy)) where the reference rounds first
// (rne(c * m) + zy): ties and inexact sums differ (docs/ONEDNN.md). So int32 comes out of
// oneDNN and these loops finish it; they vectorise over a row and run rows on OpenMP threads.
#pragma once

#include <cstdint>
#include <vector>

#include "qforge/op_desc.h"

namespace qforge::onednn {

// C = (A - za)(B - zb) from oneDNN's D = (A - za_whole)(B - zb_whole) when za varies per row
// and/or zb per column (matmul_operands.h):
//   C = D - zb[n] * row_term[m] - za[m] * col_term[n] + K * za[m] * zb[n]
// with za/zb the residual zero points (0 where empty), row_term = sum_k (A - za_whole) and
// col_term = sum_k (B - zb_whole). Evaluated modulo 2^32: oneDNN's int32 sums wrap, and the
// true C fits int32 (K <= int32_safe_k), so the result is exact.
struct Compensation {
  std::int64_t k = 0;
  std::vector<std::int32_t> za;        // per row, empty = none
  std::vector<std::int32_t> zb;        // per column, empty = none
  std::vector<std::int64_t> row_term;  // needed when zb is set
  std::vector<std::int64_t> col_term;  // needed when za is set
};
void compensate(std::int32_t* c, std::int64_t m, std::int64_t n, const Compensation& comp,
                int threads);

// y[m, n] = ((float(C) * sa[m]) * sb[n]) + bias[n], reference::matmul_dequant's order, written
// as out_type (float16/bfloat16 rounded to nearest even as store_float does).
void dequant_epilogue(const std::int32_t* c, const MatmulDesc& d, const float* bias, void* y,
                      int threads);

// y = sat(rne(float(C) * ((sa * sb) / sy)) + zy), or the fixed-point mode of the same multiplier
// (reference::qlinear_matmul).
void requant_epilogue(const std::int32_t* c, const MatmulDesc& d, void* y, int threads);

// reference::requantize.
void requantize_loop(const RequantizeDesc& d, const std::int32_t* c, void* y, int threads);

}  // namespace qforge::onednn
