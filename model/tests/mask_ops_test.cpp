// The ops exporters write around attention masks and position ids (Less, Greater, LessOrEqual,
// GreaterOrEqual, And, Or, Xor, Not, Max, Min, Range) against plain loops on fresh random
// inputs with broadcasting, and their errors.
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
constexpr int B = onnx::TensorProto::BOOL;

// Index of output element `flat` (shape `out`) in an operand of shape `in` under numpy
// broadcasting, computed per element, independent of the kernels' row walker.
std::int64_t source_index(const Shape& out, const Shape& in, std::int64_t flat) {
  std::int64_t idx = 0, step = 1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t d = out.size() - 1 - i;
    const std::int64_t coord = flat % out[d];
    flat /= out[d];
    if (i < in.size()) {
      const std::int64_t extent = in[in.size() - 1 - i];
      if (extent != 1) idx += coord * step;
      step *= extent;
    }
  }
  return idx;
}

Tensor random_ints(std::mt19937_64& g, const Shape& s, std::int64_t lo, std::int64_t hi) {
  std::uniform_int_distribution<std::int64_t> d(lo, hi);
  std::vector<std::int64_t> v(static_cast<std::size_t>(element_count(s)));
  for (auto& x : v) x = d(g);
  return Tensor::from_values<std::int64_t>(s, std::span<const std::int64_t>(v));
}

Tensor random_bools(std::mt19937_64& g, const Shape& s) {
  Tensor t(ElementType::boolean, s);
  std::bernoulli_distribution d(0.5);
  for (bool& b : t.values<bool>()) b = d(g);
  return t;
}

onnx::TensorProto_DataType onnx_type(ElementType t) {
  return t == ElementType::float32 ? onnx::TensorProto::FLOAT
         : t == ElementType::int64 ? onnx::TensorProto::INT64
                                   : onnx::TensorProto::BOOL;
}

testing::Dims dims(const Shape& s) { return testing::Dims(s.begin(), s.end()); }

Tensor run_binary(const std::string& op, const Tensor& a, const Tensor& b, const Shape& out,
                  ElementType out_type, int opset = 17) {
  OnnxBuilder builder(opset);
  builder.input("a", onnx_type(a.type()), dims(a.shape()));
  builder.input("b", onnx_type(b.type()), dims(b.shape()));
  builder.node(op, {"a", "b"}, {"y"}, "op");
  builder.output("y", onnx_type(out_type), dims(out));
  return Executor(import_onnx_bytes(builder.bytes(), op)).run({{"a", a}, {"b", b}}).at("y");
}

struct Shapes {
  Shape a, b, out;
};
const Shapes kShapes[] = {{{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
                          {{2, 1, 4}, {3, 1}, {2, 3, 4}},
                          {{5}, {}, {5}},
                          {{1, 1, 1, 7}, {4, 1, 6, 1}, {4, 1, 6, 7}}};

TEST(Comparisons, MatchPlainLoops) {
  auto g = test::rng(11);
  for (const char* op : {"Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    for (const Shapes& s : kShapes)
      for (ElementType type : {ElementType::float32, ElementType::int64}) {
        // Small integer ranges make equal pairs frequent, so the OrEqual cases matter.
        const Tensor a =
            type == ElementType::float32 ? test::random_tensor(g, s.a) : random_ints(g, s.a, -3, 3);
        const Tensor b =
            type == ElementType::float32 ? test::random_tensor(g, s.b) : random_ints(g, s.b, -3, 3);
        const Tensor y = run_binary(op, a, b, s.out, ElementType::boolean);
        ASSERT_EQ(y.shape(), s.out);
        for (std::int64_t i = 0; i < y.size(); ++i) {
          double x, z;
          if (type == ElementType::float32) {
            x = a.values<float>()[source_index(s.out, s.a, i)];
            z = b.values<float>()[source_index(s.out, s.b, i)];
          } else {
            x = double(a.values<std::int64_t>()[source_index(s.out, s.a, i)]);
            z = double(b.values<std::int64_t>()[source_index(s.out, s.b, i)]);
          }
          const std::string o = op;
          const bool want = o == "Less"          ? x < z
                            : o == "Greater"     ? x > z
                            : o == "LessOrEqual" ? x <= z
                                                 : x >= z;
          ASSERT_EQ(y.values<bool>()[i], want)
              << op << " " << to_string(type) << " " << qforge::to_string(s.out) << " element " << i
              << ", " << test::seed_text();
        }
      }
}

TEST(Logical, MatchPlainLoops) {
  auto g = test::rng(12);
  for (const char* op : {"And", "Or", "Xor"})
    for (const Shapes& s : kShapes) {
      const Tensor a = random_bools(g, s.a), b = random_bools(g, s.b);
      const Tensor y = run_binary(op, a, b, s.out, ElementType::boolean);
      for (std::int64_t i = 0; i < y.size(); ++i) {
        const bool x = a.values<bool>()[source_index(s.out, s.a, i)];
        const bool z = b.values<bool>()[source_index(s.out, s.b, i)];
        const std::string o = op;
        const bool want = o == "And" ? (x && z) : o == "Or" ? (x || z) : (x != z);
        ASSERT_EQ(y.values<bool>()[i], want) << op << " element " << i << ", " << test::seed_text();
      }
    }
  const Tensor x = random_bools(g, {3, 5});
  OnnxBuilder builder(17);
  builder.input("x", B, {3, 5});
  builder.node("Not", {"x"}, {"y"}, "not");
  builder.output("y", B, {3, 5});
  const Tensor y = Executor(import_onnx_bytes(builder.bytes(), "not")).run({{"x", x}}).at("y");
  for (std::int64_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y.values<bool>()[i], !x.values<bool>()[i]) << test::seed_text();
}

TEST(MaxMin, MatchPlainLoopsOverThreeInputs) {
  auto g = test::rng(13);
  const Shape sa{2, 1, 4}, sb{3, 1}, sc{4}, out{2, 3, 4};
  for (const char* op : {"Max", "Min"}) {
    const Tensor a = test::random_tensor(g, sa), b = test::random_tensor(g, sb),
                 c = test::random_tensor(g, sc);
    OnnxBuilder builder(13);
    builder.input("a", F, dims(sa)).input("b", F, dims(sb)).input("c", F, dims(sc));
    builder.node(op, {"a", "b", "c"}, {"y"}, "mm");
    builder.output("y", F, dims(out));
    const Tensor y = Executor(import_onnx_bytes(builder.bytes(), op))
                         .run({{"a", a}, {"b", b}, {"c", c}})
                         .at("y");
    ASSERT_EQ(y.shape(), out);
    for (std::int64_t i = 0; i < y.size(); ++i) {
      const float x = a.values<float>()[source_index(out, sa, i)];
      const float z = b.values<float>()[source_index(out, sb, i)];
      const float w = c.values<float>()[source_index(out, sc, i)];
      const float want = std::string(op) == "Max" ? std::max({x, z, w}) : std::min({x, z, w});
      ASSERT_EQ(y.values<float>()[i], want) << op << " element " << i << ", " << test::seed_text();
    }
  }
  // int64 and NaN propagation.
  const Tensor a = Tensor::from_values<float>({3}, {1.0f, NAN, -2.0f});
  const Tensor b = Tensor::from_values<float>({3}, {NAN, 0.0f, -1.0f});
  const Tensor y = run_binary("Max", a, b, {3}, ElementType::float32);
  EXPECT_TRUE(std::isnan(y.values<float>()[0]) && std::isnan(y.values<float>()[1]));
  EXPECT_EQ(y.values<float>()[2], -1.0f);
  const Tensor ia = random_ints(g, {4, 3}, -100, 100), ib = random_ints(g, {3}, -100, 100);
  const Tensor iy = run_binary("Min", ia, ib, {4, 3}, ElementType::int64);
  for (std::int64_t i = 0; i < iy.size(); ++i)
    ASSERT_EQ(iy.values<std::int64_t>()[i],
              std::min(ia.values<std::int64_t>()[i], ib.values<std::int64_t>()[i % 3]))
        << test::seed_text();
}

TEST(MaxMin, Version6RefusesBroadcasting) {
  OnnxBuilder builder(6);
  builder.input("a", F, {2, 3}).input("b", F, {3});
  builder.node("Max", {"a", "b"}, {"y"}, "max6");
  builder.output("y", F, {2, 3});
  try {
    Executor(import_onnx_bytes(builder.bytes(), "max6"));
    FAIL() << "Max 6 must refuse shapes that differ";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch) << e.what();
    EXPECT_NE(std::string(e.what()).find("version 6 does not broadcast"), std::string::npos)
        << e.what();
  }
}

// Range from the input's shape, as torch.arange(x.size(1)) exports: folded to a constant.
TEST(Range, FoldsFromShapesAndMatchesTheDefinition) {
  auto g = test::rng(14);
  std::uniform_int_distribution<std::int64_t> len(1, 40), step(1, 5);
  const std::int64_t n = len(g), delta = step(g);
  OnnxBuilder builder(17);
  builder.input("x", F, {2, std::string("seq")});
  builder.initializer_i64("axis1", {}, {1});
  builder.initializer_i64("zero", {}, {0});
  builder.initializer_i64("delta", {}, {delta});
  builder.node("Shape", {"x"}, {"shape"}, "shape");
  builder.node("Gather", {"shape", "axis1"}, {"seq_len"}, "seq_len");
  // limit = seq_len * delta, so the range has seq_len elements whatever delta is.
  builder.node("Mul", {"seq_len", "delta"}, {"limit"}, "limit");
  builder.node("Range", {"zero", "limit", "delta"}, {"r"}, "range");
  builder.node("Cast", {"r"}, {"rf"}, "cast");
  OnnxBuilder::attr(builder.proto().mutable_graph()->mutable_node(4)[0], "to",
                    std::int64_t{onnx::TensorProto::FLOAT});
  builder.node("Add", {"x", "rf"}, {"y"}, "add");
  builder.output("y", F, {2, std::string("seq")});
  ResolveOptions options;
  options.input_shapes["x"] = {2, n};
  const Executor exec(import_onnx_bytes(builder.bytes(), "range"), options);
  // Range (and the Cast of its result) folded away.
  for (const Node& node : exec.graph().nodes) EXPECT_NE(node.op_type, "Range");
  const Tensor x = test::random_tensor(g, {2, n});
  const Tensor y = exec.run({{"x", x}}).at("y");
  for (std::int64_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y.values<float>()[i], x.values<float>()[i] + float((i % n) * delta))
        << test::seed_text();
}

TEST(Range, FloatAndEmptyAndErrors) {
  auto range_of = [](float start, float limit, float delta) {
    OnnxBuilder builder(17);
    builder.initializer("s", {}, {start})
        .initializer("l", {}, {limit})
        .initializer("d", {}, {delta});
    builder.node("Range", {"s", "l", "d"}, {"y"}, "range");
    builder.output("y", F, {std::string("n")});
    return Executor(import_onnx_bytes(builder.bytes(), "range")).run({}).at("y");
  };
  auto g = test::rng(15);
  std::uniform_real_distribution<float> u(-10.0f, 10.0f), du(0.1f, 2.0f);
  const float s = u(g), l = u(g), d = (l >= s ? 1.0f : -1.0f) * du(g);
  const Tensor y = range_of(s, l, d);
  const auto count = static_cast<std::int64_t>(std::ceil((double(l) - s) / d));
  ASSERT_EQ(y.size(), std::max<std::int64_t>(count, 0)) << test::seed_text();
  for (std::int64_t i = 0; i < y.size(); ++i)
    ASSERT_EQ(y.values<float>()[i], s + float(i) * d) << test::seed_text();
  EXPECT_EQ(range_of(5.0f, 1.0f, 1.0f).size(), 0);  // empty, not an error
  try {
    range_of(0.0f, 1.0f, 0.0f);
    FAIL() << "delta 0 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("delta non-zero"), std::string::npos) << e.what();
  }
}

TEST(Range, RefusesALimitComputedFromData) {
  OnnxBuilder builder(17);
  builder.input("limit", I64, {});
  builder.initializer_i64("zero", {}, {0}).initializer_i64("one", {}, {1});
  builder.node("Range", {"zero", "limit", "one"}, {"y"}, "range");
  builder.output("y", I64, {std::string("n")});
  try {
    Executor(import_onnx_bytes(builder.bytes(), "range"));
    FAIL() << "a data-dependent length must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("limit input 'limit' is not constant"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace qforge::model
