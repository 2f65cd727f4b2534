// The quantized nn.Linear: forward quantizes X per tensor and runs the int8 matmul of
// matmul_dequant; backward is two float32 dnnl::matmul calls and a column sum.
#include <algorithm>
#include <cstring>

#include "onednn_ops.h"
#include "ops_common.h"
#include "quantize_loops.h"
#include "threads.h"

namespace qforge::onednn {
namespace {

float weight_scale(const LinearDesc& d, std::int64_t n) {
  return d.w.count() == 1 ? d.w.scale(0) : d.w.scale(static_cast<std::size_t>(n));
}

}  // namespace

QuantizationParams OnednnOps::linear_forward(const LinearDesc& desc, const float* x,
                                             const std::int8_t* wq, const float* bias,
                                             std::int8_t* xq, float* y) {
  const std::string k = begin(OpKind::linear_forward, desc);
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  require_data("linear_forward", "x", x, M * K);
  require_data("linear_forward", "wq", wq, N * K);
  require_data("linear_forward", "xq", xq, M * K);
  require_data("linear_forward", "y", y, M * N);
  if (desc.has_bias) require_data("linear_forward", "bias (has_bias is set)", bias, N);
  return QuantizationParams::per_tensor_symmetric(DType::int8,
                                                  forward(desc, x, wq, bias, xq, y, k));
}

float OnednnOps::forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                         const float* bias, std::int8_t* xq, float* y, const std::string& k) {
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  float sx = 0.0f;
  {
    const ThreadScope scope(threads_);
    const float amax = absmax_finite(x, M * K, scope.threads(), "linear_forward",
                                     "the per-tensor scale comes from max|X|");
    // The reference's expressions: sx = max(max|X| / 127, 1e-8), Xq narrow int8.
    const auto& i8 = traits(DType::int8);
    sx = std::max(amax / static_cast<float>(i8.narrow_qmax), 1e-8f);
    quantize_int8(x, xq, M * K, sx, i8.narrow_qmin, i8.narrow_qmax, scope.threads());
  }
  // Y = ((float(Xq Wq^T) * sx) * sw[n]) + bias[n]: matmul_dequant of Xq and W [N, K].
  const MatmulDesc md{.m = M,
                      .n = N,
                      .k = K,
                      .a = QuantizationParams::per_tensor_symmetric(DType::int8, sx),
                      .b = desc.w,
                      .b_layout = MatrixLayout::nk,
                      .has_bias = desc.has_bias,
                      .out_type = FloatType::f32,
                      .y = std::nullopt};
  // The forward's kernel list is the s8s8 matmul_dequant's (check_support).
  dequant(md, xq, {wq, nullptr}, bias, y, k);
  return sx;
}

void OnednnOps::linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                                const QuantizationParams& xq_params, const std::int8_t* wq,
                                float* dx, float* dw, float* db) {
  const std::string k = begin(OpKind::linear_backward, desc);
  if (xq_params.dtype() != DType::int8 || xq_params.scheme().mapping != Mapping::symmetric ||
      xq_params.scheme().granularity != Granularity::per_tensor)
    throw Error(ErrorCode::invalid_argument,
                "onednn: linear_backward: xq params " + xq_params.to_string() +
                    "; expected int8 per_tensor symmetric (what linear_forward returns)");
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  require_data("linear_backward", "dy", dy, M * N);
  require_data("linear_backward", "xq", xq, M * K);
  require_data("linear_backward", "wq", wq, N * K);
  require_data("linear_backward", "dx", dx, M * K);
  require_data("linear_backward", "dw", dw, N * K);
  if (desc.has_bias) require_data("linear_backward", "db (has_bias is set)", db, N);
  backward(desc, dy, xq, xq_params.scale(), wq, dx, dw, db, k);
}

void OnednnOps::backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq, float sx,
                         const std::int8_t* wq, float* dx, float* dw, float* db,
                         const std::string& /*kernel*/) {
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  const ThreadScope scope(threads_);

  // deq(q) = float(q) * s, the reference's dequantize_value with zero point 0.
  std::vector<float> w_deq(static_cast<std::size_t>(N * K));
  for (std::int64_t n = 0; n < N; ++n) {
    const float s = weight_scale(desc, n);
    for (std::int64_t i = 0; i < K; ++i)
      w_deq[static_cast<std::size_t>(n * K + i)] = static_cast<float>(wq[n * K + i]) * s;
  }
  // out [rows, cols] = lhs [rows, inner] * rhs [inner, cols], all row-major float32.
  auto gemm = [&](std::int64_t rows, std::int64_t cols, std::int64_t inner, const float* lhs,
                  const float* rhs, float* out) {
    if (rows == 0 || cols == 0) return;
    if (inner == 0) {
      std::fill(out, out + rows * cols, 0.0f);
      return;
    }
    MatmulKey key;
    key.m = rows;
    key.n = cols;
    key.k = inner;
    key.kind = MatmulKind::f32;
    key.weights = WeightsFormat::kn;
    key.threads = scope.threads();
    const CachedMatmul& prim = engine_.primitive(key);
    const dnnl::memory weights = engine_.wrap_weights(key, rhs);
    MatmulArgs args;
    args.a = lhs;
    args.weights = &weights;
    args.dst = out;
    engine_.run(key, prim, args);
  };
  // dX [M, K] = dY [M, N] * deq(W) [N, K]
  gemm(M, K, N, dy, w_deq.data(), dx);
  // dW [N, K] = dY^T [N, M] * deq(Xq) [M, K]
  std::vector<float> x_deq(static_cast<std::size_t>(M * K));
  for (std::int64_t i = 0; i < M * K; ++i)
    x_deq[static_cast<std::size_t>(i)] = static_cast<float>(xq[i]) * sx;
  std::vector<float> dy_t(static_cast<std::size_t>(N * M));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) dy_t[static_cast<std::size_t>(n * M + m)] = dy[m * N + n];
  gemm(N, K, M, dy_t.data(), x_deq.data(), dw);
  // db[n] = sum over rows of dY, in double as the reference (nearly exact, one rounding).
  if (desc.has_bias)
    for (std::int64_t n = 0; n < N; ++n) {
      double acc = 0.0;
      for (std::int64_t m = 0; m < M; ++m) acc += dy[m * N + n];
      db[n] = static_cast<float>(acc);
    }
}

}  // namespace qforge::onednn
