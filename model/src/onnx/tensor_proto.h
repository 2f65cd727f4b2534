// onnx.TensorProto <-> Tensor. Private: the public API never exposes protobuf types.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "qforge/model/tensor.h"

namespace qforge::model::onnx_io {

// Converts an untrusted TensorProto. `what` names it in messages ("model.onnx: initializer
// 'conv1.weight'"). Throws qforge::Error: unsupported (element type, external data, segments),
// invalid_argument (a size over max_bytes), corrupt_data (data that does not match the dims).
Tensor tensor_from_proto(const onnx::TensorProto& proto, std::string_view what,
                         std::uint64_t max_bytes);

// A Tensor as a TensorProto named `name`, its bytes in raw_data (little endian, as ONNX
// stores raw data; qforge builds for little-endian hosts only).
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

// "FLOAT", "STRING", ... for messages.
std::string_view onnx_type_name(std::int32_t onnx_type);

}  // namespace qforge::model::onnx_io
