// Float execution of a graph: float32 activations, int64 shape tensors, through the kernels of
// docs/MODEL.md (heavy ops through OpenBLAS sgemm).
//
// The executor is built from a graph and concrete input shapes: construction resolves the graph
// (qforge/model/resolve.h) and folds Conv + BatchNormalization once, so every shape and every
// allocation size is known before the first run, and run() checks that the given inputs have
// exactly those types and shapes. Intermediate tensors are freed after their last reader. An
// Executor may be run many times; run() is not safe to call concurrently on one Executor.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "qforge/model/export.h"
#include "qforge/model/graph.h"
#include "qforge/model/resolve.h"
#include "qforge/model/tensor.h"

namespace qforge::model {

using TensorMap = std::map<std::string, Tensor, std::less<>>;

// Called for every node, in graph order, with its inputs (null where absent) and its outputs,
// already allocated with the resolved shapes. Returns true when it computed the outputs itself;
// false lets the node's float kernel run. Quantized execution replaces layers through it and
// calibration watches activations through it, so both share the executor's allocation and
// liveness instead of copying them.
using NodeHook = std::function<bool(std::size_t node, std::span<const Tensor* const> inputs,
                                    std::span<Tensor* const> outputs)>;

class QFORGE_MODEL_API Executor {
 public:
  Executor(const Graph& graph, const ResolveOptions& options = {});

  // The graph as resolved for execution.
  const Graph& graph() const noexcept { return graph_; }

  // Runs the graph; returns every graph output by name. Throws qforge::Error when an input is
  // missing, unknown, or of another type or shape than the executor was built for.
  TensorMap run(const TensorMap& inputs) const;

  // Runs and also returns every intermediate tensor named in `keep` (for per-layer comparisons
  // and calibration); unknown names are an error.
  TensorMap run(const TensorMap& inputs, const std::vector<std::string>& keep) const;

  // The same with a hook that may run any node instead of its float kernel (node indices are
  // those of graph().nodes).
  TensorMap run(const TensorMap& inputs, const std::vector<std::string>& keep,
                const NodeHook& hook) const;

 private:
  Graph graph_;
  // Tensors to free after node i runs (their last reader), so memory follows liveness.
  std::vector<std::vector<std::string>> release_after_;
};

// Op types the executor runs, sorted, each with the ONNX schema versions it implements.
struct SupportedOp {
  std::string op_type;
  std::vector<int> since_versions;
};
QFORGE_MODEL_API std::vector<SupportedOp> supported_ops();

}  // namespace qforge::model
