// MaxPool, AveragePool and GlobalAveragePool over any number of spatial axes.
#include <algorithm>
#include <limits>

#include "ops/kernel.h"
#include "ops/spatial.h"

namespace qforge::model::ops {
namespace {

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

void run_pool(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
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
  for (std::int64_t p = 0; p < planes; ++p) {
    float acc = 0.0f;
    for (std::int64_t i = 0; i < size; ++i) acc += x[p * size + i];
    y[p] = acc / static_cast<float>(size);
  }
}

}  // namespace

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
