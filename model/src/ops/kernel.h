// The float op kernels: one OpKernel per ONNX op type, looked up by op type.
//
// A kernel answers three questions, each used by a different stage:
//   check: at import, are this node's attributes ones the kernel implements? (values, arity)
//   infer: at resolve(), the output types and concrete shapes from the input types, shapes and
//          those input values that are constant; shape-determining inputs (Reshape's shape,
//          Slice's starts) must be constant by then.
//   run:   at execution, compute the outputs, which the executor has already allocated with
//          the shapes infer gave.
// Kernels are registered by the register_* function of their file (registry.cpp calls them).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/error.h"
#include "qforge/model/graph.h"
#include "qforge/model/tensor.h"

namespace qforge::model::ops {

// What infer knows of one input: absent (type == nullptr), or its type and shape, and its value
// when it is constant (an initializer or a folded result).
struct InferInput {
  const TensorType* type = nullptr;
  const Tensor* value = nullptr;
  bool present() const noexcept { return type != nullptr; }
};

using CheckFn = void (*)(const Node&);
using InferFn = std::vector<TensorType> (*)(const Node&, std::span<const InferInput>);
using RunFn = void (*)(const Node&, std::span<const Tensor* const> inputs,
                       std::span<Tensor* const> outputs);

struct OpKernel {
  std::string op_type;
  std::vector<int> since_versions;      // ONNX schema versions whose semantics run implements
  std::vector<std::string> attributes;  // every attribute the kernel reads
  CheckFn check = nullptr;              // optional
  InferFn infer = nullptr;
  RunFn run = nullptr;
  // For ops whose outputs depend only on the input types and shapes (Shape): computes them, so
  // resolve() folds the node as soon as shapes are known, whatever the input values.
  std::vector<Tensor> (*fold_from_types)(const Node&, std::span<const InferInput>) = nullptr;
};

class KernelRegistry {
 public:
  void add(OpKernel kernel);
  const OpKernel* find(std::string_view op_type) const;
  const std::vector<OpKernel>& all() const { return kernels_; }

 private:
  std::vector<OpKernel> kernels_;
};

// The registry with every kernel of this library.
const KernelRegistry& kernels();

// "Relu (6, 13, 14), Conv (1, 11), ..." for messages.
std::string supported_ops_text();

// ---- helpers shared by the kernel files ----

[[noreturn]] void fail(const Node& node, ErrorCode code, const std::string& what);

// Throws unless the present input i has one of the listed element types.
void require_type(const Node& node, std::span<const InferInput> in, std::size_t i,
                  std::initializer_list<ElementType> allowed);
// Throws unless input i is present.
const TensorType& input_type(const Node& node, std::span<const InferInput> in, std::size_t i);
// The constant value of input i; throws naming the input when it is not constant.
const Tensor& constant_input(const Node& node, std::span<const InferInput> in, std::size_t i,
                             std::string_view role);
// Integer values of an int64 or int32 tensor.
std::vector<std::int64_t> int_values(const Tensor& t);
// Normalizes a possibly negative axis into [0, rank); throws naming the node when outside.
std::int64_t normalize_axis(const Node& node, std::int64_t axis, std::int64_t rank);
// numpy broadcasting of two shapes; throws naming the node when they do not broadcast.
Shape broadcast_shapes(const Node& node, const Shape& a, const Shape& b);

// Registration functions, one per kernel file.
void register_elementwise(KernelRegistry&);
void register_activations(KernelRegistry&);
void register_matmul(KernelRegistry&);
void register_conv(KernelRegistry&);
void register_pool(KernelRegistry&);
void register_normalization(KernelRegistry&);
void register_softmax(KernelRegistry&);
void register_reduce(KernelRegistry&);
void register_shape_ops(KernelRegistry&);
void register_data_movement(KernelRegistry&);
void register_misc(KernelRegistry&);
void register_quantize_linear(KernelRegistry&);
void register_compare(KernelRegistry&);
void register_minmax(KernelRegistry&);
void register_range(KernelRegistry&);

}  // namespace qforge::model::ops
