#include "run_suite.h"

#include <chrono>
#include <ctime>
#include <exception>
#include <new>

#include "anchors.h"
#include "qforge/error.h"
#include "qforge/hardware.h"
#include "work.h"

namespace qforge::bench {
namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::optional<double> best_of(const TuneReport& r, const std::string& plugin) {
  std::optional<double> best;
  for (const auto& c : r.candidates)
    if (c.id.plugin == plugin && c.status == CandidateStatus::measured && c.seconds > 0 &&
        (!best || c.seconds < *best))
      best = c.seconds;
  return best;
}

}  // namespace

BenchRun run_suite(const std::string& suite, std::vector<NamedWorkload> workloads,
                   const PluginRegistry& registry, RunSettings settings) {
  const auto start = std::chrono::steady_clock::now();
  BenchRun run;
  run.suite = suite;
  run.date = utc_now();
  run.cpu = cpu_info().model;
  run.policy = settings.accelerator.policy.tag();
  for (const auto& p : registry.plugins()) {
    const Availability a = p.ops->availability();
    run.plugins.push_back({p.name, p.version, a.usable, a.reason});
  }
  for (const auto& f : registry.failures()) run.load_failures.push_back(f.message);

  Progress progress(settings.progress, workloads.size());
  settings.accelerator.on_progress = [&progress](const TuningProgress& p) { progress.update(p); };
  Accelerator acc(registry, settings.accelerator);
  run.fingerprint = acc.fingerprint().id();
  if (TuningCache* cache = acc.cache()) {
    if (settings.clear_cache) acc.clear_cache();
    run.cache_path = cache->path().string();
    run.cache_warnings = cache->warnings();
  }

  for (std::size_t i = 0; i < workloads.size(); ++i) {
    NamedWorkload& w = workloads[i];
    if (settings.residency) w.workload.residency = *settings.residency;
    WorkloadResult r;
    r.name = w.name;
    r.op = std::string(to_string(w.workload.op.op));
    r.description = describe(w.workload.op);
    r.residency = std::string(to_string(w.workload.residency));
    r.work = work_of(w.workload.op);
    progress.begin(i, w.name);
    try {
      r.report = acc.tune(w.workload, settings.retune);
      r.scalar_seconds = best_of(*r.report, "cpu_scalar");
      add_anchor(r, w.workload.op);
    } catch (const std::bad_alloc&) {
      // One workload too large for this machine's memory must not end the run: the others
      // still run and every output is written, with this workload's row saying what happened.
      r.report.reset();
      r.anchor.reset();
      r.error = "out of memory while tuning or measuring " + w.name + " (" + r.description +
                "); try smaller extents";
    } catch (const std::exception& e) {
      r.report.reset();
      r.anchor.reset();
      r.error = e.what();
    } catch (...) {
      r.report.reset();
      r.anchor.reset();
      r.error = "an unknown exception while tuning or measuring " + w.name;
    }
    progress.end(r);
    run.workloads.push_back(std::move(r));
  }
  progress.finish();
  run.stats = acc.stats();
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace qforge::bench
