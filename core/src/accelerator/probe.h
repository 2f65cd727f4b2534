// Verification of a candidate before it is timed: it runs the workload's op on small random
// probes and must reproduce qforge::reference (integers exactly, floats within the op's NMSE
// tolerance). Probe data is built once per workload and shared by every candidate.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "accelerator/candidates.h"
#include "accelerator/operands.h"
#include "accelerator/worker.h"

namespace qforge::accel {

using Clock = std::chrono::steady_clock;

struct ProbeCase {
  OpDesc desc;
  IoLayout layout;
  HostArrays inputs;                            // outputs poisoned
  HostArrays expected;                          // the reference's outputs
  std::vector<std::vector<double>> magnitudes;  // per output, for sums that can cancel
};

class ProbeSet {
 public:
  ProbeSet(OpDesc real, std::uint64_t seed);
  // The case of probe level `level` (0 tiny, 1 small, 2 real), built on first use; nullptr when
  // the level has none (too large to check, or the same shape as a smaller level).
  std::shared_ptr<const ProbeCase> level(int level);
  std::uint64_t seed() const noexcept { return seed_; }

 private:
  OpDesc real_;
  std::uint64_t seed_;
  std::array<bool, kProbeLevels> built_{};
  std::array<std::shared_ptr<const ProbeCase>, kProbeLevels> cases_;
};

struct Verdict {
  CandidateStatus status = CandidateStatus::measured;  // measured here means "verified"
  std::string message;
  bool hung = false;  // the plugin must not be used again
};

// No probe starts after `deadline`; a probe call that has not returned after `hang_s` is
// abandoned (Verdict::hung).
Verdict verify_candidate(const Candidate& c, ProbeSet& probes, Worker& worker,
                         Clock::time_point deadline, double hang_s);

// Seconds from now to `t` (negative when past).
double seconds_until(Clock::time_point t);

}  // namespace qforge::accel
