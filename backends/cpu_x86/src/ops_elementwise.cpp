// quantize, dequantize, requantize, dynamic_quantize_linear: the tensor walk (which runs of
// elements share a (scale, zero point)) and the split into tasks; the arithmetic is in
// quantize_avx2.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu_x86_ops.h"
#include "descriptor_rules.h"
#include "op_runs.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "quantize_kernels.h"

namespace qforge::cpu_x86 {
namespace {

constexpr std::int64_t kTaskElements = 1 << 16;  // ~64K elements per task
// Outputs at least this large are written with non-temporal stores: they cannot stay in the
// caches anyway, and streaming saves reading every output line before writing it.
constexpr std::int64_t kStreamBytes = std::int64_t{8} << 20;

FloatKind float_kind(FloatType t) {
  return t == FloatType::f32   ? FloatKind::f32
         : t == FloatType::f16 ? FloatKind::f16
                               : FloatKind::bf16;
}

// A tensor as rows of runs: `rows` rows of `row_len` elements; within a row the elements form
// consecutive runs of `run` elements, run r of row i using pair pair(i, r); or, when
// `per_element`, element e of every row uses pair e (per-channel along the last axis).
struct Walk {
  std::int64_t rows = 1, row_len = 0, run = 0;
  bool per_element = false;
  // pair index = (row % row_mod) * pairs_per_row + run index
  std::int64_t row_div = 1, row_mod = 1, pairs_per_row = 1;
};

Walk make_walk(const QuantizeDesc& d) {
  const QuantizationParams& p = d.params;
  const std::int64_t n = element_count(d.shape);
  Walk w;
  switch (p.scheme().granularity) {
    case Granularity::per_tensor:
      w.rows = 1;
      w.row_len = w.run = n;
      w.row_mod = 1;
      w.pairs_per_row = 1;
      break;
    case Granularity::per_channel: {
      const int axis = p.channel_axis(d.shape.size());
      std::int64_t inner = 1;
      for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < d.shape.size(); ++i)
        inner *= d.shape[i];
      const std::int64_t channels = d.shape[static_cast<std::size_t>(axis)];
      if (inner == 1) {  // channel is the last axis: per element within a row of `channels`
        w.per_element = true;
        w.row_len = channels;
        w.rows = channels ? n / channels : 0;
      } else {  // each row is one channel's contiguous run of `inner`
        w.rows = inner ? n / inner : 0;
        w.row_len = w.run = inner;
        w.row_mod = channels;
      }
      break;
    }
    case Granularity::block: {
      const std::int64_t last = d.shape.empty() ? 1 : d.shape.back();
      w.row_len = last;
      w.rows = last ? n / last : 0;
      w.run = p.scheme().block_size;
      w.pairs_per_row = (last + w.run - 1) / w.run;
      w.row_mod = w.rows;  // every row has its own pairs
      break;
    }
  }
  return w;
}

// Runs fn(row0, row1, e0, e1) over tasks of about kTaskElements elements: a task is a range of
// whole rows (e0 = 0, e1 = row_len) or, when rows are long, a slice [e0, e1) of one row cut at
// run boundaries, so that a slice never splits a run's (scale, zero point).
template <class Fn>
void split(ThreadPool& pool, const Walk& w, Fn fn) {
  if (w.rows == 0 || w.row_len == 0) return;
  if (w.row_len > kTaskElements) {
    std::int64_t chunk = kTaskElements;
    if (!w.per_element && w.run < w.row_len) chunk = std::max(w.run, chunk / w.run * w.run);
    std::int64_t per_row = (w.row_len + chunk - 1) / chunk;
    // One long run (a per-tensor tensor): slices in a multiple of the thread count, so that the
    // last round of tasks is not left to a few threads (a [4096, 384] tensor is 24 slices of
    // 64K elements: on 16 threads two rounds, the second half idle; 32 slices of 48K fill both).
    const std::int64_t threads = pool.threads();
    if (w.rows == 1 && w.run >= w.row_len && !w.per_element && per_row > threads &&
        per_row % threads != 0) {
      const std::int64_t slices = (per_row + threads - 1) / threads * threads;
      chunk = ((w.row_len + slices - 1) / slices + 63) / 64 * 64;
      per_row = (w.row_len + chunk - 1) / chunk;
    }
    pool.parallel_for(w.rows * per_row, [&](std::int64_t t) {
      const std::int64_t r = t / per_row, e0 = (t % per_row) * chunk;
      fn(r, r + 1, e0, std::min(w.row_len, e0 + chunk));
    });
    return;
  }
  const std::int64_t rows_per = std::max<std::int64_t>(1, kTaskElements / w.row_len);
  const std::int64_t tasks = (w.rows + rows_per - 1) / rows_per;
  pool.parallel_for(tasks, [&](std::int64_t t) {
    fn(t * rows_per, std::min(w.rows, (t + 1) * rows_per), 0, w.row_len);
  });
}

std::size_t pair_of(const Walk& w, std::int64_t row, std::int64_t e) {
  return static_cast<std::size_t>((row % w.row_mod) * w.pairs_per_row + e / w.run);
}

void require_data(OpKind op, std::int64_t n, const void* in, const void* out) {
  if (n > 0 && (!in || !out))
    throw Error(ErrorCode::invalid_argument, "cpu_x86: " + std::string(to_string(op)) +
                                                 ": null data pointer for " + std::to_string(n) +
                                                 " elements; expected valid host pointers");
}

}  // namespace

void quantize_vector(ThreadPool& pool, const QuantizeDesc& desc, const void* x, void* q) {
  const std::int64_t n = element_count(desc.shape);
  const QuantizationParams& p = desc.params;
  const QuantRange range{p.dtype() == DType::int8, p.qmin(), p.qmax()};
  const FloatKind kind = float_kind(desc.float_type);
  const int fb = size_of(desc.float_type);
  const Walk w = make_walk(desc);
  const auto* xs = static_cast<const unsigned char*>(x);
  auto* qs = static_cast<std::uint8_t*>(q);
  const auto scales = p.scales();
  const auto zps = p.zero_points();
  const bool stream = n >= kStreamBytes;
  const bool blockwise = p.scheme().granularity == Granularity::block;
  split(pool, w, [&](std::int64_t r0, std::int64_t r1, std::int64_t e0, std::int64_t e1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t base = r * w.row_len;
      if (w.per_element) {
        quantize_vec_avx2(xs + (base + e0) * fb, kind, qs + base + e0, e1 - e0, scales.data() + e0,
                          zps.data() + e0, range);
        continue;
      }
      if (blockwise) {  // slices start at block boundaries (split)
        const std::size_t pi = pair_of(w, r, e0);
        quantize_blocks_avx2(xs + (base + e0) * fb, kind, qs + base + e0, e1 - e0, w.run,
                             scales.data() + pi, zps.data() + pi, range, stream);
        continue;
      }
      for (std::int64_t e = e0; e < e1;) {
        const std::int64_t end = std::min(e1, (e / w.run + 1) * w.run);
        const std::size_t pi = pair_of(w, r, e);
        quantize_run_avx2(xs + (base + e) * fb, kind, qs + base + e, end - e, scales[pi], zps[pi],
                          range, stream);
        e = end;
      }
    }
  });
}

void dequantize_vector(ThreadPool& pool, const QuantizeDesc& desc, const void* q, float* x) {
  const std::int64_t n = element_count(desc.shape);
  const QuantizationParams& p = desc.params;
  const bool is_signed = p.dtype() == DType::int8;
  const Walk w = make_walk(desc);
  const auto* qs = static_cast<const std::uint8_t*>(q);
  const auto scales = p.scales();
  const auto zps = p.zero_points();
  const bool stream = n * 4 >= kStreamBytes;
  const bool blockwise = p.scheme().granularity == Granularity::block;
  split(pool, w, [&](std::int64_t r0, std::int64_t r1, std::int64_t e0, std::int64_t e1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t base = r * w.row_len;
      if (w.per_element) {
        dequantize_vec_avx2(qs + base + e0, is_signed, x + base + e0, e1 - e0, scales.data() + e0,
                            zps.data() + e0);
        continue;
      }
      if (blockwise) {
        const std::size_t pi = pair_of(w, r, e0);
        dequantize_blocks_avx2(qs + base + e0, is_signed, x + base + e0, e1 - e0, w.run,
                               scales.data() + pi, zps.data() + pi, stream);
        continue;
      }
      for (std::int64_t e = e0; e < e1;) {
        const std::int64_t end = std::min(e1, (e / w.run + 1) * w.run);
        const std::size_t pi = pair_of(w, r, e);
        dequantize_run_avx2(qs + base + e, is_signed, x + base + e, end - e, scales[pi], zps[pi],
                            stream);
        e = end;
      }
    }
  });
}

void requantize_vector(ThreadPool& pool, const RequantizeDesc& desc, const std::int32_t* c,
                       void* y) {
  const std::int64_t n = element_count(desc.shape);
  const auto& tr = traits(desc.out_dtype);
  const QuantRange range{desc.out_dtype == DType::int8, tr.qmin, tr.qmax};
  auto* out = static_cast<std::uint8_t*>(y);
  // Same walk as quantize: per tensor, or runs of `stride` elements per multiplier, or one
  // multiplier per element along a last axis.
  Walk w;
  if (desc.multipliers.size() <= 1) {
    w.rows = 1;
    w.row_len = w.run = n;
  } else {
    const int rank = static_cast<int>(desc.shape.size());
    const int axis = desc.axis < 0 ? desc.axis + rank : desc.axis;
    std::int64_t stride = 1;
    for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < desc.shape.size(); ++i)
      stride *= desc.shape[i];
    const std::int64_t extent = desc.shape[static_cast<std::size_t>(axis)];
    if (stride == 1) {
      w.per_element = true;
      w.row_len = extent;
      w.rows = extent ? n / extent : 0;
    } else {
      w.row_len = w.run = stride;
      w.rows = stride ? n / stride : 0;
      w.row_mod = extent;
    }
  }
  const float* mult = desc.multipliers.data();
  split(pool, w, [&](std::int64_t r0, std::int64_t r1, std::int64_t e0, std::int64_t e1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t base = r * w.row_len;
      if (w.per_element) {
        requantize_float_avx2(c + base + e0, out + base + e0, e1 - e0, mult + e0, true,
                              desc.out_zero_point, range);
        continue;
      }
      const std::size_t pi = pair_of(w, r, e0);
      requantize_float_avx2(c + base + e0, out + base + e0, e1 - e0, mult + pi, false,
                            desc.out_zero_point, range);
    }
  });
}

std::optional<QuantizationParams> dynamic_quantize_vector(ThreadPool& pool,
                                                          const DynamicQuantizeDesc& desc,
                                                          const float* x, std::uint8_t* y) {
  const std::int64_t n = element_count(desc.shape);
  // Range over the non-NaN elements (min and max are exact, so the split does not matter).
  const std::int64_t tasks = std::max<std::int64_t>(1, (n + kTaskElements - 1) / kTaskElements);
  std::vector<MinMax> part(static_cast<std::size_t>(tasks), MinMax{0.0f, 0.0f, false});
  if (n > 0)
    pool.parallel_for(tasks, [&](std::int64_t t) {
      const std::int64_t e0 = t * kTaskElements;
      part[static_cast<std::size_t>(t)] =
          minmax_f32_avx2(x + e0, std::min(n, e0 + kTaskElements) - e0);
    });
  float lo = 0.0f, hi = 0.0f;  // the reference starts its range at 0
  for (const MinMax& m : part) {
    lo = m.lo < lo ? m.lo : lo;
    hi = m.hi > hi ? m.hi : hi;
  }
  if (std::isinf(lo) || std::isinf(hi)) return std::nullopt;
  const QuantizationParams p = reference::params_from_range(DType::uint8, Mapping::affine, lo, hi);
  const QuantRange range{false, 0, 255};
  const std::int64_t qt = (n + kTaskElements - 1) / kTaskElements;
  pool.parallel_for(qt, [&](std::int64_t t) {
    const std::int64_t e0 = t * kTaskElements;
    quantize_run_avx2(x + e0, FloatKind::f32, y + e0, std::min(n, e0 + kTaskElements) - e0,
                      p.scale(), p.zero_point(), range, n >= kStreamBytes);
  });
  return p;
}

void CpuX86Ops::quantize(const QuantizeDesc& desc, const void* x, void* q) {
  require_supported(OpKind::quantize, desc);
  const KernelInfo& k = elementwise_kernel(KernelRole::quantize, vector_quantize(desc));
  if (k.role == KernelRole::reference) return reference::quantize(desc, x, q);
  require_data(OpKind::quantize, element_count(desc.shape), x, q);
  quantize_vector(*pool_, desc, x, q);
}

void CpuX86Ops::dequantize(const QuantizeDesc& desc, const void* q, float* x) {
  require_supported(OpKind::dequantize, desc);
  const KernelInfo& k = elementwise_kernel(KernelRole::dequantize, vector_quantize(desc));
  if (k.role == KernelRole::reference) return reference::dequantize(desc, q, x);
  require_data(OpKind::dequantize, element_count(desc.shape), q, x);
  dequantize_vector(*pool_, desc, q, x);
}

void CpuX86Ops::requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) {
  require_supported(OpKind::requantize, desc);
  const bool vector_ok = desc.mode == RequantMode::float_multiplier;
  const KernelInfo& k = elementwise_kernel(KernelRole::requantize, vector_ok);
  if (k.role == KernelRole::reference) return reference::requantize(desc, c, y);
  require_data(OpKind::requantize, element_count(desc.shape), c, y);
  requantize_vector(*pool_, desc, c, y);
}

QuantizationParams CpuX86Ops::dynamic_quantize_linear(const DynamicQuantizeDesc& desc,
                                                      const float* x, std::uint8_t* y) {
  require_supported(OpKind::dynamic_quantize_linear, desc);
  const KernelInfo& k = elementwise_kernel(KernelRole::dynamic_quantize, true);
  if (k.role == KernelRole::reference) return reference::dynamic_quantize_linear(desc, x, y);
  require_data(OpKind::dynamic_quantize_linear, element_count(desc.shape), x, y);
  if (auto p = dynamic_quantize_vector(*pool_, desc, x, y)) return *p;
  return reference::dynamic_quantize_linear(desc, x, y);
}

}  // namespace qforge::cpu_x86
