#include "testers/linear_tester.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>

#include "harness/random_data.h"
#include "harness/tolerances.h"
#include "qforge/plan.h"
#include "qforge/reference.h"

namespace qforge::conformance {

struct LinearTester::Weights {
  LinearDesc desc;
  std::vector<std::int8_t> wq;
  std::vector<float> bias;
  std::vector<float> x;
};

LinearTester::Weights LinearTester::make_weights(Rng& rng) const {
  Weights w{
      LinearDesc{m_, n_, k_, QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f), bias_},
      {},
      {},
      {}};
  if (per_channel_) {
    std::vector<float> scales(static_cast<std::size_t>(n_));
    for (auto& s : scales) s = static_cast<float>(log_uniform(rng, 1e-4, 1e-1));
    w.desc.w =
        QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, std::move(scales));
  } else {
    w.desc.w = QuantizationParams::per_tensor_symmetric(
        DType::int8, static_cast<float>(log_uniform(rng, 1e-4, 1e-1)));
  }
  w.wq.resize(static_cast<std::size_t>(n_ * k_));
  for (auto& v : w.wq) v = static_cast<std::int8_t>(uniform_int(rng, -127, 127));
  if (bias_) w.bias = normal_floats(rng, static_cast<std::size_t>(n_), 1.0);
  w.x = normal_floats(rng, static_cast<std::size_t>(m_ * k_), log_uniform(rng, 1e-2, 1e2));
  return w;
}

namespace {

float w_scale(const LinearDesc& d, std::int64_t n) {
  return d.w.scale(d.w.count() == 1 ? 0 : static_cast<std::size_t>(n));
}

// Sizes of the terms each float output is rounded from (compare.h): forward |C * sx * sw| +
// |bias|; backward the sums of |products| behind dX, dW and db.
std::vector<double> forward_magnitudes(const LinearDesc& d, const std::vector<std::byte>& xq,
                                       const std::vector<std::int8_t>& wq, float sx,
                                       const std::vector<float>& bias) {
  std::vector<double> mag(static_cast<std::size_t>(d.m * d.n));
  const auto* x = reinterpret_cast<const std::int8_t*>(xq.data());
  for (std::int64_t m = 0; m < d.m; ++m)
    for (std::int64_t n = 0; n < d.n; ++n) {
      std::int64_t c = 0;
      for (std::int64_t k = 0; k < d.k; ++k) c += std::int64_t{x[m * d.k + k]} * wq[n * d.k + k];
      mag[static_cast<std::size_t>(m * d.n + n)] =
          std::fabs(static_cast<double>(c) * sx * w_scale(d, n)) +
          (d.has_bias ? std::fabs(static_cast<double>(bias[n])) : 0.0);
    }
  return mag;
}

struct BackwardMagnitudes {
  std::vector<double> dx, dw, db;
};

BackwardMagnitudes backward_magnitudes(const LinearDesc& d, const std::vector<float>& dy,
                                       const std::vector<std::int8_t>& xq, float sx,
                                       const std::vector<std::int8_t>& wq) {
  BackwardMagnitudes mag{std::vector<double>(static_cast<std::size_t>(d.m * d.k)),
                         std::vector<double>(static_cast<std::size_t>(d.n * d.k)),
                         std::vector<double>(static_cast<std::size_t>(d.n))};
  for (std::int64_t m = 0; m < d.m; ++m)
    for (std::int64_t n = 0; n < d.n; ++n) {
      const double g = std::fabs(static_cast<double>(dy[m * d.n + n]));
      mag.db[n] += g;
      for (std::int64_t k = 0; k < d.k; ++k) {
        mag.dx[m * d.k + k] += g * std::abs(wq[n * d.k + k]) * w_scale(d, n);
        mag.dw[n * d.k + k] += g * std::abs(xq[m * d.k + k]) * sx;
      }
    }
  return mag;
}

}  // namespace

void LinearTester::test_forward(Target& target, Rng& rng) const {
  Weights w = make_weights(rng);
  const LinearDesc desc = w.desc;
  ExpectedOutput y{OutputSpec::floating("y", {m_, n_}, FloatType::f32, tolerance::kLinearForward),
                   {}};
  ExpectedOutput xq{OutputSpec::quantized("xq", {m_, k_}, DType::int8), {}};
  y.bytes.resize(y.spec.bytes());
  xq.bytes.resize(xq.spec.bytes());

  OpCase oc{OpDesc{OpKind::linear_forward, desc}};
  oc.label = describe(oc.op);
  std::optional<QuantizationParams> expected;
  run_reference(oc, [&] {
    expected = reference::linear_forward(
        desc, w.x.data(), w.wq.data(), bias_ ? w.bias.data() : nullptr,
        reinterpret_cast<std::int8_t*>(xq.bytes.data()), reinterpret_cast<float*>(y.bytes.data()));
  });
  if (expected) y.magnitude = forward_magnitudes(desc, xq.bytes, w.wq, expected->scale(), w.bias);
  oc.inputs = {{"x", to_bytes(w.x)}, {"wq", to_bytes(w.wq)}};
  if (bias_) oc.inputs.push_back({"bias", to_bytes(w.bias)});
  oc.outputs = {std::move(y), std::move(xq)};
  auto returned = std::make_shared<std::optional<QuantizationParams>>();
  const bool has_bias = bias_;
  oc.launches = {
      {"direct", [desc, has_bias, returned](QuantizationOps& ops, const std::vector<void*>& in,
                                            const std::vector<void*>& out) {
         *returned = ops.linear_forward(
             desc, static_cast<const float*>(in[0]), static_cast<const std::int8_t*>(in[1]),
             has_bias ? static_cast<const float*>(in[2]) : nullptr,
             static_cast<std::int8_t*>(out[1]), static_cast<float*>(out[0]));
       }}};
  // Each kernel through a plan; its x_scale is a host scalar here, so host-memory plugins only.
  oc.kernel_launches = [desc, has_bias, returned](const std::string& kernel) {
    LaunchFn fn = [desc, has_bias, kernel, returned](QuantizationOps& ops,
                                                     const std::vector<void*>& in,
                                                     const std::vector<void*>& out) {
      if (!ops.host_memory())
        throw LaunchUnavailable{"a plan of linear_forward with a host scalar x_scale"};
      const auto plan =
          ops.plan({OpKind::linear_forward, desc}, PlanRequest{ops.default_device(), kernel, {}});
      float x_scale = 0;
      std::vector<const void*> inputs{in[0], in[1]};
      if (has_bias) inputs.push_back(in[2]);
      const std::vector<void*> outputs{out[1], out[0], &x_scale};
      plan->run(inputs, outputs);
      *returned = QuantizationParams::per_tensor_symmetric(DType::int8, x_scale);
    };
    return std::vector<Launch>{{"plan", fn}};
  };
  oc.check_returned = [returned, expected]() -> ::testing::AssertionResult {
    if (!*returned || !expected || **returned == *expected) return ::testing::AssertionSuccess();
    std::ostringstream msg;
    msg.precision(9);
    msg << "returned Xq params " << (*returned)->to_string() << " (scale " << (*returned)->scale()
        << "), expected " << expected->to_string() << " (scale " << expected->scale() << ")";
    return ::testing::AssertionFailure() << msg.str();
  };
  run_case(target, oc);
}

void LinearTester::test_backward(Target& target, Rng& rng) const {
  Weights w = make_weights(rng);
  const LinearDesc desc = w.desc;
  // Xq and its params as the forward pass makes them.
  std::vector<std::int8_t> xq(static_cast<std::size_t>(m_ * k_));
  std::vector<float> y(static_cast<std::size_t>(m_ * n_));
  const QuantizationParams xq_params = reference::linear_forward(
      desc, w.x.data(), w.wq.data(), bias_ ? w.bias.data() : nullptr, xq.data(), y.data());
  const std::vector<float> dy =
      normal_floats(rng, static_cast<std::size_t>(m_ * n_), log_uniform(rng, 1e-3, 1e1));

  ExpectedOutput dx{
      OutputSpec::floating("dx", {m_, k_}, FloatType::f32, tolerance::kLinearBackward), {}};
  ExpectedOutput dw{
      OutputSpec::floating("dw", {n_, k_}, FloatType::f32, tolerance::kLinearBackward), {}};
  // db exists only with a bias (the reference leaves it alone otherwise, and takes null).
  ExpectedOutput db{OutputSpec::floating("db", {n_}, FloatType::f32, tolerance::kLinearBackward),
                    {}};
  for (auto* o : {&dx, &dw, &db}) o->bytes.resize(o->spec.bytes());
  const bool has_bias = bias_;

  OpCase oc{OpDesc{OpKind::linear_backward, desc}};
  oc.label = describe(oc.op);
  run_reference(oc, [&] {
    reference::linear_backward(desc, dy.data(), xq.data(), xq_params, w.wq.data(),
                               reinterpret_cast<float*>(dx.bytes.data()),
                               reinterpret_cast<float*>(dw.bytes.data()),
                               has_bias ? reinterpret_cast<float*>(db.bytes.data()) : nullptr);
  });
  BackwardMagnitudes mag = backward_magnitudes(desc, dy, xq, xq_params.scale(), w.wq);
  dx.magnitude = std::move(mag.dx);
  dw.magnitude = std::move(mag.dw);
  db.magnitude = std::move(mag.db);
  oc.inputs = {{"dy", to_bytes(dy)}, {"xq", to_bytes(xq)}, {"wq", to_bytes(w.wq)}};
  oc.outputs = {std::move(dx), std::move(dw)};
  if (has_bias) oc.outputs.push_back(std::move(db));
  oc.launches = {
      {"direct", [desc, xq_params, has_bias](QuantizationOps& ops, const std::vector<void*>& in,
                                             const std::vector<void*>& out) {
         ops.linear_backward(
             desc, static_cast<const float*>(in[0]), static_cast<const std::int8_t*>(in[1]),
             xq_params, static_cast<const std::int8_t*>(in[2]), static_cast<float*>(out[0]),
             static_cast<float*>(out[1]), has_bias ? static_cast<float*>(out[2]) : nullptr);
       }}};
  // Each kernel through a plan; its x_scale is a host scalar here, so host-memory plugins only.
  oc.kernel_launches = [desc, xq_params](const std::string& kernel) {
    LaunchFn fn = [desc, xq_params, kernel](QuantizationOps& ops, const std::vector<void*>& in,
                                            const std::vector<void*>& out) {
      if (!ops.host_memory())
        throw LaunchUnavailable{"a plan of linear_backward with a host scalar x_scale"};
      const auto plan =
          ops.plan({OpKind::linear_backward, desc}, PlanRequest{ops.default_device(), kernel, {}});
      const float x_scale = xq_params.scale();
      plan->run(std::vector<const void*>{in[0], in[1], &x_scale, in[2]}, out);
    };
    return std::vector<Launch>{{"plan", fn}};
  };
  run_case(target, oc);
}

}  // namespace qforge::conformance
