// Add, Sub, Mul, Div, Pow, Equal (numpy broadcasting) and Where, split across the executor's
// pool by output rows (ops/broadcast.h).
#include <cmath>

#include "ops/broadcast.h"
#include "ops/kernel.h"
#include "ops/spatial.h"

namespace qforge::model::ops {
namespace {

enum class BinOp { add, sub, mul, div, pow, equal };

BinOp op_of(const Node& n) {
  if (n.op_type == "Add") return BinOp::add;
  if (n.op_type == "Sub") return BinOp::sub;
  if (n.op_type == "Mul") return BinOp::mul;
  if (n.op_type == "Div") return BinOp::div;
  if (n.op_type == "Pow") return BinOp::pow;
  return BinOp::equal;
}

// Before version 7 these ops broadcast only when `broadcast` is 1, and then B's shape matches a
// contiguous run of A's axes starting at `axis` (default: the trailing axes). Returns B's shape
// padded with 1s so that numpy broadcasting reproduces that; from version 7 B's own shape.
Shape effective_b_shape(const Node& n, const Shape& a, const Shape& b) {
  if (n.since_version >= 7) return b;
  if (n.attr_int_or("broadcast", 0) == 0) {
    if (a != b)
      fail(n, ErrorCode::shape_mismatch,
           "shapes " + qforge::to_string(a) + " and " + qforge::to_string(b) +
               " differ and broadcast is 0");
    return b;
  }
  const auto ra = static_cast<std::int64_t>(a.size()), rb = static_cast<std::int64_t>(b.size());
  if (rb == 1 && b[0] == 1) return b;  // a scalar-like B broadcasts everywhere
  std::int64_t axis = n.attr_int_or("axis", ra - rb);
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra)
    fail(n, ErrorCode::shape_mismatch,
         "B " + qforge::to_string(b) + " does not fit A " + qforge::to_string(a) + " at axis " +
             std::to_string(axis));
  Shape out(static_cast<std::size_t>(axis), 1);
  out.insert(out.end(), b.begin(), b.end());
  out.resize(a.size(), 1);
  return out;
}

std::vector<TensorType> infer_binary(const Node& n, std::span<const InferInput> in) {
  const BinOp op = op_of(n);
  if (op == BinOp::pow) {
    require_type(n, in, 0, {ElementType::float32});
    require_type(n, in, 1, {ElementType::float32, ElementType::int64, ElementType::int32});
  } else {
    require_type(
        n, in, 0,
        {ElementType::float32, ElementType::int64, ElementType::int32, ElementType::boolean});
    if (input_type(n, in, 1).type != in[0].type->type)
      fail(n, ErrorCode::invalid_argument, "inputs have different element types");
    if (op != BinOp::equal && in[0].type->type == ElementType::boolean)
      fail(n, ErrorCode::unsupported, "arithmetic on bool tensors is not supported");
  }
  const Shape b = effective_b_shape(n, in[0].type->shape, input_type(n, in, 1).shape);
  const Shape shape = broadcast_shapes(n, in[0].type->shape, b);
  if (n.since_version < 7 && shape != in[0].type->shape)
    fail(n, ErrorCode::shape_mismatch, "B must broadcast to A's shape before version 7");
  return {{op == BinOp::equal ? ElementType::boolean : in[0].type->type, shape}};
}

template <class T>
T apply(BinOp op, T a, T b) {
  switch (op) {
    case BinOp::add: return a + b;
    case BinOp::sub: return a - b;
    case BinOp::mul: return a * b;
    case BinOp::div:
      if constexpr (std::is_integral_v<T>)
        return b == 0 ? T{0} : a / b;  // ONNX leaves x/0 undefined
      else return a / b;
    default: return a;
  }
}

// z[j] = f(x[j * sx], y[j * sy]) for j < n, where each step is 0 (a broadcast operand) or 1
// (the inner axis of a broadcast walk): one plain loop per case, so each is a contiguous loop the
// compiler vectorises, with a broadcast operand read once.
template <class T, class F>
inline void binary_run(const T* x, std::int64_t sx, const T* y, std::int64_t sy, T* z,
                       std::int64_t n, F f) {
  if (sx == 1 && sy == 1) {
    for (std::int64_t j = 0; j < n; ++j) z[j] = f(x[j], y[j]);
  } else if (sx == 1 && sy == 0) {
    const T b = *y;
    for (std::int64_t j = 0; j < n; ++j) z[j] = f(x[j], b);
  } else if (sx == 0 && sy == 1) {
    const T a = *x;
    for (std::int64_t j = 0; j < n; ++j) z[j] = f(a, y[j]);
  } else {
    for (std::int64_t j = 0; j < n; ++j) z[j] = f(x[j * sx], y[j * sy]);
  }
}

template <class T, class F>
void run_arith_with(const Tensor& a, const Tensor& b, const Shape& bs, Tensor& out, F f) {
  const T* pa = a.values<T>().data();
  const T* pb = b.values<T>().data();
  T* po = out.values<T>().data();
  parallel_broadcast_rows<2>(out.shape(), {&a.shape(), &bs}, kElementGrain,
                             [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                               binary_run(pa + off[0], st[0], pb + off[1], st[1], po + o, n, f);
                             });
}

// The float loops compiled for AVX2 too (ops/spatial.h); the same arithmetic either way.
QFORGE_MODEL_VECTOR_CLONES void add_f32(const float* x, std::int64_t sx, const float* y,
                                        std::int64_t sy, float* z, std::int64_t n) {
  binary_run(x, sx, y, sy, z, n, [](float u, float v) { return u + v; });
}
QFORGE_MODEL_VECTOR_CLONES void sub_f32(const float* x, std::int64_t sx, const float* y,
                                        std::int64_t sy, float* z, std::int64_t n) {
  binary_run(x, sx, y, sy, z, n, [](float u, float v) { return u - v; });
}
QFORGE_MODEL_VECTOR_CLONES void mul_f32(const float* x, std::int64_t sx, const float* y,
                                        std::int64_t sy, float* z, std::int64_t n) {
  binary_run(x, sx, y, sy, z, n, [](float u, float v) { return u * v; });
}
QFORGE_MODEL_VECTOR_CLONES void div_f32(const float* x, std::int64_t sx, const float* y,
                                        std::int64_t sy, float* z, std::int64_t n) {
  binary_run(x, sx, y, sy, z, n, [](float u, float v) { return u / v; });
}

void run_arith_f32(BinOp op, const Tensor& a, const Tensor& b, const Shape& bs, Tensor& out) {
  using Fn = void (*)(const float*, std::int64_t, const float*, std::int64_t, float*, std::int64_t);
  const Fn fn = op == BinOp::add   ? add_f32
                : op == BinOp::sub ? sub_f32
                : op == BinOp::mul ? mul_f32
                                   : div_f32;
  const float* pa = a.values<float>().data();
  const float* pb = b.values<float>().data();
  float* po = out.values<float>().data();
  parallel_broadcast_rows<2>(out.shape(), {&a.shape(), &bs}, kElementGrain,
                             [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                               fn(pa + off[0], st[0], pb + off[1], st[1], po + o, n);
                             });
}

template <class T>
void run_arith(BinOp op, const Tensor& a, const Tensor& b, const Shape& bs, Tensor& out) {
  switch (op) {
    case BinOp::add: run_arith_with<T>(a, b, bs, out, [](T u, T v) { return u + v; }); break;
    case BinOp::sub: run_arith_with<T>(a, b, bs, out, [](T u, T v) { return u - v; }); break;
    case BinOp::mul: run_arith_with<T>(a, b, bs, out, [](T u, T v) { return u * v; }); break;
    default: run_arith_with<T>(a, b, bs, out, [op](T u, T v) { return apply(op, u, v); }); break;
  }
}

template <class T>
void run_equal(const Tensor& a, const Tensor& b, const Shape& bs, Tensor& out) {
  const T* pa = a.values<T>().data();
  const T* pb = b.values<T>().data();
  bool* po = out.values<bool>().data();
  parallel_broadcast_rows<2>(out.shape(), {&a.shape(), &bs}, kElementGrain,
                             [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                               for (std::int64_t j = 0; j < n; ++j)
                                 po[o + j] = pa[off[0] + j * st[0]] == pb[off[1] + j * st[1]];
                             });
}

template <class E>
void run_pow(const Tensor& a, const Tensor& b, const Shape& bs, Tensor& out) {
  const float* pa = a.values<float>().data();
  const E* pb = b.values<E>().data();
  float* po = out.values<float>().data();
  parallel_broadcast_rows<2>(out.shape(), {&a.shape(), &bs}, kElementGrain,
                             [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                               for (std::int64_t j = 0; j < n; ++j) {
                                 const float x = pa[off[0] + j * st[0]];
                                 const float e = static_cast<float>(pb[off[1] + j * st[1]]);
                                 // x*x is what the exporters mean by Pow(x, 2) and is exact.
                                 po[o + j] = e == 2.0f ? x * x : std::pow(x, e);
                               }
                             });
}

void run_binary(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const BinOp op = op_of(n);
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  Tensor& o = *out[0];
  const Shape bs = effective_b_shape(n, a.shape(), b.shape());
  if (op == BinOp::pow) {
    if (b.type() == ElementType::float32) run_pow<float>(a, b, bs, o);
    else if (b.type() == ElementType::int64) run_pow<std::int64_t>(a, b, bs, o);
    else run_pow<std::int32_t>(a, b, bs, o);
    return;
  }
  if (op == BinOp::equal) {
    switch (a.type()) {
      case ElementType::float32: run_equal<float>(a, b, bs, o); break;
      case ElementType::int64: run_equal<std::int64_t>(a, b, bs, o); break;
      case ElementType::int32: run_equal<std::int32_t>(a, b, bs, o); break;
      default: run_equal<bool>(a, b, bs, o); break;
    }
    return;
  }
  switch (a.type()) {
    case ElementType::float32: run_arith_f32(op, a, b, bs, o); break;
    case ElementType::int64: run_arith<std::int64_t>(op, a, b, bs, o); break;
    default: run_arith<std::int32_t>(op, a, b, bs, o); break;
  }
}

std::vector<TensorType> infer_where(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::boolean});
  const TensorType& x = input_type(n, in, 1);
  if (input_type(n, in, 2).type != x.type)
    fail(n, ErrorCode::invalid_argument, "X and Y have different element types");
  Shape s = broadcast_shapes(n, in[0].type->shape, x.shape);
  s = broadcast_shapes(n, s, in[2].type->shape);
  return {{x.type, s}};
}

void run_where(const Node&, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const std::size_t es = element_size(out[0]->type());
  const bool* c = in[0]->values<bool>().data();
  const std::byte* x = in[1]->data();
  const std::byte* y = in[2]->data();
  std::byte* o = out[0]->data();
  parallel_broadcast_rows<3>(
      out[0]->shape(), {&in[0]->shape(), &in[1]->shape(), &in[2]->shape()}, kElementGrain,
      [&](std::int64_t oo, const auto& off, const auto& st, std::int64_t n) {
        for (std::int64_t j = 0; j < n; ++j) {
          const std::byte* src =
              c[off[0] + j * st[0]] ? x + (off[1] + j * st[1]) * es : y + (off[2] + j * st[2]) * es;
          std::copy(src, src + es, o + (oo + j) * es);
        }
      });
}

}  // namespace

void register_elementwise(KernelRegistry& r) {
  // Version 6 (Pow 1) broadcasts by the legacy `broadcast`/`axis` attributes; 7 on is numpy.
  // Version 1 of Add..Div also carries consumed_inputs and is not supported.
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    r.add({op, {6, 7, 13, 14}, {"axis", "broadcast"}, nullptr, infer_binary, run_binary});
  r.add({"Pow", {1, 7, 12, 13, 15}, {"axis", "broadcast"}, nullptr, infer_binary, run_binary});
  r.add({"Equal", {7, 11, 13}, {}, nullptr, infer_binary, run_binary});
  r.add({"Where", {9, 16}, {}, nullptr, infer_where, run_where});
}

}  // namespace qforge::model::ops
