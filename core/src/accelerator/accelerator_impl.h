// The accelerator's private state, shared by its source files: the plugins as the accelerator
// sees them, the in-memory decisions with their plans (the dispatch hot path), the cache, the
// tuning worker.
#pragma once

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "accelerator/candidates.h"
#include "accelerator/same_desc.h"
#include "accelerator/worker.h"
#include "accelerator/workload_key.h"
#include "qforge/accelerator.h"

namespace qforge {

// Plans one decision keeps for the per-call ops, most recently used first. A bucket groups
// many shapes and params, but a program calling the per-call ops repeats a few exact
// descriptors per bucket (the shapes of a few layers, the params of a few tensors); eight keep
// those, while a sweep over shapes or params that change on every call cannot pile up plans
// (each holds its descriptor and, on cpu_x86, the scratch of its runs) or make a hit scan long.
inline constexpr std::size_t kPlansPerSlot = 8;

// A plan the per-call ops reuse, and the descriptor calls match it by: the caller's last one
// equal to the plan's. A caller that builds equal params anew gets them compared in full once;
// the descriptor then takes the new params, whose identities later calls match in a few integer
// compares.
struct KeptPlan {
  OpDesc desc;
  std::shared_ptr<const Plan> plan;
};

// One decided bucket.
struct DecisionSlot {
  std::vector<KeptPlan> plans;           // the hot path reads these; at most kPlansPerSlot
  std::shared_ptr<QuantizationOps> ops;  // the winner's plugin
  std::size_t plugin = 0;                // index into Impl::plugins
  CandidateId id;
  bool host_memory = true;
  // The winner refused a plan with A's params given at run for this bucket: its per-tensor
  // matmul_dequant calls get plans of their exact descriptors.
  bool refuses_a_at_run = false;
  TuneReport report;                 // how it was decided
  std::vector<CandidateId> ranking;  // verified candidates, fastest first (fallbacks)

  // The kept plan of exactly this descriptor, moved to the front; null when there is none.
  template <class Desc>
  const Plan* find(OpKind op, const Desc& d) {
    for (std::size_t i = 0; i < plans.size(); ++i) {
      KeptPlan& k = plans[i];
      const Desc* kd = std::get_if<Desc>(&k.desc.desc);
      if (kd == nullptr || k.desc.op != op || !accel::same(d, *kd)) continue;
      if (!accel::same_ids(d, *kd)) k.desc.desc = d;
      if (i != 0) std::rotate(plans.begin(), plans.begin() + i, plans.begin() + i + 1);
      return plans[0].plan.get();
    }
    return nullptr;
  }
  // The kept plan with A's params given at run that serves the plain matmul descriptor `d`
  // (accel::serves_at_run), moved to the front; null when there is none.
  const Plan* find_at_run(OpKind op, const MatmulDesc& d) {
    for (std::size_t i = 0; i < plans.size(); ++i) {
      KeptPlan& k = plans[i];
      const auto* kd = std::get_if<MatmulDesc>(&k.desc.desc);
      if (kd == nullptr || k.desc.op != op || !accel::serves_at_run(*kd, d)) continue;
      if (!accel::same_ids(d.b, kd->b) || !accel::same_ids(d.y, kd->y)) {
        // Later calls then match B's (and Y's) params by identity.
        MatmulDesc renewed = d;
        renewed.a = kd->a;
        renewed.a_params_at_run = true;
        k.desc.desc = std::move(renewed);
      }
      if (i != 0) std::rotate(plans.begin(), plans.begin() + i, plans.begin() + i + 1);
      return plans[0].plan.get();
    }
    return nullptr;
  }
  // Keeps a new plan in front, dropping the least recently used one when all are taken.
  template <class Desc>
  const Plan& keep(OpKind op, const Desc& d, std::shared_ptr<const Plan> plan) {
    if (plans.size() == kPlansPerSlot) plans.pop_back();
    plans.insert(plans.begin(), KeptPlan{OpDesc{op, d}, std::move(plan)});
    return *plans[0].plan;
  }
};

struct Accelerator::Impl {
  AcceleratorOptions options;
  std::string policy_tag;
  std::vector<LoadedPlugin> loaded;
  std::vector<accel::PluginState> plugins;
  HardwareFingerprint fingerprint;
  std::unique_ptr<TuningCache> cache;
  bool cache_writable = true;
  std::unordered_map<accel::WorkloadKey, std::unique_ptr<DecisionSlot>, accel::WorkloadKeyHash>
      memo;
  accel::Worker worker;
  AcceleratorStats stats;
  std::mt19937_64 seeds{std::random_device{}()};

  Impl(std::vector<LoadedPlugin> plugins, AcceleratorOptions options);

  // The slot of a bucket, resolving it (cache, tuning, default) on first use.
  DecisionSlot& slot(const accel::WorkloadKey& key, const Workload& w) {
    const auto it = memo.find(key);
    if (it != memo.end()) [[likely]]
      return *it->second;
    return resolve(key, w, /*dispatching=*/true, /*retune=*/false);
  }

  // The dispatch hot path: the plan of a per-call op's exact descriptor (host data). A kept
  // plan costs the workload key (a few shifts), one hash-map lookup and a descriptor compare;
  // otherwise the bucket's winner makes one (make_plan) and the slot keeps it.
  template <class Desc>
  const Plan& plan(OpKind op, const Desc& d) {
    ++stats.dispatches;
    const accel::WorkloadKey key = accel::make_key(op, d, Residency::host);
    const auto it = memo.find(key);
    DecisionSlot& s = it != memo.end() ? *it->second
                                       : resolve(key, Workload{OpDesc{op, d}, Residency::host},
                                                 /*dispatching=*/true, /*retune=*/false);
    if (const Plan* p = s.find(op, d)) [[likely]]
      return *p;
    ++stats.plans_made;
    return s.keep(op, d, make_plan(s, Workload{OpDesc{op, d}, Residency::host}, {}));
  }

  // matmul_dequant's hot path: for per-tensor A, a plan with A's params given at run that
  // serves every call differing only in A's values (dynamic quantization brings new ones on
  // every call), made once by the bucket's winner; otherwise (or should the winner refuse the
  // flag) the plan of the exact descriptor. Returns the plan and whether it takes A's values.
  std::pair<const Plan*, bool> matmul_dequant_plan(const MatmulDesc& d);

  // The winner's plan of the workload, or null when the winner refuses it as unsupported (its
  // message appended to `refusals`).
  std::shared_ptr<const Plan> winner_plan(DecisionSlot& s, const Workload& w,
                                          const std::vector<const void*>& weights,
                                          std::string& refusals);

  // A plan of the workload's exact descriptor from the slot's winner, with `weights` fixed;
  // should the winner refuse it (buckets group shapes; a plugin may take K <= some bound, or
  // tile multiples only), from the next candidate that accepts it, in measured order, then by
  // availability score. A device plugin's plan for host data is staged (staged_plan.h).
  std::shared_ptr<const Plan> make_plan(DecisionSlot& s, const Workload& w,
                                        const std::vector<const void*>& weights);

  DecisionSlot& resolve(const accel::WorkloadKey& key, const Workload& w, bool dispatching,
                        bool retune);

  // The candidates of `op`, after reading every plugin the policy allows (a deferred plugin is
  // created here: choosing among plugins asks each of them).
  accel::Enumeration enumerate(const OpDesc& op);
  void read_allowed_plugins();

 private:
  std::unique_ptr<DecisionSlot> make_slot(const CandidateId& id, TuneReport report,
                                          std::vector<CandidateId> ranking);
  std::unique_ptr<DecisionSlot> from_cache(const Workload& w, const std::string& key);
  std::unique_ptr<DecisionSlot> by_default(const Workload& w, const std::string& why);
  std::unique_ptr<DecisionSlot> by_tuning(const Workload& w);
  std::optional<std::size_t> plugin_index(const std::string& name) const;
};

}  // namespace qforge
