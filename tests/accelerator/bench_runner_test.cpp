// The runner's parts called directly (qforge_bench_runner): workload files that ask for too much
// or hold values JSON or the runner cannot take, and a run in which one workload runs out of
// memory while the others still run and are reported.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <new>
#include <nlohmann/json.hpp>

#include "outputs.h"
#include "qforge/error.h"
#include "qforge/registry.h"
#include "run_suite.h"
#include "support.h"
#include "workload_file.h"

// ---- an allocator that can be told to fail large requests, as a machine out of memory does ----
namespace {
std::atomic<std::size_t> g_fail_above{0};  // 0: never fail
}  // namespace

void* operator new(std::size_t n) {
  const std::size_t limit = g_fail_above.load(std::memory_order_relaxed);
  if (limit != 0 && n > limit) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

using namespace qforge;
namespace fs = std::filesystem;

std::string error_of(const std::string& text) {
  try {
    bench::parse_workloads(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a qforge::Error: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

struct Refused {
  const char* name;
  const char* text;
  std::vector<const char*> facts;  // each must be in the message
};

const Refused kRefused[] = {
    {"KIsTwoTo32",
     R"([{"name": "huge", "op": "matmul_integer", "m": 1, "n": 1, "k": 4294967296,
          "a": {"dtype": "uint8", "scheme": "per_tensor_affine"}, "b": {"dtype": "int8", "scheme": "per_tensor_symmetric"}}])",
     {"workload 'huge'", "workloads[0].k", "expected an integer in [0, 1073741824]", "4294967296"}},
    {"OperandsOverTheByteLimit",
     R"([{"op": "quantize", "shape": [1], "dtype": "int8", "scheme": "per_tensor_symmetric"},
         {"name": "big", "op": "quantize", "shape": [65536, 65536], "dtype": "int8", "scheme": "per_tensor_symmetric"}])",
     {"workload 'big'", "workloads[1]", "expected at most 1024 MiB"}},
    {"MatmulOverTheByteLimit",
     R"([{"name": "mm", "op": "matmul_integer", "m": 32768, "n": 32768, "k": 32768,
          "a": {"dtype": "uint8", "scheme": "per_tensor_affine"}, "b": {"dtype": "int8", "scheme": "per_tensor_symmetric"}}])",
     {"workload 'mm'", "workloads[0]", "MiB"}},
    {"LinearOverTheByteLimit",
     R"([{"name": "lin", "op": "linear_backward", "m": 1073741824, "n": 2, "k": 2}])",
     {"workload 'lin'", "MiB"}},
    {"AxisIsTwoTo32Plus1",
     R"([{"name": "rq", "op": "requantize", "shape": [4, 4], "axis": 4294967297, "per_axis": true}])",
     {"workload 'rq'", "workloads[0].axis", "4294967297"}},
    {"SchemeAxisIsTwoTo32Plus1",
     R"([{"op": "quantize", "shape": [4, 4], "dtype": "int8", "scheme": "per_channel_symmetric", "axis": 4294967297}])",
     {"workloads[0].axis", "4294967297"}},
    {"ExtentIsAFloat",
     R"([{"op": "dynamic_quantize_linear", "shape": [4.0]}])",
     {"workloads[0].shape"}},
    {"BlockSizeBeyondInt64",
     R"([{"op": "quantize", "shape": [4], "dtype": "int8", "scheme": "block_symmetric", "block_size": 18446744073709551615}])",
     {"workloads[0].block_size"}},
    {"NumberTooLargeForADouble",
     R"([{"op": "quantize", "shape": [1e400], "dtype": "int8", "scheme": "per_tensor_symmetric"}])",
     {"not valid JSON", "1e400"}},
    {"TooManyDimensions",
     R"([{"op": "dynamic_quantize_linear", "shape": [1,1,1,1,1,1,1,1,1]}])",
     {"workloads[0].shape", "at most 8"}},
};

class WorkloadFileLimits : public ::testing::TestWithParam<Refused> {};

TEST_P(WorkloadFileLimits, AreErrorsNamingWorkloadAndField) {
  const std::string message = error_of(GetParam().text);
  for (const char* fact : GetParam().facts)
    EXPECT_NE(message.find(fact), std::string::npos) << "missing '" << fact << "' in: " << message;
}

INSTANTIATE_TEST_SUITE_P(Cases, WorkloadFileLimits, ::testing::ValuesIn(kRefused),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(WorkloadFile, LimitsStillAdmitLargeRealWorkloads) {
  const auto w = bench::parse_workloads(
      R"([{"op": "matmul_integer", "m": 4096, "n": 4096, "k": 4096,
           "a": {"dtype": "uint8", "scheme": "per_tensor_affine"}, "b": {"dtype": "int8", "scheme": "per_tensor_symmetric"}},
          {"op": "requantize", "shape": [8, 4], "axis": -1, "per_axis": true}])");
  ASSERT_EQ(w.size(), 2u);
}

TEST(WorkloadFile, ErrorsNameTheFile) {
  const auto dir = acc_test::scratch_dir("w");
  const auto file = dir / "w.json";
  std::ofstream(file)
      << R"([{"op": "quantize", "shape": [1e400], "dtype": "int8", "scheme": "per_tensor_symmetric"}])";
  try {
    bench::load_workloads(file);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

TEST(WorkloadFile, FifoAndDeviceAreRefusedWithoutBlocking) {
  const auto dir = acc_test::scratch_dir("w");
  const auto fifo = dir / "w.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const fs::path& p : {fifo, fs::path("/dev/zero")}) {
    auto done = std::async(std::launch::async, [&] {
      try {
        bench::load_workloads(p);
        ADD_FAILURE() << p << " accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::io);
        EXPECT_NE(std::string(e.what()).find("expected a regular file"), std::string::npos)
            << e.what();
      }
    });
    if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << p << ": blocked";
      const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
    }
    done.get();
  }
}

TEST(RunSuite, OneWorkloadOutOfMemoryDoesNotEndTheRun) {
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(fs::path(QFORGE_PLUGIN_DIR) / "libqforge_plugin_cpu_scalar.so"));
  // Built directly, past the workload file's limits: 64 Mi floats need 256 MiB of timing inputs,
  // which the allocator below refuses, as a machine without that memory would.
  auto workloads = bench::parse_workloads(R"([
    {"name": "small_q", "op": "quantize", "shape": [16, 64], "dtype": "int8", "scheme": "per_tensor_symmetric"},
    {"name": "huge_q", "op": "quantize", "shape": [8, 64], "dtype": "int8", "scheme": "per_tensor_symmetric"},
    {"name": "small_mm", "op": "matmul_integer", "m": 4, "n": 16, "k": 32,
     "a": {"dtype": "uint8", "scheme": "per_tensor_affine"}, "b": {"dtype": "int8", "scheme": "per_tensor_symmetric"}}])");
  auto& huge = std::get<QuantizeDesc>(workloads[1].workload.op.desc);
  huge.shape = {std::int64_t{1} << 26};
  huge.params = workload_params(DType::int8, Scheme::per_tensor_symmetric(), huge.shape);

  bench::RunSettings s;
  s.accelerator = acc_test::options(acc_test::scratch_dir("run") / "tuning.json");
  s.accelerator.online_tuning = true;
  s.accelerator.budget.per_workload_s = 0.3;
  s.progress = bench::ProgressMode::none;
  g_fail_above = std::size_t{128} << 20;
  bench::BenchRun run;
  try {
    run = bench::run_suite("oom", workloads, registry, s);
  } catch (...) {
    g_fail_above = 0;
    FAIL() << "an exception of one workload ended the run";
  }
  g_fail_above = 0;

  ASSERT_EQ(run.workloads.size(), 3u);
  EXPECT_TRUE(run.workloads[0].report.has_value()) << run.workloads[0].error;
  EXPECT_FALSE(run.workloads[1].report.has_value());
  EXPECT_NE(run.workloads[1].error.find("out of memory"), std::string::npos)
      << run.workloads[1].error;
  EXPECT_NE(run.workloads[1].error.find("huge_q"), std::string::npos) << run.workloads[1].error;
  EXPECT_TRUE(run.workloads[2].report.has_value()) << run.workloads[2].error;
  // Every output is written, the failing workload named in each.
  const auto doc = nlohmann::json::parse(bench::json_text(run));
  EXPECT_NE(doc.dump().find("out of memory"), std::string::npos);
  EXPECT_NE(bench::table_text(run).find("huge_q"), std::string::npos);
  EXPECT_NE(bench::csv_text(run).find("huge_q"), std::string::npos);
  EXPECT_FALSE(bench::svg_chart(run).empty());
}

}  // namespace
