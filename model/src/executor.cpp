#include "qforge/model/executor.h"

#include <algorithm>
#include <set>

#include "ops/kernel.h"
#include "qforge/error.h"

namespace qforge::model {

Executor::Executor(const Graph& graph, const ResolveOptions& options)
    : graph_(resolve(graph, options)) {
  fold_conv_batchnorm(graph_);
  // Last reader of every intermediate tensor; graph outputs are never released.
  std::map<std::string, std::size_t, std::less<>> last;
  for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
    for (const std::string& in : graph_.nodes[i].inputs)
      if (!in.empty()) last[in] = i;
    for (const std::string& out : graph_.nodes[i].outputs)
      if (!out.empty() && !last.contains(out)) last[out] = i;  // written, maybe never read
  }
  release_after_.resize(graph_.nodes.size());
  for (const auto& [name, i] : last)
    if (!graph_.is_graph_output(name) && !graph_.initializers.contains(name) &&
        std::none_of(graph_.inputs.begin(), graph_.inputs.end(),
                     // An explicit init-capture: clang before 16 cannot capture a structured
                     // binding, and the fuzz build (fuzz/) compiles this file with clang 14.
                     [&name = name](const ValueInfo& v) { return v.name == name; }))
      release_after_[i].push_back(name);
}

TensorMap Executor::run(const TensorMap& inputs) const { return run(inputs, {}); }

TensorMap Executor::run(const TensorMap& inputs, const std::vector<std::string>& keep) const {
  return run(inputs, keep, NodeHook{});
}

TensorMap Executor::run(const TensorMap& inputs, const std::vector<std::string>& keep,
                        const NodeHook& hook) const {
  std::map<std::string, const Tensor*, std::less<>> env;
  for (const auto& [name, t] : graph_.initializers) env[name] = &t;
  for (const ValueInfo& v : graph_.inputs) {
    auto it = inputs.find(v.name);
    if (it == inputs.end())
      throw Error(ErrorCode::invalid_argument, "run: input '" + v.name + "' is missing");
    const TensorType want{v.type, v.shape()};
    if (it->second.tensor_type() != want)
      throw Error(ErrorCode::shape_mismatch, "run: input '" + v.name + "' is " +
                                                 to_string(it->second.tensor_type()) +
                                                 "; the executor was built for " + to_string(want));
    env[v.name] = &it->second;
  }
  for (const auto& [name, t] : inputs)
    if (!env.contains(name) || graph_.initializers.contains(name))
      throw Error(ErrorCode::invalid_argument, "run: '" + name + "' is not an input of the graph");
  std::set<std::string, std::less<>> kept(keep.begin(), keep.end());
  for (const std::string& k : keep)
    if (!graph_.find_value_info(k) && !env.contains(k))
      throw Error(ErrorCode::invalid_argument, "run: no tensor named '" + k + "' to keep");

  TensorMap owned;
  std::vector<const Tensor*> args;
  std::vector<Tensor*> outs;
  for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Node& node = graph_.nodes[i];
    const ops::OpKernel* k = ops::kernels().find(node.op_type);
    if (!k) throw Error(ErrorCode::internal, node.describe() + ": no kernel");
    args.assign(node.inputs.size(), nullptr);
    for (std::size_t j = 0; j < node.inputs.size(); ++j)
      if (!node.inputs[j].empty()) args[j] = env.at(node.inputs[j]);
    outs.clear();
    for (const std::string& o : node.outputs) {
      if (o.empty()) {
        outs.push_back(nullptr);
        continue;
      }
      const ValueInfo* vi = graph_.find_value_info(o);
      auto [pos, inserted] = owned.insert_or_assign(o, Tensor(vi->type, vi->shape()));
      outs.push_back(&pos->second);
      env[o] = &pos->second;
    }
    if (!hook || !hook(i, args, outs)) k->run(node, args, outs);
    for (const std::string& name : release_after_[i])
      if (!kept.contains(name)) {
        owned.erase(name);
        env.erase(name);
      }
  }

  TensorMap result;
  auto take = [&](const std::string& name) {
    if (auto it = owned.find(name); it != owned.end()) result.insert_or_assign(name, it->second);
    else result.insert_or_assign(name, *env.at(name));  // an input or a constant output
  };
  for (const ValueInfo& v : graph_.outputs) take(v.name);
  for (const std::string& k : keep) take(k);
  return result;
}

std::vector<SupportedOp> supported_ops() {
  std::vector<SupportedOp> out;
  for (const ops::OpKernel& k : ops::kernels().all()) out.push_back({k.op_type, k.since_versions});
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.op_type < b.op_type; });
  return out;
}

}  // namespace qforge::model
