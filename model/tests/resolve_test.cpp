// resolve(): shape resolution for given input shapes, constant folding of PyTorch's shape
// subgraphs, dead-node removal, input checks; fold_conv_batchnorm.
#include "qforge/model/resolve.h"

#include <gtest/gtest.h>

#include <cmath>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;
constexpr int I64 = onnx::TensorProto::INT64;

// x[batch, 3, 4] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) -> [batch, 12],
// the chain torch.onnx writes for x.view(x.size(0), -1); then Relu.
Graph reshape_chain_model() {
  OnnxBuilder b(13);
  b.input("x", F, {std::string("batch"), 3, 4});
  b.initializer_i64("zero", {}, {0});
  b.initializer_i64("axes0", {1}, {0});
  b.initializer_i64("minus_one", {1}, {-1});
  b.node("Shape", {"x"}, {"shape"}, "shape");
  auto& g = b.node("Gather", {"shape", "zero"}, {"batch_dim"}, "gather");
  OnnxBuilder::attr(g, "axis", std::int64_t{0});
  b.node("Unsqueeze", {"batch_dim", "axes0"}, {"batch_1d"}, "unsqueeze");
  auto& c = b.node("Concat", {"batch_1d", "minus_one"}, {"target"}, "concat");
  OnnxBuilder::attr(c, "axis", std::int64_t{0});
  b.node("Reshape", {"x", "target"}, {"flat"}, "reshape");
  b.node("Relu", {"flat"}, {"y"}, "relu");
  b.node("Sigmoid", {"x"}, {"unused"}, "dead");  // feeds no output
  b.output("y", F, {std::string("batch"), 12});
  return import_onnx_bytes(b.bytes(), "reshape_chain");
}

TEST(Resolve, FoldsPyTorchShapeChains) {
  const Graph g = reshape_chain_model();
  ResolveOptions o;
  o.input_shapes["x"] = {5, 3, 4};
  const Graph r = resolve(g, o);
  ASSERT_EQ(r.nodes.size(), 2u);  // Reshape and Relu; the shape chain and the dead node are gone
  EXPECT_EQ(r.nodes[0].op_type, "Reshape");
  EXPECT_EQ(r.nodes[1].op_type, "Relu");
  const Tensor* target = r.initializer("target");
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->values<std::int64_t>()[0], 5);
  EXPECT_EQ(target->values<std::int64_t>()[1], -1);
  EXPECT_EQ(r.initializers.size(), 1u);  // the folded chain's own constants are dropped
  const ValueInfo* flat = r.find_value_info("flat");
  ASSERT_NE(flat, nullptr);
  EXPECT_EQ(flat->shape(), (Shape{5, 12}));
  EXPECT_EQ(r.outputs[0].shape(), (Shape{5, 12}));
  EXPECT_EQ(r.inputs[0].shape(), (Shape{5, 3, 4}));

  auto rng = test::rng(1);
  const Tensor x = test::random_tensor(rng, {5, 3, 4});
  Executor exec(g, o);
  const TensorMap out = exec.run({{"x", x}});
  const Tensor& y = out.at("y");
  ASSERT_EQ(y.shape(), (Shape{5, 12}));
  for (std::int64_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(y.values<float>()[i], std::max(0.0f, x.values<float>()[i])) << test::seed_text();
}

TEST(Resolve, ChecksGivenShapes) {
  const Graph g = reshape_chain_model();
  ResolveOptions wrong_dim;
  wrong_dim.input_shapes["x"] = {5, 4, 4};
  EXPECT_THROW(resolve(g, wrong_dim), Error);
  ResolveOptions wrong_rank;
  wrong_rank.input_shapes["x"] = {5, 12};
  EXPECT_THROW(resolve(g, wrong_rank), Error);
  ResolveOptions unknown;
  unknown.input_shapes["nope"] = {1};
  EXPECT_THROW(resolve(g, unknown), Error);
  // A symbolic dim with no shape given.
  try {
    resolve(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("batch"), std::string::npos) << e.what();
  }
}

TEST(Resolve, SharedSymbolsMustAgree) {
  OnnxBuilder b(17);
  b.input("a", F, {std::string("n"), 2});
  b.input("b", F, {std::string("n"), 2});
  b.node("Add", {"a", "b"}, {"c"});
  b.output("c", F, {std::string("n"), 2});
  const Graph g = import_onnx_bytes(b.bytes(), "symbols");
  ResolveOptions o;
  o.input_shapes["a"] = {3, 2};
  o.input_shapes["b"] = {4, 2};
  try {
    resolve(g, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    EXPECT_NE(std::string(e.what()).find("'n'"), std::string::npos) << e.what();
  }
}

TEST(Resolve, NonConstantShapeInputNamesTheNode) {
  OnnxBuilder b(17);
  b.input("x", F, {6});
  b.input("s", I64, {2});
  b.node("Reshape", {"x", "s"}, {"y"}, "dynamic_reshape");
  b.output("y", F, {std::string("r0"), std::string("r1")});
  const Graph g = import_onnx_bytes(b.bytes(), "dynamic");
  try {
    resolve(g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("Reshape 'dynamic_reshape'"), std::string::npos)
        << e.what();
  }
  // Freezing the shape input makes it resolvable.
  ResolveOptions o;
  o.constant_inputs.emplace("s", Tensor::from_values<std::int64_t>({2}, {2, 3}));
  const Graph r = resolve(g, o);
  EXPECT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].shape(), (Shape{2, 3}));
}

TEST(Resolve, HugeComputedShapeIsRefused) {
  // Static dims: ONNX shape inference propagates them and import refuses the declared value.
  OnnxBuilder b(17);
  b.input("x", F, {1});
  b.initializer_i64("dims", {3}, {1000000, 1000000, 1000000});
  b.node("ConstantOfShape", {"dims"}, {"big"}, "fill");
  b.node("Add", {"x", "big"}, {"y"}, "add");
  b.output("y", F, {std::string("d0"), std::string("d1"), std::string("d2")});
  EXPECT_THROW(import_onnx_bytes(b.bytes(), "big"), Error);

  // Dims known only at resolve time (a frozen input): resolve refuses before allocating.
  OnnxBuilder c(17);
  c.input("x", F, {1});
  c.input("dims", I64, {3});
  c.node("ConstantOfShape", {"dims"}, {"big"}, "fill");
  c.node("Add", {"x", "big"}, {"y"}, "add");
  c.output("y", F, {std::string("d0"), std::string("d1"), std::string("d2")});
  const Graph g = import_onnx_bytes(c.bytes(), "big");
  ResolveOptions o;
  o.constant_inputs.emplace("dims",
                            Tensor::from_values<std::int64_t>({3}, {1000000, 1000000, 1000000}));
  try {
    resolve(g, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("ConstantOfShape 'fill'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
  }
}

TEST(FoldConvBatchNorm, MatchesConvThenBatchNorm) {
  auto rng = test::rng(2);
  const std::int64_t c = 3, m = 4;
  OnnxBuilder b(17);
  b.input("x", F, {1, c, 5, 5});
  const auto w = test::random_values(rng, m * c * 3 * 3);
  const auto bias = test::random_values(rng, m);
  const auto scale = test::random_values(rng, m, 0.5f, 2.0f);
  const auto beta = test::random_values(rng, m);
  const auto mean = test::random_values(rng, m);
  const auto var = test::random_values(rng, m, 0.1f, 2.0f);
  b.initializer("w", {m, c, 3, 3}, w);
  b.initializer("b", {m}, bias);
  b.initializer("scale", {m}, scale);
  b.initializer("beta", {m}, beta);
  b.initializer("mean", {m}, mean);
  b.initializer("var", {m}, var);
  auto& conv = b.node("Conv", {"x", "w", "b"}, {"conv_out"}, "conv");
  OnnxBuilder::attr(conv, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  auto& bn =
      b.node("BatchNormalization", {"conv_out", "scale", "beta", "mean", "var"}, {"y"}, "bn");
  OnnxBuilder::attr(bn, "epsilon", 1e-3f);
  b.output("y", F, {1, m, 5, 5});
  const Graph g = import_onnx_bytes(b.bytes(), "conv_bn");

  Graph r = resolve(g);
  EXPECT_EQ(fold_conv_batchnorm(r), 1);
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].op_type, "Conv");
  EXPECT_EQ(r.nodes[0].outputs[0], "y");
  EXPECT_EQ(r.initializers.size(), 2u);  // folded weight and bias only

  const Tensor x = test::random_tensor(rng, {1, c, 5, 5});
  const Tensor y = Executor(g).run({{"x", x}}).at("y");
  const auto xv = x.values<float>();
  for (std::int64_t oc = 0; oc < m; ++oc)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) {
        double acc = bias[oc];
        for (int ic = 0; ic < c; ++ic)
          for (int ki = 0; ki < 3; ++ki)
            for (int kj = 0; kj < 3; ++kj) {
              const int ii = i + ki - 1, jj = j + kj - 1;
              if (ii < 0 || ii >= 5 || jj < 0 || jj >= 5) continue;
              acc += double(w[((oc * c + ic) * 3 + ki) * 3 + kj]) * xv[(ic * 5 + ii) * 5 + jj];
            }
        const double want =
            (acc - mean[oc]) / std::sqrt(double(var[oc]) + 1e-3) * scale[oc] + beta[oc];
        EXPECT_NEAR(y.values<float>()[(oc * 5 + i) * 5 + j], want, 1e-4 * (1 + std::fabs(want)))
            << test::seed_text();
      }
}

TEST(FoldConvBatchNorm, LeavesSharedConvOutputAlone) {
  OnnxBuilder b(17);
  b.input("x", F, {1, 1, 3, 3});
  b.initializer("w", {1, 1, 1, 1}, {2});
  for (const char* n : {"s", "bt", "mn", "v"}) b.initializer(n, {1}, {1});
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  b.node("BatchNormalization", {"c", "s", "bt", "mn", "v"}, {"y"}, "bn");
  b.node("Relu", {"c"}, {"z"}, "other_reader");
  b.output("y", F, {1, 1, 3, 3});
  b.output("z", F, {1, 1, 3, 3});
  Graph r = resolve(import_onnx_bytes(b.bytes(), "shared"));
  EXPECT_EQ(fold_conv_batchnorm(r), 0);
  EXPECT_EQ(r.nodes.size(), 3u);
}

}  // namespace
}  // namespace qforge::model
