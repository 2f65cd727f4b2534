// Dense host tensors of the model layer: an element type, a concrete shape and the bytes.
//
// These are the float graph's values (weights, activations, int64 shape tensors), distinct from
// core's QuantizedTensor. Storage is row-major and contiguous; bool is one byte per element
// (0 or 1), as in ONNX's TensorProto.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/model/export.h"
#include "qforge/shape.h"

namespace qforge::model {

// The element types a model's tensors may hold. Values match ONNX's TensorProto.DataType so the
// importer maps them without a table; the ONNX types not listed (string, complex, bfloat16) are
// refused at import.
enum class ElementType : std::int32_t {
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
};

QFORGE_MODEL_API std::string_view to_string(ElementType type) noexcept;
// Bytes per element.
QFORGE_MODEL_API std::size_t element_size(ElementType type) noexcept;
// The element type for an ONNX TensorProto.DataType value; nullopt for types qforge cannot hold.
QFORGE_MODEL_API std::optional<ElementType> element_type_from_onnx(std::int32_t onnx_type) noexcept;

template <class T>
constexpr ElementType element_type_of();
template <>
constexpr ElementType element_type_of<float>() {
  return ElementType::float32;
}
template <>
constexpr ElementType element_type_of<double>() {
  return ElementType::float64;
}
template <>
constexpr ElementType element_type_of<std::int64_t>() {
  return ElementType::int64;
}
template <>
constexpr ElementType element_type_of<std::int32_t>() {
  return ElementType::int32;
}
template <>
constexpr ElementType element_type_of<std::int8_t>() {
  return ElementType::int8;
}
template <>
constexpr ElementType element_type_of<std::uint8_t>() {
  return ElementType::uint8;
}
// bool is one byte holding 0 or 1 on every platform qforge builds for.
static_assert(sizeof(bool) == 1);
template <>
constexpr ElementType element_type_of<bool>() {
  return ElementType::boolean;
}

// A type and a concrete shape: what shape resolution computes for every tensor of a graph.
struct TensorType {
  ElementType type = ElementType::float32;
  Shape shape;
  bool operator==(const TensorType&) const = default;
};

QFORGE_MODEL_API std::string to_string(const TensorType& t);  // "float32[1, 3, 224, 224]"

// Tensors hold at most this many bytes unless a caller sets a larger limit; a model file that
// declares a larger tensor is refused rather than allocated (hostile dims).
inline constexpr std::uint64_t kDefaultMaxTensorBytes = std::uint64_t{4} << 30;

// Bytes of a tensor of this type and shape; throws qforge::Error (invalid_argument) on a
// negative extent, on overflow or when the result exceeds max_bytes. `what` names the tensor.
QFORGE_MODEL_API std::uint64_t checked_tensor_bytes(
    ElementType type, const Shape& shape, std::string_view what,
    std::uint64_t max_bytes = kDefaultMaxTensorBytes);

class QFORGE_MODEL_API Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor. Throws qforge::Error on a negative extent or a size that overflows;
  // limits such as kDefaultMaxTensorBytes are the callers' to check (import and resolve do).
  Tensor(ElementType type, Shape shape);
  Tensor(TensorType t) : Tensor(t.type, std::move(t.shape)) {}

  // A tensor over memory the caller owns (the executor's arena): nothing is allocated or
  // filled. `data` must hold the type's byte size, aligned for the element type, and outlive the
  // view and its moved-to tensors. A copy of a view owns its bytes, so values handed out never
  // alias an arena that later runs overwrite.
  static Tensor view(TensorType t, std::byte* data);
  bool is_view() const noexcept { return view_ != nullptr; }

  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  template <class T>
  static Tensor from_values(Shape shape, std::span<const T> values);
  template <class T>
  static Tensor from_values(Shape shape, std::initializer_list<T> values) {
    return from_values<T>(std::move(shape), std::span<const T>(values.begin(), values.size()));
  }
  template <class T>
  static Tensor scalar(T v) {
    return from_values<T>({}, std::span<const T>(&v, 1));
  }

  ElementType type() const noexcept { return type_; }
  const Shape& shape() const noexcept { return shape_; }
  TensorType tensor_type() const { return {type_, shape_}; }
  std::int64_t rank() const noexcept { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t size() const noexcept { return count_; }  // elements
  std::size_t byte_size() const noexcept { return view_ ? view_bytes_ : bytes_.size(); }

  std::byte* data() noexcept { return view_ ? view_ : bytes_.data(); }
  const std::byte* data() const noexcept { return view_ ? view_ : bytes_.data(); }

  // Typed views; throw qforge::Error (invalid_argument) when T is not the element type.
  template <class T>
  std::span<T> values();
  template <class T>
  std::span<const T> values() const;

  // The same bytes seen under another shape with the same element count (Reshape, Flatten).
  void reshape(Shape shape);

 private:
  void check_type(ElementType wanted) const;
  void check_count(std::size_t n) const;

  ElementType type_ = ElementType::float32;
  Shape shape_;
  std::int64_t count_ = 0;
  std::vector<std::byte> bytes_;  // operator new aligns to 16 bytes, enough for every type
  std::byte* view_ = nullptr;     // set for a view: the bytes live there, bytes_ is empty
  std::size_t view_bytes_ = 0;
};

template <class T>
std::span<T> Tensor::values() {
  check_type(element_type_of<T>());
  return {reinterpret_cast<T*>(data()), static_cast<std::size_t>(count_)};
}
template <class T>
std::span<const T> Tensor::values() const {
  check_type(element_type_of<T>());
  return {reinterpret_cast<const T*>(data()), static_cast<std::size_t>(count_)};
}

template <class T>
Tensor Tensor::from_values(Shape shape, std::span<const T> values) {
  Tensor t(element_type_of<T>(), std::move(shape));
  t.check_count(values.size());
  std::copy(values.begin(), values.end(), t.values<T>().begin());
  return t;
}

}  // namespace qforge::model
