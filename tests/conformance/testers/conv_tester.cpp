#include "testers/conv_tester.h"

#include <cmath>

#include "harness/random_data.h"
#include "harness/tolerances.h"
#include "qforge/reference.h"

namespace qforge::conformance {
namespace {

// Affine params with a random zero point for unsigned types (activations, ONNX's u8 weights),
// symmetric or affine at random for signed ones: ONNX allows any zero point for either.
QuantizationParams conv_params(Rng& rng, DType t, bool per_channel, std::int64_t channels) {
  const bool affine = !traits(t).is_signed || chance(rng, 0.5);
  const Scheme scheme{affine ? Mapping::affine : Mapping::symmetric,
                      per_channel ? Granularity::per_channel : Granularity::per_tensor, 0};
  const std::size_t count = per_channel ? static_cast<std::size_t>(channels) : 1;
  std::vector<float> scales(count);
  for (auto& s : scales) s = static_cast<float>(log_uniform(rng, 1.0 / 256, 1.0 / 4));
  std::vector<std::int32_t> zps;
  if (affine)
    for (std::size_t i = 0; i < count; ++i)
      zps.push_back(static_cast<std::int32_t>(uniform_int(rng, traits(t).qmin, traits(t).qmax)));
  return QuantizationParams(t, scheme, std::move(scales), std::move(zps));
}

std::vector<std::byte> codes(Rng& rng, DType t, const Shape& shape) {
  return random_codes(rng, t, static_cast<std::size_t>(element_count(shape)), traits(t).qmin,
                      traits(t).qmax);
}

}  // namespace

void ConvGeometry::apply(ConvDesc& d) const {
  d.layout = layout;
  d.n = n;
  d.c = c;
  d.h = h;
  d.w = w;
  d.out_channels = o;
  d.kernel_h = kh;
  d.kernel_w = kw;
  d.stride_h = stride_h;
  d.stride_w = stride_w;
  d.dilation_h = dilation_h;
  d.dilation_w = dilation_w;
  d.pad_top = pad_top;
  d.pad_left = pad_left;
  d.pad_bottom = pad_bottom;
  d.pad_right = pad_right;
  d.groups = groups;
  apply_auto_pad(d, auto_pad);
}

void ConvTester::test(OpKind op, Target& target, Rng& rng) const {
  ConvDesc d;
  geometry_.apply(d);
  d.x_params = conv_params(rng, x_dtype_, false, 1);
  d.w_params = conv_params(rng, w_dtype_, w_per_channel_, d.out_channels);
  d.bias = op == OpKind::conv_integer ? ConvBias::none : bias_;
  d.activation = op == OpKind::conv_integer ? ConvActivation::none : activation_;
  if (d.activation == ConvActivation::clamp) {
    const double a = uniform_real(rng, -3.0, 3.0), b = uniform_real(rng, -3.0, 3.0);
    d.clamp_min = static_cast<float>(std::min(a, b));
    d.clamp_max = static_cast<float>(std::max(a, b));
  }
  const Shape xs = d.x_shape(), ws = d.w_shape(), ys = d.y_shape();
  std::vector<std::byte> x = codes(rng, x_dtype_, xs), w = codes(rng, w_dtype_, ws);

  // The accumulator's spread: sqrt(reduction) products of centered codes of about 74 RMS each
  // (uniform over 256 codes), in real units sx * sw.
  const double spread = std::sqrt(static_cast<double>(std::max<std::int64_t>(d.reduction(), 1))) *
                        74.0 * 74.0 * d.x_params.scale() * d.w_params.scale(0);
  std::vector<std::byte> bias;
  if (d.bias == ConvBias::int32) {
    std::vector<std::int32_t> b(static_cast<std::size_t>(d.out_channels));
    const auto limit = static_cast<std::int64_t>(
        std::sqrt(static_cast<double>(std::max<std::int64_t>(d.reduction(), 1))) * 74.0 * 74.0);
    for (auto& v : b) v = static_cast<std::int32_t>(uniform_int(rng, -limit, limit));
    bias = to_bytes(b);
  } else if (d.bias == ConvBias::f32) {
    bias = to_bytes(normal_floats(rng, static_cast<std::size_t>(d.out_channels), spread));
  }
  if (op == OpKind::qlinear_conv) {
    const float sy = static_cast<float>(std::max(spread, 1e-6) / 40.0);
    d.y_params = traits(y_dtype_).is_signed && chance(rng, 0.5)
                     ? QuantizationParams::per_tensor_symmetric(y_dtype_, sy)
                     : QuantizationParams::per_tensor_affine(
                           y_dtype_, sy,
                           static_cast<std::int32_t>(
                               uniform_int(rng, traits(y_dtype_).qmin, traits(y_dtype_).qmax)));
    d.requant_mode = mode_;
  }

  ExpectedOutput y{op == OpKind::conv_integer ? OutputSpec::int32("y", ys)
                   : op == OpKind::qlinear_conv
                       ? OutputSpec::quantized("y", ys, y_dtype_)
                       : OutputSpec::floating("y", ys, FloatType::f32, tolerance::kConvDequant),
                   {}};
  y.bytes.resize(y.spec.bytes());
  OpCase oc{OpDesc{op, d}};
  oc.label = describe(oc.op);
  const void* bias_data = bias.empty() ? nullptr : bias.data();
  run_reference(oc, [&] { reference::conv(op, d, x.data(), w.data(), bias_data, y.bytes.data()); });
  oc.inputs = {{"x", std::move(x)}, {"w", std::move(w)}};
  if (d.bias != ConvBias::none) oc.inputs.push_back({"bias", std::move(bias)});
  oc.outputs = {std::move(y)};
  oc.launches = {
      {"direct",
       [op, d](QuantizationOps& ops, const std::vector<void*>& in, const std::vector<void*>& out) {
         ops.conv(op, d, in[0], in[1], d.bias != ConvBias::none ? in[2] : nullptr, out[0]);
       }}};
  run_case(target, oc);
}

}  // namespace qforge::conformance
