// The quantized nn.Linear of the Triton seed (LinearDesc): forward with a per-tensor absmax
// quantization of X fused into one reduction pass plus one quantize pass, then the int8 GEMM
// with the dequantizing epilogue; backward as two float32 GEMMs that dequantize their int8
// operand on the fly, and the column sums of dY.
#include <cstdio>

#include "check.h"
#include "cuda_ops.h"
#include "kernel_names.h"
#include "kernels/gemm_prep.h"
#include "kernels/linear_backward.h"
#include "kernels/quantize.h"
#include "kernels/reduce.h"
#include "qforge/error.h"

namespace qforge::cuda {
namespace {

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

QuantizationParams CudaOps::linear_forward(const LinearDesc& desc, const float* x,
                                           const std::int8_t* wq, const float* bias,
                                           std::int8_t* xq, float* y) {
  begin({OpKind::linear_forward, desc});
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  cudaStream_t s = stream();
  const GemmKernel kernel = pick_gemm(M, N, K);

  // 1. max|X| and sx = max(max|X| / 127, 1e-8), left in device memory for the next kernels.
  auto* partials =
      workspace_.get<RangeStats>(Slot::stats_partials, kRangeStatsMaxBlocks, device_, s);
  auto* stats = workspace_.get<RangeStats>(Slot::stats, 1, device_, s);
  launch_range_stats(FloatType::f32, x, M * K, partials, stats, props().multiprocessors, s);
  const float* sx = &stats->sx;

  // 2. Xq = quantize(X, sx) symmetric int8 [-127, 127].
  PairIndexing ix;
  ix.scales = sx;
  ix.zero_point0 = 0;
  ix.qmin = -127;
  ix.qmax = 127;
  launch_quantize(FloatType::f32, x, DType::int8, xq, M * K, ix, s);

  // 3. Y = ((float(Xq Wq^T) * sx) * sw[n]) + bias[n].
  if (M > 0 && N > 0) {
    const std::int64_t kp = (K + 15) / 16 * 16;
    GemmOperands op;
    op.m = M;
    op.n = N;
    op.k = K;
    op.kp = kp;
    if (K == kp && aligned16(xq)) {
      op.a = xq;
    } else {
      auto* a = workspace_.get<std::int8_t>(Slot::a_operand, static_cast<std::size_t>(M * kp),
                                            device_, s);
      launch_to_s8_operand(reinterpret_cast<const std::uint8_t*>(xq), SourceCodes{}, false, M, K, K,
                           a, kp, s);
      op.a = a;
    }
    if (K == kp && aligned16(wq)) {
      op.b = wq;
    } else {
      auto* b = workspace_.get<std::int8_t>(Slot::b_operand, static_cast<std::size_t>(N * kp),
                                            device_, s);
      launch_to_s8_operand(reinterpret_cast<const std::uint8_t*>(wq), SourceCodes{}, false, N, K, K,
                           b, kp, s);
      op.b = b;
    }
    op.lda = kp;
    op.ldb = kp;
    Epilogue ep;
    ep.kind = EpilogueKind::float_out;
    ep.out = y;
    ep.ldc = N;
    ep.m = M;
    ep.n = N;
    ep.k = K;
    ep.paired = reinterpret_cast<std::uintptr_t>(y) % 8 == 0 && N % 2 == 0;
    ep.sa = {sx, 1.0f, 0};
    ep.sb = float_vec(desc.w);
    ep.bias = desc.has_bias ? bias : nullptr;
    GemmLaunch how;
    how.kernel = kernel;
    how.device = device_;
    how.splits = choose_splits(kernel, M, N, kp, props().multiprocessors);
    attach_split_workspace(how, M, N);
    launch_gemm(how, op, ep, s);
  }

  // 4. The scale goes back to the caller; the reference refuses non-finite X, so do we.
  RangeStats host{};
  check(cudaMemcpyAsync(&host, stats, sizeof host, cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync(range statistics)");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  const std::uint64_t bad = std::min(host.first_inf, host.first_nan);
  if (bad != kNoIndex) {
    float v = 0.0f;
    check(cudaMemcpy(&v, x + bad, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy");
    throw Error(ErrorCode::invalid_argument,
                "cuda: linear_forward: x[" + std::to_string(bad) + "] = " + float_text(v) +
                    "; expected finite inputs (the per-tensor scale comes from max|X|)");
  }
  return QuantizationParams::per_tensor_symmetric(DType::int8, host.sx);
}

void CudaOps::linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                              const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                              float* dw, float* db) {
  begin({OpKind::linear_backward, desc});
  if (xq_params.dtype() != DType::int8 || xq_params.scheme().mapping != Mapping::symmetric ||
      xq_params.scheme().granularity != Granularity::per_tensor)
    throw Error(ErrorCode::invalid_argument,
                "cuda: linear_backward: xq params " + xq_params.to_string() +
                    "; expected int8 per_tensor symmetric (what linear_forward returns)");
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  cudaStream_t s = stream();
  const int sms = props().multiprocessors;

  // dX[M, K] = dY[M, N] deq(Wq)[N, K]
  DequantGemm gx;
  gx.a = dy;
  gx.lda = N;
  gx.b = wq;
  gx.ldb = K;
  gx.sb = float_vec(desc.w);
  gx.c = dx;
  gx.ldc = K;
  gx.i = M;
  gx.j = K;
  gx.r = N;
  // dW[N, K] = dY^T[N, M] deq(Xq)[M, K]
  DequantGemm gw;
  gw.a = dy;
  gw.a_transposed = true;
  gw.lda = N;
  gw.b = xq;
  gw.ldb = K;
  gw.sb = {nullptr, xq_params.scale(), 0};
  gw.c = dw;
  gw.ldc = K;
  gw.i = N;
  gw.j = K;
  gw.r = M;

  for (const DequantGemm* g : {&gx, &gw}) {
    const int splits = dequant_gemm_splits(*g, sms);
    float* ws = splits > 1 ? workspace_.get<float>(Slot::float_partials,
                                                   static_cast<std::size_t>(splits * g->i * g->j),
                                                   device_, s)
                           : nullptr;
    launch_dequant_gemm(*g, splits, ws, s);
  }
  if (desc.has_bias) {
    auto* ws = workspace_.get<float>(
        Slot::float_partials, static_cast<std::size_t>(column_sums_workspace(M, N)), device_, s);
    launch_column_sums(dy, M, N, db, ws, s);
  }
}

}  // namespace qforge::cuda
