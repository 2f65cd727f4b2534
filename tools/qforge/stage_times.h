// Wall time of a command's stages (import, calibration, plugin loading, plans...), measured with a
// steady clock and printed by --verbose: a short calibration is mostly fixed costs, and which
// stage they sit in decides what to make faster.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace qforge::cli {

class StageTimes {
 public:
  explicit StageTimes(bool enabled) : enabled_(enabled), last_(Clock::now()), start_(last_) {}
  // Ends the stage running since the last mark (or construction) and names it.
  void mark(std::string stage);
  // One line per stage and the total, on `out` (stderr: stdout may carry JSON).
  void print(std::FILE* out = stderr) const;
  bool enabled() const noexcept { return enabled_; }

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  Clock::time_point last_, start_;
  std::vector<std::pair<std::string, double>> stages_;  // name, seconds
};

}  // namespace qforge::cli
