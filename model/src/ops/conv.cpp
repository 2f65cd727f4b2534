// Conv (any number of spatial axes, groups, dilations, explicit or automatic pads) as im2col
// followed by one sgemm per image and group.
#include <cblas.h>

#include <algorithm>
#include <cstring>

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

// Column matrix of one image and group: row (c, kernel offset), column = output position.
void im2col(const float* x, std::int64_t channels, const WindowGeometry& g, float* col) {
  const std::size_t r = g.in.size();
  std::int64_t in_size = 1, out_size = 1, k_size = 1;
  for (std::size_t i = 0; i < r; ++i) {
    in_size *= g.in[i];
    out_size *= g.out[i];
    k_size *= g.kernel[i];
  }
  const std::int64_t inner_out = g.out[r - 1];
  std::vector<std::int64_t> kidx(r), oidx(r);
  for (std::int64_t c = 0; c < channels; ++c) {
    const float* xc = x + c * in_size;
    std::fill(kidx.begin(), kidx.end(), 0);
    for (std::int64_t kk = 0; kk < k_size; ++kk) {
      float* row = col + (c * k_size + kk) * out_size;
      std::fill(oidx.begin(), oidx.end(), 0);
      for (std::int64_t p = 0; p < out_size; p += inner_out) {
        // Offset of the outer spatial axes; -1 when any of them falls into padding.
        std::int64_t base = 0;
        bool inside = true;
        for (std::size_t d = 0; d + 1 < r; ++d) {
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
          const std::size_t d = r - 1;
          const float* src = xc + base * g.in[d];
          const std::int64_t start = kidx[d] * g.dilations[d] - g.pad_begin[d];
          for (std::int64_t o = 0; o < inner_out; ++o) {
            const std::int64_t pos = o * g.strides[d] + start;
            dst[o] = pos >= 0 && pos < g.in[d] ? src[pos] : 0.0f;
          }
        }
        for (std::size_t d = r - 1; d-- > 0;) {
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
  std::vector<float> col(pointwise ? 0 : static_cast<std::size_t>(rows * out_size));
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t gi = 0; gi < group; ++gi) {
      const float* xg = x + (b * c_in + gi * cg) * in_size;
      const float* cols = xg;
      if (!pointwise) {
        im2col(xg, cg, g, col.data());
        cols = col.data();
      }
      float* yg = y + (b * m + gi * mg) * out_size;
      if (rows == 0) {
        std::fill(yg, yg + mg * out_size, 0.0f);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mg),
                    static_cast<int>(out_size), static_cast<int>(rows), 1.0f, w + gi * mg * rows,
                    static_cast<int>(rows), cols, static_cast<int>(out_size), 0.0f, yg,
                    static_cast<int>(out_size));
      }
      if (bias)
        for (std::int64_t oc = 0; oc < mg; ++oc) {
          const float bv = bias[gi * mg + oc];
          float* row = yg + oc * out_size;
          for (std::int64_t p = 0; p < out_size; ++p) row[p] += bv;
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
