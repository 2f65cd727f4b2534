#include "qforge/model/executor.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

#include "ops/kernel.h"
#include "qforge/error.h"

namespace qforge::model {

namespace {

// Op types whose kernels write every element of their outputs (read in model/src/ops): their
// reused outputs need no zero fill. Any other kernel gets zeroed outputs, as a fresh tensor
// would be.
bool writes_every_element(std::string_view op_type) {
  static const std::set<std::string, std::less<>> ops = {"Add",
                                                         "AveragePool",
                                                         "BatchNormalization",
                                                         "Clip",
                                                         "Conv",
                                                         "Div",
                                                         "Erf",
                                                         "Exp",
                                                         "Flatten",
                                                         "Gemm",
                                                         "GlobalAveragePool",
                                                         "Identity",
                                                         "MatMul",
                                                         "MaxPool",
                                                         "Mul",
                                                         "Relu",
                                                         "Reshape",
                                                         "Sigmoid",
                                                         "Softmax",
                                                         "Sqrt",
                                                         "Squeeze",
                                                         "Sub",
                                                         "Tanh",
                                                         "Transpose",
                                                         "Unsqueeze"};
  return ops.contains(op_type);
}

}  // namespace

Executor::Executor(const Graph& graph, const ResolveOptions& options)
    : graph_(resolve(graph, options)) {
  fold_conv_batchnorm(graph_);
  auto index_of = [&](const std::string& name) {
    auto [it, inserted] = value_index_.try_emplace(name, value_index_.size());
    if (inserted) output_types_.emplace_back();
    return it->second;
  };
  for (const ValueInfo& v : graph_.inputs) index_of(v.name);
  for (const auto& [name, t] : graph_.initializers) index_of(name);
  for (const Node& node : graph_.nodes) {
    Step step;
    step.kernel = ops::kernels().find(node.op_type);
    if (!step.kernel) throw Error(ErrorCode::internal, node.describe() + ": no kernel");
    for (const std::string& in : node.inputs)
      step.inputs.push_back(in.empty() ? -1 : static_cast<std::ptrdiff_t>(value_index_.at(in)));
    for (const std::string& out : node.outputs) {
      if (out.empty()) {
        step.outputs.push_back(-1);
        continue;
      }
      const ValueInfo* vi = graph_.find_value_info(out);
      if (!vi)
        throw Error(ErrorCode::internal, node.describe() + ": output '" + out + "' has no type");
      const std::size_t i = index_of(out);
      output_types_[i] = TensorType{vi->type, vi->shape()};
      step.outputs.push_back(static_cast<std::ptrdiff_t>(i));
    }
    step.zero_outputs = !writes_every_element(node.op_type);
    // Relu writes y[i] from x[i] alone, so it may overwrite its input when nothing else reads
    // it: one tensor fewer, and a quantized layer with the Relu fused into it skips the node.
    if (node.op_type == "Relu" && step.inputs.size() == 1 && step.inputs[0] >= 0 &&
        !step.outputs.empty() && step.outputs[0] >= 0) {
      const std::string& x = node.inputs[0];
      const std::size_t xi = static_cast<std::size_t>(step.inputs[0]);
      if (graph_.producer_of(x) && graph_.consumers_of(x).size() == 1 &&
          !graph_.is_graph_output(x) &&
          output_types_[xi] == output_types_[static_cast<std::size_t>(step.outputs[0])])
        step.in_place_of = step.inputs[0];
    }
    steps_.push_back(std::move(step));
  }
}

TensorMap Executor::run(const TensorMap& inputs) const { return run(inputs, {}); }

TensorMap Executor::run(const TensorMap& inputs, const std::vector<std::string>& keep) const {
  return run(inputs, keep, NodeHook{});
}

TensorMap Executor::run(const TensorMap& inputs, const std::vector<std::string>& keep,
                        const NodeHook& hook) const {
  std::vector<const Tensor*> env(value_index_.size(), nullptr);
  for (const auto& [name, t] : graph_.initializers) env[value_index_.at(name)] = &t;
  for (const ValueInfo& v : graph_.inputs) {
    auto it = inputs.find(v.name);
    if (it == inputs.end())
      throw Error(ErrorCode::invalid_argument, "run: input '" + v.name + "' is missing");
    const TensorType want{v.type, v.shape()};
    if (it->second.tensor_type() != want)
      throw Error(ErrorCode::shape_mismatch, "run: input '" + v.name + "' is " +
                                                 to_string(it->second.tensor_type()) +
                                                 "; the executor was built for " + to_string(want));
    env[value_index_.at(v.name)] = &it->second;
  }
  for (const auto& [name, t] : inputs)
    if (std::none_of(graph_.inputs.begin(), graph_.inputs.end(),
                     [&name = name](const ValueInfo& v) { return v.name == name; }))
      throw Error(ErrorCode::invalid_argument, "run: '" + name + "' is not an input of the graph");
  std::vector<bool> kept(value_index_.size(), false);
  for (const std::string& k : keep) {
    auto it = value_index_.find(k);
    if (it == value_index_.end())
      throw Error(ErrorCode::invalid_argument, "run: no tensor named '" + k + "' to keep");
    kept[it->second] = true;
  }

  if (buffers_.empty()) {
    buffers_.resize(value_index_.size());
    for (const Step& step : steps_)
      if (step.in_place_of < 0)  // in place unless kept: allocated below when needed
        for (std::ptrdiff_t o : step.outputs)
          if (o >= 0) buffers_[static_cast<std::size_t>(o)] = Tensor(output_types_[o]);
  }
  std::vector<const Tensor*> args;
  std::vector<Tensor*> outs;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    args.assign(step.inputs.size(), nullptr);
    for (std::size_t j = 0; j < step.inputs.size(); ++j)
      if (step.inputs[j] >= 0) args[j] = env[static_cast<std::size_t>(step.inputs[j])];
    outs.assign(step.outputs.size(), nullptr);
    if (step.in_place_of >= 0 && !kept[static_cast<std::size_t>(step.in_place_of)]) {
      // The input is a node output, so it lives in buffers_ (another in-place Relu's output
      // shares its input's tensor): writable.
      Tensor* x = const_cast<Tensor*>(env[static_cast<std::size_t>(step.in_place_of)]);
      outs[0] = x;
      env[static_cast<std::size_t>(step.outputs[0])] = x;
      if (!hook || !hook(i, args, outs)) step.kernel->run(graph_.nodes[i], args, outs);
      continue;
    }
    for (std::size_t j = 0; j < step.outputs.size(); ++j) {
      if (step.outputs[j] < 0) continue;
      const std::size_t o = static_cast<std::size_t>(step.outputs[j]);
      Tensor& t = buffers_[o];
      // Not allocated yet (the output of an in-place Relu that this run keeps apart), or
      // replaced by a kernel that assigned a new tensor: give it the planned type and shape.
      if (t.tensor_type() != output_types_[o] || t.size() != element_count(output_types_[o].shape))
        t = Tensor(output_types_[o]);
      else if (step.zero_outputs && t.byte_size()) std::memset(t.data(), 0, t.byte_size());
      outs[j] = &t;
      env[o] = &t;
    }
    if (!hook || !hook(i, args, outs)) step.kernel->run(graph_.nodes[i], args, outs);
  }

  TensorMap result;
  auto take = [&](const std::string& name) {
    result.insert_or_assign(name, *env[value_index_.at(name)]);
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
