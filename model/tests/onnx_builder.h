// Builds small ONNX models in tests through libonnx's protobuf classes.
//   OnnxBuilder b(17);
//   b.input("x", onnx::TensorProto::FLOAT, {1, 3}).node("Relu", {"x"}, {"y"}).output("y", ...);
//   Graph g = import_onnx_bytes(b.bytes(), "test");
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace qforge::model::testing {

using Dims = std::vector<std::variant<std::int64_t, std::string>>;  // value or symbolic name

class OnnxBuilder {
 public:
  explicit OnnxBuilder(std::int64_t opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("qforge-test");
    auto* imp = model_.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  OnnxBuilder& input(const std::string& name, int type, const Dims& dims) {
    value_info(model_.mutable_graph()->add_input(), name, type, dims);
    return *this;
  }
  OnnxBuilder& output(const std::string& name, int type, const Dims& dims) {
    value_info(model_.mutable_graph()->add_output(), name, type, dims);
    return *this;
  }
  OnnxBuilder& initializer(const std::string& name, const std::vector<std::int64_t>& dims,
                           const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  OnnxBuilder& initializer_i64(const std::string& name, const std::vector<std::int64_t>& dims,
                               const std::vector<std::int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (auto d : dims) t->add_dims(d);
    for (auto v : values) t->add_int64_data(v);
    return *this;
  }
  onnx::TensorProto& raw_initializer(const std::string& name) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    return *t;
  }
  // Adds a node; returns it so a test can set attributes.
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& out, const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }
  static void attr(onnx::NodeProto& n, const std::string& key, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& key, float v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& key, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr(onnx::NodeProto& n, const std::string& key, const std::vector<std::int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }

  onnx::ModelProto& proto() { return model_; }
  std::vector<std::byte> bytes() const {
    const std::string s = model_.SerializeAsString();
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    return {p, p + s.size()};
  }

 private:
  static void value_info(onnx::ValueInfoProto* v, const std::string& name, int type,
                         const Dims& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(type);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (std::holds_alternative<std::int64_t>(d)) dim->set_dim_value(std::get<std::int64_t>(d));
      else dim->set_dim_param(std::get<std::string>(d));
    }
  }

  onnx::ModelProto model_;
};

}  // namespace qforge::model::testing
