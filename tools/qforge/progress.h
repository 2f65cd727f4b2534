// A progress line for calibration and evaluation: "calibrating 640/10000 samples", redrawn in
// place on stderr, and only when stderr is a terminal (logs and pipes get nothing).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace qforge::cli {

class ProgressLine {
 public:
  ProgressLine(std::string label, std::int64_t total);
  ~ProgressLine();  // clears the line
  void update(std::int64_t done);

 private:
  std::string label_;
  std::int64_t total_;
  bool enabled_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace qforge::cli
