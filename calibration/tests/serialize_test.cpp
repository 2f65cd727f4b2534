// JSON save / load: exact round trips of every observer kind and of params, clear errors for
// truncated or corrupt files that leave them untouched, and atomic replacement: a write that
// fails (file size limit) or a writer killed mid-write never damages the previous file.
#include "qforge/calibration/serialize.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "qforge/calibration/histogram_observer.h"
#include "qforge/calibration/minmax.h"
#include "qforge/error.h"
#include "test_support.h"

namespace qforge::calibration {
namespace {

namespace fs = std::filesystem;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("qforge_calib_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

std::vector<float> random_batch(std::mt19937_64& gen, std::size_t n, float spread) {
  std::normal_distribution<float> g(0.3f, spread);
  std::vector<float> x(n);
  for (float& v : x) v = g(gen);
  x[0] = kNaN;
  return x;
}

std::vector<std::unique_ptr<Observer>> sample_observers(std::mt19937_64& gen) {
  std::vector<std::unique_ptr<Observer>> out;
  out.push_back(std::make_unique<MinMaxObserver>());
  out.push_back(std::make_unique<MinMaxObserver>(MinMaxObserver::per_channel(1)));
  out.push_back(std::make_unique<MovingAverageMinMaxObserver>(0.25f));
  out.push_back(
      std::make_unique<MovingAverageMinMaxObserver>(MovingAverageMinMaxObserver::per_channel(-1)));
  out.push_back(std::make_unique<HistogramObserver>(MethodOptions{Method::mse}, 128));
  out.push_back(std::make_unique<HistogramObserver>(
      HistogramObserver::per_channel(0, {Method::percentile, 99.5, false}, 32)));
  for (auto& o : out)
    for (int b = 0; b < 2; ++b) o->observe(random_batch(gen, 4 * 50, 1.0f + b), {4, 50});
  // And observers that saw nothing yet.
  out.push_back(std::make_unique<HistogramObserver>());
  out.push_back(std::make_unique<MinMaxObserver>(MinMaxObserver::per_channel(2)));
  return out;
}

TEST(Serialize, ObserversRoundTripExactly) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(71);
  const auto observers = sample_observers(gen);
  for (const auto& o : observers) {
    SCOPED_TRACE(std::string(o->kind()) + (o->axis() ? " per channel" : " per tensor"));
    const std::string text = observer_to_json(*o);
    const auto back = observer_from_json(text);
    EXPECT_EQ(back->kind(), o->kind());
    EXPECT_EQ(back->axis(), o->axis());
    EXPECT_EQ(back->channels(), o->channels());
    EXPECT_EQ(back->stats(), o->stats());
    EXPECT_EQ(observer_to_json(*back), text);
    if (!o->has_data()) {
      EXPECT_THROW((void)back->params({DType::int8, Mapping::affine}), Error);
      continue;
    }
    for (Target t :
         {Target{DType::int8, Mapping::affine}, Target{DType::uint4, Mapping::symmetric}})
      EXPECT_EQ(back->params(t), o->params(t));
    // Observing on after a reload gives what observing on without it gives.
    auto cont = o->clone();
    const auto more = random_batch(gen, 200, 5.0f);
    cont->observe(more, {4, 50});
    back->observe(more, {4, 50});
    EXPECT_EQ(observer_to_json(*back), observer_to_json(*cont));
  }
}

TEST(Serialize, ParamsRoundTripExactly) {
  ParamsMap m;
  m.emplace("conv1.weight", QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0,
                                                            {0.1f, 1.0f / 3.0f, 7e-9f}));
  m.emplace("fc.act", QuantizationParams::per_tensor_affine(DType::uint8, 8.0f / 255.0f, 3));
  m.emplace("blocks", QuantizationParams::blockwise(DType::int4, Mapping::affine, 32, {0.5f, 0.25f},
                                                    {-3, 7}));
  m.emplace("bits", QuantizationParams::per_tensor_symmetric(DType::binary, 0.75f));
  m.emplace("log", QuantizationParams::logarithmic(DType::int8, 3.5f));
  m.emplace("wide", QuantizationParams::per_tensor_affine(DType::uint16, 1e-30f, 65535));
  EXPECT_EQ(params_from_json(params_to_json(m)), m);
  TempDir dir;
  save_params(m, dir.path() / "params.json");
  EXPECT_EQ(load_params(dir.path() / "params.json"), m);
}

void expect_corrupt(const fs::path& p, const std::string& fragment) {
  const std::string before = slurp(p);
  try {
    (void)load_observer(p);
    ADD_FAILURE() << "expected an error for " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::corrupt_data) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find(p.string()), std::string::npos) << what;  // names the file
    EXPECT_NE(what.find(fragment), std::string::npos) << what;    // and what was wrong
  }
  EXPECT_EQ(slurp(p), before);  // loading never touches the file
}

TEST(Serialize, TruncatedAndCorruptFilesAreClearErrors) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(72);
  HistogramObserver obs({}, 16);
  obs.observe(random_batch(gen, 500, 2.0f));
  TempDir dir;
  const fs::path good = dir.path() / "observer.json";
  save_observer(obs, good);
  const std::string text = slurp(good);
  const fs::path bad = dir.path() / "bad.json";
  // Every truncation point of the document is an error, never a silently shorter histogram.
  for (std::size_t len = 0; len < text.size(); len += 1 + len / 7) {
    spit(bad, text.substr(0, len));
    expect_corrupt(bad, "not valid JSON");
  }
  spit(bad, "\x01\x02garbage");
  expect_corrupt(bad, "not valid JSON");
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    spit(bad, t);
  };
  edit("qforge.calibration.observer", "something.else");
  expect_corrupt(bad, "format 'something.else'");
  edit("\"version\":1", "\"version\":7");
  expect_corrupt(bad, "version 7");
  edit("\"bins\":16", "\"bins\":\"16\"");
  expect_corrupt(bad, "field 'bins' is string");
  edit("\"kind\":\"histogram\"", "\"kind\":\"tdigest\"");
  expect_corrupt(bad, "observer kind 'tdigest'");
  edit("\"stats\"", "\"statz\"");
  expect_corrupt(bad, "missing field 'stats'");
  edit("\"bins\":16", "\"bins\":17");
  expect_corrupt(bad, "expected 17 each");
  // The good file is still there and loads.
  EXPECT_EQ(observer_to_json(*load_observer(good)), text);
  EXPECT_THROW((void)load_observer(dir.path() / "missing.json"), Error);
  EXPECT_THROW((void)params_from_json("{\"format\": \"qforge.calibration.params\", \"version\": 1, "
                                      "\"tensors\": {\"x\": {\"dtype\": \"int9\"}}}"),
               Error);
}

// No temporary files are left next to the target after a failed or successful write.
std::size_t count_files(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

TEST(Serialize, FailedWriteLeavesThePreviousFileIntact) {
  TempDir dir;
  const fs::path target = dir.path() / "obs.json";
  MinMaxObserver small;
  small.observe(std::vector<float>{1.0f, 2.0f});
  save_observer(small, target);
  const std::string before = slurp(target);
  // A large observer whose text exceeds a 4 KiB file size limit set in a child process: the
  // write fails part way (EFBIG), save must throw io and leave the target as it was.
  HistogramObserver big({}, 2048);
  big.observe(std::vector<float>{-3.0f, 0.1f, 2.0f});
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    int code = 1;
    try {
      save_observer(big, target);
      code = 2;  // should not succeed
    } catch (const Error& e) {
      code = e.code() == ErrorCode::io ? 0 : 3;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the save succeeded, 3: wrong error code";
  EXPECT_EQ(slurp(target), before);
  EXPECT_EQ(count_files(dir.path()), 1u);  // the temporary file was removed
  // A write into a directory that does not exist fails before touching anything.
  EXPECT_THROW(save_observer(small, dir.path() / "no" / "such" / "dir.json"), Error);
}

TEST(Serialize, WriterKilledMidWriteNeverLeavesAPartialFile) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(73);
  TempDir dir;
  const fs::path target = dir.path() / "obs.json";
  // Two different large documents; the child alternates between them as fast as it can.
  HistogramObserver a({}, 2048), b({}, 2048);
  a.observe(random_batch(gen, 5000, 1.0f));
  b.observe(random_batch(gen, 5000, 9.0f));
  const std::string ta = observer_to_json(a), tb = observer_to_json(b);
  save_observer(a, target);
  std::uniform_int_distribution<int> delay_us(200, 20000);
  for (int round = 0; round < 6; ++round) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int k = 0;; ++k) save_observer(k % 2 ? a : b, target);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(gen)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string now = slurp(target);
    EXPECT_TRUE(now == ta || now == tb) << "round " << round << ": " << now.size() << " bytes";
    EXPECT_NO_THROW((void)load_observer(target));
  }
}

}  // namespace
}  // namespace qforge::calibration
