// The vulkan backend's plans. What a per-call op decides on each call is decided once, when the
// plan is made: the device (its context), the kernel, the descriptor's validation, and the
// weights the request fixes, uploaded to device memory (a matmul B also packed into the GEMM
// kernels' [N, Kp] form with its column sums, so runs skip the B packing pass). A run checks
// its pointers, borrows one of the plan's streams and records, submits and waits for its
// dispatches; it reads and writes nothing of the VulkanOps instance.
//
// Concurrency: concurrent. What a run records into and reuses (a command buffer, descriptor
// pools, scratch buffers for packed A, sums and staged params) is a Stream lent to one run at a
// time; a run that finds every stream of its plan busy makes another. What runs share is
// synchronised where it is: the queue submission (Context::queue_mutex()), the pipeline cache,
// the buffer address map, the validation messages (a message may be reported by another
// thread's run than the one that caused it).
#include <algorithm>
#include <array>
#include <mutex>
#include <optional>

#include "buffers.h"
#include "ops_internal.h"
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "support.h"
#include "vulkan_ops.h"

namespace qforge::vulkan {
namespace {

bool is_matmul(OpKind op) {
  return op == OpKind::matmul_integer || op == OpKind::matmul_dequant ||
         op == OpKind::qlinear_matmul;
}

bool is_conv(OpKind op) {
  return op == OpKind::conv_integer || op == OpKind::qlinear_conv || op == OpKind::conv_dequant;
}

// The device memory a plan keeps: fixed weights as given, and a fixed matmul B packed.
struct PlanWeights {
  std::vector<bool> fixed;                               // per input
  std::vector<std::shared_ptr<VulkanBuffer>> on_device;  // per input: a fixed weight, uploaded
  std::shared_ptr<PackedWeights> packed;                 // a fixed matmul B
};

class VulkanPlan final : public Plan {
 public:
  VulkanPlan(const OpDesc& op, int device, Kernel kernel, std::shared_ptr<Context> ctx,
             PlanWeights weights)
      : Plan(op, kPluginName, device, std::string(kernel_name(kernel)), PlanConcurrency::concurrent,
             weights.fixed),
        kernel_(kernel),
        ctx_(std::move(ctx)),
        weights_(std::move(weights)) {}

  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const override {
    check_pointers(inputs, outputs);
    std::array<const void*, kMaxOperands> in{};
    for (std::size_t i = 0; i < inputs.size(); ++i)
      in[i] = weights_.on_device[i] ? weights_.on_device[i]->data()
              : weights_.fixed[i]   ? nullptr  // a zero-byte weight: never read
                                    : inputs[i];
    void* const out = outputs[0];
    const OpKind op = desc().op;
    const Lease lease(*this);
    Stream& st = lease.stream();
    if (is_matmul(op)) {
      const auto& d = std::get<MatmulDesc>(desc().desc);
      const void* bias = op == OpKind::matmul_dequant && d.has_bias ? in[2] : nullptr;
      run_gemm(st, kernel_, op, d, in[0], weights_.packed ? nullptr : in[1], weights_.packed.get(),
               static_cast<const float*>(bias), out);
    } else if (is_conv(op)) {
      const auto& d = std::get<ConvDesc>(desc().desc);
      run_conv(st, op, d, in[0], in[1], d.bias != ConvBias::none ? in[2] : nullptr, out);
    } else if (op == OpKind::quantize) {
      run_quantize(st, std::get<QuantizeDesc>(desc().desc), in[0], out);
    } else if (op == OpKind::dequantize) {
      run_dequantize(st, std::get<QuantizeDesc>(desc().desc), in[0], static_cast<float*>(out));
    } else if (op == OpKind::requantize) {
      run_requantize(st, std::get<RequantizeDesc>(desc().desc),
                     static_cast<const std::int32_t*>(in[0]), out);
    } else {
      throw Error(ErrorCode::internal,
                  "vulkan: a plan of " + std::string(to_string(op)) + " was made; none should be");
    }
  }

 private:
  // Lends a stream of the plan to one run.
  class Lease {
   public:
    explicit Lease(const VulkanPlan& plan) : plan_(plan) {
      {
        std::lock_guard lock(plan.mutex_);
        if (!plan.free_.empty()) {
          stream_ = std::move(plan.free_.back());
          plan.free_.pop_back();
        }
      }
      if (!stream_) stream_ = std::make_unique<Stream>(*plan.ctx_);
    }
    ~Lease() {
      std::lock_guard lock(plan_.mutex_);
      plan_.free_.push_back(std::move(stream_));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Stream& stream() const { return *stream_; }

   private:
    const VulkanPlan& plan_;
    std::unique_ptr<Stream> stream_;
  };

  Kernel kernel_;
  std::shared_ptr<Context> ctx_;
  PlanWeights weights_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Stream>> free_;  // as many as runs were ever at once
};

// Creates the kernel's pipelines and uploads the weights `request` fixes (checked by
// FixedWeights) to `ctx`, packing a matmul B.
PlanWeights prepare(const std::shared_ptr<Context>& ctx, Kernel kernel, const OpDesc& op,
                    const OpOperands& operands, const PlanRequest& request) {
  const FixedWeights host(op, operands, request);
  PlanWeights w;
  w.fixed = host.fixed();
  w.on_device.resize(operands.inputs.size());
  std::lock_guard lock(ctx->mutex());
  if (is_matmul(op.op)) gemm_pipeline(*ctx, kernel, op.op == OpKind::qlinear_matmul);
  else if (is_conv(op.op)) conv_pipeline(*ctx);
  else elementwise_pipeline(*ctx, op.op);
  for (std::size_t i = 0; i < operands.inputs.size(); ++i) {
    const std::size_t bytes = operands.inputs[i].bytes;
    if (!w.fixed[i] || bytes == 0) continue;
    auto buffer = std::make_shared<VulkanBuffer>(ctx, bytes);
    upload(ctx->stream(), buffer->storage(), 0, host.data(i), bytes);
    w.on_device[i] = std::move(buffer);
  }
  if (is_matmul(op.op) && w.fixed[1]) {
    // The packed form serves every GEMM kernel; the B as given is not kept.
    const auto& d = std::get<MatmulDesc>(op.desc);
    w.packed =
        pack_gemm_weights(ctx, ctx->stream(), d, w.on_device[1] ? w.on_device[1]->data() : nullptr);
    w.on_device[1].reset();
  }
  return w;
}

}  // namespace

std::shared_ptr<const Plan> VulkanOps::plan(const OpDesc& op, const PlanRequest& request) {
  if (!instance_) throw Error(ErrorCode::unavailable, "vulkan: " + instance_error_);
  const auto& devs = instance_->devices();
  if (request.device < 0 || static_cast<std::size_t>(request.device) >= devs.size())
    throw Error(ErrorCode::invalid_argument,
                "vulkan: plan for device " + std::to_string(request.device) + "; expected 0 to " +
                    std::to_string(static_cast<long long>(devs.size()) - 1));
  const DeviceCaps& dev = devs[static_cast<std::size_t>(request.device)];
  if (!dev.unusable_reason.empty())
    throw Error(
        ErrorCode::unavailable,
        "vulkan: plan for device " + std::to_string(request.device) + ": " + dev.unusable_reason);
  std::optional<Kernel> requested;
  if (!request.kernel.empty()) {
    requested = parse_kernel(request.kernel);
    if (!requested) {
      std::string known;
      for (const auto& info : kKernels)
        known += (known.empty() ? "" : ", ") + std::string(info.name);
      throw Error(ErrorCode::unsupported, "vulkan: unknown kernel '" + request.kernel +
                                              "'; expected one of " + known +
                                              " or an empty name for the backend's choice");
    }
  }
  std::shared_ptr<Context> ctx = context_of(request.device);
  const Support s = check_support(op, ctx->caps());
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
  // Whatever supports() claims, a plan is never made of a descriptor the reference rejects.
  op_info(op.op).check(op);
  if (requested &&
      std::find(s.kernels.begin(), s.kernels.end(), request.kernel) == s.kernels.end()) {
    std::string names;
    for (const auto& k : s.kernels) names += (names.empty() ? "" : ", ") + k;
    const std::string why = kernel_unavailable_reason(*requested, dev);
    throw Error(ErrorCode::unsupported, "vulkan: kernel '" + request.kernel + "' cannot run " +
                                            describe(op) + (why.empty() ? "" : " (" + why + ")") +
                                            "; expected one of " + names);
  }
  const Kernel kernel = requested ? *requested : *parse_kernel(s.kernels.front());
  PlanWeights weights = prepare(ctx, kernel, op, op_operands(op), request);
  return std::make_shared<VulkanPlan>(op, request.device, kernel, std::move(ctx),
                                      std::move(weights));
}

}  // namespace qforge::vulkan
