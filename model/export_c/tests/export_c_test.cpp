// The exported C against qforge's integer execution of the same program, byte for byte: the
// Fashion-MNIST example models and random small graphs, int8 and 16x8, compiled with the
// system's cc (and clang where it runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "c_harness.h"
#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/onnx_import.h"
#ifdef QFORGE_TEST_HAVE_DATA
#include "data/dataset.h"
#endif

namespace qforge::model {
namespace {

using testing::CompiledModel;

std::uint32_t fresh_seed() { return std::random_device{}(); }

std::vector<float> random_values(std::mt19937& rng, std::int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// Batches of `rows` samples of `sample` shape drawn uniformly from [lo, hi].
std::vector<TensorMap> random_batches(std::mt19937& rng, const std::string& input, Shape sample,
                                      int count, std::int64_t rows, float lo, float hi) {
  std::vector<TensorMap> batches;
  sample.insert(sample.begin(), rows);
  for (int i = 0; i < count; ++i) {
    const auto v = random_values(rng, element_count(sample), lo, hi);
    TensorMap m;
    m.emplace(input, Tensor::from_values<float>(sample, v));
    batches.push_back(std::move(m));
  }
  return batches;
}

LowerOptions with_activations(DType activations) {
  LowerOptions o;
  o.activations = activations;
  return o;
}

// Runs every sample through qforge and through the compiled C; expects identical bytes. Returns
// the predicted class (the first largest output) of each sample.
std::vector<std::int64_t> expect_identical(const IntegerProgram& p, const CompiledModel& c,
                                           const std::vector<float>& samples) {
  const auto in_size = static_cast<std::size_t>(element_count(p.input_shape));
  std::string expected;
  std::vector<std::int64_t> classes;
  for (std::size_t s = 0; s + in_size <= samples.size(); s += in_size) {
    const auto y = run_integer_values(p, std::span(samples).subspan(s, in_size));
    expected += output_bytes(p, y);
    classes.push_back(std::max_element(y.begin(), y.end()) - y.begin());
  }
  const auto actual = c.run(samples);
  EXPECT_EQ(actual.size(), expected.size());
  const auto per_sample = static_cast<std::size_t>(p.output().elements() * p.activation_bytes());
  for (std::size_t i = 0; i < expected.size() && i < actual.size(); ++i)
    if (actual[i] != static_cast<std::int8_t>(expected[i])) {
      ADD_FAILURE() << "output byte " << i << " (sample " << i / per_sample
                    << ") differs; the export is in " << c.dir();
      break;
    }
  return classes;
}

#ifdef QFORGE_TEST_HAVE_DATA
constexpr const char* kData = "/usr/share/datasets/fashion-mnist";
#endif

// Calibration batches and samples for a Fashion-MNIST model: the dataset's images where it is
// installed (with the test images' labels), random images otherwise, and random samples first.
struct FashionData {
  std::vector<TensorMap> batches;
  std::vector<float> samples;
  std::vector<std::int64_t> labels;
  std::size_t labelled_from = 0;  // samples before this one are random
};

FashionData fashion_data(std::mt19937& rng, const std::string& input) {
  FashionData d;
  d.samples = random_values(rng, 16 * 784, 0.0f, 1.0f);
#ifdef QFORGE_TEST_HAVE_DATA
  if (std::filesystem::exists(std::string(kData) + "/train-images-idx3-ubyte.gz")) {
    auto train = cli::DataReader::open(std::string(kData) + "/train-images-idx3-ubyte.gz",
                                       cli::DataRole::samples);
    for (int i = 0; i < 4; ++i) {
      TensorMap m;
      m.emplace(input, *train->next(64));
      d.batches.push_back(std::move(m));
    }
    const Tensor test = *cli::DataReader::open(std::string(kData) + "/t10k-images-idx3-ubyte.gz",
                                               cli::DataRole::samples)
                             ->next(300);
    const auto v = test.values<float>();
    d.labelled_from = d.samples.size() / 784;
    d.samples.insert(d.samples.end(), v.begin(), v.end());
    const Tensor l = *cli::DataReader::open(std::string(kData) + "/t10k-labels-idx1-ubyte.gz",
                                            cli::DataRole::labels)
                          ->next(300);
    const auto lv = l.values<std::int64_t>();
    d.labels.assign(lv.begin(), lv.end());
  }
#endif
  if (d.batches.empty()) d.batches = random_batches(rng, input, {1, 28, 28}, 4, 64, 0, 1);
  return d;
}

// A sanity bound on the predicted classes of the labelled samples, not the accuracy figure
// (docs/C_EXPORT.md has that).
void expect_mostly_right(const FashionData& d, const std::vector<std::int64_t>& classes) {
  if (d.labels.empty()) return;
  std::size_t correct = 0;
  for (std::size_t i = 0; i < d.labels.size(); ++i)
    correct += classes[d.labelled_from + i] == d.labels[i] ? 1 : 0;
  EXPECT_GT(correct, d.labels.size() * 8 / 10) << "integer-only accuracy on 300 test images";
}

class ExampleModel : public ::testing::TestWithParam<std::tuple<const char*, DType>> {};

TEST_P(ExampleModel, ExportedCMatchesQforgeByteForByte) {
  const auto cc = testing::c_compiler();
  if (!cc) GTEST_SKIP() << "no C compiler (cc or $CC) runs here";
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const auto [file, activations] = GetParam();
  const Graph graph = import_onnx_file(std::filesystem::path(QFORGE_EXAMPLES_DIR) / file);
  const FashionData data = fashion_data(rng, graph.inputs[0].name);
  const IntegerProgram p = lower_to_integer(graph, data.batches, with_activations(activations));
  const CExport c = emit_c(p);
  EXPECT_GT(c.report.arena_bytes, 0);
  const CompiledModel compiled(c, *cc);
  ASSERT_TRUE(compiled.ok());
  expect_mostly_right(data, expect_identical(p, compiled, data.samples));
}

INSTANTIATE_TEST_SUITE_P(FashionMnist, ExampleModel,
                         ::testing::Combine(::testing::Values("mlp.onnx", "cnn.onnx"),
                                            ::testing::Values(DType::int8, DType::int16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)).substr(0, 3) + "_" +
                                  std::string(name(std::get<1>(info.param)));
                         });

// The example model with a Softmax after its logits, as a classifier exported for its
// probabilities would end.
Graph with_softmax(const std::filesystem::path& file) {
  onnx::ModelProto model;
  {
    std::ifstream in(file, std::ios::binary);
    if (!model.ParseFromIstream(&in))
      throw Error(ErrorCode::io, "cannot read the ONNX model " + file.string());
  }
  onnx::GraphProto& g = *model.mutable_graph();
  const std::string logits = g.output(0).name();
  onnx::NodeProto& n = *g.add_node();
  n.set_op_type("Softmax");
  n.set_name("probabilities");
  n.add_input(logits);
  n.add_output("probabilities");
  g.mutable_output(0)->set_name("probabilities");
  const std::string bytes = model.SerializeAsString();
  const auto* b = reinterpret_cast<const std::byte*>(bytes.data());
  return import_onnx_bytes(std::span(b, bytes.size()), file.filename().string() + " + Softmax");
}

// Both Fashion-MNIST models ending in Softmax: the int8 softmax's bytes are the same from
// qforge and from the C of every compiler (cc, clang, cc -m32 where they run).
TEST(ExportC, FashionMnistEndingInSoftmaxMatchesOnEveryCompiler) {
  const auto compilers = testing::c_compilers();
  if (compilers.empty()) GTEST_SKIP() << "no C compiler (cc or $CC) runs here";
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (const char* file : {"mlp.onnx", "cnn.onnx"}) {
    SCOPED_TRACE(file);
    const Graph graph = with_softmax(std::filesystem::path(QFORGE_EXAMPLES_DIR) / file);
    const FashionData data = fashion_data(rng, graph.inputs[0].name);
    const IntegerProgram p = lower_to_integer(graph, data.batches);
    ASSERT_EQ(p.ops.back().kind, IntegerOpKind::softmax);
    EXPECT_EQ(p.output().scale, 1.0f / 256.0f);
    EXPECT_EQ(p.output().zero_point, -128);
    const CExport c = emit_c(p);
    EXPECT_NE(c.files.at("model.c").find("qf_softmax_s8"), std::string::npos);
    for (const std::string& cc : compilers) {
      SCOPED_TRACE("compiled with " + cc);
      const CompiledModel compiled(c, cc);
      ASSERT_TRUE(compiled.ok());
      expect_mostly_right(data, expect_identical(p, compiled, data.samples));
    }
  }
}

// ---- random small graphs ----

struct RandomGraph {
  std::vector<std::byte> bytes;
  Shape sample;  // input shape without the batch
  std::string description;
};

// `softmax`: the graph may end in a Softmax (int8 programs; the 16x8 variant refuses it).
RandomGraph random_graph(std::mt19937& rng, bool softmax) {
  using testing::OnnxBuilder;
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  OnnxBuilder b(17);
  std::int64_t c = pick(1, 4), h = pick(5, 12), w = pick(5, 12);
  RandomGraph g;
  g.sample = {c, h, w};
  b.input("x", onnx::TensorProto::FLOAT, {1, c, h, w});
  std::string cur = "x";
  int id = 0;
  auto name = [&](const std::string& base) { return base + std::to_string(id++); };
  auto weights = [&](std::int64_t n, std::int64_t fan_in) {
    const float a = 1.5f / std::sqrt(static_cast<float>(fan_in));
    return random_values(rng, n, -a, a);
  };
  if (pick(0, 1)) {
    b.initializer("mean", {}, {0.25f});
    b.node("Sub", {cur, "mean"}, {"centered"});
    cur = "centered";
    g.description += "Sub ";
  }
  const int convs = pick(1, 3);
  for (int i = 0; i < convs; ++i) {
    const bool depthwise = c > 1 && pick(0, 2) == 0;
    const std::int64_t groups = depthwise ? c : 1;
    const std::int64_t o = depthwise ? c * pick(1, 2) : pick(1, 6);
    const std::int64_t k = pick(1, 3), stride = pick(1, 2), dil = pick(1, 2);
    const std::int64_t pad = pick(0, static_cast<int>(k - 1));
    const std::int64_t span = dil * (k - 1) + 1;
    if (h + 2 * pad < span || w + 2 * pad < span) break;
    const std::string wn = name("w"), bn = name("b"), out = name("conv");
    b.initializer(wn, {o, c / groups, k, k}, weights(o * (c / groups) * k * k, c / groups * k * k));
    b.initializer(bn, {o}, random_values(rng, o, -0.5f, 0.5f));
    auto& node = b.node("Conv", {cur, wn, bn}, {out}, name("Conv"));
    OnnxBuilder::attr(node, "kernel_shape", std::vector<std::int64_t>{k, k});
    OnnxBuilder::attr(node, "strides", std::vector<std::int64_t>{stride, stride});
    OnnxBuilder::attr(node, "dilations", std::vector<std::int64_t>{dil, dil});
    OnnxBuilder::attr(node, "pads", std::vector<std::int64_t>{pad, pad, pad, pad});
    OnnxBuilder::attr(node, "group", groups);
    g.description += "Conv(o=" + std::to_string(o) + " k=" + std::to_string(k) +
                     " s=" + std::to_string(stride) + " d=" + std::to_string(dil) +
                     " p=" + std::to_string(pad) + " g=" + std::to_string(groups) + ") ";
    cur = out, c = o;
    h = (h + 2 * pad - span) / stride + 1, w = (w + 2 * pad - span) / stride + 1;
    const int act = pick(0, 2);
    if (act == 1) {
      const std::string out_a = name("relu");
      b.node("Relu", {cur}, {out_a});
      cur = out_a;
      g.description += "Relu ";
    } else if (act == 2) {
      const std::string lo = name("lo"), hi = name("hi"), out_a = name("clip");
      b.initializer(lo, {}, {0.0f});
      b.initializer(hi, {}, {6.0f});
      b.node("Clip", {cur, lo, hi}, {out_a});
      cur = out_a;
      g.description += "Relu6 ";
    }
    if (pick(0, 2) == 0) {  // a residual block: x + Conv(x), same shape, maybe a Relu after
      const std::int64_t rk = pick(0, 1) * 2 + 1, rp = (rk - 1) / 2;
      const std::string wr = name("w"), br = name("b"), out_c = name("res"), out_s = name("sum");
      b.initializer(wr, {c, c, rk, rk}, weights(c * c * rk * rk, c * rk * rk));
      b.initializer(br, {c}, random_values(rng, c, -0.5f, 0.5f));
      auto& rn = b.node("Conv", {cur, wr, br}, {out_c}, name("Conv"));
      OnnxBuilder::attr(rn, "kernel_shape", std::vector<std::int64_t>{rk, rk});
      OnnxBuilder::attr(rn, "pads", std::vector<std::int64_t>{rp, rp, rp, rp});
      b.node("Add", {cur, out_c}, {out_s}, name("Add"));
      cur = out_s;
      g.description += "Residual(k=" + std::to_string(rk) + ") ";
      if (pick(0, 1)) {
        const std::string out_r = name("relu");
        b.node("Relu", {cur}, {out_r});
        cur = out_r;
        g.description += "Relu ";
      }
    }
    if (h >= 2 && w >= 2 && pick(0, 1)) {
      const bool max = pick(0, 1);
      const std::int64_t pk = 2, ps = pick(1, 2), pp = pick(0, 1);
      const std::string out_p = name("pool");
      auto& pn = b.node(max ? "MaxPool" : "AveragePool", {cur}, {out_p}, name("Pool"));
      OnnxBuilder::attr(pn, "kernel_shape", std::vector<std::int64_t>{pk, pk});
      OnnxBuilder::attr(pn, "strides", std::vector<std::int64_t>{ps, ps});
      OnnxBuilder::attr(pn, "pads", std::vector<std::int64_t>{pp, pp, pp, pp});
      if (!max) OnnxBuilder::attr(pn, "count_include_pad", std::int64_t{pick(0, 1)});
      g.description += std::string(max ? "MaxPool" : "AveragePool") + "(s=" + std::to_string(ps) +
                       " p=" + std::to_string(pp) + ") ";
      cur = out_p;
      h = (h + 2 * pp - pk) / ps + 1, w = (w + 2 * pp - pk) / ps + 1;
    }
  }
  if (pick(0, 1)) {
    b.node("GlobalAveragePool", {cur}, {"gap"});
    cur = "gap", h = w = 1;
    g.description += "GlobalAveragePool ";
  }
  b.node("Flatten", {cur}, {"flat"});
  cur = "flat";
  std::int64_t k = c * h * w;
  const int denses = pick(1, 2);
  const bool ends_in_softmax = softmax && pick(0, 2) == 0;
  for (int i = 0; i < denses; ++i) {
    const std::int64_t n = pick(2, 12);
    const bool matmul = pick(0, 3) == 0;  // MatMul: a [K, N] weight and no bias
    const bool trans_b = !matmul && pick(0, 1);
    const std::string wn = name("fw"), bn = name("fb"),
                      out = i + 1 == denses && !ends_in_softmax ? "y" : name("fc");
    b.initializer(wn, trans_b ? std::vector<std::int64_t>{n, k} : std::vector<std::int64_t>{k, n},
                  weights(n * k, k));
    if (matmul) {
      b.node("MatMul", {cur, wn}, {out}, name("MatMul"));
      g.description += "MatMul(n=" + std::to_string(n) + ") ";
    } else {
      b.initializer(bn, {n}, random_values(rng, n, -0.5f, 0.5f));
      auto& node = b.node("Gemm", {cur, wn, bn}, {out}, name("Gemm"));
      OnnxBuilder::attr(node, "transB", std::int64_t{trans_b ? 1 : 0});
      g.description += "Gemm(n=" + std::to_string(n) + (trans_b ? " transB" : "") + ") ";
    }
    cur = out, k = n;
    if (i + 1 < denses) {
      const std::string out_r = name("frelu");
      b.node("Relu", {cur}, {out_r});
      cur = out_r;
    }
  }
  if (ends_in_softmax) {
    auto& node = b.node("Softmax", {cur}, {"y"}, name("Softmax"));
    if (pick(0, 1)) OnnxBuilder::attr(node, "axis", std::int64_t{pick(0, 1) ? 1 : -1});
    g.description += "Softmax ";
  }
  b.output("y", onnx::TensorProto::FLOAT, {1, k});
  g.bytes = b.bytes();
  return g;
}

class RandomGraphs : public ::testing::TestWithParam<DType> {};

TEST_P(RandomGraphs, MatchQforgeByteForByte) {
  const auto compilers = testing::c_compilers();
  if (compilers.empty()) GTEST_SKIP() << "no C compiler (cc or $CC) runs here";
  const int rounds = 2 * static_cast<int>(compilers.size());
  for (int round = 0; round < rounds; ++round) {
    const std::string& cc = compilers[static_cast<std::size_t>(round) % compilers.size()];
    const std::uint32_t seed = fresh_seed();
    std::mt19937 rng(seed);
    const RandomGraph g = random_graph(rng, GetParam() == DType::int8);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + g.description);
    SCOPED_TRACE("compiled with " + cc);
    std::cout << name(GetParam()) << " graph " << round << " (" << cc << "): " << g.description
              << "\n";
    const Graph graph = import_onnx_bytes(g.bytes, "random graph");
    Shape one = g.sample;
    one.insert(one.begin(), 1);
    const auto batches = random_batches(rng, "x", g.sample, 8, 1, -1.0f, 1.0f);
    const IntegerProgram p = lower_to_integer(graph, batches, with_activations(GetParam()));
    const CompiledModel compiled(emit_c(p), cc);
    ASSERT_TRUE(compiled.ok());
    // Inputs beyond the calibrated range too, so that saturation is exercised.
    expect_identical(p, compiled, random_values(rng, 24 * element_count(g.sample), -1.5f, 1.5f));
  }
}

INSTANTIATE_TEST_SUITE_P(Activations, RandomGraphs, ::testing::Values(DType::int8, DType::int16),
                         [](const auto& info) { return std::string(name(info.param)); });

// A 16x8 program holds int16 activations: run_integer (int8) refuses it, and the export ships
// the int16 kernels and types.
TEST(ExportC, SixteenByEightProgramUsesTheInt16Kernels) {
  testing::OnnxBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.initializer("w", {4, 3}, std::vector<float>(12, 0.5f));
  b.node("MatMul", {"x", "w"}, {"y"}, "fc");
  b.output("y", onnx::TensorProto::FLOAT, {1, 3});
  const Graph graph = import_onnx_bytes(b.bytes(), "test");
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const auto batches = random_batches(rng, "x", {4}, 2, 1, -1, 1);
  const IntegerProgram p = lower_to_integer(graph, batches, with_activations(DType::int16));
  EXPECT_EQ(p.tensors.front().zero_point, 0);
  // TFLite's multiplier: the ratio of the scales in double.
  const IntegerOp& fc = p.ops.back();
  const double ratio = static_cast<double>(p.tensors.at(fc.input).scale) *
                       static_cast<double>(fc.conv.w_params.scale(0)) /
                       static_cast<double>(p.output().scale);
  EXPECT_EQ(fc.multipliers.at(0).multiplier, reference::quantize_multiplier(ratio).multiplier);
  EXPECT_THROW(run_integer(p, std::vector<float>(4, 0.5f)), Error);
  const CExport c = emit_c(p);
  EXPECT_TRUE(c.files.count("qforge_nn_int16.c"));
  EXPECT_NE(c.files.at("model.h").find("int16_t *out"), std::string::npos);
  EXPECT_NE(c.files.at("model.c").find("qf_dense_s16"), std::string::npos);
  EXPECT_FALSE(emit_c(lower_to_integer(graph, batches)).files.count("qforge_nn_int16.c"));
  try {
    lower_to_integer(graph, batches, with_activations(DType::uint8));
    FAIL() << "uint8 activations were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("int16 (its 16x8 variant)"), std::string::npos)
        << e.what();
  }
}

// ---- refusals ----

TEST(ExportC, UnsupportedOpIsNamed) {
  testing::OnnxBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.initializer("w", {4, 3}, std::vector<float>(12, 0.5f));
  b.node("MatMul", {"x", "w"}, {"h"}, "fc");
  b.node("Sigmoid", {"h"}, {"y"}, "gate");
  b.output("y", onnx::TensorProto::FLOAT, {1, 3});
  const Graph graph = import_onnx_bytes(b.bytes(), "test");
  std::mt19937 rng(1);
  const auto batches = random_batches(rng, "x", {4}, 1, 2, -1, 1);
  try {
    lower_to_integer(graph, batches);
    FAIL() << "Sigmoid was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Sigmoid 'gate'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("supports Conv"), std::string::npos) << e.what();
  }
}

TEST(ExportC, MissingCalibrationIsAnError) {
  testing::OnnxBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  b.initializer("w", {4, 3}, std::vector<float>(12, 0.5f));
  b.node("MatMul", {"x", "w"}, {"y"}, "fc");
  b.output("y", onnx::TensorProto::FLOAT, {1, 3});
  const Graph graph = import_onnx_bytes(b.bytes(), "test");
  try {
    lower_to_integer(graph, std::span<const TensorMap>{});
    FAIL() << "no calibration was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no calibration batch"), std::string::npos) << e.what();
  }
  try {
    lower_to_integer(graph, [] { return std::optional<TensorMap>(); });
    FAIL() << "an empty calibration source was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no calibration batch"), std::string::npos) << e.what();
  }
}

// The kernels sum in int32: a layer whose accumulator could leave it is refused at export.
TEST(ExportC, AccumulatorThatCouldOverflowIsRefused) {
  const std::int64_t k = 70000;  // 255 * 127 * 70000 > 2^31 for inputs in [0, 1] (zx = -128)
  testing::OnnxBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, k});
  b.initializer("w", {k, 1}, std::vector<float>(static_cast<std::size_t>(k), 0.5f));
  b.node("MatMul", {"x", "w"}, {"y"}, "wide");
  b.output("y", onnx::TensorProto::FLOAT, {1, 1});
  const Graph graph = import_onnx_bytes(b.bytes(), "test");
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const auto batches = random_batches(rng, "x", {k}, 1, 1, 0.0f, 1.0f);
  try {
    lower_to_integer(graph, batches);
    FAIL() << "a possible int32 overflow was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::overflow);
    EXPECT_NE(std::string(e.what()).find("'wide'"), std::string::npos) << e.what();
  }
}

// 16x8 sums run in int64 but must stay below 2^47 for the requantization: a bias that is huge at
// the accumulator's scale (tiny activations and weights, a large C) is refused.
// A ReLU that zeroes (nearly) everything leaves its output a tiny calibrated range: the 16x8
// multiplier (sx * sw) / sy would exceed TFLite's 2^7, so the lowering widens sy; the export
// still matches qforge byte for byte.
TEST(ExportC, SixteenByEightWidensATinyOutputRange) {
  testing::OnnxBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4});
  // h = sum(x) - 3.99999 with x in [0, 1]: below 0 except at x = (1, 1, 1, 1), where it is 1e-5.
  b.initializer("w1", {4, 3}, std::vector<float>(12, 1.0f));
  b.initializer("c1", {3}, std::vector<float>(3, -3.99999f));
  b.node("Gemm", {"x", "w1", "c1"}, {"h"}, "dead");
  b.node("Relu", {"h"}, {"r"}, "relu");
  b.initializer("w2", {3, 2}, std::vector<float>{0.5f, -0.25f, 1.0f, 0.75f, -1.0f, 0.5f});
  b.node("Gemm", {"r", "w2"}, {"y"}, "head");
  b.output("y", onnx::TensorProto::FLOAT, {1, 2});
  const Graph graph = import_onnx_bytes(b.bytes(), "test");
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto batches = random_batches(rng, "x", {4}, 16, 1, 0.0f, 1.0f);
  TensorMap ones;
  ones.emplace("x", Tensor::from_values<float>({1, 4}, std::vector<float>(4, 1.0f)));
  batches.push_back(std::move(ones));
  const IntegerProgram p = lower_to_integer(graph, batches, with_activations(DType::int16));
  for (const IntegerOp& op : p.ops)
    for (const auto& m : op.multipliers) EXPECT_LE(m.shift, 7) << op.node;
  const auto cc = testing::c_compiler();
  if (!cc) GTEST_SKIP() << "no C compiler (cc or $CC) runs here";
  const CompiledModel compiled(emit_c(p), *cc);
  ASSERT_TRUE(compiled.ok());
  expect_identical(p, compiled, random_values(rng, 16 * 4, -0.5f, 1.5f));
}

TEST(ExportC, SixteenByEightSumBeyond2To47IsRefused) {
  testing::OnnxBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 2});
  b.initializer("w", {2, 1}, std::vector<float>{1e-6f, -1e-6f});
  b.initializer("c", {1}, std::vector<float>{1e6f});
  b.node("Gemm", {"x", "w", "c"}, {"y"}, "biased");
  b.output("y", onnx::TensorProto::FLOAT, {1, 1});
  const Graph graph = import_onnx_bytes(b.bytes(), "test");
  const std::uint32_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const auto batches = random_batches(rng, "x", {2}, 2, 1, -1e-6f, 1e-6f);
  try {
    lower_to_integer(graph, batches, with_activations(DType::int16));
    FAIL() << "a sum beyond 2^47 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::overflow);
    EXPECT_NE(std::string(e.what()).find("below 2^47"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qforge::model
