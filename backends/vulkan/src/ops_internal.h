// The op launchers behind VulkanOps: each records its dispatches into the context's command
// buffer, submits, waits and returns the GPU time in ns (0 without timestamps). Arguments are
// validated by supports() before these run; pointers are checked here (resolve()).
#pragma once

#include <cstdint>
#include <memory>

#include "context.h"
#include "kernels.h"
#include "qforge/ops.h"

namespace qforge::vulkan {

struct Pipeline;

// The pipelines the launchers below record, created on first use; plans create theirs when they
// are made, so that no run pays a shader compilation.
const Pipeline& elementwise_pipeline(Context& ctx, OpKind op);  // quantize, dequantize, requantize
const Pipeline& gemm_pipeline(Context& ctx, Kernel kernel, bool out8);  // and the packing passes
const Pipeline& conv_pipeline(Context& ctx);

double run_quantize(Stream& st, const QuantizeDesc& desc, const void* x, void* q);
double run_dequantize(Stream& st, const QuantizeDesc& desc, const void* q, float* x);
double run_requantize(Stream& st, const RequantizeDesc& desc, const std::int32_t* c, void* y);

// B packed once for the GEMM kernels (pack_weights): [N, Kp] signed bytes and column sums, in
// buffers of the context it was packed on.
class VulkanPackedWeights;

std::shared_ptr<PackedWeights> pack_gemm_weights(std::shared_ptr<Context> ctx, Stream& st,
                                                 const MatmulDesc& desc, const void* b);

// matmul_integer / matmul_dequant / qlinear_matmul with kernel `kernel`. Exactly one of b and
// packed is set; bias only for matmul_dequant with has_bias.
double run_gemm(Stream& st, Kernel kernel, OpKind op, const MatmulDesc& desc, const void* a,
                const void* b, const PackedWeights* packed, const float* bias, void* out);

// conv_integer / qlinear_conv / conv_dequant (conv_direct.comp); bias as desc.bias says.
// Throws overflow when an accumulator plus its int32 bias leaves int32.
double run_conv(Stream& st, OpKind op, const ConvDesc& desc, const void* x, const void* w,
                const void* bias, void* y);

}  // namespace qforge::vulkan
