// The convolution section of qforge_bench_cuda (bench_conv.cpp).
#pragma once

#include <random>

#include "bench_blockwise.h"
#include "qforge/ops.h"

namespace qforge::bench {

// ResNet-50 3x3 / 1x1 layers and a MobileNet depthwise layer at batch 1 and 32 (qlinear_conv,
// NHWC): the cuda plugin against cuBLASLt's int8 GEMM of the same MACs (no im2col, no
// epilogue) and, when `cpu` is loaded, against that CPU plugin on this host.
void conv_section(QuantizationOps& ops, QuantizationOps* cpu, std::mt19937_64& rng,
                  const AddRow& add, int reps);

}  // namespace qforge::bench
