// The per-call packing of activations (AVX2 translation unit): one row of A converted into the
// kernel's domain (byte ^ flip) with its per-block sums in that domain (u8, or s8 when
// s8_domain), which the epilogue's zero-point compensation needs.
#pragma once

#include <cstdint>

namespace qforge::cpu_x86 {

// len bytes of `in` -> `out`; rowsum[j] = sum of block j (blocks of `block` bytes, the last
// one shorter; `blocks` >= 1; with len == 0 every sum is 0).
void pack_row_avx2(const std::uint8_t* in, std::uint8_t* out, std::int64_t len, std::uint8_t flip,
                   bool s8_domain, std::int64_t block, std::int64_t blocks, std::int32_t* rowsum);

// One full panel (16 columns) of 8-bit weights into the byte panel layout (gemm_kernels.h: per
// group of 4 k, 16 columns x 4 bytes), vectorised, for k in [0, k_done); returns k_done (K
// rounded down to 16 for nk, to 4 for kn; the caller packs the rest). Bytes are stored as
// byte ^ flip (0x80 moves uint8 to the s8 domain). `b` points at B[n0][0] with rows of `ld`
// bytes (nk), or at B[0][n0] with rows of `ld` bytes (kn). Adds each column's sum of stored
// values to colsum[0..16) and sets *holds_min when a stored value is -128.
std::int64_t pack_panel_bytes_avx2(const std::uint8_t* b, std::int64_t ld, bool nk, std::int64_t k,
                                   std::uint8_t flip, std::int8_t* panel, std::int32_t* colsum,
                                   bool* holds_min);

// Unpacks `groups` nibble-packed groups (32 bytes each, packing.h) into the byte layout
// (64 bytes each).
void unpack_nibbles_avx2(const std::uint8_t* in, std::uint8_t* out, std::int64_t groups);

}  // namespace qforge::cpu_x86
