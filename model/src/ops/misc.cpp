// Identity, Dropout (inference: identity), Constant and Cast.
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/kernel.h"

namespace qforge::model::ops {
namespace {

std::vector<TensorType> infer_identity(const Node& n, std::span<const InferInput> in) {
  return {input_type(n, in, 0)};
}
void run_identity(const Node&, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  if (in[0]->byte_size()) std::memcpy(out[0]->data(), in[0]->data(), in[0]->byte_size());
}

void check_dropout(const Node& n) {
  if (n.outputs.size() > 1 && !n.outputs[1].empty())
    fail(n, ErrorCode::unsupported, "the mask output of Dropout is not supported (inference only)");
}
std::vector<TensorType> infer_dropout(const Node& n, std::span<const InferInput> in) {
  // From version 12 training_mode is an input; inference needs it absent or constant false.
  if (in.size() > 2 && in[2].present()) {
    const Tensor& t = constant_input(n, in, 2, "training_mode");
    if (t.type() != ElementType::boolean || t.size() != 1 || t.values<bool>()[0])
      fail(n, ErrorCode::unsupported, "training_mode must be false; qforge runs inference");
  }
  return {input_type(n, in, 0)};
}

// ---- Constant: exactly one of value, value_float(s), value_int(s) ----
Tensor constant_value(const Node& n) {
  if (n.has_attribute("value")) return n.attr_tensor("value");
  const auto& attrs = n.attributes;
  if (auto it = attrs.find("value_float"); it != attrs.end())
    return Tensor::scalar<float>(std::get<float>(it->second));
  if (auto it = attrs.find("value_int"); it != attrs.end())
    return Tensor::scalar<std::int64_t>(std::get<std::int64_t>(it->second));
  if (auto it = attrs.find("value_floats"); it != attrs.end()) {
    const auto& v = std::get<std::vector<float>>(it->second);
    return Tensor::from_values<float>({static_cast<std::int64_t>(v.size())}, v);
  }
  if (auto it = attrs.find("value_ints"); it != attrs.end()) {
    const auto& v = std::get<std::vector<std::int64_t>>(it->second);
    return Tensor::from_values<std::int64_t>({static_cast<std::int64_t>(v.size())}, v);
  }
  fail(n, ErrorCode::invalid_argument, "no value attribute");
}
void check_constant(const Node& n) {
  if (n.attributes.size() != 1)
    fail(n, ErrorCode::invalid_argument, "exactly one value attribute is required");
  const auto& [key, value] = *n.attributes.begin();
  const bool kind_ok =
      (key == "value" && std::holds_alternative<Tensor>(value)) ||
      (key == "value_float" && std::holds_alternative<float>(value)) ||
      (key == "value_int" && std::holds_alternative<std::int64_t>(value)) ||
      (key == "value_floats" && std::holds_alternative<std::vector<float>>(value)) ||
      (key == "value_ints" && std::holds_alternative<std::vector<std::int64_t>>(value));
  if (!kind_ok) fail(n, ErrorCode::invalid_argument, "attribute '" + key + "' has the wrong kind");
}
std::vector<TensorType> infer_constant(const Node& n, std::span<const InferInput>) {
  return {constant_value(n).tensor_type()};
}
void run_constant(const Node& n, std::span<const Tensor* const>, std::span<Tensor* const> out) {
  *out[0] = constant_value(n);
}

// ---- Cast between float32, int64, int32 and bool ----
bool castable(ElementType t) {
  return t == ElementType::float32 || t == ElementType::int64 || t == ElementType::int32 ||
         t == ElementType::boolean;
}
ElementType cast_target(const Node& n) {
  const auto t = element_type_from_onnx(static_cast<std::int32_t>(n.attr_int("to")));
  if (!t || !castable(*t))
    fail(n, ErrorCode::unsupported,
         "cast to ONNX type " + std::to_string(n.attr_int("to")) +
             "; qforge casts between float32, int64, int32 and bool");
  return *t;
}
void check_cast(const Node& n) { cast_target(n); }
std::vector<TensorType> infer_cast(const Node& n, std::span<const InferInput> in) {
  require_type(
      n, in, 0,
      {ElementType::float32, ElementType::int64, ElementType::int32, ElementType::boolean});
  return {{cast_target(n), in[0].type->shape}};
}

template <class From, class To>
void convert(const Tensor& x, Tensor& y) {
  const auto a = x.values<From>();
  auto b = y.values<To>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_same_v<To, bool>) {
      b[i] = a[i] != From{0};
    } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
      // Truncation toward zero as C and ONNX Runtime do; NaN and out-of-range values, which
      // C leaves undefined, saturate (NaN to 0).
      const From v = a[i];
      if (std::isnan(v)) b[i] = 0;
      else if (v >= static_cast<From>(std::numeric_limits<To>::max()))
        b[i] = std::numeric_limits<To>::max();
      else if (v <= static_cast<From>(std::numeric_limits<To>::min()))
        b[i] = std::numeric_limits<To>::min();
      else b[i] = static_cast<To>(v);
    } else {
      b[i] = static_cast<To>(a[i]);
    }
  }
}
template <class From>
void convert_from(const Tensor& x, Tensor& y) {
  switch (y.type()) {
    case ElementType::float32: convert<From, float>(x, y); break;
    case ElementType::int64: convert<From, std::int64_t>(x, y); break;
    case ElementType::int32: convert<From, std::int32_t>(x, y); break;
    default: convert<From, bool>(x, y); break;
  }
}
void run_cast(const Node&, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  switch (in[0]->type()) {
    case ElementType::float32: convert_from<float>(*in[0], *out[0]); break;
    case ElementType::int64: convert_from<std::int64_t>(*in[0], *out[0]); break;
    case ElementType::int32: convert_from<std::int32_t>(*in[0], *out[0]); break;
    default: convert_from<bool>(*in[0], *out[0]); break;
  }
}

}  // namespace

void register_misc(KernelRegistry& r) {
  r.add({"Identity", {1, 13, 14, 16}, {}, nullptr, infer_identity, run_identity});
  r.add(
      {"Dropout", {7, 10, 12, 13}, {"ratio", "seed"}, check_dropout, infer_dropout, run_identity});
  r.add({"Constant",
         {1, 9, 11, 12, 13},
         {"value", "value_float", "value_floats", "value_int", "value_ints"},
         check_constant,
         infer_constant,
         run_constant});
  r.add({"Cast", {6, 9, 13}, {"to"}, check_cast, infer_cast, run_cast});
}

}  // namespace qforge::model::ops
