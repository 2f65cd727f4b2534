// The onednn backend's plans. When a plan is made, the descriptor is validated, the kernel
// resolved, the thread count (the "threads" option) captured, a fixed matmul B widened, summed
// and reordered into the formats the primitives take (pack_weights), other fixed weights
// copied, and the oneDNN primitives created by a first run on zeros. A run checks its pointers
// and executes; it reads nothing of the OnednnOps instance, so set_option() on the instance
// does not reach it.
//
// Concurrency: concurrent. What a run mutates (a stream, the primitive and reorder caches, the
// widened-operand and int32 scratch) belongs to a worker, an OnednnOps of its own lent to one
// run at a time; a run that finds every worker busy makes another. Workers share the plan's
// oneDNN engine, whose primitives oneDNN allows to execute at once on separate streams, and the
// packed weights, whose reordered copies are made under a lock (packed_weights.h).
#include <algorithm>
#include <cstring>
#include <mutex>

#include "conv_weights.h"
#include "epilogue.h"
#include "onednn_ops.h"
#include "packed_weights.h"
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "quantize_loops.h"
#include "threads.h"

namespace qforge::onednn {
namespace {

bool is_matmul(OpKind op) {
  return op == OpKind::matmul_integer || op == OpKind::matmul_dequant ||
         op == OpKind::qlinear_matmul;
}

// Ops whose runs create oneDNN primitives (created when the plan is made, by a run on zeros).
bool is_conv(OpKind op) {
  return op == OpKind::conv_integer || op == OpKind::qlinear_conv || op == OpKind::conv_dequant;
}

bool uses_primitives(OpKind op, const std::string& kernel) {
  return is_matmul(op) || is_conv(op) || op == OpKind::linear_forward ||
         op == OpKind::linear_backward ||
         (op == OpKind::dequantize && kernel == kernel::reorder_dequantize);
}

float read_f32(const void* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void write_f32(void* p, float v) { std::memcpy(p, &v, sizeof v); }

}  // namespace

class OnednnPlan final : public Plan {
 public:
  OnednnPlan(const OpDesc& op, std::string kernel, const Facts& facts, dnnl::engine engine,
             int threads, std::vector<bool> fixed, FixedWeights weights,
             std::shared_ptr<PackedWeights> packed, std::shared_ptr<const ConvWeights> conv)
      : Plan(op, kPluginName, 0, kernel, PlanConcurrency::concurrent, std::move(fixed)),
        kernel_(std::move(kernel)),
        facts_(facts),
        engine_(std::move(engine)),
        threads_(threads),
        weights_(std::move(weights)),
        packed_(std::move(packed)),
        conv_(std::move(conv)) {}

  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const override {
    check_pointers(inputs, outputs);
    execute(weights_.substitute(inputs).data(), outputs.data());
  }

  // Makes the primitives (and a first worker) with one run on zero inputs into scratch outputs.
  void warm_up() const {
    const OpOperands operands = op_operands(desc());
    std::vector<std::vector<std::byte>> in(operands.inputs.size()), out(operands.outputs.size());
    std::vector<const void*> in_ptrs;
    std::vector<void*> out_ptrs;
    for (std::size_t i = 0; i < in.size(); ++i) {
      in[i].assign(operands.inputs[i].bytes, std::byte{0});
      in_ptrs.push_back(in[i].data());
    }
    // linear_backward's activation scale: a positive one, as linear_forward gives.
    if (desc().op == OpKind::linear_backward) write_f32(in[2].data(), 1.0f);
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i].resize(operands.outputs[i].bytes);
      out_ptrs.push_back(out[i].data());
    }
    execute(weights_.substitute(in_ptrs).data(), out_ptrs.data());
  }

 private:
  // Lends a worker to one run.
  class Lease {
   public:
    explicit Lease(const OnednnPlan& plan) : plan_(plan) {
      {
        std::lock_guard lock(plan.mutex_);
        if (!plan.free_.empty()) {
          worker_ = std::move(plan.free_.back());
          plan.free_.pop_back();
        }
      }
      if (!worker_)
        worker_.reset(new OnednnOps(plan.facts_, plan.engine_, plan.threads_));  // private ctor
    }
    ~Lease() {
      std::lock_guard lock(plan_.mutex_);
      plan_.free_.push_back(std::move(worker_));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    OnednnOps& operator*() const { return *worker_; }

   private:
    const OnednnPlan& plan_;
    std::unique_ptr<OnednnOps> worker_;
  };

  void execute(const void* const* in, void* const* out) const {
    const Lease worker(*this);
    (*worker).run_planned(desc(), kernel_, in, out,
                          static_cast<const OnednnPackedWeights*>(packed_.get()), conv_.get());
  }

  std::string kernel_;
  Facts facts_;
  dnnl::engine engine_;
  int threads_;
  FixedWeights weights_;                   // fixed inputs other than a packed B
  std::shared_ptr<PackedWeights> packed_;  // a fixed matmul B (OnednnPackedWeights)
  // A convolution's fixed W prepared for oneDNN (weights_ keeps W itself for the reference,
  // which reports an int32 bias overflow).
  std::shared_ptr<const ConvWeights> conv_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<OnednnOps>> free_;  // as many as runs were ever at once
};

OnednnOps::OnednnOps(const Facts& facts, const dnnl::engine& engine, int threads)
    : facts_(facts),
      engine_(engine),
      reorder_(engine_.engine(), engine_.stream()),
      threads_(threads) {}

void OnednnOps::run_planned(const OpDesc& op, const std::string& k, const void* const* in,
                            void* const* out, const OnednnPackedWeights* packed,
                            const ConvWeights* conv_weights) {
  auto f32 = [](const void* p) { return static_cast<const float*>(p); };
  auto i8 = [](const void* p) { return static_cast<const std::int8_t*>(p); };
  const ThreadScope scope(threads_);
  switch (op.op) {
    case OpKind::quantize:
      quantize_loop(std::get<QuantizeDesc>(op.desc), in[0], out[0], scope.threads());
      return;
    case OpKind::dequantize:
      dequantize_with(std::get<QuantizeDesc>(op.desc), in[0], static_cast<float*>(out[0]), k);
      return;
    case OpKind::requantize:
      requantize_loop(std::get<RequantizeDesc>(op.desc), static_cast<const std::int32_t*>(in[0]),
                      out[0], scope.threads());
      return;
    case OpKind::dynamic_quantize_linear: {
      const QuantizationParams p =
          dynamic_quantize_loop(std::get<DynamicQuantizeDesc>(op.desc), f32(in[0]),
                                static_cast<std::uint8_t*>(out[0]), scope.threads());
      write_f32(out[1], p.scale());
      *static_cast<std::uint8_t*>(out[2]) = static_cast<std::uint8_t>(p.zero_point());
      return;
    }
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      const Weights w{packed ? nullptr : in[1], packed};
      if (op.op == OpKind::matmul_integer)
        integer(d, in[0], w, static_cast<std::int32_t*>(out[0]), k);
      else if (op.op == OpKind::matmul_dequant)
        dequant(d, in[0], w, d.has_bias ? f32(in[2]) : nullptr, out[0], k);
      else qlinear(d, in[0], w, out[0], k);
      return;
    }
    case OpKind::linear_forward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      write_f32(out[2], forward(d, f32(in[0]), i8(in[1]), d.has_bias ? f32(in[2]) : nullptr,
                                static_cast<std::int8_t*>(out[0]), static_cast<float*>(out[1]), k));
      return;
    }
    case OpKind::linear_backward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      backward(d, f32(in[0]), i8(in[1]), read_f32(in[2]), i8(in[3]), static_cast<float*>(out[0]),
               static_cast<float*>(out[1]), d.has_bias ? static_cast<float*>(out[2]) : nullptr, k);
      return;
    }
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant: {
      const auto& d = std::get<ConvDesc>(op.desc);
      const void* bias = d.bias != ConvBias::none ? in[2] : nullptr;
      if (conv_weights) {
        run_conv(op.op, d, in[0], *conv_weights, in[1], bias, out[0], k);
      } else {
        const ConvWeights prepared(d, in[1]);
        run_conv(op.op, d, in[0], prepared, in[1], bias, out[0], k);
      }
      return;
    }
    case OpKind::matmul_weight_only: break;
  }
  throw Error(ErrorCode::internal,
              "onednn: a plan of " + std::string(to_string(op.op)) + " was made; none should be");
}

std::shared_ptr<const Plan> OnednnOps::plan(const OpDesc& op, const PlanRequest& request) {
  if (request.device != 0)
    throw Error(ErrorCode::invalid_argument, "onednn: plan for device " +
                                                 std::to_string(request.device) +
                                                 "; expected 0 (the host CPU)");
  const Support s = supports(op);
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
  // Whatever supports() claims, a plan is never made of a descriptor the reference rejects.
  op_info(op.op).check(op);
  std::string kernel = request.kernel.empty() ? s.kernels.front() : request.kernel;
  if (std::find(s.kernels.begin(), s.kernels.end(), kernel) == s.kernels.end()) {
    std::string names;
    for (const auto& k : s.kernels) names += (names.empty() ? "" : ", ") + k;
    throw Error(ErrorCode::unsupported, "onednn: kernel '" + request.kernel + "' cannot run " +
                                            describe(op) + "; expected one of " + names);
  }
  const OpOperands operands = op_operands(op);
  FixedWeights weights(op, operands, request);
  std::vector<bool> fixed = weights.fixed();
  std::shared_ptr<PackedWeights> packed;
  if (is_matmul(op.op) && fixed[1]) {
    try {
      packed = pack_weights(std::get<MatmulDesc>(op.desc), weights.data(1));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unsupported) throw;  // no packed form: B stays a copy
    }
    if (packed) {  // the packed form replaces the copy
      PlanRequest rest = request;
      rest.weights[1] = nullptr;
      weights = FixedWeights(op, operands, rest);
    }
  }
  std::shared_ptr<const ConvWeights> conv;
  if (is_conv(op.op) && fixed[1])
    conv = std::make_shared<const ConvWeights>(std::get<ConvDesc>(op.desc), weights.data(1));
  auto plan =
      std::make_shared<OnednnPlan>(op, kernel, facts_, engine_.engine(), threads_, std::move(fixed),
                                   std::move(weights), std::move(packed), std::move(conv));
  if (uses_primitives(op.op, kernel)) plan->warm_up();
  return plan;
}

}  // namespace qforge::onednn
