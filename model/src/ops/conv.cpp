// Conv (any number of spatial axes, groups, dilations, explicit or automatic pads): a direct loop
// for 2-D depthwise convs, otherwise im2col over a batch chunk followed by one sgemm per group.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "ops/kernel.h"
#include "ops/spatial.h"

namespace qforge::model::ops {
namespace {

WindowGeometry conv_geometry(const Node& n, const Shape& x, const Shape& w) {
  Shape in_spatial(x.begin() + 2, x.end());
  std::vector<std::int64_t> kernel(w.begin() + 2, w.end());
  if (n.has_attribute("kernel_shape") && n.attr_ints_or("kernel_shape", {}) != kernel)
    fail(n, ErrorCode::shape_mismatch,
         "kernel_shape does not match the weight shape " + qforge::to_string(w));
  return window_geometry(n, in_spatial, kernel, /*allow_dilations=*/true, /*allow_ceil=*/false);
}

std::vector<TensorType> infer_conv(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  require_type(n, in, 1, {ElementType::float32});
  const Shape& x = in[0].type->shape;
  const Shape& w = in[1].type->shape;
  if (x.size() < 3 || w.size() != x.size())
    fail(n, ErrorCode::shape_mismatch,
         "X " + qforge::to_string(x) + " and W " + qforge::to_string(w) +
             " must be (N, C, spatial...) and (M, C/group, kernel...)");
  const std::int64_t group = n.attr_int_or("group", 1);
  if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1])
    fail(n, ErrorCode::shape_mismatch,
         "group " + std::to_string(group) + " does not fit X " + qforge::to_string(x) + " and W " +
             qforge::to_string(w));
  if (in.size() > 2 && in[2].present()) {
    require_type(n, in, 2, {ElementType::float32});
    if (in[2].type->shape != Shape{w[0]})
      fail(n, ErrorCode::shape_mismatch, "B must be [" + std::to_string(w[0]) + "]");
  }
  const WindowGeometry g = conv_geometry(n, x, w);
  Shape out{x[0], w[0]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return {{ElementType::float32, out}};
}

// Output positions o in [0, count) whose input position o * stride + start lies in [0, extent).
std::pair<std::int64_t, std::int64_t> valid_range(std::int64_t start, std::int64_t stride,
                                                  std::int64_t extent, std::int64_t count) {
  const std::int64_t lo = start >= 0 ? 0 : (-start + stride - 1) / stride;
  const std::int64_t last = extent - 1 - start;
  const std::int64_t hi = last < 0 ? 0 : last / stride + 1;
  return {std::min(lo, count), std::clamp(hi, std::min(lo, count), count)};
}

// Column matrix of one image and group: row (c, kernel offset), column = output position; rows
// are `ld` floats apart so that the images of a batch chunk sit side by side in one matrix.
void im2col(const float* x, std::int64_t channels, const WindowGeometry& g, float* col,
            std::int64_t ld) {
  const std::size_t r = g.in.size();
  std::int64_t in_size = 1, out_size = 1, k_size = 1;
  for (std::size_t i = 0; i < r; ++i) {
    in_size *= g.in[i];
    out_size *= g.out[i];
    k_size *= g.kernel[i];
  }
  const std::size_t last = r - 1;
  const std::int64_t inner_out = g.out[last], inner_in = g.in[last], stride = g.strides[last];
  std::vector<std::int64_t> kidx(r), oidx(r);
  for (std::int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * in_size;
    std::fill(kidx.begin(), kidx.end(), 0);
    for (std::int64_t kk = 0; kk < k_size; ++kk) {
      float* row = col + (c * k_size + kk) * ld;
      const std::int64_t start = kidx[last] * g.dilations[last] - g.pad_begin[last];
      const auto [lo, hi] = valid_range(start, stride, inner_in, inner_out);
      std::fill(oidx.begin(), oidx.end(), 0);
      for (std::int64_t p = 0; p < out_size; p += inner_out) {
        // Offset of the outer spatial axes; the row is padding when any of them falls outside.
        std::int64_t base = 0;
        bool inside = true;
        for (std::size_t d = 0; d < last; ++d) {
          const std::int64_t pos =
              oidx[d] * g.strides[d] - g.pad_begin[d] + kidx[d] * g.dilations[d];
          if (pos < 0 || pos >= g.in[d]) {
            inside = false;
            break;
          }
          base = base * g.in[d] + pos;
        }
        float* dst = row + p;
        if (!inside) {
          std::fill(dst, dst + inner_out, 0.0f);
        } else {
          const float* src = xc + base * inner_in + start;
          std::fill(dst, dst + lo, 0.0f);
          if (stride == 1) {
            std::copy(src + lo, src + hi, dst + lo);
          } else {
            for (std::int64_t o = lo; o < hi; ++o) dst[o] = src[o * stride];
          }
          std::fill(dst + hi, dst + inner_out, 0.0f);
        }
        for (std::size_t d = last; d-- > 0;) {
          if (++oidx[d] < g.out[d]) break;
          oidx[d] = 0;
        }
      }
      for (std::size_t d = r; d-- > 0;) {
        if (++kidx[d] < g.kernel[d]) break;
        kidx[d] = 0;
      }
    }
  }
}

// One input channel per group (depthwise) in 2-D: a direct loop, since per-group sgemm calls
// would be tiny. The inner loop runs over a row of output positions with the padding columns
// cut off beforehand, so it vectorises.
QFORGE_MODEL_VECTOR_CLONES void depthwise_2d(const float* x, const float* w, const float* bias,
                                             float* y, std::int64_t planes,
                                             std::int64_t channels_out, std::int64_t c_in,
                                             std::int64_t mult, const WindowGeometry& g) {
  const std::int64_t ih_n = g.in[0], iw_n = g.in[1], oh_n = g.out[0], ow_n = g.out[1];
  const std::int64_t kh_n = g.kernel[0], kw_n = g.kernel[1];
  const std::int64_t sh = g.strides[0], sw = g.strides[1];
  std::vector<std::pair<std::int64_t, std::int64_t>> cols(static_cast<std::size_t>(kw_n));
  for (std::int64_t kw = 0; kw < kw_n; ++kw)
    cols[kw] = valid_range(kw * g.dilations[1] - g.pad_begin[1], sw, iw_n, ow_n);
  // Columns whose whole window row lies inside the input (every kw tap valid).
  std::int64_t inner_lo = 0, inner_hi = ow_n;
  for (const auto& [lo, hi] : cols) {
    inner_lo = std::max(inner_lo, lo);
    inner_hi = std::min(inner_hi, hi);
  }
  inner_hi = std::max(inner_hi, inner_lo);
  // The common 3x3 stride-1 undilated kernel sums its nine taps in registers for interior output
  // positions instead of updating the output row once per tap.
  const bool fused3x3 =
      kh_n == 3 && kw_n == 3 && sw == 1 && g.dilations[0] == 1 && g.dilations[1] == 1;
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const std::int64_t b = plane / channels_out, oc = plane % channels_out;
    const float* xp = x + (b * c_in + oc / mult) * ih_n * iw_n;
    const float* wk = w + oc * kh_n * kw_n;
    float* yp = y + plane * oh_n * ow_n;
    const float bv = bias ? bias[oc] : 0.0f;
    for (std::int64_t oh = 0; oh < oh_n; ++oh) {
      float* yr = yp + oh * ow_n;
      const std::int64_t ih0 = oh * sh - g.pad_begin[0];
      if (fused3x3 && ih0 >= 0 && ih0 + 2 < ih_n) {
        const float* r0 = xp + ih0 * iw_n - g.pad_begin[1];
        const float* r1 = r0 + iw_n;
        const float* r2 = r1 + iw_n;
        const float w0 = wk[0], w1 = wk[1], w2 = wk[2], w3 = wk[3], w4 = wk[4], w5 = wk[5],
                    w6 = wk[6], w7 = wk[7], w8 = wk[8];
        for (std::int64_t o = inner_lo; o < inner_hi; ++o)
          yr[o] = bv + (w0 * r0[o] + w1 * r0[o + 1] + w2 * r0[o + 2]) +
                  (w3 * r1[o] + w4 * r1[o + 1] + w5 * r1[o + 2]) +
                  (w6 * r2[o] + w7 * r2[o + 1] + w8 * r2[o + 2]);
        // The few border columns, with their taps in the padding skipped.
        const auto border = [&](std::int64_t o) {
          float acc = bv;
          for (std::int64_t kh = 0; kh < 3; ++kh)
            for (std::int64_t kw = 0; kw < 3; ++kw) {
              const std::int64_t iw = o - g.pad_begin[1] + kw;
              if (iw >= 0 && iw < iw_n) acc += wk[kh * 3 + kw] * xp[(ih0 + kh) * iw_n + iw];
            }
          yr[o] = acc;
        };
        for (std::int64_t o = 0; o < inner_lo; ++o) border(o);
        for (std::int64_t o = inner_hi; o < ow_n; ++o) border(o);
        continue;
      }
      std::fill(yr, yr + ow_n, bv);
      for (std::int64_t kh = 0; kh < kh_n; ++kh) {
        const std::int64_t ih = ih0 + kh * g.dilations[0];
        if (ih < 0 || ih >= ih_n) continue;
        const float* xr = xp + ih * iw_n;
        for (std::int64_t kw = 0; kw < kw_n; ++kw) {
          const float wv = wk[kh * kw_n + kw];
          const float* src = xr + kw * g.dilations[1] - g.pad_begin[1];
          const auto [lo, hi] = cols[kw];
          if (sw == 1) {
            for (std::int64_t o = lo; o < hi; ++o) yr[o] += wv * src[o];
          } else {
            for (std::int64_t o = lo; o < hi; ++o) yr[o] += wv * src[o * sw];
          }
        }
      }
    }
  }
}

// The column matrix of a batch chunk and the sgemm result are bounded by this many bytes (the
// chunk shrinks to one image when even that does not fit).
constexpr std::int64_t kScratchBytes = std::int64_t{64} << 20;

void run_conv(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& xs = in[0]->shape();
  const Shape& ws = in[1]->shape();
  const WindowGeometry g = conv_geometry(n, xs, ws);
  const std::int64_t group = n.attr_int_or("group", 1);
  const std::int64_t batch = xs[0], c_in = xs[1], m = ws[0];
  const std::int64_t cg = c_in / group, mg = m / group;
  std::int64_t in_size = 1, out_size = 1, k_size = 1;
  bool pointwise = true;  // 1x1, stride 1, no padding: the input already is the column matrix
  for (std::size_t i = 0; i < g.in.size(); ++i) {
    in_size *= g.in[i];
    out_size *= g.out[i];
    k_size *= g.kernel[i];
    pointwise = pointwise && g.kernel[i] == 1 && g.strides[i] == 1 && g.pad_begin[i] == 0 &&
                g.pad_end[i] == 0;
  }
  const float* x = in[0]->values<float>().data();
  const float* w = in[1]->values<float>().data();
  const float* bias = in.size() > 2 && in[2] ? in[2]->values<float>().data() : nullptr;
  float* y = out[0]->values<float>().data();
  if (out[0]->size() == 0) return;
  const std::int64_t rows = cg * k_size;
  if (rows == 0) {
    for (std::int64_t plane = 0; plane < batch * m; ++plane)
      std::fill(y + plane * out_size, y + (plane + 1) * out_size, bias ? bias[plane % m] : 0.0f);
    return;
  }
  if (cg == 1 && g.in.size() == 2) {
    depthwise_2d(x, w, bias, y, batch * m, m, c_in, mg, g);
    return;
  }
  // A single image needs no gathering when the conv is pointwise: sgemm reads the input directly
  // and writes the output directly.
  if (batch == 1 && pointwise) {
    for (std::int64_t gi = 0; gi < group; ++gi) {
      float* yg = y + gi * mg * out_size;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mg),
                  static_cast<int>(out_size), static_cast<int>(rows), 1.0f, w + gi * mg * rows,
                  static_cast<int>(rows), x + gi * cg * in_size, static_cast<int>(out_size), 0.0f,
                  yg, static_cast<int>(out_size));
      if (bias)
        for (std::int64_t oc = 0; oc < mg; ++oc)
          for (std::int64_t p = 0; p < out_size; ++p) yg[oc * out_size + p] += bias[gi * mg + oc];
    }
    return;
  }
  // Otherwise each group of a batch chunk is ONE sgemm [mg x rows] x [rows x chunk*out_size]:
  // few large calls keep OpenBLAS's threads busy instead of waking them for tiny matrices.
  const std::int64_t per_image = (rows + mg) * out_size * std::int64_t{sizeof(float)};
  const std::int64_t chunk = std::clamp<std::int64_t>(kScratchBytes / per_image, 1, batch);
  const std::int64_t ld = chunk * out_size;
  // Uninitialised: every element is written before it is read, and zero-filling megabytes of
  // scratch per call showed in profiles.
  const auto col = std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(rows * ld));
  const auto res = std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(mg * ld));
  for (std::int64_t b0 = 0; b0 < batch; b0 += chunk) {
    const std::int64_t nb = std::min(chunk, batch - b0);
    for (std::int64_t gi = 0; gi < group; ++gi) {
      for (std::int64_t b = 0; b < nb; ++b) {
        const float* xg = x + ((b0 + b) * c_in + gi * cg) * in_size;
        if (pointwise) {
          for (std::int64_t c = 0; c < cg; ++c)
            std::copy(xg + c * in_size, xg + (c + 1) * in_size, col.get() + c * ld + b * out_size);
        } else {
          im2col(xg, cg, g, col.get() + b * out_size, ld);
        }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mg),
                  static_cast<int>(nb * out_size), static_cast<int>(rows), 1.0f, w + gi * mg * rows,
                  static_cast<int>(rows), col.get(), static_cast<int>(ld), 0.0f, res.get(),
                  static_cast<int>(ld));
      for (std::int64_t b = 0; b < nb; ++b)
        for (std::int64_t oc = 0; oc < mg; ++oc) {
          const float bv = bias ? bias[gi * mg + oc] : 0.0f;
          const float* src = res.get() + oc * ld + b * out_size;
          float* dst = y + ((b0 + b) * m + gi * mg + oc) * out_size;
          for (std::int64_t p = 0; p < out_size; ++p) dst[p] = src[p] + bv;
        }
    }
  }
}

void check_conv(const Node& n) { check_window_attributes(n); }

}  // namespace

void register_conv(KernelRegistry& r) {
  r.add({"Conv",
         {1, 11},
         {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
         check_conv,
         infer_conv,
         run_conv});
}

}  // namespace qforge::model::ops
