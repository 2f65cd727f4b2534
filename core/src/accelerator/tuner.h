// Tuning one workload: verify every candidate, time the survivors, pick the winner.
#pragma once

#include <cstdint>
#include <vector>

#include "accelerator/candidates.h"
#include "accelerator/probe.h"
#include "accelerator/worker.h"

namespace qforge::accel {

struct TuneOutcome {
  TuneReport report;                 // source = tuned (or fallback when nothing was verified)
  std::vector<CandidateId> ranking;  // verified candidates, fastest first
  std::vector<std::size_t> hung;     // plugin indexes that hung: quarantine them
};

// Decides by `deadline`. Throws ErrorCode::unsupported naming every candidate's failure when
// none is usable (all wrong, throwing or hung).
TuneOutcome tune_workload(const Workload& workload, const Enumeration& candidates,
                          const AcceleratorOptions& options, Worker& worker,
                          Clock::time_point deadline, std::uint64_t seed);

}  // namespace qforge::accel
