#include "ops/kernel.h"

namespace qforge::model::ops {

void fail(const Node& node, ErrorCode code, const std::string& what) {
  throw Error(code, node.describe() + ": " + what);
}

const TensorType& input_type(const Node& node, std::span<const InferInput> in, std::size_t i) {
  if (i >= in.size() || !in[i].present())
    fail(node, ErrorCode::invalid_argument, "input " + std::to_string(i) + " is required");
  return *in[i].type;
}

void require_type(const Node& node, std::span<const InferInput> in, std::size_t i,
                  std::initializer_list<ElementType> allowed) {
  const TensorType& t = input_type(node, in, i);
  for (ElementType e : allowed)
    if (t.type == e) return;
  std::string list;
  for (ElementType e : allowed) list += (list.empty() ? "" : ", ") + std::string(to_string(e));
  fail(node, ErrorCode::unsupported,
       "input " + std::to_string(i) + " ('" + node.input(i) + "') is " +
           std::string(to_string(t.type)) + "; qforge runs this op on " + list);
}

const Tensor& constant_input(const Node& node, std::span<const InferInput> in, std::size_t i,
                             std::string_view role) {
  input_type(node, in, i);
  if (!in[i].value)
    fail(node, ErrorCode::unsupported,
         std::string(role) + " input '" + node.input(i) +
             "' is not constant after folding; qforge fixes shapes before execution, so it "
             "must be computable from initializers and the input shapes");
  return *in[i].value;
}

std::vector<std::int64_t> int_values(const Tensor& t) {
  if (t.type() == ElementType::int64) {
    auto v = t.values<std::int64_t>();
    return {v.begin(), v.end()};
  }
  if (t.type() == ElementType::int32) {
    auto v = t.values<std::int32_t>();
    return {v.begin(), v.end()};
  }
  throw Error(ErrorCode::invalid_argument,
              "expected an int64 or int32 tensor, got " + std::string(to_string(t.type())));
}

std::int64_t normalize_axis(const Node& node, std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank)
    fail(node, ErrorCode::invalid_argument,
         "axis " + std::to_string(axis) + " is outside [" + std::to_string(-rank) + ", " +
             std::to_string(rank - 1) + "] for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Node& node, const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(node, ErrorCode::shape_mismatch,
           "shapes " + qforge::to_string(a) + " and " + qforge::to_string(b) +
               " do not broadcast (numpy rules)");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace qforge::model::ops
