// The Accelerator: how a bucket gets its decision (memory, cache, tuning, default) and the
// public entry points other than the op calls (dispatch.cpp) and precision advice
// (precision.cpp).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "accelerator/accelerator_impl.h"
#include "accelerator/cache_file.h"
#include "accelerator/tuner.h"
#include "log_format.h"
#include "qforge/error.h"

namespace qforge {
namespace {

using accel::Clock;

void read_state(accel::PluginState& s) {
  if (s.read) return;
  s.read = true;
  const LoadedPlugin& p = s.plugin;
  try {
    s.availability = p.ops->availability();
    s.devices = p.ops->devices();
    s.host_memory = p.ops->host_memory();
  } catch (const std::exception& e) {
    s.availability = {false, 0, std::string("availability()/devices() threw: ") + e.what()};
  }
}

CandidateStatus status_from(const std::string& text) {
  for (auto s :
       {CandidateStatus::measured, CandidateStatus::wrong_result, CandidateStatus::threw,
        CandidateStatus::timed_out, CandidateStatus::not_verified, CandidateStatus::not_measured,
        CandidateStatus::quarantined, CandidateStatus::unsupported})
    if (to_string(s) == text) return s;
  return CandidateStatus::not_verified;
}

CacheEntry to_entry(const TuneReport& r) {
  CacheEntry e;
  e.key = r.key;
  e.workload = r.bucket;
  e.example = r.description;
  e.winner = r.winner;
  e.seconds = r.winner_seconds;
  e.complete = r.complete;
  e.tuned_at = accel::utc_now_iso();
  for (const auto& c : r.candidates)
    e.candidates.push_back(
        {c.id, std::string(to_string(c.status)), c.seconds, c.samples, c.message});
  return e;
}

}  // namespace

Accelerator::Impl::Impl(std::vector<LoadedPlugin> given, AcceleratorOptions o)
    : options(std::move(o)), loaded(std::move(given)) {
  policy_tag = options.policy.tag();
  for (const auto& p : loaded) {
    if (!p.ops) continue;
    accel::PluginState s;
    s.plugin = p;
    if (p.deferred_identity.empty()) read_state(s);  // a deferred one when first needed
    plugins.push_back(std::move(s));
  }
  fingerprint = hardware_fingerprint(loaded);
  if (options.use_cache) {
    try {
      cache = std::make_unique<TuningCache>(options.cache_path.empty() ? TuningCache::default_path()
                                                                       : options.cache_path);
      cache_writable = cache->writable();  // a read-only file: the cache has said so
    } catch (const std::exception& e) {
      log_format(LogLevel::warn, "accelerator: working without a tuning cache: {}", e.what());
    }
  }
}

void Accelerator::Impl::read_allowed_plugins() {
  for (auto& p : plugins)
    if (accel::policy_allows(options.policy, p.plugin.name)) read_state(p);
}

accel::Enumeration Accelerator::Impl::enumerate(const OpDesc& op) {
  read_allowed_plugins();
  return accel::enumerate_candidates(op, plugins, options.policy);
}

std::optional<std::size_t> Accelerator::Impl::plugin_index(const std::string& name) const {
  for (std::size_t i = 0; i < plugins.size(); ++i)
    if (plugins[i].plugin.name == name) return i;
  return std::nullopt;
}

std::unique_ptr<DecisionSlot> Accelerator::Impl::make_slot(const CandidateId& id, TuneReport report,
                                                           std::vector<CandidateId> ranking) {
  const auto pi = plugin_index(id.plugin);
  if (!pi)
    throw Error(ErrorCode::internal, "accelerator: decision names unknown plugin " + id.plugin);
  auto s = std::make_unique<DecisionSlot>();
  s->plans.reserve(kPlansPerSlot);
  s->ops = plugins[*pi].plugin.ops;
  s->host_memory = plugins[*pi].host_memory;
  s->plugin = *pi;
  s->id = id;
  s->report = std::move(report);
  s->ranking = std::move(ranking);
  return s;
}

std::unique_ptr<DecisionSlot> Accelerator::Impl::from_cache(const Workload& w,
                                                            const std::string& key) {
  if (!cache) return nullptr;
  std::optional<CacheEntry> e;
  try {
    e = cache->find(fingerprint, key);
  } catch (const std::exception& ex) {
    log_format(LogLevel::warn, "accelerator: ignoring an unreadable cache entry {}: {}", key,
               ex.what());
    return nullptr;
  }
  if (!e) return nullptr;
  const auto pi = plugin_index(e->winner.plugin);
  // The fingerprint names the same plugins, but one may have hung in this process since.
  if (!pi || !plugins[*pi].quarantine.empty()) return nullptr;
  // The winner runs this bucket: a deferred winner is created now, and only it.
  read_state(plugins[*pi]);
  if (e->winner.device < 0 ||
      e->winner.device >= std::max<int>(1, static_cast<int>(plugins[*pi].devices.size())))
    return nullptr;
  TuneReport r;
  r.description = describe(w.op);
  r.bucket = e->workload;
  r.key = key;
  r.source = DecisionSource::cache;
  r.winner = e->winner;
  r.winner_seconds = e->seconds;
  r.complete = e->complete;
  std::vector<std::pair<double, CandidateId>> measured;
  for (const auto& c : e->candidates) {
    r.candidates.push_back({c.id, status_from(c.status), c.seconds, c.samples, c.message});
    if (c.status == "measured") measured.push_back({c.seconds, c.id});
  }
  std::stable_sort(measured.begin(), measured.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CandidateId> ranking;
  for (auto& m : measured) ranking.push_back(std::move(m.second));
  ++stats.cache_hits;
  return make_slot(e->winner, std::move(r), std::move(ranking));
}

std::unique_ptr<DecisionSlot> Accelerator::Impl::by_default(const Workload& w,
                                                            const std::string& why) {
  const accel::Enumeration e = enumerate(w.op);
  if (e.candidates.empty()) accel::throw_no_candidate(w.op, e);
  TuneReport r;
  r.description = describe(w.op);
  r.bucket = workload_bucket(w);
  r.key = workload_cache_key(w, options.policy);
  r.source = DecisionSource::fallback;
  r.winner = e.candidates.front().id;
  r.complete = false;
  r.notes = {why + "; using the usable plugin with the highest availability score"};
  for (const auto& c : e.candidates)
    r.candidates.push_back({c.id, CandidateStatus::not_verified, 0, 0, {}});
  std::vector<CandidateId> ranking;
  for (const auto& c : e.candidates) ranking.push_back(c.id);
  ++stats.fallbacks;
  const CandidateId winner = r.winner;  // not read from r while r is moved into the slot
  return make_slot(winner, std::move(r), std::move(ranking));
}

std::unique_ptr<DecisionSlot> Accelerator::Impl::by_tuning(const Workload& w) {
  const double left = options.budget.total_s - stats.tuning_seconds;
  if (left <= 0) return by_default(w, "the total tuning budget is spent");
  const accel::Enumeration e = enumerate(w.op);
  if (e.candidates.empty()) accel::throw_no_candidate(w.op, e);
  const auto start = Clock::now();
  accel::TuneOutcome out;
  try {
    out = accel::tune_workload(w, e, options, worker, left, seeds());
  } catch (...) {
    stats.tuning_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    throw;
  }
  stats.tuning_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  for (std::size_t pi : out.hung) {
    plugins[pi].quarantine =
        "it hung while tuning " + out.report.description + "; its thread was abandoned";
    log_format(LogLevel::warn, "accelerator: plugin {} is not used any more: {}",
               plugins[pi].plugin.name, plugins[pi].quarantine);
    // Decisions already made for it must not call into it while its thread may still run.
    std::erase_if(memo, [pi](const auto& kv) { return kv.second->plugin == pi; });
  }
  if (out.report.source == DecisionSource::tuned) ++stats.buckets_tuned;
  else ++stats.fallbacks;
  // A verified winner is cached even when the budget ran out before anything was timed (the
  // entry says complete: false): otherwise every later process would probe the bucket and
  // draw its timing inputs again, only to reach the same decision. An unverified one is not.
  if (out.winner_verified && cache && cache_writable) {
    try {
      cache->store(fingerprint, to_entry(out.report));
    } catch (const std::exception& ex) {
      cache_writable = false;  // say it once, keep tuning in memory
      log_format(LogLevel::warn, "accelerator: decisions are kept in memory only: {}", ex.what());
    }
  }
  if (!out.winner_verified)
    log_format(LogLevel::debug, "accelerator: {} goes to {} for this process only: {}",
               out.report.bucket, out.report.winner.label(),
               out.report.notes.empty() ? std::string("not verified") : out.report.notes.back());
  const CandidateId winner = out.report.winner;  // not read while the report is moved
  return make_slot(winner, std::move(out.report), std::move(out.ranking));
}

DecisionSlot& Accelerator::Impl::resolve(const accel::WorkloadKey& key, const Workload& w,
                                         bool dispatching, bool retune) {
  std::unique_ptr<DecisionSlot> s;
  if (!retune) s = from_cache(w, key.hex() + "@" + policy_tag);
  if (!s) {
    if (dispatching && !options.online_tuning && !retune)
      s = by_default(w, "online tuning is off and the bucket is not in the tuning cache");
    else s = by_tuning(w);
  }
  auto& slot = memo[key];
  slot = std::move(s);
  return *slot;
}

std::shared_ptr<const Plan> Decision::plan(const OpDesc& op,
                                           const std::vector<const void*>& weights) const {
  if (!ops) throw Error(ErrorCode::invalid_argument, "Decision::plan: empty decision");
  return ops->plan(op, PlanRequest{id.device, id.kernel, weights});
}

Accelerator::Accelerator() : Accelerator(AcceleratorOptions::from_environment()) {}

Accelerator::Accelerator(AcceleratorOptions options)
    : Accelerator(PluginRegistry::global(), std::move(options)) {}

Accelerator::Accelerator(const PluginRegistry& registry, AcceleratorOptions options)
    : Accelerator(registry.plugins(), std::move(options)) {}

Accelerator::Accelerator(std::vector<LoadedPlugin> plugins, AcceleratorOptions options)
    : impl_(std::make_unique<Impl>(std::move(plugins), std::move(options))) {}

Accelerator::~Accelerator() = default;

TuneReport Accelerator::tune(const Workload& w, bool retune) {
  const accel::WorkloadKey key = accel::make_key(w);
  if (!retune) {
    if (const auto it = impl_->memo.find(key); it != impl_->memo.end()) {
      TuneReport r = it->second->report;
      r.source = DecisionSource::memory;
      r.description = describe(w.op);
      return r;
    }
  }
  // An explicit tune() measures even when online tuning (for dispatch) is off.
  return impl_->resolve(key, w, /*dispatching=*/false, retune).report;
}

Decision Accelerator::decide(const Workload& w) {
  DecisionSlot& s = impl_->slot(accel::make_key(w), w);
  return Decision{s.ops, s.id, s.report.source};
}

const AcceleratorOptions& Accelerator::options() const noexcept { return impl_->options; }
const std::vector<LoadedPlugin>& Accelerator::plugins() const noexcept { return impl_->loaded; }
const HardwareFingerprint& Accelerator::fingerprint() const noexcept { return impl_->fingerprint; }
TuningCache* Accelerator::cache() noexcept { return impl_->cache.get(); }
AcceleratorStats Accelerator::stats() const noexcept { return impl_->stats; }

std::vector<std::string> Accelerator::quarantined() const {
  std::vector<std::string> out;
  for (const auto& p : impl_->plugins)
    if (!p.quarantine.empty()) out.push_back(p.plugin.name + ": " + p.quarantine);
  return out;
}

void Accelerator::clear_cache() {
  impl_->memo.clear();
  if (impl_->cache) impl_->cache->clear();
}

}  // namespace qforge
