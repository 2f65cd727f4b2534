// Shared helpers of the recipe tests: the run's seed, and checks on qforge::Error messages.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "qforge/error.h"
#include "qforge/model/recipe.h"

namespace qforge::model::test {

// One seed per test run: QFORGE_TEST_SEED when set (to replay a failure), else fresh entropy.
inline std::uint64_t run_seed() {
  static const std::uint64_t seed = [] {
    if (const char* env = std::getenv("QFORGE_TEST_SEED"))
      return static_cast<std::uint64_t>(std::stoull(env));
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }();
  return seed;
}

inline std::string seed_text() {
  return "seed " + std::to_string(run_seed()) +
         " (replay with QFORGE_TEST_SEED=" + std::to_string(run_seed()) + ")";
}

inline std::mt19937_64 rng(std::uint64_t salt) {
  return std::mt19937_64(run_seed() ^ (salt * 0x9E3779B97F4A7C15ull));
}

// Runs `f`, expects a qforge::Error with `code` whose message contains every piece; returns
// the message for further checks.
inline std::string expect_error(const std::function<void()>& f, ErrorCode code,
                                std::initializer_list<std::string> pieces) {
  try {
    f();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), code) << what;
    for (const std::string& p : pieces)
      EXPECT_NE(what.find(p), std::string::npos) << "missing '" << p << "' in: " << what;
    return what;
  }
  ADD_FAILURE() << "expected a qforge::Error";
  return {};
}

// Nodes of a small transformer-like graph, as a graph would hand them to resolve().
struct Graph {
  std::vector<std::string> names, ops;
  std::vector<NodeRef> refs() const {
    std::vector<NodeRef> out;
    for (std::size_t i = 0; i < names.size(); ++i) out.push_back({names[i], ops[i]});
    return out;
  }
  void add(std::string name, std::string op) {
    names.push_back(std::move(name));
    ops.push_back(std::move(op));
  }
};

inline Graph small_graph() {
  Graph g;
  g.add("/stem/conv", "Conv");                                // 0
  g.add("/stem/relu", "Relu");                                // 1
  g.add("/encoder/layer.0/attention/query", "MatMul");        // 2
  g.add("/encoder/layer.0/attention/Softmax", "Softmax");     // 3
  g.add("/encoder/layer.0/LayerNorm", "LayerNormalization");  // 4
  g.add("/encoder/layer.0/output/dense", "Gemm");             // 5
  g.add("/encoder/layer.1/attention/query", "MatMul");        // 6
  g.add("/encoder/layer.1/output/dense", "Gemm");             // 7
  g.add("", "Add");                                           // 8: ONNX allows unnamed nodes
  g.add("/head/classifier", "Gemm");                          // 9
  return g;
}

}  // namespace qforge::model::test
