#include "testers/weight_only_tester.h"

#include <cmath>

#include "harness/random_data.h"
#include "harness/tolerances.h"
#include "qforge/reference.h"

namespace qforge::conformance {
namespace {

// Per element of Y: sum_k |A[m, k] * w[n, k]| + |bias[n]|, the size of what the sum rounds.
std::vector<double> magnitudes(const MatmulDesc& d, const std::vector<float>& a,
                               const std::vector<std::byte>& b, const std::vector<float>& bias) {
  const Shape shape = d.b_shape();
  std::vector<double> w(static_cast<std::size_t>(d.n * d.k));
  for (std::int64_t n = 0; n < d.n; ++n)
    for (std::int64_t k = 0; k < d.k; ++k) {
      const std::int64_t flat = d.b_layout == MatrixLayout::kn ? k * d.n + n : n * d.k + k;
      const std::size_t p = d.b.param_index(shape, flat);
      w[static_cast<std::size_t>(n * d.k + k)] =
          std::fabs(static_cast<double>(
              load_element(d.b.dtype(), b.data(), static_cast<std::size_t>(flat)) -
              d.b.zero_point(p))) *
          d.b.scale(p);
    }
  std::vector<double> mag(static_cast<std::size_t>(d.m * d.n));
  for (std::int64_t m = 0; m < d.m; ++m)
    for (std::int64_t n = 0; n < d.n; ++n) {
      double t = d.has_bias ? std::fabs(static_cast<double>(bias[static_cast<std::size_t>(n)])) : 0;
      for (std::int64_t k = 0; k < d.k; ++k)
        t += std::fabs(static_cast<double>(a[static_cast<std::size_t>(m * d.k + k)])) *
             w[static_cast<std::size_t>(n * d.k + k)];
      mag[static_cast<std::size_t>(m * d.n + n)] = t;
    }
  return mag;
}

}  // namespace

OpCase WeightOnlyTester::weight_only_case(const MatmulDesc& desc, std::vector<float> a,
                                          std::vector<std::byte> b, std::vector<float> bias) {
  ExpectedOutput y{
      OutputSpec::floating("y", {desc.m, desc.n}, FloatType::f32, tolerance::kWeightOnly), {}};
  y.bytes.resize(y.spec.bytes());
  OpCase oc{OpDesc{OpKind::matmul_weight_only, desc}};
  oc.label = describe(oc.op);
  run_reference(oc, [&] {
    reference::matmul_weight_only(desc, a.data(), b.data(), desc.has_bias ? bias.data() : nullptr,
                                  reinterpret_cast<float*>(y.bytes.data()));
  });
  if (oc.reference == ReferenceOutcome::ok) y.magnitude = magnitudes(desc, a, b, bias);
  oc.inputs = {{"a", to_bytes(a)}, {"b", std::move(b)}};
  if (desc.has_bias) oc.inputs.push_back({"bias", to_bytes(bias)});
  oc.outputs = {std::move(y)};
  oc.launches = {
      {"direct",
       [desc](QuantizationOps& ops, const std::vector<void*>& in, const std::vector<void*>& out) {
         ops.matmul_weight_only(desc, static_cast<const float*>(in[0]), in[1],
                                desc.has_bias ? static_cast<const float*>(in[2]) : nullptr,
                                static_cast<float*>(out[0]));
       }}};
  return oc;
}

void WeightOnlyTester::test(Target& target, Rng& rng) const {
  const Shape b_shape = b_layout_ == MatrixLayout::kn ? Shape{k_, n_} : Shape{n_, k_};
  Scheme scheme{b_mapping_, b_granularity_, b_layout_ == MatrixLayout::kn ? 1 : 0, b_block_size_};
  const std::size_t count = param_count(scheme, b_shape);
  std::vector<float> scales(count);
  for (auto& s : scales) s = static_cast<float>(log_uniform(rng, 1.0 / 256.0, 1.0));
  std::vector<std::int32_t> zero_points;
  if (b_mapping_ == Mapping::affine)
    for (std::size_t i = 0; i < count; ++i)
      zero_points.push_back(static_cast<std::int32_t>(
          uniform_int(rng, traits(b_dtype_).qmin, traits(b_dtype_).qmax)));
  QuantizationParams b_params(b_dtype_, scheme, std::move(scales), std::move(zero_points));
  MatmulDesc d{m_,           n_,
               k_,           QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
               b_params,     b_layout_,
               bias_,        FloatType::f32,
               std::nullopt, RequantMode::float_multiplier};
  auto a = normal_floats(rng, static_cast<std::size_t>(m_ * k_), 1.0);
  auto b = random_codes(rng, b_dtype_, static_cast<std::size_t>(n_ * k_), b_params.qmin(),
                        b_params.qmax());
  std::vector<float> bias;
  if (bias_) bias = normal_floats(rng, static_cast<std::size_t>(n_), 1.0);
  run_case(target, weight_only_case(d, std::move(a), std::move(b), std::move(bias)));
}

}  // namespace qforge::conformance
