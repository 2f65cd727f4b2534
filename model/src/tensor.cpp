#include "qforge/model/tensor.h"

#include <limits>

#include "qforge/error.h"

namespace qforge::model {

std::string_view to_string(ElementType type) noexcept {
  switch (type) {
    case ElementType::float32: return "float32";
    case ElementType::uint8: return "uint8";
    case ElementType::int8: return "int8";
    case ElementType::uint16: return "uint16";
    case ElementType::int16: return "int16";
    case ElementType::int32: return "int32";
    case ElementType::int64: return "int64";
    case ElementType::boolean: return "bool";
    case ElementType::float16: return "float16";
    case ElementType::float64: return "float64";
    case ElementType::uint32: return "uint32";
    case ElementType::uint64: return "uint64";
  }
  return "unknown";
}

std::size_t element_size(ElementType type) noexcept {
  switch (type) {
    case ElementType::uint8:
    case ElementType::int8:
    case ElementType::boolean: return 1;
    case ElementType::uint16:
    case ElementType::int16:
    case ElementType::float16: return 2;
    case ElementType::float32:
    case ElementType::int32:
    case ElementType::uint32: return 4;
    case ElementType::int64:
    case ElementType::float64:
    case ElementType::uint64: return 8;
  }
  return 0;
}

std::optional<ElementType> element_type_from_onnx(std::int32_t onnx_type) noexcept {
  switch (onnx_type) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13: return static_cast<ElementType>(onnx_type);
    default: return std::nullopt;
  }
}

std::string to_string(const TensorType& t) {
  return std::string(to_string(t.type)) + qforge::to_string(t.shape);
}

std::uint64_t checked_tensor_bytes(ElementType type, const Shape& shape, std::string_view what,
                                   std::uint64_t max_bytes) {
  std::uint64_t bytes = element_size(type);
  for (std::int64_t d : shape) {
    if (d < 0)
      throw Error(ErrorCode::invalid_argument,
                  std::string(what) + ": negative extent in shape " + qforge::to_string(shape));
    if (d != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d))
      bytes = std::numeric_limits<std::uint64_t>::max();
    else bytes *= static_cast<std::uint64_t>(d);
  }
  // A zero extent anywhere makes the tensor empty even if other extents overflowed.
  for (std::int64_t d : shape)
    if (d == 0) return 0;
  if (bytes > max_bytes)
    throw Error(
        ErrorCode::invalid_argument,
        std::string(what) + ": " + std::string(to_string(type)) + qforge::to_string(shape) +
            " needs " +
            (bytes == std::numeric_limits<std::uint64_t>::max() ? std::string("more than 2^64")
                                                                : std::to_string(bytes)) +
            " bytes; the limit is " + std::to_string(max_bytes) + " bytes");
  return bytes;
}

Tensor::Tensor(ElementType type, Shape shape) : type_(type), shape_(std::move(shape)) {
  if (element_size(type) == 0)
    throw Error(ErrorCode::invalid_argument, "Tensor: unknown element type");
  // Only overflow is refused here; the size limits are the importer's and resolve()'s, which
  // check before they construct (a caller may raise them above the default).
  const std::uint64_t bytes =
      checked_tensor_bytes(type, shape_, "Tensor", std::numeric_limits<std::size_t>::max());
  count_ = static_cast<std::int64_t>(bytes / element_size(type));
  if (bytes == 0) count_ = 0;
  bytes_.resize(static_cast<std::size_t>(bytes));
}

Tensor Tensor::view(TensorType t, std::byte* data) {
  Tensor v;
  v.type_ = t.type;
  if (element_size(t.type) == 0)
    throw Error(ErrorCode::invalid_argument, "Tensor::view: unknown element type");
  const std::uint64_t bytes =
      checked_tensor_bytes(t.type, t.shape, "Tensor", std::numeric_limits<std::size_t>::max());
  v.shape_ = std::move(t.shape);
  v.count_ = bytes ? static_cast<std::int64_t>(bytes / element_size(t.type)) : 0;
  if (bytes && !data)
    throw Error(ErrorCode::invalid_argument,
                "Tensor::view: no memory for " + std::to_string(bytes) + " bytes");
  v.view_ = data;
  v.view_bytes_ = static_cast<std::size_t>(bytes);
  return v;
}

Tensor::Tensor(const Tensor& other)
    : type_(other.type_),
      shape_(other.shape_),
      count_(other.count_),
      bytes_(other.data(), other.data() + other.byte_size()) {}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  type_ = other.type_;
  shape_ = other.shape_;
  count_ = other.count_;
  bytes_.assign(other.data(), other.data() + other.byte_size());
  view_ = nullptr;
  view_bytes_ = 0;
  return *this;
}

void Tensor::check_type(ElementType wanted) const {
  if (wanted != type_)
    throw Error(ErrorCode::invalid_argument, "Tensor holds " + std::string(to_string(type_)) +
                                                 ", read as " + std::string(to_string(wanted)));
}

void Tensor::check_count(std::size_t n) const {
  if (n != static_cast<std::size_t>(count_))
    throw Error(ErrorCode::shape_mismatch, "Tensor of shape " + qforge::to_string(shape_) +
                                               " holds " + std::to_string(count_) +
                                               " elements, given " + std::to_string(n) + " values");
}

void Tensor::reshape(Shape shape) {
  if (element_count(shape) != count_)
    throw Error(ErrorCode::shape_mismatch,
                "Tensor::reshape: " + qforge::to_string(shape_) + " (" + std::to_string(count_) +
                    " elements) cannot become " + qforge::to_string(shape));
  shape_ = std::move(shape);
}

}  // namespace qforge::model
