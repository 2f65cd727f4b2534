// Words for workloads, buckets, policies and statuses: what reports, cache keys and the tools
// print. Nothing here is on the dispatch hot path. Each descriptor type words its own
// bucket (bucket_words.h).
#include <algorithm>
#include <variant>

#include "accelerator/bucket_words.h"
#include "qforge/accelerator.h"

namespace qforge {

std::string_view to_string(Residency r) noexcept {
  return r == Residency::host ? "host" : "device";
}

std::string_view to_string(CandidateStatus s) noexcept {
  switch (s) {
    case CandidateStatus::measured: return "measured";
    case CandidateStatus::wrong_result: return "wrong_result";
    case CandidateStatus::threw: return "threw";
    case CandidateStatus::timed_out: return "timed_out";
    case CandidateStatus::not_verified: return "not_verified";
    case CandidateStatus::not_measured: return "not_measured";
    case CandidateStatus::quarantined: return "quarantined";
    case CandidateStatus::unsupported: return "unsupported";
  }
  return "unknown";
}

std::string_view to_string(DecisionSource s) noexcept {
  switch (s) {
    case DecisionSource::memory: return "memory";
    case DecisionSource::cache: return "cache";
    case DecisionSource::tuned: return "tuned";
    case DecisionSource::fallback: return "fallback";
  }
  return "unknown";
}

std::string CandidateId::label() const {
  std::string s = plugin + "[" + std::to_string(device) + "]";
  if (!kernel.empty()) s += "/" + kernel;
  return s;
}

std::string Policy::tag() const {
  // Sorted, so that the same set written in another order shares the cache entries.
  std::vector<std::string> sorted = plugins;
  std::sort(sorted.begin(), sorted.end());
  std::string list;
  for (const auto& p : sorted) list += (list.empty() ? "" : ",") + p;
  return "plugins=" + (list.empty() ? std::string("*") : list) +
         ";device=" + (device_kind.empty() ? std::string("*") : device_kind) +
         ";transfers=" + (include_transfers ? "1" : "0");
}

std::string workload_bucket(const Workload& w) {
  return std::string(to_string(w.op.op)) + " " + std::string(to_string(w.residency)) +
         std::visit([&](const auto& d) { return accel::bucket_words(w.op.op, d); }, w.op.desc);
}

std::string workload_cache_key(const Workload& w, const Policy& policy) {
  return accel::make_key(w).hex() + "@" + policy.tag();
}

}  // namespace qforge
