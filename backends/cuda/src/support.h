// What the CUDA backend claims, per op descriptor (dtype x scheme x layout x shape), and which
// kernel variants can run it on a device of a given compute capability, best guess first.
//
// Claimed: quantize/dequantize for int8, uint8, int16, uint16, int4, uint4 with affine or
// symmetric mappings at every granularity, float32/float16/bfloat16 input; requantize; the three
// matmuls for int8/uint8/int4/uint4 A and B (4-bit codes are unpacked to int8 before the GEMM)
// with per-tensor or per-row A params and per-tensor or
// per-column B params, kn or nk, K up to reference::int32_safe_k, every output type;
// block-wise B (nk; int4/uint4/int8/uint8; blocks of 16 or multiples of 32 up to 256 for 4-bit,
// 128 for 8-bit) in matmul_integer and matmul_dequant;
// dynamic_quantize_linear; linear forward (same K bound) and backward; the three convolutions
// as the reference defines them with the reduction up to reference::int32_safe_reduction. Not
// claimed: the logarithmic mapping, binary, block-wise B in qlinear_matmul (the reference
// rejects it), other block sizes, 16-bit matmul operands, convolutions past the int32 bound or
// past the grid limits check_conv names.
//
// QFORGE_CUDA_KERNELS (environment, comma-separated GEMM kernel names) limits the GEMM kernels
// that may be listed and chosen; a plan fixes one of those.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/conv.h"
#include "kernels/gemm.h"
#include "qforge/ops.h"

namespace qforge::cuda {

struct DeviceFacts {
  int cc = 0;  // 0 when no usable device
  int multiprocessors = 1;
  bool wgmma = false;  // the sm_90a wgmma kernel runs on this device
};

Support support_for(const OpDesc& op, const DeviceFacts& device);

// GEMM kernels able to run an M x N problem on this device, best guess first (`blockwise`: B
// has block-wise params, which only the qbw kernels take; `gemv`: the call is one the
// block-wise GEMV takes, blockwise_gemv_ok).
std::vector<GemmKernel> gemm_candidates(std::int64_t m, std::int64_t n, std::int64_t k,
                                        const DeviceFacts& device, bool blockwise = false,
                                        bool gemv = false);
// Whether the block-wise GEMV kernel takes this matmul (block-wise B only).
bool blockwise_gemv_takes(OpKind kind, const MatmulDesc& d);

// The convolution: its geometry as the kernels read it, whether the depthwise kernel takes it
// (groups == C), and the kernels able to run it, best first (none: refused).
ConvGeometry conv_geometry(const ConvDesc& d);
bool conv_is_depthwise(const ConvDesc& d);
std::vector<std::string> conv_candidates(const ConvDesc& d, int multiprocessors);
// The pipelined tile a kernel name stands for, if it is one.
std::optional<ConvTileKind> conv_pipelined_tile(std::string_view kernel);

// Why a descriptor is refused (nullopt: accepted). Shared by supports() and the ops, which
// throw ErrorCode::unsupported (or invalid_argument for a malformed descriptor) with it.
struct Refusal {
  bool invalid = false;  // the descriptor itself is malformed (the reference rejects it too)
  std::string reason;
};
std::optional<Refusal> refusal_for(const OpDesc& op);
// refusal_for of a matmul descriptor (matmul_integer, matmul_dequant, qlinear_matmul).
std::optional<Refusal> refusal_for_matmul(OpKind kind, const MatmulDesc& desc);
// refusal_for of a quantize or dequantize descriptor.
std::optional<Refusal> refusal_for_quantize(const QuantizeDesc& desc);

}  // namespace qforge::cuda
