// What the onednn plugin claims, decided from a descriptor alone (ops.h: supports() answers
// before any data exists), and the names of its kernels.
//
// The checks restate the reference's descriptor checks for the part of the op space the plugin
// runs, and refuse the rest with the reason, so an op that passes here computes exactly what
// qforge::reference computes. docs/ONEDNN.md lists the claims.
#pragma once

#include <string>
#include <vector>

#include "qforge/ops.h"

namespace qforge::onednn {

namespace kernel {
// Plain loops with the reference's arithmetic (rounding.h), on OpenMP threads.
inline constexpr const char* loop_quantize = "loop_quantize";
inline constexpr const char* loop_dequantize = "loop_dequantize";
inline constexpr const char* loop_requantize = "loop_requantize";
inline constexpr const char* loop_dynamic_quantize = "loop_dynamic_quantize";
// oneDNN reorder s8/u8 -> f32 with zero points and scales (bit-exact: see docs/ONEDNN.md).
inline constexpr const char* reorder_dequantize = "dnnl_reorder_dequantize";
// dnnl::matmul with int32 output; zero-point compensation and epilogues in the plugin.
inline constexpr const char* matmul_u8s8_s32 = "dnnl_matmul_u8s8_s32";
inline constexpr const char* matmul_s8s8_s32 = "dnnl_matmul_s8s8_s32";
// dnnl::matmul with float32 output: oneDNN's output scales and bias (fused epilogue).
inline constexpr const char* matmul_u8s8_f32 = "dnnl_matmul_u8s8_f32";
inline constexpr const char* matmul_s8s8_f32 = "dnnl_matmul_s8s8_f32";
// dnnl::matmul in float32 (linear_backward).
inline constexpr const char* matmul_f32 = "dnnl_matmul_f32";
// dnnl::convolution_forward with int32 output (conv_integer, qlinear_conv, conv_dequant);
// weights zero points, the int32 bias and the requantizing/dequantizing epilogue in the plugin.
inline constexpr const char* conv_u8s8_s32 = "dnnl_conv_u8s8_s32";
inline constexpr const char* conv_s8s8_s32 = "dnnl_conv_s8s8_s32";
}  // namespace kernel

// Every kernel name, for plan requests and reports.
const std::vector<std::string>& all_kernels();

// Facts about this machine that decide claims.
struct Facts {
  // oneDNN 2.6's int8 matmul is exact only where it uses VNNI or AMX: without them its
  // kernels sum u8 x s8 pairs with vpmaddubsw, which saturates to int16 (docs/ONEDNN.md).
  bool int8_exact = false;
  std::string int8_refusal;  // why not, when !int8_exact (worded for matmul)
  std::string conv_refusal;  // the same for convolution
};
Facts detect_facts();
// oneDNN's effective CPU ISA ("avx512_core_amx", ...), which DNNL_MAX_CPU_ISA can lower.
std::string effective_isa_name();

// Support::yes(kernels, best first) or Support::no("onednn: <op>: <why>").
Support check_support(const OpDesc& op, const Facts& facts);
// The same for one descriptor, without an OpDesc (which would copy its params on every call);
// instantiated for the five descriptor types.
template <class Desc>
Support check_support(OpKind op, const Desc& desc, const Facts& facts);

// Whether the oneDNN reorder may dequantize these params (8-bit, linear mapping, float32 out,
// scales and zero points along whole dimensions of the tensor).
bool reorder_can_dequantize(const QuantizeDesc& d);

// Whether oneDNN's own output scales and bias can finish matmul_dequant (the fused kernel):
// float32 output, one A scale, and zero points that oneDNN takes whole (per tensor, or equal
// along the row/column).
bool fused_dequant_possible(const MatmulDesc& d);

// The largest |value| oneDNN's int8 convolution returns exactly: its kernels convert the int32
// sum to float32 before writing it, even for an int32 destination (docs/ONEDNN.md).
inline constexpr std::int64_t kConvExactBound = std::int64_t{1} << 24;
// max |x - zx| over the codes of X's dtype.
std::int64_t conv_x_magnitude(const ConvDesc& d);

// "u8s8" or "s8s8": the dtypes oneDNN sees once A and B are widened (matmul_operands.h).
bool a_is_unsigned(DType a);

}  // namespace qforge::onednn
