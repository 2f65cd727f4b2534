// The op calls: the dispatch hot path. Each call runs the plan of its exact descriptor, kept by
// its bucket's decision (Impl::plan): a cached call costs the workload key, one hash-map
// lookup, a descriptor compare and the plan's run, one indirect call into the winning plugin;
// no strings, no allocation, no state set on the plugin. The pointers of each op are listed in
// the order of its operands in the op table (op_table.h); optional ones only when present.
#include <array>
#include <cstdint>

#include "accelerator/accelerator_impl.h"
#include "log_format.h"
#include "qforge/error.h"

namespace qforge {
namespace {

template <std::size_t NI, std::size_t NO>
void run(const Plan& p, const std::array<const void*, NI>& in, const std::array<void*, NO>& out,
         std::size_t ni = NI, std::size_t no = NO) {
  p.run(std::span<const void* const>(in.data(), ni), std::span<void* const>(out.data(), no));
}

}  // namespace

void Accelerator::quantize(const QuantizeDesc& d, const void* x, void* q) {
  run(impl_->plan(OpKind::quantize, d), std::array<const void*, 1>{x}, std::array<void*, 1>{q});
}

void Accelerator::dequantize(const QuantizeDesc& d, const void* q, float* x) {
  run(impl_->plan(OpKind::dequantize, d), std::array<const void*, 1>{q}, std::array<void*, 1>{x});
}

void Accelerator::requantize(const RequantizeDesc& d, const std::int32_t* c, void* y) {
  run(impl_->plan(OpKind::requantize, d), std::array<const void*, 1>{c}, std::array<void*, 1>{y});
}

void Accelerator::matmul_integer(const MatmulDesc& d, const void* a, const void* b,
                                 std::int32_t* c) {
  run(impl_->plan(OpKind::matmul_integer, d), std::array<const void*, 2>{a, b},
      std::array<void*, 1>{c});
}

std::pair<const Plan*, bool> Accelerator::Impl::matmul_dequant_plan(const MatmulDesc& d) {
  constexpr OpKind op = OpKind::matmul_dequant;
  if (d.a_params_at_run)
    throw Error(ErrorCode::invalid_argument,
                "Accelerator::matmul_dequant: a_params_at_run is set, but this call takes A's "
                "params from the descriptor; expected a plan (Accelerator::prepare) run with "
                "a_scale and a_zero_point, or the flag cleared");
  if (d.a.scheme().granularity != Granularity::per_tensor) return {&plan(op, d), false};
  ++stats.dispatches;
  const accel::WorkloadKey key = accel::make_key(op, d, Residency::host);
  const auto it = memo.find(key);
  DecisionSlot& s = it != memo.end() ? *it->second
                                     : resolve(key, Workload{OpDesc{op, d}, Residency::host},
                                               /*dispatching=*/true, /*retune=*/false);
  if (!s.refuses_a_at_run) {
    if (const Plan* p = s.find_at_run(op, d)) [[likely]]
      return {p, true};
    MatmulDesc flagged = d;
    flagged.a_params_at_run = true;
    const Workload w{OpDesc{op, flagged}, Residency::host};
    std::string refusals;
    if (auto p = winner_plan(s, w, {}, refusals)) {
      ++stats.plans_made;
      return {&s.keep(op, flagged, std::move(p)), true};
    }
    log_format(LogLevel::debug,
               "accelerator: {}; matmul_dequant calls of this bucket get a plan per descriptor",
               refusals);
    s.refuses_a_at_run = true;
  }
  if (const Plan* p = s.find(op, d)) return {p, false};
  ++stats.plans_made;
  return {&s.keep(op, d, make_plan(s, Workload{OpDesc{op, d}, Residency::host}, {})), false};
}

void Accelerator::matmul_dequant(const MatmulDesc& d, const void* a, const void* b,
                                 const float* bias, void* y) {
  const auto [plan, at_run] = impl_->matmul_dequant_plan(d);
  if (!at_run) {
    run(*plan, std::array<const void*, 3>{a, b, bias}, std::array<void*, 1>{y}, d.has_bias ? 3 : 2);
    return;
  }
  // A's values follow the other inputs (op_table.h); the plan checks them.
  const float a_scale = d.a.scale();
  const std::int32_t a_zero_point = d.a.zero_point();
  if (d.has_bias)
    run(*plan, std::array<const void*, 5>{a, b, bias, &a_scale, &a_zero_point},
        std::array<void*, 1>{y});
  else
    run(*plan, std::array<const void*, 4>{a, b, &a_scale, &a_zero_point}, std::array<void*, 1>{y});
}

void Accelerator::qlinear_matmul(const MatmulDesc& d, const void* a, const void* b, void* y) {
  run(impl_->plan(OpKind::qlinear_matmul, d), std::array<const void*, 2>{a, b},
      std::array<void*, 1>{y});
}

void Accelerator::conv(OpKind op, const ConvDesc& d, const void* x, const void* w, const void* bias,
                       void* y) {
  if (op != OpKind::conv_integer && op != OpKind::qlinear_conv && op != OpKind::conv_dequant)
    throw Error(ErrorCode::invalid_argument,
                "Accelerator::conv: op " + std::string(to_string(op)) +
                    "; expected conv_integer, qlinear_conv or conv_dequant");
  run(impl_->plan(op, d), std::array<const void*, 3>{x, w, bias}, std::array<void*, 1>{y},
      d.bias == ConvBias::none ? 2 : 3);
}

QuantizationParams Accelerator::dynamic_quantize_linear(const DynamicQuantizeDesc& d,
                                                        const float* x, std::uint8_t* y) {
  float scale = 0;
  std::uint8_t zero_point = 0;
  run(impl_->plan(OpKind::dynamic_quantize_linear, d), std::array<const void*, 1>{x},
      std::array<void*, 3>{y, &scale, &zero_point});
  return QuantizationParams::per_tensor_affine(DType::uint8, scale, zero_point);
}

QuantizationParams Accelerator::linear_forward(const LinearDesc& d, const float* x,
                                               const std::int8_t* wq, const float* bias,
                                               std::int8_t* xq, float* y) {
  float x_scale = 0;
  run(impl_->plan(OpKind::linear_forward, d), std::array<const void*, 3>{x, wq, bias},
      std::array<void*, 3>{xq, y, &x_scale}, d.has_bias ? 3 : 2);
  return QuantizationParams::per_tensor_symmetric(DType::int8, x_scale);
}

void Accelerator::linear_backward(const LinearDesc& d, const float* dy, const std::int8_t* xq,
                                  const QuantizationParams& xq_params, const std::int8_t* wq,
                                  float* dx, float* dw, float* db) {
  // The plan reads the activation scale alone; the params must be what linear_forward returns.
  if (xq_params.dtype() != DType::int8 || xq_params.scheme().mapping != Mapping::symmetric ||
      xq_params.scheme().granularity != Granularity::per_tensor)
    throw Error(ErrorCode::invalid_argument,
                "linear_backward: xq params " + xq_params.to_string() +
                    "; expected int8 per_tensor symmetric (what linear_forward returns)");
  const float x_scale = xq_params.scale();
  run(impl_->plan(OpKind::linear_backward, d), std::array<const void*, 4>{dy, xq, &x_scale, wq},
      std::array<void*, 3>{dx, dw, db}, 4, d.has_bias ? 3 : 2);
}

}  // namespace qforge
