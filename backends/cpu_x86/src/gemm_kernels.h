// The int8 GEMM microkernels of cpu_x86 and the one packed layout they all read.
//
// Packed B (weights), made once by pack_weights: N is split into panels of 16 columns; each
// panel stores K (zero-padded to a multiple of 64, the AMX tile depth) as groups of 4
// consecutive k, and each group as 16 columns x 4 bytes:
//     panel p, group g, column j, byte t  =  B_s8[k = 4g + t][n = 16p + j]
// This is the "c4" layout of vpdpbusd (one int32 lane = four k of one column) and, 16 groups at
// a time, exactly an AMX B tile (16 rows of 64 bytes). Values are signed 8-bit ("s8 domain"):
// uint8 weights are stored as b - 128 with the zero point shifted to match, int4/uint4 widened.
//
// Packed A (activations), made per call: M rows (padded with zero rows to a multiple of 16 for
// AMX) of K bytes zero-padded to the same multiple of 64, in the domain the kernel wants: u8
// for vpdpbusd/tdpbusd/vpmaddwd (int8 inputs shifted by +128), s8 for the AVX2 vpmaddubsw
// sign idiom. Zero padding adds nothing to any dot product.
//
// Every kernel computes raw dot products of the packed bytes,  D[m][n] = sum_k A_d[m,k]*B_s8[k,n],
// exactly, in wrapping int32 arithmetic; the epilogue (gemm_epilogue.h) then adds the zero-point
// compensation. Wrapping is harmless: the true C fits int32 (K <= int32_safe_k) and every step
// is arithmetic modulo 2^32.
#pragma once

#include <cstdint>

namespace qforge::cpu_x86 {

inline constexpr int kPanel = 16;       // columns per B panel
inline constexpr int kGroup = 4;        // k per group (one int32 lane)
inline constexpr int kDepthAlign = 64;  // K padding (AMX tile depth)
inline constexpr int kRowAlign = 16;    // packed-A row padding (AMX tile rows)

// One tile call: rows [0, mr) of A against `panels` consecutive panels, over `groups` k groups.
struct TileArgs {
  const std::uint8_t* a;      // packed A at the tile's first row and first k
  std::int64_t lda;           // bytes between packed A rows
  const std::int8_t* b;       // first panel, at the same first k (byte offset 16 * k)
  std::int64_t panel_stride;  // bytes between panels
  std::int64_t groups;        // k groups to reduce (AMX: a multiple of 16)
  int mr;                     // rows, 1 <= mr <= the kernel's call_rows, else max_rows
  int panels;                 // panels, 1 <= panels <= the kernel's limit
  std::int32_t* d;            // raw dots, row-major [mr][ldd]
  std::int64_t ldd;
  // Bytes ahead of the current k on each B panel to prefetch (0: none). The GEMV kernels
  // (AVX-512 VNNI and AMX) honour it: they stream weights from memory, and one core's
  // hardware prefetchers alone do not keep enough lines in flight for its share of the
  // bandwidth.
  std::int64_t b_prefetch = 0;
};

using TileFn = void (*)(const TileArgs&);

// Limits of each kernel's tile, in rows and panels (the GEMM drivers split to fit).
// call_rows, when set, is the number of rows the driver passes per tile call (at most
// kMaxCallRows): the kernel walks them max_rows at a time over the same panels itself, so the
// driver's per-tile work (offsets, compensation, the epilogue call) is paid once per call_rows.
struct TileShape {
  int max_rows;
  int max_panels;
  int call_rows = 0;
};
inline constexpr int kMaxCallRows = 32;  // the drivers' int32 tile is [32][64]

// AVX2: exact vpmaddwd on int16-widened bytes (A in u8 domain).
void tile_avx2_maddwd(const TileArgs& t);
inline constexpr TileShape kAvx2MaddwdShape{2, 1, 16};
// AVX2: vpmaddubsw sign idiom (A in s8 domain); exact only when no stored B value is -128.
void tile_avx2_maddubs(const TileArgs& t);
inline constexpr TileShape kAvx2MaddubsShape{4, 1, 16};
// AVX-VNNI: vpdpbusd on ymm (A in u8 domain).
void tile_avxvnni(const TileArgs& t);
inline constexpr TileShape kAvxVnniShape{6, 1};
// AVX-512 VNNI: vpdpbusd on zmm (A in u8 domain). The GEMM tile is 6 rows x 4 panels, walked
// over up to 32 rows per call in K blocks that keep B's block in L1; the GEMV tiles (M <= 16)
// trade panels for rows: up to 16 rows x 1 panel.
void tile_avx512vnni(const TileArgs& t);
inline constexpr TileShape kAvx512VnniShape{6, 4, kMaxCallRows};
void tile_avx512vnni_gemv(const TileArgs& t);
inline constexpr TileShape kAvx512VnniGemvShape{16, 4};
// The GEMV tiles: rows 1-4 take 4 panels, 5-8 take 2, 9-16 take 1 (at most 16 accumulators).
constexpr int gemv_panels_for_rows(int rows) { return rows <= 4 ? 4 : rows <= 8 ? 2 : 1; }
// AMX-INT8: tdpbusd, 16x16 int32 tiles, up to 2x2 of them (A in u8 domain, groups % 16 == 0,
// rows padded to 16). mr rounds up to 16 or 32 internally: packed A must hold those rows.
// Call between amx_begin() and amx_end() on the same thread (tile configuration).
void tile_amx(const TileArgs& t);
void amx_begin();
void amx_end();
inline constexpr TileShape kAmxShape{32, 2};

// Block-wise weights with a float32 result (matmul_dequant): the whole computation of
// reference.h in registers, per block j of `block_groups` groups:
//     C_j = D_j - za*colsum_j + zb_j*(len_j*za - rowsum_j)      (exact, wrapping int32)
//     acc = acc + ((float(C_j) * sa) * sb_j)                      (float32, in this order)
// so no tile of partial sums goes through memory between blocks. `out` receives acc.
struct BlockTileArgs {
  const std::uint8_t* a;  // packed A at the tile's first row, k = 0
  std::int64_t lda;
  const std::int8_t* b;  // first panel, k = 0
  std::int64_t panel_stride;
  bool nibbles;             // B groups are 32 bytes of nibbles (packing.h), else 64 bytes
  int mr, panels;           // panels: 1, 2 or 4 (rows <= 6; rows * panels <= 12)
  std::int64_t k;           // K
  std::int64_t block_size;  // multiple of 4
  std::int64_t blocks;
  const std::int32_t* rowsum;  // row r, block j: rowsum[r * blocks + j]
  const std::int32_t* za;      // per row
  const float* sa;             // per row
  // Panel p of the tile, block j, column c < 16: colsum[p * panel_meta_stride + j * 16 + c]
  const std::int32_t* colsum;
  const std::int32_t* zb;
  const float* sb;
  std::int64_t panel_meta_stride;  // blocks * 16
  float* out;                      // [mr][ldo]
  std::int64_t ldo;
};
void block_tile_avx512vnni(const BlockTileArgs& t);

}  // namespace qforge::cpu_x86
