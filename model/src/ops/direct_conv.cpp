// Direct 2-D convolution for one input channel per group (depthwise, single-channel first layers).
//
// Each input plane is first copied into a zero-padded scratch plane, so that no loop checks
// bounds. At stride 1 the output is then computed over the padded plane's rows as ONE flat
// range: output position p (row stride = the padded width) reads scratch p + offset(tap) for a
// fixed offset per tap, so a single long loop of unit-stride loads vectorises whatever the row
// width (rows of 14 or 28 columns done one by one leave most of an 8-wide vector idle, and
// border columns handled apart ran as slow scalar code). The positions that land in the padding
// columns are computed and dropped when the rows are copied out. Other strides go row by row
// over the padded plane.
#include "ops/direct_conv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/parallel.h"

namespace qforge::model::ops {
namespace {

struct DirectPlan {
  std::int64_t ih_n = 0, iw_n = 0, oh_n = 0, ow_n = 0, kh_n = 0, kw_n = 0;
  std::int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  // The padded plane: the input rows and columns that windows reach, with their padding.
  std::int64_t hp = 0, wp = 0;
  std::vector<std::int64_t> offsets;  // per tap, row-major: kh * dh * wp + kw * dw
};

DirectPlan plan_direct(const WindowGeometry& g) {
  DirectPlan p;
  p.ih_n = g.in[0];
  p.iw_n = g.in[1];
  p.oh_n = g.out[0];
  p.ow_n = g.out[1];
  p.kh_n = g.kernel[0];
  p.kw_n = g.kernel[1];
  p.sh = g.strides[0];
  p.sw = g.strides[1];
  p.dh = g.dilations[0];
  p.dw = g.dilations[1];
  p.ph = g.pad_begin[0];
  p.pw = g.pad_begin[1];
  p.hp = (p.oh_n - 1) * p.sh + (p.kh_n - 1) * p.dh + 1;
  p.wp = (p.ow_n - 1) * p.sw + (p.kw_n - 1) * p.dw + 1;
  for (std::int64_t kh = 0; kh < p.kh_n; ++kh)
    for (std::int64_t kw = 0; kw < p.kw_n; ++kw) p.offsets.push_back(kh * p.dh * p.wp + kw * p.dw);
  return p;
}

// Copies the input plane into the padded plane's interior; the padding stays zero.
inline void pad_plane(const DirectPlan& d, const float* xp, float* padded) {
  const std::int64_t rows = std::min(d.ih_n, d.hp - d.ph), cols = std::min(d.iw_n, d.wp - d.pw);
  // Strides can step over every input column (or row): the windows then see padding alone.
  if (cols <= 0) return;
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(padded + (r + d.ph) * d.wp + d.pw, xp + r * d.iw_n,
                static_cast<std::size_t>(cols) * sizeof(float));
}

// out[p] = bias + sum over taps t, in row-major order, of w[t] * s[p * step + off[t]] for p in
// [0, n). A 3x3 undilated-width kernel keeps its nine taps in registers; any other kernel
// accumulates into out tap by tap, which rounds the same way (every partial sum is a float).
template <bool Fixed3x3>
[[gnu::always_inline]] inline void taps_range(const float* __restrict s, std::int64_t step,
                                              const float* __restrict w, float bias,
                                              float* __restrict out, std::int64_t n,
                                              const std::int64_t* off, std::int64_t taps) {
  if constexpr (Fixed3x3) {
    const float* r0 = s + off[0];
    const float* r1 = s + off[3];
    const float* r2 = s + off[6];
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6],
                w7 = w[7], w8 = w[8];
    if (step == 1) {
      for (std::int64_t p = 0; p < n; ++p) {
        float acc = bias;
        acc += w0 * r0[p];
        acc += w1 * r0[p + 1];
        acc += w2 * r0[p + 2];
        acc += w3 * r1[p];
        acc += w4 * r1[p + 1];
        acc += w5 * r1[p + 2];
        acc += w6 * r2[p];
        acc += w7 * r2[p + 1];
        acc += w8 * r2[p + 2];
        out[p] = acc;
      }
      return;
    }
    for (std::int64_t p = 0; p < n; ++p) {
      const std::int64_t q = p * step;
      float acc = bias;
      acc += w0 * r0[q];
      acc += w1 * r0[q + 1];
      acc += w2 * r0[q + 2];
      acc += w3 * r1[q];
      acc += w4 * r1[q + 1];
      acc += w5 * r1[q + 2];
      acc += w6 * r2[q];
      acc += w7 * r2[q + 1];
      acc += w8 * r2[q + 2];
      out[p] = acc;
    }
  } else {
    std::fill(out, out + n, bias);
    for (std::int64_t t = 0; t < taps; ++t) {
      const float wv = w[t];
      const float* st = s + off[t];
      if (step == 1) {
        for (std::int64_t p = 0; p < n; ++p) out[p] += wv * st[p];
      } else {
        for (std::int64_t p = 0; p < n; ++p) out[p] += wv * st[p * step];
      }
    }
  }
}

template <bool Fixed3x3>
[[gnu::always_inline]] inline void direct_planes(const DirectPlan& d, const float* x,
                                                 const float* w, const float* bias, float* y,
                                                 std::int64_t c_in, std::int64_t m,
                                                 const ConvEpilogue& e, std::int64_t begin,
                                                 std::int64_t end) {
  const std::int64_t mult = m / c_in, taps = d.kh_n * d.kw_n;
  const std::int64_t out_size = d.oh_n * d.ow_n;
  const std::int64_t finished = e.pool ? e.pool->out[0] * e.pool->out[1] : out_size;
  const bool flat = d.sh == 1 && d.sw == 1;
  // The padded plane, zero where no input is copied; at stride 1, the output rows at the padded
  // plane's row stride, unless that stride is the output width; with a pool, the conv's plane
  // before it is pooled into y.
  std::vector<float> padded(static_cast<std::size_t>(d.hp * d.wp), 0.0f);
  const bool direct_out = !flat || d.wp == d.ow_n;
  std::vector<float> rows(direct_out ? 0 : static_cast<std::size_t>(d.oh_n * d.wp));
  std::vector<float> conv_plane(e.pool ? static_cast<std::size_t>(out_size) : 0);
  std::int64_t padded_from = -1;  // the input plane now in `padded`
  for (std::int64_t plane = begin; plane < end; ++plane) {
    const std::int64_t b = plane / m, oc = plane % m;
    const std::int64_t in_plane = b * c_in + oc / mult;
    if (in_plane != padded_from) {
      pad_plane(d, x + in_plane * d.ih_n * d.iw_n, padded.data());
      padded_from = in_plane;
    }
    const float* wk = w + oc * taps;
    float* yp = e.pool ? conv_plane.data() : y + plane * out_size;
    const float bv = bias ? bias[oc] : 0.0f;
    if (flat) {
      float* out = direct_out ? yp : rows.data();
      taps_range<Fixed3x3>(padded.data(), 1, wk, bv, out, (d.oh_n - 1) * d.wp + d.ow_n,
                           d.offsets.data(), taps);
      if (!direct_out)
        for (std::int64_t oh = 0; oh < d.oh_n; ++oh)
          std::memcpy(yp + oh * d.ow_n, out + oh * d.wp,
                      static_cast<std::size_t>(d.ow_n) * sizeof(float));
    } else {
      for (std::int64_t oh = 0; oh < d.oh_n; ++oh)
        taps_range<Fixed3x3>(padded.data() + oh * d.sh * d.wp, d.sw, wk, bv, yp + oh * d.ow_n,
                             d.ow_n, d.offsets.data(), taps);
    }
    if (!e.empty()) finish_conv_plane(e, yp, out_size, y + plane * finished);
  }
}

// Compiled for AVX2 and baseline x86-64 (spatial.h).
QFORGE_MODEL_VECTOR_CLONES void direct_planes_3x3(const DirectPlan& d, const float* x,
                                                  const float* w, const float* bias, float* y,
                                                  std::int64_t c_in, std::int64_t m,
                                                  const ConvEpilogue& e, std::int64_t begin,
                                                  std::int64_t end) {
  direct_planes<true>(d, x, w, bias, y, c_in, m, e, begin, end);
}
QFORGE_MODEL_VECTOR_CLONES void direct_planes_any(const DirectPlan& d, const float* x,
                                                  const float* w, const float* bias, float* y,
                                                  std::int64_t c_in, std::int64_t m,
                                                  const ConvEpilogue& e, std::int64_t begin,
                                                  std::int64_t end) {
  direct_planes<false>(d, x, w, bias, y, c_in, m, e, begin, end);
}

}  // namespace

void direct_conv_2d(const float* x, const float* w, const float* bias, float* y, std::int64_t batch,
                    std::int64_t c_in, std::int64_t m, const WindowGeometry& g,
                    const ConvEpilogue& e) {
  const DirectPlan d = plan_direct(g);
  const std::int64_t taps = d.kh_n * d.kw_n, plane = d.oh_n * d.ow_n;
  // A task of at least kElementGrain multiply-adds: far more than handing it out costs.
  const std::int64_t grain =
      std::max<std::int64_t>(1, kElementGrain / std::max<std::int64_t>(plane * taps, 1));
  const bool fixed3x3 = d.kh_n == 3 && d.kw_n == 3 && d.dw == 1;
  parallel_for(batch * m, grain, [&](std::int64_t begin, std::int64_t end) {
    if (fixed3x3) direct_planes_3x3(d, x, w, bias, y, c_in, m, e, begin, end);
    else direct_planes_any(d, x, w, bias, y, c_in, m, e, begin, end);
  });
}

}  // namespace qforge::model::ops
