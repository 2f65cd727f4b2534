// ONNX export: a qforge::model::Graph written as an ONNX model (ModelProto) through Debian's
// libonnx-dev, the inverse of onnx_import.h.
//
// Every node goes to the default domain with the graph's opset; initializers are written as
// raw data; graph inputs and outputs keep their declared types and dims (after resolve() these
// are the concrete shapes the graph was resolved for, so the file fixes the batch size too).
// Intermediate value_info is not written: ONNX Runtime and qforge's importer infer it. The
// result is checked with onnx::checker and ONNX's strict shape inference before it is returned;
// a graph that fails either is qforge::Error (invalid_argument) with ONNX's message, so a file
// ONNX would refuse is never written.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "qforge/model/export.h"
#include "qforge/model/graph.h"

namespace qforge::model {

// The serialized ModelProto.
QFORGE_MODEL_API std::vector<std::byte> export_onnx_bytes(const Graph& graph);
// The same written atomically (qforge/output_file.h): the previous file or the new one, never
// a mix.
QFORGE_MODEL_API void export_onnx_file(const Graph& graph, const std::filesystem::path& path);

}  // namespace qforge::model
