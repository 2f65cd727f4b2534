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

// Unpacks `groups` nibble-packed groups (32 bytes each, packing.h) into the byte layout
// (64 bytes each).
void unpack_nibbles_avx2(const std::uint8_t* in, std::uint8_t* out, std::int64_t groups);

}  // namespace qforge::cpu_x86
