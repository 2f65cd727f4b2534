#include "testers/matmul_tester.h"

#include <algorithm>
#include <cmath>

#include "harness/random_data.h"
#include "harness/tolerances.h"
#include "qforge/reference.h"

namespace qforge::conformance {

struct MatmulTester::Operands {
  MatmulDesc desc;
  std::vector<std::byte> a, b;
  std::string pattern;  // for the label
};

namespace {

// Matmul scales are kept in [2^-10, 2^-3] so that sa * sb * C stays inside float16's range for
// the shapes here (|C| < 2^23): a float16 output that is mostly inf would test nothing.
QuantizationParams matmul_params(Rng& rng, DType dtype, const Scheme& scheme, const Shape& shape) {
  const std::size_t count = param_count(scheme, shape);
  std::vector<float> scales(count);
  for (auto& s : scales)
    s = chance(rng, 0.25) ? std::ldexp(1.0f, static_cast<int>(uniform_int(rng, -10, -3)))
                          : static_cast<float>(log_uniform(rng, 1.0 / 1024.0, 1.0 / 8.0));
  std::vector<std::int32_t> zero_points;
  if (scheme.mapping == Mapping::affine) {
    zero_points.resize(count);
    for (auto& z : zero_points)
      z = static_cast<std::int32_t>(uniform_int(rng, traits(dtype).qmin, traits(dtype).qmax));
  }
  return QuantizationParams(dtype, scheme, std::move(scales), std::move(zero_points));
}

// Codes for one operand. window > 0 keeps each code within `window` of its own zero point.
std::vector<std::byte> operand_codes(Rng& rng, const QuantizationParams& params, const Shape& shape,
                                     bool extremes, std::int32_t window, double extreme_share) {
  const DType dtype = params.dtype();
  const auto count = static_cast<std::size_t>(element_count(shape));
  if (extremes) return extreme_codes(rng, dtype, count, params.qmin(), params.qmax());
  std::vector<std::byte> out(storage_bytes(dtype, count));
  for (std::size_t i = 0; i < count; ++i) {
    std::int32_t lo = params.qmin(), hi = params.qmax();
    if (extreme_share > 0 && chance(rng, extreme_share)) {
      store_element(dtype, out.data(), i, chance(rng, 0.5) ? lo : hi);
      continue;
    }
    if (window > 0) {
      const std::int32_t z =
          params.zero_point(params.param_index(shape, static_cast<std::int64_t>(i)));
      lo = std::max(lo, z - window);
      hi = std::min(hi, z + window - 1);
    }
    store_element(dtype, out.data(), i, static_cast<std::int32_t>(uniform_int(rng, lo, hi)));
  }
  return out;
}

// Geometric mean of a params' scales: one number for the size of its outputs.
double typical_scale(const QuantizationParams& p) {
  double log_sum = 0;
  for (const float s : p.scales()) log_sum += std::log(static_cast<double>(s));
  return std::exp(log_sum / static_cast<double>(p.count()));
}

// RMS of the exact int32 product, or 0 when it overflows.
double product_rms(const MatmulDesc& desc, const std::vector<std::byte>& a,
                   const std::vector<std::byte>& b) {
  std::vector<std::int32_t> c(static_cast<std::size_t>(desc.m * desc.n));
  try {
    reference::matmul_integer(desc, a.data(), b.data(), c.data());
  } catch (const Error&) {
    return 0.0;
  }
  double sum = 0;
  for (const auto v : c) sum += static_cast<double>(v) * v;
  return c.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(c.size()));
}

// Per element of Y, the size of what the epilogue rounds: |C_j * sa * sb_j| summed over the
// groups of K that share a B scale (one for per-tensor / per-column B, one per block), plus
// |bias|. Y itself can cancel to almost nothing; its rounding errors scale with this.
std::vector<double> dequant_magnitudes(const MatmulDesc& d, const std::vector<std::byte>& a,
                                       const std::vector<std::byte>& b,
                                       const std::vector<float>& bias) {
  const Shape b_shape = d.b_shape();
  std::vector<double> mag(static_cast<std::size_t>(d.m * d.n));
  for (std::int64_t m = 0; m < d.m; ++m) {
    const std::size_t ap =
        d.a.scheme().granularity == Granularity::per_tensor ? 0 : static_cast<std::size_t>(m);
    const std::int64_t za = d.a.zero_point(ap);
    const double sa = d.a.scale(ap);
    for (std::int64_t n = 0; n < d.n; ++n) {
      double total = d.has_bias ? std::fabs(static_cast<double>(bias[n])) : 0.0;
      std::int64_t partial = 0;
      std::size_t group = 0;
      for (std::int64_t k = 0; k < d.k; ++k) {
        const std::int64_t bi = d.b_layout == MatrixLayout::kn ? k * d.n + n : n * d.k + k;
        const std::size_t bp = d.b.param_index(b_shape, bi);
        if (k > 0 && bp != group) {
          total += std::fabs(static_cast<double>(partial)) * sa * d.b.scale(group);
          partial = 0;
        }
        group = bp;
        const std::int64_t av =
            load_element(d.a.dtype(), a.data(), static_cast<std::size_t>(m * d.k + k)) - za;
        const std::int64_t bv =
            load_element(d.b.dtype(), b.data(), static_cast<std::size_t>(bi)) - d.b.zero_point(bp);
        partial += av * bv;
      }
      if (d.k > 0) total += std::fabs(static_cast<double>(partial)) * sa * d.b.scale(group);
      mag[static_cast<std::size_t>(m * d.n + n)] = total;
    }
  }
  return mag;
}

// B packed for the prepacked launch. It is packed for a different M on purpose: a packed B
// serves every M (ops.h). A plugin without any packed form (pack_weights throws unsupported,
// the default for device memory) makes the launch unavailable rather than failed.
std::shared_ptr<PackedWeights> pack(QuantizationOps& ops, const MatmulDesc& desc, const void* b) {
  MatmulDesc for_packing = desc;
  for_packing.m = desc.m + 3;
  try {
    auto packed = ops.pack_weights(for_packing, b);
    if (!packed) throw Error(ErrorCode::internal, ops.name() + ": pack_weights returned null");
    return packed;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::unsupported) throw LaunchUnavailable{e.what()};
    throw;
  }
}

}  // namespace

MatmulTester::Operands MatmulTester::make_operands(Rng& rng) const {
  const Scheme a_scheme = a_per_row_ ? Scheme{a_mapping_, Granularity::per_channel, 0}
                                     : Scheme{a_mapping_, Granularity::per_tensor};
  Scheme b_scheme{b_mapping_, b_granularity_};
  if (b_granularity_ == Granularity::per_channel)
    b_scheme.axis = b_layout_ == MatrixLayout::kn ? 1 : 0;
  if (b_granularity_ == Granularity::block) b_scheme.block_size = b_block_size_;
  const Shape a_shape{m_, k_};
  const Shape b_shape = b_layout_ == MatrixLayout::kn ? Shape{k_, n_} : Shape{n_, k_};
  QuantizationParams a = matmul_params(rng, a_dtype_, a_scheme, a_shape);
  QuantizationParams b = matmul_params(rng, b_dtype_, b_scheme, b_shape);
  Operands op{MatmulDesc{.m = m_,
                         .n = n_,
                         .k = k_,
                         .a = std::move(a),
                         .b = std::move(b),
                         .b_layout = b_layout_,
                         .has_bias = false,
                         .out_type = FloatType::f32,
                         .y = std::nullopt,
                         .requant_mode = RequantMode::float_multiplier},
              {},
              {},
              {}};
  const bool a_wide = traits(a_dtype_).bits > 8, b_wide = traits(b_dtype_).bits > 8;
  op.a = operand_codes(rng, op.desc.a, a_shape, extremes_, a_wide ? 2048 : 0, a_wide ? 0.01 : 0.0);
  op.b = operand_codes(rng, op.desc.b, b_shape, extremes_, b_wide ? 2048 : 0, 0.0);
  op.pattern = extremes_ ? "extreme codes" : "random codes";
  return op;
}

OpCase MatmulTester::matmul_integer_case(const MatmulDesc& desc, std::vector<std::byte> a,
                                         std::vector<std::byte> b, const std::string& pattern) {
  ExpectedOutput c{OutputSpec::int32("c", {desc.m, desc.n}), {}};
  c.bytes.resize(c.spec.bytes());
  OpCase oc{OpDesc{OpKind::matmul_integer, desc}};
  oc.label = describe(oc.op) + ", " + pattern;
  run_reference(oc, [&] {
    reference::matmul_integer(desc, a.data(), b.data(),
                              reinterpret_cast<std::int32_t*>(c.bytes.data()));
  });
  oc.inputs = {{"a", std::move(a)}, {"b", std::move(b)}};
  oc.outputs = {std::move(c)};
  oc.launches = {
      {"direct",
       [desc](QuantizationOps& ops, const std::vector<void*>& in, const std::vector<void*>& out) {
         ops.matmul_integer(desc, in[0], in[1], static_cast<std::int32_t*>(out[0]));
       }},
      {"prepacked",
       [desc](QuantizationOps& ops, const std::vector<void*>& in, const std::vector<void*>& out) {
         const auto packed = pack(ops, desc, in[1]);
         ops.matmul_integer_packed(desc, in[0], *packed, static_cast<std::int32_t*>(out[0]));
       }}};
  return oc;
}

OpCase MatmulTester::matmul_dequant_case(const MatmulDesc& desc, std::vector<std::byte> a,
                                         std::vector<std::byte> b, std::vector<float> bias,
                                         const std::string& pattern) {
  ExpectedOutput y{OutputSpec::floating("y", {desc.m, desc.n}, desc.out_type,
                                        tolerance::matmul_dequant(desc.out_type)),
                   {}};
  y.bytes.resize(y.spec.bytes());
  OpCase oc{OpDesc{OpKind::matmul_dequant, desc}};
  oc.label = describe(oc.op) + ", " + pattern;
  run_reference(oc, [&] {
    reference::matmul_dequant(desc, a.data(), b.data(), desc.has_bias ? bias.data() : nullptr,
                              y.bytes.data());
  });
  // Only computable when the operands fit the descriptor, which the reference just confirmed.
  if (oc.reference == ReferenceOutcome::ok) y.magnitude = dequant_magnitudes(desc, a, b, bias);
  oc.inputs = {{"a", std::move(a)}, {"b", std::move(b)}};
  if (desc.has_bias) oc.inputs.push_back({"bias", to_bytes(bias)});
  oc.outputs = {std::move(y)};
  oc.optional_capability = desc.out_type != FloatType::f32;
  oc.launches = {
      {"direct",
       [desc](QuantizationOps& ops, const std::vector<void*>& in, const std::vector<void*>& out) {
         ops.matmul_dequant(desc, in[0], in[1],
                            desc.has_bias ? static_cast<const float*>(in[2]) : nullptr, out[0]);
       }},
      {"prepacked",
       [desc](QuantizationOps& ops, const std::vector<void*>& in, const std::vector<void*>& out) {
         const auto packed = pack(ops, desc, in[1]);
         ops.matmul_dequant_packed(desc, in[0], *packed,
                                   desc.has_bias ? static_cast<const float*>(in[2]) : nullptr,
                                   out[0]);
       }}};
  return oc;
}

OpCase MatmulTester::matmul_dequant_at_run_case(const MatmulDesc& desc,
                                                const QuantizationParams& placeholder,
                                                std::vector<std::byte> a, std::vector<std::byte> b,
                                                std::vector<float> bias,
                                                const std::string& pattern) {
  ExpectedOutput y{OutputSpec::floating("y", {desc.m, desc.n}, desc.out_type,
                                        tolerance::matmul_dequant(desc.out_type)),
                   {}};
  y.bytes.resize(y.spec.bytes());
  MatmulDesc flagged = desc;
  flagged.a = placeholder;
  flagged.a_params_at_run = true;
  OpCase oc{OpDesc{OpKind::matmul_dequant, flagged}};
  oc.label = describe(oc.op) + ", run's A " + desc.a.to_string() + ", " + pattern;
  // The flagged op is the plain op on the run's values (reference.h), once the flag is allowed.
  run_reference(oc, [&] {
    reference::check_descriptor(oc.op);
    reference::matmul_dequant(desc, a.data(), b.data(), desc.has_bias ? bias.data() : nullptr,
                              y.bytes.data());
  });
  if (oc.reference == ReferenceOutcome::ok) y.magnitude = dequant_magnitudes(desc, a, b, bias);
  oc.inputs = {{"a", std::move(a)}, {"b", std::move(b)}};
  if (desc.has_bias) oc.inputs.push_back({"bias", to_bytes(bias)});
  oc.inputs.push_back({"a_scale", to_bytes(std::vector<float>{desc.a.scale(0)})});
  oc.inputs.push_back({"a_zero_point", to_bytes(std::vector<std::int32_t>{desc.a.zero_point(0)})});
  oc.outputs = {std::move(y)};
  oc.optional_capability = desc.out_type != FloatType::f32;
  // No per-call launch: the per-call ops take A's params from the descriptor and refuse the
  // flag. run_case launches plans of the op table's operands.
  return oc;
}

OpCase MatmulTester::qlinear_matmul_case(const MatmulDesc& desc, std::vector<std::byte> a,
                                         std::vector<std::byte> b, const std::string& pattern,
                                         std::vector<std::int32_t> bias) {
  const DType y_dtype = desc.y ? desc.y->dtype() : DType::uint8;
  ExpectedOutput y{OutputSpec::quantized("y", {desc.m, desc.n}, y_dtype), {}};
  y.bytes.resize(y.spec.bytes());
  OpCase oc{OpDesc{OpKind::qlinear_matmul, desc}};
  oc.label = describe(oc.op) + ", " + pattern;
  run_reference(oc, [&] {
    reference::qlinear_matmul(desc, a.data(), b.data(), desc.has_bias ? bias.data() : nullptr,
                              y.bytes.data());
  });
  oc.inputs = {{"a", std::move(a)}, {"b", std::move(b)}};
  if (desc.has_bias) oc.inputs.push_back({"bias", to_bytes(bias)});
  oc.outputs = {std::move(y)};
  oc.launches = {{"direct", [desc](QuantizationOps& ops, const std::vector<void*>& in,
                                   const std::vector<void*>& out) {
                    if (desc.has_bias)
                      ops.qlinear_matmul_bias(desc, in[0], in[1],
                                              static_cast<const std::int32_t*>(in[2]), out[0]);
                    else ops.qlinear_matmul(desc, in[0], in[1], out[0]);
                  }}};
  // ops.h has no packed call with an int32 bias (plans, which run_case launches too, pack it).
  if (!desc.has_bias)
    oc.launches.push_back({"prepacked", [desc](QuantizationOps& ops, const std::vector<void*>& in,
                                               const std::vector<void*>& out) {
                             const auto packed = pack(ops, desc, in[1]);
                             ops.qlinear_matmul_packed(desc, in[0], *packed, out[0]);
                           }});
  return oc;
}

void MatmulTester::test_matmul_integer(Target& target, Rng& rng) const {
  Operands op = make_operands(rng);
  run_case(target, matmul_integer_case(op.desc, std::move(op.a), std::move(op.b), op.pattern));
}

void MatmulTester::test_matmul_dequant(Target& target, Rng& rng) const {
  Operands op = make_operands(rng);
  op.desc.has_bias = bias_;
  op.desc.out_type = out_type_;
  // A bias of the outputs' own size, so that neither term hides an error in the other.
  std::vector<float> bias;
  if (bias_) {
    double sigma =
        product_rms(op.desc, op.a, op.b) * typical_scale(op.desc.a) * typical_scale(op.desc.b);
    if (!(sigma > 0)) sigma = 1.0;
    bias = normal_floats(rng, static_cast<std::size_t>(op.desc.n), sigma);
  }
  if (a_params_at_run_) {
    const QuantizationParams placeholder =
        random_params(rng, op.desc.a.dtype(), op.desc.a.scheme(), op.desc.a_shape());
    run_case(target, matmul_dequant_at_run_case(op.desc, placeholder, std::move(op.a),
                                                std::move(op.b), std::move(bias), op.pattern));
    return;
  }
  run_case(target, matmul_dequant_case(op.desc, std::move(op.a), std::move(op.b), std::move(bias),
                                       op.pattern));
}

void MatmulTester::test_qlinear_matmul(Target& target, Rng& rng) const {
  Operands op = make_operands(rng);
  MatmulDesc& d = op.desc;
  // Output scale: the typical |C| * sa * sb lands 16..96 steps from zy, so outputs spread over
  // the range and some saturate.
  const double rms = product_rms(d, op.a, op.b);
  double sy = typical_scale(d.a) * typical_scale(d.b) * (rms > 0 ? rms : 1.0) /
              uniform_real(rng, 16.0, 96.0);
  sy = std::clamp(sy, 1e-30, 1e30);
  d.y = QuantizationParams::per_tensor_affine(
      y_dtype_, static_cast<float>(sy),
      static_cast<std::int32_t>(uniform_int(rng, traits(y_dtype_).qmin, traits(y_dtype_).qmax)));
  d.requant_mode = requant_mode_;
  // An int32 bias of C's own size (at scale sa * sb[n]), so that neither hides the other.
  std::vector<std::int32_t> bias;
  d.has_bias = bias_;
  if (bias_) {
    const std::int64_t limit = std::clamp<std::int64_t>(
        static_cast<std::int64_t>(4.0 * (rms > 0 ? rms : 1.0)), 1, std::int64_t{1} << 24);
    bias.resize(static_cast<std::size_t>(d.n));
    for (auto& v : bias) v = static_cast<std::int32_t>(uniform_int(rng, -limit, limit));
  }
  d.activation = activation_;
  if (activation_ == ConvActivation::clamp) {
    // Bounds inside the output's real range, so that both clip some outputs.
    const auto& t = traits(y_dtype_);
    const double lo = (t.qmin - d.y->zero_point()) * sy, hi = (t.qmax - d.y->zero_point()) * sy;
    double u = uniform_real(rng, lo, hi), v = uniform_real(rng, lo, hi);
    if (u > v) std::swap(u, v);
    d.clamp_min = static_cast<float>(u);
    d.clamp_max = static_cast<float>(v);
  }
  run_case(target,
           qlinear_matmul_case(d, std::move(op.a), std::move(op.b), op.pattern, std::move(bias)));
}

}  // namespace qforge::conformance
