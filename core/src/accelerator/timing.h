// Timing one verified candidate on the real shape: warm-up, then samples (each long enough to
// be measured, many calls when the op is fast) until its median settles or its share of the
// budget ends. ops.synchronize() closes every sample, so asynchronous devices are timed to
// completion. With Policy::include_transfers, a device plugin fed from host memory pays for
// copying the inputs in and the outputs back in every call.
#pragma once

#include <memory>
#include <vector>

#include "accelerator/candidates.h"
#include "accelerator/operands.h"
#include "accelerator/probe.h"
#include "accelerator/worker.h"

namespace qforge::accel {

// Real-shape inputs, several sets when they fit in the last-level cache so that successive
// calls do not all find their inputs in cache.
struct TimingInputs {
  OpDesc desc;
  IoLayout layout;
  std::vector<HostArrays> sets;
};
std::shared_ptr<TimingInputs> make_timing_inputs(const OpDesc& real, std::uint64_t seed);

// Samples the candidate into tuner (whose next() must be this candidate) until the tuner is
// done with it or `deadline` passes. With injected costs (injects_costs) the costs come from there
// and nothing runs (inputs may then be null). Whether the options' test hooks replace timing by
// injected costs.
bool injects_costs(const AcceleratorOptions& options) noexcept;

Verdict time_candidate(const Candidate& c, AutoTune& tuner, const OpDesc& desc,
                       std::shared_ptr<const TimingInputs> inputs, bool count_transfers,
                       const AcceleratorOptions& options, Worker& worker,
                       Clock::time_point deadline);

}  // namespace qforge::accel
