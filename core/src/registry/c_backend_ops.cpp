#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "qforge/error.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "registry/c_backend.h"
#include "registry/c_descriptor.h"

namespace qforge::detail {

CBackend::~CBackend() {
  if (backend != nullptr) table->destroy_backend(backend);
}

void CBackend::check(qforge_c_status* status, std::string_view call) const {
  if (status == nullptr) return;
  const std::uint32_t code = table->status_code(status);
  const char* message = table->status_message(status);
  std::string text =
      message != nullptr && *message != '\0'
          ? std::string(message)
          : fmt::format("{}: {} failed with status code {} and no message", name, call, code);
  table->status_release(status);
  throw Error(error_code_from_c(code), text);
}

namespace {

template <class T>
T out_struct() {
  T s{};
  s.version = QFORGE_C_API_VERSION;
  s.struct_size = static_cast<std::uint32_t>(sizeof(T));
  return s;
}

class CPlan final : public Plan {
 public:
  CPlan(std::shared_ptr<const CBackend> backend, qforge_c_plan* plan, const OpDesc& op, int device,
        std::string kernel, PlanConcurrency concurrency, std::vector<bool> fixed)
      : Plan(op, backend->name, device, std::move(kernel), concurrency, std::move(fixed)),
        backend_(std::move(backend)),
        plan_(plan) {}
  ~CPlan() override { backend_->table->plan_destroy(plan_); }

  void run(std::span<const void* const> inputs, std::span<void* const> outputs) const override {
    check_pointers(inputs, outputs);
    const auto call = [&] {
      return backend_->table->plan_run(plan_, inputs.data(),
                                       static_cast<std::uint32_t>(inputs.size()), outputs.data(),
                                       static_cast<std::uint32_t>(outputs.size()));
    };
    qforge_c_status* status = nullptr;
    if (concurrency() == PlanConcurrency::serialized) {
      std::lock_guard lock(backend_->mutex);
      status = call();
    } else {
      status = call();
    }
    backend_->check(status, "plan_run");
  }

 private:
  std::shared_ptr<const CBackend> backend_;
  qforge_c_plan* plan_;
};

// QuantizationOps over one C backend instance. Every op runs through a plan; the per-call ops
// use plans made for device 0 with the plugin's own kernel choice, kept per descriptor.
class CPluginOps final : public QuantizationOps {
 public:
  explicit CPluginOps(std::shared_ptr<CBackend> backend) : backend_(std::move(backend)) {}

  std::string name() const override { return backend_->name; }
  std::string version() const override {
    const char* v = backend_->table->plugin_version;
    return v != nullptr ? v : "";
  }

  Availability availability() const override {
    auto a = out_struct<qforge_c_availability>();
    {
      std::lock_guard lock(backend_->mutex);
      backend_->table->availability(backend_->backend, &a);
    }
    Availability out;
    out.usable = a.usable != 0;
    out.score = out.usable ? a.score : 0;
    if (a.reason != nullptr) out.reason = a.reason;
    return out;
  }

  std::vector<DeviceInfo> devices() const override {
    std::lock_guard lock(backend_->mutex);
    const std::uint32_t count = backend_->table->device_count(backend_->backend);
    std::vector<DeviceInfo> out;
    for (std::uint32_t i = 0; i < count; ++i) {
      auto info = out_struct<qforge_c_device_info>();
      DeviceInfo d;
      backend_->check(backend_->table->device_info(
                          backend_->backend, i, &info,
                          [](void* user, const char* key, const char* value) {
                            if (key != nullptr && value != nullptr)
                              static_cast<DeviceInfo*>(user)->properties[key] = value;
                          },
                          &d),
                      "device_info");
      if (info.name != nullptr) d.name = info.name;
      if (info.kind != nullptr) d.kind = info.kind;
      d.memory_bytes = info.memory_bytes;
      out.push_back(std::move(d));
    }
    return out;
  }

  // Version 1 of the boundary serves host memory only (c_api.h).
  bool host_memory() const override { return true; }

  bool set_option(std::string_view key, std::string_view value) override {
    if (backend_->table->set_option == nullptr) return false;
    const std::string k(key), v(value);
    std::uint32_t known = 0;
    std::lock_guard lock(backend_->mutex);
    backend_->check(backend_->table->set_option(backend_->backend, k.c_str(), v.c_str(), &known),
                    "set_option");
    return known != 0;
  }

  using QuantizationOps::supports;
  // The boundary's supports() answers for every device of the plugin (abi.h); make_plan may
  // still refuse a device.
  Support supports(const OpDesc& op, int device) const override {
    if (const int count = device_count(); device < 0 || device >= count)
      return Support::no(fmt::format("{}: device {}; expected 0 to {}", name(), device, count - 1));
    if (const auto* m = std::get_if<MatmulDesc>(&op.desc);
        m && op.op == OpKind::qlinear_matmul && backend_->table->version < 2 &&
        (m->has_bias || m->activation != ConvActivation::none))
      return Support::no(name() +
                         ": the plugin was built for C API version 1, whose qforge_c_matmul_desc "
                         "has no int32 bias or output clamp for qlinear_matmul (version 2)");
    if (const auto* m = std::get_if<MatmulDesc>(&op.desc);
        m && m->a_params_at_run && backend_->table->version < 3)
      return Support::no(name() + ": the plugin was built for C API version " +
                         std::to_string(backend_->table->version) +
                         ", whose qforge_c_matmul_desc has no a_params_at_run (A's params as "
                         "run-time inputs, version 3)");
    const CDescriptor c(op);
    std::vector<std::string> kernels;
    qforge_c_status* status = nullptr;
    {
      std::lock_guard lock(backend_->mutex);
      status = backend_->table->supports(
          backend_->backend, c.op(),
          [](void* user, const char* kernel) {
            if (kernel != nullptr && *kernel != '\0')
              static_cast<std::vector<std::string>*>(user)->emplace_back(kernel);
          },
          &kernels);
    }
    if (status != nullptr && backend_->table->status_code(status) == QFORGE_C_ERROR_UNSUPPORTED) {
      const char* reason = backend_->table->status_message(status);
      Support no = Support::no(reason != nullptr ? reason : "");
      backend_->table->status_release(status);
      return no;
    }
    backend_->check(status, "supports");
    if (kernels.empty())
      throw Error(ErrorCode::internal,
                  fmt::format("{}: supports() accepted {} but named no kernel; a C plugin names "
                              "at least one through add_kernel",
                              name(), describe(op)));
    return Support::yes(std::move(kernels));
  }

  void quantize(const QuantizeDesc& d, const void* x, void* q) override {
    call({OpKind::quantize, d}, {x}, {q});
  }
  void dequantize(const QuantizeDesc& d, const void* q, float* x) override {
    call({OpKind::dequantize, d}, {q}, {x});
  }
  void requantize(const RequantizeDesc& d, const std::int32_t* c, void* y) override {
    call({OpKind::requantize, d}, {c}, {y});
  }
  void matmul_integer(const MatmulDesc& d, const void* a, const void* b, std::int32_t* c) override {
    call({OpKind::matmul_integer, d}, {a, b}, {c});
  }
  void matmul_dequant(const MatmulDesc& d, const void* a, const void* b, const float* bias,
                      void* y) override {
    call({OpKind::matmul_dequant, d}, with_optional({a, b}, d.has_bias, bias), {y});
  }
  void qlinear_matmul(const MatmulDesc& d, const void* a, const void* b, void* y) override {
    call({OpKind::qlinear_matmul, d}, {a, b}, {y});
  }
  void qlinear_matmul_bias(const MatmulDesc& d, const void* a, const void* b,
                           const std::int32_t* bias, void* y) override {
    call({OpKind::qlinear_matmul, d}, with_optional({a, b}, d.has_bias, bias), {y});
  }
  void conv(OpKind op, const ConvDesc& d, const void* x, const void* w, const void* bias,
            void* y) override {
    call({op, d}, with_optional({x, w}, d.bias != ConvBias::none, bias), {y});
  }
  void matmul_weight_only(const MatmulDesc& d, const float* a, const void* b, const float* bias,
                          float* y) override {
    call({OpKind::matmul_weight_only, d}, with_optional({a, b}, d.has_bias, bias), {y});
  }
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& d, const float* x,
                                             std::uint8_t* y) override {
    float scale = 0;
    std::uint8_t zero_point = 0;
    call({OpKind::dynamic_quantize_linear, d}, {x}, {y, &scale, &zero_point});
    return QuantizationParams::per_tensor_affine(DType::uint8, scale, zero_point);
  }
  QuantizationParams linear_forward(const LinearDesc& d, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y) override {
    float x_scale = 0;
    call({OpKind::linear_forward, d}, with_optional({x, wq}, d.has_bias, bias), {xq, y, &x_scale});
    return QuantizationParams::per_tensor_symmetric(DType::int8, x_scale);
  }
  void linear_backward(const LinearDesc& d, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                       float* dw, float* db) override {
    const float x_scale = xq_params.scale();
    std::vector<void*> outputs{dx, dw};
    if (d.has_bias) outputs.push_back(db);
    call({OpKind::linear_backward, d}, {dy, xq, &x_scale, wq}, outputs);
  }

  std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request) override {
    const int devices = device_count();
    if (request.device < 0 || request.device >= devices)
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{}: plan for device {}; expected 0 to {}", name(), request.device,
                              devices - 1));
    const Support s = supports(op, request.device);
    if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
    // Whatever a plugin claims, a plan is never made of a descriptor the reference rejects.
    op_info(op.op).check(op);
    if (!request.kernel.empty() &&
        std::find(s.kernels.begin(), s.kernels.end(), request.kernel) == s.kernels.end())
      throw Error(ErrorCode::unsupported,
                  fmt::format("{}: kernel '{}' cannot run {}; expected one of {}", name(),
                              request.kernel, describe(op), fmt::join(s.kernels, ", ")));
    const std::vector<bool> fixed = fixed_inputs(op, request);

    const CDescriptor c(op);
    auto r = out_struct<qforge_c_plan_request>();
    r.device = static_cast<std::uint32_t>(request.device);
    r.kernel = request.kernel.empty() ? nullptr : request.kernel.c_str();
    r.weights = request.weights.empty() ? nullptr : request.weights.data();
    r.weight_count = static_cast<std::uint32_t>(request.weights.size());
    qforge_c_plan* raw = nullptr;
    {
      std::lock_guard lock(backend_->mutex);
      backend_->check(backend_->table->make_plan(backend_->backend, c.op(), &r, &raw), "make_plan");
    }
    if (raw == nullptr)
      throw Error(
          ErrorCode::internal,
          fmt::format("{}: make_plan returned no plan and no status for {}", name(), describe(op)));
    std::unique_ptr<qforge_c_plan, void (*)(qforge_c_plan*)> owned(raw,
                                                                   backend_->table->plan_destroy);
    auto info = out_struct<qforge_c_plan_info>();
    backend_->table->plan_info(raw, &info);
    std::string kernel = info.kernel != nullptr && *info.kernel != '\0' ? info.kernel
                         : request.kernel.empty()                       ? s.kernels.front()
                                                                        : request.kernel;
    const PlanConcurrency concurrency = info.concurrency == QFORGE_C_PLAN_CONCURRENT
                                            ? PlanConcurrency::concurrent
                                            : PlanConcurrency::serialized;
    auto plan = std::make_shared<CPlan>(backend_, raw, op, request.device, std::move(kernel),
                                        concurrency, fixed);
    owned.release();
    return plan;
  }

 private:
  int device_count() const {
    std::lock_guard lock(backend_->mutex);
    return static_cast<int>(backend_->table->device_count(backend_->backend));
  }

  // PlanRequest::weights checked as every backend checks it, so that a C plugin sees only
  // requests that fix weight operands.
  static std::vector<bool> fixed_inputs(const OpDesc& op, const PlanRequest& request) {
    const OpOperands operands = op_operands(op);
    std::vector<bool> fixed(operands.inputs.size(), false);
    const auto& w = request.weights;
    if (w.empty()) return fixed;
    if (w.size() != operands.inputs.size())
      throw Error(ErrorCode::invalid_argument,
                  fmt::format("{} plan: {} weight entries; expected none or one per input ({})",
                              to_string(op.op), w.size(), operands.inputs.size()));
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] == nullptr) continue;
      const OperandSpec& o = operands.inputs[i];
      if (o.role != OperandRole::weight)
        throw Error(ErrorCode::invalid_argument,
                    fmt::format("{} plan: input {} ('{}') is an {}, not a weight; expected a null "
                                "entry for it in PlanRequest::weights",
                                to_string(op.op), i, o.name, to_string(o.role)));
      fixed[i] = true;
    }
    return fixed;
  }

  static std::vector<const void*> with_optional(std::vector<const void*> inputs, bool present,
                                                const void* optional) {
    if (present) inputs.push_back(optional);
    return inputs;
  }

  // Runs a per-call op through the plan for (op, device 0, the plugin's kernel choice).
  void call(const OpDesc& op, const std::vector<const void*>& inputs,
            const std::vector<void*>& outputs) {
    std::shared_ptr<const Plan> plan;
    {
      std::string key = descriptor_key(op);
      std::lock_guard lock(cache_mutex_);
      if (auto it = call_plans_.find(key); it != call_plans_.end()) plan = it->second;
      if (!plan) {
        plan = this->plan(op, PlanRequest{0, {}, {}});
        // Workloads repeat a few descriptors; a bound keeps a sweep over shapes from growing it.
        if (call_plans_.size() >= kMaxCallPlans) call_plans_.clear();
        call_plans_.emplace(std::move(key), plan);
      }
    }
    plan->run(inputs, outputs);
  }

  static constexpr std::size_t kMaxCallPlans = 64;

  std::shared_ptr<CBackend> backend_;
  std::mutex cache_mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Plan>> call_plans_;
};

}  // namespace

std::shared_ptr<QuantizationOps> make_c_backend_ops(std::shared_ptr<CBackend> backend) {
  return std::make_shared<CPluginOps>(std::move(backend));
}

}  // namespace qforge::detail
