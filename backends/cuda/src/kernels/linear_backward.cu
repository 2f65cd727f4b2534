// SIMT float32 GEMM with int8 dequantization on load (see linear_backward.h). 128x128 tile,
// 256 threads, 8x8 outputs per thread, 8 terms of the reduction per step, double-buffered.
#include <algorithm>

#include "check.h"
#include "kernels/epilogue.cuh"
#include "kernels/linear_backward.h"

namespace qforge::cuda {
namespace {

constexpr int kT = 128, kR = 8, kThreads = 256;
constexpr int kChunkSteps = 32;  // 32 steps of 8 terms: partial sums of 256 terms
constexpr std::int64_t kMinTermsPerSplit = 512;

// Each thread owns 8 x 8 outputs: their running sums of the current chunk of 256 terms in
// registers, the chunk totals in shared memory (the first version kept both in registers: 205
// of them, one CTA per SM, 24 TFLOPS at 8192; with the totals in shared memory 128 registers and
// two CTAs per SM, 36 TFLOPS on an H200, same sums in the same order). Operands come in with
// vector loads where they allow them (4 floats of A, 4 codes of B in one load).
constexpr int kTotalBytes = kT * kT * 4;

__global__ void __launch_bounds__(kThreads, 2)
    dequant_gemm_kernel(DequantGemm g, std::int64_t r_per_split, float* __restrict__ partials) {
  extern __shared__ __align__(16) float s_total[];  // [8][8][kThreads]: thread t's (i, j) total
  __shared__ __align__(16) float sA[2][kR][kT];
  __shared__ __align__(16) float sB[2][kR][kT];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const std::int64_t i0 = static_cast<std::int64_t>(blockIdx.y) * kT;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.x) * kT;
  const std::int64_t r_begin = static_cast<std::int64_t>(blockIdx.z) * r_per_split;
  const std::int64_t r_end = min(g.r, r_begin + r_per_split);
  const int steps = r_end > r_begin ? static_cast<int>((r_end - r_begin + kR - 1) / kR) : 0;
  const bool a_vec = g.lda % 4 == 0 && (reinterpret_cast<std::uintptr_t>(g.a) & 15u) == 0;
  const bool b_vec = g.ldb % 4 == 0 && (reinterpret_cast<std::uintptr_t>(g.b) & 3u) == 0;

  float ra[4], rb[4];
  auto fetch = [&](int step) {
    const std::int64_t r0 = r_begin + static_cast<std::int64_t>(step) * kR;
    std::int64_t i, r;
    if (g.a_transposed) {
      r = r0 + tid / 32;
      i = i0 + (tid % 32) * 4;
    } else {
      i = i0 + tid / 2;
      r = r0 + (tid % 2) * 4;
    }
    const bool a_full = g.a_transposed ? (r < r_end && i + 3 < g.i) : (i < g.i && r + 3 < r_end);
    if (a_vec && a_full) {
      const float4 v = *reinterpret_cast<const float4*>(g.a_transposed ? g.a + r * g.lda + i
                                                                       : g.a + i * g.lda + r);
      ra[0] = v.x, ra[1] = v.y, ra[2] = v.z, ra[3] = v.w;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const std::int64_t ie = g.a_transposed ? i + e : i, re = g.a_transposed ? r : r + e;
        ra[e] = (ie < g.i && re < r_end)
                    ? (g.a_transposed ? g.a[re * g.lda + ie] : g.a[ie * g.lda + re])
                    : 0.0f;
      }
    }
    const std::int64_t br = r0 + tid / 32, bj = j0 + (tid % 32) * 4;
    if (br < r_end) {
      const float sb = dev::at(g.sb, br);
      if (b_vec && bj + 3 < g.j) {
        const unsigned w = *reinterpret_cast<const unsigned*>(g.b + br * g.ldb + bj);
#pragma unroll
        for (int e = 0; e < 4; ++e)
          rb[e] = dev::dequantize_value(static_cast<std::int8_t>((w >> (8 * e)) & 0xFFu), sb, 0);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          rb[e] = bj + e < g.j ? dev::dequantize_value(g.b[br * g.ldb + bj + e], sb, 0) : 0.0f;
      }
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) rb[e] = 0.0f;
    }
  };
  auto stash = [&](int buf) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (g.a_transposed) sA[buf][tid / 32][(tid % 32) * 4 + e] = ra[e];
      else sA[buf][(tid % 2) * 4 + e][tid / 2] = ra[e];
      sB[buf][tid / 32][(tid % 32) * 4 + e] = rb[e];
    }
  };

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      acc[i][j] = 0.0f;
      s_total[(i * 8 + j) * kThreads + tid] = 0.0f;
    }

  if (steps > 0) {
    fetch(0);
    stash(0);
  }
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int buf = step % 2;
    if (step + 1 < steps) fetch(step + 1);
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const float4 a0 = *reinterpret_cast<const float4*>(&sA[buf][r][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&sA[buf][r][64 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&sB[buf][r][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&sB[buf][r][64 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if ((step + 1) % kChunkSteps == 0) {
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          s_total[(i * 8 + j) * kThreads + tid] += acc[i][j];
          acc[i][j] = 0.0f;
        }
    }
    if (step + 1 < steps) stash(buf ^ 1);
    __syncthreads();
  }

  float* out = gridDim.z > 1 ? partials + static_cast<std::int64_t>(blockIdx.z) * g.i * g.j : g.c;
  const std::int64_t ld = gridDim.z > 1 ? g.j : g.ldc;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const std::int64_t row = i0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
    if (row >= g.i) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const std::int64_t col = j0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + (j - 4));
      if (col < g.j) out[row * ld + col] = s_total[(i * 8 + j) * kThreads + tid] + acc[i][j];
    }
  }
}

// c[i, j] = sum over splits s (in order) of partials[s, i, j].
__global__ void __launch_bounds__(256)
    sum_partials_kernel(const float* __restrict__ partials, int splits, std::int64_t rows,
                        std::int64_t cols, float* __restrict__ c, std::int64_t ldc) {
  const std::int64_t e = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * cols) return;
  float s = 0.0f;
  for (int z = 0; z < splits; ++z) s += partials[z * rows * cols + e];
  c[(e / cols) * ldc + e % cols] = s;
}

constexpr std::int64_t kColumnChunk = 256;

__global__ void __launch_bounds__(256)
    column_chunk_sums_kernel(const float* __restrict__ x, std::int64_t rows, std::int64_t cols,
                             float* __restrict__ partials) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kColumnChunk;
  const std::int64_t r1 = min(rows, r0 + kColumnChunk);
  float s = 0.0f;
  for (std::int64_t r = r0; r < r1; ++r) s += x[r * cols + c];
  partials[blockIdx.y * cols + c] = s;
}

__global__ void __launch_bounds__(256)
    column_total_kernel(const float* __restrict__ partials, std::int64_t chunks, std::int64_t cols,
                        float* __restrict__ out) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (std::int64_t k = 0; k < chunks; ++k) s += partials[k * cols + c];
  out[c] = s;
}

}  // namespace

int dequant_gemm_splits(const DequantGemm& g, int multiprocessors) {
  const std::int64_t tiles = ((g.i + kT - 1) / kT) * ((g.j + kT - 1) / kT);
  const std::int64_t want = (2 * std::max(1, multiprocessors) + tiles - 1) / tiles;
  const std::int64_t most = std::max<std::int64_t>(1, g.r / kMinTermsPerSplit);
  return static_cast<int>(std::clamp<std::int64_t>(std::min(want, most), 1, 32));
}

void launch_dequant_gemm(const DequantGemm& g, int splits, float* workspace, cudaStream_t stream) {
  if (g.i == 0 || g.j == 0) return;
  // Split boundaries on whole steps of kR terms.
  std::int64_t per_split = (g.r + splits - 1) / std::max(1, splits);
  per_split = std::max<std::int64_t>(kR, (per_split + kR - 1) / kR * kR);
  const auto used = static_cast<int>(std::max<std::int64_t>(1, (g.r + per_split - 1) / per_split));
  const dim3 grid(static_cast<unsigned>((g.j + kT - 1) / kT),
                  static_cast<unsigned>((g.i + kT - 1) / kT), static_cast<unsigned>(used));
  // The chunk totals take 64 KB of dynamic shared memory: raise the limit once per device.
  static bool allowed[64] = {};
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  bool& done = allowed[device >= 0 && device < 64 ? device : 0];
  if (!done) {
    check(cudaFuncSetAttribute(dequant_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               kTotalBytes),
          "cudaFuncSetAttribute(dequant_gemm_kernel, MaxDynamicSharedMemorySize)");
    done = true;
  }
  dequant_gemm_kernel<<<grid, kThreads, kTotalBytes, stream>>>(g, per_split, workspace);
  check_launch("dequant_gemm_kernel");
  if (used > 1) {
    const std::int64_t n = g.i * g.j;
    sum_partials_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
        workspace, used, g.i, g.j, g.c, g.ldc);
    check_launch("sum_partials_kernel");
  }
}

std::int64_t column_sums_workspace(std::int64_t rows, std::int64_t cols) {
  return ((rows + kColumnChunk - 1) / kColumnChunk) * cols;
}

void launch_column_sums(const float* x, std::int64_t rows, std::int64_t cols, float* out,
                        float* workspace, cudaStream_t stream) {
  if (cols == 0) return;
  const std::int64_t chunks = (rows + kColumnChunk - 1) / kColumnChunk;
  const auto col_blocks = static_cast<unsigned>((cols + 255) / 256);
  if (chunks > 0) {
    column_chunk_sums_kernel<<<dim3(col_blocks, static_cast<unsigned>(chunks)), 256, 0, stream>>>(
        x, rows, cols, workspace);
    check_launch("column_chunk_sums_kernel");
  }
  column_total_kernel<<<col_blocks, 256, 0, stream>>>(workspace, chunks, cols, out);
  check_launch("column_total_kernel");
}

}  // namespace qforge::cuda
