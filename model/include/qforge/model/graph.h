// The model layer's graph IR: what an imported ONNX model becomes, and what every later step
// (shape resolution, folding, float execution, recipes, quantization, export) reads and rewrites.
//
// A Graph is a list of nodes in topological order. Nodes name their inputs and outputs by
// tensor name (ONNX's convention: one producer per name, "" for an absent optional input), carry
// typed attributes and the ONNX schema version their semantics follow. Weights are initializers
// (name -> Tensor). Graph inputs and outputs carry declared types and shapes whose dims may be
// symbolic or unknown until resolve() fixes them (qforge/model/resolve.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "qforge/model/export.h"
#include "qforge/model/tensor.h"

namespace qforge::model {

// One extent of a declared shape: a known value (>= 0), or unknown with an optional symbolic
// name ("batch", "sequence") shared by dims that must agree.
struct Dim {
  std::int64_t value = -1;  // -1: not known
  std::string symbol;       // ONNX dim_param; empty when none
  bool known() const noexcept { return value >= 0; }
  bool operator==(const Dim&) const = default;
};

// A tensor's declared type and shape. `dims` is meaningful only when has_shape (ONNX allows a
// value with no shape at all, e.g. before shape inference).
struct QFORGE_MODEL_API ValueInfo {
  std::string name;
  ElementType type = ElementType::float32;
  bool has_shape = false;
  std::vector<Dim> dims;

  bool fully_known() const noexcept;
  // The concrete shape; throws qforge::Error naming the value when a dim is not known.
  Shape shape() const;
};

QFORGE_MODEL_API std::string to_string(const ValueInfo& v);  // "x: float32[batch, 3, ?, 224]"

using AttributeValue =
    std::variant<std::int64_t, float, std::string, Tensor, std::vector<std::int64_t>,
                 std::vector<float>, std::vector<std::string>>;

QFORGE_MODEL_API std::string_view attribute_kind(
    const AttributeValue& v) noexcept;  // "int", "floats", ...

struct QFORGE_MODEL_API Node {
  std::string name;     // unique within the graph (the importer names unnamed nodes)
  std::string op_type;  // ONNX op type, default domain
  // The ONNX schema version whose semantics this node follows (the op's since_version under
  // the model's opset), e.g. 13 for Softmax in an opset-17 model.
  int since_version = 0;
  std::vector<std::string> inputs;  // "" marks an absent optional input
  std::vector<std::string> outputs;
  std::map<std::string, AttributeValue, std::less<>> attributes;

  bool has_attribute(std::string_view key) const {
    return attributes.find(key) != attributes.end();
  }
  // Typed reads. The *_or forms return the fallback when the attribute is absent; all of them
  // throw qforge::Error (invalid_argument) naming the node when it has another kind.
  std::int64_t attr_int(std::string_view key) const;
  std::int64_t attr_int_or(std::string_view key, std::int64_t fallback) const;
  float attr_float_or(std::string_view key, float fallback) const;
  std::string attr_string_or(std::string_view key, std::string fallback) const;
  std::vector<std::int64_t> attr_ints_or(std::string_view key,
                                         std::vector<std::int64_t> fallback) const;
  const Tensor& attr_tensor(std::string_view key) const;

  // Input i, or "" when the node has fewer inputs (absent optional inputs).
  const std::string& input(std::size_t i) const;
  bool has_input(std::size_t i) const { return !input(i).empty(); }
  // "Conv 'conv1'": how messages name a node.
  std::string describe() const;
};

struct QFORGE_MODEL_API Graph {
  std::string name;
  std::int64_t opset = 0;  // default-domain opset the model imports
  std::int64_t ir_version = 0;
  std::string producer;           // producer_name and version, for reports
  std::vector<ValueInfo> inputs;  // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;  // intermediate tensors (shape inference)
  std::map<std::string, Tensor, std::less<>> initializers;
  std::vector<Node> nodes;  // topological order

  const Tensor* initializer(std::string_view tensor) const;
  // The node producing `tensor`; nullptr for graph inputs, initializers and unknown names.
  const Node* producer_of(std::string_view tensor) const;
  // Indices of nodes that read `tensor`.
  std::vector<std::size_t> consumers_of(std::string_view tensor) const;
  bool is_graph_output(std::string_view tensor) const;
  const ValueInfo* find_value_info(std::string_view tensor) const;  // inputs, outputs, value_info

  // Checks the structural invariants every pass relies on: unique node names, one producer per
  // tensor, every input defined before use (topological order), outputs produced. Throws
  // qforge::Error (corrupt_data) naming the first violation.
  void validate() const;
};

}  // namespace qforge::model
