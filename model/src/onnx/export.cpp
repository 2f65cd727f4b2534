// Graph -> ModelProto, checked by ONNX before it leaves (qforge/model/onnx_export.h).
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <string>
#include <variant>

#include "onnx/guarded_schemas.h"
#include "onnx/tensor_proto.h"
#include "qforge/error.h"
#include "qforge/model/onnx_export.h"
#include "qforge/output_file.h"

namespace qforge::model {
namespace {

void write_value_info(const ValueInfo& v, onnx::ValueInfoProto& p) {
  p.set_name(v.name);
  auto* tt = p.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<std::int32_t>(v.type));
  if (!v.has_shape) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : v.dims) {
    auto* dim = shape->add_dim();
    if (d.known()) dim->set_dim_value(d.value);
    else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
  }
}

void write_attribute(const std::string& name, const AttributeValue& value,
                     onnx::AttributeProto& a) {
  a.set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          a.set_type(onnx::AttributeProto::INT);
          a.set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          a.set_type(onnx::AttributeProto::FLOAT);
          a.set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          a.set_type(onnx::AttributeProto::STRING);
          a.set_s(v);
        } else if constexpr (std::is_same_v<T, Tensor>) {
          a.set_type(onnx::AttributeProto::TENSOR);
          *a.mutable_t() = onnx_io::tensor_to_proto(v, "");
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          a.set_type(onnx::AttributeProto::INTS);
          for (auto x : v) a.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          a.set_type(onnx::AttributeProto::FLOATS);
          for (auto x : v) a.add_floats(x);
        } else {
          a.set_type(onnx::AttributeProto::STRINGS);
          for (const auto& x : v) a.add_strings(x);
        }
      },
      value);
}

onnx::ModelProto to_proto(const Graph& graph) {
  onnx::ModelProto m;
  // The IR version of the ONNX library qforge builds against (8 for ONNX 1.12: opsets <= 17).
  m.set_ir_version(onnx::IR_VERSION);
  m.set_producer_name("qforge");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(graph.opset);
  auto* g = m.mutable_graph();
  g->set_name(graph.name.empty() ? "qforge" : graph.name);
  for (const ValueInfo& v : graph.inputs) write_value_info(v, *g->add_input());
  for (const ValueInfo& v : graph.outputs) write_value_info(v, *g->add_output());
  for (const auto& [name, tensor] : graph.initializers)
    *g->add_initializer() = onnx_io::tensor_to_proto(tensor, name);
  for (const Node& node : graph.nodes) {
    auto* n = g->add_node();
    n->set_name(node.name);
    n->set_op_type(node.op_type);
    for (const auto& i : node.inputs) n->add_input(i);
    for (const auto& o : node.outputs) n->add_output(o);
    for (const auto& [key, value] : node.attributes)
      write_attribute(key, value, *n->add_attribute());
  }
  return m;
}

}  // namespace

std::vector<std::byte> export_onnx_bytes(const Graph& graph) {
  graph.validate();
  onnx::ModelProto m = to_proto(graph);
  const std::string what = "ONNX export of graph '" + graph.name + "'";
  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::invalid_argument,
                what + ": onnx::checker rejects the model: " + e.what());
  }
  try {
    // Strict inference on a copy: types that do not fit a schema (a zero point of another type
    // than its input) are caught here, while the file keeps no inferred value_info.
    onnx::ModelProto inferred = m;
    onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1,
                                        /*data_propagation=*/true);
    onnx::shape_inference::InferShapes(inferred, &onnx_io::guarded_schemas(), options);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::invalid_argument,
                what + ": ONNX shape inference rejects the model: " + e.what());
  }
  const std::string s = m.SerializeAsString();
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

void export_onnx_file(const Graph& graph, const std::filesystem::path& path) {
  const std::vector<std::byte> bytes = export_onnx_bytes(graph);
  write_file_atomically(path,
                        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                        "ONNX model");
}

}  // namespace qforge::model
