// The block-wise GEMM section of qforge_bench_cuda (bench_blockwise.cpp).
#pragma once

#include <functional>
#include <random>
#include <string>

#include "qforge/ops.h"

namespace qforge::bench {

// Adds one row to the run's table: what, shape, ms, rate, unit, anchor name, anchor rate,
// target, whether the result was spot-checked correct.
using AddRow =
    std::function<void(const std::string&, const std::string&, double, double, const std::string&,
                       const std::string&, double, const std::string&, bool)>;

void blockwise_section(QuantizationOps& ops, std::mt19937_64& rng, double copy_gbps,
                       const AddRow& add, int reps);

}  // namespace qforge::bench
