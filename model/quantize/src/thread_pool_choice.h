// Which candidate each of a model's plans runs, when plugins run on different thread pools
// (docs/MODEL.md, "Thread pools").
//
// The accelerator times every candidate alone, with the cores to itself. In a model the plans
// run one after the other: a plan on one pool (OpenMP's team, cpu_x86's workers) follows a
// plan on another, whose threads are still spinning or waking on the same cores, so a lone
// plan that is a few microseconds faster alone can cost far more in the chain. The rule keeps
// a run of plans on a foreign pool only when the time it saves over the best candidates of
// the home pool covers one hand-over; otherwise those plans move to those candidates.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/tuning_cache.h"

namespace qforge::model::quantize {

// The pool of a plan that runs on its calling thread alone (cpu_scalar, a one-thread plugin,
// a device plugin whose host thread only waits): it never contends and joins any chain.
inline constexpr std::string_view kCallerPool = "caller";

// What one hand-over between pools costs the chain, in seconds, unless the caller says
// otherwise. On the 2-vCPU development machine the int8 MLP spent about this much more wall
// time per batch with one small Gemm on onednn between cpu_x86 layers than with all of them on
// cpu_x86 (docs/PERFORMANCE.md); the tuner had measured that Gemm a few microseconds faster alone.
inline constexpr double kDefaultHandOverSeconds = 1e-4;

struct PoolCandidate {
  CandidateId id;
  std::string pool;    // the thread pool its device runs on (kCallerPool: the calling thread)
  double seconds = 0;  // the tuner's median per call; 0 when not measured
};

// One plan of the model, in execution order.
struct PlanCandidates {
  PoolCandidate winner;               // the accelerator's choice for the plan's bucket
  std::vector<PoolCandidate> others;  // the other measured candidates of that bucket
};

// The pool doing most of the measured work among the winners (the largest sum of seconds;
// with nothing measured, the most plans; ties: the first seen), ignoring kCallerPool. Empty
// when every winner runs on its calling thread.
std::string home_pool(std::span<const PlanCandidates> plans);

// The candidate each plan should run. Consecutive plans (kCallerPool ones in between do not
// interrupt) whose winners share a pool other than the home pool form a run; the run keeps
// its winners when every one of them has a measured time and a measured candidate on the
// home pool or the calling thread, and the fastest of those together take at least
// `hand_over_seconds` longer than the winners; otherwise each member takes its fastest one.
// A member without a measured time or such a candidate keeps the whole run as it is. Winners
// on the home pool or the calling thread stay. hand_over_seconds 0 keeps every winner.
std::vector<CandidateId> choose_thread_pools(std::span<const PlanCandidates> plans,
                                             double hand_over_seconds);

}  // namespace qforge::model::quantize
