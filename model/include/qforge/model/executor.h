// Float execution of a graph: float32 activations, int64 shape tensors, through the kernels of
// docs/MODEL.md (heavy ops through OpenBLAS sgemm).
//
// The executor is built from a graph and concrete input shapes: construction resolves the graph
// (qforge/model/resolve.h) and folds Conv + BatchNormalization once, so every shape and every
// allocation size is known before the first run, and run() checks that the given inputs have
// exactly those types and shapes. Every node output is allocated once, on the first run, and
// reused by every later run (no allocation or zero fill per run; memory is the sum of the
// intermediate tensors of one run, which the executor holds between runs). An Executor may be
// run many times; run() is not safe to call concurrently on one Executor (copies are
// independent).
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

namespace ops {
struct OpKernel;
}

using TensorMap = std::map<std::string, Tensor, std::less<>>;

// Called for every node, in graph order, with its inputs (null where absent) and its outputs,
// already allocated with the resolved shapes (holding the previous run's values: a hook that
// returns true must write every element). A Relu may run in place: its output is then its input
// tensor (outputs[0] == inputs[0]). Returns true when it computed the outputs itself;
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
  // One node as run() walks it: tensors by index into the value table.
  struct Step {
    const ops::OpKernel* kernel = nullptr;
    std::vector<std::ptrdiff_t> inputs;   // -1 for an absent optional input
    std::vector<std::ptrdiff_t> outputs;  // -1 for an unused optional output
    // Zero the outputs before the kernel runs: kernels not known to write every element may
    // rely on the zero fill of a fresh tensor.
    bool zero_outputs = false;
    // Relu whose input no other node reads and nobody sees afterwards: it runs in place on
    // that input's tensor (this value index) unless the run keeps the input.
    std::ptrdiff_t in_place_of = -1;
  };

  Graph graph_;
  // Every tensor name the graph uses (inputs, initializers, node outputs), by index.
  std::map<std::string, std::size_t, std::less<>> value_index_;
  std::vector<TensorType> output_types_;  // by value index; node outputs only
  std::vector<Step> steps_;
  // The node outputs of the last run, by value index (allocated on the first run).
  mutable std::vector<Tensor> buffers_;
};

// Op types the executor runs, sorted, each with the ONNX schema versions it implements.
struct SupportedOp {
  std::string op_type;
  std::vector<int> since_versions;
};
QFORGE_MODEL_API std::vector<SupportedOp> supported_ops();

}  // namespace qforge::model
