// The GEMM epilogue (AVX2 translation unit): turns a tile of raw dot products into the op's
// output while it is still in L1, so no op makes a second pass over C.
//
// Zero-point compensation, with A_d / B_s8 the packed operands and za, zb their zero points in
// the same domains (packing.h):
//     C = sum (A_d - za)(B_s8 - zb) = D - zb*rowsum(A_d) - za*colsum(B_s8) + k*za*zb
// evaluated in wrapping int32 (exact, see gemm_kernels.h). Then, per op:
//     matmul_integer   C
//     matmul_dequant   ((float(C) * sa) * sb) + bias        (reference.h's order, no FMA)
//     block-wise B     acc = acc + ((float(C_j) * sa) * sb_j) per block j, then acc + bias
//     qlinear_matmul   sat(rne(float(C) * ((sa * sb) / sy)) + zy)
// Tiles are row-major int32 with `cols` a multiple of 8 readable in every row (panels are
// padded); stores write only the `cols` valid columns.
#pragma once

#include <cstdint>

#include "quantize_kernels.h"

namespace qforge::cpu_x86 {

struct Compensation {
  std::int32_t k;              // depth of the sum (K, or the block's length)
  const std::int32_t* rowsum;  // tile row r uses rowsum[r * rowsum_stride]
  std::int64_t rowsum_stride;
  const std::int32_t* za;      // per tile row
  const std::int32_t* colsum;  // per tile column (padded)
  const std::int32_t* zb;      // per tile column (padded)
};

struct TileRef {
  std::int32_t* d;  // [rows][ldd]
  std::int64_t ldd;
  int rows;
  int cols;         // valid columns
  int padded_cols;  // multiple of 8, >= cols
};

void compensate_avx2(const TileRef& t, const Compensation& comp);
void store_int32_avx2(const TileRef& t, std::int32_t* out, std::int64_t ldo);
// sa per tile row; sb and bias (null: none) per tile column, padded.
// compensate_avx2 and store_dequant_avx2 in one pass over the tile (the tile is read once and
// never written back). `za_colsum` (per tile column, or null) holds za * colsum when every row
// has the same za; `zb_zero` says every zb of the tile is 0 (symmetric B), dropping that term.
// Integer arithmetic is modulo 2^32 like compensate_avx2's, so the sum is exact whenever the
// true result fits int32.
void store_dequant_compensated_avx2(const TileRef& t, const Compensation& comp,
                                    const std::int32_t* za_colsum, bool zb_zero, const float* sa,
                                    const float* sb, const float* bias, float* out,
                                    std::int64_t ldo);
// The same with AVX-512 (epilogue_avx512.cpp, present when the AVX-512 VNNI tier is compiled:
// QFORGE_CPU_X86_HAVE_AVX512VNNI). It reads whole 16-column groups of the padded tile columns.
void store_dequant_compensated_avx512(const TileRef& t, const Compensation& comp,
                                      const std::int32_t* za_colsum, bool zb_zero, const float* sa,
                                      const float* sb, const float* bias, float* out,
                                      std::int64_t ldo);
void accumulate_dequant_avx2(const TileRef& t, const float* sa, const float* sb, float* acc,
                             std::int64_t ldacc);
void accumulate_int32_avx2(const TileRef& t, std::int32_t* acc, std::int64_t ldacc);
// out = acc + bias (bias null: out = acc), valid columns only.
void store_f32_avx2(const float* acc, std::int64_t ldacc, int rows, int cols, const float* bias,
                    float* out, std::int64_t ldo);
void store_i32_avx2(const std::int32_t* acc, std::int64_t ldacc, int rows, int cols,
                    std::int32_t* out, std::int64_t ldo);
// Float-multiplier requantization with m = (sa[r] * sb[c]) / sy.
void store_requant_float_avx2(const TileRef& t, const float* sa, const float* sb, float sy,
                              std::int32_t zy, QuantRange range, void* out, std::int64_t ldo);
// The same with the multipliers computed once per column (padded to a multiple of 8), for a
// per-tensor A: every row's (sa * sb[c]) / sy is then the same float, and the tile saves a
// multiply and a divide per 8 outputs.
void store_requant_columns_avx2(const TileRef& t, const float* multiplier, std::int32_t zy,
                                QuantRange range, void* out, std::int64_t ldo);
// compensate_avx2, the int32 bias (null: none) and store_requant_columns_avx2 in one pass over
// the tile. False when some C + bias left int32 (its codes are then wrong: the caller reruns
// the reference, which reports the position); the bias is padded like the multipliers.
bool store_requant_columns_compensated_avx2(const TileRef& t, const Compensation& comp,
                                            const std::int32_t* za_colsum, bool zb_zero,
                                            const std::int32_t* bias, const float* multiplier,
                                            std::int32_t zy, QuantRange range, void* out,
                                            std::int64_t ldo);
// The same with AVX-512 (epilogue_avx512.cpp, with store_dequant_compensated_avx512); it reads
// whole 16-column groups of the padded tile columns (multipliers and bias padded to them).
bool store_requant_columns_compensated_avx512(const TileRef& t, const Compensation& comp,
                                              const std::int32_t* za_colsum, bool zb_zero,
                                              const std::int32_t* bias, const float* multiplier,
                                              std::int32_t zy, QuantRange range, void* out,
                                              std::int64_t ldo);
// C + bias per column over the tile's padded columns, in wrapping int32; false when some sum
// left int32.
bool add_bias_i32_avx2(const TileRef& t, const std::int32_t* bias);
// Fixed-point requantization (reference::multiply_by_quantized_multiplier) with per-column
// multipliers in [0, 2^31), left shifts in [0, 32] and right shifts in [0, 31] (padded to a
// multiple of 8), then + zy and clamped to [range.qmin, range.qmax].
void store_requant_fixed_avx2(const TileRef& t, const std::int32_t* multiplier,
                              const std::int32_t* left, const std::int32_t* right, std::int32_t zy,
                              QuantRange range, void* out, std::int64_t ldo);

}  // namespace qforge::cpu_x86
