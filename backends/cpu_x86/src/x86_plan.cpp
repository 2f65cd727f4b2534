// cpu_x86's plans. Everything the per-call ops decide on each call is decided once, when the
// plan is made: the descriptor is validated, the kernel resolved, a fixed matmul B (or Linear W)
// packed, and the thread pool and the driver's tuning (ISA tiers, GEMV prefetch) captured. A run
// reads nothing of the backend instance and writes only its outputs and scratch lent to it alone
// (from a pool the plans of one instance share, as they share its thread pool), so
// plans run from any number of threads at once (docs/CPU_X86.md, "Plans").
#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>

#include "conv.h"
#include "cpu_x86_ops.h"
#include "lending_pool.h"
#include "op_runs.h"
#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/reference.h"
#include "weight_only.h"

namespace qforge::cpu_x86 {
namespace {

bool is_conv(OpKind op) {
  return op == OpKind::conv_integer || op == OpKind::qlinear_conv || op == OpKind::conv_dequant;
}

bool is_matmul(OpKind op) {
  return op == OpKind::matmul_integer || op == OpKind::matmul_dequant ||
         op == OpKind::qlinear_matmul;
}

// Descriptors for the runs of a matmul plan with A's params given at run
// (MatmulDesc::a_params_at_run): the plan's, the flag cleared (A's params are filled per run).
std::function<std::unique_ptr<MatmulDesc>()> run_descriptors(const OpDesc& op) {
  const auto* d = std::get_if<MatmulDesc>(&op.desc);
  if (!d || !d->a_params_at_run) return [] { return std::unique_ptr<MatmulDesc>(); };
  MatmulDesc r = *d;
  r.a_params_at_run = false;
  return [r] { return std::make_unique<MatmulDesc>(r); };
}

struct PlanParts {
  std::shared_ptr<ThreadPool> pool;
  // The backend instance's: every plan made from it lends GEMM scratch from the same pool.
  std::shared_ptr<LendingPool<GemmScratch>> scratch;
  GemmTuning tuning;
  const KernelInfo* kernel = nullptr;                    // resolved when the plan was made
  FixedWeights weights;                                  // fixed inputs other than a packed one
  std::vector<bool> fixed;                               // per input: fixed (copied or packed)
  std::shared_ptr<const X86PackedWeights> packed;        // input 1 (matmul B, Linear W), when fixed
  std::shared_ptr<const ConvWeights> conv;               // input 1 (conv W), when fixed
  std::shared_ptr<const WeightOnlyWeights> weight_only;  // input 1 (matmul_weight_only B)
  ConvPath conv_path = ConvPath::gemm;                   // conv: how it runs
  // conv with W (and the bias, if any) fixed: what run_conv would derive on every call
  std::shared_ptr<const ConvRunConstants> conv_run;
};

class X86Plan final : public Plan {
 public:
  X86Plan(const OpDesc& op, PlanParts parts)
      : Plan(op, "cpu_x86", 0, std::string(runs(parts).name), PlanConcurrency::concurrent,
             parts.fixed),
        parts_(std::move(parts)),
        run_descs_(run_descriptors(op)) {}

  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const override {
    check_pointers(inputs, outputs);
    const auto in = parts_.weights.substitute(inputs);
    if (parts_.kernel->role == KernelRole::reference) {
      run_reference(desc(), in.data(), outputs.data());
      return;
    }
    ThreadPool& pool = *parts_.pool;
    const OpDesc& op = desc();
    switch (op.op) {
      case OpKind::quantize:
        quantize_vector(pool, std::get<QuantizeDesc>(op.desc), in[0], outputs[0]);
        return;
      case OpKind::dequantize:
        dequantize_vector(pool, std::get<QuantizeDesc>(op.desc), in[0],
                          static_cast<float*>(outputs[0]));
        return;
      case OpKind::requantize:
        requantize_vector(pool, std::get<RequantizeDesc>(op.desc),
                          static_cast<const std::int32_t*>(in[0]), outputs[0]);
        return;
      case OpKind::dynamic_quantize_linear: {
        const auto p = dynamic_quantize_vector(pool, std::get<DynamicQuantizeDesc>(op.desc),
                                               static_cast<const float*>(in[0]),
                                               static_cast<std::uint8_t*>(outputs[0]));
        if (!p) return run_reference(op, in.data(), outputs.data());  // it names the infinity
        const float scale = p->scale();
        std::memcpy(outputs[1], &scale, sizeof scale);
        *static_cast<std::uint8_t*>(outputs[2]) = static_cast<std::uint8_t>(p->zero_point());
        return;
      }
      case OpKind::matmul_integer:
      case OpKind::matmul_dequant:
      case OpKind::qlinear_matmul: return run_matmul(in.data(), outputs[0]);
      case OpKind::linear_forward: return run_linear_forward(in.data(), outputs.data());
      case OpKind::linear_backward: break;  // reference only (supports())
      case OpKind::matmul_weight_only: return run_weight_only_plan(in.data(), outputs[0]);
      case OpKind::conv_integer:
      case OpKind::qlinear_conv:
      case OpKind::conv_dequant: return run_conv_plan(in.data(), outputs.data());
    }
    throw Error(ErrorCode::internal, "cpu_x86 plan: no vector path for " + describe(op));
  }

 private:
  // The kernel that runs: with B packed when the plan was made, the one chosen for its values;
  // with B given per run, the one resolved from the descriptor (a maddubs kernel then still
  // runs maddwd for a B holding -128).
  static const KernelInfo& runs(const PlanParts& p) {
    if (p.conv) return exact_for_weights(*p.kernel, p.conv->holds_min());
    return p.packed ? exact_for_weights(*p.kernel, p.packed->holds_min) : *p.kernel;
  }

  void run_conv_plan(const void* const* in, void* const* out) const {
    const auto& d = std::get<ConvDesc>(desc().desc);
    ThreadPool& pool = *parts_.pool;
    std::optional<ConvWeights> per_run;
    const ConvWeights* w = parts_.conv.get();
    if (!w) w = &per_run.emplace(d, in[1], parts_.conv_path, &pool);
    bool ok = false;
    {
      auto scratch = parts_.scratch->take();
      ok = cpu_x86::run_conv({pool, scratch.get(), parts_.tuning},
                             exact_for_weights(*parts_.kernel, w->holds_min()), desc().op, d, in[0],
                             *w, d.bias == ConvBias::none ? nullptr : in[2], out[0],
                             parts_.conv_run.get());
    }
    // The reference reports the sum that leaves int32 (W is in `in`: plan() kept a copy of it
    // whenever an int32 bias could overflow).
    if (!ok) run_reference(desc(), in, out);
  }

  void run_matmul(const void* const* in, void* y) const {
    const auto& flagged = std::get<MatmulDesc>(desc().desc);
    // A's params given at run (the last two inputs) go into a descriptor of this run's own: the
    // GEMM driver packs A with them, while B's packing and column sums do not depend on them.
    std::optional<LendingPool<MatmulDesc>::Lease> run_desc;
    if (flagged.a_params_at_run) {
      float sa = 0;
      std::int32_t za = 0;
      std::memcpy(&sa, in[flagged.has_bias ? 3 : 2], sizeof sa);
      std::memcpy(&za, in[flagged.has_bias ? 4 : 3], sizeof za);
      reference::check_a_params_at_run(flagged, sa, za);
      run_desc.emplace(run_descs_);
      run_desc->get().a = QuantizationParams(flagged.a.dtype(), flagged.a.scheme(), {sa}, {za});
    }
    const MatmulDesc& d = run_desc ? run_desc->get() : flagged;
    ThreadPool& pool = *parts_.pool;
    std::optional<X86PackedWeights> per_run;
    const X86PackedWeights* b = parts_.packed.get();
    if (!b) b = &per_run.emplace(d, in[1], &pool);
    GemmOutput out;
    switch (desc().op) {
      case OpKind::matmul_integer: out = {GemmOutput::Kind::int32, y}; break;
      case OpKind::matmul_dequant:
        out = {GemmOutput::Kind::dequant_f32, y,
               d.has_bias ? static_cast<const float*>(in[2]) : nullptr};
        break;
      default:
        out = requant_output(d, y, d.has_bias ? static_cast<const std::int32_t*>(in[2]) : nullptr);
        break;
    }
    bool ok = false;
    {
      auto scratch = parts_.scratch->take();
      ok = run_gemm(exact_for_weights(*parts_.kernel, b->holds_min), d, in[0], *b, out, pool,
                    scratch.get(), parts_.tuning);
    }
    // The reference reports the sum that leaves int32 (B is in `in`: plan() kept a copy of it
    // whenever an int32 bias could overflow).
    if (!ok) run_reference(desc(), in, &y);
  }

  void run_weight_only_plan(const void* const* in, void* y) const {
    const auto& d = std::get<MatmulDesc>(desc().desc);
    std::optional<WeightOnlyWeights> per_run;
    const WeightOnlyWeights* w = parts_.weight_only.get();
    if (!w) w = &per_run.emplace(d, in[1]);
    run_weight_only(*parts_.pool, d.m, static_cast<const float*>(in[0]), *w,
                    d.has_bias ? static_cast<const float*>(in[2]) : nullptr,
                    static_cast<float*>(y));
  }

  void run_linear_forward(const void* const* in, void* const* out) const {
    const auto& d = std::get<LinearDesc>(desc().desc);
    ThreadPool& pool = *parts_.pool;
    std::optional<X86PackedWeights> per_run;
    const X86PackedWeights* w = parts_.packed.get();
    if (!w) w = &per_run.emplace(linear_matmul_desc(d, 1.0f), in[1], &pool);
    std::optional<float> sx;
    {
      auto scratch = parts_.scratch->take();
      sx = linear_forward_vector({pool, scratch.get(), parts_.tuning}, *parts_.kernel, d,
                                 static_cast<const float*>(in[0]), *w,
                                 d.has_bias ? static_cast<const float*>(in[2]) : nullptr,
                                 static_cast<std::int8_t*>(out[0]), static_cast<float*>(out[1]));
    }
    if (!sx) return run_reference(desc(), in, out);  // it names the non-finite element
    std::memcpy(out[2], &*sx, sizeof(float));
  }

  PlanParts parts_;
  mutable LendingPool<MatmulDesc> run_descs_;
};

}  // namespace

std::shared_ptr<const Plan> CpuX86Ops::plan(const OpDesc& op, const PlanRequest& request) {
  if (request.device != 0)
    throw Error(
        ErrorCode::invalid_argument,
        "cpu_x86: plan for device " + std::to_string(request.device) + "; expected 0 (the host)");
  const Support s = supports(op);
  if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
  op_info(op.op).check(op);  // supports() restates the reference's rules; never run past them
  const std::string& name = request.kernel.empty() ? s.kernels.front() : request.kernel;
  if (std::find(s.kernels.begin(), s.kernels.end(), name) == s.kernels.end()) {
    std::string names;
    for (const auto& k : s.kernels) names += (names.empty() ? "" : ", ") + k;
    throw Error(ErrorCode::unsupported, "cpu_x86: kernel '" + name + "' cannot run " +
                                            describe(op) + "; expected one of " + names);
  }
  const KernelInfo* kernel = find_kernel(name);
  const OpOperands operands = op_operands(op);

  // Input 1 of the GEMM ops (matmul B, Linear W) is packed rather than copied when fixed.
  const bool gemm = is_matmul(op.op) ||
                    (op.op == OpKind::linear_forward && kernel->role != KernelRole::reference);
  const bool pack = gemm && request.weights.size() == operands.inputs.size() && request.weights[1];
  const bool pack_weight_only =
      op.op == OpKind::matmul_weight_only && kernel->role == KernelRole::weight_only &&
      request.weights.size() == operands.inputs.size() && request.weights[1];
  const bool conv = is_conv(op.op) && kernel->role != KernelRole::reference;
  const bool pack_conv =
      conv && request.weights.size() == operands.inputs.size() && request.weights[1];
  PlanRequest rest = request;
  if (pack || pack_weight_only) rest.weights[1] = nullptr;
  // A convolution with an int32 bias keeps a copy of W as well as its packing unless the fixed
  // bias provably keeps every sum inside int32: the reference reruns on W to report an overflow.
  if (pack_conv) {
    const auto& d = std::get<ConvDesc>(op.desc);
    const bool bias_fixed =
        d.bias == ConvBias::int32 && request.weights.size() > 2 && request.weights[2] != nullptr;
    if (d.bias != ConvBias::int32 ||
        (bias_fixed &&
         conv_bias_cannot_overflow(d, request.weights[1],
                                   static_cast<const std::int32_t*>(request.weights[2]))))
      rest.weights[1] = nullptr;
  }
  // Likewise qlinear_matmul with an int32 bias.
  if (pack && op.op == OpKind::qlinear_matmul) {
    const auto& d = std::get<MatmulDesc>(op.desc);
    const bool bias_fixed = d.has_bias && request.weights.size() > 2 && request.weights[2];
    if (d.has_bias && !(bias_fixed && matmul_bias_cannot_overflow(
                                          d, request.weights[1],
                                          static_cast<const std::int32_t*>(request.weights[2]))))
      rest.weights[1] = request.weights[1];
  }
  PlanParts parts{.pool = pool_,
                  .scratch = plan_scratch_,
                  .tuning = tuning(),
                  .kernel = kernel,
                  .weights = FixedWeights(op, operands, rest),  // checks the request
                  .fixed = {},
                  .packed = nullptr,
                  .conv = nullptr,
                  .weight_only = nullptr,
                  .conv_path = ConvPath::gemm,
                  .conv_run = nullptr};
  parts.fixed = parts.weights.fixed();
  if (conv) {
    const auto& d = std::get<ConvDesc>(op.desc);
    parts.conv_path = conv_path(d, op.op, name);
    if (pack_conv) {
      parts.fixed[1] = true;
      parts.conv =
          std::make_shared<const ConvWeights>(d, request.weights[1], parts.conv_path, pool_.get());
      // With W's values known, the choice the per-call op makes for them.
      parts.kernel = &conv_kernel(d, parts.conv_path, parts.conv->holds_min(), request.kernel);
      const bool bias_fixed =
          d.bias == ConvBias::none || (request.weights.size() > 2 && request.weights[2] != nullptr);
      if (bias_fixed)
        parts.conv_run = prepare_conv_run(parts.tuning, op.op, d, *parts.conv,
                                          d.bias == ConvBias::none ? nullptr : request.weights[2]);
    }
  }
  if (pack_weight_only) {
    parts.fixed[1] = true;
    parts.weight_only = std::make_shared<const WeightOnlyWeights>(std::get<MatmulDesc>(op.desc),
                                                                  request.weights[1]);
  }
  if (pack) {
    parts.fixed[1] = true;
    const MatmulDesc d = is_matmul(op.op) ? std::get<MatmulDesc>(op.desc)
                                          : linear_matmul_desc(std::get<LinearDesc>(op.desc), 1);
    parts.packed = std::make_shared<const X86PackedWeights>(d, request.weights[1], pool_.get());
    // With B's values known, the choice the per-call op makes for them (an automatic choice may
    // then be a maddubs kernel for weights whose scheme allows -128 but which hold none).
    parts.kernel = &gemm_kernel(d, *parts.packed, op.op, request.kernel);
  }
  return std::make_shared<X86Plan>(op, std::move(parts));
}

}  // namespace qforge::cpu_x86
