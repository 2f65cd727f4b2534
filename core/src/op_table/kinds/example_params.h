// What every kind's example grid (OpInfo::examples) is built from: one scale, params of each
// granularity, and short dtype names for the labels.
#pragma once

#include <cstdint>
#include <string>

#include "qforge/params.h"

namespace qforge::op_table_detail {

// Elementwise examples run on a [rows, cols] tensor; cols is a multiple of the default block.
inline constexpr std::int64_t kExampleRows = 64;
inline constexpr std::int64_t kExampleCols = 256;
// The matmul and linear shape: a mid-size GEMM whose K is a multiple of every block size used.
inline constexpr std::int64_t kExampleM = 64, kExampleN = 128, kExampleK = 256;

// "s8", "u4", "b1", ...
std::string dtype_short(DType t);

// Params of one granularity for a [rows, cols] tensor whose channels run along `channel_axis`.
// Signed types use the symmetric mapping (weights), unsigned ones affine with a mid zero point
// (activations), as the usual u8 x s8 pairing does.
QuantizationParams example_params(DType t, Granularity g, std::int64_t rows, std::int64_t cols,
                                  int channel_axis);

}  // namespace qforge::op_table_detail
