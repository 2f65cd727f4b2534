// The vector paths of cpu_x86's ops as functions of their operands, a thread pool and the
// driver's tuning, with no backend instance: the per-call ops (which validate, choose the kernel
// and check pointers first) and the plans (which did all that when they were made) both run
// them.
#pragma once

#include <cstdint>
#include <optional>

#include "gemm_driver.h"
#include "kernel_table.h"
#include "packing.h"
#include "qforge/op_desc.h"
#include "qforge/params.h"
#include "thread_pool.h"

namespace qforge::cpu_x86 {

// What a GEMM needs besides its operands.
struct GemmContext {
  ThreadPool& pool;
  GemmScratch& scratch;  // the caller's: one GEMM at a time uses it
  GemmTuning tuning;
};

// qlinear_matmul's output: requantized to desc.y (per tensor) in desc.requant_mode, with the
// int32 bias (read when desc.has_bias) and desc.activation's clamp.
GemmOutput requant_output(const MatmulDesc& desc, void* y, const std::int32_t* bias);

// Whether C + bias[n] stays inside int32 for every A of qlinear_matmul `d` (has_bias) with B's
// codes `b` (in d.b_layout): max |a - za| * sum_k |b[k, n] - zb[n]| + |bias[n]| <= 2^31 - 1.
bool matmul_bias_cannot_overflow(const MatmulDesc& d, const void* b, const std::int32_t* bias);

void quantize_vector(ThreadPool& pool, const QuantizeDesc& desc, const void* x, void* q);
void dequantize_vector(ThreadPool& pool, const QuantizeDesc& desc, const void* q, float* x);
// Float-multiplier mode only.
void requantize_vector(ThreadPool& pool, const RequantizeDesc& desc, const std::int32_t* c,
                       void* y);
// Writes y and returns its params; nullopt (y untouched) when x holds an infinity, which the
// reference reports by index.
std::optional<QuantizationParams> dynamic_quantize_vector(ThreadPool& pool,
                                                          const DynamicQuantizeDesc& desc,
                                                          const float* x, std::uint8_t* y);

// linear_forward as the int8 GEMM (vector_linear(desc) holds): quantizes X into xq, then
// Y = matmul_dequant(Xq, Wq as [N, K]) with `kernel` (or the exact kernel of its role when W
// holds -128). Returns the activation scale, or nullopt (nothing written) when X is not finite,
// which the reference reports.
std::optional<float> linear_forward_vector(const GemmContext& ctx, const KernelInfo& kernel,
                                           const LinearDesc& desc, const float* x,
                                           const X86PackedWeights& w, const float* bias,
                                           std::int8_t* xq, float* y);
// The matmul linear_forward runs, with activation scale sx (W is packed from it; sx does not
// change the packing).
MatmulDesc linear_matmul_desc(const LinearDesc& desc, float sx);

}  // namespace qforge::cpu_x86
