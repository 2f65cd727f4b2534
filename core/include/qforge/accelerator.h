// The accelerator: measured dispatch across whichever plugins loaded.
//
// A workload is an operation descriptor (op, dtypes, schemes, layout, shape) plus where its
// data lives. For a workload first seen, the accelerator
//   1. enumerates the candidates: every (plugin, device, kernel variant) whose supports()
//      accepts the workload, restricted by the policy (plugins, device kind);
//   2. verifies each on a small probe of the same op, dtypes and schemes with random data:
//      integer outputs must equal qforge::reference exactly, float outputs must meet the op's
//      NMSE tolerance (docs/NUMERICS.md). A candidate that differs, throws or hangs is excluded
//      and the reason reported;
//   3. times the survivors on the real shape (warm-up, then samples until the median is stable
//      or the budget ends; host<->device copies counted when the policy says so) and keeps the
//      fastest;
//   4. remembers the winner for the workload's bucket (shapes rounded up to powers of two) in
//      memory and in the persistent TuningCache (tuning_cache.h).
// Every op runs as a plan (plan.h) made by the winner for the exact descriptor; each decision
// keeps the plans of its last few descriptors, so a later call with one of them is a hash lookup
// on a compact key, a descriptor compare and one indirect call into the plan: no JSON, no
// strings, no allocation (docs/ACCELERATOR.md has the figure and what a new descriptor costs).
//
// With online tuning off, a bucket that is not in the cache goes to a default: the usable
// plugin with the highest availability score that supports it, with its first-listed kernel.
//
// Threading: an Accelerator is used from one thread at a time. Accelerators built from one
// registry share plugin instances but only make and run plans on them (nothing is selected on
// an instance), so they may run at once from different threads where the plugins' plans are
// concurrent (cpu_scalar, cpu_x86, onednn, vulkan, cuda; docs/ACCELERATOR.md). Several
// processes may share one cache file.
//
// Tuning runs each candidate on a worker thread and waits for one call at most
// TuningBudget::hang_s; a candidate that overruns is abandoned (its thread is left to finish on
// its own, the plugin is not used again by this accelerator) and reported as timed_out. A plugin
// that crashes the process cannot be survived in-process; see docs/ACCELERATOR.md for the limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/export.h"
#include "qforge/op_desc.h"
#include "qforge/ops.h"
#include "qforge/plan.h"
#include "qforge/registry.h"
#include "qforge/tuning_cache.h"

namespace qforge {

namespace detail {
struct AcceleratorTestHooks;
}

// Where a workload's data lives when the op is called.
//   host:   host memory. A device plugin that wins is fed through copies made by the
//           accelerator (counted in its time when Policy::include_transfers).
//   device: the memory of the device that runs the op (the caller allocates there through the
//           Decision's plugin). Copies are never counted.
enum class Residency : std::uint8_t { host, device };
QFORGE_API std::string_view to_string(Residency r) noexcept;

struct Workload {
  OpDesc op;
  Residency residency = Residency::host;
};

struct NamedWorkload {
  std::string name;  // "gemm_u8s8_64x256x256"
  Workload workload;
};

// What "best" means, and among what.
struct Policy {
  std::vector<std::string> plugins;  // only these plugins (empty: every plugin)
  std::string device_kind;           // only devices of this kind, "cpu" or "gpu" (empty: any)
  bool include_transfers = true;     // host-resident data: count host<->device copies

  // Canonical text, part of every cache key: "plugins=*;device=*;transfers=1".
  QFORGE_API std::string tag() const;
};

// When a candidate's median is trusted (after highway's hwy/auto_tune.h, whose estimate is
// also robust to the outliers of shared machines).
struct TunerSettings {
  int min_samples = 5;      // never stable before this many samples
  int max_samples = 200;    // stop sampling a candidate after this many
  double tolerance = 0.02;  // relative movement of the median counted as "still moving"
  int stable_checks = 3;    // the median held still over this many consecutive samples
};

// The median of a candidate's samples, and whether it has settled.
class QFORGE_API CostEstimate {
 public:
  void add(double cost);
  std::size_t count() const noexcept { return samples_.size(); }
  double median() const;  // 0 when empty
  bool stable(const TunerSettings& settings) const;

 private:
  std::vector<double> samples_;
  std::vector<double> medians_;  // the median after each sample
};

// Chooses among N candidates by measured cost. Small on purpose, after highway's
// hwy/auto_tune.h (SetCandidates / NextConfig / NotifyCost / Best): candidates are measured in
// order, each until its estimate is stable, it reaches max_samples, or the caller skips it.
class QFORGE_API AutoTune {
 public:
  explicit AutoTune(std::size_t candidates, TunerSettings settings = {});
  // The candidate to measure next, or nullopt when every candidate is done.
  std::optional<std::size_t> next() const;
  // Records one sample (seconds, or any cost where lower is better) for next().
  void notify_cost(double cost);
  // Stops measuring next() (excluded, out of budget, hung); its samples so far still count.
  void skip();
  // The candidate with the lowest median among those with at least one sample.
  std::optional<std::size_t> best() const;
  const CostEstimate& estimate(std::size_t i) const { return estimates_.at(i); }
  std::size_t size() const noexcept { return estimates_.size(); }

 private:
  TunerSettings settings_;
  std::vector<CostEstimate> estimates_;
  std::vector<bool> done_;
};

// Budgets are checked between calls: no new probe or sample starts once they are spent, so a
// workload may overrun its budget by the one call in flight. A single call that has not
// returned after hang_s is abandoned as hung (its plugin is not used again by this accelerator).
struct TuningBudget {
  double per_workload_s = 2.0;  // probes + timing of one workload
  double total_s = 60.0;        // everything this accelerator tunes in its lifetime
  double hang_s = 10.0;         // one call (probe, warm-up, or one sample's calls) at most
};

// Progress of one workload's tuning, for progress bars.
struct TuningProgress {
  std::string workload;   // describe() of the workload's descriptor
  std::string stage;      // "probe", "time", "done"
  std::string candidate;  // CandidateId::label() of the one being worked on
  std::size_t candidates_done = 0;
  std::size_t candidates_total = 0;
};

struct AcceleratorOptions {
  Policy policy;
  bool online_tuning = true;  // false: uncached buckets go to the default, nothing is measured
  bool use_cache = true;      // false: decisions live in memory only
  std::filesystem::path cache_path;  // empty: TuningCache::default_path()
  TuningBudget budget;
  TunerSettings tuner;
  double sample_seconds = 0.005;  // target length of one timing sample (many calls when fast)
  // qforge's own tests only (the definition is not installed); null in programs.
  std::shared_ptr<const detail::AcceleratorTestHooks> test_hooks;
  // Called as tuning progresses (on the calling thread).
  std::function<void(const TuningProgress&)> on_progress;

  // Defaults, overridden by QFORGE_ONLINE_TUNING (0/1), QFORGE_TUNING_CACHE (a path, or "off"),
  // QFORGE_TUNING_BUDGET (seconds per workload), QFORGE_TUNING_TOTAL_BUDGET (seconds) and
  // QFORGE_TUNING_HANG (seconds one call may take before it counts as hung).
  QFORGE_API static AcceleratorOptions from_environment();
};

enum class CandidateStatus : std::uint8_t {
  measured,      // verified and timed (possibly fewer samples than wanted, see samples)
  wrong_result,  // differed from the reference on the probe
  threw,         // threw during probe or timing; message is the exception's
  timed_out,     // a call did not return within TuningBudget::hang_s; abandoned
  not_verified,  // the budget ran out before its probe
  not_measured,  // verified, but the budget ran out before it was timed
  quarantined,   // its plugin hung earlier; not run again
  unsupported,   // refused the probe shapes (message says why)
};
QFORGE_API std::string_view to_string(CandidateStatus s) noexcept;

struct CandidateResult {
  CandidateId id;
  CandidateStatus status = CandidateStatus::not_verified;
  double seconds = 0;  // median seconds per call (measured only)
  int samples = 0;
  std::string message;
};

enum class DecisionSource : std::uint8_t {
  memory,    // decided earlier by this accelerator
  cache,     // read from the tuning cache
  tuned,     // measured now
  fallback,  // default choice: online tuning off, total budget spent, or nothing measured
};
QFORGE_API std::string_view to_string(DecisionSource s) noexcept;

struct TuneReport {
  std::string description;  // describe() of the workload's descriptor
  std::string bucket;       // the bucket in words
  std::string key;          // cache key (bucket + policy)
  DecisionSource source = DecisionSource::tuned;
  CandidateId winner;
  double winner_seconds = 0;                // 0 when not measured
  bool complete = true;                     // every survivor measured until stable
  double tuning_seconds = 0;                // wall time spent tuning this workload now
  std::vector<CandidateResult> candidates;  // every candidate, in measuring order
  std::vector<std::string> notes;           // unusable plugins, policy exclusions, ...
};

// A decision to act on directly (device-resident data): allocate through `ops`, then run plans
// of the winner's device and kernel made by plan(). Nothing is selected on the shared plugin
// instance, so decisions of one plugin never disturb each other.
struct Decision {
  std::shared_ptr<QuantizationOps> ops;
  CandidateId id;
  DecisionSource source = DecisionSource::tuned;
  // ops->plan(op, {id.device, id.kernel, weights}): a plan whose run() takes pointers in the
  // memory of `ops` (weights, as PlanRequest::weights, in host memory). Throws unsupported when
  // the winner refuses this exact descriptor (Accelerator::prepare falls back instead).
  QFORGE_API std::shared_ptr<const Plan> plan(const OpDesc& op,
                                              const std::vector<const void*>& weights = {}) const;
};

struct AcceleratorStats {
  std::uint64_t dispatches = 0;           // op calls through the accelerator
  std::uint64_t buckets_tuned = 0;        // measured now
  std::uint64_t cache_hits = 0;           // buckets taken from the cache file
  std::uint64_t fallbacks = 0;            // buckets sent to the default choice
  std::uint64_t unsupported_retries = 0;  // winner refused a shape of its bucket; another ran it
  // Plans the per-call ops made (a call whose descriptor no kept plan serves). A matmul_dequant
  // with per-tensor A whose params change on every call makes one, with A's params as run-time
  // inputs, while its other fields repeat.
  std::uint64_t plans_made = 0;
  double tuning_seconds = 0;
};

class QFORGE_API Accelerator {
 public:
  // Every plugin of PluginRegistry::global(), options from the environment.
  Accelerator();
  explicit Accelerator(AcceleratorOptions options);
  Accelerator(const PluginRegistry& registry, AcceleratorOptions options);
  Accelerator(std::vector<LoadedPlugin> plugins, AcceleratorOptions options);
  ~Accelerator();
  Accelerator(const Accelerator&) = delete;
  Accelerator& operator=(const Accelerator&) = delete;

  // Decides the workload's bucket (memory, cache, measuring, or default) and reports how.
  // retune = true measures again even when the bucket is known, and overwrites the cache.
  // Throws ErrorCode::unsupported listing what each plugin said when no plugin can run it.
  TuneReport tune(const Workload& workload, bool retune = false);
  // The decision for a workload, tuning it first if needed.
  Decision decide(const Workload& workload);
  // A plan of the workload (plan.h) from the winner of its bucket, decided as for the op calls
  // below (memory, cache, measuring, or default; the op calls run such plans themselves, made
  // without weights and kept per descriptor); should the winner refuse this exact shape,
  // the next candidate makes it. `weights` is PlanRequest::weights (host memory). With
  // Residency::host and a device winner, the plan copies its arrays to the device and back on
  // each run, one run at a time. Throws unsupported, with each plugin's reason, when no plugin
  // makes one. The plan must not outlive this accelerator's plugins (its registry).
  std::shared_ptr<const Plan> prepare(const Workload& workload,
                                      const std::vector<const void*>& weights = {});

  // ---- ops on host memory, dispatched to the tuned plugin (meanings: reference.h) ----
  void quantize(const QuantizeDesc& desc, const void* x, void* q);
  void dequantize(const QuantizeDesc& desc, const void* q, float* x);
  void requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y);
  void matmul_integer(const MatmulDesc& desc, const void* a, const void* b, std::int32_t* c);
  void matmul_dequant(const MatmulDesc& desc, const void* a, const void* b, const float* bias,
                      void* y);
  void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y);
  // conv_integer, qlinear_conv or conv_dequant by `op`; bias null when desc.bias is none.
  void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
            void* y);
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                             std::uint8_t* y);
  QuantizationParams linear_forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y);
  void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                       float* dw, float* db);

  const AcceleratorOptions& options() const noexcept;
  const std::vector<LoadedPlugin>& plugins() const noexcept;
  const HardwareFingerprint& fingerprint() const noexcept;
  TuningCache* cache() noexcept;  // null when options().use_cache is false
  AcceleratorStats stats() const noexcept;
  // Plugins this accelerator stopped using (hung during tuning), with the reason.
  std::vector<std::string> quarantined() const;
  // Forgets every decision, in memory and in the cache file.
  void clear_cache();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- workloads and buckets ----

// The bucket of a workload in words: "matmul_integer host a=uint8/per_tensor_affine
// b=int8/per_channel_symmetric(last) kn m<=64 n<=256 k<=256". Shapes round up to powers of
// two per dimension (M = 1 stays its own bucket); see docs/ACCELERATOR.md.
QFORGE_API std::string workload_bucket(const Workload& workload);
// The key a decision for this workload is cached under with this policy.
QFORGE_API std::string workload_cache_key(const Workload& workload, const Policy& policy = {});

// Representative params for an operand of `shape` (used by suites and workload files, where
// only dtypes, schemes and shapes matter): scale 1/64, zero point at the middle of the range
// for affine mappings, one pair per channel along `scheme.axis` or per block of the last axis.
QFORGE_API QuantizationParams workload_params(DType dtype, const Scheme& scheme,
                                              const Shape& shape);

}  // namespace qforge
