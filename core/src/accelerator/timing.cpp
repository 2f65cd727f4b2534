#include "accelerator/timing.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "accelerator/plan_io.h"
#include "accelerator/staging.h"
#include "qforge/error.h"
#include "qforge/hardware.h"
#include "qforge/testing/accelerator_hooks.h"

namespace qforge::accel {
namespace {

constexpr std::size_t kMaxInputSets = 8;

std::size_t last_level_cache_bytes() {
  std::size_t llc = 0;
  for (const auto& c : cpu_info().caches)
    if (c.type != "instruction") llc = std::max<std::size_t>(llc, c.size_bytes);
  return llc == 0 ? std::size_t{32} << 20 : llc;
}

// What one timing session of a candidate owns; shared with the worker thread.
struct Session {
  std::shared_ptr<const TimingInputs> inputs;
  std::shared_ptr<QuantizationOps> ops;
  CandidateId id;
  bool host_memory = true;
  bool transfers = false;
  std::vector<HostArrays> host;   // one per input set: inputs, outputs written by host plugins
  std::vector<DeviceArrays> dev;  // device plugins: one per input set
  std::shared_ptr<const Plan> plan;
  std::optional<PlanArgs> args;  // the per-call arrays (host or device) as the plan's operands
  std::size_t next_set = 0;
  double seconds = 0;  // the last measurement, per call

  // The candidate's plan of the real shape (no weights fixed: the per-call ops pass them on
  // every call, as the timing inputs do), and the inputs staged for it.
  void prepare() {
    plan = ops->plan(inputs->desc, PlanRequest{id.device, id.kernel, {}});
    if (!plan) throw Error(ErrorCode::internal, ops->name() + ": plan() returned no plan");
    args.emplace(inputs->desc);
    host = inputs->sets;
    if (host_memory) return;
    dev.resize(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) {
      dev[i].reserve(*ops, inputs->layout);
      auto in = host[i].input_pointers();
      dev[i].upload_inputs(*ops, inputs->layout, in.data());
    }
    ops->synchronize();
  }

  void call_once() {
    const std::size_t i = next_set;
    next_set = (next_set + 1) % host.size();
    HostArrays& h = host[i];
    auto in = h.input_pointers();
    auto out = h.output_pointers();
    if (host_memory) {
      args->run(*plan, in.data(), out.data(), h.xq_params);
      return;
    }
    if (transfers) dev[i].upload_inputs(*ops, inputs->layout, in.data());
    args->run(*plan, dev[i].inputs(), dev[i].outputs(), h.xq_params);
    if (transfers) dev[i].download_outputs(*ops, inputs->layout, out.data());
  }

  void measure(std::int64_t calls) {
    const auto t0 = Clock::now();
    for (std::int64_t j = 0; j < calls; ++j) call_once();
    ops->synchronize();
    seconds = std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(calls);
  }
};

Verdict from_outcome(const TaskOutcome& o, const std::string& what) {
  if (o.kind == TaskOutcome::Kind::threw) return {CandidateStatus::threw, what + ": " + o.message};
  return {CandidateStatus::timed_out, what + " " + o.message, true};
}

Verdict time_injected(const Candidate& c, AutoTune& tuner, const OpDesc& desc, bool count_transfers,
                      const AcceleratorOptions& options) {
  const std::size_t me = *tuner.next();
  try {
    while (tuner.next() == me) {
      double cost = options.test_hooks->injected_cost(c.id, desc, CostPhase::op);
      if (count_transfers)
        cost += options.test_hooks->injected_cost(c.id, desc, CostPhase::transfer);
      tuner.notify_cost(cost);
    }
  } catch (const std::exception& e) {
    tuner.skip();
    return {CandidateStatus::threw, std::string("injected cost: ") + e.what()};
  }
  return {};
}

}  // namespace

std::shared_ptr<TimingInputs> make_timing_inputs(const OpDesc& real, std::uint64_t seed) {
  auto t = std::make_shared<TimingInputs>(TimingInputs{real, io_layout(real), {}});
  const std::size_t bytes = std::max<std::size_t>(t->layout.input_bytes(), 1);
  const std::size_t llc = last_level_cache_bytes();
  const std::size_t sets = bytes >= llc ? 1 : std::min(kMaxInputSets, llc / bytes + 1);
  Rng rng(seed);
  for (std::size_t i = 0; i < sets; ++i) t->sets.push_back(random_arrays(real, rng, false));
  return t;
}

bool injects_costs(const AcceleratorOptions& options) noexcept {
  return options.test_hooks && options.test_hooks->injected_cost;
}

Verdict time_candidate(const Candidate& c, AutoTune& tuner, const OpDesc& desc,
                       std::shared_ptr<const TimingInputs> inputs, bool count_transfers,
                       const AcceleratorOptions& options, Worker& worker,
                       Clock::time_point deadline) {
  if (injects_costs(options)) return time_injected(c, tuner, desc, count_transfers, options);
  if (!inputs) throw Error(ErrorCode::internal, "accelerator: timing without inputs");
  const std::size_t me = *tuner.next();

  auto s = std::make_shared<Session>();
  s->inputs = std::move(inputs);
  s->ops = c.ops;
  s->id = c.id;
  s->host_memory = c.host_memory;
  s->transfers = count_transfers;

  // Set-up and warm-up: staging and one call to load code and fill caches, timed. Every task
  // may run until hang_s: budgets are checked between calls, never by abandoning one.
  const double hang_s = options.budget.hang_s;
  const TaskOutcome setup = worker.run(
      [s] {
        s->prepare();
        s->measure(1);
      },
      hang_s);
  if (setup.kind != TaskOutcome::Kind::ok) {
    tuner.skip();
    return from_outcome(setup, "warm-up");
  }
  // One timed call after the warm-up, even when the share has ended: the warm-up call may have
  // paid for first-use costs (pipelines compiled for this shape, pages faulted in) that would
  // make a fast candidate look slow.
  const TaskOutcome first = worker.run([s] { s->measure(1); }, hang_s);
  if (first.kind != TaskOutcome::Kind::ok) {
    tuner.skip();
    return from_outcome(first, "timing");
  }
  const double single = std::max(s->seconds, 1e-9);
  tuner.notify_cost(s->seconds);
  const auto calls =
      static_cast<std::int64_t>(std::clamp(std::ceil(options.sample_seconds / single), 1.0, 1e6));

  while (tuner.next() == me) {
    const double left = seconds_until(deadline);
    if (left <= 0) {
      tuner.skip();
      return {CandidateStatus::measured, "the tuning budget ended its sampling"};
    }
    const TaskOutcome o = worker.run([s, calls] { s->measure(calls); },
                                     hang_s + 2 * single * static_cast<double>(calls));
    if (o.kind != TaskOutcome::Kind::ok) {
      tuner.skip();
      return from_outcome(o, "timing");
    }
    tuner.notify_cost(s->seconds);
  }
  return {};
}

}  // namespace qforge::accel
