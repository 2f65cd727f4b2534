// Unary float ops: Relu, LeakyRelu, PRelu, Elu, Selu, Sigmoid, Tanh, Erf, Sqrt, Exp, Neg, Abs,
// Reciprocal, Softsign, Softplus, Clip.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/broadcast.h"
#include "ops/fused.h"
#include "ops/kernel.h"
#include "ops/parallel.h"
#include "ops/spatial.h"

namespace qforge::model::ops {
namespace {

std::vector<TensorType> infer_unary(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  return {*in[0].type};
}

// y[i] = f(x[i]); y may be x (Relu in place). Split across the pool: each element on its own;
// `grain` is kLibmGrain for functions that call libm, else kElementGrain.
template <class F>
void map(const Tensor& x, Tensor& y, F f, std::int64_t grain = kLibmGrain) {
  const float* a = x.values<float>().data();
  float* b = y.values<float>().data();
  parallel_for(x.size(), grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) b[i] = f(a[i]);
  });
}

QFORGE_MODEL_VECTOR_CLONES void relu_span(const float* a, float* b, std::int64_t begin,
                                          std::int64_t end) {
  for (std::int64_t i = begin; i < end; ++i) b[i] = a[i] > 0.0f ? a[i] : 0.0f;
}

void run_unary(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  const std::string& op = n.op_type;
  if (op == "Relu") {
    const float* a = x.values<float>().data();
    float* b = y.values<float>().data();
    parallel_for(x.size(), kElementGrain,
                 [&](std::int64_t begin, std::int64_t end) { relu_span(a, b, begin, end); });
  } else if (op == "Sigmoid")
    // Split by sign so exp never overflows: 1/(1+e^-v) for v >= 0, e^v/(1+e^v) below.
    map(x, y, [](float v) {
      if (v >= 0) return 1.0f / (1.0f + std::exp(-v));
      const float e = std::exp(v);
      return e / (1.0f + e);
    });
  else if (op == "Tanh") map(x, y, [](float v) { return std::tanh(v); });
  else if (op == "Erf") {
    const float* a = x.values<float>().data();
    float* b = y.values<float>().data();
    parallel_for(x.size(), kElementGrain, [&](std::int64_t begin, std::int64_t end) {
      erf_values(a + begin, b + begin, end - begin);
    });
  } else if (op == "Sqrt") map(x, y, [](float v) { return std::sqrt(v); });
  else if (op == "Exp") map(x, y, [](float v) { return std::exp(v); });
  else if (op == "Neg")
    map(
        x, y, [](float v) { return -v; }, kElementGrain);
  else if (op == "Abs")
    map(
        x, y, [](float v) { return std::fabs(v); }, kElementGrain);
  else if (op == "Reciprocal") map(x, y, [](float v) { return 1.0f / v; });
  else if (op == "Softsign") map(x, y, [](float v) { return v / (1.0f + std::fabs(v)); });
  // log(1 + e^v) without overflow for large v: max(v, 0) + log1p(e^-|v|).
  else if (op == "Softplus")
    map(x, y, [](float v) { return std::max(v, 0.0f) + std::log1p(std::exp(-std::fabs(v))); });
  else if (op == "Elu") {
    const float alpha = n.attr_float_or("alpha", 1.0f);
    map(x, y, [alpha](float v) { return v >= 0 ? v : alpha * std::expm1(v); });
  } else if (op == "Selu") {
    const float alpha = n.attr_float_or("alpha", 1.67326319217681884765625f);
    const float gamma = n.attr_float_or("gamma", 1.05070102214813232421875f);
    map(x, y,
        [alpha, gamma](float v) { return v > 0 ? gamma * v : gamma * alpha * std::expm1(v); });
  } else if (op == "LeakyRelu") {
    const float alpha = n.attr_float_or("alpha", 0.01f);
    map(
        x, y, [alpha](float v) { return v >= 0 ? v : alpha * v; }, kElementGrain);
  } else {
    fail(n, ErrorCode::internal, "no unary function");
  }
}

// Clip: bounds are attributes before version 11 and optional scalar inputs from 11 on.
std::vector<TensorType> infer_clip(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  for (std::size_t i = 1; i < 3; ++i)
    if (i < in.size() && in[i].present()) {
      require_type(n, in, i, {ElementType::float32});
      if (element_count(in[i].type->shape) != 1)
        fail(n, ErrorCode::invalid_argument, "min and max must be scalars");
    }
  return {*in[0].type};
}

void run_clip(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  if (n.since_version < 11) {
    lo = n.attr_float_or("min", lo);
    hi = n.attr_float_or("max", hi);
  } else {
    if (in.size() > 1 && in[1]) lo = in[1]->values<float>()[0];
    if (in.size() > 2 && in[2]) hi = in[2]->values<float>()[0];
  }
  // min(max(x, lo), hi): with lo > hi every value becomes hi, as in ONNX's reference.
  map(
      *in[0], *out[0], [lo, hi](float v) { return std::min(std::max(v, lo), hi); }, kElementGrain);
}

// PRelu: slope broadcasts to X (unidirectional). Version 6 predates numpy broadcasting: a slope
// of C values is per channel (axis 1), as PyTorch's nn.PReLU exports it.
Shape slope_shape(const Node& n, const Shape& x, const Shape& slope) {
  if (n.since_version < 7 && slope.size() == 1 && x.size() >= 2 && slope[0] == x[1] &&
      slope[0] != 1) {
    Shape s(x.size() - 1, 1);
    s[0] = slope[0];
    return s;
  }
  return slope;
}

std::vector<TensorType> infer_prelu(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  require_type(n, in, 1, {ElementType::float32});
  if (broadcast_shapes(n, in[0].type->shape,
                       slope_shape(n, in[0].type->shape, in[1].type->shape)) != in[0].type->shape)
    fail(n, ErrorCode::shape_mismatch,
         "slope " + qforge::to_string(in[1].type->shape) + " does not broadcast to X " +
             qforge::to_string(in[0].type->shape));
  return {*in[0].type};
}

void run_prelu(const Node& node, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape ss = slope_shape(node, in[0]->shape(), in[1]->shape());
  const float* x = in[0]->values<float>().data();
  const float* s = in[1]->values<float>().data();
  float* y = out[0]->values<float>().data();
  parallel_broadcast_rows<2>(out[0]->shape(), {&in[0]->shape(), &ss}, kElementGrain,
                             [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                               for (std::int64_t j = 0; j < n; ++j) {
                                 const float v = x[off[0] + j * st[0]];
                                 y[o + j] = v >= 0 ? v : v * s[off[1] + j * st[1]];
                               }
                             });
}

void check_clip(const Node& n) {
  if (n.since_version >= 11 && (n.has_attribute("min") || n.has_attribute("max")))
    fail(n, ErrorCode::invalid_argument, "min/max are inputs from Clip version 11 on");
}

}  // namespace

void register_activations(KernelRegistry& r) {
  // Version 1 of these ops carries the legacy consumed_inputs attribute; 6 on is current.
  r.add({"Relu", {6, 13, 14}, {}, nullptr, infer_unary, run_unary});
  r.add({"Sigmoid", {6, 13}, {}, nullptr, infer_unary, run_unary});
  r.add({"Tanh", {6, 13}, {}, nullptr, infer_unary, run_unary});
  r.add({"Erf", {9, 13}, {}, nullptr, infer_unary, run_unary});
  r.add({"Sqrt", {6, 13}, {}, nullptr, infer_unary, run_unary});
  r.add({"Exp", {6, 13}, {}, nullptr, infer_unary, run_unary});
  r.add({"Neg", {6, 13}, {}, nullptr, infer_unary, run_unary});
  r.add({"Abs", {6, 13}, {}, nullptr, infer_unary, run_unary});
  r.add({"Reciprocal", {6, 13}, {}, nullptr, infer_unary, run_unary});
  r.add({"Softsign", {1}, {}, nullptr, infer_unary, run_unary});
  r.add({"Softplus", {1}, {}, nullptr, infer_unary, run_unary});
  r.add({"Elu", {6}, {"alpha"}, nullptr, infer_unary, run_unary});
  r.add({"Selu", {6}, {"alpha", "gamma"}, nullptr, infer_unary, run_unary});
  r.add({"LeakyRelu", {6, 16}, {"alpha"}, nullptr, infer_unary, run_unary});
  r.add({"PRelu", {6, 7, 9, 16}, {}, nullptr, infer_prelu, run_prelu});
  r.add({"Clip", {6, 11, 12, 13}, {"min", "max"}, check_clip, infer_clip, run_clip});
}

}  // namespace qforge::model::ops
