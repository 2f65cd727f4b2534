#include "gemm_driver.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "gemm_epilogue.h"
#include "pack_kernels.h"
#include "qforge/reference.h"

namespace qforge::cpu_x86 {
namespace {

constexpr int kMaxTileRows = kMaxCallRows;
constexpr int kMaxTileCols = 64;
constexpr std::int64_t kLdd = kMaxTileCols;

// Fixed-point requantization (TFLite), scalar: the multiplier of each (row, column) is
// converted with reference::quantize_multiplier exactly as reference::requantize_value does.
class FixedPointTable {
 public:
  FixedPointTable(const MatmulDesc& desc, const X86PackedWeights& b, const PackedA& a, float sy)
      : sy_(sy), a_(a), b_(b) {
    a_per_tensor_ = desc.a.scheme().granularity == Granularity::per_tensor;
    b_per_tensor_ = desc.b.scheme().granularity == Granularity::per_tensor;
    if (a_per_tensor_ && desc.m > 0)
      for (std::int64_t n = 0; n < b.n; ++n)
        cols_.push_back(convert(a.sa[0], b.sb[static_cast<std::size_t>(n)]));
    else if (b_per_tensor_)
      for (std::int64_t m = 0; m < a.m; ++m)
        rows_.push_back(convert(a.sa[static_cast<std::size_t>(m)], b.sb[0]));
  }
  reference::FixedPointMultiplier at(std::int64_t m, std::int64_t n) const {
    if (!cols_.empty()) return cols_[static_cast<std::size_t>(n)];
    if (!rows_.empty()) return rows_[static_cast<std::size_t>(m)];
    return convert(a_.sa[static_cast<std::size_t>(m)], b_.sb[static_cast<std::size_t>(n)]);
  }

 private:
  reference::FixedPointMultiplier convert(float sa, float sb) const {
    return reference::quantize_multiplier(static_cast<double>((sa * sb) / sy_));
  }
  float sy_;
  const PackedA& a_;
  const X86PackedWeights& b_;
  bool a_per_tensor_ = false, b_per_tensor_ = false;
  std::vector<reference::FixedPointMultiplier> cols_, rows_;
};

// GEMMs with fewer multiply-adds than this run on the calling thread: about 10 us of one
// core's tile work on AVX2, less than handing tasks to a worker and joining it costs once the
// worker has gone to sleep or shares its core (a small model's last layers: 256 x 10 x 128).
constexpr double kSerialMultiplyAdds = 1 << 20;

// A pool without workers: its parallel_for runs every task inline.
ThreadPool& calling_thread_only() {
  static ThreadPool pool(1);
  return pool;
}

struct Plan {
  int tile_rows;    // rows per tile call
  int tile_panels;  // panels per tile call
  std::int64_t m_tiles, n_tiles;
  std::int64_t m_chunk, n_chunk;  // tiles per task in each direction
};

Plan make_plan(const KernelInfo& kernel, std::int64_t m, const X86PackedWeights& b, int threads,
               bool block_fused) {
  Plan p{};
  if (kernel.block_tile && block_fused) {
    // rows * panels <= 12: 1-3 rows take 4 panels, 4-6 rows take 2.
    p.tile_rows = static_cast<int>(std::min<std::int64_t>(m, 6));
    p.tile_panels = p.tile_rows <= 3 ? 4 : 2;
  } else if (kernel.role == KernelRole::gemv && kernel.isa == Isa::avx512_vnni) {
    p.tile_rows = static_cast<int>(std::min<std::int64_t>(m, kAvx512VnniGemvShape.max_rows));
    p.tile_panels = gemv_panels_for_rows(p.tile_rows);
  } else {
    p.tile_rows = kernel.shape.call_rows > 0 ? kernel.shape.call_rows : kernel.shape.max_rows;
    p.tile_panels = kernel.shape.max_panels;
  }
  p.m_tiles = (m + p.tile_rows - 1) / p.tile_rows;
  p.n_tiles = (b.panels + p.tile_panels - 1) / p.tile_panels;
  // A task covers about 128 rows and a slice of B of about 512 KiB (it stays in L2 while the
  // task walks its rows); then shrink until every thread has a few tasks to balance.
  const std::int64_t tile_cols = p.tile_panels * kPanel;
  p.m_chunk = std::max<std::int64_t>(1, 128 / p.tile_rows);
  p.n_chunk =
      std::max<std::int64_t>(1, (512 * 1024) / std::max<std::int64_t>(1, b.depth * tile_cols));
  p.m_chunk = std::min(p.m_chunk, p.m_tiles);
  p.n_chunk = std::min(p.n_chunk, p.n_tiles);
  auto tasks = [&] {
    return ((p.m_tiles + p.m_chunk - 1) / p.m_chunk) * ((p.n_tiles + p.n_chunk - 1) / p.n_chunk);
  };
  while (tasks() < 4 * threads && (p.n_chunk > 1 || p.m_chunk > 1)) {
    if (p.n_chunk > 1) p.n_chunk = (p.n_chunk + 1) / 2;
    else p.m_chunk = (p.m_chunk + 1) / 2;
  }
  return p;
}

}  // namespace

bool run_gemm(const KernelInfo& kernel, const MatmulDesc& desc, const void* a,
              const X86PackedWeights& b, const GemmOutput& out, ThreadPool& workers,
              GemmScratch& scratch, const GemmTuning& tuning) {
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  if (M == 0 || N == 0) return true;
  ThreadPool& pool =
      static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) < kSerialMultiplyAdds
          ? calling_thread_only()
          : workers;
  PackedA& pa = scratch.a;
  pack_activations(desc, a, b.depth, b.blocks, kernel.s8_domain, kernel.amx, pa, pool);

  const std::int64_t pn = b.padded_n();
  std::vector<float> bias;
  if (out.kind == GemmOutput::Kind::dequant_f32 && out.bias) {
    bias.assign(static_cast<std::size_t>(pn), 0.0f);
    std::memcpy(bias.data(), out.bias, static_cast<std::size_t>(N) * sizeof(float));
  }
  // qlinear_matmul's int32 bias, padded to the tile columns; `overflowed` is set by a tile
  // whose C + bias left int32.
  std::vector<std::int32_t> bias_i32;
  if (out.kind == GemmOutput::Kind::requant && out.bias_i32) {
    bias_i32.assign(static_cast<std::size_t>(pn), 0);
    std::memcpy(bias_i32.data(), out.bias_i32, static_cast<std::size_t>(N) * sizeof(std::int32_t));
  }
  std::atomic<bool> overflowed{false};
  std::unique_ptr<FixedPointTable> fixed;
  if (out.kind == GemmOutput::Kind::requant && out.mode == RequantMode::fixed_point)
    fixed = std::make_unique<FixedPointTable>(desc, b, pa, out.sy);
  // Float multipliers per column when every row has the same sa: (sa * sb[n]) / sy, the
  // reference's float32 operations in its order, once instead of in every tile row.
  std::vector<float> column_multiplier;
  if (out.kind == GemmOutput::Kind::requant && !fixed &&
      std::all_of(pa.sa.begin(), pa.sa.begin() + M, [&](float s) { return s == pa.sa[0]; })) {
    column_multiplier.resize(static_cast<std::size_t>(pn));
    for (std::int64_t n = 0; n < pn; ++n)
      column_multiplier[static_cast<std::size_t>(n)] =
          (pa.sa[0] * b.sb[static_cast<std::size_t>(n)]) / out.sy;
  }

  // Column terms of the fused dequantizing and column-requantizing epilogues (not block-wise):
  // za * colsum when za is the same for every row, and whether every zb is 0.
  std::vector<std::int32_t> za_colsum;
  bool zb_zero = true;
  if ((out.kind == GemmOutput::Kind::dequant_f32 || !column_multiplier.empty()) &&
      !b.blocks.blocked) {
    zb_zero = std::all_of(b.zb.begin(), b.zb.end(), [](std::int32_t z) { return z == 0; });
    if (std::all_of(pa.za.begin(), pa.za.begin() + M,
                    [&](std::int32_t z) { return z == pa.za[0]; })) {
      za_colsum.resize(static_cast<std::size_t>(pn));
      for (std::int64_t n = 0; n < pn; ++n)  // modulo 2^32, like the kernels' sums
        za_colsum[static_cast<std::size_t>(n)] = static_cast<std::int32_t>(
            static_cast<std::uint32_t>(pa.za[0]) *
            static_cast<std::uint32_t>(b.colsum[static_cast<std::size_t>(n)]));
    }
  }

  const bool block_fused = b.blocks.blocked && out.kind == GemmOutput::Kind::dequant_f32;
  const Plan plan = make_plan(kernel, M, b, pool.threads(), block_fused);
  const std::int64_t groups_all = kernel.amx ? b.depth / kGroup : (K + kGroup - 1) / kGroup;
  const std::int64_t m_tasks = (plan.m_tiles + plan.m_chunk - 1) / plan.m_chunk;
  const std::int64_t n_tasks = (plan.n_tiles + plan.n_chunk - 1) / plan.n_chunk;
  const KBlocks& blocks = b.blocks;

  auto run_tile = [&](std::int64_t mt, std::int64_t nt) {
    alignas(64) std::int32_t d[kMaxTileRows * kMaxTileCols];
    const std::int64_t m0 = mt * plan.tile_rows;
    const int rows = static_cast<int>(std::min<std::int64_t>(plan.tile_rows, M - m0));
    const std::int64_t p0 = nt * plan.tile_panels;
    const int panels = static_cast<int>(std::min<std::int64_t>(plan.tile_panels, b.panels - p0));
    const std::int64_t n0 = p0 * kPanel;
    const int cols = static_cast<int>(std::min<std::int64_t>(panels * kPanel, N - n0));
    TileArgs t{pa.data.data() + m0 * pa.stride,
               pa.stride,
               b.panel(p0),
               b.panel_stride,
               groups_all,
               rows,
               panels,
               d,
               kLdd,
               kernel.role == KernelRole::gemv ? tuning.gemv_b_prefetch : 0};
    TileRef ref{d, kLdd, rows, cols, panels * kPanel};
    const std::int64_t nb = pa.block_count;

    if (!blocks.blocked) {
      kernel.tile(t);
      const Compensation comp{static_cast<std::int32_t>(K),
                              pa.rowsum.data() + m0 * nb,
                              nb,
                              pa.za.data() + m0,
                              b.colsum.data() + n0,
                              b.zb.data() + n0};
      if (out.kind == GemmOutput::Kind::dequant_f32) {
        const auto* zc = za_colsum.empty() ? nullptr : za_colsum.data() + n0;
        const float* bc = bias.empty() ? nullptr : bias.data() + n0;
        float* y = static_cast<float*>(out.out) + m0 * N + n0;
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
        if (tuning.avx512_epilogue) {
          store_dequant_compensated_avx512(ref, comp, zc, zb_zero, pa.sa.data() + m0,
                                           b.sb.data() + n0, bc, y, N);
          return;
        }
#endif
        store_dequant_compensated_avx2(ref, comp, zc, zb_zero, pa.sa.data() + m0, b.sb.data() + n0,
                                       bc, y, N);
        return;
      }
      if (!column_multiplier.empty()) {  // per-tensor A: one pass over the tile
        const auto* zc = za_colsum.empty() ? nullptr : za_colsum.data() + n0;
        const auto* bc = bias_i32.empty() ? nullptr : bias_i32.data() + n0;
        auto* y = static_cast<std::uint8_t*>(out.out) + m0 * N + n0;
        bool fits;
#if QFORGE_CPU_X86_HAVE_AVX512VNNI
        if (tuning.avx512_epilogue)
          fits = store_requant_columns_compensated_avx512(
              ref, comp, zc, zb_zero, bc, column_multiplier.data() + n0, out.zy, out.range, y, N);
        else
#endif
          fits = store_requant_columns_compensated_avx2(
              ref, comp, zc, zb_zero, bc, column_multiplier.data() + n0, out.zy, out.range, y, N);
        if (!fits) overflowed.store(true, std::memory_order_relaxed);
        return;
      }
      compensate_avx2(ref, comp);
      if (!bias_i32.empty() && !add_bias_i32_avx2(ref, bias_i32.data() + n0)) {
        overflowed.store(true, std::memory_order_relaxed);
        return;
      }
      switch (out.kind) {
        case GemmOutput::Kind::int32:
          store_int32_avx2(ref, static_cast<std::int32_t*>(out.out) + m0 * N + n0, N);
          break;
        case GemmOutput::Kind::dequant_f32:  // handled above
          break;
        case GemmOutput::Kind::requant:
          if (!fixed) {
            store_requant_float_avx2(ref, pa.sa.data() + m0, b.sb.data() + n0, out.sy, out.zy,
                                     out.range, static_cast<std::uint8_t*>(out.out) + m0 * N + n0,
                                     N);
          } else {
            auto* y = static_cast<std::uint8_t*>(out.out);
            for (int r = 0; r < rows; ++r)
              for (int c = 0; c < cols; ++c) {
                const std::int64_t m = m0 + r, n = n0 + c;
                const std::int64_t v =
                    static_cast<std::int64_t>(reference::multiply_by_quantized_multiplier(
                        d[r * kLdd + c], fixed->at(m, n))) +
                    out.zy;
                const auto q = static_cast<std::int32_t>(
                    std::clamp<std::int64_t>(v, out.range.qmin, out.range.qmax));
                y[m * N + n] = static_cast<std::uint8_t>(q);
              }
          }
          break;
      }
      return;
    }

    const bool dequant = out.kind == GemmOutput::Kind::dequant_f32;
    alignas(64) float accf[kMaxTileRows * kMaxTileCols];
    if (dequant && kernel.block_tile) {  // fused: every block's epilogue in registers
      BlockTileArgs bt{t.a,
                       t.lda,
                       t.b,
                       t.panel_stride,
                       b.nibbles,
                       rows,
                       panels,
                       K,
                       blocks.size,
                       blocks.count,
                       pa.rowsum.data() + m0 * nb,
                       pa.za.data() + m0,
                       pa.sa.data() + m0,
                       b.colsum.data() + b.meta(0, n0),
                       b.zb.data() + b.meta(0, n0),
                       b.sb.data() + b.meta(0, n0),
                       blocks.count * kPanel,
                       accf,
                       kLdd};
      kernel.block_tile(bt);
      store_f32_avx2(accf, kLdd, rows, cols, bias.empty() ? nullptr : bias.data() + n0,
                     static_cast<float*>(out.out) + m0 * N + n0, N);
      return;
    }
    // Block-wise B: one tile call per block, each block's exact sum folded into an accumulator.
    alignas(64) std::int32_t acci[kMaxTileRows * kMaxTileCols];
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < ref.padded_cols; ++c) {
        accf[r * kLdd + c] = 0.0f;
        acci[r * kLdd + c] = 0;
      }
    if (b.nibbles) {  // the byte kernels read bytes: unpack this tile's panels first
      thread_local AlignedBytes unpacked;
      const std::int64_t bytes_per_panel = b.depth * kPanel;
      unpacked.reset(static_cast<std::size_t>(panels * bytes_per_panel), /*zero=*/false);
      for (int p = 0; p < panels; ++p)
        unpack_nibbles_avx2(reinterpret_cast<const std::uint8_t*>(b.panel(p0 + p)),
                            unpacked.data() + p * bytes_per_panel, b.depth / kGroup);
      t.b = reinterpret_cast<const std::int8_t*>(unpacked.data());
      t.panel_stride = bytes_per_panel;
    }
    for (std::int64_t j = 0; j < blocks.count; ++j) {
      const std::int64_t k0 = j * blocks.size;
      const std::int64_t len = blocks.length(j, K);
      TileArgs tj = t;
      tj.a = t.a + k0;
      tj.b = t.b + k0 * kPanel;
      tj.groups = (len + kGroup - 1) / kGroup;
      kernel.tile(tj);
      for (int p = 0; p < panels; ++p) {  // the per-block sums are stored per panel
        const std::int64_t at = b.meta(j, n0 + p * kPanel);
        const TileRef sub{d + p * kPanel, kLdd, rows, kPanel, kPanel};
        compensate_avx2(sub, {static_cast<std::int32_t>(len), pa.rowsum.data() + m0 * nb + j, nb,
                              pa.za.data() + m0, b.colsum.data() + at, b.zb.data() + at});
        if (dequant)
          accumulate_dequant_avx2(sub, pa.sa.data() + m0, b.sb.data() + at, accf + p * kPanel,
                                  kLdd);
        else accumulate_int32_avx2(sub, acci + p * kPanel, kLdd);
      }
    }
    if (dequant)
      store_f32_avx2(accf, kLdd, rows, cols, bias.empty() ? nullptr : bias.data() + n0,
                     static_cast<float*>(out.out) + m0 * N + n0, N);
    else
      store_i32_avx2(acci, kLdd, rows, cols, static_cast<std::int32_t*>(out.out) + m0 * N + n0, N);
  };

  pool.parallel_for(m_tasks * n_tasks, [&](std::int64_t task) {
    const std::int64_t tm = task % m_tasks, tn = task / m_tasks;
    const std::int64_t mt1 = std::min(plan.m_tiles, (tm + 1) * plan.m_chunk);
    const std::int64_t nt1 = std::min(plan.n_tiles, (tn + 1) * plan.n_chunk);
    if (kernel.begin) kernel.begin();
    struct End {  // undo the setup even when a tile throws (fixed-point conversion can)
      void (*end)();
      ~End() {
        if (end) end();
      }
    } end{kernel.end};
    for (std::int64_t nt = tn * plan.n_chunk; nt < nt1; ++nt)
      for (std::int64_t mt = tm * plan.m_chunk; mt < mt1; ++mt) run_tile(mt, nt);
  });
  return !overflowed.load(std::memory_order_relaxed);
}

}  // namespace qforge::cpu_x86
