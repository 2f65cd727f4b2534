// Byte-level mutations of valid models: import (and, when a mutant still imports, resolve and a
// run) must either work or throw qforge::Error; never crash, abort or throw anything else.
// A cheap stand-in for the fuzzer that import_onnx_bytes is shaped for.
#include <gtest/gtest.h>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

std::vector<std::byte> conv_pool_model() {
  OnnxBuilder b(13);
  b.input("x", F, {1, 2, 6, 6});
  std::vector<float> w(3 * 2 * 3 * 3, 0.25f);
  b.initializer("w", {3, 2, 3, 3}, w);
  b.initializer("b", {3}, {0.1f, 0.2f, 0.3f});
  b.initializer_i64("shape", {2}, {1, -1});
  auto& c = b.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  OnnxBuilder::attr(c, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
  auto& p = b.node("MaxPool", {"c"}, {"p"}, "pool");
  OnnxBuilder::attr(p, "kernel_shape", std::vector<std::int64_t>{2, 2});
  OnnxBuilder::attr(p, "strides", std::vector<std::int64_t>{2, 2});
  b.node("Reshape", {"p", "shape"}, {"r"}, "flat");
  auto& s = b.node("Softmax", {"r"}, {"y"}, "softmax");
  OnnxBuilder::attr(s, "axis", std::int64_t{1});
  b.output("y", F, {1, 27});
  return b.bytes();
}

TEST(Mutation, ImportAndRunNeverCrash) {
  const auto original = conv_pool_model();
  auto rng = test::rng(5);
  ImportOptions io;
  io.max_tensor_bytes = 1 << 20;
  ResolveOptions ro;
  ro.max_tensor_bytes = 1 << 20;
  int imported = 0, ran = 0;
  for (int trial = 0; trial < 400; ++trial) {
    auto bytes = original;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f)
      bytes[rng() % bytes.size()] = static_cast<std::byte>(rng() & 0xff);
    if (rng() % 8 == 0) bytes.resize(rng() % bytes.size());
    try {
      const Graph g = import_onnx_bytes(bytes, "mutant", io);
      ++imported;
      const Executor exec(g, ro);
      TensorMap in;
      for (const ValueInfo& v : exec.graph().inputs) in.emplace(v.name, Tensor(v.type, v.shape()));
      exec.run(in);
      ++ran;
    } catch (const Error&) {
      // expected for most mutants
    } catch (const std::exception& e) {
      ADD_FAILURE() << "trial " << trial << ": non-qforge exception: " << e.what() << ", "
                    << test::seed_text();
    }
  }
  std::cout << "[ mutation ] 400 mutants: " << imported << " imported, " << ran << " ran\n";
}

}  // namespace
}  // namespace qforge::model
