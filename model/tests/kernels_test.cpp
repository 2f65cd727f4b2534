// Float kernels against plain double-precision loops on random data: Conv over many geometries
// (groups, dilations, strides, asymmetric and automatic pads, 1-D to 3-D), MatMul with
// broadcast batch axes, and the executor's checks of its inputs.
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

struct ConvCase {
  std::string name;
  Shape x;  // N, C, spatial...
  std::int64_t m, group;
  std::vector<std::int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad = "NOTSET";
};

std::ostream& operator<<(std::ostream& os, const ConvCase& c) { return os << c.name; }

// Direct convolution in double over any spatial rank.
std::vector<double> naive_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor& b,
                               const Shape& out, const std::vector<std::int64_t>& pad_begin) {
  const std::size_t r = c.kernel.size();
  const std::int64_t cg = c.x[1] / c.group, mg = c.m / c.group;
  std::vector<double> y(static_cast<std::size_t>(element_count(out)));
  const auto xv = x.values<float>(), wv = w.values<float>(), bv = b.values<float>();
  std::int64_t out_size = 1, in_size = 1, k_size = 1;
  for (std::size_t d = 0; d < r; ++d) {
    out_size *= out[2 + d];
    in_size *= c.x[2 + d];
    k_size *= c.kernel[d];
  }
  for (std::int64_t n = 0; n < c.x[0]; ++n)
    for (std::int64_t oc = 0; oc < c.m; ++oc)
      for (std::int64_t p = 0; p < out_size; ++p) {
        std::vector<std::int64_t> o(r);
        for (std::int64_t rem = p, d = static_cast<std::int64_t>(r) - 1; d >= 0; --d) {
          o[d] = rem % out[2 + d];
          rem /= out[2 + d];
        }
        double acc = bv[oc];
        const std::int64_t g = oc / mg;
        for (std::int64_t ic = 0; ic < cg; ++ic)
          for (std::int64_t kk = 0; kk < k_size; ++kk) {
            std::int64_t rem = kk, off = 0;
            bool inside = true;
            std::vector<std::int64_t> k(r);
            for (std::int64_t d = static_cast<std::int64_t>(r) - 1; d >= 0; --d) {
              k[d] = rem % c.kernel[d];
              rem /= c.kernel[d];
            }
            for (std::size_t d = 0; d < r; ++d) {
              const std::int64_t pos = o[d] * c.strides[d] - pad_begin[d] + k[d] * c.dilations[d];
              inside = inside && pos >= 0 && pos < c.x[2 + d];
              off = off * c.x[2 + d] + pos;
            }
            if (!inside) continue;
            acc += double(wv[(oc * cg + ic) * k_size + kk]) *
                   xv[(n * c.x[1] + g * cg + ic) * in_size + off];
          }
        y[static_cast<std::size_t>((n * c.m + oc) * out_size + p)] = acc;
      }
  return y;
}

class ConvVsNaive : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvVsNaive, Matches) {
  const ConvCase& c = GetParam();
  const std::size_t r = c.kernel.size();
  // Expected output extents and begin pads, computed here independently of the kernel.
  Shape out{c.x[0], c.m};
  std::vector<std::int64_t> pad_begin(r);
  for (std::size_t d = 0; d < r; ++d) {
    const std::int64_t in = c.x[2 + d], span = (c.kernel[d] - 1) * c.dilations[d] + 1;
    if (c.auto_pad == "NOTSET") {
      pad_begin[d] = c.pads[d];
      out.push_back((in + c.pads[d] + c.pads[d + r] - span) / c.strides[d] + 1);
    } else if (c.auto_pad == "VALID") {
      out.push_back((in - span) / c.strides[d] + 1);
    } else {
      const std::int64_t o = (in + c.strides[d] - 1) / c.strides[d];
      const std::int64_t total = std::max<std::int64_t>(0, (o - 1) * c.strides[d] + span - in);
      pad_begin[d] = c.auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
      out.push_back(o);
    }
  }
  auto rng = test::rng(std::hash<std::string>{}(c.name));
  Shape ws{c.m, c.x[1] / c.group};
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  const Tensor x = test::random_tensor(rng, c.x), w = test::random_tensor(rng, ws),
               b = test::random_tensor(rng, {c.m});

  OnnxBuilder builder(17);
  testing::Dims xd(c.x.begin(), c.x.end()), od;
  for (std::size_t d = 0; d < out.size(); ++d) od.push_back("o" + std::to_string(d));
  builder.input("x", F, xd);
  builder.initializer("w", ws,
                      std::vector<float>(w.values<float>().begin(), w.values<float>().end()));
  builder.initializer("b", {c.m},
                      std::vector<float>(b.values<float>().begin(), b.values<float>().end()));
  auto& n = builder.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  OnnxBuilder::attr(n, "group", c.group);
  OnnxBuilder::attr(n, "strides", c.strides);
  OnnxBuilder::attr(n, "dilations", c.dilations);
  if (c.auto_pad == "NOTSET") OnnxBuilder::attr(n, "pads", c.pads);
  else OnnxBuilder::attr(n, "auto_pad", c.auto_pad);
  builder.output("y", F, od);
  const Tensor y = Executor(import_onnx_bytes(builder.bytes(), c.name)).run({{"x", x}}).at("y");
  ASSERT_EQ(y.shape(), out) << c.name;
  const auto want = naive_conv(c, x, w, b, out, pad_begin);
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(y.values<float>()[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
        << c.name << " element " << i << ", " << test::seed_text();
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, ConvVsNaive,
    ::testing::Values(
        ConvCase{"plain_3x3", {2, 3, 7, 6}, 4, 1, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
        ConvCase{"asymmetric_pads", {1, 2, 6, 5}, 3, 1, {3, 2}, {1, 1}, {1, 1}, {0, 2, 1, 0}},
        ConvCase{"strided_dilated", {1, 3, 11, 9}, 2, 1, {3, 3}, {2, 3}, {2, 1}, {1, 1, 2, 0}},
        ConvCase{"groups", {2, 4, 5, 5}, 6, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        ConvCase{"depthwise", {1, 5, 6, 6}, 5, 5, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        ConvCase{"depthwise_3x3_same", {2, 4, 6, 7}, 8, 4, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        ConvCase{"one_channel_3x3", {3, 1, 5, 9}, 4, 1, {3, 3}, {1, 1}, {1, 1}, {0, 1, 2, 0}},
        ConvCase{"one_channel_5x5", {2, 1, 8, 6}, 3, 1, {5, 5}, {1, 2}, {1, 1}, {2, 2, 2, 2}},
        ConvCase{"pointwise", {2, 7, 4, 3}, 5, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
        ConvCase{"same_upper", {1, 2, 7, 8}, 3, 1, {4, 3}, {2, 3}, {1, 1}, {}, "SAME_UPPER"},
        ConvCase{"same_lower", {1, 2, 7, 8}, 3, 1, {4, 3}, {2, 3}, {1, 1}, {}, "SAME_LOWER"},
        ConvCase{"valid", {1, 2, 7, 8}, 3, 1, {3, 2}, {2, 2}, {1, 1}, {}, "VALID"},
        ConvCase{"conv1d", {2, 3, 17}, 4, 1, {5}, {2}, {2}, {3, 1}},
        ConvCase{
            "conv3d", {1, 2, 5, 4, 6}, 3, 1, {3, 2, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}}),
    [](const auto& info) { return info.param.name; });

struct PoolCase {
  std::string name, op;                                        // MaxPool or AveragePool
  Shape x;                                                     // N, C, H, W
  std::vector<std::int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  bool ceil = false, count_pad = false;
};

std::ostream& operator<<(std::ostream& os, const PoolCase& c) { return os << c.name; }

class PoolVsNaive : public ::testing::TestWithParam<PoolCase> {};

// 2-D pools in double against direct loops: padding taps are skipped (MaxPool, AveragePool's
// divisor without count_include_pad) or counted up to the declared end pad (with it).
TEST_P(PoolVsNaive, Matches) {
  const PoolCase& c = GetParam();
  std::int64_t out[2];
  for (int d = 0; d < 2; ++d) {
    const std::int64_t span = (c.kernel[d] - 1) * c.dilations[d] + 1;
    const std::int64_t room = c.x[2 + d] + c.pads[d] + c.pads[d + 2] - span;
    out[d] = (c.ceil ? (room + c.strides[d] - 1) / c.strides[d] : room / c.strides[d]) + 1;
    if (c.ceil && (out[d] - 1) * c.strides[d] >= c.x[2 + d] + c.pads[d]) --out[d];
  }
  auto rng = test::rng(std::hash<std::string>{}(c.name));
  const Tensor x = test::random_tensor(rng, c.x);
  OnnxBuilder builder(12);
  builder.input("x", F, testing::Dims(c.x.begin(), c.x.end()));
  auto& n = builder.node(c.op, {"x"}, {"y"}, "pool");
  OnnxBuilder::attr(n, "kernel_shape", c.kernel);
  OnnxBuilder::attr(n, "strides", c.strides);
  OnnxBuilder::attr(n, "pads", c.pads);
  if (c.op == "MaxPool") OnnxBuilder::attr(n, "dilations", c.dilations);
  if (c.ceil) OnnxBuilder::attr(n, "ceil_mode", std::int64_t{1});
  if (c.count_pad) OnnxBuilder::attr(n, "count_include_pad", std::int64_t{1});
  builder.output("y", F, {"n", "c", "h", "w"});
  const Tensor y = Executor(import_onnx_bytes(builder.bytes(), c.name)).run({{"x", x}}).at("y");
  ASSERT_EQ(y.shape(), (Shape{c.x[0], c.x[1], out[0], out[1]})) << c.name;
  const auto xv = x.values<float>();
  const std::int64_t h = c.x[2], w = c.x[3];
  std::size_t i = 0;
  for (std::int64_t plane = 0; plane < c.x[0] * c.x[1]; ++plane)
    for (std::int64_t oh = 0; oh < out[0]; ++oh)
      for (std::int64_t ow = 0; ow < out[1]; ++ow, ++i) {
        double acc = c.op == "MaxPool" ? -INFINITY : 0.0;
        std::int64_t valid = 0, padded = 0;
        for (std::int64_t kh = 0; kh < c.kernel[0]; ++kh)
          for (std::int64_t kw = 0; kw < c.kernel[1]; ++kw) {
            const std::int64_t ih = oh * c.strides[0] - c.pads[0] + kh * c.dilations[0];
            const std::int64_t iw = ow * c.strides[1] - c.pads[1] + kw * c.dilations[1];
            if (ih < h + c.pads[2] && iw < w + c.pads[3]) ++padded;
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const double v = xv[(plane * h + ih) * w + iw];
            acc = c.op == "MaxPool" ? std::max(acc, v) : acc + v;
            ++valid;
          }
        if (c.op == "AveragePool") acc /= static_cast<double>(c.count_pad ? padded : valid);
        ASSERT_NEAR(y.values<float>()[i], acc, 1e-4 * (1 + std::fabs(acc)))
            << c.name << " element " << i << ", " << test::seed_text();
      }
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, PoolVsNaive,
    ::testing::Values(
        PoolCase{"max_2x2_s2", "MaxPool", {2, 3, 8, 9}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
        PoolCase{"max_2x2_s2_pads_ceil",
                 "MaxPool",
                 {1, 2, 7, 7},
                 {2, 2},
                 {2, 2},
                 {1, 1},
                 {1, 1, 0, 1},
                 true},
        PoolCase{"max_3x3_s1_pads", "MaxPool", {1, 2, 6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
        PoolCase{"max_dilated_ceil",
                 "MaxPool",
                 {1, 1, 9, 10},
                 {2, 3},
                 {2, 3},
                 {2, 2},
                 {0, 1, 1, 0},
                 true},
        PoolCase{
            "avg_3x3_s2_pads", "AveragePool", {2, 2, 7, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        PoolCase{"avg_count_pad_ceil",
                 "AveragePool",
                 {1, 2, 7, 6},
                 {3, 2},
                 {2, 2},
                 {1, 1},
                 {1, 0, 1, 1},
                 true,
                 true}),
    [](const auto& info) { return info.param.name; });

TEST(MatMul, BroadcastsBatchAxes) {
  auto rng = test::rng(3);
  const Tensor a = test::random_tensor(rng, {2, 1, 3, 4});
  const Tensor b = test::random_tensor(rng, {5, 4, 2});
  OnnxBuilder builder(17);
  builder.input("a", F, {2, 1, 3, 4});
  builder.input("b", F, {5, 4, 2});
  builder.node("MatMul", {"a", "b"}, {"y"}, "mm");
  builder.output("y", F, {2, 5, 3, 2});
  const Tensor y =
      Executor(import_onnx_bytes(builder.bytes(), "mm")).run({{"a", a}, {"b", b}}).at("y");
  ASSERT_EQ(y.shape(), (Shape{2, 5, 3, 2}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j)
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 2; ++c) {
          double acc = 0;
          for (int k = 0; k < 4; ++k)
            acc += double(a.values<float>()[(i * 3 + r) * 4 + k]) *
                   b.values<float>()[(j * 4 + k) * 2 + c];
          EXPECT_NEAR(y.values<float>()[((i * 5 + j) * 3 + r) * 2 + c], acc, 1e-5)
              << test::seed_text();
        }
}

TEST(Executor, ChecksItsInputs) {
  OnnxBuilder builder(17);
  builder.input("x", F, {std::string("n"), 3});
  builder.node("Relu", {"x"}, {"y"}, "relu");
  builder.output("y", F, {std::string("n"), 3});
  const Graph g = import_onnx_bytes(builder.bytes(), "relu");
  ResolveOptions o;
  o.input_shapes["x"] = {2, 3};
  const Executor exec(g, o);
  auto rng = test::rng(4);
  EXPECT_NO_THROW(exec.run({{"x", test::random_tensor(rng, {2, 3})}}));
  try {
    exec.run({{"x", test::random_tensor(rng, {4, 3})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    EXPECT_NE(std::string(e.what()).find("float32[2, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(exec.run({}), Error);
  EXPECT_THROW(exec.run({{"x", test::random_tensor(rng, {2, 3})}, {"z", Tensor::scalar<float>(1)}}),
               Error);
  EXPECT_THROW(exec.run({{"x", Tensor::from_values<std::int64_t>({2, 3}, {1, 2, 3, 4, 5, 6})}}),
               Error);
  EXPECT_THROW(exec.run({{"x", test::random_tensor(rng, {2, 3})}}, {"no_such_tensor"}), Error);
}

TEST(Executor, KeepsRequestedIntermediates) {
  OnnxBuilder builder(17);
  builder.input("x", F, {4});
  builder.node("Neg", {"x"}, {"h"}, "neg");
  builder.node("Relu", {"h"}, {"y"}, "relu");
  builder.output("y", F, {4});
  const Executor exec(import_onnx_bytes(builder.bytes(), "keep"));
  const TensorMap out = exec.run({{"x", Tensor::from_values<float>({4}, {-2, -1, 1, 2})}}, {"h"});
  ASSERT_TRUE(out.contains("h"));
  EXPECT_EQ(out.at("h").values<float>()[0], 2.0f);
  EXPECT_EQ(out.at("y").values<float>()[3], 0.0f);
}

TEST(SupportedOps, ListsTheKernels) {
  const auto ops = supported_ops();
  auto has = [&](const std::string& op) {
    return std::any_of(ops.begin(), ops.end(),
                       [&](const SupportedOp& s) { return s.op_type == op; });
  };
  for (const char* op :
       {"Conv", "Gemm", "MatMul", "Softmax", "LayerNormalization", "Where", "Cast"})
    EXPECT_TRUE(has(op)) << op;
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end(),
                             [](const auto& a, const auto& b) { return a.op_type < b.op_type; }));
}

}  // namespace
}  // namespace qforge::model
