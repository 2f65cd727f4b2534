// The float32 GEMMs of the quantized linear backward, with the int8 operand dequantized on the
// fly as its tiles are loaded (never materialised in device memory):
//   C[i, j] = sum_r A(i, r) * (float(B[r, j]) * sb[r])
// dX = dY deq(Wq):   i = m, r = n, j = k, A(m, n) = dY[m, n],   B = Wq [N, K], sb = sw[n]
// dW = dY^T deq(Xq): i = n, r = m, j = k, A(n, m) = dY[m, n] (transposed read), B = Xq [M, K],
//                    sb = sx (stride 0)
// Sums accumulate in float32 in chunks of 256 terms that are then added up, and long reductions
// are split across CTAs whose partials are added in a fixed order: both keep the rounding error
// near sqrt(chunks) ulps instead of growing with the full length, and the result deterministic.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/gemm.h"

namespace qforge::cuda {

struct DequantGemm {
  const float* a = nullptr;
  bool a_transposed = false;  // A(i, r) = a[r * lda + i] instead of a[i * lda + r]
  std::int64_t lda = 0;
  const std::int8_t* b = nullptr;
  std::int64_t ldb = 0;
  FloatVec sb;  // scale of row r of B
  float* c = nullptr;
  std::int64_t ldc = 0;
  std::int64_t i = 0, j = 0, r = 0;
};

// How many pieces to split the reduction into, and the float32 workspace that needs
// (splits * i * j floats; 0 when splits == 1).
int dequant_gemm_splits(const DequantGemm& g, int multiprocessors);
void launch_dequant_gemm(const DequantGemm& g, int splits, float* workspace, cudaStream_t stream);

// out[c] = sum over rows of x[r * cols + c], in chunks of 256 rows (db = column sums of dY).
// workspace: ceil(rows / 256) * cols floats.
std::int64_t column_sums_workspace(std::int64_t rows, std::int64_t cols);
void launch_column_sums(const float* x, std::int64_t rows, std::int64_t cols, float* out,
                        float* workspace, cudaStream_t stream);

}  // namespace qforge::cuda
