// ModelProto -> Graph, with every check docs/MODEL.md lists under "Import".
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <set>
#include <string>

#include "onnx/guarded_schemas.h"
#include "onnx/parse.h"
#include "onnx/tensor_proto.h"
#include "ops/kernel.h"
#include "qforge/error.h"
#include "qforge/model/onnx_import.h"
#include "qforge/model/onnx_schemas.h"

namespace qforge::model {
namespace {

using onnx_io::tensor_from_proto;

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

[[noreturn]] void fail(std::string_view source, ErrorCode code, const std::string& what) {
  throw Error(code, std::string(source) + ": " + what);
}

std::int64_t default_opset(const onnx::ModelProto& m, std::string_view source) {
  std::int64_t opset = -1;
  for (const auto& imp : m.opset_import())
    if (is_default_domain(imp.domain())) {
      if (opset != -1)
        fail(source, ErrorCode::corrupt_data, "the default ONNX domain is imported twice");
      opset = imp.version();
    }
  if (opset == -1) {
    std::string domains;
    for (const auto& imp : m.opset_import())
      domains += (domains.empty() ? "" : ", ") + imp.domain();
    fail(
        source, domains.empty() ? ErrorCode::corrupt_data : ErrorCode::unsupported,
        "the model imports no opset of the default ONNX domain" +
            (domains.empty() ? std::string()
                             : " (only " + domains + "); qforge supports only the default domain"));
  }
  if (opset < 1 || opset > kMaxOnnxOpset)
    fail(source, ErrorCode::unsupported,
         "opset " + std::to_string(opset) +
             " of the default domain is not supported; qforge "
             "imports opsets 1 to " +
             std::to_string(kMaxOnnxOpset) + " (ONNX 1.12)");
  return opset;
}

// ONNX 1.12's shape inference for Conv and the pools (convPoolShapeInference) divides by each
// stride without checking it: a stride of 0 kills the process with SIGFPE, and -1 can too
// (INT64_MIN / -1). It runs on every imported model, so the window attributes are checked
// first; the operator specs require all three positive. Found by fuzz/harnesses/onnx_import.cpp.
void check_window_attribute(const onnx::AttributeProto& a, const std::string& node_label,
                            std::string_view source) {
  if (a.name() != "strides" && a.name() != "dilations" && a.name() != "kernel_shape") return;
  for (int i = 0; i < a.ints_size(); ++i)
    if (a.ints(i) < 1)
      fail(source, ErrorCode::corrupt_data,
           "node " + node_label + ": attribute '" + a.name() + "' holds " +
               std::to_string(a.ints(i)) + " at index " + std::to_string(i) +
               "; expected values >= 1");
}

// What ONNX's own checks cannot see, or would report less clearly: nodes of other domains,
// local functions, subgraph attributes, window attributes ONNX would divide by.
void check_structure(const onnx::ModelProto& m, std::string_view source) {
  if (m.functions_size() > 0)
    fail(source, ErrorCode::unsupported,
         "the model defines local functions ('" + m.functions(0).name() +
             "'); qforge imports only graphs of ONNX operators");
  if (!m.has_graph()) fail(source, ErrorCode::corrupt_data, "the model has no graph");
  if (m.graph().sparse_initializer_size() > 0)
    fail(source, ErrorCode::unsupported, "sparse initializers are not supported");
  for (int i = 0; i < m.graph().node_size(); ++i) {
    const auto& n = m.graph().node(i);
    const std::string label =
        n.op_type() + " '" + (n.name().empty() ? "#" + std::to_string(i) : n.name()) + "'";
    if (!is_default_domain(n.domain()))
      fail(source, ErrorCode::unsupported,
           "node " + label + " is in domain '" + n.domain() +
               "'; qforge supports only the default ONNX domain");
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS)
        fail(source, ErrorCode::unsupported,
             "node " + label + ": attribute '" + a.name() +
                 "' is a subgraph; control flow (If, Loop, Scan) is not supported");
      check_window_attribute(a, label, source);
    }
  }
}

void run_onnx_checks(onnx::ModelProto& m, std::string_view source) {
  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    fail(source, ErrorCode::corrupt_data,
         std::string("onnx::checker rejected the model: ") + e.what());
  }
  try {
    // Strict: a node whose shapes do not fit its schema is an error here, not at run time.
    onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1,
                                        /*data_propagation=*/true);
    onnx::shape_inference::InferShapes(m, &onnx_io::guarded_schemas(), options);
  } catch (const std::exception& e) {
    fail(source, ErrorCode::corrupt_data, std::string("ONNX shape inference failed: ") + e.what());
  }
}

ValueInfo convert_value_info(const onnx::ValueInfoProto& v, std::string_view source,
                             std::uint64_t max_tensor_bytes) {
  ValueInfo out;
  out.name = v.name();
  if (!v.has_type() || !v.type().has_tensor_type())
    fail(source, ErrorCode::unsupported,
         "value '" + v.name() +
             "' is not a tensor (sequence, map, optional and sparse values "
             "are not supported)");
  const auto& tt = v.type().tensor_type();
  const auto type = element_type_from_onnx(tt.elem_type());
  if (!type)
    fail(source, ErrorCode::unsupported,
         "value '" + v.name() + "' has element type " +
             std::string(onnx_io::onnx_type_name(tt.elem_type())) + ", which qforge cannot hold");
  out.type = *type;
  if (tt.has_shape()) {
    out.has_shape = true;
    Shape known;
    for (const auto& d : tt.shape().dim()) {
      Dim dim;
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          fail(source, ErrorCode::corrupt_data,
               "value '" + v.name() + "' declares a negative dim " + std::to_string(d.dim_value()));
        dim.value = d.dim_value();
        known.push_back(d.dim_value());
      } else {
        dim.symbol = d.dim_param();
      }
      out.dims.push_back(std::move(dim));
    }
    // A declared static shape past the limit can never be allocated: say so now.
    if (out.fully_known())
      checked_tensor_bytes(out.type, known, std::string(source) + ": value '" + v.name() + "'",
                           max_tensor_bytes);
  }
  return out;
}

AttributeValue convert_attribute(const onnx::AttributeProto& a, const std::string& node_label,
                                 std::string_view source, std::uint64_t max_tensor_bytes) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return a.i();
    case onnx::AttributeProto::FLOAT: return a.f();
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::TENSOR:
      return tensor_from_proto(
          a.t(), std::string(source) + ": node " + node_label + " attribute '" + a.name() + "'",
          max_tensor_bytes);
    case onnx::AttributeProto::INTS:
      return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS:
      return std::vector<float>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    default:
      fail(source, ErrorCode::unsupported,
           "node " + node_label + ": attribute '" + a.name() + "' has type " +
               onnx::AttributeProto_AttributeType_Name(a.type()) +
               "; qforge reads int, float, string, tensor, ints, floats and strings");
  }
}

std::string join_versions(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

// The node is one qforge executes: a kernel for this op and schema version, no attribute the
// kernel does not read, and attribute values its check accepts.
void check_supported(const Node& node, std::int64_t opset) {
  const ops::OpKernel* k = ops::kernels().find(node.op_type);
  if (!k)
    throw Error(ErrorCode::unsupported, node.describe() + ": op " + node.op_type +
                                            " is not supported; qforge runs " +
                                            ops::supported_ops_text());
  if (std::find(k->since_versions.begin(), k->since_versions.end(), node.since_version) ==
      k->since_versions.end())
    throw Error(ErrorCode::unsupported,
                node.describe() + ": " + node.op_type + " version " +
                    std::to_string(node.since_version) + " (what opset " + std::to_string(opset) +
                    " selects) is not supported; qforge implements " + node.op_type + " versions " +
                    join_versions(k->since_versions));
  for (const auto& [key, value] : node.attributes)
    if (std::find(k->attributes.begin(), k->attributes.end(), key) == k->attributes.end()) {
      std::string known;
      for (const auto& a : k->attributes) known += (known.empty() ? "" : ", ") + a;
      throw Error(ErrorCode::unsupported,
                  node.describe() + ": attribute '" + key + "' is not supported; qforge reads " +
                      (known.empty() ? std::string("no attributes") : known) + " for " +
                      node.op_type);
    }
  if (k->check) k->check(node);
}

Graph convert(const onnx::ModelProto& m, std::int64_t opset, std::string_view source,
              const ImportOptions& options) {
  const auto& g = m.graph();
  Graph graph;
  graph.name = g.name();
  graph.opset = opset;
  graph.ir_version = m.ir_version();
  graph.producer =
      m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());

  for (const auto& init : g.initializer()) {
    if (graph.initializers.contains(init.name()))
      fail(source, ErrorCode::corrupt_data, "initializer '" + init.name() + "' appears twice");
    graph.initializers.emplace(
        init.name(),
        tensor_from_proto(init, std::string(source) + ": initializer '" + init.name() + "'",
                          options.max_tensor_bytes));
  }
  // Before IR version 4 initializers were also listed as inputs; they are not inputs to feed.
  for (const auto& in : g.input())
    if (!graph.initializers.contains(in.name()))
      graph.inputs.push_back(convert_value_info(in, source, options.max_tensor_bytes));
  for (const auto& out : g.output())
    graph.outputs.push_back(convert_value_info(out, source, options.max_tensor_bytes));
  for (const auto& vi : g.value_info())
    graph.value_info.push_back(convert_value_info(vi, source, options.max_tensor_bytes));

  std::set<std::string> names;
  for (const auto& n : g.node())
    if (!n.name().empty()) names.insert(n.name());
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    Node node;
    node.op_type = n.op_type();
    node.name = n.name();
    if (node.name.empty()) {  // ONNX allows unnamed nodes; reports and recipes need names
      for (int k = i;; ++k) {
        node.name = n.op_type() + "_" + std::to_string(k);
        if (names.insert(node.name).second) break;
      }
    }
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), "");
    if (!schema)  // check_model has already refused this; kept as a guard
      fail(source, ErrorCode::unsupported,
           node.describe() + ": no ONNX schema for this op at opset " + std::to_string(opset));
    node.since_version = schema->SinceVersion();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      if (!a.ref_attr_name().empty())
        fail(source, ErrorCode::corrupt_data,
             node.describe() + ": attribute '" + a.name() + "' refers to a function attribute");
      if (node.attributes.contains(a.name()))
        fail(source, ErrorCode::corrupt_data,
             node.describe() + ": attribute '" + a.name() + "' appears twice");
      node.attributes.emplace(
          a.name(), convert_attribute(a, node.describe(), source, options.max_tensor_bytes));
    }
    graph.nodes.push_back(std::move(node));
  }
  return graph;
}

}  // namespace

Graph import_onnx_bytes(std::span<const std::byte> bytes, std::string_view source,
                        const ImportOptions& options) {
  onnx::ModelProto model;
  onnx_io::parse_limited(bytes, source, "ONNX model", options.max_file_bytes, model);
  const std::int64_t opset = default_opset(model, source);
  check_structure(model, source);
  run_onnx_checks(model, source);
  Graph graph = convert(model, opset, source, options);
  try {
    graph.validate();
    if (options.require_supported_ops)
      for (const Node& n : graph.nodes) check_supported(n, opset);
  } catch (const Error& e) {
    fail(source, e.code(), e.what());
  }
  return graph;
}

Graph import_onnx_file(const std::filesystem::path& path, const ImportOptions& options) {
  const auto bytes = onnx_io::read_file_limited(path, options.max_file_bytes);
  return import_onnx_bytes(bytes, path.string(), options);
}

Tensor load_onnx_tensor_bytes(std::span<const std::byte> bytes, std::string_view source,
                              const ImportOptions& options) {
  onnx::TensorProto proto;
  onnx_io::parse_limited(bytes, source, "ONNX TensorProto", options.max_file_bytes, proto);
  return tensor_from_proto(proto, source, options.max_tensor_bytes);
}

Tensor load_onnx_tensor_file(const std::filesystem::path& path, const ImportOptions& options) {
  const auto bytes = onnx_io::read_file_limited(path, options.max_file_bytes);
  return load_onnx_tensor_bytes(bytes, path.string(), options);
}

void register_onnx_schemas() {
  // Any lookup registers all of them (libonnx's registration is a function-local static, so
  // concurrent first lookups wait for one registration).
  onnx::OpSchemaRegistry::Schema("Relu", static_cast<int>(kMaxOnnxOpset), "");
}

}  // namespace qforge::model
