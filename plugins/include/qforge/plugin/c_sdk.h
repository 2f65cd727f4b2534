// Exposes a C++ backend through the C plugin boundary (c_api.h). A backend class that
// implements QuantizationOps (plans included: QuantizationOps::plan) adds, in exactly one
// source file:
//
//   QFORGE_DEFINE_C_PLUGIN(MyOps, "my_backend", "0.1.0")
//
// which exports qforge_plugin_c_entry() returning a table whose functions convert the C
// descriptors to qforge's C++ ones, call the backend, and turn every exception into a status
// object (a qforge::Error keeps its code). Nothing of C++ crosses the boundary, so the host may
// be built with another compiler or standard library than the plugin.
//
// A backend's availability and devices are read once, when the host creates the instance.
// Version 1 of the boundary serves host memory only: a backend whose host_memory() is false is
// refused at create_backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/ops.h"
#include "qforge/plan.h"
#include "qforge/plugin/c_api.h"

// The opaque types of c_api.h, as this SDK defines them (each plugin library has its own copy:
// symbols are hidden).
struct qforge_c_status {
  std::uint32_t code;
  std::string message;
};
struct qforge_c_backend {
  std::unique_ptr<qforge::QuantizationOps> ops;
  qforge::Availability availability;
  std::vector<qforge::DeviceInfo> devices;
};
struct qforge_c_plan {
  std::shared_ptr<const qforge::Plan> plan;
};

namespace qforge::plugin::c_sdk {

// ---- C descriptors to C++ ones ----

[[noreturn]] inline void malformed(const std::string& what) {
  throw Error(ErrorCode::invalid_argument, "C plugin boundary: " + what);
}

// A struct from the host that must hold `field` (version 1 fields: the host is never older).
template <class T>
const T& require(const void* p, std::size_t needed, const char* what) {
  if (p == nullptr) malformed(std::string(what) + " is NULL");
  const T& s = *static_cast<const T*>(p);
  if (s.struct_size < needed)
    malformed(std::string(what) + " has " + std::to_string(s.struct_size) +
              " bytes; version 1 has " + std::to_string(needed));
  return s;
}
#define QFORGE_C_SDK_REQUIRE(type, ptr, last_field, what) \
  ::qforge::plugin::c_sdk::require<type>(                 \
      ptr, offsetof(type, last_field) + sizeof(static_cast<type*>(nullptr)->last_field), what)

// An enumeration value from the host, or unsupported when this plugin does not know it.
template <class E>
E enum_value(std::uint32_t v, std::uint32_t count, const char* what) {
  if (v >= count)
    throw Error(ErrorCode::unsupported,
                std::string("C plugin boundary: ") + what + " " + std::to_string(v) +
                    " is newer than this plugin; expected below " + std::to_string(count));
  return static_cast<E>(v);
}

inline Shape shape_from(const std::int64_t* data, std::uint64_t rank) {
  if (rank > 0 && data == nullptr) malformed("shape of rank " + std::to_string(rank) + " is NULL");
  return Shape(data, data + rank);
}

inline QuantizationParams params_from(const qforge_c_params* c, const char* what) {
  const auto& p = QFORGE_C_SDK_REQUIRE(qforge_c_params, c, count, what);
  if (p.count == 0 || p.scales == nullptr || p.zero_points == nullptr)
    malformed(std::string(what) + ": expected at least one scale and zero point");
  Scheme scheme;
  scheme.mapping = enum_value<Mapping>(p.mapping, 3, "mapping");
  scheme.granularity = enum_value<Granularity>(p.granularity, 3, "granularity");
  scheme.axis = p.axis;
  scheme.block_size = p.block_size;
  return QuantizationParams(enum_value<DType>(p.dtype, kDTypeCount, "dtype"), scheme,
                            std::vector<float>(p.scales, p.scales + p.count),
                            std::vector<std::int32_t>(p.zero_points, p.zero_points + p.count));
}

inline std::optional<QuantizationParams> optional_params_from(const qforge_c_params* c,
                                                              const char* what) {
  if (c == nullptr) return std::nullopt;
  return params_from(c, what);
}

inline OpDesc op_from(const qforge_c_op* c) {
  const auto& op = QFORGE_C_SDK_REQUIRE(qforge_c_op, c, desc, "op");
  const OpKind kind = enum_value<OpKind>(op.kind, kOpKindCount, "op kind");
  switch (kind) {
    case OpKind::quantize:
    case OpKind::dequantize: {
      const auto& d =
          QFORGE_C_SDK_REQUIRE(qforge_c_quantize_desc, op.desc, float_type, "quantize descriptor");
      return {kind, QuantizeDesc{shape_from(d.shape, d.rank), params_from(d.params, "params"),
                                 enum_value<FloatType>(d.float_type, 3, "float type")}};
    }
    case OpKind::requantize: {
      const auto& d =
          QFORGE_C_SDK_REQUIRE(qforge_c_requantize_desc, op.desc, mode, "requantize descriptor");
      if (d.multiplier_count > 0 && d.multipliers == nullptr) malformed("multipliers are NULL");
      RequantizeDesc r;
      r.shape = shape_from(d.shape, d.rank);
      r.multipliers.assign(d.multipliers, d.multipliers + d.multiplier_count);
      r.axis = d.axis;
      r.out_dtype = enum_value<DType>(d.out_dtype, kDTypeCount, "dtype");
      r.out_zero_point = d.out_zero_point;
      r.mode = enum_value<RequantMode>(d.mode, 2, "requantization mode");
      return {kind, r};
    }
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul:
    case OpKind::matmul_weight_only: {
      const auto& d = QFORGE_C_SDK_REQUIRE(qforge_c_matmul_desc, op.desc, y, "matmul descriptor");
      MatmulDesc m{.m = d.m,
                   .n = d.n,
                   .k = d.k,
                   .a = params_from(d.a, "a params"),
                   .b = params_from(d.b, "b params")};
      m.b_layout = enum_value<MatrixLayout>(d.b_layout, 2, "matrix layout");
      m.has_bias = d.has_bias != 0;
      m.out_type = enum_value<FloatType>(d.out_type, 3, "float type");
      m.requant_mode = enum_value<RequantMode>(d.requant_mode, 2, "requantization mode");
      m.y = optional_params_from(d.y, "y params");
      if (QFORGE_C_HAS_FIELD(&d, qforge_c_matmul_desc, clamp_max)) {
        m.activation = enum_value<ConvActivation>(d.activation, 4, "activation");
        m.clamp_min = d.clamp_min;
        m.clamp_max = d.clamp_max;
      }
      if (QFORGE_C_HAS_FIELD(&d, qforge_c_matmul_desc, a_params_at_run))
        m.a_params_at_run = d.a_params_at_run != 0;
      return {kind, m};
    }
    case OpKind::dynamic_quantize_linear: {
      const auto& d = QFORGE_C_SDK_REQUIRE(qforge_c_dynamic_quantize_desc, op.desc, rank,
                                           "dynamic quantize descriptor");
      return {kind, DynamicQuantizeDesc{shape_from(d.shape, d.rank)}};
    }
    case OpKind::linear_forward:
    case OpKind::linear_backward: {
      const auto& d =
          QFORGE_C_SDK_REQUIRE(qforge_c_linear_desc, op.desc, has_bias, "linear descriptor");
      return {kind, LinearDesc{.m = d.m,
                               .n = d.n,
                               .k = d.k,
                               .w = params_from(d.w, "w params"),
                               .has_bias = d.has_bias != 0}};
    }
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant: {
      const auto& d =
          QFORGE_C_SDK_REQUIRE(qforge_c_conv_desc, op.desc, clamp_max, "conv descriptor");
      ConvDesc cd;
      cd.layout = enum_value<ConvLayout>(d.layout, 2, "conv layout");
      cd.n = d.n;
      cd.c = d.c;
      cd.h = d.h;
      cd.w = d.w;
      cd.out_channels = d.out_channels;
      cd.kernel_h = d.kernel_h;
      cd.kernel_w = d.kernel_w;
      cd.stride_h = d.stride_h;
      cd.stride_w = d.stride_w;
      cd.dilation_h = d.dilation_h;
      cd.dilation_w = d.dilation_w;
      cd.pad_top = d.pad_top;
      cd.pad_left = d.pad_left;
      cd.pad_bottom = d.pad_bottom;
      cd.pad_right = d.pad_right;
      cd.groups = d.groups;
      cd.x_params = params_from(d.x_params, "x params");
      cd.w_params = params_from(d.w_params, "w params");
      cd.bias = enum_value<ConvBias>(d.bias, 3, "conv bias");
      cd.y_params = optional_params_from(d.y_params, "y params");
      cd.requant_mode = enum_value<RequantMode>(d.requant_mode, 2, "requantization mode");
      cd.activation = enum_value<ConvActivation>(d.activation, 4, "activation");
      cd.clamp_min = d.clamp_min;
      cd.clamp_max = d.clamp_max;
      return {kind, cd};
    }
  }
  malformed("op kind " + std::to_string(op.kind));
}

// ---- exceptions to status objects ----

inline std::uint32_t code_to_c(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return QFORGE_C_ERROR_INVALID_ARGUMENT;
    case ErrorCode::shape_mismatch: return QFORGE_C_ERROR_SHAPE_MISMATCH;
    case ErrorCode::overflow: return QFORGE_C_ERROR_OVERFLOW;
    case ErrorCode::unsupported: return QFORGE_C_ERROR_UNSUPPORTED;
    case ErrorCode::unavailable: return QFORGE_C_ERROR_UNAVAILABLE;
    case ErrorCode::plugin_load: return QFORGE_C_ERROR_PLUGIN_LOAD;
    case ErrorCode::io: return QFORGE_C_ERROR_IO;
    case ErrorCode::corrupt_data: return QFORGE_C_ERROR_CORRUPT_DATA;
    case ErrorCode::backend: return QFORGE_C_ERROR_BACKEND;
    case ErrorCode::internal: return QFORGE_C_ERROR_INTERNAL;
  }
  return QFORGE_C_ERROR_INTERNAL;
}

// Returned when there is no memory for a status; never freed.
inline qforge_c_status* out_of_memory_status() noexcept {
  static qforge_c_status status{QFORGE_C_ERROR_INTERNAL, "out of memory in the plugin"};
  return &status;
}

// A status for the exception in flight. Called only inside a catch block.
inline qforge_c_status* current_exception_status() noexcept {
  try {
    try {
      throw;
    } catch (const Error& e) {
      return new qforge_c_status{code_to_c(e.code()), e.what()};
    } catch (const std::exception& e) {
      return new qforge_c_status{QFORGE_C_ERROR_INTERNAL, e.what()};
    } catch (...) {
      return new qforge_c_status{QFORGE_C_ERROR_INTERNAL, "unknown exception in the plugin"};
    }
  } catch (...) {
    return out_of_memory_status();  // no memory for the status itself
  }
}

// Runs f; NULL when it returns, the status of what it threw otherwise.
template <class F>
qforge_c_status* guarded(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (...) {
    return current_exception_status();
  }
}

// ---- the table ----

template <class Ops>
struct CPlugin {
  static std::uint32_t status_code(const qforge_c_status* s) { return s->code; }
  static const char* status_message(const qforge_c_status* s) { return s->message.c_str(); }
  static void status_release(qforge_c_status* s) {
    if (s != out_of_memory_status()) delete s;
  }

  static qforge_c_status* create_backend(qforge_c_backend** out) {
    *out = nullptr;
    return guarded([&] {
      auto b = std::make_unique<qforge_c_backend>();
      b->ops = std::make_unique<Ops>();
      if (!b->ops->host_memory())
        throw Error(ErrorCode::unsupported,
                    b->ops->name() +
                        " keeps data in device memory; version 1 of the C plugin "
                        "boundary serves host memory only");
      b->availability = b->ops->availability();
      if (b->availability.usable) b->devices = b->ops->devices();
      *out = b.release();
    });
  }
  static void destroy_backend(qforge_c_backend* b) { delete b; }

  static void availability(const qforge_c_backend* b, qforge_c_availability* out) {
    if (QFORGE_C_HAS_FIELD(out, qforge_c_availability, usable))
      out->usable = b->availability.usable ? 1 : 0;
    if (QFORGE_C_HAS_FIELD(out, qforge_c_availability, score)) out->score = b->availability.score;
    if (QFORGE_C_HAS_FIELD(out, qforge_c_availability, reason))
      out->reason = b->availability.reason.c_str();
  }
  static std::uint32_t device_count(const qforge_c_backend* b) {
    return static_cast<std::uint32_t>(b->devices.size());
  }
  static qforge_c_status* device_info(const qforge_c_backend* b, std::uint32_t index,
                                      qforge_c_device_info* out, qforge_c_property_fn property,
                                      void* user) {
    return guarded([&] {
      if (index >= b->devices.size())
        throw Error(ErrorCode::invalid_argument, "device " + std::to_string(index) +
                                                     "; expected below " +
                                                     std::to_string(b->devices.size()));
      const DeviceInfo& d = b->devices[index];
      if (QFORGE_C_HAS_FIELD(out, qforge_c_device_info, name)) out->name = d.name.c_str();
      if (QFORGE_C_HAS_FIELD(out, qforge_c_device_info, kind)) out->kind = d.kind.c_str();
      if (QFORGE_C_HAS_FIELD(out, qforge_c_device_info, memory_bytes))
        out->memory_bytes = d.memory_bytes;
      if (property != nullptr)
        for (const auto& [key, value] : d.properties) property(user, key.c_str(), value.c_str());
    });
  }
  static qforge_c_status* set_option(qforge_c_backend* b, const char* key, const char* value,
                                     std::uint32_t* known) {
    return guarded([&] { *known = b->ops->set_option(key, value) ? 1 : 0; });
  }

  static qforge_c_status* supports(const qforge_c_backend* b, const qforge_c_op* op,
                                   qforge_c_string_fn add_kernel, void* user) {
    return guarded([&] {
      const Support s = b->ops->supports(op_from(op));
      if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
      for (const auto& k : s.kernels) add_kernel(user, k.c_str());
    });
  }
  static qforge_c_status* make_plan(qforge_c_backend* b, const qforge_c_op* op,
                                    const qforge_c_plan_request* request, qforge_c_plan** out) {
    *out = nullptr;
    return guarded([&] {
      const auto& r =
          QFORGE_C_SDK_REQUIRE(qforge_c_plan_request, request, weight_count, "plan request");
      PlanRequest cpp;
      cpp.device = static_cast<int>(r.device);
      if (r.kernel != nullptr) cpp.kernel = r.kernel;
      if (r.weights != nullptr) cpp.weights.assign(r.weights, r.weights + r.weight_count);
      auto plan = std::make_unique<qforge_c_plan>();
      plan->plan = b->ops->plan(op_from(op), cpp);
      *out = plan.release();
    });
  }
  static void plan_info(const qforge_c_plan* p, qforge_c_plan_info* out) {
    if (QFORGE_C_HAS_FIELD(out, qforge_c_plan_info, kernel))
      out->kernel = p->plan->kernel().c_str();
    if (QFORGE_C_HAS_FIELD(out, qforge_c_plan_info, concurrency))
      out->concurrency = p->plan->concurrency() == PlanConcurrency::concurrent
                             ? QFORGE_C_PLAN_CONCURRENT
                             : QFORGE_C_PLAN_SERIALIZED;
  }
  static qforge_c_status* plan_run(const qforge_c_plan* p, const void* const* inputs,
                                   std::uint32_t input_count, void* const* outputs,
                                   std::uint32_t output_count) {
    return guarded([&] {
      p->plan->run(std::span<const void* const>(inputs, input_count),
                   std::span<void* const>(outputs, output_count));
    });
  }
  static void plan_destroy(qforge_c_plan* p) { delete p; }

  static const qforge_c_plugin* entry(std::uint32_t host_version, const char* name,
                                      const char* version) {
    static const qforge_c_plugin table = {QFORGE_C_API_VERSION,
                                          static_cast<std::uint32_t>(sizeof(qforge_c_plugin)),
                                          name,
                                          version,
                                          &status_code,
                                          &status_message,
                                          &status_release,
                                          &create_backend,
                                          &destroy_backend,
                                          &availability,
                                          &device_count,
                                          &device_info,
                                          &set_option,
                                          &supports,
                                          &make_plan,
                                          &plan_info,
                                          &plan_run,
                                          &plan_destroy};
    // Every host implements version 1; a newer host reads this table as version 1.
    return host_version >= 1 ? &table : nullptr;
  }
};

}  // namespace qforge::plugin::c_sdk

#define QFORGE_DEFINE_C_PLUGIN(OPS_CLASS, NAME, VERSION)                                          \
  extern "C" __attribute__((visibility("default"))) const qforge_c_plugin* qforge_plugin_c_entry( \
      uint32_t host_version) {                                                                    \
    return ::qforge::plugin::c_sdk::CPlugin<OPS_CLASS>::entry(host_version, NAME, VERSION);       \
  }
