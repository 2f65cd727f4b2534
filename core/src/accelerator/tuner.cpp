#include "accelerator/tuner.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "accelerator/timing.h"
#include "log_format.h"
#include "qforge/error.h"

namespace qforge::accel {
namespace {

bool contains(const std::vector<std::size_t>& v, std::size_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void progress(const AcceleratorOptions& o, const TuneReport& r, const char* stage,
              const std::string& candidate, std::size_t done) {
  if (o.on_progress) o.on_progress({r.description, stage, candidate, done, r.candidates.size()});
}

bool excluded(CandidateStatus s) {
  return s == CandidateStatus::wrong_result || s == CandidateStatus::threw ||
         s == CandidateStatus::timed_out || s == CandidateStatus::quarantined ||
         s == CandidateStatus::unsupported;
}

}  // namespace

TuneOutcome tune_workload(const Workload& w, const Enumeration& e,
                          const AcceleratorOptions& options, Worker& worker, double total_left_s,
                          std::uint64_t seed) {
  const auto start = Clock::now();
  auto after = [](Clock::time_point t, double s) {
    return t + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const Clock::time_point total_deadline = after(start, total_left_s);
  TuneOutcome out;
  TuneReport& r = out.report;
  r.description = describe(w.op);
  r.bucket = workload_bucket(w);
  r.key = workload_cache_key(w, options.policy);
  r.source = DecisionSource::tuned;
  r.notes = e.notes;
  for (const auto& ref : e.refusals) r.notes.push_back(ref);
  const std::vector<Candidate>& cands = e.candidates;
  for (const auto& c : cands)
    r.candidates.push_back({c.id, CandidateStatus::not_verified, 0, 0, {}});

  // 1. Verify.
  ProbeSet probes(w.op, seed);
  std::vector<std::size_t> verified;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    CandidateResult& res = r.candidates[i];
    if (contains(out.hung, cands[i].plugin)) {
      res.status = CandidateStatus::quarantined;
      res.message = "its plugin hung on an earlier candidate";
      continue;
    }
    progress(options, r, "probe", cands[i].id.label(), i);
    const Verdict v =
        verify_candidate(cands[i], probes, worker, total_deadline, options.budget.hang_s);
    if (v.hung) out.hung.push_back(cands[i].plugin);
    if (v.status == CandidateStatus::measured) {
      verified.push_back(i);
      res.status = CandidateStatus::not_measured;
      continue;
    }
    res.status = v.status;
    res.message = v.message;
    if (excluded(v.status))
      log_format(LogLevel::warn, "accelerator: {} excluded for {}: {}: {}", cands[i].id.label(),
                 r.description, to_string(v.status), v.message);
  }

  // 2. Time the survivors on the real shape, within the per-workload budget. The deadline is
  // taken before the timing inputs are made, so generating them counts against the budget.
  const Clock::time_point deadline =
      std::min(total_deadline, after(Clock::now(), options.budget.per_workload_s));
  const bool host_data = w.residency == Residency::host;
  std::shared_ptr<const TimingInputs> inputs;
  if (!verified.empty() && !injects_costs(options))
    inputs = make_timing_inputs(w.op, seed ^ 0x5eed);
  AutoTune tuner(verified.size(), options.tuner);
  for (std::size_t j = 0; j < verified.size(); ++j) {
    const std::size_t i = verified[j];
    CandidateResult& res = r.candidates[i];
    const Candidate& c = cands[i];
    if (contains(out.hung, c.plugin)) {
      res.status = CandidateStatus::quarantined;
      res.message = "its plugin hung on an earlier candidate";
      tuner.skip();
      continue;
    }
    const double left = seconds_until(deadline);
    if (left <= 0) {
      res.message = "the tuning budget ran out before it was timed";
      tuner.skip();
      continue;
    }
    progress(options, r, "time", c.id.label(), i);
    // Each remaining survivor gets an equal share of what is left.
    const auto share =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                           left / static_cast<double>(verified.size() - j)));
    const bool transfers = host_data && !c.host_memory && options.policy.include_transfers;
    const Verdict v = time_candidate(c, tuner, w.op, inputs, transfers, options, worker, share);
    if (v.hung) out.hung.push_back(c.plugin);
    const CostEstimate& est = tuner.estimate(j);
    res.samples = static_cast<int>(est.count());
    res.seconds = est.median();
    if (v.status == CandidateStatus::measured) {
      res.status = est.count() ? CandidateStatus::measured : CandidateStatus::not_measured;
      res.message = v.message;
      if (!est.stable(options.tuner) &&
          est.count() < static_cast<std::size_t>(options.tuner.max_samples))
        r.complete = false;
    } else {
      res.status = v.status;
      res.message = v.message;
      res.samples = 0;
      res.seconds = 0;
      log_format(LogLevel::warn, "accelerator: {} excluded for {}: {}: {}", c.id.label(),
                 r.description, to_string(v.status), v.message);
    }
  }

  // 3. Decide: the fastest measured; else the first verified; else the first not verified
  //    (the budget ran out, nothing is known against it); else nothing is usable.
  std::vector<std::size_t> measured;
  for (std::size_t i : verified)
    if (r.candidates[i].status == CandidateStatus::measured) measured.push_back(i);
  std::stable_sort(measured.begin(), measured.end(), [&](std::size_t a, std::size_t b) {
    return r.candidates[a].seconds < r.candidates[b].seconds;
  });
  for (std::size_t i : measured) out.ranking.push_back(cands[i].id);
  for (std::size_t i : verified)
    if (r.candidates[i].status == CandidateStatus::not_measured) out.ranking.push_back(cands[i].id);

  for (const auto& c : r.candidates)
    if (c.status == CandidateStatus::not_verified || c.status == CandidateStatus::not_measured)
      r.complete = false;

  if (!measured.empty()) {
    r.winner = cands[measured.front()].id;
    r.winner_seconds = r.candidates[measured.front()].seconds;
    out.winner_verified = true;
  } else if (!out.ranking.empty()) {
    r.winner = out.ranking.front();
    r.source = DecisionSource::fallback;
    out.winner_verified = true;
    r.notes.push_back("nothing was timed within the budget; using the first verified candidate");
  } else {
    const auto unverified = std::find_if(
        r.candidates.begin(), r.candidates.end(),
        [](const CandidateResult& c) { return c.status == CandidateStatus::not_verified; });
    if (unverified == r.candidates.end()) {
      std::string msg =
          "accelerator: no candidate for " + r.description + " reproduces the reference:";
      for (const auto& c : r.candidates)
        msg +=
            " " + c.id.label() + ": " + std::string(to_string(c.status)) + ": " + c.message + ";";
      throw Error(ErrorCode::unsupported, msg);
    }
    r.winner = unverified->id;
    r.source = DecisionSource::fallback;
    r.notes.push_back("the budget ran out before any candidate was verified; using " +
                      r.winner.label() + " unverified");
  }
  r.tuning_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  progress(options, r, "done", r.winner.label(), r.candidates.size());
  return out;
}

}  // namespace qforge::accel
