// Helper process for the concurrent-writers test: tunes `count` distinct workloads, starting at
// bucket `first`, into the cache at `path`, each decision written to the file as it is made.
//   qforge_test_acc_tune_child <cache path> <cpu_scalar plugin> <first> <count>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "qforge/accelerator.h"
#include "qforge/registry.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s CACHE PLUGIN FIRST COUNT\n", argv[0]);
    return 2;
  }
  try {
    using namespace qforge;
    PluginRegistry registry;
    if (!registry.load_file(argv[2])) {
      std::fprintf(stderr, "cannot load %s\n", argv[2]);
      return 2;
    }
    AcceleratorOptions o;
    o.cache_path = argv[1];
    o.budget.per_workload_s = 0.5;
    o.tuner.min_samples = 2;
    o.tuner.stable_checks = 1;
    o.tuner.tolerance = 1.0;
    o.sample_seconds = 0.0002;
    Accelerator acc(registry, o);
    const int first = std::atoi(argv[3]), count = std::atoi(argv[4]);
    for (int i = first; i < first + count; ++i) {
      // One bucket per i: rows 2^i.
      const Shape shape{std::int64_t{1} << i, 8};
      acc.tune({{OpKind::quantize, QuantizeDesc{shape, QuantizationParams::per_tensor_symmetric(
                                                           DType::int8, 0.1f)}}});
    }
    return acc.stats().buckets_tuned == static_cast<std::uint64_t>(count) ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
