// The executor's fused attention (model/src/fusion.h's attention chain): BERT's self-attention
// from the head-split Transposes to the merge Transpose, run per (batch, head), against the same
// nodes run one by one, on random inputs of several shapes (heads, sequence lengths 1 and odd,
// keys longer or shorter than queries, odd head widths), with the mask in each broadcast shape
// and without, the keys' split as one Transpose or as two (torch's export), with and without
// the scale; and the graphs it must leave to the unfused nodes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "onnx_builder.h"
#include "qforge/error.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

std::int64_t pick(std::mt19937_64& g, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
}

enum class Mask { none, per_batch, per_query, per_key, full };

struct AttentionGraph {
  std::int64_t b = 2, s = 5, t = 5, h = 2, d = 4, e = 4;
  Mask mask = Mask::per_batch;
  bool scale = true;
  bool two_key_transposes = false;
  bool reshapes = false;             // [B, S, H*D] inputs and output, as build_onnx.py writes them
  bool probs_is_output = false;      // the Softmax's output also leaves the graph
  bool multiply_scale = false;       // Mul by 1/sqrt(d) instead of Div: not the pattern
  std::int64_t merge_perm_last = 3;  // 3: Transpose(0,2,1,3); 1: Transpose(0,2,3,1)

  Shape mask_shape() const {
    switch (mask) {
      case Mask::none: return {};
      case Mask::per_batch: return {b, 1, 1, t};
      case Mask::per_query: return {b, 1, s, t};
      case Mask::per_key: return {t};
      case Mask::full: return {b, h, s, t};
    }
    return {};
  }

  std::string describe() const {
    return "b " + std::to_string(b) + " s " + std::to_string(s) + " t " + std::to_string(t) +
           " h " + std::to_string(h) + " d " + std::to_string(d) + " e " + std::to_string(e) +
           " mask " + std::to_string(static_cast<int>(mask)) + " scale " + std::to_string(scale) +
           " two key transposes " + std::to_string(two_key_transposes) + " reshapes " +
           std::to_string(reshapes);
  }

  Graph build() const {
    OnnxBuilder m(17);
    auto input = [&](const std::string& name, std::int64_t len, std::int64_t width) {
      if (!reshapes) {
        m.input(name, F, {b, len, h, width});
        return name;
      }
      m.input(name + "_flat", F, {b, len, h * width});
      m.initializer_i64(name + "_shape", {4}, {0, 0, h, width});
      m.node("Reshape", {name + "_flat", name + "_shape"}, {name});
      return name;
    };
    auto transpose = [&](const std::string& x, const std::string& y,
                         const std::vector<std::int64_t>& perm) {
      OnnxBuilder::attr(m.node("Transpose", {x}, {y}), "perm", perm);
    };
    transpose(input("q", s, d), "qt", {0, 2, 1, 3});
    if (two_key_transposes) {
      transpose(input("k", t, d), "kh", {0, 2, 1, 3});
      transpose("kh", "kt", {0, 1, 3, 2});
    } else {
      transpose(input("k", t, d), "kt", {0, 2, 3, 1});
    }
    transpose(input("v", t, e), "vt", {0, 2, 1, 3});
    m.node("MatMul", {"qt", "kt"}, {"scores"});
    std::string x = "scores";
    if (scale) {
      m.initializer("c", {}, {multiply_scale ? 1.0f / std::sqrt(float(d)) : std::sqrt(float(d))});
      m.node(multiply_scale ? "Mul" : "Div", {x, "c"}, {"scaled"});
      x = "scaled";
    }
    if (mask != Mask::none) {
      const Shape ms = mask_shape();
      m.input("mask", F, testing::Dims(ms.begin(), ms.end()));
      m.node("Add", {x, "mask"}, {"masked"});
      x = "masked";
    }
    OnnxBuilder::attr(m.node("Softmax", {x}, {"p"}), "axis", std::int64_t{-1});
    m.node("MatMul", {"p", "vt"}, {"ctx"});
    transpose("ctx", "y4",
              merge_perm_last == 3 ? std::vector<std::int64_t>{0, 2, 1, 3}
                                   : std::vector<std::int64_t>{0, 2, 3, 1});
    const Shape y4 = merge_perm_last == 3 ? Shape{b, s, h, e} : Shape{b, s, e, h};
    if (reshapes) {
      m.initializer_i64("merge_shape", {3}, {0, 0, h * e});
      m.node("Reshape", {"y4", "merge_shape"}, {"y"});
      m.output("y", F, {b, s, h * e});
    } else {
      m.output("y4", F, testing::Dims(y4.begin(), y4.end()));
    }
    if (probs_is_output) m.output("p", F, {b, h, s, t});
    return import_onnx_bytes(m.bytes(), "attention");
  }

  TensorMap inputs(std::mt19937_64& g) const {
    auto heads = [&](std::int64_t len, std::int64_t width) {
      return reshapes ? Shape{b, len, h * width} : Shape{b, len, h, width};
    };
    const std::string suffix = reshapes ? "_flat" : "";
    TensorMap in = {{"q" + suffix, test::random_tensor(g, heads(s, d), -2, 2)},
                    {"k" + suffix, test::random_tensor(g, heads(t, d), -2, 2)},
                    {"v" + suffix, test::random_tensor(g, heads(t, e), -3, 3)}};
    if (mask != Mask::none) {
      std::vector<float> values =
          test::random_values(g, static_cast<std::size_t>(element_count(mask_shape())), 0, 1);
      // BERT's padding (float32's minimum), a few finite biases, zeros elsewhere.
      for (float& v : values) v = v < 0.2f ? -3.4028235e38f : v < 0.3f ? (v - 0.25f) * 40.0f : 0.0f;
      in.insert_or_assign("mask", Tensor::from_values<float>(mask_shape(), values));
    }
    return in;
  }
};

bool has_label(const Executor& e, const std::string& label) {
  const auto p = e.profile();
  return std::any_of(p.begin(), p.end(), [&](const StepTime& t) { return t.label == label; });
}

// Within 2e-5 of the unfused result, relative to the values' scale: only the products' order of
// summation differs (the Softmax's arithmetic is the unfused chain's).
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.tensor_type(), want.tensor_type()) << what;
  const auto a = got.values<float>();
  const auto w = want.values<float>();
  std::size_t bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i)
    if (!(std::fabs(a[i] - w[i]) <= 2e-5f * (1.0f + std::fabs(w[i])))) {
      if (bad++ < 3)
        ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", unfused " << w[i];
    }
  EXPECT_EQ(bad, 0u) << what << ": elements off";
}

// Sets QFORGE_ATTENTION_PRODUCTS for a scope (ops/fused.h), restoring it after.
class ProductsKernel {
 public:
  explicit ProductsKernel(const char* kernel) {
    if (const char* old = std::getenv(kName)) old_ = old;
    setenv(kName, kernel, 1);
  }
  ~ProductsKernel() {
    if (old_.empty()) unsetenv(kName);
    else setenv(kName, old_.c_str(), 1);
  }

 private:
  static constexpr const char* kName = "QFORGE_ATTENTION_PRODUCTS";
  std::string old_;
};

// The product kernels this CPU can run: the default vector kernel (AVX-512 where the CPU has
// it), the AVX2 and baseline ones by name, and sgemm.
std::vector<const char*> product_kernels() {
  std::vector<const char*> kernels = {"vector", "vector-baseline", "blas"};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (__builtin_cpu_supports("avx2")) kernels.push_back("vector-avx2");
#endif
  return kernels;
}

// Runs g fused (every product kernel, 1 and 3 threads) and unfused; `fused` says whether the
// attention chain must run. Each kernel gives the same bits on 1 and 3 threads.
void check(const AttentionGraph& ag, std::mt19937_64& g, bool fused) {
  SCOPED_TRACE(ag.describe());
  const Graph graph = ag.build();
  const TensorMap in = ag.inputs(g);
  const TensorMap want = Executor(graph, {}, ExecutorOptions{.threads = 1, .fuse = false}).run(in);
  for (const char* kernel : product_kernels()) {
    std::optional<TensorMap> one_thread;
    for (const int threads : {1, 3}) {
      SCOPED_TRACE(kernel);
      const ProductsKernel products(kernel);
      const Executor e(graph, {}, ExecutorOptions{.threads = threads, .profile = true});
      const TensorMap got = e.run(in);
      EXPECT_EQ(has_label(e, "fused attention"), fused) << threads << " threads";
      for (const auto& [name, t] : want) {
        if (fused || name == "p") expect_close(got.at(name), t, name);
        // Not the attention chain: the nodes' own kernels (and the bit-identical chains).
        else EXPECT_EQ(std::memcmp(got.at(name).data(), t.data(), t.byte_size()), 0) << name;
        if (one_thread) {
          EXPECT_EQ(std::memcmp(got.at(name).data(), one_thread->at(name).data(), t.byte_size()), 0)
              << name << ": 3 threads differ from 1";
        }
      }
      if (!one_thread) one_thread = got;
    }
  }
}

TEST(AttentionFusion, CloseToTheNodesOneByOne) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(911);
  const Mask masks[] = {Mask::none, Mask::per_batch, Mask::per_query, Mask::per_key, Mask::full};
  for (int round = 0; round < 12; ++round) {
    AttentionGraph ag;
    ag.b = pick(g, 1, 3);
    ag.h = pick(g, 1, 4);
    // Sequence lengths 1, odd and even, queries and keys of different lengths; MiniLM's head.
    ag.s = round == 0 ? 1 : round == 1 ? 128 : pick(g, 1, 37);
    ag.t = round == 0 ? 1 : round == 1 ? 128 : round % 3 == 0 ? pick(g, 1, 37) : ag.s;
    ag.d = round == 1 ? 32 : pick(g, 1, 19);
    ag.e = round == 1 ? 32 : round % 2 ? ag.d : pick(g, 1, 19);
    ag.mask = masks[round % 5];
    ag.scale = round % 4 != 3;
    ag.two_key_transposes = round % 3 == 2;
    ag.reshapes = round % 2 == 1;
    check(ag, g, true);
  }
}

// Variants outside the pattern run as the unfused nodes: the Softmax's output read outside the
// chain, a Mul for the scale, a merge Transpose with another permutation.
TEST(AttentionFusion, OtherGraphsRunUnfused) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(912);
  AttentionGraph ag;
  ag.b = 2;
  ag.s = ag.t = 7;
  ag.h = 3;
  ag.d = ag.e = 5;
  ag.probs_is_output = true;
  check(ag, g, false);
  ag.probs_is_output = false;
  ag.multiply_scale = true;
  check(ag, g, false);
  ag.multiply_scale = false;
  ag.merge_perm_last = 1;
  check(ag, g, false);
  ag.merge_perm_last = 3;
  check(ag, g, true);
}

// A run that keeps an inner tensor (the scores) runs the chain node by node: bit for bit the
// unfused run.
TEST(AttentionFusion, KeptInnerTensorRunsNodeByNode) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(913);
  AttentionGraph ag;
  const Graph graph = ag.build();
  const TensorMap in = ag.inputs(g);
  const std::vector<std::string> keep = {"scores"};
  const TensorMap want =
      Executor(graph, {}, ExecutorOptions{.threads = 3, .fuse = false}).run(in, keep);
  const Executor e(graph, {}, ExecutorOptions{.threads = 3, .profile = true});
  const TensorMap got = e.run(in, keep);
  EXPECT_FALSE(has_label(e, "fused attention"));
  for (const char* name : {"y4", "scores"})
    EXPECT_EQ(std::memcmp(got.at(name).data(), want.at(name).data(), want.at(name).byte_size()), 0)
        << name;
}

TEST(AttentionFusion, UnknownProductsKernelIsAnError) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(914);
  AttentionGraph ag;
  const Executor e(ag.build());
  const TensorMap in = ag.inputs(g);
  const ProductsKernel products("fast");
  try {
    e.run(in);
    FAIL() << "no error for QFORGE_ATTENTION_PRODUCTS=fast";
  } catch (const qforge::Error& err) {
    EXPECT_NE(std::string(err.what())
                  .find("expected 'vector', 'vector-avx2', 'vector-baseline' or 'blas'"),
              std::string::npos)
        << err.what();
  }
}

}  // namespace
}  // namespace qforge::model
