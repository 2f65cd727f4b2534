#include "testers/dynamic_quantize_tester.h"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>

#include "harness/random_data.h"
#include "qforge/plan.h"
#include "qforge/reference.h"

namespace qforge::conformance {

std::string_view to_string(DynamicData d) {
  switch (d) {
    case DynamicData::mixed: return "mixed";
    case DynamicData::all_positive: return "all_positive";
    case DynamicData::all_negative: return "all_negative";
    case DynamicData::all_zero: return "all_zero";
    case DynamicData::constant: return "constant";
    case DynamicData::tiny: return "tiny";
    case DynamicData::non_finite: return "non_finite";
  }
  return "?";
}

namespace {

std::vector<float> make_data(Rng& rng, DynamicData kind, std::size_t n) {
  std::vector<float> x = normal_floats(rng, n, log_uniform(rng, 1e-3, 1e3));
  switch (kind) {
    case DynamicData::mixed: break;
    case DynamicData::all_positive:
      for (auto& v : x) v = std::fabs(v);
      break;
    case DynamicData::all_negative:
      for (auto& v : x) v = -std::fabs(v);
      break;
    case DynamicData::all_zero:
      for (auto& v : x) v = 0.0f;
      break;
    case DynamicData::constant: {
      const float c = x.empty() ? 0.0f : x[0];
      for (auto& v : x) v = c;
      break;
    }
    case DynamicData::tiny:
      for (auto& v : x) v *= 1e-30f;
      break;
    case DynamicData::non_finite:
      if (!x.empty()) {
        const std::size_t i = static_cast<std::size_t>(uniform_int(rng, 0, n - 1));
        x[i] = chance(rng, 0.5) ? std::numeric_limits<float>::quiet_NaN()
                                : std::numeric_limits<float>::infinity();
      }
      break;
  }
  return x;
}

}  // namespace

void DynamicQuantizeTester::test(Target& target, Rng& rng) const {
  const DynamicQuantizeDesc desc{shape_};
  const auto n = static_cast<std::size_t>(element_count(shape_));
  const std::vector<float> x = make_data(rng, data_, n);

  ExpectedOutput y{OutputSpec::quantized("y", shape_, DType::uint8), {}};
  y.bytes.resize(y.spec.bytes());
  OpCase oc{OpDesc{OpKind::dynamic_quantize_linear, desc}};
  oc.label = describe(oc.op) + ", data " + std::string(to_string(data_));
  std::optional<QuantizationParams> expected;
  run_reference(oc, [&] {
    expected = reference::dynamic_quantize_linear(desc, x.data(),
                                                  reinterpret_cast<std::uint8_t*>(y.bytes.data()));
  });
  oc.inputs = {{"x", to_bytes(x)}};
  oc.outputs = {std::move(y)};

  // The launch records what the plugin returned; check_returned compares it after each run.
  auto returned = std::make_shared<std::optional<QuantizationParams>>();
  oc.launches = {{"direct", [desc, returned](QuantizationOps& ops, const std::vector<void*>& in,
                                             const std::vector<void*>& out) {
                    *returned = ops.dynamic_quantize_linear(desc, static_cast<const float*>(in[0]),
                                                            static_cast<std::uint8_t*>(out[0]));
                  }}};
  // Each kernel through a plan; its scale and zero point are host scalars here, so host-memory
  // plugins only.
  oc.kernel_launches = [desc, returned](const std::string& kernel) {
    LaunchFn fn = [desc, kernel, returned](QuantizationOps& ops, const std::vector<void*>& in,
                                           const std::vector<void*>& out) {
      if (!ops.host_memory())
        throw LaunchUnavailable{"a plan of dynamic_quantize_linear with host scalar outputs"};
      const auto plan = ops.plan({OpKind::dynamic_quantize_linear, desc},
                                 PlanRequest{ops.default_device(), kernel, {}});
      float scale = 0;
      std::uint8_t zero_point = 0;
      plan->run({in[0]}, {out[0], &scale, &zero_point});
      *returned = QuantizationParams::per_tensor_affine(DType::uint8, scale, zero_point);
    };
    return std::vector<Launch>{{"plan", fn}};
  };
  oc.check_returned = [returned, expected]() -> ::testing::AssertionResult {
    if (!*returned || !expected || **returned == *expected) return ::testing::AssertionSuccess();
    std::ostringstream msg;
    msg.precision(9);
    msg << "returned params " << (*returned)->to_string() << " (scale " << (*returned)->scale()
        << "), expected " << expected->to_string() << " (scale " << expected->scale() << ")";
    return ::testing::AssertionFailure() << msg.str();
  };
  run_case(target, oc);
}

}  // namespace qforge::conformance
