// ONNX import: a model file (or bytes) becomes a qforge::model::Graph.
//
// Model files are untrusted input. Import reads at most ImportOptions::max_file_bytes, parses
// the protobuf with that limit, runs onnx::checker::check_model and onnx::shape_inference
// (strict), and then checks that every node is one qforge runs: default ONNX domain, opset
// <= 17, an op with a kernel for that schema version, only attributes the kernel understands.
// Any failure is a qforge::Error that names the source (file path or the caller's label) and
// what was wrong; nothing is skipped silently. docs/MODEL.md lists what is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "qforge/model/export.h"
#include "qforge/model/graph.h"
#include "qforge/model/tensor.h"

namespace qforge::model {

// The newest default-domain opset qforge imports: what Debian's ONNX 1.12 knows.
inline constexpr std::int64_t kMaxOnnxOpset = 17;

struct ImportOptions {
  // Files larger than this are refused before reading (protobuf's own limit is 2 GiB).
  std::uint64_t max_file_bytes = std::uint64_t{2000} << 20;
  // No initializer or declared tensor may exceed this many bytes.
  std::uint64_t max_tensor_bytes = kDefaultMaxTensorBytes;
  // When false, nodes whose op qforge cannot execute are kept (for tools that only inspect a
  // model); the opset and domain checks still apply.
  bool require_supported_ops = true;
};

QFORGE_MODEL_API Graph import_onnx_file(const std::filesystem::path& path,
                                        const ImportOptions& options = {});
// `source` names the bytes in messages (a file name, "fuzz input", ...).
QFORGE_MODEL_API Graph import_onnx_bytes(std::span<const std::byte> bytes, std::string_view source,
                                         const ImportOptions& options = {});

// A serialized onnx.TensorProto (the input_*.pb / output_*.pb files of ONNX's test data, or
// calibration samples) as a Tensor. Same rules as initializers: raw or typed data, no external
// data, element count must match the dims.
QFORGE_MODEL_API Tensor load_onnx_tensor_file(const std::filesystem::path& path,
                                              const ImportOptions& options = {});
QFORGE_MODEL_API Tensor load_onnx_tensor_bytes(std::span<const std::byte> bytes,
                                               std::string_view source,
                                               const ImportOptions& options = {});

}  // namespace qforge::model
