// What cpu_x86 accepts, decided from the descriptor alone (supports() answers before any data
// exists). The rules restate qforge::reference's own validation, plus what the kernels need:
//   matmuls   A int8/uint8 (per tensor or per row), B int8/uint8/int4/uint4 (per tensor, per
//             column, or block-wise nk with a block size that is a multiple of 4), float32
//             output, and K <= reference::int32_safe_k (the kernels accumulate in int32).
// Everything else the reference accepts (other dtypes, logarithmic quantization, fixed-point
// requantize, linear_backward) runs through qforge::reference and says so ("reference").
#pragma once

#include <string>

#include "qforge/op_desc.h"

namespace qforge::cpu_x86 {

// Throws Error(unsupported, reason) when the descriptor is not accepted; the reason starts
// with the op name.
void check_descriptor(const OpDesc& op);

// True when the int8/uint8 vector kernels serve this quantize/dequantize descriptor.
bool vector_quantize(const QuantizeDesc& d);
// True when linear_forward fits the int32 GEMM (else it runs the reference, exact in int64).
bool vector_linear(const LinearDesc& d);

}  // namespace qforge::cpu_x86
