// Runs one matmul descriptor through the onednn plugin with every kernel supports() lists,
// directly and through pack_weights, and expects qforge::reference's bytes exactly: integer
// outputs always, and float outputs too (the plugin's epilogues and oneDNN's fused post-ops
// evaluate the reference's float32 expressions in its order).
#pragma once

#include <cstdint>
#include <vector>

#include "support.h"

namespace qforge::onednn_test {

// A MatmulDesc (which has no default constructor) with the fields the tests vary.
MatmulDesc matmul_desc(std::int64_t m, std::int64_t n, std::int64_t k, QuantizationParams a,
                       QuantizationParams b, MatrixLayout layout = MatrixLayout::kn);

struct MatmulRun {
  OpKind op;
  MatmulDesc desc;
  std::vector<std::uint8_t> a, b;
  std::vector<float> bias;  // N values when desc.has_bias
};

// Random A, B (and bias) for `desc`.
MatmulRun random_run(Rng& rng, OpKind op, const MatmulDesc& desc);

// Compares the per-call op (direct and prepacked: the backend's own kernel), and every kernel
// listed x {B per run, B fixed} through plans; returns how many kernel runs were compared
// (2 per kernel; 0 when supports() refused, with the reason in *refusal).
int expect_exact(QuantizationOps& ops, const MatmulRun& run, std::string* refusal = nullptr);

// The reference's output bytes.
std::vector<std::uint8_t> reference_output(const MatmulRun& run);
std::size_t output_bytes(const MatmulRun& run);

}  // namespace qforge::onednn_test
