#include "testers/requantize_tester.h"

#include <cmath>
#include <limits>

#include "harness/random_data.h"
#include "qforge/reference.h"

namespace qforge::conformance {

void RequantizeTester::test(Target& target, Rng& rng) const {
  RequantizeDesc desc;
  desc.shape = shape_;
  desc.out_dtype = out_dtype_;
  desc.mode = mode_;
  desc.out_zero_point =
      static_cast<std::int32_t>(uniform_int(rng, traits(out_dtype_).qmin, traits(out_dtype_).qmax));
  std::size_t channels = 1;
  if (axis_) {
    desc.axis = *axis_;
    const int rank = static_cast<int>(shape_.size());
    channels = static_cast<std::size_t>(
        shape_.at(static_cast<std::size_t>(*axis_ < 0 ? *axis_ + rank : *axis_)));
  }
  const double top = mode_ == RequantMode::fixed_point ? 1.0 : 2.0;
  for (std::size_t i = 0; i < channels; ++i) {
    float m = chance(rng, 0.25) ? std::ldexp(1.0f, static_cast<int>(uniform_int(rng, -20, -1)))
                                : static_cast<float>(log_uniform(rng, std::ldexp(1.0, -24), top));
    if (m >= top) m = std::nextafter(static_cast<float>(top), 0.0f);
    desc.multipliers.push_back(ties_only_ ? 0.5f : m);
  }

  const auto count = static_cast<std::size_t>(element_count(shape_));
  std::vector<std::int32_t> c(count);
  for (auto& v : c) {
    if (ties_only_) {  // |c / 2| <= 100: inside the int8 range for most zero points
      v = static_cast<std::int32_t>(2 * uniform_int(rng, -100, 99) + 1);
      continue;
    }
    const double pick = uniform_real(rng, 0.0, 1.0);
    if (pick < 0.03) v = std::numeric_limits<std::int32_t>::min();
    else if (pick < 0.06) v = std::numeric_limits<std::int32_t>::max();
    else if (pick < 0.25)  // odd values: with a power-of-two multiplier these hit ties
      v = static_cast<std::int32_t>(2 * uniform_int(rng, -(1 << 12), 1 << 12) + 1);
    else v = static_cast<std::int32_t>(uniform_int(rng, -(1 << 22), 1 << 22));
  }

  ExpectedOutput y{OutputSpec::quantized("y", shape_, out_dtype_), {}};
  y.bytes.resize(y.spec.bytes());
  OpCase oc{OpDesc{OpKind::requantize, desc}};
  oc.label = describe(oc.op);
  run_reference(oc, [&] { reference::requantize(desc, c.data(), y.bytes.data()); });
  oc.inputs = {{"c", to_bytes(c)}};
  oc.outputs = {std::move(y)};
  oc.launches = {{"direct", [desc](QuantizationOps& ops, const std::vector<void*>& in,
                                   const std::vector<void*>& out) {
                    ops.requantize(desc, static_cast<const std::int32_t*>(in[0]), out[0]);
                  }}};
  run_case(target, oc);
}

}  // namespace qforge::conformance
