#include "qforge/model/graph.h"

#include <set>

#include "qforge/error.h"

namespace qforge::model {
namespace {

std::string kind_mismatch(const Node& n, std::string_view key, std::string_view want,
                          const AttributeValue& have) {
  return n.describe() + ": attribute '" + std::string(key) + "' is " +
         std::string(attribute_kind(have)) + ", expected " + std::string(want);
}

template <class T>
const T* typed(const Node& n, std::string_view key, std::string_view want) {
  auto it = n.attributes.find(key);
  if (it == n.attributes.end()) return nullptr;
  if (const T* v = std::get_if<T>(&it->second)) return v;
  throw Error(ErrorCode::invalid_argument, kind_mismatch(n, key, want, it->second));
}

}  // namespace

bool ValueInfo::fully_known() const noexcept {
  if (!has_shape) return false;
  for (const Dim& d : dims)
    if (!d.known()) return false;
  return true;
}

Shape ValueInfo::shape() const {
  if (!fully_known())
    throw Error(
        ErrorCode::invalid_argument,
        "tensor " + to_string(*this) + " has no concrete shape; give its shape to resolve()");
  Shape s;
  for (const Dim& d : dims) s.push_back(d.value);
  return s;
}

std::string to_string(const ValueInfo& v) {
  std::string s = v.name + ": " + std::string(to_string(v.type));
  if (!v.has_shape) return s + "[unknown rank]";
  s += "[";
  for (std::size_t i = 0; i < v.dims.size(); ++i) {
    if (i) s += ", ";
    const Dim& d = v.dims[i];
    s += d.known() ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol);
  }
  return s + "]";
}

std::string_view attribute_kind(const AttributeValue& v) noexcept {
  static constexpr std::string_view kinds[] = {"int",  "float",  "string", "tensor",
                                               "ints", "floats", "strings"};
  return kinds[v.index()];
}

std::int64_t Node::attr_int(std::string_view key) const {
  if (const auto* v = typed<std::int64_t>(*this, key, "int")) return *v;
  throw Error(ErrorCode::invalid_argument,
              describe() + ": required attribute '" + std::string(key) + "' is missing");
}
std::int64_t Node::attr_int_or(std::string_view key, std::int64_t fallback) const {
  const auto* v = typed<std::int64_t>(*this, key, "int");
  return v ? *v : fallback;
}
float Node::attr_float_or(std::string_view key, float fallback) const {
  const auto* v = typed<float>(*this, key, "float");
  return v ? *v : fallback;
}
std::string Node::attr_string_or(std::string_view key, std::string fallback) const {
  const auto* v = typed<std::string>(*this, key, "string");
  return v ? *v : fallback;
}
std::vector<std::int64_t> Node::attr_ints_or(std::string_view key,
                                             std::vector<std::int64_t> fallback) const {
  const auto* v = typed<std::vector<std::int64_t>>(*this, key, "ints");
  return v ? *v : fallback;
}
const Tensor& Node::attr_tensor(std::string_view key) const {
  if (const auto* v = typed<Tensor>(*this, key, "tensor")) return *v;
  throw Error(ErrorCode::invalid_argument,
              describe() + ": required attribute '" + std::string(key) + "' is missing");
}

const std::string& Node::input(std::size_t i) const {
  static const std::string absent;
  return i < inputs.size() ? inputs[i] : absent;
}

std::string Node::describe() const { return op_type + " '" + name + "'"; }

const Tensor* Graph::initializer(std::string_view tensor) const {
  auto it = initializers.find(tensor);
  return it == initializers.end() ? nullptr : &it->second;
}

const Node* Graph::producer_of(std::string_view tensor) const {
  for (const Node& n : nodes)
    for (const std::string& o : n.outputs)
      if (o == tensor) return &n;
  return nullptr;
}

std::vector<std::size_t> Graph::consumers_of(std::string_view tensor) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (const std::string& in : nodes[i].inputs)
      if (in == tensor) {
        out.push_back(i);
        break;
      }
  return out;
}

bool Graph::is_graph_output(std::string_view tensor) const {
  for (const ValueInfo& v : outputs)
    if (v.name == tensor) return true;
  return false;
}

const ValueInfo* Graph::find_value_info(std::string_view tensor) const {
  for (const auto* list : {&inputs, &outputs, &value_info})
    for (const ValueInfo& v : *list)
      if (v.name == tensor) return &v;
  return nullptr;
}

void Graph::validate() const {
  auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::corrupt_data, "graph '" + name + "': " + what);
  };
  std::set<std::string, std::less<>> defined;
  for (const ValueInfo& v : inputs)
    if (!defined.insert(v.name).second) fail("graph input '" + v.name + "' is declared twice");
  for (const auto& [n, t] : initializers) defined.insert(n);
  std::set<std::string, std::less<>> node_names;
  for (const Node& n : nodes) {
    if (n.name.empty()) fail("a " + n.op_type + " node has no name");
    if (!node_names.insert(n.name).second) fail("two nodes are named '" + n.name + "'");
    for (const std::string& in : n.inputs)
      if (!in.empty() && !defined.contains(in))
        fail(n.describe() + " reads '" + in +
             "', which no earlier node, graph input or initializer defines");
    for (const std::string& out : n.outputs) {
      if (out.empty()) continue;
      if (!defined.insert(out).second)
        fail(n.describe() + " writes '" + out + "', which is already defined");
    }
  }
  for (const ValueInfo& v : outputs)
    if (!defined.contains(v.name)) fail("graph output '" + v.name + "' is never produced");
}

}  // namespace qforge::model
