// The qforge tool run as a user runs it, on a small Gemm MLP built in the test (symbolic batch)
// and fresh random data each run: quantize (table, --json, --report), run (float outputs equal
// the executor's; quantized outputs equal QuantizedModel's with the same calibration), eval
// (top-1 against a count made here), hwinfo and bench as subcommands, usage and data errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "data/npy.h"
#include "onnx_builder.h"
#include "qforge/model/calibrate.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "qforge/model/quantized_model.h"
#include "qforge/registry.h"
#include "test_files.h"
#include "test_support.h"

namespace qforge::cli {
namespace {

using model::Tensor;
using model::testing::OnnxBuilder;
using test::TempDir;

struct ToolRun {
  int exit_code = -1;
  std::string out;  // stdout (and stderr when merged)
  std::string err;  // stderr when not merged
};

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Online tuning off: the layers take the accelerator's default kernels (fast, deterministic).
ToolRun qforge(const std::string& args, bool merge_stderr = false) {
  const TempDir err_dir;
  const std::string err_file = (err_dir / "stderr").string();
  const std::string cmd = "QFORGE_ONLINE_TUNING=0 QFORGE_TUNING_CACHE=off " +
                          quote(QFORGE_CLI_EXE) + " " + args +
                          (merge_stderr ? " 2>&1" : " 2>" + quote(err_file));
  ToolRun run;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::array<char, 4096> chunk{};
  std::size_t n = 0;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0) run.out.append(chunk.data(), n);
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  std::ifstream err(err_file);
  run.err.assign(std::istreambuf_iterator<char>(err), {});
  return run;
}

constexpr std::int64_t kHidden = 24, kClasses = 5;

// x [batch, in] -> Gemm fc1 -> Relu -> Gemm fc2 -> y [batch, classes], batch symbolic.
std::vector<std::byte> mlp_bytes(std::mt19937_64& g, std::int64_t in,
                                 std::int64_t classes = kClasses) {
  OnnxBuilder b(17);
  const int F = onnx::TensorProto::FLOAT;
  b.input("x", F, {std::string("batch"), in}).output("y", F, {std::string("batch"), classes});
  b.initializer("W1", {in, kHidden}, model::test::random_values(g, in * kHidden, -0.4f, 0.4f));
  b.initializer("b1", {kHidden}, model::test::random_values(g, kHidden, -0.1f, 0.1f));
  b.initializer("W2", {kHidden, classes},
                model::test::random_values(g, kHidden * classes, -0.4f, 0.4f));
  b.initializer("b2", {classes}, model::test::random_values(g, classes, -0.1f, 0.1f));
  b.node("Gemm", {"x", "W1", "b1"}, {"h"}, "fc1");
  b.node("Relu", {"h"}, {"r"}, "relu");
  b.node("Gemm", {"r", "W2", "b2"}, {"y"}, "fc2");
  return b.bytes();
}

constexpr const char* kRecipe = R"({
  "format": "qforge.recipe",
  "version": 1,
  "rules": [{"label": "linear", "match": {"op_types": ["Gemm"]},
             "weights": {"dtype": "int8", "mapping": "symmetric", "granularity": "per_channel"},
             "activations": {"mode": "static", "dtype": "int8", "mapping": "affine",
                             "calibration": {"method": "minmax"}}}]
})";

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto g = model::test::rng(11);
    const auto bytes = mlp_bytes(g, kIn);
    test::write_bytes(dir / "mlp.onnx",
                      std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    test::write_bytes(dir / "recipe.json", kRecipe);
    calib = model::test::random_tensor(g, {kCalib, kIn});
    save_npy(dir / "calib.npy", calib);
    data = model::test::random_tensor(g, {kEval, kIn});
    save_npy(dir / "data.npy", data);
    std::uniform_int_distribution<std::int64_t> cls(0, kClasses - 1);
    std::vector<std::int64_t> l(kEval);
    for (auto& v : l) v = cls(g);
    labels = Tensor::from_values<std::int64_t>({kEval}, std::span<const std::int64_t>(l));
    save_npy(dir / "labels.npy", labels);
    graph = model::import_onnx_bytes(bytes, "mlp");
  }

  std::string path(const std::string& name) const { return quote((dir / name).string()); }

  static constexpr std::int64_t kIn = 12, kCalib = 100, kEval = 150;
  TempDir dir;
  Tensor calib, data, labels;
  model::Graph graph;
};

TEST_F(Cli, QuantizePrintsTheReportAndWritesItsJson) {
  const ToolRun r = qforge("quantize " + path("mlp.onnx") + " --recipe " + path("recipe.json") +
                           " --calibration " + path("calib.npy") + " --batch-size 32 --report " +
                           path("report.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << model::test::seed_text();
  EXPECT_NE(r.out.find("fc1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 batches of 32 (the last 4 samples left out"), std::string::npos) << r.out;
  std::ifstream in(dir / "report.json");
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["layers"].size(), 2u);
  EXPECT_EQ(j["layers"][0]["node"], "fc1");
  // int8 per-channel weights, minmax activations on uniform data: well above 20 dB.
  EXPECT_GT(j["outputs"][0]["sqnr_db"].get<double>(), 20.0) << model::test::seed_text();

  const ToolRun js = qforge("quantize " + path("mlp.onnx") + " --recipe " + path("recipe.json") +
                            " --calibration " + path("calib.npy") + " --json");
  ASSERT_EQ(js.exit_code, 0) << js.err;
  EXPECT_EQ(nlohmann::json::parse(js.out)["layers"].size(), 2u) << js.out;
}

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// --no-report: the same QDQ model as with the report, and none of the report.
TEST_F(Cli, QuantizeWithoutTheReportWritesTheSameQdqModel) {
  const std::string args = "quantize " + path("mlp.onnx") + " --recipe " + path("recipe.json") +
                           " --calibration " + path("calib.npy") + " --batch-size 32";
  const ToolRun with = qforge(args + " --report-batches 1 -o " + path("with.onnx"));
  ASSERT_EQ(with.exit_code, 0) << with.out << with.err << model::test::seed_text();
  const ToolRun without = qforge(args + " --no-report -o " + path("without.onnx") + " -v");
  ASSERT_EQ(without.exit_code, 0) << without.out << without.err << model::test::seed_text();
  const std::string a = file_bytes(dir / "with.onnx"), b = file_bytes(dir / "without.onnx");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "the QDQ models differ (" << a.size() << " and " << b.size() << " bytes) "
                      << model::test::seed_text();
  EXPECT_NE(without.out.find("QDQ model: "), std::string::npos) << without.out;
  EXPECT_NE(with.out.find("SQNR"), std::string::npos) << with.out;
  EXPECT_EQ(without.out.find("SQNR"), std::string::npos) << without.out;
  // Nothing ran but calibration: no plugin loading, no plans, no report among the stages.
  EXPECT_NE(without.err.find("quantized model (no plans)"), std::string::npos) << without.err;
  EXPECT_EQ(without.err.find("plugins"), std::string::npos) << without.err;
  EXPECT_EQ(without.err.find("report"), std::string::npos) << without.err;
}

TEST_F(Cli, QuantizeWithoutTheReportRefusesTheReportsOptions) {
  const std::string args = "quantize " + path("mlp.onnx") + " --recipe " + path("recipe.json") +
                           " --calibration " + path("calib.npy") + " --no-report ";
  const std::string out = " -o " + path("q.onnx");
  const std::vector<std::string> options = {"--json",
                                            "--report " + path("r.json"),
                                            "--chart " + path("c.svg"),
                                            "--report-batches 2",
                                            "--timed-runs 2",
                                            "--plugins cpu_scalar"};
  for (const std::string& option : options) {
    SCOPED_TRACE(option);
    const ToolRun r = qforge(args + option + out, true);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    const std::string name = option.substr(0, option.find(' '));
    EXPECT_NE(r.out.find("--no-report contradicts " + name), std::string::npos) << r.out;
  }
  const ToolRun r = qforge(args, true);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--no-report needs -o/--output"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "q.onnx"));
}

// The Fashion-MNIST example CNN (convs on the int8 path, NHWC, int32 biases) on random images:
// the QDQ model without the report equals the one with it.
TEST(CliExample, CnnQuantizedWithoutTheReportWritesTheSameQdqModel) {
  TempDir tmp;
  auto g = model::test::rng(13);
  std::uniform_int_distribution<std::int64_t> count(70, 200);
  const Tensor images = model::test::random_tensor(g, {count(g), 1, 28, 28}, 0.0f, 1.0f);
  save_npy(tmp / "images.npy", images);
  const std::string example = std::string(QFORGE_SOURCE_DIR) + "/examples/fashion_mnist/";
  const std::string args = "quantize " + quote(example + "cnn.onnx") + " --recipe " +
                           quote(example + "recipes/int8_static.json") + " --calibration " +
                           quote((tmp / "images.npy").string()) + " --batch-size 32";
  const ToolRun with =
      qforge(args + " --report-batches 1 --timed-runs 1 -o " + quote((tmp / "with.onnx").string()));
  ASSERT_EQ(with.exit_code, 0) << with.out << with.err << model::test::seed_text();
  const ToolRun without =
      qforge(args + " --no-report -o " + quote((tmp / "without.onnx").string()));
  ASSERT_EQ(without.exit_code, 0) << without.out << without.err << model::test::seed_text();
  const std::string a = file_bytes(tmp / "with.onnx"), b = file_bytes(tmp / "without.onnx");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "the QDQ models differ (" << a.size() << " and " << b.size() << " bytes) "
                      << model::test::seed_text();
}

TEST_F(Cli, RunWritesFloatAndQuantizedOutputs) {
  const ToolRun f = qforge("run " + path("mlp.onnx") + " --input x=" + path("data.npy") +
                           " --output-dir " + path("out"));
  ASSERT_EQ(f.exit_code, 0) << f.out << f.err;
  const model::Executor exec(graph, {.input_shapes = {{"x", {kEval, kIn}}}});
  model::TensorMap in;
  in.emplace("x", data);
  const Tensor want = exec.run(in).at("y");
  const Tensor got = load_npy(dir / "out" / "y.npy");
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.byte_size()));

  if (!PluginRegistry::global().find("cpu_scalar")) GTEST_SKIP() << "cpu_scalar did not load";
  const ToolRun q = qforge("run " + path("mlp.onnx") + " -i " + path("data.npy") + " -o " +
                           path("qout") + " --recipe " + path("recipe.json") + " --calibration " +
                           path("calib.npy") + " --batch-size 100 --plugins cpu_scalar");
  ASSERT_EQ(q.exit_code, 0) << q.out << q.err;
  // The same calibration (one batch of all 100 samples) and plugin here give the same bits.
  const model::Recipe recipe = model::recipe_from_json(kRecipe);
  const model::Executor calib_exec(graph, {.input_shapes = {{"x", {kCalib, kIn}}}});
  model::TensorMap cb;
  cb.emplace("x", calib);
  const auto cal =
      model::calibrate(calib_exec, model::resolve(recipe, model::node_refs(calib_exec.graph())),
                       std::span<const model::TensorMap>(&cb, 1));
  AcceleratorOptions o;
  o.policy.plugins = {"cpu_scalar"};
  o.online_tuning = false;
  o.use_cache = false;
  Accelerator acc(o);
  const model::QuantizedModel qm(exec, recipe,
                                 model::resolve(recipe, model::node_refs(exec.graph())), cal, acc);
  const Tensor qwant = qm.run(in).at("y");
  const Tensor qgot = load_npy(dir / "qout" / "y.npy");
  EXPECT_EQ(0, std::memcmp(qgot.data(), qwant.data(), qwant.byte_size()))
      << model::test::seed_text();
}

TEST_F(Cli, EvalCountsTop1AndAgreement) {
  const model::Executor exec(graph, {.input_shapes = {{"x", {kEval, kIn}}}});
  model::TensorMap in;
  in.emplace("x", data);
  const Tensor y = exec.run(in).at("y");
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < kEval; ++i) {
    const float* row = y.values<float>().data() + i * kClasses;
    const auto best = std::max_element(row, row + kClasses) - row;
    correct += best == labels.values<std::int64_t>()[static_cast<std::size_t>(i)];
  }
  const ToolRun r = qforge("eval " + path("mlp.onnx") + " --data " + path("data.npy") +
                           " --labels " + path("labels.npy") + " --batch-size 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"], kEval);
  EXPECT_EQ(j["float"]["correct"], correct) << model::test::seed_text();

  const ToolRun q = qforge("eval " + path("mlp.onnx") + " --data " + path("data.npy") +
                           " --labels " + path("labels.npy") + " --recipe " + path("recipe.json") +
                           " --calibration " + path("calib.npy") + " --limit 100 --json");
  ASSERT_EQ(q.exit_code, 0) << q.out << q.err;
  const auto jq = nlohmann::json::parse(q.out);
  EXPECT_EQ(jq["samples"], 100);
  // int8 layers at > 20 dB flip few of the float model's choices.
  EXPECT_GT(jq["quantized"]["agreement"].get<double>(), 0.8) << model::test::seed_text();

  // A batch extent the model is given: 150 samples in batches of 8, the last 6 padded.
  const ToolRun fixed = qforge("eval " + path("mlp.onnx") + " --data " + path("data.npy") +
                               " --labels " + path("labels.npy") + " --input-shape x=8,12 --json");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_EQ(nlohmann::json::parse(fixed.out)["float"]["correct"], correct);

  const ToolRun text = qforge("eval " + path("mlp.onnx") + " --data " + path("data.npy") +
                              " --labels " + path("labels.npy"));
  EXPECT_NE(text.out.find("float      top-1"), std::string::npos) << text.out;
}

TEST_F(Cli, ErrorsAndUsage) {
  // Bad data: the reader's message, exit status 1.
  test::write_bytes(dir / "bad.npy", "not numpy at all");
  ToolRun r = qforge(
      "eval " + path("mlp.onnx") + " --data " + path("bad.npy") + " --labels " + path("labels.npy"),
      true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("qforge eval: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("magic"), std::string::npos) << r.out;
  // Data that does not fit the model.
  save_npy(dir / "wide.npy", Tensor(model::ElementType::float32, {4, 13}));
  r = qforge("run " + path("mlp.onnx") + " -i " + path("wide.npy") + " -o " + path("o"), true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("do not fit model input 'x'"), std::string::npos) << r.out;
  // Labels and samples of different counts.
  r = qforge("eval " + path("mlp.onnx") + " --data " + path("calib.npy") + " --labels " +
                 path("labels.npy"),
             true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("100 samples but"), std::string::npos) << r.out;
  // A label the model's output has no class for.
  save_npy(dir / "far.npy", Tensor::from_values<std::int64_t>({2}, {1, kClasses}));
  save_npy(dir / "two.npy", Tensor(model::ElementType::float32, {2, kIn}));
  r = qforge(
      "eval " + path("mlp.onnx") + " --data " + path("two.npy") + " --labels " + path("far.npy"),
      true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("label 5 of sample 1 is not a class"), std::string::npos) << r.out;
  // Usage: 2; --help: 0 with examples.
  EXPECT_EQ(qforge("quantize " + path("mlp.onnx")).exit_code, 2);
  EXPECT_EQ(qforge("").exit_code, 2);
  EXPECT_EQ(
      qforge("run " + path("mlp.onnx") + " -i a -o b --recipe " + path("recipe.json")).exit_code,
      2);
  for (const char* sub : {"quantize", "run", "eval", "hwinfo", "bench"}) {
    const ToolRun h = qforge(std::string(sub) + " --help");
    EXPECT_EQ(h.exit_code, 0) << sub;
    EXPECT_NE(h.out.find("Examples:"), std::string::npos) << sub << h.out;
  }
}

// Fashion-MNIST's IDX files, where installed, into an MLP over 784 inputs: images [N, 1, 28, 28]
// are reshaped per batch, calibration and eval stream the gzip'd files.
TEST(CliFashionMnist, QuantizeAndEvalFromIdxWhereInstalled) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir tmp;
  auto g = model::test::rng(12);
  const auto bytes = mlp_bytes(g, 784, 10);
  test::write_bytes(tmp / "mlp.onnx",
                    std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  test::write_bytes(tmp / "recipe.json", kRecipe);
  const std::string images = quote(dir + "t10k-images-idx3-ubyte.gz");
  const ToolRun r = qforge("eval " + quote((tmp / "mlp.onnx").string()) + " --data " + images +
                           " --labels " + quote(dir + "t10k-labels-idx1-ubyte.gz") + " --recipe " +
                           quote((tmp / "recipe.json").string()) + " --calibration " + images +
                           " --batch-size 256 --limit 1000 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err << model::test::seed_text();
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["samples"], 1000);
  EXPECT_GT(j["quantized"]["agreement"].get<double>(), 0.8) << model::test::seed_text();
}

TEST(CliTools, HwinfoAndBenchAsSubcommands) {
  const ToolRun h = qforge("hwinfo --json");
  ASSERT_EQ(h.exit_code, 0);
  EXPECT_TRUE(nlohmann::json::parse(h.out).contains("plugins")) << h.out;
  const ToolRun b = qforge("bench --list");
  ASSERT_EQ(b.exit_code, 0);
  EXPECT_NE(b.out.find("bucket:"), std::string::npos) << b.out;
}

}  // namespace
}  // namespace qforge::cli
