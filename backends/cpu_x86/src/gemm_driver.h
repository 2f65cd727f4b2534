// The GEMM driver: packs A for the chosen kernel, splits the output into tiles, runs the tile
// kernel and the fused epilogue for each, across the thread pool.
//
// Work split: tasks are rectangles of output tiles; a task runs its tiles one after another,
// each tile's arithmetic depending only on the tile. So the bytes written never depend on the
// thread count or on which thread ran which task.
#pragma once

#include <cstdint>

#include "kernel_table.h"
#include "packing.h"
#include "quantize_kernels.h"
#include "thread_pool.h"

namespace qforge::cpu_x86 {

struct GemmOutput {
  enum class Kind { int32, dequant_f32, requant } kind = Kind::int32;
  void* out = nullptr;
  const float* bias = nullptr;  // dequant_f32: [N] or null
  // requant: qlinear_matmul's int32 bias [N] (added to C before requantization) or null
  const std::int32_t* bias_i32 = nullptr;
  // requant (per-tensor output params)
  float sy = 1.0f;
  std::int32_t zy = 0;
  QuantRange range{true, -128, 127};
  RequantMode mode = RequantMode::float_multiplier;
};

// Per-instance scratch reused across calls (one instance is used by one thread at a time).
struct GemmScratch {
  PackedA a;
};

// Choices of the driver that do not change any result.
struct GemmTuning {
  bool avx512_epilogue = false;      // the AVX-512 tier may run: the float epilogue uses it
  std::int64_t gemv_b_prefetch = 0;  // TileArgs::b_prefetch for GEMV kernels (M <= 16)
};

// Runs desc (desc.n, desc.k and the B params must match `b`) with `kernel`. Returns false
// when C + out.bias_i32 left int32 somewhere (the output is then incomplete: the caller reruns
// the reference, which reports the position); true otherwise.
bool run_gemm(const KernelInfo& kernel, const MatmulDesc& desc, const void* a,
              const X86PackedWeights& b, const GemmOutput& out, ThreadPool& pool,
              GemmScratch& scratch, const GemmTuning& tuning);

}  // namespace qforge::cpu_x86
