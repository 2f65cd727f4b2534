// Float execution of a graph: float32 activations, int64 shape tensors, through the kernels of
// docs/MODEL.md (heavy ops through OpenBLAS sgemm).
//
// The executor is built from a graph and concrete input shapes: construction resolves the graph
// (qforge/model/resolve.h) and folds Conv + BatchNormalization once, so every shape and every
// allocation size is known before the first run, and run() checks that the given inputs have
// exactly those types and shapes. Construction also plans memory (qforge/model/memory_plan.h):
// every node output gets an offset in one arena, shared with tensors whose lifetimes do not
// overlap, so memory is about the liveness peak of one run rather than the sum of its
// intermediates. The arena is allocated on the first run and reused by every later run (no
// allocation or zero fill per run). An Executor may be run many times; run() is not safe to call
// concurrently on one Executor (copies are independent and allocate their own arena).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "qforge/model/export.h"
#include "qforge/model/graph.h"
#include "qforge/model/memory_plan.h"
#include "qforge/model/resolve.h"
#include "qforge/model/tensor.h"

namespace qforge::model {

namespace ops {
struct OpKernel;
}
class ThreadPool;
struct ExecutorFusions;

using TensorMap = std::map<std::string, Tensor, std::less<>>;

// Called for every node, in graph order, with its inputs (null where absent) and its outputs,
// already allocated with the resolved shapes (in the arena, holding whatever an earlier tensor
// left there: a hook that returns true must write every element). A Relu may run in place: its
// output is then its input tensor (outputs[0] == inputs[0]). A Reshape, Flatten, Squeeze or
// Unsqueeze whose input only it reads has its output on the input's bytes already (its kernel
// does not run; a hook need not write them). Tensors are valid only during the
// call: the arena reuses their bytes once their last reader has run. Returns true when it computed
// the outputs itself; false lets the node's float kernel run. Quantized execution replaces layers
// through it and calibration watches activations through it, so both share the executor's
// allocation and liveness instead of copying them.
using NodeHook = std::function<bool(std::size_t node, std::span<const Tensor* const> inputs,
                                    std::span<Tensor* const> outputs)>;

// The range of a float tensor that dynamic quantization needs (ONNX DynamicQuantizeLinear's
// min(0, min x) and max(0, max x) over the non-NaN values; an infinite value is kept), as the
// step that wrote the tensor computed it while writing: the fused GELU, LayerNormalization and
// attention chains do (docs/MODEL.md, "Ranges from the producing step"). `known` is false for
// every other tensor; a hook then finds the range itself.
struct ValueRange {
  float lo = 0.0f, hi = 0.0f;
  bool known = false;
};

// NodeHook with the ranges of the node's inputs (one per input, in order).
using RangedNodeHook =
    std::function<bool(std::size_t node, std::span<const Tensor* const> inputs,
                       std::span<const ValueRange> input_ranges, std::span<Tensor* const> outputs)>;

struct ExecutorOptions {
  // Share arena bytes between tensors whose lifetimes do not overlap; off, every node output has
  // bytes of its own (the sum of the intermediates; for comparisons and debugging).
  bool reuse_memory = true;
  // Threads for the float kernels that are loops (elementwise ops, Softmax, LayerNormalization,
  // reductions, Transpose, pooling, direct convolution) and for the products of a batched MatMul
  // (one single-threaded sgemm each); 0: QFORGE_MODEL_THREADS when set to a positive count, else
  // the physical cores. Results are bit-identical for every count. Gemm, the sgemm convolution
  // and a MatMul whose B has no batch axes run on OpenBLAS's threads (OPENBLAS_NUM_THREADS).
  int threads = 0;
  // Run chains of elementwise nodes as one kernel (model/src/fusion.h: a GELU with its bias
  // Add, attention's scale and mask with the Softmax, bias and residual Adds with the
  // LayerNormalization): one pass over memory instead of one per node, bit-identical results.
  // Also a 2-D Conv with the Relu and 2-D MaxPool after it, finished plane by plane in cache,
  // and BERT's self-attention from the head-split Transposes to the merge Transpose, one task
  // per (batch, head) (its products may differ from the unfused MatMuls' in the last bits).
  // A run runs a chain node by node when `keep` names one of its inner tensors. The hook is not
  // called for the nodes of a chain that runs fused, except a conv chain's Conv: the hook is
  // called for it first, and when it returns true (it computed the Conv) the rest of that chain
  // runs node by node, each node offered to the hook as usual.
  bool fuse = true;
  // Time every step of every run (Executor::profile): where a model's time goes on a machine
  // without a sampling profiler. Off, a run pays one branch per step.
  bool profile = false;
};

// Wall time of one kind of step, summed over runs (ExecutorOptions::profile). The label is the
// node's op type; "<op> (hook)" when a hook computed the node (a quantized layer: its
// quantization, GEMM and dequantization together); "fused <kind>" for a chain run as one kernel
// (fusion.h: gelu, softmax, layernorm, conv, attention).
struct StepTime {
  std::string label;
  std::int64_t calls = 0;
  double seconds = 0.0;
};

class QFORGE_MODEL_API Executor {
 public:
  Executor(const Graph& graph, const ResolveOptions& options = {},
           const ExecutorOptions& executor_options = {});

  // The graph as resolved for execution.
  const Graph& graph() const noexcept { return graph_; }

  // Where the node outputs live: the arena's size against the liveness peak and the sum.
  const MemoryPlan& memory_plan() const noexcept { return plan_; }

  // Gives node outputs another element type, same shape, and plans memory again: for a hook
  // that writes them in that type and for the nodes that read them (quantized layers pass int8
  // codes through MaxPool and Flatten; docs/MODEL.md, "Quantized execution"). The executor's
  // own checks still describe the float graph, so the hook and the kernels reading a retyped
  // tensor must accept its type. Throws invalid_argument for a name that is not a node output.
  void retype_outputs(const std::map<std::string, ElementType, std::less<>>& types);

  // Plans `node`'s first output on the bytes of its input `input`, and memory again: for a hook
  // whose layer already computed that node's result into the input (a quantized MatMul that
  // added the following Add's bias in its epilogue), so the node has nothing left to do. Run
  // without such a hook, the node's float kernel runs in place. Throws invalid_argument unless
  // that input is a node output that only this node reads, no graph output, of the output's
  // type and shape, and the node is in no fused chain.
  void run_in_place(std::size_t node, std::size_t input);

  // Whether `node` belongs to a chain the executor runs as one kernel (ExecutorOptions::fuse),
  // where the hook is not offered it.
  bool in_fused_chain(std::size_t node) const;

  // Runs the graph; returns every graph output by name. Throws qforge::Error when an input is
  // missing, unknown, or of another type or shape than the executor was built for.
  TensorMap run(const TensorMap& inputs) const;

  // Runs and also returns every intermediate tensor named in `keep` (for per-layer comparisons
  // and calibration), copied as soon as its node has run (before a Relu overwrites it in
  // place); unknown names are an error.
  TensorMap run(const TensorMap& inputs, const std::vector<std::string>& keep) const;

  // The same with a hook that may run any node instead of its float kernel (node indices are
  // those of graph().nodes).
  TensorMap run(const TensorMap& inputs, const std::vector<std::string>& keep,
                const NodeHook& hook) const;

  // The same with the ranges its producing steps computed (ValueRange) given to the hook.
  TensorMap run_with_ranges(const TensorMap& inputs, const std::vector<std::string>& keep,
                            const RangedNodeHook& hook) const;

  // Calls f(begin, end) over disjoint ranges covering [0, n), split across the thread pool of
  // the run this thread is inside (a hook of run / run_with_ranges doing a loop of its own; at
  // least `grain` items a range), else over the whole range on the calling thread. The pool's
  // workers then sleep rather than poll: the hook's next work runs on a plugin's threads.
  static void parallel_for(std::int64_t n, std::int64_t grain,
                           const std::function<void(std::int64_t, std::int64_t)>& f);

  // With ExecutorOptions::profile: the step times summed over every run since construction or
  // the last reset_profile, longest first (copies of the Executor share them); empty otherwise.
  std::vector<StepTime> profile() const;
  void reset_profile() const;

 private:
  // One node as run() walks it: tensors by index into the value table.
  struct Step {
    const ops::OpKernel* kernel = nullptr;
    std::vector<std::ptrdiff_t> inputs;   // -1 for an absent optional input
    std::vector<std::ptrdiff_t> outputs;  // -1 for an unused optional output
    // Zero the outputs before the kernel runs: kernels not known to write every element may
    // rely on the zero fill of a fresh tensor.
    bool zero_outputs = false;
    // Relu whose input no other node reads and no graph output is: it runs in place on that
    // input's tensor (this value index), in the input's arena bytes.
    std::ptrdiff_t in_place_of = -1;
    // With in_place_of: a Reshape-like node whose output is a view of its input's bytes (its own
    // view, of the output's shape), so nothing runs.
    bool view = false;
    // The fused chain (index into fusions_->chains) this node belongs to, or -1.
    std::ptrdiff_t chain = -1;
  };

  // The arena and the node outputs as views into it (by value index), made on the first run. A
  // copy starts empty: a copied Executor allocates its own on its first run.
  struct Arena {
    std::vector<std::byte> bytes;  // over-allocated by kArenaAlignment to align the base
    std::byte* base = nullptr;
    std::vector<Tensor> views;
    Arena() = default;
    Arena(const Arena&) {}
    Arena& operator=(const Arena&) {
      *this = Arena();
      return *this;
    }
    Arena(Arena&&) noexcept = default;
    Arena& operator=(Arena&&) noexcept = default;
  };

  void plan_memory(const ExecutorOptions& options);
  // Sets in_place_of for Relu steps whose input only they read, of the output's type, and for
  // Reshape-like steps whose input only they read (view).
  void plan_in_place_relus();
  void allocate_arena() const;

  Graph graph_;
  // Every tensor name the graph uses (inputs, initializers, node outputs), by index.
  std::map<std::string, std::size_t, std::less<>> value_index_;
  std::vector<TensorType> output_types_;  // by value index; node outputs only
  std::vector<std::ptrdiff_t> producer_;  // by value index: the step writing it, -1 if none
  std::vector<std::size_t> offset_;       // by value index; node outputs only
  std::vector<Step> steps_;
  // run_in_place's (node, input) pairs, applied again whenever the in-place steps are planned.
  std::vector<std::pair<std::size_t, std::size_t>> in_place_by_hook_;
  MemoryPlan plan_;
  bool reuse_memory_ = true;
  mutable Arena arena_;
  // Shared by copies: the pool serves one run at a time, and a concurrent run's kernels run on
  // their calling thread.
  std::shared_ptr<ThreadPool> pool_;
  // The chains run as one kernel, with their operands' value indices; null when none.
  std::shared_ptr<const ExecutorFusions> fusions_;
  // The step times (ExecutorOptions::profile), shared by copies; null when off.
  struct Profile;
  std::shared_ptr<Profile> profile_;
};

// Op types the executor runs, sorted, each with the ONNX schema versions it implements.
struct SupportedOp {
  std::string op_type;
  std::vector<int> since_versions;
};
QFORGE_MODEL_API std::vector<SupportedOp> supported_ops();

}  // namespace qforge::model
