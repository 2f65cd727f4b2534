// linear_forward and linear_backward (LinearDesc): their calls, key, bucket words, probes,
// random inputs, magnitudes and work. linear_forward returns the activation scale it computed;
// linear_backward reads it (an array in the op table, QuantizationParams per call).
#include <cmath>
#include <cstring>

#include "accelerator/bucket_words.h"
#include "accelerator/key_builder.h"
#include "accelerator/probe_shapes.h"
#include "accelerator/random_values.h"
#include "op_table/kinds/example_params.h"
#include "op_table/op_hooks.h"
#include "qforge/checked_size.h"
#include "qforge/error.h"

namespace qforge {
namespace accel {

WorkloadKey make_key(OpKind op, const LinearDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(op), r);
  put_params(b, d.w, 2);
  b.put(d.has_bias ? 1 : 0, 1);
  b.dim(d.m);
  b.dim(d.n);
  b.dim(d.k);
  return b.key();
}

std::string bucket_words(OpKind, const LinearDesc& d) {
  return " w=" + params_text(d.w) + (d.has_bias ? " bias" : "") + upto("m", d.m) + upto("n", d.n) +
         upto("k", d.k);
}

}  // namespace accel

namespace op_table_detail {

std::vector<OpExample> linear_examples(OpKind op) {
  std::vector<OpExample> out;
  for (Granularity g : {Granularity::per_tensor, Granularity::per_channel}) {
    for (bool bias : {false, true}) {
      LinearDesc d{kExampleM, kExampleN, kExampleK,
                   example_params(DType::int8, g, kExampleN, kExampleK, 0), bias};
      std::string label = "w=s8 " + to_string(d.w.scheme()) + (bias ? " bias" : " no-bias");
      out.push_back({std::move(label), {op, std::move(d)}});
    }
  }
  return out;
}

OpWork linear_work(const OpDesc& op) {
  const auto& d = std::get<LinearDesc>(op.desc);
  const double products = op.op == OpKind::linear_forward ? 1 : 2;  // dX and dW
  return {products * static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k),
          OpWork::Unit::multiply_adds};
}

namespace {

using accel::HostArrays;
using accel::IoLayout;
using accel::Rng;
using Returned = std::optional<QuantizationParams>;

const float* f32(const void* p) { return static_cast<const float*>(p); }

struct LinearForwardCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    const auto& d = std::get<LinearDesc>(op.desc);
    return t.linear_forward(d, f32(in[0]), static_cast<const std::int8_t*>(in[1]),
                            d.has_bias ? f32(in[2]) : nullptr, static_cast<std::int8_t*>(out[0]),
                            static_cast<float*>(out[1]));
  }
};

struct LinearBackwardCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned& xq_params) {
    const auto& d = std::get<LinearDesc>(op.desc);
    if (!xq_params)
      throw Error(ErrorCode::internal, "accelerator: linear_backward called without xq params");
    t.linear_backward(d, f32(in[0]), static_cast<const std::int8_t*>(in[1]), *xq_params,
                      static_cast<const std::int8_t*>(in[2]), static_cast<float*>(out[0]),
                      static_cast<float*>(out[1]),
                      d.has_bias ? static_cast<float*>(out[2]) : nullptr);
    return std::nullopt;
  }
};

// linear_forward's x_scale, the output after xq and y.
void store_x_scale(const QuantizationParams& p, void* const* out) {
  const float s = p.scale();
  std::memcpy(out[2], &s, sizeof s);
}

// linear_backward's inputs dy, xq, x_scale, wq: the scale becomes the call's params.
QuantizationParams read_x_scale(const void* const* in, const void** call_in) {
  call_in[0] = in[0];
  call_in[1] = in[1];
  call_in[2] = in[3];
  return linear_activation_params(in[2]);
}

OpDesc probe(const OpDesc& real, int level, Rng& rng) {
  const auto& d = std::get<LinearDesc>(real.desc);
  const accel::Caps c = accel::caps_for(level, 0);
  LinearDesc p = d;
  p.m = accel::cap(d.m, c.m);
  p.n = accel::cap(d.n, c.n);
  p.k = accel::cap(d.k, c.last);
  p.w = accel::random_params(rng, d.w.dtype(), d.w.scheme(), {p.n, p.k});
  return OpDesc{real.op, p};
}

std::int64_t probe_macs(const OpDesc& real) noexcept {
  const auto& d = std::get<LinearDesc>(real.desc);
  return saturating_mul(saturating_mul(d.m, d.n), std::max<std::int64_t>(d.k, 1));
}

const QuantizationParams& narrow() {
  static const auto p = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  return p;
}

std::int64_t code_window(const LinearDesc& d) {
  return std::min<std::int64_t>(127, accel::overflow_window(d.k));
}

void forward_inputs(const OpDesc& op, const IoLayout& layout, Rng& rng, bool, HostArrays& h) {
  const auto& d = std::get<LinearDesc>(op.desc);
  h.inputs.push_back(
      accel::float_bytes(FloatType::f32, accel::normal_floats(rng, layout.inputs[0].count, 1.0)));
  h.inputs.push_back(accel::window_codes(rng, narrow(), {d.n, d.k}, code_window(d)));
  if (d.has_bias)
    h.inputs.push_back(
        accel::float_bytes(FloatType::f32, accel::normal_floats(rng, layout.inputs[2].count, 1.0)));
}

void backward_inputs(const OpDesc& op, const IoLayout& layout, Rng& rng, bool, HostArrays& h) {
  const auto& d = std::get<LinearDesc>(op.desc);
  const std::int64_t w = code_window(d);
  h.inputs.push_back(
      accel::float_bytes(FloatType::f32, accel::normal_floats(rng, layout.inputs[0].count, 1.0)));
  h.inputs.push_back(accel::window_codes(rng, narrow(), {d.m, d.k}, w));
  h.inputs.push_back(accel::window_codes(rng, narrow(), {d.n, d.k}, w));
  h.xq_params =
      QuantizationParams::per_tensor_symmetric(DType::int8, accel::log_uniform(rng, 1e-3, 0.1));
}

float f32_at(const std::vector<std::byte>& v, std::int64_t i) {
  float x = 0;
  std::memcpy(&x, v.data() + i * 4, 4);
  return x;
}

double i8(const std::vector<std::byte>& v, std::int64_t i) {
  return std::fabs(static_cast<double>(static_cast<std::int8_t>(v[static_cast<std::size_t>(i)])));
}

double w_scale(const LinearDesc& d, std::int64_t n) {
  return d.w.scale(d.w.count() == 1 ? 0 : static_cast<std::size_t>(n));
}

// Y: Σ|Xq·Wq|·sx·sw + |bias| (accelerator/magnitude.cpp).
void forward_magnitudes(const OpDesc& op, const HostArrays& h,
                        std::vector<std::vector<double>>& out) {
  if (!h.returned) return;
  const auto& d = std::get<LinearDesc>(op.desc);
  const double sx = h.returned->scale();
  const auto& xq = h.outputs[0];
  const auto& wq = h.inputs[1];
  out[1].assign(static_cast<std::size_t>(d.m * d.n), 0.0);
  for (std::int64_t m = 0; m < d.m; ++m)
    for (std::int64_t n = 0; n < d.n; ++n) {
      double s = 0;
      for (std::int64_t k = 0; k < d.k; ++k) s += i8(xq, m * d.k + k) * i8(wq, n * d.k + k);
      s = s * sx * w_scale(d, n);
      if (d.has_bias) s += std::fabs(f32_at(h.inputs[2], n));
      out[1][static_cast<std::size_t>(m * d.n + n)] = s;
    }
}

// dX: Σ|dY·W|, dW: Σ|dY·Xq·sx|, db: Σ|dY|.
void backward_magnitudes(const OpDesc& op, const HostArrays& h,
                         std::vector<std::vector<double>>& out) {
  if (!h.xq_params) return;
  const auto& d = std::get<LinearDesc>(op.desc);
  const double sx = h.xq_params->scale();
  const auto &dy = h.inputs[0], &xq = h.inputs[1], &wq = h.inputs[2];
  out[0].assign(static_cast<std::size_t>(d.m * d.k), 0.0);
  out[1].assign(static_cast<std::size_t>(d.n * d.k), 0.0);
  for (std::int64_t m = 0; m < d.m; ++m)
    for (std::int64_t n = 0; n < d.n; ++n) {
      const double g = std::fabs(static_cast<double>(f32_at(dy, m * d.n + n)));
      const double sw = w_scale(d, n);
      for (std::int64_t k = 0; k < d.k; ++k) {
        out[0][static_cast<std::size_t>(m * d.k + k)] += g * i8(wq, n * d.k + k) * sw;
        out[1][static_cast<std::size_t>(n * d.k + k)] += g * i8(xq, m * d.k + k) * sx;
      }
    }
  if (d.has_bias) {
    out[2].assign(static_cast<std::size_t>(d.n), 0.0);
    for (std::int64_t m = 0; m < d.m; ++m)
      for (std::int64_t n = 0; n < d.n; ++n)
        out[2][static_cast<std::size_t>(n)] +=
            std::fabs(static_cast<double>(f32_at(dy, m * d.n + n)));
  }
}

}  // namespace

extern const OpHooks kLinearForwardHooks = {
    .invoke = &invoke_on<LinearForwardCall>,
    .invoke_reference = &invoke_reference_on<LinearForwardCall>,
    .store_params = &store_x_scale,
    .probe = &probe,
    .probe_macs = &probe_macs,
    .random_inputs = &forward_inputs,
    .magnitudes = &forward_magnitudes};
extern const OpHooks kLinearBackwardHooks = {
    .invoke = &invoke_on<LinearBackwardCall>,
    .invoke_reference = &invoke_reference_on<LinearBackwardCall>,
    .params_input = &read_x_scale,
    .probe = &probe,
    .probe_macs = &probe_macs,
    .random_inputs = &backward_inputs,
    .magnitudes = &backward_magnitudes};

}  // namespace op_table_detail
}  // namespace qforge
