#include "packing.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "gemm_kernels.h"
#include "pack_kernels.h"
#include "qforge/checked_size.h"
#include "qforge/dtype.h"
#include "qforge/error.h"
#include "thread_pool.h"

namespace qforge::cpu_x86 {
namespace {

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// The shift into the kernel domain (packing.h).
// int4 is stored as v + 8 in [0, 15], like uint4, so that two fit a byte as unsigned nibbles.
std::int32_t b_shift(DType t) { return t == DType::uint8 ? -128 : t == DType::int4 ? 8 : 0; }
std::int32_t a_shift(DType t, bool s8_domain) {
  if (s8_domain) return t == DType::uint8 ? -128 : 0;
  return t == DType::int8 ? 128 : 0;
}

// B[k, n] as an integer, whatever the layout and dtype.
struct BReader {
  DType dtype;
  const void* data;
  bool kn;
  std::int64_t n, k;
  std::int32_t operator()(std::int64_t kk, std::int64_t nn) const {
    const auto i = static_cast<std::size_t>(kn ? kk * n + nn : nn * k + kk);
    switch (dtype) {
      case DType::int8: return static_cast<const std::int8_t*>(data)[i];
      case DType::uint8: return static_cast<const std::uint8_t*>(data)[i];
      default: return load_element(dtype, data, i);  // int4 / uint4 nibbles
    }
  }
};

}  // namespace

AlignedBytes::AlignedBytes(std::size_t n) { reset(n); }

void AlignedBytes::Free::operator()(std::uint8_t* p) const noexcept { std::free(p); }

void AlignedBytes::reset(std::size_t n, bool zero) {
  if (n > capacity_) {
    const std::size_t cap = (std::max<std::size_t>(n, 64) + 63) / 64 * 64;
    auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(64, cap));
    if (!p) throw std::bad_alloc();
    p_.reset(p);
    capacity_ = cap;
  }
  n_ = n;
  if (n && zero) std::memset(p_.get(), 0, n);
}

KBlocks k_blocks(const MatmulDesc& desc) {
  KBlocks b;
  if (desc.b.scheme().granularity == Granularity::block) {
    b.blocked = true;
    b.size = desc.b.scheme().block_size;
    b.count = std::max<std::int64_t>(1, (desc.k + b.size - 1) / b.size);
  } else {
    b.size = desc.k;
    b.count = 1;
  }
  return b;
}

X86PackedWeights::X86PackedWeights(const MatmulDesc& desc, const void* b, ThreadPool* pool)
    : n(desc.n), k(desc.k), blocks(k_blocks(desc)), facts(packed_facts(desc)), desc_(desc) {
  desc_.m = 0;  // one packing serves every M
  panels = (n + kPanel - 1) / kPanel;
  depth = round_up(k, kDepthAlign);
  nibbles = blocks.blocked && (desc.b.dtype() == DType::int4 || desc.b.dtype() == DType::uint4);
  panel_stride = nibbles ? depth * kPanel / 2 : depth * kPanel;
  // Sizes within qforge's limit (checked_size.h); supports() already refused larger ones.
  data.reset(checked_bytes("cpu_x86: packed B",
                           checked_element_count("cpu_x86: packed B", {panels, panel_stride}), 1));
  const std::int64_t pn = padded_n();
  const auto sums =
      static_cast<std::size_t>(checked_element_count("cpu_x86: packed B sums", {blocks.count, pn}));
  colsum.assign(sums, 0);
  zb.assign(sums, 0);
  sb.assign(sums, 0.0f);

  const QuantizationParams& p = desc.b;
  const std::int32_t shift = b_shift(p.dtype());
  const BReader read{p.dtype(), b, desc.b_layout == MatrixLayout::kn, n, k};
  const Granularity g = p.scheme().granularity;
  auto* bytes = reinterpret_cast<std::int8_t*>(data.data());
  // Panels are independent (their columns, sums and bytes), so they pack in parallel.
  std::vector<char> panel_min(static_cast<std::size_t>(panels), 0);
  // Whole panels of 8-bit weights that are not block-wise take the vector packer for most of
  // K; the scalar loop below packs the rest (and everything else).
  const bool vector_bytes =
      (p.dtype() == DType::int8 || p.dtype() == DType::uint8) && !blocks.blocked;
  const bool nk = desc.b_layout == MatrixLayout::nk;
  auto pack_panel = [&](std::int64_t panel) {
    bool any_min = false;
    std::int64_t k_done = 0;
    if (vector_bytes && (panel + 1) * kPanel <= n) {
      const std::int64_t n0 = panel * kPanel;
      const auto* src = static_cast<const std::uint8_t*>(b) + (nk ? n0 * k : n0);
      std::int32_t sums[kPanel] = {};
      k_done =
          pack_panel_bytes_avx2(src, nk ? k : n, nk, k, static_cast<std::uint8_t>(shift ? 0x80 : 0),
                                bytes + panel * panel_stride, sums, &any_min);
      for (int c = 0; c < kPanel; ++c) colsum[static_cast<std::size_t>(meta(0, n0 + c))] += sums[c];
    }
    for (std::int64_t nn = panel * kPanel; nn < std::min(n, (panel + 1) * kPanel); ++nn) {
      std::int8_t* col = bytes + (nn / kPanel) * panel_stride + (nn % kPanel) * kGroup;
      for (std::int64_t kk = k_done; kk < k; ++kk) {
        const std::int32_t v = read(kk, nn) + shift;
        any_min = any_min || v == -128;
        if (nibbles) {
          // Group g's 64 values (16 columns x 4 k) in 32 bytes: value i < 32 in the low nibble of
          // byte i, value 32 + i in the high nibble (one vpsrlw + two vpand unpack a group).
          const std::int64_t i = (nn % kPanel) * kGroup + kk % kGroup;
          auto* byte = reinterpret_cast<std::uint8_t*>(bytes) + (nn / kPanel) * panel_stride +
                       (kk / kGroup) * 32 + i % 32;
          *byte = static_cast<std::uint8_t>(*byte | (v << (i < 32 ? 0 : 4)));
        } else {
          col[(kk / kGroup) * (kPanel * kGroup) + kk % kGroup] = static_cast<std::int8_t>(v);
        }
        const std::int64_t j = blocks.blocked ? kk / blocks.size : 0;
        colsum[static_cast<std::size_t>(meta(j, nn))] += v;
      }
      for (std::int64_t j = 0; j < blocks.count; ++j) {
        const std::size_t pi = g == Granularity::per_tensor ? 0
                               : g == Granularity::per_channel
                                   ? static_cast<std::size_t>(nn)
                                   : static_cast<std::size_t>(nn * blocks.count + j);
        const auto at = static_cast<std::size_t>(meta(j, nn));
        zb[at] = p.zero_point(pi) + shift;
        sb[at] = p.scale(pi);
      }
    }
    panel_min[static_cast<std::size_t>(panel)] = any_min;
  };
  if (pool) pool->parallel_for(panels, pack_panel);
  else
    for (std::int64_t q = 0; q < panels; ++q) pack_panel(q);
  for (const char m : panel_min) holds_min = holds_min || m;
}

std::size_t X86PackedWeights::bytes() const noexcept {
  return data.size() + (colsum.size() + zb.size()) * sizeof(std::int32_t) +
         sb.size() * sizeof(float);
}

void pack_activations(const MatmulDesc& desc, const void* a, std::int64_t depth,
                      const KBlocks& blocks, bool s8_domain, bool amx_tiles, PackedA& out,
                      ThreadPool& pool) {
  const std::int64_t M = desc.m, K = desc.k;
  out.m = M;
  out.rows = round_up(std::max<std::int64_t>(M, 1), kRowAlign);
  out.depth = depth;
  out.stride = amx_tiles ? depth : depth + 64;
  out.amx_tiles = amx_tiles;
  out.s8_domain = s8_domain;
  out.block_count = blocks.count;
  out.data.reset(
      checked_bytes("cpu_x86: packed A",
                    checked_element_count("cpu_x86: packed A", {out.rows, out.stride}), 1),
      /*zero=*/false);
  out.rowsum.resize(
      static_cast<std::size_t>(checked_element_count("cpu_x86: A row sums", {M, blocks.count})));
  out.za.resize(static_cast<std::size_t>(M));
  out.sa.resize(static_cast<std::size_t>(M));
  const QuantizationParams& p = desc.a;
  const bool per_row = p.scheme().granularity != Granularity::per_tensor;
  const std::int32_t shift = a_shift(p.dtype(), s8_domain);
  // Both shifts are +-128 or 0 and flip the top bit: the byte pattern is a ^ 0x80.
  const std::uint8_t flip = shift != 0 ? 0x80 : 0x00;
  const auto* src = static_cast<const std::uint8_t*>(a);
  std::uint8_t* dst = out.data.data();
  // Padded rows (up to a multiple of 16) are all zero: their dot products are discarded. In
  // the AMX layout they are spread over the last 16-row block, which is zeroed whole.
  if (out.rows > M) {
    const std::int64_t first = amx_tiles ? M / 16 * 16 : M;
    std::memset(dst + first * out.stride, 0,
                static_cast<std::size_t>((out.rows - first) * out.stride));
  }
  constexpr std::int64_t kRowsPerTask = 16;
  pool.parallel_for((M + kRowsPerTask - 1) / kRowsPerTask, [&](std::int64_t t) {
    thread_local AlignedBytes row_buffer;  // one row before it is cut into tile rows
    if (amx_tiles) row_buffer.reset(static_cast<std::size_t>(depth), /*zero=*/false);
    for (std::int64_t m = t * kRowsPerTask; m < std::min(M, (t + 1) * kRowsPerTask); ++m) {
      std::uint8_t* row = amx_tiles ? row_buffer.data() : dst + m * out.stride;
      pack_row_avx2(src + m * K, row, K, flip, s8_domain, blocks.blocked ? blocks.size : K,
                    blocks.count, out.rowsum.data() + m * blocks.count);
      std::memset(row + K, 0, static_cast<std::size_t>((amx_tiles ? depth : out.stride) - K));
      if (amx_tiles) {
        std::uint8_t* block = dst + (m / 16) * 16 * depth + (m % 16) * 64;
        for (std::int64_t s = 0; s < depth / 64; ++s)
          std::memcpy(block + s * 1024, row + s * 64, 64);
      }
    }
  });
  if (!per_row) {  // one pair for every row: no lookup per row (M is a whole batch's tokens)
    std::fill(out.za.begin(), out.za.end(), p.zero_point(0) + shift);
    std::fill(out.sa.begin(), out.sa.end(), p.scale(0));
    return;
  }
  for (std::int64_t m = 0; m < M; ++m) {
    out.za[static_cast<std::size_t>(m)] = p.zero_point(static_cast<std::size_t>(m)) + shift;
    out.sa[static_cast<std::size_t>(m)] = p.scale(static_cast<std::size_t>(m));
  }
}

}  // namespace qforge::cpu_x86
