// Data-driven run of Debian's libonnx-testdata: every case of the node, pytorch-converted,
// pytorch-operator and simple suites whose ops qforge supports is imported, resolved for the
// shapes of its inputs, executed, and compared with the stored outputs (float32 within 1e-4
// relative, integers and bools exactly). A case is skipped only when qforge reports it as
// unsupported (ErrorCode::unsupported) or it is one of the listed models that ONNX 1.12 itself
// refuses; the reason is printed. Any other error or a wrong value fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>

#include "qforge/error.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"

namespace qforge::model {
namespace {

namespace fs = std::filesystem;

constexpr double kRelTol = 1e-4;
constexpr double kAbsTol = 1e-5;  // for expected values near zero

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) files.push_back(e.path());
  // input_10.pb sorts after input_9.pb
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    auto num = [&](const fs::path& p) {
      return std::stoi(p.stem().string().substr(prefix.size()));
    };
    return num(a) < num(b);
  });
  return files;
}

// "" when equal within tolerance, else what differs.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.type() != want.type())
    return "type " + std::string(to_string(got.type())) + ", expected " +
           std::string(to_string(want.type()));
  if (got.shape() != want.shape())
    return "shape " + qforge::to_string(got.shape()) + ", expected " +
           qforge::to_string(want.shape());
  if (got.type() == ElementType::float32) {
    const auto g = got.values<float>(), w = want.values<float>();
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      if (std::isinf(w[i]) && g[i] == w[i]) continue;
      if (!(std::fabs(double(g[i]) - w[i]) <= kRelTol * std::fabs(double(w[i])) + kAbsTol))
        return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " +
               std::to_string(w[i]);
    }
    return "";
  }
  if (got.byte_size() != want.byte_size() ||
      !std::equal(got.data(), got.data() + got.byte_size(), want.data()))
    return "values differ";
  return "";
}

struct Outcome {
  enum Kind { passed, skipped, failed } kind;
  std::string reason;
};

// Cases that ONNX 1.12's own strict shape inference refuses: old PyTorch exports with an
// int64 Constant at opset 6, where Constant-1 allows only float types. qforge must refuse them
// as corrupt (the test fails if one of them starts importing, so the list stays true).
const std::map<std::string, std::string> kInvalidUnderOnnx112 = {
    {"test_PixelShuffle", "Constant"},
    {"test_operator_repeat", "Constant"},
    {"test_operator_repeat_dim_overflow", "Constant"},
};

Outcome run_case(const fs::path& dir) {
  Graph graph;
  if (auto bad = kInvalidUnderOnnx112.find(dir.filename().string());
      bad != kInvalidUnderOnnx112.end()) {
    try {
      import_onnx_file(dir / "model.onnx");
    } catch (const Error& e) {
      if (e.code() == ErrorCode::corrupt_data &&
          std::string(e.what()).find(bad->second) != std::string::npos)
        return {Outcome::skipped,
                std::string("refused as invalid under ONNX 1.12 (expected): ") + e.what()};
      return {Outcome::failed, std::string("expected a corrupt_data error naming ") + bad->second +
                                   ", got: " + e.what()};
    }
    return {Outcome::failed, "expected import to refuse this model (invalid under ONNX 1.12)"};
  }
  try {
    graph = import_onnx_file(dir / "model.onnx");
  } catch (const Error& e) {
    if (e.code() == ErrorCode::unsupported) return {Outcome::skipped, e.what()};
    return {Outcome::failed, std::string("import: ") + e.what()};
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::skipped, "no test data sets"};
  for (const fs::path& set : sets) {
    const auto in_files = sorted_files(set, "input_");
    const auto out_files = sorted_files(set, "output_");
    if (in_files.size() != graph.inputs.size())
      return {Outcome::failed, set.filename().string() + ": " + std::to_string(in_files.size()) +
                                   " input files for " + std::to_string(graph.inputs.size()) +
                                   " graph inputs"};
    try {
      std::vector<Tensor> values;
      for (const fs::path& f : in_files) values.push_back(load_onnx_tensor_file(f));
      // Node tests feed shape-determining inputs (Reshape's shape, Slice's starts) as data;
      // qforge fixes shapes before execution, so integer and bool inputs are frozen as
      // constants when the plain run reports them as not constant.
      auto execute = [&](bool freeze_integers) {
        TensorMap inputs;
        ResolveOptions options;
        for (std::size_t i = 0; i < values.size(); ++i) {
          const std::string& name = graph.inputs[i].name;
          if (freeze_integers && values[i].type() != ElementType::float32)
            options.constant_inputs.insert_or_assign(name, values[i]);
          else {
            options.input_shapes[name] = values[i].shape();
            inputs.insert_or_assign(name, values[i]);
          }
        }
        return Executor(graph, options).run(inputs);
      };
      TensorMap outputs;
      try {
        outputs = execute(false);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported ||
            std::string(e.what()).find("not constant after folding") == std::string::npos)
          throw;
        outputs = execute(true);
      }
      for (std::size_t i = 0; i < out_files.size() && i < graph.outputs.size(); ++i) {
        const Tensor want = load_onnx_tensor_file(out_files[i]);
        const std::string diff = compare(outputs.at(graph.outputs[i].name), want);
        if (!diff.empty())
          return {Outcome::failed,
                  set.filename().string() + " output '" + graph.outputs[i].name + "': " + diff};
      }
    } catch (const Error& e) {
      if (e.code() == ErrorCode::unsupported) return {Outcome::skipped, e.what()};
      return {Outcome::failed, set.filename().string() + ": " + e.what()};
    }
  }
  return {Outcome::passed, ""};
}

// The reason without the case's path, so identical reasons group in the summary.
std::string reason_key(const std::string& reason) {
  std::string r = std::regex_replace(reason, std::regex("^/[^:]*: "), "");
  r = std::regex_replace(r, std::regex(" '[^']*'"), "");
  r = std::regex_replace(r, std::regex("; qforge runs .*"), "");
  r = std::regex_replace(r, std::regex("\\(expected\\): .*"), "(expected)");
  return r.size() > 160 ? r.substr(0, 160) + "..." : r;
}

class OnnxTestdata : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxTestdata, SupportedCasesMatchTheStoredOutputs) {
  const fs::path suite = fs::path(QFORGE_ONNX_TESTDATA_DIR) / GetParam();
  if (!fs::is_directory(suite)) GTEST_SKIP() << suite << " is missing; install libonnx-testdata";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(suite))
    if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  int passed = 0, skipped = 0, failed = 0;
  std::map<std::string, std::vector<std::string>> skips;
  for (const fs::path& c : cases) {
    const Outcome o = run_case(c);
    const std::string name = c.filename().string();
    if (o.kind == Outcome::passed) ++passed;
    if (o.kind == Outcome::skipped) {
      ++skipped;
      skips[reason_key(o.reason)].push_back(name);
    }
    if (o.kind == Outcome::failed) {
      ++failed;
      ADD_FAILURE() << name << ": " << o.reason;
    }
  }
  std::cout << "[ testdata ] " << GetParam() << ": " << passed << " passed, " << skipped
            << " skipped (unsupported), " << failed << " failed, of " << cases.size() << "\n";
  for (const auto& [reason, names] : skips) {
    std::cout << "  skipped " << names.size() << " - " << reason << ":";
    for (std::size_t i = 0; i < names.size() && i < 6; ++i) std::cout << ' ' << names[i];
    if (names.size() > 6) std::cout << " ...";
    std::cout << "\n";
  }
  EXPECT_GT(passed, 0) << "no case of " << GetParam() << " ran";
}

INSTANTIATE_TEST_SUITE_P(Suites, OnnxTestdata,
                         ::testing::Values("node", "pytorch-converted", "pytorch-operator",
                                           "simple"),
                         [](const auto& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace qforge::model
