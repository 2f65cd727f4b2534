// Runs a list of workloads through one Accelerator: tunes each (or takes it from the cache),
// then measures its anchor. Collects everything the outputs need.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "progress.h"
#include "qforge/accelerator.h"
#include "qforge/registry.h"
#include "results.h"

namespace qforge::bench {

struct RunSettings {
  AcceleratorOptions accelerator;
  bool retune = false;                 // measure even cached buckets, and overwrite them
  bool clear_cache = false;            // empty the cache first
  std::optional<Residency> residency;  // overrides every workload's
  ProgressMode progress = ProgressMode::automatic;
};

BenchRun run_suite(const std::string& suite, std::vector<NamedWorkload> workloads,
                   const PluginRegistry& registry, RunSettings settings);

}  // namespace qforge::bench
