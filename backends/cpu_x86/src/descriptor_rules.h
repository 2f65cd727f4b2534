// What cpu_x86 accepts, decided from the descriptor alone (supports() answers before any data
// exists). The rules restate qforge::reference's own validation, plus what the kernels need:
//   matmuls   A int8/uint8 (per tensor or per row), B int8/uint8/int4/uint4 (per tensor, per
//             column, or block-wise nk with a block size that is a multiple of 4), float32
//             output, and K <= reference::int32_safe_k (the kernels accumulate in int32).
//   convs     C / groups * KH * KW <= reference::int32_safe_reduction (int32 sums, conv.h);
//             every dtype, scheme, layout and geometry the reference accepts otherwise.
// Everything else the reference accepts (other dtypes, logarithmic quantization, fixed-point
// requantize, linear_backward) runs through qforge::reference and says so ("reference").
#pragma once

#include <string>

#include "qforge/op_desc.h"

namespace qforge::cpu_x86 {

// Throws Error(unsupported, reason) when the descriptor is not accepted; the reason starts
// with the op name.
void check_descriptor(const OpDesc& op);
// The same for one descriptor (no OpDesc, so no copy of its params); instantiated for the five
// descriptor types of op_desc.h.
template <class Desc>
void check_descriptor(OpKind op, const Desc& desc);

// What pack_weights computes once about B for the per-call checks of the *_packed ops.
struct PackedFacts {
  std::int64_t max_b_centered = 0;  // largest |q - z| of B (reference::int32_safe_k)
  float max_sb = 0.0f;              // largest B scale
};
PackedFacts packed_facts(const MatmulDesc& d);

// The per-call checks of a *_packed op: the B side was validated when the weights were packed,
// so only A, the op's output fields, the K bound and the match with the packing are checked,
// without touching B's (possibly per-block) params beyond one comparison. Throws
// shape_mismatch when desc does not match the packing, unsupported otherwise.
void check_packed_call(OpKind op, const MatmulDesc& d, const MatmulDesc& packed,
                       const PackedFacts& facts);

// True when the int8/uint8 vector kernels serve this quantize/dequantize descriptor.
bool vector_quantize(const QuantizeDesc& d);
// True when linear_forward fits the int32 GEMM (else it runs the reference, exact in int64).
bool vector_linear(const LinearDesc& d);

}  // namespace qforge::cpu_x86
