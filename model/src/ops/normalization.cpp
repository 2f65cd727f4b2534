// BatchNormalization (inference form) and LayerNormalization.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/fused.h"
#include "ops/kernel.h"
#include "ops/parallel.h"
#include "ops/spatial.h"
#include "ops/value_range.h"

namespace qforge::model::ops {
namespace {

void check_batchnorm(const Node& n) {
  if (n.since_version == 6 && n.attr_int_or("is_test", 0) != 1)
    fail(n, ErrorCode::unsupported,
         "is_test 0 (training) is not supported; export the model in eval mode");
  if (n.attr_int_or("training_mode", 0) != 0)
    fail(n, ErrorCode::unsupported,
         "training_mode 1 is not supported; export the model in eval mode");
  if (n.attr_int_or("spatial", 1) != 1)
    fail(n, ErrorCode::unsupported, "spatial 0 (per-activation statistics) is not supported");
  for (std::size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty())
      fail(n, ErrorCode::unsupported,
           "the running-statistics outputs (training) are not supported; only Y");
}

std::vector<TensorType> infer_batchnorm(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  const Shape& x = in[0].type->shape;
  if (x.size() < 2)
    fail(n, ErrorCode::shape_mismatch, "X " + qforge::to_string(x) + " must be (N, C, ...)");
  for (std::size_t i = 1; i < 5; ++i) {
    require_type(n, in, i, {ElementType::float32});
    if (in[i].type->shape != Shape{x[1]})
      fail(n, ErrorCode::shape_mismatch,
           "input " + std::to_string(i) + " ('" + n.input(i) + "') must be [" +
               std::to_string(x[1]) + "], got " + qforge::to_string(in[i].type->shape));
  }
  return {*in[0].type};
}

void run_batchnorm(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& s = in[0]->shape();
  const float eps = n.attr_float_or("epsilon", 1e-5f);
  const std::int64_t batch = s[0], c = s[1];
  const std::int64_t inner = c == 0 || batch == 0 ? 0 : in[0]->size() / (batch * c);
  const float* x = in[0]->values<float>().data();
  const float* scale = in[1]->values<float>().data();
  const float* bias = in[2]->values<float>().data();
  const float* mean = in[3]->values<float>().data();
  const float* var = in[4]->values<float>().data();
  float* y = out[0]->values<float>().data();
  for (std::int64_t ch = 0; ch < c; ++ch) {
    // y = (x - mean) / sqrt(var + eps) * scale + bias, as one multiply-add per element.
    const float a = scale[ch] / std::sqrt(var[ch] + eps);
    const float b = bias[ch] - mean[ch] * a;
    for (std::int64_t i = 0; i < batch; ++i) {
      const float* xp = x + (i * c + ch) * inner;
      float* yp = y + (i * c + ch) * inner;
      for (std::int64_t j = 0; j < inner; ++j) yp[j] = xp[j] * a + b;
    }
  }
}

// LayerNormalization (opset 17): normalise over the axes from `axis` to the end.
void check_layernorm(const Node& n) {
  const std::int64_t stash = n.attr_int_or("stash_type", 1);
  if (stash != 1)
    fail(n, ErrorCode::unsupported,
         "stash_type " + std::to_string(stash) + "; qforge computes in float32 (1)");
}

std::vector<TensorType> infer_layernorm(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  require_type(n, in, 1, {ElementType::float32});
  const Shape& x = in[0].type->shape;
  const std::int64_t axis =
      normalize_axis(n, n.attr_int_or("axis", -1), static_cast<std::int64_t>(x.size()));
  const Shape norm(x.begin() + axis, x.end());
  for (std::size_t i = 1; i < 3; ++i)
    if (i < in.size() && in[i].present()) {
      require_type(n, in, i, {ElementType::float32});
      // Index j % size in run_layernorm is right for a trailing block of the normalised axes
      // (leading 1s allowed), which is what exporters write.
      Shape t = in[i].type->shape;
      while (!t.empty() && t.front() == 1) t.erase(t.begin());
      if (t.size() > norm.size() ||
          !std::equal(t.begin(), t.end(), norm.end() - static_cast<std::ptrdiff_t>(t.size())))
        fail(n, ErrorCode::shape_mismatch,
             "input " + std::to_string(i) + " " + qforge::to_string(in[i].type->shape) +
                 " does not broadcast to " + qforge::to_string(norm));
    }
  Shape stats = x;
  std::fill(stats.begin() + axis, stats.end(), 1);
  std::vector<TensorType> out{*in[0].type};
  for (std::size_t i = 1; i < n.outputs.size(); ++i) out.push_back({ElementType::float32, stats});
  return out;
}

// LayerNormalization of rows [begin, end) of `cols` each, with scale and bias already spread to
// `cols` (bias may be null). Mean and variance are summed in double over eight lanes in a fixed
// order, so the loops vectorise and each row's result is the same whichever thread computes it.
QFORGE_MODEL_VECTOR_CLONES void layernorm_rows(const float* x, float* y, const float* scale,
                                               const float* bias, float* mean_out, float* inv_out,
                                               std::int64_t begin, std::int64_t end,
                                               std::int64_t cols, float eps) {
  constexpr std::int64_t L = 8;
  const std::int64_t whole = cols / L * L;
  for (std::int64_t r = begin; r < end; ++r) {
    const float* xr = x + r * cols;
    double s[L] = {};
    for (std::int64_t j = 0; j < whole; j += L)
      for (std::int64_t l = 0; l < L; ++l) s[l] += xr[j + l];
    double sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (std::int64_t j = whole; j < cols; ++j) sum += xr[j];
    const float mean = static_cast<float>(sum / static_cast<double>(cols));
    double q[L] = {};
    for (std::int64_t j = 0; j < whole; j += L)
      for (std::int64_t l = 0; l < L; ++l) {
        const double d = static_cast<double>(xr[j + l] - mean);
        q[l] += d * d;
      }
    double sq = ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));
    for (std::int64_t j = whole; j < cols; ++j) {
      const double d = static_cast<double>(xr[j] - mean);
      sq += d * d;
    }
    const float inv = 1.0f / std::sqrt(static_cast<float>(sq / static_cast<double>(cols)) + eps);
    float* yr = y + r * cols;
    if (bias)
      for (std::int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * inv * scale[j] + bias[j];
    else
      for (std::int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * inv * scale[j];
    if (mean_out) mean_out[r] = mean;
    if (inv_out) inv_out[r] = inv;
  }
}

void run_layernorm(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& s = in[0]->shape();
  const std::int64_t axis = normalize_axis(n, n.attr_int_or("axis", -1), in[0]->rank());
  const float eps = n.attr_float_or("epsilon", 1e-5f);
  std::int64_t rows = 1, cols = 1;
  for (std::int64_t d = 0; d < in[0]->rank(); ++d) (d < axis ? rows : cols) *= s[d];
  // Scale and bias cover a trailing block of the normalised axes (infer checked it): spread them
  // to a whole row once, so the row loop indexes them directly.
  auto spread = [cols](std::span<const float> v) {
    std::vector<float> row(static_cast<std::size_t>(cols));
    for (std::size_t j = 0; j < row.size(); ++j) row[j] = v[j % v.size()];
    return row;
  };
  const std::vector<float> scale = spread(in[1]->values<float>());
  const std::vector<float> bias =
      in.size() > 2 && in[2] ? spread(in[2]->values<float>()) : std::vector<float>();
  const float* x = in[0]->values<float>().data();
  float* y = out[0]->values<float>().data();
  float* mean_out = out.size() > 1 && out[1] ? out[1]->values<float>().data() : nullptr;
  float* inv_out = out.size() > 2 && out[2] ? out[2]->values<float>().data() : nullptr;
  // Rows are independent: split them across the pool, rows grouped to the grain.
  parallel_for(rows, std::max<std::int64_t>(1, kLibmGrain / std::max<std::int64_t>(cols, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 layernorm_rows(x, y, scale.data(), bias.empty() ? nullptr : bias.data(), mean_out,
                                inv_out, begin, end, cols, eps);
               });
}

}  // namespace

void add_layernorm(const AddLayerNorm& a, const float* x, float* y, std::int64_t rows,
                   std::int64_t cols) {
  parallel_for(rows, std::max<std::int64_t>(1, kLibmGrain / std::max<std::int64_t>(cols, 1)),
               [&](std::int64_t begin, std::int64_t end) {
                 float lo = 0.0f, hi = 0.0f;
                 for (std::int64_t r = begin; r < end; ++r) {
                   const float* xr = x + r * cols;
                   const float* rr = a.residual + r * cols;
                   float* yr = y + r * cols;
                   // The Adds as their kernels compute them, into the output row, then the
                   // row's normalisation in place (each element is read before it is written).
                   if (a.bias)
                     for (std::int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] + a.bias[j]) + rr[j];
                   else
                     for (std::int64_t j = 0; j < cols; ++j) yr[j] = xr[j] + rr[j];
                   layernorm_rows(y, y, a.scale, a.ln_bias, nullptr, nullptr, r, r + 1, cols,
                                  a.epsilon);
                   if (a.range) widen_range(yr, cols, lo, hi);  // the row is still in L1
                 }
                 if (a.range) a.range->merge(lo, hi);
               });
}

void register_normalization(KernelRegistry& r) {
  // Version 6 needs is_test 1; spatial exists until 9, training_mode from 14.
  r.add({"BatchNormalization",
         {6, 7, 9, 14, 15},
         {"epsilon", "is_test", "momentum", "spatial", "training_mode"},
         check_batchnorm,
         infer_batchnorm,
         run_batchnorm});
  r.add({"LayerNormalization",
         {17},
         {"axis", "epsilon", "stash_type"},
         check_layernorm,
         infer_layernorm,
         run_layernorm});
}

}  // namespace qforge::model::ops
