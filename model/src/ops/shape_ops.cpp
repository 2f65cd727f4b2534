// Ops that change only the shape or build shape tensors: Shape, Reshape, Flatten, Unsqueeze,
// Squeeze, Expand, ConstantOfShape. All but Expand and ConstantOfShape copy the bytes as they
// are; they work for every element type.
#include <algorithm>
#include <cstring>

#include "ops/broadcast.h"
#include "ops/kernel.h"

namespace qforge::model::ops {
namespace {

void copy_bytes(std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  if (in[0]->byte_size()) std::memcpy(out[0]->data(), in[0]->data(), in[0]->byte_size());
}
void run_copy(const Node&, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  copy_bytes(in, out);
}

// ---- Shape ----
std::pair<std::int64_t, std::int64_t> shape_range(const Node& n, std::int64_t rank) {
  auto clamp = [&](std::int64_t v) {
    return std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank);
  };
  const std::int64_t start = clamp(n.attr_int_or("start", 0));
  const std::int64_t end = n.has_attribute("end") ? clamp(n.attr_int("end")) : rank;
  return {start, std::max(start, end)};
}
std::vector<TensorType> infer_shape(const Node& n, std::span<const InferInput> in) {
  const auto [s, e] = shape_range(n, static_cast<std::int64_t>(input_type(n, in, 0).shape.size()));
  return {{ElementType::int64, {e - s}}};
}
std::vector<Tensor> fold_shape(const Node& n, std::span<const InferInput> in) {
  const Shape& s = input_type(n, in, 0).shape;
  const auto [b, e] = shape_range(n, static_cast<std::int64_t>(s.size()));
  return {Tensor::from_values<std::int64_t>(
      {e - b}, std::span<const std::int64_t>(s.data() + b, static_cast<std::size_t>(e - b)))};
}
void run_shape(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const Shape& s = in[0]->shape();
  const auto [b, e] = shape_range(n, static_cast<std::int64_t>(s.size()));
  std::copy(s.begin() + b, s.begin() + e, out[0]->values<std::int64_t>().begin());
}

// ---- Reshape: 0 copies the input extent (unless allowzero), one -1 is inferred ----
std::vector<TensorType> infer_reshape(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  require_type(n, in, 1, {ElementType::int64});
  const auto target = int_values(constant_input(n, in, 1, "shape"));
  const bool allowzero = n.attr_int_or("allowzero", 0) != 0;
  Shape out;
  std::int64_t infer_at = -1, known = 1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    std::int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= x.shape.size())
        fail(n, ErrorCode::shape_mismatch,
             "shape entry " + std::to_string(i) + " is 0 but the input has rank " +
                 std::to_string(x.shape.size()));
      d = x.shape[i];
    }
    if (d == -1) {
      if (infer_at >= 0) fail(n, ErrorCode::invalid_argument, "shape has more than one -1");
      infer_at = static_cast<std::int64_t>(i);
    } else if (d < 0) {
      fail(n, ErrorCode::invalid_argument, "shape entry " + std::to_string(d) + " is negative");
    } else {
      known *= d;
    }
    out.push_back(d);
  }
  const std::int64_t count = element_count(x.shape);
  if (infer_at >= 0) {
    if (known == 0 || count % known != 0)
      fail(n, ErrorCode::shape_mismatch,
           "cannot reshape " + qforge::to_string(x.shape) + " to " +
               qforge::to_string(Shape(target.begin(), target.end())));
    out[static_cast<std::size_t>(infer_at)] = count / known;
  }
  if (element_count(out) != count)
    fail(n, ErrorCode::shape_mismatch,
         "cannot reshape " + qforge::to_string(x.shape) + " (" + std::to_string(count) +
             " elements) to " + qforge::to_string(out));
  return {{x.type, out}};
}

// ---- Flatten: 2-D [prod(:axis), prod(axis:)] ----
std::vector<TensorType> infer_flatten(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  std::int64_t axis = n.attr_int_or("axis", 1);
  if (axis < -rank || axis > rank)
    fail(n, ErrorCode::invalid_argument,
         "axis " + std::to_string(axis) + " is outside [-rank, rank]");
  if (axis < 0) axis += rank;
  std::int64_t a = 1, b = 1;
  for (std::int64_t d = 0; d < rank; ++d)
    (d < axis ? a : b) *= x.shape[static_cast<std::size_t>(d)];
  return {{x.type, {a, b}}};
}

// ---- Unsqueeze / Squeeze: axes attribute before 13, input from 13 ----
std::vector<std::int64_t> axes_of(const Node& n, std::span<const InferInput> in, bool required) {
  if (n.since_version >= 13) {
    if (in.size() > 1 && in[1].present()) return int_values(constant_input(n, in, 1, "axes"));
    if (required) fail(n, ErrorCode::invalid_argument, "axes input is required");
    return {};
  }
  if (required && !n.has_attribute("axes"))
    fail(n, ErrorCode::invalid_argument, "axes is required");
  return n.attr_ints_or("axes", {});
}

std::vector<TensorType> infer_unsqueeze(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  const auto axes = axes_of(n, in, true);
  const auto rank = static_cast<std::int64_t>(x.shape.size() + axes.size());
  std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : axes) {
    const auto ax = static_cast<std::size_t>(normalize_axis(n, a, rank));
    if (inserted[ax])
      fail(n, ErrorCode::invalid_argument, "axis " + std::to_string(a) + " is listed twice");
    inserted[ax] = true;
  }
  Shape out;
  std::size_t next = 0;
  for (std::int64_t d = 0; d < rank; ++d)
    out.push_back(inserted[static_cast<std::size_t>(d)] ? 1 : x.shape[next++]);
  return {{x.type, out}};
}

std::vector<TensorType> infer_squeeze(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  const auto axes = axes_of(n, in, false);
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  std::vector<bool> drop(x.shape.size(), false);
  if (axes.empty()) {
    for (std::size_t d = 0; d < x.shape.size(); ++d) drop[d] = x.shape[d] == 1;
  } else {
    for (std::int64_t a : axes) {
      const auto ax = static_cast<std::size_t>(normalize_axis(n, a, rank));
      if (x.shape[ax] != 1)
        fail(n, ErrorCode::shape_mismatch,
             "axis " + std::to_string(a) + " of " + qforge::to_string(x.shape) + " is not 1");
      drop[ax] = true;
    }
  }
  Shape out;
  for (std::size_t d = 0; d < x.shape.size(); ++d)
    if (!drop[d]) out.push_back(x.shape[d]);
  return {{x.type, out}};
}

// ---- Expand: bidirectional broadcast of X with the shape input ----
std::vector<TensorType> infer_expand(const Node& n, std::span<const InferInput> in) {
  const TensorType& x = input_type(n, in, 0);
  require_type(n, in, 1, {ElementType::int64});
  const auto target = int_values(constant_input(n, in, 1, "shape"));
  for (std::int64_t d : target)
    if (d < 0)
      fail(n, ErrorCode::invalid_argument, "shape entry " + std::to_string(d) + " is negative");
  return {{x.type, broadcast_shapes(n, x.shape, Shape(target.begin(), target.end()))}};
}

void run_expand(const Node&, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const std::size_t es = element_size(in[0]->type());
  const std::byte* x = in[0]->data();
  std::byte* y = out[0]->data();
  broadcast_rows<1>(out[0]->shape(), {&in[0]->shape()},
                    [&](std::int64_t o, const auto& off, const auto& st, std::int64_t n) {
                      for (std::int64_t j = 0; j < n; ++j)
                        std::memcpy(y + (o + j) * es, x + (off[0] + j * st[0]) * es, es);
                    });
}

// ---- ConstantOfShape ----
std::vector<TensorType> infer_constant_of_shape(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::int64});
  const auto target = int_values(constant_input(n, in, 0, "shape"));
  for (std::int64_t d : target)
    if (d < 0)
      fail(n, ErrorCode::invalid_argument, "shape entry " + std::to_string(d) + " is negative");
  const ElementType type =
      n.has_attribute("value") ? n.attr_tensor("value").type() : ElementType::float32;
  return {{type, Shape(target.begin(), target.end())}};
}

void check_constant_of_shape(const Node& n) {
  if (n.has_attribute("value") && n.attr_tensor("value").size() != 1)
    fail(n, ErrorCode::invalid_argument, "value must hold exactly one element");
}

void run_constant_of_shape(const Node& n, std::span<const Tensor* const>,
                           std::span<Tensor* const> out) {
  if (!n.has_attribute("value")) return;  // zero-filled float32 already
  const Tensor& v = n.attr_tensor("value");
  const std::size_t es = v.byte_size();
  for (std::int64_t i = 0; i < out[0]->size(); ++i)
    std::memcpy(out[0]->data() + i * es, v.data(), es);
}

}  // namespace

void register_shape_ops(KernelRegistry& r) {
  OpKernel shape{"Shape", {1, 13, 15}, {"start", "end"}, nullptr, infer_shape, run_shape};
  shape.fold_from_types = fold_shape;
  r.add(shape);
  // Reshape 1 takes the target shape as an attribute; 5 on as an input.
  r.add({"Reshape", {5, 13, 14}, {"allowzero"}, nullptr, infer_reshape, run_copy});
  r.add({"Flatten", {1, 9, 11, 13}, {"axis"}, nullptr, infer_flatten, run_copy});
  r.add({"Unsqueeze", {1, 11, 13}, {"axes"}, nullptr, infer_unsqueeze, run_copy});
  r.add({"Squeeze", {1, 11, 13}, {"axes"}, nullptr, infer_squeeze, run_copy});
  r.add({"Expand", {8, 13}, {}, nullptr, infer_expand, run_expand});
  r.add({"ConstantOfShape",
         {9},
         {"value"},
         check_constant_of_shape,
         infer_constant_of_shape,
         run_constant_of_shape});
}

}  // namespace qforge::model::ops
