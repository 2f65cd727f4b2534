#include "qforge/op_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge {
namespace {

TEST(OpTable, EveryKindSitsAtItsIndex) {
  ASSERT_EQ(op_table().size(), static_cast<std::size_t>(kOpKindCount));
  for (int i = 0; i < kOpKindCount; ++i) {
    const OpInfo& info = op_table()[i];
    EXPECT_EQ(static_cast<int>(info.kind), i);
    EXPECT_EQ(info.name, to_string(info.kind));
    EXPECT_FALSE(info.summary.empty());
    EXPECT_NE(info.operands, nullptr);
    EXPECT_NE(info.check, nullptr);
    EXPECT_NE(info.reference, nullptr);
    EXPECT_NE(info.work, nullptr);
    EXPECT_NE(info.examples, nullptr);
    EXPECT_NE(info.hooks, nullptr);
  }
  try {
    op_info(static_cast<OpKind>(200));
    ADD_FAILURE() << "op_info accepted an op kind outside the table";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

// hwinfo asks every plugin about these: each of its own kind, with a label of its own and its
// work counted in the unit of its kind. A grid may hold combinations the reference refuses
// (qlinear_matmul with block-wise B), so that hwinfo shows why; but not only such ones.
TEST(OpTable, ExamplesAreDescriptorsOfTheirKind) {
  for (const OpInfo& info : op_table()) {
    const std::vector<OpExample> examples = info.examples(info.kind);
    EXPECT_FALSE(examples.empty()) << info.name;
    std::set<std::string> labels;
    std::size_t valid = 0;
    for (const OpExample& e : examples) {
      EXPECT_EQ(e.desc.op, info.kind) << info.name << " " << e.label;
      EXPECT_TRUE(labels.insert(e.label).second) << info.name << ": label twice: " << e.label;
      try {
        info.check(e.desc);
        ++valid;
      } catch (const Error&) {
      }
      const OpWork w = info.work(e.desc);
      EXPECT_GT(w.amount, 0) << info.name << " " << e.label;
      const bool reduces = std::holds_alternative<MatmulDesc>(e.desc.desc) ||
                           std::holds_alternative<LinearDesc>(e.desc.desc) ||
                           std::holds_alternative<ConvDesc>(e.desc.desc);
      EXPECT_EQ(w.unit, reduces ? OpWork::Unit::multiply_adds : OpWork::Unit::bytes) << info.name;
    }
    EXPECT_GT(valid, 0u) << info.name << ": no example the reference accepts";
  }
}

MatmulDesc small_matmul(bool bias) {
  return MatmulDesc{.m = 2,
                    .n = 3,
                    .k = 4,
                    .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3),
                    .b = QuantizationParams::per_tensor_symmetric(DType::int4, 0.25f),
                    .has_bias = bias};
}

TEST(OpTable, OperandsFollowTheDescriptor) {
  const OpOperands plain = op_operands({OpKind::matmul_dequant, small_matmul(false)});
  ASSERT_EQ(plain.inputs.size(), 2u);
  EXPECT_EQ(plain.inputs[0].name, "a");
  EXPECT_EQ(plain.inputs[0].role, OperandRole::input);
  EXPECT_EQ(plain.inputs[1].name, "b");
  EXPECT_EQ(plain.inputs[1].role, OperandRole::weight);
  EXPECT_EQ(plain.inputs[1].bytes, 6u);  // 12 int4 codes, two per byte
  ASSERT_EQ(plain.outputs.size(), 1u);
  EXPECT_EQ(plain.outputs[0].comparison, Comparison::nmse);
  EXPECT_EQ(plain.outputs[0].bytes, 24u);

  const OpOperands with_bias = op_operands({OpKind::matmul_dequant, small_matmul(true)});
  ASSERT_EQ(with_bias.inputs.size(), 3u);
  EXPECT_EQ(with_bias.inputs[2].name, "bias");
  EXPECT_EQ(with_bias.inputs[2].role, OperandRole::weight);

  const OpOperands dql = op_operands({OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{{5}}});
  ASSERT_EQ(dql.outputs.size(), 3u);
  EXPECT_EQ(dql.outputs[1].name, "y_scale");
  EXPECT_TRUE(dql.outputs[1].params_in_calls);
  EXPECT_EQ(dql.outputs[2].bytes, 1u);
  // Params stay in host memory on every device; arrays live in the plan's device memory.
  EXPECT_FALSE(dql.outputs[0].host_resident);
  EXPECT_TRUE(dql.outputs[1].host_resident);
  EXPECT_TRUE(dql.outputs[2].host_resident);
  const LinearDesc ld{
      .m = 3, .n = 2, .k = 5, .w = QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f)};
  const OpOperands fwd = op_operands({OpKind::linear_forward, ld});
  ASSERT_EQ(fwd.outputs.size(), 3u);
  EXPECT_EQ(fwd.outputs[2].name, "x_scale");
  EXPECT_TRUE(fwd.outputs[2].host_resident);
  const OpOperands bwd = op_operands({OpKind::linear_backward, ld});
  ASSERT_EQ(bwd.inputs.size(), 4u);
  for (std::size_t i = 0; i < bwd.inputs.size(); ++i)
    EXPECT_EQ(bwd.inputs[i].host_resident, bwd.inputs[i].name == "x_scale") << i;
  // Only params are host-resident, in every op kind.
  for (const OpInfo& info : op_table())
    for (const OpExample& e : info.examples(info.kind)) {
      const OpOperands ops = info.operands(e.desc);
      for (const auto* list : {&ops.inputs, &ops.outputs})
        for (const OperandSpec& o : *list)
          EXPECT_EQ(o.host_resident, o.params_in_calls) << e.label << " " << o.name;
    }

  ConvDesc cd;
  cd.n = 2;
  cd.c = 4;
  cd.h = cd.w = 5;
  cd.out_channels = 6;
  cd.groups = 2;
  cd.kernel_h = cd.kernel_w = 3;
  cd.bias = ConvBias::int32;
  const OpOperands conv = op_operands({OpKind::qlinear_conv, cd});
  ASSERT_EQ(conv.inputs.size(), 3u);
  EXPECT_EQ(conv.inputs[1].role, OperandRole::weight);
  EXPECT_EQ(conv.inputs[1].count, 6u * 2 * 3 * 3);
  EXPECT_EQ(conv.inputs[2].bytes, 6u * 4);
  EXPECT_EQ(conv.outputs[0].count, 2u * 6 * 3 * 3);

  // matmul_weight_only's A is float32 whatever `a` says; its output is compared by NMSE.
  const OpOperands wo = op_operands({OpKind::matmul_weight_only, small_matmul(true)});
  ASSERT_EQ(wo.inputs.size(), 3u);
  EXPECT_EQ(wo.inputs[0].bytes, 2u * 4 * sizeof(float));
  EXPECT_EQ(wo.inputs[1].bytes, 6u);
  EXPECT_EQ(wo.inputs[1].role, OperandRole::weight);
  ASSERT_EQ(wo.outputs.size(), 1u);
  EXPECT_EQ(wo.outputs[0].comparison, Comparison::nmse);

  for (const OpInfo& info : op_table()) EXPECT_LE(info.kind, OpKind::matmul_weight_only);
}

TEST(OpTable, OperandsOfAnOversizedDescriptorThrow) {
  MatmulDesc d = small_matmul(false);
  d.m = d.k = std::int64_t{1} << 40;
  EXPECT_THROW(op_operands({OpKind::matmul_integer, d}), Error);
}

// The table's reference on arrays is reference.h's functions, params included.
TEST(OpTable, ReferenceOnArraysMatchesTheReferenceFunctions) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> x(37);
  for (auto& v : x) v = normal(rng);
  const DynamicQuantizeDesc d{{37}};
  std::vector<std::uint8_t> y_direct(37), y_table(37);
  const QuantizationParams p = reference::dynamic_quantize_linear(d, x.data(), y_direct.data());
  float scale = 0;
  std::uint8_t zero_point = 0;
  const void* in[] = {x.data()};
  void* out[] = {y_table.data(), &scale, &zero_point};
  run_reference({OpKind::dynamic_quantize_linear, d}, in, out);
  EXPECT_EQ(y_direct, y_table);
  EXPECT_EQ(scale, p.scale());
  EXPECT_EQ(zero_point, p.zero_point());

  const LinearDesc l{
      .m = 3, .n = 2, .k = 5, .w = QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f)};
  std::vector<float> lx(15), dy(6);
  for (auto& v : lx) v = normal(rng);
  for (auto& v : dy) v = normal(rng);
  std::vector<std::int8_t> w(10);
  for (auto& v : w)
    v = static_cast<std::int8_t>(std::uniform_int_distribution<int>(-127, 127)(rng));
  std::vector<std::int8_t> xq(15);
  std::vector<float> y(6);
  float x_scale = 0;
  const void* fin[] = {lx.data(), w.data()};
  void* fout[] = {xq.data(), y.data(), &x_scale};
  run_reference({OpKind::linear_forward, l}, fin, fout);
  std::vector<std::int8_t> xq_direct(15);
  std::vector<float> y_direct_f(6);
  const QuantizationParams xp = reference::linear_forward(l, lx.data(), w.data(), nullptr,
                                                          xq_direct.data(), y_direct_f.data());
  EXPECT_EQ(xq, xq_direct);
  EXPECT_EQ(y, y_direct_f);
  EXPECT_EQ(x_scale, xp.scale());

  std::vector<float> dx(15), dw(10), dx_direct(15), dw_direct(10);
  const void* bin[] = {dy.data(), xq.data(), &x_scale, w.data()};
  void* bout[] = {dx.data(), dw.data()};
  run_reference({OpKind::linear_backward, l}, bin, bout);
  reference::linear_backward(l, dy.data(), xq.data(), xp, w.data(), dx_direct.data(),
                             dw_direct.data(), nullptr);
  EXPECT_EQ(dx, dx_direct);
  EXPECT_EQ(dw, dw_direct);

  x_scale = -1.0f;  // not a scale: the params built from it are rejected, not used
  EXPECT_THROW(run_reference({OpKind::linear_backward, l}, bin, bout), Error);
}

}  // namespace
}  // namespace qforge
