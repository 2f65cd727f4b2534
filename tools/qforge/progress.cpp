#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace qforge::cli {

ProgressLine::ProgressLine(std::string label, std::int64_t total)
    : label_(std::move(label)), total_(total), enabled_(::isatty(STDERR_FILENO) == 1) {}

ProgressLine::~ProgressLine() {
  if (enabled_) std::fprintf(stderr, "\r\033[K");
}

void ProgressLine::update(std::int64_t done) {
  if (!enabled_) return;
  // At most ten redraws a second: a terminal is slower than a batch of a small model.
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double pct =
      total_ > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0;
  std::fprintf(stderr, "\r\033[K%s %lld/%lld samples (%.0f%%)", label_.c_str(),
               static_cast<long long>(done), static_cast<long long>(total_), pct);
  std::fflush(stderr);
}

}  // namespace qforge::cli
