#include "onnx/tensor_proto.h"

#include <bit>
#include <cstring>
#include <string>

#include "qforge/error.h"

namespace qforge::model::onnx_io {
namespace {

[[noreturn]] void corrupt(std::string_view what, const std::string& msg) {
  throw Error(ErrorCode::corrupt_data, std::string(what) + ": " + msg);
}

// Copies a repeated typed field into the tensor after checking its length; each element is
// converted to the storage type (ONNX keeps int8/uint8/int16/bool/float16 in int32_data).
template <class Storage, class Field>
void copy_field(const Field& field, Tensor& t, std::string_view what, std::string_view field_name) {
  if (static_cast<std::int64_t>(field.size()) != t.size())
    corrupt(what, std::string(field_name) + " holds " + std::to_string(field.size()) +
                      " values; dims " + qforge::to_string(t.shape()) + " need " +
                      std::to_string(t.size()));
  auto* out = reinterpret_cast<Storage*>(t.data());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Storage>(field.Get(i));
}

std::uint64_t typed_field_size(const onnx::TensorProto& p, ElementType type) {
  switch (type) {
    case ElementType::float32: return static_cast<std::uint64_t>(p.float_data_size());
    case ElementType::float64: return static_cast<std::uint64_t>(p.double_data_size());
    case ElementType::int64: return static_cast<std::uint64_t>(p.int64_data_size());
    case ElementType::uint32:
    case ElementType::uint64: return static_cast<std::uint64_t>(p.uint64_data_size());
    default: return static_cast<std::uint64_t>(p.int32_data_size());
  }
}

}  // namespace

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  static_assert(std::endian::native == std::endian::little, "raw_data is little endian");
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<std::int32_t>(tensor.type()));
  for (auto d : tensor.shape()) p.add_dims(d);
  p.set_raw_data(reinterpret_cast<const char*>(tensor.data()), tensor.byte_size());
  return p;
}

std::string_view onnx_type_name(std::int32_t onnx_type) {
  if (onnx::TensorProto_DataType_IsValid(onnx_type))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnx_type));
  return "an unknown type";
}

Tensor tensor_from_proto(const onnx::TensorProto& proto, std::string_view what,
                         std::uint64_t max_bytes) {
  const auto type = element_type_from_onnx(proto.data_type());
  if (!type)
    throw Error(ErrorCode::unsupported,
                std::string(what) + ": element type " +
                    std::string(onnx_type_name(proto.data_type())) + " (" +
                    std::to_string(proto.data_type()) +
                    ") is not supported; qforge holds float32, float16, float64, int8..int64, "
                    "uint8..uint64 and bool");
  if (proto.data_location() == onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0)
    throw Error(ErrorCode::unsupported,
                std::string(what) +
                    ": external data is not supported; save the model with its "
                    "weights inside the file");
  if (proto.has_segment())
    throw Error(ErrorCode::unsupported,
                std::string(what) + ": segmented tensors are not supported");

  Shape shape(proto.dims().begin(), proto.dims().end());
  for (std::int64_t d : shape)
    if (d < 0) corrupt(what, "negative dim in " + qforge::to_string(shape));
  const std::uint64_t bytes = checked_tensor_bytes(*type, shape, what, max_bytes);
  // Sizes are compared before allocating, so a hostile file cannot make qforge allocate memory
  // for data it does not contain.
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes)
      corrupt(what, "raw_data has " + std::to_string(proto.raw_data().size()) + " bytes; " +
                        std::string(to_string(*type)) + qforge::to_string(shape) + " needs " +
                        std::to_string(bytes));
  } else {
    const std::uint64_t count = bytes / element_size(*type);
    const std::uint64_t have = typed_field_size(proto, *type);
    if (have != count)
      corrupt(what, "holds " + std::to_string(have) + " values; dims " + qforge::to_string(shape) +
                        " need " + std::to_string(count));
  }
  Tensor t(*type, shape);

  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    // ONNX stores raw data little endian, as x86-64 and AArch64 do.
    if (!raw.empty()) std::memcpy(t.data(), raw.data(), raw.size());
    return t;
  }
  switch (*type) {
    case ElementType::float32: copy_field<float>(proto.float_data(), t, what, "float_data"); break;
    case ElementType::float64:
      copy_field<double>(proto.double_data(), t, what, "double_data");
      break;
    case ElementType::int64:
      copy_field<std::int64_t>(proto.int64_data(), t, what, "int64_data");
      break;
    case ElementType::int32:
      copy_field<std::int32_t>(proto.int32_data(), t, what, "int32_data");
      break;
    case ElementType::int16:
      copy_field<std::int16_t>(proto.int32_data(), t, what, "int32_data");
      break;
    case ElementType::uint16:
    case ElementType::float16:  // the bits of each half, one per int32
      copy_field<std::uint16_t>(proto.int32_data(), t, what, "int32_data");
      break;
    case ElementType::int8:
      copy_field<std::int8_t>(proto.int32_data(), t, what, "int32_data");
      break;
    case ElementType::uint8:
      copy_field<std::uint8_t>(proto.int32_data(), t, what, "int32_data");
      break;
    case ElementType::boolean: {
      copy_field<std::uint8_t>(proto.int32_data(), t, what, "int32_data");
      for (std::int64_t i = 0; i < t.size(); ++i)
        t.data()[i] = std::byte{t.data()[i] != std::byte{0}};
      break;
    }
    case ElementType::uint32:
      copy_field<std::uint32_t>(proto.uint64_data(), t, what, "uint64_data");
      break;
    case ElementType::uint64:
      copy_field<std::uint64_t>(proto.uint64_data(), t, what, "uint64_data");
      break;
  }
  return t;
}

}  // namespace qforge::model::onnx_io
