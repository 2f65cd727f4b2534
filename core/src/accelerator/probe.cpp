#include "accelerator/probe.h"

#include <algorithm>

#include "accelerator/plan_io.h"
#include "accelerator/staging.h"
#include "qforge/error.h"

namespace qforge::accel {
namespace {

bool same_sizes(const IoLayout& a, const IoLayout& b) {
  if (a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size()) return false;
  for (std::size_t i = 0; i < a.inputs.size(); ++i)
    if (a.inputs[i].count != b.inputs[i].count) return false;
  for (std::size_t i = 0; i < a.outputs.size(); ++i)
    if (a.outputs[i].count != b.outputs[i].count) return false;
  return true;
}

}  // namespace

double seconds_until(Clock::time_point t) {
  return std::chrono::duration<double>(t - Clock::now()).count();
}

ProbeSet::ProbeSet(OpDesc real, std::uint64_t seed) : real_(std::move(real)), seed_(seed) {}

std::shared_ptr<const ProbeCase> ProbeSet::level(int level) {
  const auto i = static_cast<std::size_t>(level);
  if (built_[i]) return cases_[i];
  built_[i] = true;
  Rng rng(seed_ + i);
  auto desc = probe_desc(real_, level, rng);
  if (!desc) return nullptr;
  IoLayout layout = io_layout(*desc);
  auto c = std::make_shared<ProbeCase>(ProbeCase{std::move(*desc), std::move(layout), {}, {}, {}});
  for (int j = level - 1; j >= 0; --j)
    if (auto smaller = this->level(j); smaller && same_sizes(smaller->layout, c->layout))
      return nullptr;
  c->inputs = random_arrays(c->desc, rng, /*specials=*/true);
  c->expected = c->inputs;
  auto out = c->expected.output_pointers();
  c->expected.returned = invoke_reference(c->desc, c->expected.input_pointers().data(), out.data(),
                                          c->expected.xq_params);
  c->magnitudes = output_magnitudes(c->desc, c->expected);
  cases_[i] = c;
  return c;
}

Verdict verify_candidate(const Candidate& c, ProbeSet& probes, Worker& worker,
                         Clock::time_point deadline, double hang_s) {
  std::string refusal;
  for (int level = 0; level < kProbeLevels; ++level) {
    std::shared_ptr<const ProbeCase> pc;
    try {
      pc = probes.level(level);
    } catch (const std::exception& e) {
      throw Error(ErrorCode::internal, "accelerator: building probe data failed (seed " +
                                           std::to_string(probes.seed()) + "): " + e.what());
    }
    if (!pc) continue;
    if (seconds_until(deadline) <= 0)
      return {CandidateStatus::not_verified, "the tuning budget ran out before its probe"};

    // Everything the task touches is owned by it: an abandoned task may outlive this call.
    auto got = std::make_shared<HostArrays>(pc->inputs);
    auto refused = std::make_shared<std::string>();
    auto ops = c.ops;
    const CandidateId id = c.id;
    const bool host = c.host_memory;
    auto task = [pc, got, refused, ops, id, host] {
      std::shared_ptr<const Plan> plan;
      try {
        plan = ops->plan(pc->desc, PlanRequest{id.device, id.kernel, {}});
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported) throw;
        *refused = *e.what() != '\0' ? e.what() : "unsupported";
        return;
      }
      if (!plan) throw Error(ErrorCode::internal, ops->name() + ": plan() returned no plan");
      auto in = got->input_pointers();
      auto out = got->output_pointers();
      if (host) {
        got->returned = PlanArgs(pc->desc).run(*plan, in.data(), out.data(), got->xq_params);
        ops->synchronize();
        return;
      }
      DeviceArrays dev;
      dev.reserve(*ops, pc->layout);
      dev.upload_inputs(*ops, pc->layout, in.data());
      dev.upload_outputs(*ops, pc->layout, reinterpret_cast<const void* const*>(out.data()));
      // Arrays in device memory, params (host-resident operands) in the host's.
      got->returned = PlanArgs(pc->desc).run(*plan, dev.inputs(), dev.outputs(), got->xq_params);
      dev.download_outputs(*ops, pc->layout, out.data());
    };
    // Not the budget: a first call may initialise a device context or compile pipelines, and a
    // slow candidate must not be mistaken for a hung one.
    const TaskOutcome o = worker.run(task, hang_s);
    const std::string where =
        "probe " + describe(pc->desc) + " (seed " + std::to_string(probes.seed()) + ")";
    if (o.kind == TaskOutcome::Kind::threw)
      return {CandidateStatus::threw, where + ": " + o.message};
    if (o.kind == TaskOutcome::Kind::timed_out)
      return {CandidateStatus::timed_out, where + " " + o.message, true};
    if (!refused->empty()) {  // no plan of this probe's descriptor: try the next level
      refusal = *refused;
      continue;
    }
    if (auto diff = compare_outputs(pc->layout, *got, pc->expected, pc->magnitudes))
      return {CandidateStatus::wrong_result, where + ": " + *diff};
    return {};
  }
  return {CandidateStatus::unsupported,
          "could not be verified: it refuses every probe shape small enough to check against "
          "the reference (" +
              refusal + ")"};
}

}  // namespace qforge::accel
