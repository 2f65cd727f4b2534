// A real transformer through the importer and the float executor: all-MiniLM-L6-v2 (BERT, 6
// layers) as examples/minilm/build_onnx.py writes it, with native and decomposed
// LayerNormalization, against ONNX Runtime's embeddings of real sentences. The graph and the
// reference come from examples/minilm/make_reference.py, which needs the example's Python venv;
// the ctest minilm_vs_onnxruntime (tests/minilm) runs it and points QFORGE_MINILM_DIR here.
// Without that variable the test is skipped with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"

namespace qforge::model {
namespace {

namespace fs = std::filesystem;

constexpr double kRelTol = 1e-4;
constexpr double kAbsTol = 1e-6;  // elements of a unit vector near zero

class MiniLM : public ::testing::TestWithParam<const char*> {};

TEST_P(MiniLM, MatchesOnnxRuntime) {
  const char* dir_env = std::getenv("QFORGE_MINILM_DIR");
  if (!dir_env || !*dir_env)
    GTEST_SKIP() << "QFORGE_MINILM_DIR is not set: the ctest minilm_vs_onnxruntime sets it "
                    "after examples/minilm/make_reference.py wrote the graph and ORT's outputs";
  const fs::path dir(dir_env);
  const fs::path model = dir / (std::string("minilm_") + GetParam() + ".onnx");
  const fs::path data = dir / "test_data_set_0";
  ASSERT_TRUE(fs::exists(model)) << model << " is missing";
  const Tensor ids = load_onnx_tensor_file(data / "input_0.pb");
  const Tensor mask = load_onnx_tensor_file(data / "input_1.pb");
  const Tensor want = load_onnx_tensor_file(data / "output_0.pb");

  const Graph graph = import_onnx_file(model);
  ResolveOptions options;
  options.input_shapes["input_ids"] = ids.shape();
  options.input_shapes["attention_mask"] = mask.shape();
  const Executor exec(graph, options);
  const TensorMap out = exec.run({{"input_ids", ids}, {"attention_mask", mask}});
  ASSERT_EQ(out.size(), 1u);
  const Tensor& got = out.begin()->second;
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = got.values<float>(), w = want.values<float>();
  const std::int64_t dim = want.shape()[1];
  double worst = 0.0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(double(g[i]) - w[i]);
    worst = std::max(worst, err);
    ASSERT_LE(err, kRelTol * std::fabs(double(w[i])) + kAbsTol)
        << "sentence " << i / static_cast<std::size_t>(dim) << ", element "
        << i % static_cast<std::size_t>(dim) << ": qforge " << g[i] << ", ORT " << w[i];
  }
  std::cout << GetParam() << ": " << want.shape()[0] << " sentences, max |qforge - ORT| " << worst
            << "\n";
  // The memory plan here and at the benchmark's batch (examples/minilm/bench_float.py).
  std::cout << GetParam() << ": " << qforge::to_string(exec.graph().inputs[0].shape())
            << " tokens: " << describe(exec.memory_plan()) << "\n";
  options.input_shapes["input_ids"] = options.input_shapes["attention_mask"] = {32, 128};
  const Executor bench(graph, options);
  EXPECT_LT(bench.memory_plan().arena_bytes, bench.memory_plan().total_bytes);
  std::cout << GetParam() << ": [32, 128] tokens: " << describe(bench.memory_plan()) << "\n";
}

INSTANTIATE_TEST_SUITE_P(LayerNorm, MiniLM, ::testing::Values("native", "decomposed"));

}  // namespace
}  // namespace qforge::model
