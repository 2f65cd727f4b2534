// MaxPool, AveragePool and GlobalAveragePool over any number of spatial axes.
#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/conv.h"
#include "ops/kernel.h"
#include "ops/parallel.h"
#include "ops/spatial.h"

namespace qforge::model::ops {
namespace {

template <typename T>
constexpr T lowest() {
  if constexpr (std::is_same_v<T, float>) return -std::numeric_limits<float>::infinity();
  else return std::numeric_limits<T>::lowest();
}

bool is_max(const Node& n) { return n.op_type == "MaxPool"; }

WindowGeometry pool_geometry(const Node& n, const Shape& x) {
  const auto kernel = n.attr_ints_or("kernel_shape", {});
  Shape in_spatial(x.begin() + 2, x.end());
  const bool dilations = is_max(n) && n.since_version >= 10;
  const bool ceil = n.since_version >= 10;
  return window_geometry(n, in_spatial, kernel, dilations, ceil);
}

std::vector<TensorType> infer_pool(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  const Shape& x = in[0].type->shape;
  if (x.size() < 3)
    fail(n, ErrorCode::shape_mismatch, "X " + qforge::to_string(x) + " must be (N, C, spatial...)");
  const WindowGeometry g = pool_geometry(n, x);
  Shape out{x[0], x[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return {{ElementType::float32, out}};
}

// Number of window taps of output position o on one axis: inside the input (`valid`) and inside
// input + declared padding (`padded`, AveragePool's divisor with count_include_pad; ceil_mode
// windows may run past even the padding).
struct TapCount {
  std::int64_t valid, padded;
};
TapCount taps(const WindowGeometry& g, std::size_t d, std::int64_t o) {
  const std::int64_t lo = o * g.strides[d] - g.pad_begin[d];
  const std::int64_t end =
      std::min(lo + (g.kernel[d] - 1) * g.dilations[d] + 1, g.in[d] + g.pad_end[d]);
  TapCount t{0, (end - lo + g.dilations[d] - 1) / g.dilations[d]};
  for (std::int64_t k = 0; k < g.kernel[d]; ++k) {
    const std::int64_t pos = lo + k * g.dilations[d];
    if (pos >= end) break;
    t.valid += pos >= 0 && pos < g.in[d];
  }
  return t;
}

// The common 2x2 stride-2 MaxPool with every window inside the input: each output is the max of
// its four taps, with no bounds to check, in one loop over the row that vectorises (the stride-2
// loads become even/odd shuffles). Starting from the lowest value makes a NaN tap lose to any
// other, as in the general loop; the taps are compared in another order, which can only change
// which of +0 and -0 wins.
template <typename T>
[[gnu::always_inline]] inline void max_pool_2x2(const T* __restrict x, T* __restrict y,
                                                std::int64_t planes, const WindowGeometry& g) {
  const std::int64_t ih_n = g.in[0], iw_n = g.in[1], oh_n = g.out[0], ow_n = g.out[1];
  for (std::int64_t plane = 0; plane < planes; ++plane)
    for (std::int64_t oh = 0; oh < oh_n; ++oh) {
      const T* r0 = x + (plane * ih_n + 2 * oh) * iw_n;
      const T* r1 = r0 + iw_n;
      T* yr = y + (plane * oh_n + oh) * ow_n;
      for (std::int64_t o = 0; o < ow_n; ++o) {
        const T even = std::max(std::max(lowest<T>(), r0[2 * o]), r1[2 * o]);
        const T odd = std::max(std::max(lowest<T>(), r0[2 * o + 1]), r1[2 * o + 1]);
        yr[o] = std::max(even, odd);
      }
    }
}

// 2-D pools row by row: for each kernel tap the range of output columns whose input column is
// inside is worked out once, so the inner loop over a row has no bounds checks and vectorises.
// T is float, or int8 / uint8 codes for MaxPool alone (max commutes with a monotonic quantize,
// so the max of codes at one scale and zero point is the code of the max: ORT's QLinear path
// and TFLite pool int8 the same way).
template <typename T>
[[gnu::always_inline]] inline void pool_2d(const T* x, T* y, std::int64_t planes,
                                           const WindowGeometry& g, bool max, bool count_pad) {
  const std::int64_t ih_n = g.in[0], iw_n = g.in[1], oh_n = g.out[0], ow_n = g.out[1];
  const std::int64_t kh_n = g.kernel[0], kw_n = g.kernel[1], sw = g.strides[1];
  if (max && kh_n == 2 && kw_n == 2 && g.strides[0] == 2 && sw == 2 && g.dilations[0] == 1 &&
      g.dilations[1] == 1 && g.pad_begin[0] == 0 && g.pad_begin[1] == 0 && 2 * oh_n <= ih_n &&
      2 * ow_n <= iw_n) {
    max_pool_2x2(x, y, planes, g);
    return;
  }
  std::vector<ColumnRange> cols(static_cast<std::size_t>(kw_n));
  for (std::int64_t kw = 0; kw < kw_n; ++kw)
    cols[kw] = valid_range(kw * g.dilations[1] - g.pad_begin[1], sw, iw_n, ow_n);
  // A 2-wide stride-2 MaxPool row (the common 2x2/2) takes the max of each tap pair at once
  // for the columns where both taps are inside.
  const bool pairs = max && kw_n == 2 && sw == 2 && g.dilations[1] == 1;
  const std::int64_t pair_lo = std::max(cols[0].first, kw_n > 1 ? cols[1].first : 0);
  const std::int64_t pair_hi =
      std::max(pair_lo, std::min(cols[0].second, kw_n > 1 ? cols[1].second : 0));
  std::vector<TapCount> col_taps(static_cast<std::size_t>(ow_n));
  for (std::int64_t o = 0; o < ow_n; ++o) col_taps[o] = taps(g, 1, o);
  // Divisors of every output position (AveragePool); planes are the outer loop so that each
  // input plane is read while it is in cache.
  std::vector<float> divisor(max ? 0 : static_cast<std::size_t>(oh_n * ow_n));
  std::vector<std::int64_t> rows_lo(static_cast<std::size_t>(oh_n));
  for (std::int64_t oh = 0; oh < oh_n; ++oh) {
    const TapCount row_taps = taps(g, 0, oh);
    rows_lo[oh] = oh * g.strides[0] - g.pad_begin[0];
    if (!max)
      for (std::int64_t o = 0; o < ow_n; ++o)
        divisor[oh * ow_n + o] = static_cast<float>(count_pad ? row_taps.padded * col_taps[o].padded
                                                              : row_taps.valid * col_taps[o].valid);
  }
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * ih_n * iw_n;
    for (std::int64_t oh = 0; oh < oh_n; ++oh) {
      T* yr = y + (plane * oh_n + oh) * ow_n;
      std::fill(yr, yr + ow_n, max ? lowest<T>() : T{0});
      // Taps inside the input always lie before the padded end, so only the input bounds matter.
      for (std::int64_t kh = 0; kh < kh_n; ++kh) {
        const std::int64_t ih = rows_lo[oh] + kh * g.dilations[0];
        if (ih < 0 || ih >= ih_n) continue;
        const T* xr = xp + ih * iw_n;
        if (pairs) {
          const T* src = xr - g.pad_begin[1];
          for (std::int64_t o = pair_lo; o < pair_hi; ++o)
            yr[o] = std::max(yr[o], std::max(src[2 * o], src[2 * o + 1]));
          for (std::int64_t kw = 0; kw < 2; ++kw) {
            const auto [lo, hi] = cols[kw];
            for (std::int64_t o = lo; o < std::min(hi, pair_lo); ++o)
              yr[o] = std::max(yr[o], src[2 * o + kw]);
            for (std::int64_t o = std::max(lo, pair_hi); o < hi; ++o)
              yr[o] = std::max(yr[o], src[2 * o + kw]);
          }
          continue;
        }
        for (std::int64_t kw = 0; kw < kw_n; ++kw) {
          const T* src = xr + kw * g.dilations[1] - g.pad_begin[1];
          const auto [lo, hi] = cols[kw];
          if (max) {
            // NaN inputs are ignored unless every value is NaN.
            for (std::int64_t o = lo; o < hi; ++o) yr[o] = std::max(yr[o], src[o * sw]);
          } else {
            for (std::int64_t o = lo; o < hi; ++o) yr[o] += src[o * sw];
          }
        }
      }
      if constexpr (std::is_same_v<T, float>)
        if (!max)
          for (std::int64_t o = 0; o < ow_n; ++o) yr[o] /= divisor[oh * ow_n + o];
    }
  }
}

// One vectorised copy of pool_2d per element type.
QFORGE_MODEL_VECTOR_CLONES void pool_2d_f32(const float* x, float* y, std::int64_t planes,
                                            const WindowGeometry& g, bool max, bool count_pad) {
  pool_2d(x, y, planes, g, max, count_pad);
}
QFORGE_MODEL_VECTOR_CLONES void max_pool_2d_s8(const std::int8_t* x, std::int8_t* y,
                                               std::int64_t planes, const WindowGeometry& g) {
  pool_2d(x, y, planes, g, true, false);
}
QFORGE_MODEL_VECTOR_CLONES void max_pool_2d_u8(const std::uint8_t* x, std::uint8_t* y,
                                               std::int64_t planes, const WindowGeometry& g) {
  pool_2d(x, y, planes, g, true, false);
}

// MaxPool on int8 / uint8 codes (a quantized layer's output passed on as codes; the executor's
// checks describe the float graph, so the codes' type is only seen here).
void run_max_pool_codes(const Node& n, const Tensor& x, Tensor& y) {
  const Shape& xs = x.shape();
  const WindowGeometry g = pool_geometry(n, xs);
  if (!is_max(n) || g.in.size() != 2 || y.type() != x.type())
    fail(n, ErrorCode::unsupported,
         "a " + std::string(to_string(x.type())) +
             " input is supported for 2-D MaxPool alone, "
             "with an output of the same type; got " +
             n.op_type + " of X " + qforge::to_string(xs));
  const std::int64_t in_plane = g.in[0] * g.in[1], out_plane = g.out[0] * g.out[1];
  const bool s8 = x.type() == ElementType::int8;
  const std::byte* xb = x.data();
  std::byte* yb = y.data();
  // Planes are independent: split them across the executor's pool, as the float kernel does
  // (a grain of the same bytes, four times the elements).
  parallel_for(
      xs[0] * xs[1],
      std::max<std::int64_t>(1, 4 * kElementGrain / std::max<std::int64_t>(in_plane, 1)),
      [&](std::int64_t begin, std::int64_t end) {
        if (s8)
          max_pool_2d_s8(reinterpret_cast<const std::int8_t*>(xb) + begin * in_plane,
                         reinterpret_cast<std::int8_t*>(yb) + begin * out_plane, end - begin, g);
        else
          max_pool_2d_u8(reinterpret_cast<const std::uint8_t*>(xb) + begin * in_plane,
                         reinterpret_cast<std::uint8_t*>(yb) + begin * out_plane, end - begin, g);
      });
}

void run_pool(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  if (in[0]->type() == ElementType::int8 || in[0]->type() == ElementType::uint8) {
    run_max_pool_codes(n, *in[0], *out[0]);
    return;
  }
  const Shape& xs = in[0]->shape();
  const WindowGeometry g = pool_geometry(n, xs);
  const bool max = is_max(n);
  const bool count_pad = n.attr_int_or("count_include_pad", 0) != 0;
  const std::size_t r = g.in.size();
  std::int64_t in_size = 1, out_size = 1;
  for (std::size_t i = 0; i < r; ++i) {
    in_size *= g.in[i];
    out_size *= g.out[i];
  }
  const float* x = in[0]->values<float>().data();
  float* y = out[0]->values<float>().data();
  if (r == 2) {
    // Planes are independent: split them across the executor's pool.
    const std::int64_t in_plane = g.in[0] * g.in[1], out_plane = g.out[0] * g.out[1];
    parallel_for(xs[0] * xs[1],
                 std::max<std::int64_t>(1, kElementGrain / std::max<std::int64_t>(in_plane, 1)),
                 [&](std::int64_t begin, std::int64_t end) {
                   pool_2d_f32(x + begin * in_plane, y + begin * out_plane, end - begin, g, max,
                               count_pad);
                 });
    return;
  }
  std::vector<std::int64_t> o(r), lo(r), hi(r), k(r);
  for (std::int64_t plane = 0; plane < xs[0] * xs[1]; ++plane) {
    const float* xp = x + plane * in_size;
    float* yp = y + plane * out_size;
    std::fill(o.begin(), o.end(), 0);
    for (std::int64_t p = 0; p < out_size; ++p) {
      // Window per axis; positions outside the input are skipped (they count as padding).
      std::int64_t padded_count = 1;
      for (std::size_t d = 0; d < r; ++d) {
        lo[d] = o[d] * g.strides[d] - g.pad_begin[d];
        // The window as far as it lies inside input + declared padding (AveragePool's divisor
        // with count_include_pad; ceil_mode windows may run past even the padding).
        const std::int64_t end =
            std::min(lo[d] + (g.kernel[d] - 1) * g.dilations[d] + 1, g.in[d] + g.pad_end[d]);
        padded_count *= (end - lo[d] + g.dilations[d] - 1) / g.dilations[d];
        hi[d] = end;
      }
      float acc = max ? -std::numeric_limits<float>::infinity() : 0.0f;
      std::int64_t valid = 0;
      std::fill(k.begin(), k.end(), 0);
      for (bool more = true; more;) {
        std::int64_t off = 0;
        bool inside = true;
        for (std::size_t d = 0; d < r; ++d) {
          const std::int64_t pos = lo[d] + k[d] * g.dilations[d];
          if (pos < 0 || pos >= g.in[d]) {
            inside = false;
            break;
          }
          off = off * g.in[d] + pos;
        }
        if (inside) {
          const float v = xp[off];
          if (max) acc = std::max(acc, v);  // NaN inputs are ignored unless every value is NaN
          else acc += v;
          ++valid;
        }
        more = false;
        for (std::size_t d = r; d-- > 0;) {
          if (lo[d] + (++k[d]) * g.dilations[d] < hi[d]) {
            more = true;
            break;
          }
          k[d] = 0;
        }
      }
      yp[p] = max ? acc : acc / static_cast<float>(count_pad ? padded_count : valid);
      for (std::size_t d = r; d-- > 0;) {
        if (++o[d] < g.out[d]) break;
        o[d] = 0;
      }
    }
  }
}

void check_pool(const Node& n) {
  check_window_attributes(n);
  if (!n.has_attribute("kernel_shape"))
    fail(n, ErrorCode::invalid_argument, "kernel_shape is required");
  if (n.outputs.size() > 1 && !n.outputs[1].empty())
    fail(n, ErrorCode::unsupported, "the Indices output of MaxPool is not supported");
  if (n.attr_int_or("storage_order", 0) != 0)
    fail(n, ErrorCode::unsupported, "storage_order 1 (column major) is not supported");
}

std::vector<TensorType> infer_global(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  Shape s = in[0].type->shape;
  if (s.size() < 3)
    fail(n, ErrorCode::shape_mismatch, "X " + qforge::to_string(s) + " must be (N, C, spatial...)");
  std::fill(s.begin() + 2, s.end(), 1);
  return {{ElementType::float32, s}};
}

void run_global(const Node&, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& s = in[0]->shape();
  const std::int64_t planes = s[0] * s[1];
  const std::int64_t size = element_count(s) / std::max<std::int64_t>(planes, 1);
  const float* x = in[0]->values<float>().data();
  float* y = out[0]->values<float>().data();
  parallel_for(planes, std::max<std::int64_t>(1, kElementGrain / std::max<std::int64_t>(size, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t p = begin; p < end; ++p) {
                   float acc = 0.0f;
                   for (std::int64_t i = 0; i < size; ++i) acc += x[p * size + i];
                   y[p] = acc / static_cast<float>(size);
                 }
               });
}

}  // namespace

WindowGeometry max_pool_window(const Node& pool, const Shape& x) { return pool_geometry(pool, x); }

void max_pool_planes(const float* x, float* y, std::int64_t planes, const WindowGeometry& g) {
  pool_2d_f32(x, y, planes, g, /*max=*/true, /*count_pad=*/false);
}

void register_pool(KernelRegistry& r) {
  r.add({"MaxPool",
         {1, 8, 10, 11, 12},
         {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
         check_pool,
         infer_pool,
         run_pool});
  r.add({"AveragePool",
         {1, 7, 10, 11},
         {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"},
         check_pool,
         infer_pool,
         run_pool});
  r.add({"GlobalAveragePool", {1}, {}, nullptr, infer_global, run_global});
}

}  // namespace qforge::model::ops
