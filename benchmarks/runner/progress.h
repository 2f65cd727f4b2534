// Progress while tuning: a bar redrawn in place on a terminal, plain lines otherwise (logs, CI,
// pipes), nothing with --progress none. Written to stderr so stdout carries only results.
#pragma once

#include <cstddef>
#include <string>

#include "qforge/accelerator.h"
#include "results.h"

namespace qforge::bench {

enum class ProgressMode { automatic, bar, lines, none };
ProgressMode parse_progress_mode(const std::string& text);  // throws naming the value

class Progress {
 public:
  Progress(ProgressMode mode, std::size_t workloads);
  void begin(std::size_t index, const std::string& name);
  void update(const TuningProgress& p);
  void end(const WorkloadResult& r);
  void finish();

 private:
  void draw(const std::string& detail);
  bool bar_ = false;
  bool quiet_ = false;
  std::size_t total_ = 0, index_ = 0;
  std::string name_;
  double fraction_ = 0;  // of the current workload
};

}  // namespace qforge::bench
