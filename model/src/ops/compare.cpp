// Comparisons and boolean logic, as exporters write attention masks: Less, Greater, LessOrEqual,
// GreaterOrEqual (float32, int64, int32 -> bool), And, Or, Xor (bool), Not (bool). numpy
// broadcasting throughout.
#include "ops/broadcast.h"
#include "ops/kernel.h"

namespace qforge::model::ops {
namespace {

enum class Cmp { less, greater, less_equal, greater_equal, and_, or_, xor_ };

Cmp cmp_of(const Node& n) {
  if (n.op_type == "Less") return Cmp::less;
  if (n.op_type == "Greater") return Cmp::greater;
  if (n.op_type == "LessOrEqual") return Cmp::less_equal;
  if (n.op_type == "GreaterOrEqual") return Cmp::greater_equal;
  if (n.op_type == "And") return Cmp::and_;
  if (n.op_type == "Or") return Cmp::or_;
  return Cmp::xor_;
}

bool is_logical(Cmp c) { return c == Cmp::and_ || c == Cmp::or_ || c == Cmp::xor_; }

std::vector<TensorType> infer_compare(const Node& n, std::span<const InferInput> in) {
  if (is_logical(cmp_of(n))) {
    require_type(n, in, 0, {ElementType::boolean});
    require_type(n, in, 1, {ElementType::boolean});
  } else {
    require_type(n, in, 0, {ElementType::float32, ElementType::int64, ElementType::int32});
    if (input_type(n, in, 1).type != in[0].type->type)
      fail(n, ErrorCode::invalid_argument,
           "inputs have different element types (" + std::string(to_string(in[0].type->type)) +
               " and " + std::string(to_string(in[1].type->type)) + ")");
  }
  return {{ElementType::boolean, broadcast_shapes(n, in[0].type->shape, in[1].type->shape)}};
}

template <class T>
bool apply(Cmp c, T a, T b) {
  switch (c) {
    case Cmp::less: return a < b;
    case Cmp::greater: return a > b;
    case Cmp::less_equal: return a <= b;
    case Cmp::greater_equal: return a >= b;
    case Cmp::and_: return a && b;
    case Cmp::or_: return a || b;
    default: return a != b;
  }
}

template <class T>
void run_typed(Cmp c, const Tensor& a, const Tensor& b, Tensor& out) {
  const T* pa = a.values<T>().data();
  const T* pb = b.values<T>().data();
  bool* po = out.values<bool>().data();
  broadcast_rows<2>(out.shape(), {&a.shape(), &b.shape()},
                    [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                      for (std::int64_t j = 0; j < n; ++j)
                        po[o + j] = apply(c, pa[off[0] + j * st[0]], pb[off[1] + j * st[1]]);
                    });
}

void run_compare(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Cmp c = cmp_of(n);
  switch (in[0]->type()) {
    case ElementType::float32: run_typed<float>(c, *in[0], *in[1], *out[0]); break;
    case ElementType::int64: run_typed<std::int64_t>(c, *in[0], *in[1], *out[0]); break;
    case ElementType::int32: run_typed<std::int32_t>(c, *in[0], *in[1], *out[0]); break;
    default: run_typed<bool>(c, *in[0], *in[1], *out[0]); break;
  }
}

std::vector<TensorType> infer_not(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::boolean});
  return {*in[0].type};
}

void run_not(const Node&, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const auto x = in[0]->values<bool>();
  auto y = out[0]->values<bool>();
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = !x[i];
}

}  // namespace

void register_compare(KernelRegistry& r) {
  // Less and Greater 1 broadcast only through the legacy attributes; 7 on is numpy.
  for (const char* op : {"Less", "Greater"})
    r.add({op, {7, 9, 13}, {}, nullptr, infer_compare, run_compare});
  for (const char* op : {"LessOrEqual", "GreaterOrEqual"})
    r.add({op, {12, 16}, {}, nullptr, infer_compare, run_compare});
  for (const char* op : {"And", "Or", "Xor"})
    r.add({op, {7}, {}, nullptr, infer_compare, run_compare});
  r.add({"Not", {1}, {}, nullptr, infer_not, run_not});
}

}  // namespace qforge::model::ops
