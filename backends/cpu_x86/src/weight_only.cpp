#include "weight_only.h"

#include <algorithm>

#include "qforge/dtype.h"
#include "qforge/error.h"
#include "thread_pool.h"

namespace qforge::cpu_x86 {
namespace {

// Chunks of K dequantized at once: 16 KiB of floats per panel, so a task's few panels stay in
// L2 while its rows stream past them.
constexpr std::int64_t kChunkK = 256;
constexpr std::int64_t kTileRows = 6;
// Rows per task: a multiple of the tile that leaves enough tasks for the pool at MiniLM's
// M = 4096 while each task's dequantized panels serve many rows.
constexpr std::int64_t kTaskRows = 192;

// The unsigned offset that makes the dtype's codes non-negative.
std::int32_t code_offset(DType t) {
  switch (t) {
    case DType::int4: return 8;
    case DType::int8: return 128;
    default: return 0;
  }
}

}  // namespace

WeightOnlyWeights::WeightOnlyWeights(const MatmulDesc& d, const void* b)
    : n(d.n), k(d.k), panels((d.n + kWeightOnlyPanel - 1) / kWeightOnlyPanel) {
  const QuantizationParams& p = d.b;
  const DType t = p.dtype();
  if (t != DType::int4 && t != DType::uint4 && t != DType::int8 && t != DType::uint8)
    throw Error(ErrorCode::internal, "cpu_x86: weight-only packing of " + std::string(name(t)) +
                                         "; expected a 4- or 8-bit type");
  four_bit = t == DType::int4 || t == DType::uint4;
  const bool blocked = p.scheme().granularity == Granularity::block;
  group = blocked ? p.scheme().block_size : std::max<std::int64_t>(k, 1);
  groups = k == 0 ? 0 : (k + group - 1) / group;
  const std::int32_t offset = code_offset(t);
  const std::size_t per_k = four_bit ? 8 : 16;
  codes.assign(static_cast<std::size_t>(panels * k) * per_k, 0);
  scales.assign(static_cast<std::size_t>(panels * groups * kWeightOnlyPanel), 0.0f);
  zeros.assign(scales.size(), 0.0f);
  const bool kn = d.b_layout == MatrixLayout::kn;
  const std::int64_t blocks_per_row = blocked ? groups : 1;
  for (std::int64_t col = 0; col < n; ++col) {
    const std::int64_t panel = col / kWeightOnlyPanel, lane = col % kWeightOnlyPanel;
    for (std::int64_t j = 0; j < groups; ++j) {
      std::size_t pair = 0;
      if (blocked) pair = static_cast<std::size_t>(col * blocks_per_row + j);
      else if (p.scheme().granularity == Granularity::per_channel)
        pair = static_cast<std::size_t>(col);
      const auto at = static_cast<std::size_t>((panel * groups + j) * kWeightOnlyPanel + lane);
      scales[at] = p.scale(pair);
      zeros[at] = static_cast<float>(p.zero_point(pair) + offset);
    }
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const auto src = static_cast<std::size_t>(kn ? kk * n + col : col * k + kk);
      const auto u = static_cast<std::uint8_t>(load_element(t, b, src) + offset);
      std::uint8_t* dst = codes.data() + static_cast<std::size_t>(panel * k + kk) * per_k;
      if (!four_bit) dst[lane] = u;
      else if (lane < 8) dst[lane] = static_cast<std::uint8_t>(dst[lane] | u);
      else dst[lane - 8] = static_cast<std::uint8_t>(dst[lane - 8] | (u << 4));
    }
  }
}

void run_weight_only(ThreadPool& pool, std::int64_t m, const float* a, const WeightOnlyWeights& w,
                     const float* bias, float* y) {
  const std::int64_t n = w.n, k = w.k;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (std::int64_t r = 0; r < m; ++r)
      for (std::int64_t c = 0; c < n; ++c) y[r * n + c] = bias ? bias[c] : 0.0f;
    return;
  }
  // Few rows: one panel per task, for parallelism over N. Many: four panels (64 columns), so
  // each row of A is read once per 64 outputs.
  const std::int64_t panels_per_task = m <= 16 ? 1 : 4;
  const std::int64_t column_tasks = (w.panels + panels_per_task - 1) / panels_per_task;
  const std::int64_t row_tasks = (m + kTaskRows - 1) / kTaskRows;
  pool.parallel_for(column_tasks * row_tasks, [&](std::int64_t task) {
    const std::int64_t p0 = (task % column_tasks) * panels_per_task;
    const std::int64_t p1 = std::min(w.panels, p0 + panels_per_task);
    const std::int64_t r0 = (task / column_tasks) * kTaskRows;
    const std::int64_t r1 = std::min(m, r0 + kTaskRows);
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<std::size_t>(panels_per_task * kChunkK * kWeightOnlyPanel));
    for (std::int64_t k0 = 0; k0 < k; k0 += kChunkK) {
      const std::int64_t kc = std::min(kChunkK, k - k0);
      const bool last = k0 + kc == k;
      for (std::int64_t p = p0; p < p1; ++p)
        weight_only_decode_avx2(w, p, k0, k0 + kc,
                                scratch.data() + (p - p0) * kChunkK * kWeightOnlyPanel);
      for (std::int64_t r = r0; r < r1; r += kTileRows) {
        const int rows = static_cast<int>(std::min(kTileRows, r1 - r));
        for (std::int64_t p = p0; p < p1; ++p) {
          const std::int64_t c0 = p * kWeightOnlyPanel;
          const int cols = static_cast<int>(std::min(kWeightOnlyPanel, n - c0));
          weight_only_tile_avx2(rows, cols, a + r * k + k0, k,
                                scratch.data() + (p - p0) * kChunkK * kWeightOnlyPanel, kc,
                                y + r * n + c0, n, k0 > 0, last && bias ? bias + c0 : nullptr);
        }
      }
    }
  });
}

}  // namespace qforge::cpu_x86
