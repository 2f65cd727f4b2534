// Tuning one workload: verify every candidate, time the survivors, pick the winner.
#pragma once

#include <cstdint>
#include <vector>

#include "accelerator/candidates.h"
#include "accelerator/probe.h"
#include "accelerator/worker.h"

namespace qforge::accel {

struct TuneOutcome {
  TuneReport report;                 // source = tuned (or fallback when nothing was measured)
  std::vector<CandidateId> ranking;  // verified candidates, fastest first
  // The winner passed its probe, measured or not: the decision may be cached. False only when
  // nothing was verified (an unverified winner must never answer for a later process).
  bool winner_verified = false;
  std::vector<std::size_t> hung;  // plugin indexes that hung: quarantine them
};

// Verification of every candidate is bounded by `total_left_s` (what is left of the total
// budget) and hang_s per call: a candidate is never trusted unverified while time is left, and
// the first calls into a plugin (device contexts, pipeline compilation) land here. Timing then
// gets options.budget.per_workload_s (or what is left of the total, if less). Throws
// ErrorCode::unsupported naming every candidate's failure when none is usable.
TuneOutcome tune_workload(const Workload& workload, const Enumeration& candidates,
                          const AcceleratorOptions& options, Worker& worker, double total_left_s,
                          std::uint64_t seed);

}  // namespace qforge::accel
