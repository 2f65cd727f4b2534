#include "progress.h"

#include <unistd.h>

#include <cstdio>

#include "format.h"
#include "qforge/error.h"

namespace qforge::bench {

ProgressMode parse_progress_mode(const std::string& t) {
  if (t == "auto") return ProgressMode::automatic;
  if (t == "bar") return ProgressMode::bar;
  if (t == "lines") return ProgressMode::lines;
  if (t == "none") return ProgressMode::none;
  throw Error(ErrorCode::invalid_argument,
              "--progress " + t + "; expected auto, bar, lines or none");
}

Progress::Progress(ProgressMode mode, std::size_t workloads) : total_(workloads) {
  quiet_ = mode == ProgressMode::none;
  bar_ = mode == ProgressMode::bar || (mode == ProgressMode::automatic && ::isatty(STDERR_FILENO));
}

void Progress::begin(std::size_t index, const std::string& name) {
  index_ = index;
  name_ = name;
  fraction_ = 0;
  if (quiet_) return;
  if (bar_) draw("");
  else std::fprintf(stderr, "[%zu/%zu] %s: deciding\n", index + 1, total_, name.c_str());
}

void Progress::update(const TuningProgress& p) {
  if (quiet_ || !bar_) return;
  // Probes are quick; timing takes the time: weigh them 1 : 4 within a workload.
  const double n = static_cast<double>(p.candidates_total ? p.candidates_total : 1);
  const double done = static_cast<double>(p.candidates_done);
  fraction_ = p.stage == "probe" ? 0.2 * done / n : p.stage == "time" ? 0.2 + 0.8 * done / n : 1.0;
  draw(p.stage + " " + p.candidate);
}

void Progress::end(const WorkloadResult& r) {
  if (quiet_) return;
  std::string line;
  if (!r.report) {
    line = "error: " + r.error;
  } else {
    line = std::string(to_string(r.report->source)) + ", winner " + r.report->winner.label();
    if (r.report->winner_seconds > 0)
      line += " " + format_rate(r.winner_rate(), r.work.unit) + " (" +
              format_seconds(r.report->winner_seconds) + ")";
    if (r.report->tuning_seconds > 0)
      line += ", tuned in " + format_seconds(r.report->tuning_seconds);
  }
  if (bar_) std::fprintf(stderr, "\r\033[2K");
  std::fprintf(stderr, "[%zu/%zu] %s: %s\n", index_ + 1, total_, name_.c_str(), line.c_str());
  fraction_ = 1;
  if (bar_ && index_ + 1 < total_) draw("");
}

void Progress::finish() {
  if (bar_ && !quiet_) std::fprintf(stderr, "\r\033[2K");
  std::fflush(stderr);
}

void Progress::draw(const std::string& detail) {
  constexpr int kWidth = 30;
  const double overall =
      (static_cast<double>(index_) + fraction_) / static_cast<double>(total_ ? total_ : 1);
  const int filled = static_cast<int>(overall * kWidth + 0.5);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::string text = "[" + bar + "] " + std::to_string(index_ + 1) + "/" + std::to_string(total_) +
                     " " + name_ + (detail.empty() ? "" : "  " + detail);
  if (text.size() > 118) text.resize(118);
  std::fprintf(stderr, "\r\033[2K%s", text.c_str());
  std::fflush(stderr);
}

}  // namespace qforge::bench
