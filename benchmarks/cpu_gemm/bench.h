// The three benchmark families of qforge_bench_cpu_gemm; each prints its rows and returns the
// lines of the summary table printed last.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "qforge/ops.h"

namespace qforge::bench {

struct Options {
  int threads = 0;          // 0 = each library's default (cores)
  double min_time_s = 0.5;  // per measurement
  int min_runs = 5;
  std::size_t rotate_bytes = 256u << 20;  // weights rotated so one pass exceeds the caches
  bool quick = false;                     // smaller shapes only (smoke run)
  std::string isa;                        // cpu_x86 "isa" option, empty = all
  std::vector<std::array<std::int64_t, 3>>
      shapes;  // --shape MxNxK (repeatable); empty = the set
  // --conv-filter TEXT: only the conv rows whose name contains it, or one of its '|'-separated
  // texts
  std::string conv_filter;
};

// u8 x s8 -> f32 (matmul_dequant with prepacked weights) against onednn and OpenBLAS sgemm.
std::vector<std::string> run_gemm_benchmarks(QuantizationOps& x86, QuantizationOps* onednn,
                                             const Options& opt);
// cpu_x86's entry points for one GEMM: per-call op (B packed each call), prepacked, and plans
// (B fixed, B per run); microseconds per call.
std::vector<std::string> run_plan_benchmarks(QuantizationOps& x86, const Options& opt);
// quantize / dequantize of 64 MiB of float32 against memcpy.
std::vector<std::string> run_quant_benchmarks(QuantizationOps& x86, QuantizationOps* onednn,
                                              const Options& opt);

// matmul_weight_only (float A, int4 block-32 B, float Y) plans against OpenBLAS sgemm on the
// float weights, MiniLM's shapes.
std::vector<std::string> run_weight_only_benchmarks(QuantizationOps& x86, const Options& opt);

// Quantized convolution (the suites' conv layers): cpu_x86 plans against onednn plans (oneDNN's
// int8 convolution, where the plugin claims it), cpu_scalar plans (when loaded; batch 1 only)
// and OpenBLAS im2col + sgemm.
std::vector<std::string> run_conv_benchmarks(QuantizationOps& x86, QuantizationOps* onednn,
                                             QuantizationOps* scalar, const Options& opt);

}  // namespace qforge::bench
