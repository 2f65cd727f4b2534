// The op calls: the dispatch hot path. A cached decision costs a key built from the descriptor
// (a few shifts), one hash-map lookup, selecting the device and kernel on the plugin when
// another decision was bound there last, and the plugin's own call: no strings, no JSON, no
// allocation. Everything else (first use of a bucket, device staging, a winner refusing one
// shape of its bucket) goes to slow_call.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <type_traits>

#include "accelerator/accelerator_impl.h"
#include "log_format.h"
#include "qforge/error.h"

namespace qforge {

template <class Result, class Desc, class Call, std::size_t NI, std::size_t NO>
Result Accelerator::Impl::dispatch(OpKind op, const Desc& d, Call&& call,
                                   const std::array<const void*, NI>& in,
                                   const std::array<void*, NO>& out, const QuantizationParams* xq) {
  ++stats.dispatches;
  DecisionSlot& s = slot(op, d);
  bool refused = false;
  if (s.host_memory) {
    // set_kernel is skipped when this decision is still bound: a plugin's set_kernel may look
    // the name up or copy it, which costs more than the rest of the dispatch. If someone else
    // selected another kernel meanwhile, the call still computes the same result (every kernel
    // is exact), and one that refuses the shape is caught below and the binding redone.
    accel::PluginState& ps = plugins[s.plugin];
    for (int attempt = 0; attempt < 2 && !refused; ++attempt) {
      const bool was_bound = ps.bound_slot == s.serial;
      if (!was_bound) {
        accel::bind(*s.ops, s.device, s.kernel);
        ps.bound_slot = s.serial;
      }
      try {
        return call(*s.ops);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;
        ps.bound_slot = 0;
        refused = !was_bound;  // bound just now and still refused: the shape itself
      }
    }
  }
  auto r = slow_call(s, OpDesc{op, d}, in.data(), out.data(),
                     xq ? std::optional<QuantizationParams>(*xq) : std::nullopt, refused);
  if constexpr (!std::is_void_v<Result>) return *r;
}

std::optional<QuantizationParams> Accelerator::Impl::slow_call(
    DecisionSlot& s, const OpDesc& op, const void* const* in, void* const* out,
    const std::optional<QuantizationParams>& xq, bool winner_refused) {
  const accel::IoLayout layout = accel::io_layout(op);
  unbind_all();  // this path binds plugins itself
  if (!winner_refused) {
    // A device winner with host-resident data: copy in, run, copy back.
    try {
      accel::bind(*s.ops, s.device, s.kernel);
      s.staging.reserve(*s.ops, layout);
      s.staging.upload_inputs(*s.ops, layout, in);
      auto r = accel::invoke(*s.ops, op, s.staging.inputs(), s.staging.outputs(), xq);
      s.staging.download_outputs(*s.ops, layout, out);
      return r;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unsupported) throw;
    }
  }
  // The winner refused this shape (buckets group shapes; a plugin may take K <= some bound, or
  // tile multiples only). Run it on the next candidate that accepts it, in measured order, then
  // by availability score.
  ++stats.unsupported_retries;
  std::vector<CandidateId> order = s.ranking;
  const accel::Enumeration e = accel::enumerate_candidates(op, plugins, options.policy);
  for (const auto& c : e.candidates) order.push_back(c.id);
  for (const CandidateId& id : order) {
    if (id == s.id) continue;
    const auto it = std::find_if(e.candidates.begin(), e.candidates.end(),
                                 [&](const accel::Candidate& c) { return c.id == id; });
    if (it == e.candidates.end()) continue;  // does not accept this descriptor
    QuantizationOps& ops = *it->ops;
    log_format(LogLevel::debug, "accelerator: {} refused {}; running it on {}", s.id.label(),
               describe(op), id.label());
    accel::bind(ops, id.device, KernelChoice{id.kernel});
    if (it->host_memory) return accel::invoke(ops, op, in, out, xq);
    accel::DeviceArrays dev;
    dev.reserve(ops, layout);
    dev.upload_inputs(ops, layout, in);
    auto r = accel::invoke(ops, op, dev.inputs(), dev.outputs(), xq);
    dev.download_outputs(ops, layout, out);
    return r;
  }
  accel::throw_no_candidate(op, e);
}

void Accelerator::quantize(const QuantizeDesc& d, const void* x, void* q) {
  impl_->dispatch<void>(
      OpKind::quantize, d, [&](QuantizationOps& o) { o.quantize(d, x, q); },
      std::array<const void*, 1>{x}, std::array<void*, 1>{q}, nullptr);
}

void Accelerator::dequantize(const QuantizeDesc& d, const void* q, float* x) {
  impl_->dispatch<void>(
      OpKind::dequantize, d, [&](QuantizationOps& o) { o.dequantize(d, q, x); },
      std::array<const void*, 1>{q}, std::array<void*, 1>{x}, nullptr);
}

void Accelerator::requantize(const RequantizeDesc& d, const std::int32_t* c, void* y) {
  impl_->dispatch<void>(
      OpKind::requantize, d, [&](QuantizationOps& o) { o.requantize(d, c, y); },
      std::array<const void*, 1>{c}, std::array<void*, 1>{y}, nullptr);
}

void Accelerator::matmul_integer(const MatmulDesc& d, const void* a, const void* b,
                                 std::int32_t* c) {
  impl_->dispatch<void>(
      OpKind::matmul_integer, d, [&](QuantizationOps& o) { o.matmul_integer(d, a, b, c); },
      std::array<const void*, 2>{a, b}, std::array<void*, 1>{c}, nullptr);
}

void Accelerator::matmul_dequant(const MatmulDesc& d, const void* a, const void* b,
                                 const float* bias, void* y) {
  impl_->dispatch<void>(
      OpKind::matmul_dequant, d, [&](QuantizationOps& o) { o.matmul_dequant(d, a, b, bias, y); },
      std::array<const void*, 3>{a, b, bias}, std::array<void*, 1>{y}, nullptr);
}

void Accelerator::qlinear_matmul(const MatmulDesc& d, const void* a, const void* b, void* y) {
  impl_->dispatch<void>(
      OpKind::qlinear_matmul, d, [&](QuantizationOps& o) { o.qlinear_matmul(d, a, b, y); },
      std::array<const void*, 2>{a, b}, std::array<void*, 1>{y}, nullptr);
}

void Accelerator::conv(OpKind op, const ConvDesc& d, const void* x, const void* w, const void* bias,
                       void* y) {
  impl_->dispatch<void>(
      op, d, [&](QuantizationOps& o) { o.conv(op, d, x, w, bias, y); },
      std::array<const void*, 3>{x, w, bias}, std::array<void*, 1>{y}, nullptr);
}

QuantizationParams Accelerator::dynamic_quantize_linear(const DynamicQuantizeDesc& d,
                                                        const float* x, std::uint8_t* y) {
  return impl_->dispatch<QuantizationParams>(
      OpKind::dynamic_quantize_linear, d,
      [&](QuantizationOps& o) { return o.dynamic_quantize_linear(d, x, y); },
      std::array<const void*, 1>{x}, std::array<void*, 1>{y}, nullptr);
}

QuantizationParams Accelerator::linear_forward(const LinearDesc& d, const float* x,
                                               const std::int8_t* wq, const float* bias,
                                               std::int8_t* xq, float* y) {
  return impl_->dispatch<QuantizationParams>(
      OpKind::linear_forward, d,
      [&](QuantizationOps& o) { return o.linear_forward(d, x, wq, bias, xq, y); },
      std::array<const void*, 3>{x, wq, bias}, std::array<void*, 2>{xq, y}, nullptr);
}

void Accelerator::linear_backward(const LinearDesc& d, const float* dy, const std::int8_t* xq,
                                  const QuantizationParams& xq_params, const std::int8_t* wq,
                                  float* dx, float* dw, float* db) {
  impl_->dispatch<void>(
      OpKind::linear_backward, d,
      [&](QuantizationOps& o) { o.linear_backward(d, dy, xq, xq_params, wq, dx, dw, db); },
      std::array<const void*, 3>{dy, xq, wq}, std::array<void*, 3>{dx, dw, db}, &xq_params);
}

}  // namespace qforge
