// Import of hand-built models: the IR it produces, and the errors for hostile or unsupported
// files (truncated, garbage, huge dims, unknown op, opset 18, missing input, ...).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/onnx_import.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

// Runs f, expects a qforge::Error with `code` whose message contains every fragment.
template <class Fn>
void expect_error(Fn&& f, ErrorCode code, std::initializer_list<std::string> fragments) {
  try {
    f();
    FAIL() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& frag : fragments)
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos)
          << "message lacks '" << frag << "': " << e.what();
  }
}

OnnxBuilder small_model() {
  OnnxBuilder b(17);
  b.input("x", F, {std::string("batch"), 4});
  b.initializer("w", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  b.node("MatMul", {"x", "w"}, {"h"}, "mm");
  auto& relu = b.node("LeakyRelu", {"h"}, {"y"}, "act");
  OnnxBuilder::attr(relu, "alpha", 0.5f);
  b.output("y", F, {std::string("batch"), 2});
  return b;
}

TEST(OnnxImport, BuildsTheIr) {
  const Graph g = import_onnx_bytes(small_model().bytes(), "small");
  EXPECT_EQ(g.opset, 17);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0].name, "x");
  ASSERT_EQ(g.inputs[0].dims.size(), 2u);
  EXPECT_EQ(g.inputs[0].dims[0].symbol, "batch");
  EXPECT_FALSE(g.inputs[0].dims[0].known());
  EXPECT_EQ(g.inputs[0].dims[1].value, 4);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "MatMul");
  EXPECT_EQ(g.nodes[0].since_version, 13);
  EXPECT_EQ(g.nodes[1].since_version, 16);  // LeakyRelu 16 is what opset 17 selects
  EXPECT_FLOAT_EQ(g.nodes[1].attr_float_or("alpha", 0), 0.5f);
  ASSERT_NE(g.initializer("w"), nullptr);
  EXPECT_EQ(g.initializer("w")->shape(), (Shape{4, 2}));
  EXPECT_EQ(g.initializer("w")->values<float>()[7], 8.0f);
  // Shape inference filled in the intermediate tensor.
  const ValueInfo* h = g.find_value_info("h");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->dims.size(), 2u);
  EXPECT_EQ(h->dims[1].value, 2);
}

TEST(OnnxImport, NamesUnnamedNodes) {
  OnnxBuilder b = small_model();
  b.proto().mutable_graph()->mutable_node(0)->clear_name();
  const Graph g = import_onnx_bytes(b.bytes(), "unnamed");
  EXPECT_FALSE(g.nodes[0].name.empty());
  EXPECT_NE(g.nodes[0].name, g.nodes[1].name);
}

TEST(OnnxImport, TruncatedFileIsCorruptData) {
  auto bytes = small_model().bytes();
  bytes.resize(bytes.size() / 2);
  expect_error([&] { import_onnx_bytes(bytes, "cut.onnx"); }, ErrorCode::corrupt_data,
               {"cut.onnx", "truncated"});
}

TEST(OnnxImport, GarbageBytesAreCorruptData) {
  std::vector<std::byte> garbage(300);
  for (std::size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = std::byte(static_cast<unsigned>(i * 37 + 11));
  expect_error([&] { import_onnx_bytes(garbage, "garbage.bin"); }, ErrorCode::corrupt_data,
               {"garbage.bin"});
  expect_error([&] { import_onnx_bytes({}, "empty.onnx"); }, ErrorCode::corrupt_data,
               {"empty.onnx", "empty"});
}

TEST(OnnxImport, FileOverTheLimitIsRefusedBeforeReading) {
  const auto path = std::filesystem::temp_directory_path() / "qforge_model_limit_test.onnx";
  {
    const auto bytes = small_model().bytes();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  ImportOptions options;
  options.max_file_bytes = 10;
  expect_error([&] { import_onnx_file(path, options); }, ErrorCode::invalid_argument,
               {path.string(), "over the limit"});
  EXPECT_NO_THROW(import_onnx_file(path));
  std::filesystem::remove(path);
  expect_error([&] { import_onnx_file(path); }, ErrorCode::io, {path.string()});
}

TEST(OnnxImport, HugeDeclaredDimsAreRefused) {
  // An initializer that declares 2^40 x 2^40 floats and carries no data.
  OnnxBuilder b = small_model();
  auto& t = b.raw_initializer("huge");
  t.set_data_type(F);
  t.add_dims(std::int64_t{1} << 40);
  t.add_dims(std::int64_t{1} << 40);
  expect_error([&] { import_onnx_bytes(b.bytes(), "huge.onnx"); }, ErrorCode::invalid_argument,
               {"huge.onnx", "initializer 'huge'", "limit"});
  // Within the limit but without the data it declares.
  OnnxBuilder c = small_model();
  auto& u = c.raw_initializer("short");
  u.set_data_type(F);
  u.add_dims(1000);
  u.set_raw_data(std::string(16, '\0'));
  expect_error([&] { import_onnx_bytes(c.bytes(), "short.onnx"); }, ErrorCode::corrupt_data,
               {"initializer 'short'", "raw_data has 16 bytes"});
  // A graph input declaring an impossible static shape.
  OnnxBuilder d(17);
  d.input("x", F, {std::int64_t{1} << 31, std::int64_t{1} << 31});
  d.node("Relu", {"x"}, {"y"});
  d.output("y", F, {std::int64_t{1} << 31, std::int64_t{1} << 31});
  expect_error([&] { import_onnx_bytes(d.bytes(), "dims.onnx"); }, ErrorCode::invalid_argument,
               {"dims.onnx", "value 'x'", "limit"});
}

TEST(OnnxImport, UnknownOpNamesTheNode) {
  OnnxBuilder b(17);
  b.input("x", F, {2});
  b.node("FrobnicateTensor", {"x"}, {"y"}, "frob");
  b.output("y", F, {2});
  expect_error([&] { import_onnx_bytes(b.bytes(), "unknown.onnx"); }, ErrorCode::corrupt_data,
               {"unknown.onnx", "FrobnicateTensor"});
}

TEST(OnnxImport, UnsupportedOpNamesNodeOpAndSupportedList) {
  OnnxBuilder b(17);
  b.input("x", F, {2, 3});
  b.node("Hardmax", {"x"}, {"y"}, "hm");
  b.output("y", F, {2, 3});
  expect_error([&] { import_onnx_bytes(b.bytes(), "hardmax.onnx"); }, ErrorCode::unsupported,
               {"hardmax.onnx", "Hardmax 'hm'", "not supported", "Conv", "MatMul"});
  ImportOptions inspect;
  inspect.require_supported_ops = false;
  EXPECT_EQ(import_onnx_bytes(b.bytes(), "hardmax.onnx", inspect).nodes.size(), 1u);
}

TEST(OnnxImport, UnsupportedOpVersionAndAttribute) {
  OnnxBuilder b(1);  // Reshape 1 takes its shape as an attribute
  b.input("x", F, {2, 3});
  auto& n = b.node("Reshape", {"x"}, {"y"}, "old_reshape");
  OnnxBuilder::attr(n, "shape", std::vector<std::int64_t>{3, 2});
  b.output("y", F, {3, 2});
  b.proto().set_ir_version(3);
  expect_error([&] { import_onnx_bytes(b.bytes(), "old.onnx"); }, ErrorCode::unsupported,
               {"Reshape 'old_reshape'", "version 1", "5, 13, 14"});

  OnnxBuilder c(17);
  c.input("x", F, {1, 1, 4, 4});
  auto& p = c.node("MaxPool", {"x"}, {"y"}, "pool");
  OnnxBuilder::attr(p, "kernel_shape", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(p, "storage_order", std::int64_t{1});
  c.output("y", F, {1, 1, 3, 3});
  expect_error([&] { import_onnx_bytes(c.bytes(), "pool.onnx"); }, ErrorCode::unsupported,
               {"MaxPool 'pool'", "storage_order"});
}

TEST(OnnxImport, Opset18IsRefused) {
  OnnxBuilder b(18);
  b.input("x", F, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", F, {2});
  expect_error([&] { import_onnx_bytes(b.bytes(), "new.onnx"); }, ErrorCode::unsupported,
               {"new.onnx", "opset 18", "1 to 17"});
}

TEST(OnnxImport, OtherDomainIsRefused) {
  OnnxBuilder b(17);
  auto* imp = b.proto().add_opset_import();
  imp->set_domain("com.microsoft");
  imp->set_version(1);
  b.input("x", F, {2});
  b.node("Gelu", {"x"}, {"y"}, "gelu").set_domain("com.microsoft");
  b.output("y", F, {2});
  expect_error([&] { import_onnx_bytes(b.bytes(), "ms.onnx"); }, ErrorCode::unsupported,
               {"ms.onnx", "Gelu 'gelu'", "com.microsoft"});
}

TEST(OnnxImport, MissingInputIsCorruptData) {
  OnnxBuilder b(17);
  b.input("x", F, {2});
  b.node("Add", {"x", "nowhere"}, {"y"}, "add");
  b.output("y", F, {2});
  expect_error([&] { import_onnx_bytes(b.bytes(), "missing.onnx"); }, ErrorCode::corrupt_data,
               {"missing.onnx", "nowhere"});
}

TEST(OnnxImport, SubgraphAttributeIsRefused) {
  OnnxBuilder b(17);
  b.input("c", onnx::TensorProto::BOOL, {});
  auto& n = b.node("If", {"c"}, {"y"}, "branch");
  auto* a = n.add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("then");
  b.output("y", F, {1});
  expect_error([&] { import_onnx_bytes(b.bytes(), "if.onnx"); }, ErrorCode::unsupported,
               {"If 'branch'", "control flow"});
}

// ONNX 1.12's shape inference divides by each stride unchecked: before the guard, a zero
// stride (fuzz/findings/onnx_import/conv_zero_stride.onnx) killed the process with SIGFPE.
TEST(OnnxImport, NonPositiveWindowAttributesAreRefusedBeforeOnnxShapeInference) {
  struct Case {
    const char* op;
    const char* attribute;
    std::vector<std::int64_t> values;
  };
  const std::vector<Case> cases = {
      {"Conv", "strides", {2, 0}},          {"Conv", "strides", {-1, 1}},
      {"Conv", "dilations", {1, 0}},        {"Conv", "kernel_shape", {0, 3}},
      {"MaxPool", "strides", {0, 0}},       {"AveragePool", "strides", {1, -3}},
      {"MaxPool", "kernel_shape", {-2, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " " + c.attribute);
    OnnxBuilder b(17);
    b.input("x", F, {1, 1, 7, 5});
    std::vector<std::string> inputs = {"x"};
    if (std::string(c.op) == "Conv") {
      b.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
      inputs.push_back("w");
    }
    auto& n = b.node(c.op, inputs, {"y"}, "window");
    if (std::string(c.attribute) != "kernel_shape")
      OnnxBuilder::attr(n, "kernel_shape", std::vector<std::int64_t>{3, 3});
    OnnxBuilder::attr(n, c.attribute, c.values);
    b.output("y", F, {1, 1, std::string("h"), std::string("w")});
    expect_error([&] { import_onnx_bytes(b.bytes(), "window.onnx"); }, ErrorCode::corrupt_data,
                 {"window.onnx", std::string(c.op) + " 'window'", c.attribute, ">= 1"});
  }
}

// ONNX 1.12 takes a convolution's kernel rank from the weight's shape when kernel_shape is
// absent and indexes the data's dims with it unchecked: before the guarded schemas, a weight of
// higher rank than the data (fuzz/findings/onnx_import/conv_weight_rank_*.onnx) read past the
// shape and crashed.
TEST(OnnxImport, ConvolutionWeightRankAboveTheDataIsRefused) {
  for (const char* op : {"Conv", "ConvTranspose", "ConvInteger"}) {
    SCOPED_TRACE(op);
    const int type = std::string(op) == "ConvInteger" ? int{onnx::TensorProto::UINT8} : F;
    OnnxBuilder b(17);
    b.input("x", type, {1, 1, 39});
    b.input("w", type, {1, 1, 3, 3});
    b.node(op, {"x", "w"}, {"y"}, "conv");
    b.output("y", std::string(op) == "ConvInteger" ? int{onnx::TensorProto::INT32} : F,
             {std::string("n"), std::string("c"), std::string("l")});
    expect_error([&] { import_onnx_bytes(b.bytes(), "rank.onnx"); }, ErrorCode::corrupt_data,
                 {"rank.onnx", "shape inference", "rank 4", "rank 3"});
  }
  // The same with equal ranks imports.
  OnnxBuilder b(17);
  b.input("x", F, {1, 1, 8, 8});
  b.input("w", F, {2, 1, 3, 3});
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  b.output("y", F, {1, 2, 6, 6});
  EXPECT_EQ(import_onnx_bytes(b.bytes(), "ok.onnx").nodes.size(), 1u);
}

// Gemm's inference before version 13 reads dims 0 and 1 of A and B unchecked: a scalar B
// (fuzz/findings/onnx_import/gemm_scalar_b.onnx) read a null dim and crashed.
TEST(OnnxImport, GemmOperandThatIsNotAMatrixIsRefused) {
  for (int opset : {6, 11, 17}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    OnnxBuilder b(opset);
    b.input("a", F, {4, 10});
    b.input("b", F, {});
    b.input("c", F, {8});
    b.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
    b.output("y", F, {4, 8});
    expect_error([&] { import_onnx_bytes(b.bytes(), "gemm.onnx"); }, ErrorCode::corrupt_data,
                 {"gemm.onnx", "rank 0"});
  }
}

TEST(OnnxImport, FuzzFindingsAreRefused) {
  // Every committed finding of the fuzz harness gives a qforge::Error; run here too, so the
  // g++ build checks them without clang.
  const std::filesystem::path dir = QFORGE_FUZZ_FINDINGS_DIR "/onnx_import";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    SCOPED_TRACE(entry.path().string());
    ++files;
    EXPECT_THROW(import_onnx_file(entry.path()), Error);
  }
  EXPECT_GT(files, 0) << "no findings under " << dir;
}

TEST(OnnxImport, StringTensorIsRefused) {
  OnnxBuilder b = small_model();
  auto& t = b.raw_initializer("names");
  t.set_data_type(onnx::TensorProto::STRING);
  t.add_dims(1);
  t.add_string_data("a");
  expect_error([&] { import_onnx_bytes(b.bytes(), "str.onnx"); }, ErrorCode::unsupported,
               {"initializer 'names'", "STRING"});
}

TEST(OnnxImport, TensorFiles) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(3);
  for (int i = 0; i < 3; ++i) t.add_int64_data(i - 1);
  const std::string s = t.SerializeAsString();
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  const Tensor v = load_onnx_tensor_bytes({p, s.size()}, "t.pb");
  EXPECT_EQ(v.type(), ElementType::int64);
  EXPECT_EQ(v.values<std::int64_t>()[0], -1);
  expect_error(
      [&] {
        load_onnx_tensor_bytes({p, s.size() - 1}, "t.pb");
      },
      ErrorCode::corrupt_data, {"t.pb"});
}

}  // namespace
}  // namespace qforge::model
