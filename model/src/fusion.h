// Chains of nodes the executor runs as one kernel (ops/fused.h): fewer passes over memory for
// the elementwise tails of a transformer layer, which are memory-bound.
//
//   gelu:      [Add(x, bias[N])] -> Div(v, c) -> Erf -> Add(., c) -> Mul(v, c) -> Mul(., .)
//   softmax:   [Div(x, c)] -> Add(., mask) -> Softmax(last axis)
//   layernorm: [Add(x, bias[N])] -> Add(., residual) -> LayerNormalization(last axis, one output)
//   conv:      Conv(x, W, [B]) (2-D) -> [Relu] -> [MaxPool] (2-D, no Indices), at least one of
//              the two: each output plane is finished in cache (ops/conv.h)
//   attention: q[B,S,H,D] -> Transpose(0,2,1,3) -> MatMul(., kT) -> [Div(., c)] -> [Add(., mask)]
//              -> Softmax(last axis) -> MatMul(., vT) -> Transpose(0,2,1,3), with
//              kT = k[B,T,H,D] -> Transpose(0,2,3,1) (or Transpose(0,2,1,3) -> Transpose(0,1,3,2))
//              and vT = v[B,T,H,E] -> Transpose(0,2,1,3): BERT's self-attention between the
//              head-split Reshapes and the merge Reshape (those stay: they are views). Each
//              (batch, head) runs as one task (ops/fused.h's fused_attention). The MatMuls here
//              multiply two activations, which no quantized layer takes (those need constant
//              weights), so a hook gives them up with the chain.
//
// (c: a one-element float32 initializer; bias[N]: a float32 initializer of the last axis's
// extent.) Only the last node's output leaves the chain: every inner tensor is read by chain
// nodes alone and is no graph output. The fused kernels compute the nodes' own float32
// operations in their order, so results are bit-identical to the nodes run one by one; except
// attention, whose products are sgemm calls over the heads in place, so they may sum in another
// order than the MatMuls over the transposed copies (last bits; the Softmax is the same).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "ops/fused.h"
#include "qforge/model/executor.h"
#include "qforge/model/graph.h"

namespace qforge::model {

// The roles of FusedChain::operands.
inline constexpr std::size_t kX = 0;       // the main input
inline constexpr std::size_t kOther = 1;   // softmax: the mask; layernorm: the residual; conv: W
inline constexpr std::size_t kBias = 2;    // gelu, layernorm: the leading Add's bias [N]; conv: B
inline constexpr std::size_t kScale = 3;   // layernorm
inline constexpr std::size_t kLnBias = 4;  // layernorm, optional
// attention: q is kX, the mask (optional) kOther, and
inline constexpr std::size_t kKey = 2;
inline constexpr std::size_t kValue = 3;

struct FusedChain {
  enum class Kind { gelu, softmax, layernorm, conv, attention };
  Kind kind = Kind::gelu;
  std::vector<std::size_t> nodes;  // in graph order; the last one writes the chain's output
  std::vector<std::string> inner;  // tensors the chain computes but does not write
  // The tensors the chain reads, by role (kX...); "" where a role is absent.
  std::array<std::string, 5> operands;
  float divisor = 1.0f;  // gelu; softmax and attention when has_divisor
  bool has_divisor = false;
  float one = 1.0f, half = 0.5f;  // gelu
  float epsilon = 1e-5f;          // layernorm
  // conv: copies of the Conv and MaxPool nodes (their attributes give the windows), the
  // MaxPool's input shape, and whether a Relu comes between.
  Node conv, pool;
  bool relu = false, has_pool = false;
  Shape pool_input;
};

// The chains of a resolved graph (every tensor typed and shaped), in graph order, disjoint.
std::vector<FusedChain> find_fused_chains(const Graph& graph);

// Runs a chain: `operands` holds the tensors of chain.operands (null where absent), y is its
// last node's output. The gelu, layernorm and attention chains also set *range to y's
// (ValueRange) when range is not null; the others leave it.
void run_fused_chain(const FusedChain& chain, const std::array<const Tensor*, 5>& operands,
                     Tensor& y, ValueRange* range = nullptr);

}  // namespace qforge::model
