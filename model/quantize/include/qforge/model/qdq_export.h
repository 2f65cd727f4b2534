// Export of a QuantizedModel as a QDQ ONNX model (docs/MODEL.md, "QDQ export"): the float
// graph with every quantized Conv/MatMul/Gemm fed by DequantizeLinear nodes, the form ONNX
// Runtime's quantize_static writes and its QDQ optimizer turns into integer kernels.
//
// For each quantized layer:
//   - the weight is an int8/uint8 initializer holding the layer's own codes (B as the graph
//     stores it: [K, N], or [N, K] for Gemm with transB, OIHW for Conv), followed by
//     DequantizeLinear with a scalar scale, or one scale per output channel and `axis` (1, or 0
//     with transB and for Conv);
//   - static and explicit activations: A (Conv's X) goes through QuantizeLinear and
//   DequantizeLinear with
//     the layer's scale and zero point (and a Clip first for symmetric ones, see below);
//   - dynamic activations: DynamicQuantizeLinear (uint8, what qforge computes per batch) and
//     DequantizeLinear with the scale and zero point it outputs;
//   - Gemm's alpha and beta are already in the codes and the bias: the exported Gemm has
//     alpha = beta = 1 and C = the layer's float bias. Conv keeps its float bias B (the folded
//     one where BatchNormalization was folded into it).
// Other nodes are written as they are. The float weights a quantized layer replaced are left out
// unless another node still reads them.
//
// Not expressible with ONNX 1.12 (opsets <= 17), so refused with qforge::Error (unsupported)
// naming the layer: weights other than int8/uint8 (int4, int16: QDQ for them is opset 21) and
// block-wise weights (DequantizeLinear's block_size is opset 21), int16 activations, and
// per-channel weights in a model whose opset is below 13 (per-axis DequantizeLinear).
//
// Symmetric activations quantize to the narrow range in qforge ([-127, 127] for int8), while
// ONNX's QuantizeLinear saturates to the full one: such layers get a Clip at -127 * scale in
// front of QuantizeLinear, so the exported codes are qforge's.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "qforge/model/graph.h"
#include "qforge/model/quantize_export.h"
#include "qforge/model/quantized_model.h"

namespace qforge::model {

// The QDQ graph (what the exporters write), for inspection and for qforge's own executor, which
// runs QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
QFORGE_QUANTIZE_API Graph qdq_graph(const QuantizedModel& model);

// The serialized ModelProto, checked by onnx::checker and ONNX's strict shape inference.
QFORGE_QUANTIZE_API std::vector<std::byte> export_qdq_onnx_bytes(const QuantizedModel& model);
// The same, written atomically.
QFORGE_QUANTIZE_API void export_qdq_onnx(const QuantizedModel& model,
                                         const std::filesystem::path& path);

}  // namespace qforge::model
