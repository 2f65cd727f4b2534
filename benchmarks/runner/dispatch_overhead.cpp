// What a cached accelerator decision costs per call: a tiny GEMM (small enough that the op
// itself takes little time) through Accelerator::matmul_integer against the same plugin called
// directly, for every usable plugin that runs it. The difference is the dispatch overhead; the
// target is at most 1 us per call (docs/ACCELERATOR.md records the figure).
//
//   qforge_bench_dispatch [--benchmark_filter=...] [--benchmark_repetitions=N]
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "qforge/accelerator.h"
#include "qforge/registry.h"

namespace {

using namespace qforge;

MatmulDesc tiny_gemm() {
  return MatmulDesc{4,
                    4,
                    8,
                    QuantizationParams::per_tensor_affine(DType::uint8, 0.05f, 128),
                    QuantizationParams::per_tensor_symmetric(DType::int8, 0.02f),
                    MatrixLayout::kn,
                    false,
                    FloatType::f32,
                    std::nullopt,
                    RequantMode::float_multiplier};
}

struct Operands {
  std::vector<std::uint8_t> a = std::vector<std::uint8_t>(32, 130);
  std::vector<std::int8_t> b = std::vector<std::int8_t>(32, -3);
  std::vector<std::int32_t> c = std::vector<std::int32_t>(16);
};

void direct(benchmark::State& state, QuantizationOps* ops) {
  const MatmulDesc d = tiny_gemm();
  Operands o;
  for (auto _ : state) {
    ops->matmul_integer(d, o.a.data(), o.b.data(), o.c.data());
    benchmark::DoNotOptimize(o.c.data());
  }
}

void through_accelerator(benchmark::State& state, std::shared_ptr<Accelerator> acc) {
  const MatmulDesc d = tiny_gemm();
  Operands o;
  acc->matmul_integer(d, o.a.data(), o.b.data(), o.c.data());  // decided before timing
  for (auto _ : state) {
    acc->matmul_integer(d, o.a.data(), o.b.data(), o.c.data());
    benchmark::DoNotOptimize(o.c.data());
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  PluginRegistry& registry = PluginRegistry::global();
  const Workload w{{OpKind::matmul_integer, tiny_gemm()}};
  for (const auto& p : registry.plugins()) {
    if (!p.ops->availability().usable || !p.ops->supports(w.op).supported) continue;
    // One accelerator per plugin, restricted to it, so both sides run the same plugin; no cache
    // file is touched.
    AcceleratorOptions o;
    o.use_cache = false;
    o.policy.plugins = {p.name};
    auto acc = std::make_shared<Accelerator>(registry, o);
    const TuneReport r = acc->tune(w);
    // Direct calls use the kernel the accelerator chose.
    r.winner.kernel.empty() ? p.ops->set_kernel({}) : p.ops->set_kernel({r.winner.kernel});
    benchmark::RegisterBenchmark(("direct/" + r.winner.label()).c_str(), direct, p.ops.get());
    benchmark::RegisterBenchmark(("accelerator/" + r.winner.label()).c_str(), through_accelerator, acc);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
