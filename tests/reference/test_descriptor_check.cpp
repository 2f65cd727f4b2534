// reference::check_descriptor and its parts: the verdict on a descriptor alone must be the op's
// own verdict, with the op's message ("reference::<op>: ..."), for every kind of descriptor.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge {
namespace {

// The Error an op throws, if any.
template <class Fn>
std::optional<Error> thrown(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

MatmulDesc good_matmul() {
  return {.m = 2,
          .n = 3,
          .k = 4,
          .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3),
          .b = QuantizationParams::per_tensor_symmetric(DType::int8, 0.25f),
          .y = QuantizationParams::per_tensor_affine(DType::int8, 1.0f, 0)};
}

TEST(ReferenceDescriptorCheck, AcceptsWhatTheOpsAccept) {
  const MatmulDesc m = good_matmul();
  for (OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant, OpKind::qlinear_matmul})
    EXPECT_NO_THROW(reference::check_descriptor({op, m})) << to_string(op);
  EXPECT_NO_THROW(reference::check_descriptor(
      {OpKind::quantize,
       QuantizeDesc{{4, 8},
                    QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 1,
                                                    std::vector<float>(8, 0.1f))}}));
  EXPECT_NO_THROW(reference::check_descriptor(
      {OpKind::requantize, RequantizeDesc{{2, 3}, {0.5f, 0.25f, 1.0f}, 1}}));
  EXPECT_NO_THROW(
      reference::check_descriptor({OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{{0}}}));
  EXPECT_NO_THROW(reference::check_descriptor(
      {OpKind::linear_forward,
       LinearDesc{2, 3, 4, QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f), true}}));
}

// check_descriptor, whole and per descriptor type, must throw what the op threw.
void expect_same_verdict(const OpDesc& desc, const std::optional<Error>& from_op) {
  ASSERT_TRUE(from_op.has_value()) << to_string(desc.op) << ": the op accepted a bad descriptor";
  const std::optional<Error> whole = thrown([&] { reference::check_descriptor(desc); });
  const std::optional<Error> typed = thrown([&] {
    std::visit([&](const auto& d) { reference::check_descriptor(desc.op, d); }, desc.desc);
  });
  for (const auto* e : {&whole, &typed}) {
    ASSERT_TRUE(e->has_value()) << to_string(desc.op) << ": check_descriptor accepted it";
    EXPECT_EQ((*e)->code(), from_op->code()) << (*e)->what();
    EXPECT_EQ(std::string((*e)->what()), std::string(from_op->what()));
  }
}

TEST(ReferenceDescriptorCheck, RejectsWithTheOpsOwnMessage) {
  // Each bad descriptor, run through the op (null data: validation comes first) and the check.
  MatmulDesc log_a = good_matmul();
  log_a.a = QuantizationParams(DType::int8, Scheme{Mapping::logarithmic, Granularity::per_tensor},
                               {1.0f});
  MatmulDesc no_y = good_matmul();
  no_y.y.reset();
  MatmulDesc negative_k = good_matmul();
  negative_k.k = -1;
  const RequantizeDesc bad_axis{{2, 3}, {0.5f, 0.25f}, 1};
  const LinearDesc affine_w{2, 3, 4, QuantizationParams::per_tensor_affine(DType::int8, 0.1f, 2),
                            false};

  expect_same_verdict({OpKind::matmul_integer, log_a},
                      thrown([&] { reference::matmul_integer(log_a, nullptr, nullptr, nullptr); }));
  expect_same_verdict({OpKind::qlinear_matmul, no_y},
                      thrown([&] { reference::qlinear_matmul(no_y, nullptr, nullptr, nullptr); }));
  expect_same_verdict({OpKind::matmul_dequant, negative_k}, thrown([&] {
                        reference::matmul_dequant(negative_k, nullptr, nullptr, nullptr, nullptr);
                      }));
  expect_same_verdict({OpKind::requantize, bad_axis},
                      thrown([&] { reference::requantize(bad_axis, nullptr, nullptr); }));
  expect_same_verdict({OpKind::linear_forward, affine_w}, thrown([&] {
                        reference::linear_forward(affine_w, nullptr, nullptr, nullptr, nullptr,
                                                  nullptr);
                      }));
}

TEST(ReferenceDescriptorCheck, NamesTheOpAlsoForParamsErrorsAndMismatchedDescriptors) {
  // per_channel axis 2 of a rank-2 weight: QuantizationParams' own error, with the op in front.
  const LinearDesc w_axis{2, 3, 4,
                          QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 2,
                                                          std::vector<float>(3, 0.1f)),
                          false};
  const auto e = thrown([&] { reference::check_descriptor({OpKind::linear_backward, w_axis}); });
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(std::string(e->what()).rfind("reference::linear_backward: ", 0), 0u) << e->what();
  const auto m = thrown([&] { reference::check_descriptor({OpKind::quantize, good_matmul()}); });
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(std::string(m->what()).find("descriptor is a MatmulDesc"), std::string::npos)
      << m->what();
}

TEST(ReferenceDescriptorCheck, PartsForPackedCalls) {
  MatmulDesc d = good_matmul();
  EXPECT_NO_THROW(reference::check_matmul_a(OpKind::matmul_dequant, d));
  EXPECT_NO_THROW(reference::check_qlinear_output(d, 0.25f));
  // Scales whose ratio overflows float32: 1e30 * 1e30 / 1.
  d.a = QuantizationParams::per_tensor_affine(DType::uint8, 1e30f, 0);
  const auto e = thrown([&] { reference::check_qlinear_output(d, 1e30f); });
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(std::string(e->what()).find("overflows float32"), std::string::npos) << e->what();
  d.m = -2;
  EXPECT_THROW(reference::check_matmul_a(OpKind::matmul_integer, d), Error);
}

}  // namespace
}  // namespace qforge
