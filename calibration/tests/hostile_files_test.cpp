// Calibration files that are damaged or hostile: every value nlohmann or a float cannot hold,
// bin counts beyond Histogram::kMaxBins, FIFOs and devices. Each is a qforge::Error naming the
// file and the field; none is an nlohmann exception, undefined behaviour or a hang.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <string>

#include "qforge/calibration/histogram_observer.h"
#include "qforge/calibration/minmax.h"
#include "qforge/calibration/serialize.h"
#include "qforge/error.h"
#include "test_support.h"

namespace qforge::calibration {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  return fs::temp_directory_path() / ("qforge_calib_hostile_" + std::to_string(::getpid()));
}

// Removes the tests' directory when the program ends.
struct RemoveTempDir {
  ~RemoveTempDir() {
    std::error_code ec;
    fs::remove_all(temp_dir(), ec);
  }
} remove_temp_dir;

fs::path temp_file(const std::string& name) {
  fs::create_directories(temp_dir());
  return temp_dir() / name;
}

void spit(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::trunc) << text; }

std::string histogram_text() {
  HistogramObserver obs({}, 8);
  obs.observe(std::vector<float>{-1.0f, 0.5f, 2.0f});
  return observer_to_json(obs);
}

std::string replaced(std::string t, const std::string& from, const std::string& to) {
  const auto at = t.find(from);
  EXPECT_NE(at, std::string::npos) << from << " in " << t;
  if (at != std::string::npos) t.replace(at, from.size(), to);
  return t;
}

// The error load_observer gives for `text`, which must be corrupt_data naming file and `field`.
void expect_refused(const std::string& text, const std::string& field) {
  const fs::path p = temp_file("observer.json");
  spit(p, text);
  try {
    (void)load_observer(p);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::corrupt_data) << e.what();
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a qforge::Error: " << e.what();
  }
}

TEST(HostileCalibrationFiles, BinCountsAreBounded) {
  EXPECT_THROW(HistogramObserver({}, 2000000000), Error);
  EXPECT_THROW(HistogramObserver({}, Histogram::kMaxBins + 1, 0), Error);  // with an axis too
  EXPECT_THROW(Histogram(Histogram::kMaxBins + 1), Error);
  EXPECT_NO_THROW(Histogram(Histogram::kMaxBins));
  expect_refused(replaced(histogram_text(), "\"bins\":8", "\"bins\":2000000000"), "field 'bins'");
  expect_refused(replaced(histogram_text(), "\"bins\":8", "\"bins\":1048577"), "field 'bins'");
}

TEST(HostileCalibrationFiles, ValuesNoFloatOrIntegerHoldsAreFieldErrors) {
  const std::string h = histogram_text();
  expect_refused(replaced(h, "\"bins\":8", "\"bins\":1e400"), "not valid JSON");
  expect_refused(replaced(h, "\"bins\":8", "\"bins\":8.0"), "field 'bins'");
  expect_refused(replaced(h, "\"bins\":8", "\"bins\":18446744073709551615"), "field 'bins'");
  expect_refused(replaced(h, "\"limit\":", "\"limit\":1e300,\"x\":"), "field 'limit'");
  MinMaxObserver mm;
  mm.observe(std::vector<float>{1.0f, 2.0f});
  const std::string m = observer_to_json(mm);
  expect_refused(replaced(m, "\"lo\":[", "\"lo\":[1e300,"), "'lo'");
  expect_refused(replaced(m, "\"channels\":", "\"channels\":18446744073709551615,\"x\":"),
                 "field 'channels'");
  expect_refused(replaced(m, "\"version\":1", "\"version\":18446744073709551617"), "");
}

TEST(HostileCalibrationFiles, ParamsScalesMustBeFloats) {
  ParamsMap params;
  params.emplace("w", QuantizationParams::per_tensor_affine(DType::uint8, 0.5f, 3));
  std::string text = params_to_json(params);
  const auto at = text.find("\"scales\": [");
  ASSERT_NE(at, std::string::npos) << text;
  text.insert(at + 11, "1e300,");
  try {
    (void)params_from_json(text);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'scales'"), std::string::npos) << e.what();
  }
}

TEST(HostileCalibrationFiles, RandomDamageIsAlwaysAQforgeError) {
  SCOPED_TRACE(test::seed_text());
  auto gen = test::rng(91);
  const std::string text = histogram_text();
  const char pieces[] = "{}[]\",:0123456789.eE-+ntf ";
  for (int round = 0; round < 2000; ++round) {
    std::string t = text;
    for (int i = 0; i < 2; ++i)
      t[std::uniform_int_distribution<std::size_t>(0, t.size() - 1)(gen)] =
          pieces[std::uniform_int_distribution<std::size_t>(0, sizeof pieces - 2)(gen)];
    try {
      (void)observer_from_json(t);
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a qforge::Error: " << e.what() << "\n" << t;
    }
  }
}

TEST(HostileCalibrationFiles, FifoAndDeviceAreRefusedWithoutBlocking) {
  const fs::path fifo = temp_file("fifo.json");
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const fs::path& p : {fifo, fs::path("/dev/zero")}) {
    auto done =
        std::async(std::launch::async, [&] { EXPECT_THROW((void)load_params(p), Error) << p; });
    ASSERT_EQ(done.wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << p << " blocked";
  }
  fs::remove(fifo);
}

}  // namespace
}  // namespace qforge::calibration
