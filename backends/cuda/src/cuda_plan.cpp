// cuda's plans (docs/CUDA.md, "Plans"). Everything the per-call ops decide on each call is
// decided once, when the plan is made: the descriptor is validated, the device and the kernel
// fixed, fixed weights uploaded to the plan's device, a fixed matmul B packed as pack_weights
// packs it and fixed convolution weights packed for the implicit-GEMM kernel. The params that
// dynamic_quantize_linear and linear_forward compute, and linear_backward's activation scale,
// are host pointers (op_table.h: host_resident), as the per-call ops return and take them.
//
// Each plan runs on a CudaOps of its own (the PlanContext constructor): the instance's probe,
// the plan's device and kernel, scratch and parameter copies of its own, and kernels queued on
// the device's legacy default stream. A run therefore reads and changes nothing of the instance
// that made the plan (not its selected device, kernel, stream or scratch), and plans made from
// one instance share no mutable state: distinct plans run from several threads at once. One
// plan's runs take the plan's lock, since they share its scratch.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "check.h"
#include "cuda_ops.h"
#include "device_buffer.h"
#include "kernel_names.h"
#include "kernels/conv.h"
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "qforge/reference.h"

namespace qforge::cuda {
namespace {

bool is_conv(OpKind op) {
  return op == OpKind::conv_integer || op == OpKind::qlinear_conv || op == OpKind::conv_dequant;
}

bool is_matmul(OpKind op) {
  return op == OpKind::matmul_integer || op == OpKind::matmul_dequant ||
         op == OpKind::qlinear_matmul;
}

}  // namespace

class CudaPlan final : public Plan {
 public:
  CudaPlan(std::unique_ptr<CudaOps> ops, const OpDesc& op, const OpOperands& operands,
           const PlanRequest& request, std::string kernel, const FixedWeights& weights)
      : Plan(op, kBackendName, request.device, std::move(kernel), PlanConcurrency::concurrent,
             weights.fixed()),
        ops_(std::move(ops)),
        device_weights_(operands.inputs.size()) {
    if (const auto* m = std::get_if<MatmulDesc>(&op.desc); m && m->a_params_at_run) {
      run_desc_ = *m;
      run_desc_->a_params_at_run = false;
    }
    // Fixed weights to the plan's device (copy_to_device returns once the copy is done).
    for (std::size_t i = 0; i < operands.inputs.size(); ++i) {
      if (!weights.fixed()[i]) continue;
      const std::size_t bytes = operands.inputs[i].bytes;
      device_weights_[i] = ops_->allocate(bytes);
      ops_->copy_to_device(*device_weights_[i], 0, weights.data(i), bytes);
    }
    if (is_matmul(op.op) && weights.fixed()[1]) {
      try {
        // B's packing depends on B alone (A's params given at run change nothing in it).
        packed_b_ =
            ops_->pack_weights(reference::a_params_at_run_bound(std::get<MatmulDesc>(op.desc)),
                               device_weights_[1]->data());
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;  // no packed form: B stays as given
      }
    }
    if (is_conv(op.op))
      conv_ = ops_->conv_constants(op.op, std::get<ConvDesc>(op.desc),
                                   device_weights_[1] ? device_weights_[1]->data() : nullptr,
                                   weights.data(1),
                                   weights.fixed().size() > 2 ? weights.data(2) : nullptr);
  }

  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const override {
    check_pointers(inputs, outputs);
    std::array<const void*, kMaxOperands> in{};
    for (std::size_t i = 0; i < inputs.size(); ++i)
      in[i] = device_weights_[i] ? device_weights_[i]->data() : inputs[i];
    void* out = outputs[0];
    std::lock_guard lock(mutex_);
    CudaOps& t = *ops_;
    switch (desc().op) {
      case OpKind::quantize: t.quantize(std::get<QuantizeDesc>(desc().desc), in[0], out); return;
      case OpKind::dequantize:
        t.dequantize(std::get<QuantizeDesc>(desc().desc), in[0], static_cast<float*>(out));
        return;
      case OpKind::requantize:
        t.requantize(std::get<RequantizeDesc>(desc().desc), static_cast<const std::int32_t*>(in[0]),
                     out);
        return;
      case OpKind::matmul_integer: {
        const auto& d = std::get<MatmulDesc>(desc().desc);
        auto* c = static_cast<std::int32_t*>(out);
        if (packed_b_) t.matmul_integer_packed(d, in[0], *packed_b_, c);
        else t.matmul_integer(d, in[0], in[1], c);
        return;
      }
      case OpKind::matmul_dequant: {
        const auto& flagged = std::get<MatmulDesc>(desc().desc);
        const auto* bias = flagged.has_bias ? static_cast<const float*>(in[2]) : nullptr;
        // A's params given at run: host values after the other inputs (op_table.h), checked as
        // the reference checks them, into this run's descriptor. The kernels take a per-tensor
        // scale and zero point as arguments, so they cost no upload and no synchronisation.
        if (flagged.a_params_at_run) {
          float sa = 0;
          std::int32_t za = 0;
          std::memcpy(&sa, inputs[flagged.has_bias ? 3 : 2], sizeof sa);
          std::memcpy(&za, inputs[flagged.has_bias ? 4 : 3], sizeof za);
          reference::check_a_params_at_run(flagged, sa, za);
          run_desc_->a = QuantizationParams(flagged.a.dtype(), flagged.a.scheme(), {sa}, {za});
        }
        const MatmulDesc& d = flagged.a_params_at_run ? *run_desc_ : flagged;
        if (packed_b_) t.matmul_dequant_packed(d, in[0], *packed_b_, bias, out);
        else t.matmul_dequant(d, in[0], in[1], bias, out);
        return;
      }
      case OpKind::qlinear_matmul: {
        const auto& d = std::get<MatmulDesc>(desc().desc);
        if (packed_b_) t.qlinear_matmul_packed(d, in[0], *packed_b_, out);
        else t.qlinear_matmul(d, in[0], in[1], out);
        return;
      }
      case OpKind::conv_integer:
      case OpKind::qlinear_conv:
      case OpKind::conv_dequant: {
        const auto& d = std::get<ConvDesc>(desc().desc);
        const void* bias = d.bias != ConvBias::none ? in[2] : nullptr;
        t.run_conv(desc().op, d, in[0], in[1], bias, out, &conv_);
        return;
      }
      // Params operands are host pointers (op_table.h, host_resident); the per-call ops return
      // the params once the device has computed them.
      case OpKind::dynamic_quantize_linear: {
        const QuantizationParams p = t.dynamic_quantize_linear(
            std::get<DynamicQuantizeDesc>(desc().desc), static_cast<const float*>(in[0]),
            static_cast<std::uint8_t*>(out));
        const float scale = p.scale();
        std::memcpy(outputs[1], &scale, sizeof scale);
        *static_cast<std::uint8_t*>(outputs[2]) = static_cast<std::uint8_t>(p.zero_point());
        return;
      }
      case OpKind::linear_forward: {  // xq, y, x_scale
        const auto& d = std::get<LinearDesc>(desc().desc);
        const QuantizationParams p = t.linear_forward(
            d, static_cast<const float*>(in[0]), static_cast<const std::int8_t*>(in[1]),
            d.has_bias ? static_cast<const float*>(in[2]) : nullptr, static_cast<std::int8_t*>(out),
            static_cast<float*>(outputs[1]));
        const float scale = p.scale();
        std::memcpy(outputs[2], &scale, sizeof scale);
        return;
      }
      case OpKind::linear_backward: {  // dy, xq, x_scale, wq -> dx, dw[, db]
        const auto& d = std::get<LinearDesc>(desc().desc);
        float scale = 0;
        std::memcpy(&scale, in[2], sizeof scale);
        t.linear_backward(d, static_cast<const float*>(in[0]),
                          static_cast<const std::int8_t*>(in[1]),
                          QuantizationParams::per_tensor_symmetric(DType::int8, scale),
                          static_cast<const std::int8_t*>(in[3]), static_cast<float*>(out),
                          static_cast<float*>(outputs[1]),
                          d.has_bias ? static_cast<float*>(outputs[2]) : nullptr);
        return;
      }
      default: break;  // refused when the plan was made
    }
    throw Error(ErrorCode::internal,
                "cuda: a plan of " + std::string(to_string(desc().op)) + " cannot run");
  }

 private:
  // The plan's own CudaOps; run() is const, its scratch and parameter copies are not.
  std::unique_ptr<CudaOps> ops_;
  mutable std::mutex mutex_;                             // one run at a time on ops_
  std::vector<std::shared_ptr<Buffer>> device_weights_;  // per input: the fixed weight, or null
  std::shared_ptr<PackedWeights> packed_b_;              // a fixed matmul B, packed
  CudaOps::ConvConstants conv_;                          // a convolution's, computed once
  // matmul_dequant with A's params given at run: the plan's descriptor, the flag cleared; each
  // run (under mutex_) writes its A params here.
  mutable std::optional<MatmulDesc> run_desc_;
};

std::shared_ptr<const Plan> CudaOps::plan(const OpDesc& op, const PlanRequest& request) {
  if (!probe_.availability.usable)
    throw Error(ErrorCode::unavailable, "cuda: " + probe_.availability.reason);
  const auto it = std::find_if(probe_.devices.begin(), probe_.devices.end(),
                               [&](const DeviceProps& d) { return d.index == request.device; });
  if (it == probe_.devices.end() || !it->usable())
    throw Error(ErrorCode::invalid_argument,
                "cuda: plan for device " + std::to_string(request.device) +
                    "; expected a usable device: " + std::to_string(probe_.devices.size()) +
                    " listed, those of compute capability 8.0 or newer usable");
  auto ops = std::make_unique<CudaOps>(probe_, PlanContext{request.device, request.kernel});
  // The per-call ops refuse these on every call; a plan refuses them once, here.
  if (auto r = refusal_for(op))
    throw Error(r->invalid ? ErrorCode::invalid_argument : ErrorCode::unsupported,
                "cuda: " + std::string(to_string(op.op)) + ": " + r->reason);
  const Support s = ops->supports(op);
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
  // Whatever the support table says, a plan is never made of a descriptor the reference rejects.
  op_info(op.op).check(op);
  if (!request.kernel.empty() &&
      std::find(s.kernels.begin(), s.kernels.end(), request.kernel) == s.kernels.end()) {
    std::string names;
    for (const auto& k : s.kernels) names += (names.empty() ? "" : ", ") + k;
    throw Error(ErrorCode::unsupported, "cuda: kernel '" + request.kernel + "' cannot run " +
                                            describe(op) + "; expected one of " + names);
  }
  const OpOperands operands = op_operands(op);
  const FixedWeights weights(op, operands, request);
  if (request.device < 64)
    plan_devices_.fetch_or(std::uint64_t{1} << request.device, std::memory_order_relaxed);
  // The automatic choice is the first kernel supports() lists (the per-call ops pick it too).
  std::string kernel = request.kernel.empty() ? s.kernels.front() : request.kernel;
  return std::make_shared<CudaPlan>(std::move(ops), op, operands, request, std::move(kernel),
                                    weights);
}

}  // namespace qforge::cuda
