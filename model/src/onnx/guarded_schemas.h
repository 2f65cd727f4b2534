// The ONNX operator schemas that import's shape inference uses: ONNX's own, except that the
// convolutions' inference functions first check what ONNX 1.12 indexes without checking.
#pragma once

#include <onnx/defs/schema.h>

namespace qforge::model::onnx_io {

// ONNX 1.12's Conv, ConvInteger, QLinearConv and ConvTranspose inference (convPoolShapeInference,
// convTransposeShapeInference) takes the kernel's spatial rank from the weight's shape when
// kernel_shape is absent and indexes the data input's dims with it unchecked: a weight of
// higher rank than the data reads past the shape (SIGSEGV; found by fuzz/harnesses/onnx_import).
// Gemm's inference (versions before 13) reads dims 0 and 1 of A and B without checking their
// rank: a scalar B reads a null dim (SIGSEGV; the same harness). These schemas refuse a rank
// mismatch of the convolutions and an A or B of Gemm whose rank is not 2 with an
// onnx::InferenceError, and leave the output shape open, as ONNX does for Conv, when the weight's
// shape is unknown. Thread-safe; the schemas live as long as the process.
const onnx::ISchemaRegistry& guarded_schemas();

}  // namespace qforge::model::onnx_io
