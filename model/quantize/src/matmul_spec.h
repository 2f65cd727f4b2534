// A MatMul or Gemm node read as Y[M, N] = A[M, K] * B + bias: which tensors, which extents, and
// the float weight and bias with Gemm's alpha and beta already applied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qforge/model/graph.h"
#include "qforge/op_desc.h"

namespace qforge::model::quantize {

// Thrown (as qforge::Error, ErrorCode::unsupported) for a node that cannot be quantized; the
// message names what is supported.
struct MatmulSpec {
  std::string input;   // A
  std::string output;  // Y
  std::int64_t m = 0;  // rows of A: the product of its leading extents
  std::int64_t k = 0;
  std::int64_t n = 0;
  MatrixLayout layout = MatrixLayout::kn;  // of `weight` as the graph stores it
  std::vector<float> weight;               // alpha * B, [K, N] (kn) or [N, K] (nk)
  std::vector<float> bias;                 // beta * C per column, empty when none
};

// True for the op types this layer quantizes.
bool is_quantizable_matmul(const std::string& op_type);

// Reads a node of a resolved graph (every shape known). Throws unsupported naming the node for
// anything outside MatMul with a 2-D initializer B and A of rank >= 2, and Gemm with transA = 0,
// an initializer B and a C (if any) that is an initializer of N, 1 or one element.
MatmulSpec matmul_spec(const Graph& graph, const Node& node);

}  // namespace qforge::model::quantize
