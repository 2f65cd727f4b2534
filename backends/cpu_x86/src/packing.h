// Packing of the GEMM operands into the layout of gemm_kernels.h, with the sums the epilogue
// needs for zero-point compensation (gemm_epilogue.h).
//
// Domains: the kernels multiply A_d (u8 or s8) by B_s8. Each operand is shifted into its
// domain and its zero point shifted by the same amount, so (a - za) == (a_d - za_d) exactly:
//     A int8 -> u8: a + 128          A uint8 -> s8: a - 128
//     B uint8 -> s8: b - 128         B int4 -> b + 8, uint4 unchanged (both 0..15)
// Block-wise 4-bit weights stay 4-bit in the packing ("nibbles", half the bytes to stream):
// each 64-byte group of the layout is stored in 32 bytes, value i < 32 in the low nibble of
// byte i and value 32 + i in the high nibble. Kernels that read bytes unpack a tile's panels
// first (unpack_nibbles_avx2).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "descriptor_rules.h"
#include "qforge/op_desc.h"
#include "qforge/ops.h"

namespace qforge::cpu_x86 {

// 64-byte aligned, zero-initialised bytes.
class AlignedBytes {
 public:
  AlignedBytes() = default;
  explicit AlignedBytes(std::size_t n);
  std::uint8_t* data() noexcept { return p_.get(); }
  const std::uint8_t* data() const noexcept { return p_.get(); }
  std::size_t size() const noexcept { return n_; }
  // Grows (never shrinks); zero-fills the first n bytes when `zero`.
  void reset(std::size_t n, bool zero = true);

 private:
  struct Free {
    void operator()(std::uint8_t* p) const noexcept;
  };
  std::unique_ptr<std::uint8_t[], Free> p_;
  std::size_t n_ = 0;
  std::size_t capacity_ = 0;
};

// Block structure of the K axis: one block spanning K unless B is block-wise.
struct KBlocks {
  std::int64_t size = 0;   // block length (K when not blocked)
  std::int64_t count = 1;  // number of blocks (>= 1, also for K == 0)
  bool blocked = false;
  std::int64_t length(std::int64_t j, std::int64_t k) const {
    return blocked ? std::min(size, k - j * size) : k;
  }
};
KBlocks k_blocks(const MatmulDesc& desc);

class ThreadPool;

class X86PackedWeights final : public PackedWeights {
 public:
  // Packs B (desc.b_shape() elements); panels in parallel on `pool` when given.
  X86PackedWeights(const MatmulDesc& desc, const void* b, ThreadPool* pool = nullptr);

  const MatmulDesc& desc() const noexcept override { return desc_; }
  std::string backend() const override { return "cpu_x86"; }
  std::size_t bytes() const noexcept override;

  std::int64_t n = 0, k = 0;
  std::int64_t panels = 0;        // ceil(N / 16)
  std::int64_t depth = 0;         // K padded to a multiple of 64
  std::int64_t panel_stride = 0;  // bytes per panel: depth * 16, or depth * 8 with nibbles
  KBlocks blocks;
  bool holds_min = false;  // some stored value is -128 (the maddubs idiom is then inexact)
  bool nibbles = false;    // block-wise 4-bit weights stored two per byte (see above)
  PackedFacts facts;       // for the per-call checks (descriptor_rules.h)
  AlignedBytes data;       // the panels
  // Per block j and padded column c, panel-major: index meta(j, c) = ((c / 16) * blocks + j) * 16
  // + c % 16, so a kernel walking one panel down K reads them sequentially (with one block it is
  // just c). Padded columns hold 0.
  std::int64_t meta(std::int64_t j, std::int64_t c) const {
    return ((c / 16) * blocks.count + j) * 16 + c % 16;
  }
  std::vector<std::int32_t> colsum;
  std::vector<std::int32_t> zb;
  std::vector<float> sb;

  const std::int8_t* panel(std::int64_t p) const {
    return reinterpret_cast<const std::int8_t*>(data.data()) + p * panel_stride;
  }
  std::int64_t padded_n() const { return panels * 16; }

 private:
  MatmulDesc desc_;
};

// The activations of one call, packed for one kernel family.
struct PackedA {
  std::int64_t m = 0;
  std::int64_t rows = 0;   // m padded to a multiple of 16
  std::int64_t depth = 0;  // same as the weights'
  // Bytes between rows: depth plus one cache line, so that the rows of a VNNI tile do not all
  // fall into the same L1 set when depth is a power of two.
  std::int64_t stride = 0;
  bool s8_domain = false;
  // The AMX layout: each 16-row block is stored as depth/64 tiles of 16 rows x 64 bytes, one
  // contiguous KiB each ([rows/16][depth/64][16][64]), so that a tile load reads one KiB in
  // order instead of 16 lines a row apart. Then stride == depth and row m of step s is at
  // (m / 16) * 16 * depth + s * 1024 + (m % 16) * 64.
  bool amx_tiles = false;
  AlignedBytes data;                 // [rows][stride], or the AMX layout
  std::vector<std::int32_t> rowsum;  // [m][blocks]
  std::vector<std::int32_t> za;      // [m]
  std::vector<float> sa;             // [m]
  std::int64_t block_count = 1;
};

// Packs A ([M, K] int8/uint8, row-major) into `out` (reusing its memory), rows in parallel.
void pack_activations(const MatmulDesc& desc, const void* a, std::int64_t depth,
                      const KBlocks& blocks, bool s8_domain, bool amx_tiles, PackedA& out,
                      ThreadPool& pool);

}  // namespace qforge::cpu_x86
