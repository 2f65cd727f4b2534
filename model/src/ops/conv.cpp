// Conv (any number of spatial axes, groups, dilations, explicit or automatic pads): a direct loop
// for 2-D convs with one input channel per group (direct_conv.h), otherwise im2col over a batch
// chunk followed by one sgemm per group. The executor's conv chains run it with a Relu and a
// MaxPool finished per output plane (conv.h).
#include "ops/conv.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "ops/direct_conv.h"
#include "ops/kernel.h"
#include "ops/parallel.h"
#include "ops/parallel_blas.h"
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

// The column matrix of a batch chunk and the sgemm result are bounded by this many bytes (the
// chunk shrinks to one image when even that does not fit).
constexpr std::int64_t kScratchBytes = std::int64_t{64} << 20;

// The column matrix and the sgemm result, kept per thread from call to call: a fresh buffer of
// megabytes is a fresh mmap whose pages fault in and are cleared by the kernel on every call
// (about a fifth of a calibration run's profile). Uninitialised: every element is written
// before it is read. It holds at most kScratchBytes plus one image's share.
float* conv_scratch(std::size_t floats) {
  thread_local std::unique_ptr<float[]> buffer;
  thread_local std::size_t capacity = 0;
  if (floats > capacity) {
    buffer.reset();
    buffer = std::make_unique_for_overwrite<float[]>(floats);
    capacity = floats;
  }
  return buffer.get();
}

// The plane count and the values per plane of the chain's output: the pool's output plane
// when there is a pool, else the conv's.
std::int64_t finished_plane_size(const ConvEpilogue& e, std::int64_t out_size) {
  return e.pool ? e.pool->out[0] * e.pool->out[1] : out_size;
}

void conv_forward(const Node& n, const Tensor& xt, const Tensor& wt, const Tensor* bt,
                  const ConvEpilogue& e, float* y) {
  const Shape& xs = xt.shape();
  const Shape& ws = wt.shape();
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
  const float* x = xt.values<float>().data();
  const float* w = wt.values<float>().data();
  const float* bias = bt ? bt->values<float>().data() : nullptr;
  if (batch * m * out_size == 0) return;
  const std::int64_t rows = cg * k_size;
  const std::int64_t finished = finished_plane_size(e, out_size);
  if (cg == 1 && g.in.size() == 2) {
    direct_conv_2d(x, w, bias, y, batch, c_in, m, g, e);
    return;
  }
  // The rare shapes below finish the planes after the whole conv (computed into a temporary when
  // a pool makes y smaller, else into y and finished in place).
  const bool later = !e.empty() && (rows == 0 || (batch == 1 && pointwise));
  std::vector<float> whole(later && e.pool ? static_cast<std::size_t>(batch * m * out_size) : 0);
  float* const conv_out = later && e.pool ? whole.data() : y;
  if (rows == 0) {
    for (std::int64_t plane = 0; plane < batch * m; ++plane)
      std::fill(conv_out + plane * out_size, conv_out + (plane + 1) * out_size,
                bias ? bias[plane % m] : 0.0f);
  } else if (batch == 1 && pointwise) {
    // A single image needs no gathering when the conv is pointwise: sgemm reads the input
    // directly and writes the output directly.
    for (std::int64_t gi = 0; gi < group; ++gi) {
      float* yg = conv_out + gi * mg * out_size;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mg),
                  static_cast<int>(out_size), static_cast<int>(rows), 1.0f, w + gi * mg * rows,
                  static_cast<int>(rows), x + gi * cg * in_size, static_cast<int>(out_size), 0.0f,
                  yg, static_cast<int>(out_size));
      if (bias)
        for (std::int64_t oc = 0; oc < mg; ++oc)
          for (std::int64_t p = 0; p < out_size; ++p) yg[oc * out_size + p] += bias[gi * mg + oc];
    }
  }
  if (later) {
    for (std::int64_t plane = 0; plane < batch * m; ++plane)
      finish_conv_plane(e, conv_out + plane * out_size, out_size, y + plane * finished);
    return;
  }
  if (rows == 0 || (batch == 1 && pointwise)) return;
  if (pointwise) {
    // Each image's pointwise conv is one sgemm reading the input in place, its result finished
    // (bias, epilogue) while it is in cache: the batch-wide column and result matrices below
    // would cost a gather, a zero fill, the result and the scatter, each a pass over memory.
    // Images are split across the pool, each sgemm on one thread.
    const SingleThreadedBlas one_thread;
    parallel_for(batch, std::max<std::int64_t>(1, kElementGrain / (m * out_size)),
                 [&](std::int64_t begin, std::int64_t end) {
                   std::vector<float> res(e.pool ? static_cast<std::size_t>(mg * out_size) : 0);
                   for (std::int64_t b = begin; b < end; ++b)
                     for (std::int64_t gi = 0; gi < group; ++gi) {
                       const std::int64_t first = b * m + gi * mg;  // its first output plane
                       float* dst = e.pool ? res.data() : y + first * out_size;
                       cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mg),
                                   static_cast<int>(out_size), static_cast<int>(rows), 1.0f,
                                   w + gi * mg * rows, static_cast<int>(rows),
                                   x + (b * c_in + gi * cg) * in_size, static_cast<int>(out_size),
                                   0.0f, dst, static_cast<int>(out_size));
                       for (std::int64_t oc = 0; oc < mg; ++oc) {
                         float* plane = dst + oc * out_size;
                         // + 0 without a bias, as the batched path adds: -0 becomes +0.
                         const float bv = bias ? bias[gi * mg + oc] : 0.0f;
                         for (std::int64_t p = 0; p < out_size; ++p) plane[p] += bv;
                         if (!e.empty())
                           finish_conv_plane(e, plane, out_size, y + (first + oc) * finished);
                       }
                     }
                 });
    return;
  }
  // Otherwise each group of a batch chunk is ONE sgemm [mg x rows] x [rows x chunk*out_size]:
  // few large calls keep OpenBLAS's threads busy instead of waking them for tiny matrices.
  const std::int64_t per_image = (rows + mg) * out_size * std::int64_t{sizeof(float)};
  const std::int64_t chunk = std::clamp<std::int64_t>(kScratchBytes / per_image, 1, batch);
  const std::int64_t ld = chunk * out_size;
  float* const scratch = conv_scratch(static_cast<std::size_t>((rows + mg) * ld));
  float* const col = scratch;
  float* const res = scratch + rows * ld;
  for (std::int64_t b0 = 0; b0 < batch; b0 += chunk) {
    const std::int64_t nb = std::min(chunk, batch - b0);
    for (std::int64_t gi = 0; gi < group; ++gi) {
      // The gather and the scatter below copy megabytes: split them by image across the pool.
      parallel_for(nb, std::max<std::int64_t>(1, kElementGrain / (rows * out_size)),
                   [&](std::int64_t begin, std::int64_t end) {
                     for (std::int64_t b = begin; b < end; ++b) {
                       const float* xg = x + ((b0 + b) * c_in + gi * cg) * in_size;
                       if (pointwise) {
                         for (std::int64_t c = 0; c < cg; ++c)
                           std::copy(xg + c * in_size, xg + (c + 1) * in_size,
                                     col + c * ld + b * out_size);
                       } else {
                         im2col(xg, cg, g, col + b * out_size, ld);
                       }
                     }
                   });
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mg),
                  static_cast<int>(nb * out_size), static_cast<int>(rows), 1.0f, w + gi * mg * rows,
                  static_cast<int>(rows), col, static_cast<int>(ld), 0.0f, res,
                  static_cast<int>(ld));
      parallel_for(
          nb * mg, std::max<std::int64_t>(1, kElementGrain / out_size),
          [&](std::int64_t begin, std::int64_t end) {
            // With a pool, each plane is finished from here (in cache) into y.
            std::vector<float> plane_buffer(e.pool ? static_cast<std::size_t>(out_size) : 0);
            for (std::int64_t plane = begin; plane < end; ++plane) {
              const std::int64_t b = plane / mg, oc = plane % mg;
              const float bv = bias ? bias[gi * mg + oc] : 0.0f;
              const float* src = res + oc * ld + b * out_size;
              const std::int64_t out_plane = (b0 + b) * m + gi * mg + oc;
              float* dst = e.pool ? plane_buffer.data() : y + out_plane * out_size;
              for (std::int64_t p = 0; p < out_size; ++p) dst[p] = src[p] + bv;
              if (!e.empty()) finish_conv_plane(e, dst, out_size, y + out_plane * finished);
            }
          });
    }
  }
}

void run_conv(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  conv_forward(n, *in[0], *in[1], in.size() > 2 ? in[2] : nullptr, ConvEpilogue{},
               out[0]->values<float>().data());
}

void check_conv(const Node& n) { check_window_attributes(n); }

}  // namespace

QFORGE_MODEL_VECTOR_CLONES void finish_conv_plane(const ConvEpilogue& e, float* plane,
                                                  std::int64_t out_size, float* out) {
  if (e.relu)
    for (std::int64_t p = 0; p < out_size; ++p) plane[p] = plane[p] > 0.0f ? plane[p] : 0.0f;
  if (e.pool) max_pool_planes(plane, out, 1, *e.pool);
}

void conv_fused(const Node& conv, const Tensor& x, const Tensor& w, const Tensor* bias,
                const ConvEpilogue& e, Tensor& y) {
  conv_forward(conv, x, w, bias, e, y.values<float>().data());
}

void register_conv(KernelRegistry& r) {
  r.add({"Conv",
         {1, 11},
         {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"},
         check_conv,
         infer_conv,
         run_conv});
}

}  // namespace qforge::model::ops
