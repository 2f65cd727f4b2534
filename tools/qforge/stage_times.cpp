#include "stage_times.h"

namespace qforge::cli {

void StageTimes::mark(std::string stage) {
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  stages_.emplace_back(std::move(stage), std::chrono::duration<double>(now - last_).count());
  last_ = now;
}

void StageTimes::print(std::FILE* out) const {
  if (!enabled_) return;
  std::fprintf(out, "stages (wall ms):\n");
  for (const auto& [name, seconds] : stages_)
    std::fprintf(out, "  %-28s %9.1f\n", name.c_str(), seconds * 1e3);
  std::fprintf(out, "  %-28s %9.1f\n", "total",
               std::chrono::duration<double>(last_ - start_).count() * 1e3);
}

}  // namespace qforge::cli
