// resolve(): concrete shapes for every tensor, constants folded, dead nodes removed.
#include "qforge/model/resolve.h"

#include <set>

#include "ops/kernel.h"
#include "qforge/error.h"

namespace qforge::model {
namespace {

// The concrete shape of graph input `v`: the caller's, checked against the declaration.
Shape input_shape(const ValueInfo& v, const ResolveOptions& options,
                  std::map<std::string, std::int64_t, std::less<>>& symbols) {
  auto it = options.input_shapes.find(v.name);
  if (it == options.input_shapes.end()) return v.shape();
  const Shape& s = it->second;
  for (std::int64_t d : s)
    if (d < 0)
      throw Error(ErrorCode::invalid_argument, "input '" + v.name + "' is given a negative extent");
  if (!v.has_shape) return s;
  if (s.size() != v.dims.size())
    throw Error(ErrorCode::shape_mismatch, "input " + to_string(v) + " is given rank " +
                                               std::to_string(s.size()) + " " +
                                               qforge::to_string(s));
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Dim& d = v.dims[i];
    if (d.known() && d.value != s[i])
      throw Error(ErrorCode::shape_mismatch,
                  "input " + to_string(v) + " is given " + qforge::to_string(s) + "; dim " +
                      std::to_string(i) + " must be " + std::to_string(d.value));
    if (!d.known() && !d.symbol.empty()) {
      auto [pos, inserted] = symbols.emplace(d.symbol, s[i]);
      if (!inserted && pos->second != s[i])
        throw Error(ErrorCode::shape_mismatch, "input '" + v.name + "': dim '" + d.symbol +
                                                   "' is given " + std::to_string(s[i]) +
                                                   " here and " + std::to_string(pos->second) +
                                                   " for another input");
    }
  }
  return s;
}

ValueInfo concrete(const std::string& name, const TensorType& t) {
  ValueInfo v;
  v.name = name;
  v.type = t.type;
  v.has_shape = true;
  for (std::int64_t d : t.shape) v.dims.push_back({d, {}});
  return v;
}

}  // namespace

Graph resolve(const Graph& graph, const ResolveOptions& options) {
  graph.validate();
  auto check_input = [&](const std::string& name) {
    bool found = false;
    for (const ValueInfo& v : graph.inputs) found = found || v.name == name;
    if (!found)
      throw Error(ErrorCode::invalid_argument,
                  "resolve: '" + name + "' is not an input of graph '" + graph.name + "'");
  };
  for (const auto& [name, shape] : options.input_shapes) check_input(name);
  for (const auto& [name, value] : options.constant_inputs) {
    check_input(name);
    if (options.input_shapes.contains(name))
      throw Error(ErrorCode::invalid_argument,
                  "resolve: input '" + name + "' is given both a shape and a constant value");
  }

  std::map<std::string, TensorType, std::less<>> types;
  std::map<std::string, Tensor, std::less<>> values = graph.initializers;
  for (const auto& [name, t] : values) types[name] = t.tensor_type();

  Graph out;
  out.name = graph.name;
  out.opset = graph.opset;
  out.ir_version = graph.ir_version;
  out.producer = graph.producer;
  std::map<std::string, std::int64_t, std::less<>> symbols;
  for (const ValueInfo& v : graph.inputs) {
    if (auto c = options.constant_inputs.find(v.name); c != options.constant_inputs.end()) {
      ResolveOptions as_shape;
      as_shape.input_shapes[v.name] = c->second.shape();
      input_shape(v, as_shape, symbols);  // checks rank, known dims and shared symbols
      if (c->second.type() != v.type)
        throw Error(ErrorCode::invalid_argument, "resolve: constant for input " + to_string(v) +
                                                     " is " +
                                                     std::string(to_string(c->second.type())));
      types[v.name] = c->second.tensor_type();
      values.insert_or_assign(v.name, c->second);
      continue;
    }
    TensorType t{v.type, input_shape(v, options, symbols)};
    checked_tensor_bytes(t.type, t.shape, "input '" + v.name + "'", options.max_tensor_bytes);
    out.inputs.push_back(concrete(v.name, t));
    types[v.name] = std::move(t);
  }

  // Forward: infer every node's outputs; run the ones whose inputs are all known.
  std::vector<const Node*> remaining;
  for (const Node& node : graph.nodes) {
    const ops::OpKernel* k = ops::kernels().find(node.op_type);
    if (!k)
      throw Error(ErrorCode::unsupported, node.describe() + ": op " + node.op_type +
                                              " is not supported; qforge runs " +
                                              ops::supported_ops_text());
    std::vector<ops::InferInput> in(node.inputs.size());
    bool all_constant = true;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i].empty()) continue;
      auto t = types.find(node.inputs[i]);
      if (t == types.end())
        throw Error(ErrorCode::internal,
                    node.describe() + ": input '" + node.inputs[i] + "' has no type");
      auto v = values.find(node.inputs[i]);
      in[i] = {&t->second, v == values.end() ? nullptr : &v->second};
      all_constant = all_constant && in[i].value;
    }
    const std::vector<TensorType> result = k->infer(node, in);
    if (result.size() < node.outputs.size())
      throw Error(ErrorCode::unsupported,
                  node.describe() + ": has " + std::to_string(node.outputs.size()) +
                      " outputs; qforge computes " + std::to_string(result.size()));
    for (std::size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o].empty()) continue;
      checked_tensor_bytes(result[o].type, result[o].shape,
                           node.describe() + " output '" + node.outputs[o] + "'",
                           options.max_tensor_bytes);
      types[node.outputs[o]] = result[o];
    }
    if (k->fold_from_types) {
      std::vector<Tensor> folded = k->fold_from_types(node, in);
      for (std::size_t o = 0; o < node.outputs.size(); ++o)
        if (!node.outputs[o].empty())
          values.insert_or_assign(node.outputs[o], std::move(folded[o]));
      continue;
    }
    if (all_constant) {
      std::vector<const Tensor*> args(in.size(), nullptr);
      for (std::size_t i = 0; i < in.size(); ++i) args[i] = in[i].value;
      std::vector<Tensor> results;
      for (std::size_t o = 0; o < node.outputs.size(); ++o) results.emplace_back(result[o]);
      std::vector<Tensor*> outs;
      for (Tensor& t : results) outs.push_back(&t);
      k->run(node, args, outs);
      for (std::size_t o = 0; o < node.outputs.size(); ++o)
        if (!node.outputs[o].empty())
          values.insert_or_assign(node.outputs[o], std::move(results[o]));
      continue;
    }
    remaining.push_back(&node);
  }

  // Backward: keep the nodes some graph output depends on.
  std::set<std::string, std::less<>> needed;
  for (const ValueInfo& v : graph.outputs) needed.insert(v.name);
  std::vector<const Node*> live;
  for (auto it = remaining.rbegin(); it != remaining.rend(); ++it) {
    bool used = false;
    for (const std::string& o : (*it)->outputs) used = used || needed.contains(o);
    if (!used) continue;
    live.push_back(*it);
    for (const std::string& i : (*it)->inputs)
      if (!i.empty()) needed.insert(i);
  }
  std::set<std::string, std::less<>> produced;
  for (auto it = live.rbegin(); it != live.rend(); ++it) {
    out.nodes.push_back(**it);
    for (const std::string& o : (*it)->outputs)
      if (!o.empty()) {
        produced.insert(o);
        if (!graph.is_graph_output(o)) out.value_info.push_back(concrete(o, types.at(o)));
      }
  }
  // Constants that a remaining node reads or that are graph outputs become initializers.
  for (auto& [name, t] : values)
    if (needed.contains(name) && !produced.contains(name))
      out.initializers.insert_or_assign(name, std::move(t));
  for (const ValueInfo& v : graph.outputs) {
    auto t = types.find(v.name);
    if (t == types.end())
      throw Error(ErrorCode::internal, "graph output '" + v.name + "' has no type");
    out.outputs.push_back(concrete(v.name, t->second));
  }
  out.validate();
  return out;
}

}  // namespace qforge::model
