// ONNX export of a Graph: what import reads back is the same graph (names, attributes of every
// kind, initializers, symbolic dims), it runs to the same outputs, and a graph ONNX's checker
// or shape inference refuses is an error, never a file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_export.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

Graph conv_model(std::mt19937_64& g) {
  OnnxBuilder b(17);
  b.input("x", F, {std::string("batch"), 2, 5, 5}).output("y", F, {std::string("batch"), 27});
  b.initializer("w", {3, 2, 2, 2}, test::random_values(g, 24));
  b.initializer_i64("shape", {2}, {0, -1});
  auto& conv = b.node("Conv", {"x", "w"}, {"c"}, "conv");
  OnnxBuilder::attr(conv, "strides", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(conv, "auto_pad", std::string("SAME_UPPER"));
  OnnxBuilder::attr(b.node("LeakyRelu", {"c"}, {"l"}, "act"), "alpha", 0.25f);
  b.node("Reshape", {"l", "shape"}, {"y"}, "flat");
  return import_onnx_bytes(b.bytes(), "conv");
}

TEST(OnnxExport, ImportReadsBackTheSameGraph) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(1);
  const Graph graph = conv_model(g);
  const Graph back = import_onnx_bytes(export_onnx_bytes(graph), "exported");
  EXPECT_EQ(back.opset, graph.opset);
  ASSERT_EQ(back.nodes.size(), graph.nodes.size());
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].name, graph.nodes[i].name);
    EXPECT_EQ(back.nodes[i].op_type, graph.nodes[i].op_type);
    EXPECT_EQ(back.nodes[i].since_version, graph.nodes[i].since_version);
    EXPECT_EQ(back.nodes[i].inputs, graph.nodes[i].inputs);
    EXPECT_EQ(back.nodes[i].attributes.size(), graph.nodes[i].attributes.size());
  }
  EXPECT_EQ(back.nodes[0].attr_ints_or("strides", {}), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(back.nodes[0].attr_string_or("auto_pad", ""), "SAME_UPPER");
  EXPECT_EQ(back.inputs.at(0).dims.at(0).symbol, "batch");
  ASSERT_NE(back.initializer("w"), nullptr);
  EXPECT_EQ(back.initializer("w")->shape(), (Shape{3, 2, 2, 2}));

  const Executor a(graph, {.input_shapes = {{"x", {3, 2, 5, 5}}}});
  const Executor b(back, {.input_shapes = {{"x", {3, 2, 5, 5}}}});
  TensorMap in;
  in.emplace("x", test::random_tensor(g, {3, 2, 5, 5}));
  const Tensor ya = a.run(in).at("y"), yb = b.run(in).at("y");
  ASSERT_EQ(ya.shape(), yb.shape());
  EXPECT_EQ(0, std::memcmp(ya.data(), yb.data(), ya.byte_size()));
}

TEST(OnnxExport, ResolvedGraphsKeepTheirShapes) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(2);
  const Executor e(conv_model(g), {.input_shapes = {{"x", {4, 2, 5, 5}}}});
  const Graph back = import_onnx_bytes(export_onnx_bytes(e.graph()), "resolved");
  EXPECT_EQ(back.inputs.at(0).shape(), (Shape{4, 2, 5, 5}));
  EXPECT_EQ(back.outputs.at(0).shape(), (Shape{4, 27}));
}

TEST(OnnxExport, RefusesWhatOnnxRefuses) {
  auto g = test::rng(3);
  Graph graph = conv_model(g);
  graph.nodes[1].attributes["no_such_attribute"] = std::int64_t{1};
  try {
    export_onnx_bytes(graph);
    FAIL() << "exported a LeakyRelu with an unknown attribute";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("onnx::checker"), std::string::npos) << e.what();
  }
  graph = conv_model(g);
  graph.initializers.at("w") = Tensor(ElementType::int64, {3, 2, 2, 2});  // Conv needs float
  try {
    export_onnx_bytes(graph);
    FAIL() << "exported a Conv with int64 weights";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("shape inference"), std::string::npos) << e.what();
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("qforge_export_" + std::to_string(test::run_seed()));
  std::filesystem::create_directories(dir);
  EXPECT_THROW(export_onnx_file(graph, dir / "bad.onnx"), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.onnx"));
  export_onnx_file(conv_model(g), dir / "good.onnx");
  EXPECT_EQ(import_onnx_file(dir / "good.onnx").nodes.size(), 3u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qforge::model
