#include "testers/quantize_tester.h"

#include "harness/random_data.h"
#include "harness/tolerances.h"
#include "qforge/reference.h"

namespace qforge::conformance {

void QuantizeTester::test_quantize(Target& target, Rng& rng) const {
  QuantizeDesc desc{shape_, random_params(rng, dtype_, scheme_, shape_), float_type_};
  const auto x = store_floats(float_type_, quantize_inputs(rng, desc.params, shape_, specials_));
  ExpectedOutput q{OutputSpec::quantized("q", shape_, dtype_), {}};
  q.bytes.resize(q.spec.bytes());

  OpCase c{OpDesc{OpKind::quantize, desc}};
  c.label =
      describe(c.op) + " input " + name(float_type_) + (specials_ ? " with NaN/inf/huge" : "");
  run_reference(c, [&] { reference::quantize(desc, x.data(), q.bytes.data()); });
  c.inputs = {{"x", x}};
  c.outputs = {std::move(q)};
  c.launches = {
      {"direct", [desc](QuantizationOps& ops, const std::vector<void*>& in,
                        const std::vector<void*>& out) { ops.quantize(desc, in[0], out[0]); }}};
  run_case(target, c);
}

void QuantizeTester::test_dequantize(Target& target, Rng& rng) const {
  // dequantize always writes float32; the desc's float_type says so.
  QuantizeDesc desc{shape_, random_params(rng, dtype_, scheme_, shape_), FloatType::f32};
  const auto count = static_cast<std::size_t>(element_count(shape_));
  const auto q = random_codes(rng, dtype_, count, desc.params.qmin(), desc.params.qmax());
  ExpectedOutput x{OutputSpec::floating("x", shape_, FloatType::f32, tolerance::kDequantize), {}};
  x.bytes.resize(x.spec.bytes());

  OpCase c{OpDesc{OpKind::dequantize, desc}};
  c.label = describe(c.op);
  run_reference(
      c, [&] { reference::dequantize(desc, q.data(), reinterpret_cast<float*>(x.bytes.data())); });
  c.inputs = {{"q", q}};
  c.outputs = {std::move(x)};
  c.launches = {{"direct", [desc](QuantizationOps& ops, const std::vector<void*>& in,
                                  const std::vector<void*>& out) {
                   ops.dequantize(desc, in[0], static_cast<float*>(out[0]));
                 }}};
  run_case(target, c);
}

}  // namespace qforge::conformance
