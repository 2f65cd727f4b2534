// Graph passes that prepare an imported graph for execution and for quantization.
//
// resolve() fixes every tensor's shape for given input shapes and folds constants: a node whose
// inputs are all known (initializers, Constant nodes, Shape of a tensor whose shape is now
// known) is run once and replaced by an initializer. PyTorch exports compute Reshape targets
// with Shape -> Gather -> Unsqueeze -> Concat chains; after resolve() those are constants and
// every remaining node has concrete input and output shapes (Graph::value_info lists them all).
#pragma once

#include <map>
#include <string>

#include "qforge/model/export.h"
#include "qforge/model/graph.h"

namespace qforge::model {

struct ResolveOptions {
  // Concrete shapes for graph inputs. Inputs not listed use their declared shape, which must
  // then be fully known. A listed shape must agree with the declared known dims and rank, and
  // dims that share a symbol ("batch") must get the same value.
  std::map<std::string, Shape, std::less<>> input_shapes;
  // Graph inputs whose values are fixed for this resolution (a shape tensor, a mask, a flag):
  // they become constants, fold like initializers and are no longer inputs of the result.
  std::map<std::string, Tensor, std::less<>> constant_inputs;
  // Limit for every tensor the graph would create.
  std::uint64_t max_tensor_bytes = kDefaultMaxTensorBytes;
};

// Returns the resolved graph: graph inputs with concrete shapes, constants folded (folded nodes
// removed, their outputs now initializers), nodes that no graph output depends on removed,
// unused initializers dropped, and value_info holding the type and shape of every remaining
// intermediate tensor. Throws qforge::Error naming the node whose shape cannot be computed.
QFORGE_MODEL_API Graph resolve(const Graph& graph, const ResolveOptions& options = {});

// Folds BatchNormalization (inference form, one output) into the Conv feeding it, when the
// Conv's output has no other reader and is not a graph output, and the Conv weight and bias and
// the BN parameters are initializers:  W' = W * g / sqrt(v + eps) per output channel,
// B' = (B - m) * g / sqrt(v + eps) + beta. Returns how many pairs were folded.
QFORGE_MODEL_API int fold_conv_batchnorm(Graph& graph);

}  // namespace qforge::model
