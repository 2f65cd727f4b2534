// The accelerator's private state, shared by its source files: the plugins as the accelerator
// sees them, the in-memory decisions (the dispatch hot path), the cache, the tuning worker.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "accelerator/candidates.h"
#include "accelerator/staging.h"
#include "accelerator/worker.h"
#include "accelerator/workload_key.h"
#include "qforge/accelerator.h"

namespace qforge {

// One decided bucket. The first four fields are all a cached dispatch reads.
struct DecisionSlot {
  QuantizationOps* ops = nullptr;
  int device = 0;
  KernelChoice kernel;
  bool host_memory = true;

  std::uint64_t serial = 0;               // unique per accelerator, never 0
  std::shared_ptr<QuantizationOps> keep;  // keeps ops alive
  std::size_t plugin = 0;                 // index into Impl::plugins
  CandidateId id;
  TuneReport report;                 // how it was decided
  std::vector<CandidateId> ranking;  // verified candidates, fastest first (fallbacks)
  accel::DeviceArrays staging;       // host data for a device winner
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
  std::uint64_t next_serial = 0;

  // Forgets which decision is bound on every plugin (after tuning or a fallback bound others).
  void unbind_all() {
    for (auto& p : plugins) p.bound_slot = 0;
  }

  Impl(std::vector<LoadedPlugin> plugins, AcceleratorOptions options);

  // The hot path: the slot of a bucket, resolving it (cache, tuning, default) on first use.
  DecisionSlot& slot(const accel::WorkloadKey& key, const Workload& w) {
    const auto it = memo.find(key);
    if (it != memo.end()) [[likely]]
      return *it->second;
    return resolve(key, w, /*dispatching=*/true, /*retune=*/false);
  }
  template <class Desc>
  DecisionSlot& slot(OpKind op, const Desc& d) {
    const accel::WorkloadKey key = accel::make_key(op, d, Residency::host);
    const auto it = memo.find(key);
    if (it != memo.end()) [[likely]]
      return *it->second;
    return resolve(key, Workload{OpDesc{op, d}, Residency::host}, true, false);
  }

  // One op call through a slot (dispatch.cpp): `call(ops)` on a host-memory winner, else
  // slow_call with the arrays.
  template <class Result, class Desc, class Call, std::size_t NI, std::size_t NO>
  Result dispatch(OpKind op, const Desc& d, Call&& call, const std::array<const void*, NI>& in,
                  const std::array<void*, NO>& out, const QuantizationParams* xq);

  DecisionSlot& resolve(const accel::WorkloadKey& key, const Workload& w, bool dispatching,
                        bool retune);
  // A call the direct path could not make: a device winner fed from host memory, or a winner
  // that refused this particular shape of its bucket.
  std::optional<QuantizationParams> slow_call(DecisionSlot& s, const OpDesc& op,
                                              const void* const* in, void* const* out,
                                              const std::optional<QuantizationParams>& xq,
                                              bool winner_refused);

 private:
  std::unique_ptr<DecisionSlot> make_slot(const CandidateId& id, TuneReport report,
                                          std::vector<CandidateId> ranking);
  std::unique_ptr<DecisionSlot> from_cache(const Workload& w, const std::string& key);
  std::unique_ptr<DecisionSlot> by_default(const Workload& w, const std::string& why);
  std::unique_ptr<DecisionSlot> by_tuning(const Workload& w);
  std::optional<std::size_t> plugin_index(const std::string& name) const;
};

}  // namespace qforge
