#include "registry/deferred_ops.h"

#include "log_format.h"
#include "qforge/error.h"

namespace qforge::detail {

std::optional<std::string> deferred_identity(const OpenedPlugin& plugin) {
  // C plugins have no deferred form: their table is the whole contract.
  if (plugin.descriptor == nullptr || !plugin.library->has(QFORGE_PLUGIN_DEFERRED_IDENTITY_SYMBOL))
    return std::nullopt;
  auto identity = plugin.library->get<const char*()>(QFORGE_PLUGIN_DEFERRED_IDENTITY_SYMBOL);
  try {
    const char* text = identity();
    if (text == nullptr) return std::nullopt;
    return std::string(text);
  } catch (...) {
    return std::nullopt;
  }
}

DeferredOps::DeferredOps(OpenedPlugin plugin, std::filesystem::path file, std::string identity)
    : plugin_(std::move(plugin)),
      file_(std::move(file)),
      name_(plugin_.name()),
      version_(plugin_.version()),
      identity_(std::move(identity)) {}

DeferredOps::~DeferredOps() = default;

QuantizationOps* DeferredOps::created() const {
  std::call_once(once_, [this] {
    auto made = create_plugin_ops(plugin_, file_);
    if (auto* f = std::get_if<PluginFailure>(&made)) {
      failure_ = f->message;
      log_format(LogLevel::warn, "plugin {}: {}", to_string(f->kind), f->message);
      return;
    }
    real_ = std::move(std::get<std::shared_ptr<QuantizationOps>>(made));
    // The plugin reads its environment now; the fingerprint named what was there at load. A
    // program that changed it (or a driver replaced) in between is told so.
    if (const auto now = deferred_identity(plugin_); now && *now != identity_)
      log_format(LogLevel::warn,
                 "plugin '{}' was created on first use, and its identity (the devices, drivers "
                 "and variables it reads) changed since it was loaded from {}; tuning-cache "
                 "decisions are keyed by the identity at load: keep the environment fixed "
                 "between loading plugins and using them",
                 name_, file_.string());
    log_format(LogLevel::debug, "created deferred plugin '{}' {} on first use", name_, version_);
  });
  return real_.get();
}

QuantizationOps& DeferredOps::real() const {
  if (QuantizationOps* ops = created()) return *ops;
  throw Error(ErrorCode::unavailable, failure_);
}

Availability DeferredOps::availability() const {
  if (QuantizationOps* ops = created()) return ops->availability();
  return {false, 0, failure_};
}

std::vector<DeviceInfo> DeferredOps::devices() const {
  if (QuantizationOps* ops = created()) return ops->devices();
  return {};
}

int DeferredOps::default_device() const {
  if (QuantizationOps* ops = created()) return ops->default_device();
  return 0;
}

bool DeferredOps::host_memory() const {
  if (QuantizationOps* ops = created()) return ops->host_memory();
  return true;
}

Support DeferredOps::supports(const OpDesc& op, int device) const {
  if (QuantizationOps* ops = created()) return ops->supports(op, device);
  return Support::no(failure_);
}

std::shared_ptr<Buffer> DeferredOps::allocate(std::size_t bytes) { return real().allocate(bytes); }
void DeferredOps::copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                                 std::size_t bytes) {
  real().copy_to_device(dst, dst_offset, src, bytes);
}
void DeferredOps::copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                               std::size_t bytes) {
  real().copy_to_host(dst, src, src_offset, bytes);
}
void DeferredOps::synchronize() { real().synchronize(); }
bool DeferredOps::set_option(std::string_view key, std::string_view value) {
  return real().set_option(key, value);
}
void DeferredOps::quantize(const QuantizeDesc& desc, const void* x, void* q) {
  real().quantize(desc, x, q);
}
void DeferredOps::dequantize(const QuantizeDesc& desc, const void* q, float* x) {
  real().dequantize(desc, q, x);
}
void DeferredOps::requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) {
  real().requantize(desc, c, y);
}
void DeferredOps::matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                                 std::int32_t* c) {
  real().matmul_integer(desc, a, b, c);
}
void DeferredOps::matmul_dequant(const MatmulDesc& desc, const void* a, const void* b,
                                 const float* bias, void* y) {
  real().matmul_dequant(desc, a, b, bias, y);
}
void DeferredOps::qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) {
  real().qlinear_matmul(desc, a, b, y);
}
void DeferredOps::qlinear_matmul_bias(const MatmulDesc& desc, const void* a, const void* b,
                                      const std::int32_t* bias, void* y) {
  real().qlinear_matmul_bias(desc, a, b, bias, y);
}
std::shared_ptr<PackedWeights> DeferredOps::pack_weights(const MatmulDesc& desc, const void* b) {
  return real().pack_weights(desc, b);
}
void DeferredOps::matmul_integer_packed(const MatmulDesc& desc, const void* a,
                                        const PackedWeights& b, std::int32_t* c) {
  real().matmul_integer_packed(desc, a, b, c);
}
void DeferredOps::matmul_dequant_packed(const MatmulDesc& desc, const void* a,
                                        const PackedWeights& b, const float* bias, void* y) {
  real().matmul_dequant_packed(desc, a, b, bias, y);
}
void DeferredOps::qlinear_matmul_packed(const MatmulDesc& desc, const void* a,
                                        const PackedWeights& b, void* y) {
  real().qlinear_matmul_packed(desc, a, b, y);
}
void DeferredOps::conv(OpKind op, const ConvDesc& desc, const void* x, const void* w,
                       const void* bias, void* y) {
  real().conv(op, desc, x, w, bias, y);
}
void DeferredOps::matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b,
                                     const float* bias, float* y) {
  real().matmul_weight_only(desc, a, b, bias, y);
}
std::shared_ptr<const Plan> DeferredOps::plan(const OpDesc& op, const PlanRequest& request) {
  // The created object's plan (its own, or the default one serialised on that object), so a
  // plan never depends on this proxy.
  return real().plan(op, request);
}
QuantizationParams DeferredOps::dynamic_quantize_linear(const DynamicQuantizeDesc& desc,
                                                        const float* x, std::uint8_t* y) {
  return real().dynamic_quantize_linear(desc, x, y);
}
QuantizationParams DeferredOps::linear_forward(const LinearDesc& desc, const float* x,
                                               const std::int8_t* wq, const float* bias,
                                               std::int8_t* xq, float* y) {
  return real().linear_forward(desc, x, wq, bias, xq, y);
}
void DeferredOps::linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                                  const QuantizationParams& xq_params, const std::int8_t* wq,
                                  float* dx, float* dw, float* db) {
  real().linear_backward(desc, dy, xq, xq_params, wq, dx, dw, db);
}

}  // namespace qforge::detail
