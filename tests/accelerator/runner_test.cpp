// qforge-bench as a program: its JSON output schema, the other outputs, a second run that tunes
// nothing, and workload files with mistakes (errors naming the field).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Result {
  int status;
  std::string out, err;
};

Result bench(const fs::path& dir, const std::string& args) {
  const std::string cmd = std::string(QFORGE_BENCH) + " " + args + " > " +
                          (dir / "stdout").string() + " 2> " + (dir / "stderr").string();
  const int raw = std::system(cmd.c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(dir / "stdout"), slurp(dir / "stderr")};
}

const char* kWorkloads = R"({"workloads": [
  {"name": "q", "op": "quantize", "shape": [16, 64], "dtype": "int8", "scheme": "per_tensor_symmetric"},
  {"name": "mm", "op": "matmul_integer", "m": 4, "n": 16, "k": 32,
   "a": {"dtype": "uint8", "scheme": "per_tensor_affine"},
   "b": {"dtype": "int8", "scheme": "per_channel_symmetric"}}
]})";

std::string common(const fs::path& dir) {
  return "--workloads " + (dir / "w.json").string() + " --cache " + (dir / "tuning.json").string() +
         " --out-dir " + (dir / "out").string() +
         " --plugins cpu_scalar --budget 0.5 --progress lines";
}

void expect_type(const json& j, const char* key, json::value_t t, bool nullable = false) {
  ASSERT_TRUE(j.contains(key)) << "missing " << key << " in " << j.dump();
  if (nullable && j.at(key).is_null()) return;
  EXPECT_EQ(j.at(key).type(), t) << key << " = " << j.at(key).dump();
}

TEST(Bench, JsonSchemaAndOutputs) {
  const auto dir = acc_test::scratch_dir("run");
  std::ofstream(dir / "w.json") << kWorkloads;
  const Result r = bench(dir, common(dir));
  ASSERT_EQ(r.status, 0) << r.out << r.err;

  const json doc = json::parse(slurp(dir / "out" / "results.json"));
  EXPECT_EQ(doc.at("schema"), "qforge-bench/1");
  using t = json::value_t;
  expect_type(doc, "suite", t::string);
  expect_type(doc, "date", t::string);
  expect_type(doc, "seconds", t::number_float);
  expect_type(doc.at("machine"), "cpu", t::string);
  EXPECT_EQ(doc.at("machine").at("fingerprint").get<std::string>().size(), 16u);
  expect_type(doc, "policy", t::string);
  ASSERT_TRUE(doc.at("plugins").is_array());
  for (const auto& p : doc.at("plugins")) {
    expect_type(p, "name", t::string);
    expect_type(p, "usable", t::boolean);
  }
  const json& cache = doc.at("cache");
  EXPECT_EQ(cache.at("path"), (dir / "tuning.json").string());
  EXPECT_EQ(cache.at("tuned"), 2);
  EXPECT_EQ(cache.at("hits"), 0);
  ASSERT_EQ(doc.at("workloads").size(), 2u);
  for (const auto& w : doc.at("workloads")) {
    SCOPED_TRACE(w.dump());
    expect_type(w, "name", t::string);
    expect_type(w, "op", t::string);
    expect_type(w, "bucket", t::string);
    expect_type(w, "unit", t::string);
    EXPECT_EQ(w.at("source"), "tuned");
    EXPECT_EQ(w.at("cache_hit"), false);
    EXPECT_TRUE(w.at("error").is_null());
    const json& win = w.at("winner");
    EXPECT_EQ(win.at("plugin"), "cpu_scalar");
    expect_type(win, "device", t::number_unsigned);
    expect_type(win, "kernel", t::string);
    EXPECT_GT(win.at("seconds").get<double>(), 0);
    EXPECT_GT(win.at("rate").get<double>(), 0);
    ASSERT_EQ(w.at("candidates").size(), 1u);
    const json& c = w.at("candidates")[0];
    EXPECT_EQ(c.at("status"), "measured");
    EXPECT_GT(c.at("samples").get<int>(), 0);
    expect_type(c, "message", t::string);
    EXPECT_DOUBLE_EQ(w.at("speedup_vs_cpu_scalar").get<double>(), 1.0);
    expect_type(w, "speedup_vs_anchor", t::number_float, /*nullable=*/true);
  }
  EXPECT_EQ(doc.at("workloads")[0].at("unit"), "GB/s");
  EXPECT_EQ(doc.at("workloads")[0].at("anchor").at("name"), "memcpy");
  EXPECT_EQ(doc.at("workloads")[1].at("unit"), "GOPS");

  const std::string csv = slurp(dir / "out" / "results.csv");
  EXPECT_EQ(csv.rfind("workload,op,residency,candidate_plugin", 0), 0u) << csv;
  const std::string svg = slurp(dir / "out" / "throughput.svg");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("cpu_scalar[0]/scalar_reference *"), std::string::npos);
  EXPECT_NE(slurp(dir / "out" / "table.txt").find("mm "), std::string::npos);
  // stdout keeps to one line per workload; table.txt has every candidate.
  EXPECT_NE(slurp(dir / "out" / "table.txt").find("candidates ("), std::string::npos);
  EXPECT_EQ(r.out.find("candidates ("), std::string::npos) << r.out;
  // Where everything went, last.
  EXPECT_NE(r.out.find("cache: " + (dir / "tuning.json").string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chart: " + (dir / "out" / "throughput.svg").string()), std::string::npos)
      << r.out;
  // Plain progress lines when not on a terminal.
  EXPECT_NE(r.err.find("[1/2] q: deciding"), std::string::npos) << r.err;

  // A second run with the warm cache tunes nothing.
  const Result again = bench(dir, common(dir));
  ASSERT_EQ(again.status, 0) << again.err;
  const json second = json::parse(slurp(dir / "out" / "results.json"));
  EXPECT_EQ(second.at("cache").at("tuned"), 0);
  EXPECT_EQ(second.at("cache").at("hits"), 2);
  for (const auto& w : second.at("workloads")) EXPECT_EQ(w.at("cache_hit"), true) << w.dump();
}

struct BadFile {
  const char* json;
  const char* message;
};

class BenchBadWorkloads : public ::testing::TestWithParam<BadFile> {};

TEST_P(BenchBadWorkloads, FailNamingTheField) {
  const auto dir = acc_test::scratch_dir("bad");
  std::ofstream(dir / "w.json") << GetParam().json;
  const Result r = bench(dir, common(dir));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, BenchBadWorkloads,
    ::testing::Values(
        BadFile{
            R"({"workloads": [{"op": "quantize", "shape": [4], "dtype": "int8", "scheme": "per_tensor_affine"},
                                  {"op": "gemm"}]})",
            "workloads[1].op: unknown op 'gemm'"},
        BadFile{
            R"([{"op": "quantize", "shape": [4, -2], "dtype": "int8", "scheme": "per_tensor_affine"}])",
            "workloads[0].shape: expected a non-empty array of integers >= 0"},
        BadFile{
            R"([{"op": "quantize", "shpe": [4], "dtype": "int8", "scheme": "per_tensor_affine"}])",
            "workloads[0]: unknown field 'shpe'"},
        BadFile{
            R"([{"op": "dequantize", "shape": [4], "dtype": "int9", "scheme": "per_tensor_affine"}])",
            "workloads[0].dtype: unknown dtype 'int9'"},
        BadFile{
            R"([{"op": "matmul_integer", "m": 2, "n": 2, "k": 2, "a": {"dtype": "int8", "scheme": "per_tensor_symmetric"},
                     "b": {"dtype": "int8", "scheme": "block_symmetric"}}])",
            "workloads[0].b.scheme: block-wise B runs along K"},
        BadFile{
            R"([{"op": "matmul_integer", "m": 2, "n": 2, "a": {"dtype": "int8", "scheme": "per_tensor_symmetric"},
                     "b": {"dtype": "int8", "scheme": "per_tensor_symmetric"}}])",
            "workloads[0]: missing field 'k'"},
        BadFile{"{not json", "not valid JSON"},
        // nlohmann reports this as out_of_range, not parse_error; it used to escape unnamed.
        BadFile{
            R"([{"op": "quantize", "shape": [1e400], "dtype": "int8", "scheme": "per_tensor_affine"}])",
            "w.json: workload file: not valid JSON"},
        BadFile{
            R"([{"name": "big", "op": "dynamic_quantize_linear", "shape": [4294967296]}])",
            "w.json: workload 'big': workloads[0].shape: expected an integer in [0, 1073741824]"}));

// docs/ACCELERATOR.md: 2 for bad usage (CLI11's own codes are 105, 106, ...); 0 for --help.
TEST(Bench, UsageErrorsExitTwo) {
  const auto dir = acc_test::scratch_dir("usage");
  EXPECT_EQ(bench(dir, "--budget -1").status, 2);
  EXPECT_EQ(bench(dir, "--suite nope").status, 2);
  EXPECT_EQ(bench(dir, "--no-such-option").status, 2);
  const Result missing = bench(dir, "--workloads " + (dir / "absent.json").string());
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("absent.json"), std::string::npos) << missing.err;
  EXPECT_EQ(bench(dir, "--help").status, 0);
}

}  // namespace
