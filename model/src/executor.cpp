#include "qforge/model/executor.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>

#include "fusion.h"
#include "ops/kernel.h"
#include "ops/parallel.h"
#include "ops/parallel_then_sleep.h"
#include "qforge/error.h"
#include "thread_pool.h"

namespace qforge::model {

struct Executor::Profile {
  std::mutex mutex;
  std::map<std::string, StepTime, std::less<>> by_label;
};

namespace {

std::string_view chain_label(FusedChain::Kind kind) {
  switch (kind) {
    case FusedChain::Kind::gelu: return "fused gelu";
    case FusedChain::Kind::softmax: return "fused softmax";
    case FusedChain::Kind::layernorm: return "fused layernorm";
    case FusedChain::Kind::conv: return "fused conv";
    case FusedChain::Kind::attention: return "fused attention";
  }
  return "fused";
}

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
                                                         "Equal",
                                                         "Erf",
                                                         "Exp",
                                                         "Flatten",
                                                         "Gemm",
                                                         "GlobalAveragePool",
                                                         "Identity",
                                                         "LayerNormalization",
                                                         "LogSoftmax",
                                                         "MatMul",
                                                         "MaxPool",
                                                         "Mul",
                                                         "Pow",
                                                         "ReduceMax",
                                                         "ReduceMean",
                                                         "ReduceMin",
                                                         "ReduceSum",
                                                         "Relu",
                                                         "Reshape",
                                                         "Sigmoid",
                                                         "Softmax",
                                                         "Sqrt",
                                                         "Squeeze",
                                                         "Sub",
                                                         "Tanh",
                                                         "Transpose",
                                                         "Unsqueeze",
                                                         "Where"};
  return ops.contains(op_type);
}

}  // namespace

struct ExecutorFusions {
  std::vector<FusedChain> chains;
  std::vector<std::array<std::ptrdiff_t, 5>> operands;  // value indices, -1 where absent
  std::vector<std::vector<std::size_t>> inner;          // value indices of inner tensors
};

Executor::Executor(const Graph& graph, const ResolveOptions& options,
                   const ExecutorOptions& executor_options)
    : graph_(resolve(graph, options)) {
  fold_conv_batchnorm(graph_);
  auto index_of = [&](const std::string& name) {
    auto [it, inserted] = value_index_.try_emplace(name, value_index_.size());
    if (inserted) {
      output_types_.emplace_back();
      producer_.push_back(-1);
    }
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
      producer_[i] = static_cast<std::ptrdiff_t>(steps_.size());
      step.outputs.push_back(static_cast<std::ptrdiff_t>(i));
    }
    step.zero_outputs = !writes_every_element(node.op_type);
    steps_.push_back(std::move(step));
  }
  if (executor_options.fuse) {
    auto fusions = std::make_shared<ExecutorFusions>();
    fusions->chains = find_fused_chains(graph_);
    for (std::size_t c = 0; c < fusions->chains.size(); ++c) {
      const FusedChain& chain = fusions->chains[c];
      for (const std::size_t node : chain.nodes)
        steps_[node].chain = static_cast<std::ptrdiff_t>(c);
      std::array<std::ptrdiff_t, 5> operands;
      for (std::size_t r = 0; r < operands.size(); ++r)
        operands[r] = chain.operands[r].empty()
                          ? -1
                          : static_cast<std::ptrdiff_t>(value_index_.at(chain.operands[r]));
      fusions->operands.push_back(operands);
      std::vector<std::size_t> inner;
      for (const std::string& t : chain.inner) inner.push_back(value_index_.at(t));
      fusions->inner.push_back(std::move(inner));
    }
    if (!fusions->chains.empty()) fusions_ = std::move(fusions);
  }
  plan_in_place_relus();
  reuse_memory_ = executor_options.reuse_memory;
  plan_memory(executor_options);
  if (executor_options.threads < 0)
    throw Error(ErrorCode::invalid_argument,
                "Executor: threads is " + std::to_string(executor_options.threads) +
                    "; expected 0 (the physical cores) or a positive count");
  int threads = executor_options.threads;
  // Tools that expose no option take the count from the environment, else the physical cores.
  if (threads == 0) {
    const char* env = std::getenv("QFORGE_MODEL_THREADS");
    threads = env && std::atoi(env) > 0 ? std::atoi(env) : default_thread_count();
  }
  if (threads > 1) pool_ = std::make_shared<ThreadPool>(threads);
  if (executor_options.profile) profile_ = std::make_shared<Profile>();
}

std::vector<StepTime> Executor::profile() const {
  std::vector<StepTime> out;
  if (!profile_) return out;
  {
    const std::lock_guard lock(profile_->mutex);
    for (const auto& [label, t] : profile_->by_label) out.push_back(t);
  }
  std::sort(out.begin(), out.end(),
            [](const StepTime& a, const StepTime& b) { return a.seconds > b.seconds; });
  return out;
}

void Executor::reset_profile() const {
  if (!profile_) return;
  const std::lock_guard lock(profile_->mutex);
  profile_->by_label.clear();
}

void Executor::plan_in_place_relus() {
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    Step& step = steps_[s];
    const Node& node = graph_.nodes[s];
    step.in_place_of = -1;
    step.view = false;
    // Reshape, Flatten, Squeeze and Unsqueeze change only the shape: when nothing else reads
    // their input (a node output in the arena), the output is a view of the input's bytes with
    // the output's shape, and no bytes are copied.
    if ((node.op_type == "Reshape" || node.op_type == "Flatten" || node.op_type == "Squeeze" ||
         node.op_type == "Unsqueeze") &&
        !step.inputs.empty() && step.inputs[0] >= 0 && !step.outputs.empty() &&
        step.outputs[0] >= 0) {
      const std::string& x = node.inputs[0];
      const std::size_t xi = static_cast<std::size_t>(step.inputs[0]);
      const Node* producer = graph_.producer_of(x);
      const TensorType& out = output_types_[static_cast<std::size_t>(step.outputs[0])];
      if (producer && producer->op_type != "Constant" && graph_.consumers_of(x).size() == 1 &&
          !graph_.is_graph_output(x) && output_types_[xi].type == out.type &&
          element_count(output_types_[xi].shape) == element_count(out.shape)) {
        step.in_place_of = step.inputs[0];
        step.view = true;
      }
      continue;
    }
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
  }
  for (const auto& [node, input] : in_place_by_hook_) {
    Step& step = steps_[node];
    const auto xi = static_cast<std::size_t>(step.inputs[input]);
    // retype_outputs may have changed one side since run_in_place checked them.
    if (output_types_[xi] == output_types_[static_cast<std::size_t>(step.outputs[0])])
      step.in_place_of = step.inputs[input];
  }
}

bool Executor::in_fused_chain(std::size_t node) const {
  if (node >= steps_.size())
    throw Error(ErrorCode::invalid_argument, "in_fused_chain: node " + std::to_string(node) +
                                                 " is out of range; the graph has " +
                                                 std::to_string(steps_.size()) + " nodes");
  return steps_[node].chain >= 0;
}

void Executor::run_in_place(std::size_t node, std::size_t input) {
  if (node >= steps_.size())
    throw Error(ErrorCode::invalid_argument, "run_in_place: node " + std::to_string(node) +
                                                 " is out of range; the graph has " +
                                                 std::to_string(steps_.size()) + " nodes");
  const Step& step = steps_[node];
  const Node& n = graph_.nodes[node];
  const auto refuse = [&](const std::string& why) {
    throw Error(ErrorCode::invalid_argument, "run_in_place: " + n.describe() + ": " + why);
  };
  if (input >= step.inputs.size() || step.inputs[input] < 0)
    refuse("no input " + std::to_string(input));
  if (step.outputs.empty() || step.outputs[0] < 0) refuse("no first output");
  if (step.chain >= 0) refuse("the node is in a fused chain");
  const std::string& x = n.inputs[input];
  const auto xi = static_cast<std::size_t>(step.inputs[input]);
  if (producer_[xi] < 0 || graph_.consumers_of(x).size() != 1 || graph_.is_graph_output(x) ||
      std::count(n.inputs.begin(), n.inputs.end(), x) != 1)
    refuse("input '" + x + "' is not a node output that only this node reads once");
  if (!(output_types_[xi] == output_types_[static_cast<std::size_t>(step.outputs[0])]))
    refuse("input '" + x + "' differs from the output in type or shape");
  in_place_by_hook_.emplace_back(node, input);
  plan_in_place_relus();
  ExecutorOptions options;
  options.reuse_memory = reuse_memory_;
  plan_memory(options);
  arena_ = Arena();
}

void Executor::retype_outputs(const std::map<std::string, ElementType, std::less<>>& types) {
  for (const auto& [name, type] : types) {
    const auto it = value_index_.find(name);
    if (it == value_index_.end() || producer_[it->second] < 0)
      throw Error(ErrorCode::invalid_argument,
                  "retype_outputs: '" + name + "' is not a node output of the graph");
    output_types_[it->second].type = type;
  }
  plan_in_place_relus();
  ExecutorOptions options;
  options.reuse_memory = reuse_memory_;
  plan_memory(options);
  arena_ = Arena();
}

void Executor::plan_memory(const ExecutorOptions& options) {
  // One buffer per node output, except that an in-place Relu's output joins its input's buffer
  // (chains of them join the first), which then lives until the last member's last read.
  const std::size_t end = steps_.size();  // graph outputs are read after the last step
  std::vector<std::ptrdiff_t> buffer_of(value_index_.size(), -1);
  std::vector<BufferLifetime> lifetimes;
  plan_ = MemoryPlan{};
  plan_.reuse = options.reuse_memory;
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    for (std::size_t j = 0; j < step.outputs.size(); ++j) {
      if (step.outputs[j] < 0) continue;
      const auto o = static_cast<std::size_t>(step.outputs[j]);
      if (j == 0 && step.in_place_of >= 0) {
        buffer_of[o] = buffer_of[static_cast<std::size_t>(step.in_place_of)];
      } else {
        buffer_of[o] = static_cast<std::ptrdiff_t>(lifetimes.size());
        const TensorType& t = output_types_[o];
        lifetimes.push_back(
            {static_cast<std::size_t>(checked_tensor_bytes(t.type, t.shape, graph_.nodes[s].name)),
             s, s});
        plan_.buffers.emplace_back();
      }
      plan_.buffers[static_cast<std::size_t>(buffer_of[o])].tensors.push_back(
          graph_.nodes[s].outputs[j]);
    }
    std::vector<std::ptrdiff_t> reads = step.inputs;
    // A fused chain reads its operands when its last node runs.
    if (step.chain >= 0 && fusions_->chains[static_cast<std::size_t>(step.chain)].nodes.back() == s)
      for (const std::ptrdiff_t v : fusions_->operands[static_cast<std::size_t>(step.chain)])
        reads.push_back(v);
    for (const std::ptrdiff_t in : reads)
      if (in >= 0 && buffer_of[static_cast<std::size_t>(in)] >= 0) {
        BufferLifetime& b =
            lifetimes[static_cast<std::size_t>(buffer_of[static_cast<std::size_t>(in)])];
        b.last = std::max(b.last, s);
      }
  }
  for (const ValueInfo& v : graph_.outputs) {
    const std::ptrdiff_t b = buffer_of[value_index_.at(v.name)];
    if (b >= 0) lifetimes[static_cast<std::size_t>(b)].last = end;
  }
  const std::vector<std::size_t> offsets =
      assign_offsets(lifetimes, options.reuse_memory, plan_.arena_bytes);
  offset_.assign(value_index_.size(), 0);
  for (std::size_t v = 0; v < buffer_of.size(); ++v)
    if (buffer_of[v] >= 0) offset_[v] = offsets[static_cast<std::size_t>(buffer_of[v])];
  for (std::size_t b = 0; b < lifetimes.size(); ++b) {
    plan_.buffers[b].lifetime = lifetimes[b];
    plan_.buffers[b].offset = offsets[b];
    plan_.total_bytes +=
        (lifetimes[b].bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }
  plan_.liveness_peak_bytes = liveness_peak(lifetimes);
}

void Executor::allocate_arena() const {
  Arena arena;
  arena.bytes.resize(plan_.arena_bytes + kArenaAlignment);
  const auto address = reinterpret_cast<std::uintptr_t>(arena.bytes.data());
  arena.base = arena.bytes.data() + (kArenaAlignment - address % kArenaAlignment) % kArenaAlignment;
  arena.views.resize(value_index_.size());
  for (const Step& step : steps_)
    for (const std::ptrdiff_t o : step.outputs)
      if (o >= 0) {
        const auto v = static_cast<std::size_t>(o);
        arena.views[v] = Tensor::view(output_types_[v], arena.base + offset_[v]);
      }
  arena_ = std::move(arena);
}

TensorMap Executor::run(const TensorMap& inputs) const { return run(inputs, {}); }

TensorMap Executor::run(const TensorMap& inputs, const std::vector<std::string>& keep) const {
  return run(inputs, keep, NodeHook{});
}

TensorMap Executor::run(const TensorMap& inputs, const std::vector<std::string>& keep,
                        const NodeHook& hook) const {
  if (!hook) return run_with_ranges(inputs, keep, RangedNodeHook{});
  return run_with_ranges(
      inputs, keep,
      [&hook](std::size_t node, std::span<const Tensor* const> in, std::span<const ValueRange>,
              std::span<Tensor* const> out) { return hook(node, in, out); });
}

void Executor::parallel_for(std::int64_t n, std::int64_t grain,
                            const std::function<void(std::int64_t, std::int64_t)>& f) {
  ops::parallel_for_then_sleep(n, grain, f);
}

TensorMap Executor::run_with_ranges(const TensorMap& inputs, const std::vector<std::string>& keep,
                                    const RangedNodeHook& hook) const {
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
  // Kept node outputs are copied right after their node: the arena reuses their bytes later.
  std::vector<std::vector<std::pair<std::size_t, const std::string*>>> keep_after(steps_.size());
  for (const std::string& k : keep) {
    auto it = value_index_.find(k);
    if (it == value_index_.end())
      throw Error(ErrorCode::invalid_argument, "run: no tensor named '" + k + "' to keep");
    if (producer_[it->second] >= 0)
      keep_after[static_cast<std::size_t>(producer_[it->second])].emplace_back(it->second, &k);
  }

  // The chains that run fused this time: none of their inner tensors kept, every tensor they
  // touch float32 (retype_outputs may have given a node output another type).
  std::vector<char> fused(fusions_ ? fusions_->chains.size() : 0, 1);
  for (std::size_t c = 0; c < fused.size(); ++c) {
    auto float_value = [&](std::ptrdiff_t v) {
      return v < 0 || producer_[static_cast<std::size_t>(v)] < 0 ||
             output_types_[static_cast<std::size_t>(v)].type == ElementType::float32;
    };
    const std::size_t last = fusions_->chains[c].nodes.back();
    bool ok =
        std::all_of(fusions_->operands[c].begin(), fusions_->operands[c].end(), float_value) &&
        float_value(steps_[last].outputs[0]);
    for (const std::size_t v : fusions_->inner[c])
      if (!keep_after[static_cast<std::size_t>(producer_[v])].empty()) ok = false;
    fused[c] = ok;
  }

  if (!arena_.base) allocate_arena();
  // Step times of this run, merged into profile_ once at its end (runs may be concurrent).
  std::map<std::string, StepTime, std::less<>> times;
  auto record = [&](std::string label, std::chrono::steady_clock::time_point started) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    StepTime& t = times[label];
    if (t.label.empty()) t.label = std::move(label);
    ++t.calls;
    t.seconds += s;
  };
  const ops::ScopedPool pool(pool_.get());
  TensorMap result;
  std::vector<const Tensor*> args;
  std::vector<Tensor*> outs;
  // By value index: the ranges this run's steps computed (ValueRange); a value is written once
  // per run, by its own step, which sets or clears its range.
  std::vector<ValueRange> ranges(value_index_.size());
  std::vector<ValueRange> arg_ranges;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    const bool in_fused_chain = step.chain >= 0 && fused[static_cast<std::size_t>(step.chain)];
    const FusedChain* chain =
        in_fused_chain ? &fusions_->chains[static_cast<std::size_t>(step.chain)] : nullptr;
    // A conv chain's Conv goes to the hook first (fusion.h): it may replace or watch the Conv.
    const bool ask_hook =
        chain && hook && chain->kind == FusedChain::Kind::conv && chain->nodes.front() == i;
    // Its last node runs the whole chain.
    if (chain && chain->nodes.back() != i && !ask_hook) continue;
    args.assign(step.inputs.size(), nullptr);
    for (std::size_t j = 0; j < step.inputs.size(); ++j)
      if (step.inputs[j] >= 0) args[j] = env[static_cast<std::size_t>(step.inputs[j])];
    outs.assign(step.outputs.size(), nullptr);
    // The last node of a fused chain writes its own view: an in-place Relu's input was never
    // computed (it is inner to the chain), though the bytes are the same.
    if (step.in_place_of >= 0 && !step.view && !in_fused_chain) {
      // The input is a node output, so it is a view into the arena (another in-place Relu's
      // output shares its input's view): writable.
      Tensor* x = const_cast<Tensor*>(env[static_cast<std::size_t>(step.in_place_of)]);
      outs[0] = x;
      env[static_cast<std::size_t>(step.outputs[0])] = x;
    } else {
      for (std::size_t j = 0; j < step.outputs.size(); ++j) {
        if (step.outputs[j] < 0) continue;
        const std::size_t o = static_cast<std::size_t>(step.outputs[j]);
        Tensor& t = arena_.views[o];
        // A kernel that assigned a new tensor to its output (or reshaped it) left another one
        // there: back to the planned view.
        if (t.data() != arena_.base + offset_[o] || t.tensor_type() != output_types_[o])
          t = Tensor::view(output_types_[o], arena_.base + offset_[o]);
        if (step.zero_outputs && !step.view && t.byte_size())
          std::memset(t.data(), 0, t.byte_size());
        outs[j] = &t;
        env[o] = &t;
      }
    }
    for (const std::ptrdiff_t o : step.outputs)
      if (o >= 0) ranges[static_cast<std::size_t>(o)] = ValueRange{};
    if (hook) {
      arg_ranges.assign(step.inputs.size(), ValueRange{});
      for (std::size_t j = 0; j < step.inputs.size(); ++j)
        if (step.inputs[j] >= 0) arg_ranges[j] = ranges[static_cast<std::size_t>(step.inputs[j])];
    }
    const auto started =
        profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (ask_hook) {
      // Replaced: the rest of the chain runs node by node this time. Watched: fused, as planned.
      const bool replaced = hook(i, args, arg_ranges, outs);
      if (replaced) fused[static_cast<std::size_t>(step.chain)] = 0;
      // A watching hook's time goes to nothing: the chain's own step follows.
      if (profile_ && replaced) record(graph_.nodes[i].op_type + " (hook)", started);
      continue;
    }
    if (in_fused_chain) {
      const auto c = static_cast<std::size_t>(step.chain);
      std::array<const Tensor*, 5> operands{};
      for (std::size_t r = 0; r < operands.size(); ++r)
        if (const std::ptrdiff_t v = fusions_->operands[c][r]; v >= 0)
          operands[r] = env[static_cast<std::size_t>(v)];
      run_fused_chain(fusions_->chains[c], operands, *outs[0],
                      &ranges[static_cast<std::size_t>(step.outputs[0])]);
      if (profile_) record(std::string(chain_label(chain->kind)), started);
    } else if (hook && hook(i, args, arg_ranges, outs)) {
      if (profile_) record(graph_.nodes[i].op_type + " (hook)", started);
    } else if (!step.view) {
      step.kernel->run(graph_.nodes[i], args, outs);
      if (profile_) record(graph_.nodes[i].op_type, started);
    } else if (step.outputs[0] >= 0 && step.inputs[0] >= 0) {
      // A Reshape-like view has its input's values.
      ranges[static_cast<std::size_t>(step.outputs[0])] =
          ranges[static_cast<std::size_t>(step.inputs[0])];
    }
    for (const auto& [v, name] : keep_after[i]) result.insert_or_assign(*name, *env[v]);
  }

  if (profile_) {
    const std::lock_guard lock(profile_->mutex);
    for (const auto& [label, t] : times) {
      StepTime& total = profile_->by_label[label];
      total.label = label;
      total.calls += t.calls;
      total.seconds += t.seconds;
    }
  }
  for (const ValueInfo& v : graph_.outputs)
    result.insert_or_assign(v.name, *env[value_index_.at(v.name)]);
  // Kept graph inputs and initializers: never overwritten.
  for (const std::string& k : keep) {
    const std::size_t v = value_index_.at(k);
    if (producer_[v] < 0) result.insert_or_assign(k, *env[v]);
  }
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
