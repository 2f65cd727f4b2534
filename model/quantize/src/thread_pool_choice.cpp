#include "thread_pool_choice.h"

#include <cstddef>
#include <optional>
#include <utility>

namespace qforge::model::quantize {
namespace {

bool is_home_or_caller(const PoolCandidate& c, const std::string& home) {
  return c.pool == kCallerPool || c.pool == home;
}

// The fastest measured candidate of the plan on the home pool or the calling thread.
std::optional<PoolCandidate> best_at_home(const PlanCandidates& plan, const std::string& home) {
  std::optional<PoolCandidate> best;
  for (const PoolCandidate& c : plan.others)
    if (c.seconds > 0 && is_home_or_caller(c, home) && (!best || c.seconds < best->seconds))
      best = c;
  return best;
}

// Decides one run of plans on a foreign pool: each member's choice in `out`.
void decide_run(std::span<const PlanCandidates> plans, const std::vector<std::size_t>& run,
                const std::string& home, double hand_over_seconds, std::vector<CandidateId>& out) {
  std::vector<CandidateId> moved;
  double saving = 0;
  for (std::size_t i : run) {
    const PlanCandidates& plan = plans[i];
    const std::optional<PoolCandidate> alternative = best_at_home(plan, home);
    // Without both times the cost of moving is unknown: the tuner's choice stands.
    if (plan.winner.seconds <= 0 || !alternative) return;
    saving += alternative->seconds - plan.winner.seconds;
    moved.push_back(alternative->id);
  }
  if (saving >= hand_over_seconds) return;
  for (std::size_t j = 0; j < run.size(); ++j) out[run[j]] = std::move(moved[j]);
}

}  // namespace

std::string home_pool(std::span<const PlanCandidates> plans) {
  struct Share {
    std::string pool;
    double seconds = 0;
    std::size_t plans = 0;
  };
  std::vector<Share> shares;  // in order of first appearance, so ties go to the first
  for (const PlanCandidates& p : plans) {
    if (p.winner.pool == kCallerPool) continue;
    Share* share = nullptr;
    for (Share& s : shares)
      if (s.pool == p.winner.pool) share = &s;
    if (!share) share = &shares.emplace_back(Share{p.winner.pool});
    share->seconds += p.winner.seconds > 0 ? p.winner.seconds : 0;
    ++share->plans;
  }
  const Share* best = nullptr;
  for (const Share& s : shares) {
    if (!best) {
      best = &s;
      continue;
    }
    const bool more =
        s.seconds > best->seconds || (s.seconds == best->seconds && s.plans > best->plans);
    if (more) best = &s;
  }
  return best ? best->pool : std::string();
}

std::vector<CandidateId> choose_thread_pools(std::span<const PlanCandidates> plans,
                                             double hand_over_seconds) {
  std::vector<CandidateId> out;
  out.reserve(plans.size());
  for (const PlanCandidates& p : plans) out.push_back(p.winner.id);
  if (hand_over_seconds <= 0) return out;
  const std::string home = home_pool(plans);
  if (home.empty()) return out;

  std::vector<std::size_t> run;
  std::string run_pool;
  auto close_run = [&] {
    if (!run.empty()) decide_run(plans, run, home, hand_over_seconds, out);
    run.clear();
    run_pool.clear();
  };
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const std::string& pool = plans[i].winner.pool;
    if (pool == kCallerPool) continue;
    if (pool == home) {
      close_run();
      continue;
    }
    if (pool != run_pool) close_run();
    run_pool = pool;
    run.push_back(i);
  }
  close_run();
  return out;
}

}  // namespace qforge::model::quantize
