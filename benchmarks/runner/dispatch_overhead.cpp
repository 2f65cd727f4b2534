// What a cached accelerator decision costs per call: a tiny GEMM (small enough that the op
// itself takes little time) through Accelerator::matmul_integer against the same plugin called
// directly and through a plan the accelerator prepared (Accelerator::prepare), for every usable
// plugin that runs it. The difference is the dispatch overhead; the
// target is at most 1 us per call (docs/ACCELERATOR.md records the figure).
//
// Loaded plugins re-check their descriptor on every call (microseconds for cpu_scalar), which
// buries a difference of nanoseconds in noise; so the program also registers "inline", an
// in-process QuantizationOps whose op (and plan) is one plain loop (tens of nanoseconds), where
// the accelerator's share shows.
//
// The accelerator's per-call ops run plans kept per exact descriptor. "newparams/" calls it
// with activation params that change on every call (dynamic quantization): each call then
// makes a plan, which is what such a caller pays. "newparams_dequant/" does the same with the
// GEMM as matmul_dequant, whose per-tensor calls share one plan that takes A's params at run
// (MatmulDesc::a_params_at_run), so that only the two values change per call.
//
//   qforge_bench_dispatch [--benchmark_filter=...] [--benchmark_repetitions=N]
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "qforge/accelerator.h"
#include "qforge/error.h"
#include "qforge/plan.h"
#include "qforge/registry.h"

namespace {

using namespace qforge;

// About the cheapest correct backend there is: one plain loop for uint8 x int8 per-tensor
// matmul_integer (what the benchmark and its probes use), nothing else, no checks of its own.
void inline_gemm(const MatmulDesc& d, const void* a, const void* b, std::int32_t* c) {
  const auto* qa = static_cast<const std::uint8_t*>(a);
  const auto* qb = static_cast<const std::int8_t*>(b);
  const std::int32_t za = d.a.zero_point(), zb = d.b.zero_point();
  for (std::int64_t m = 0; m < d.m; ++m)
    for (std::int64_t n = 0; n < d.n; ++n) {
      std::int32_t acc = 0;
      for (std::int64_t k = 0; k < d.k; ++k) acc += (qa[m * d.k + k] - za) * (qb[k * d.n + n] - zb);
      c[m * d.n + n] = acc;
    }
}

// The inline op as a plan: the same loop after the null checks every plan makes.
class InlinePlan final : public Plan {
 public:
  explicit InlinePlan(const OpDesc& op)
      : Plan(op, "inline", 0, "loop", PlanConcurrency::concurrent, {}),
        d_(std::get<MatmulDesc>(op.desc)) {}
  void run(std::span<const void* const> in, std::span<void* const> out) const override {
    check_pointers(in, out);
    inline_gemm(d_, in[0], in[1], static_cast<std::int32_t*>(out[0]));
  }

 private:
  MatmulDesc d_;
};

class InlineOps final : public QuantizationOps {
 public:
  std::string name() const override { return "inline"; }
  std::string version() const override { return "0"; }
  Availability availability() const override { return {true, 1, {}}; }
  std::vector<DeviceInfo> devices() const override { return {{"host", "cpu", 0, {}}}; }
  bool host_memory() const override { return true; }
  using QuantizationOps::supports;
  Support supports(const OpDesc& op, int device) const override {
    if (device != 0) return Support::no("inline: device 0 only");
    const auto* d = std::get_if<MatmulDesc>(&op.desc);
    const bool ok = op.op == OpKind::matmul_integer && d && d->a.dtype() == DType::uint8 &&
                    d->b.dtype() == DType::int8 && d->a.count() == 1 && d->b.count() == 1 &&
                    d->b_layout == MatrixLayout::kn && d->k < 4096;
    return ok ? Support::yes({"loop"})
              : Support::no("inline: only u8 x s8 per-tensor kn, K < 4096");
  }
  void matmul_integer(const MatmulDesc& d, const void* a, const void* b, std::int32_t* c) override {
    inline_gemm(d, a, b, c);
  }
  std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request) override {
    const Support s = supports(op);
    if (!s.supported) throw Error(ErrorCode::unsupported, s.reason);
    if (!request.weights.empty()) throw Error(ErrorCode::unsupported, "inline: no fixed weights");
    return std::make_shared<InlinePlan>(op);
  }
  [[noreturn]] static void no() {
    throw Error(ErrorCode::unsupported, "inline: matmul_integer only");
  }
  void quantize(const QuantizeDesc&, const void*, void*) override { no(); }
  void dequantize(const QuantizeDesc&, const void*, float*) override { no(); }
  void requantize(const RequantizeDesc&, const std::int32_t*, void*) override { no(); }
  void matmul_dequant(const MatmulDesc&, const void*, const void*, const float*, void*) override {
    no();
  }
  void qlinear_matmul(const MatmulDesc&, const void*, const void*, void*) override { no(); }
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc&, const float*,
                                             std::uint8_t*) override {
    no();
  }
  QuantizationParams linear_forward(const LinearDesc&, const float*, const std::int8_t*,
                                    const float*, std::int8_t*, float*) override {
    no();
  }
  void linear_backward(const LinearDesc&, const float*, const std::int8_t*,
                       const QuantizationParams&, const std::int8_t*, float*, float*,
                       float*) override {
    no();
  }
};

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

// Activation params that change on every call, as dynamic quantization gives them: 64 distinct
// scales in turn (more than a decision keeps plans for), each call a plan made anew.
void new_params(benchmark::State& state, std::shared_ptr<Accelerator> acc) {
  std::vector<MatmulDesc> descs;
  for (int i = 0; i < 64; ++i) {
    MatmulDesc d = tiny_gemm();
    d.a = QuantizationParams::per_tensor_affine(DType::uint8,
                                                0.05f + 0.001f * static_cast<float>(i), 128);
    descs.push_back(std::move(d));
  }
  Operands o;
  acc->matmul_integer(descs[0], o.a.data(), o.b.data(), o.c.data());  // decided before timing
  std::size_t i = 0;
  for (auto _ : state) {
    acc->matmul_integer(descs[i], o.a.data(), o.b.data(), o.c.data());
    benchmark::DoNotOptimize(o.c.data());
    i = (i + 1) % descs.size();
  }
}

// The same with matmul_dequant (float output, no bias): a new A scale and zero point on every
// call, as dynamic_quantize_linear gives them.
void new_params_dequant(benchmark::State& state, std::shared_ptr<Accelerator> acc) {
  std::vector<MatmulDesc> descs;
  for (int i = 0; i < 64; ++i) {
    MatmulDesc d = tiny_gemm();
    d.a = QuantizationParams::per_tensor_affine(DType::uint8,
                                                0.05f + 0.001f * static_cast<float>(i), 100 + i);
    descs.push_back(std::move(d));
  }
  Operands o;
  std::vector<float> y(16);
  acc->matmul_dequant(descs[0], o.a.data(), o.b.data(), nullptr, y.data());  // decided before
  std::size_t i = 0;
  for (auto _ : state) {
    acc->matmul_dequant(descs[i], o.a.data(), o.b.data(), nullptr, y.data());
    benchmark::DoNotOptimize(y.data());
    i = (i + 1) % descs.size();
  }
}

// A plan prepared once by the accelerator (the winner's own plan, or the default plan over the
// per-call op under the instance's lock), run with the same arrays.
void through_plan(benchmark::State& state, std::shared_ptr<Accelerator> acc) {
  Operands o;
  const auto plan = acc->prepare(Workload{{OpKind::matmul_integer, tiny_gemm()}});
  const std::array<const void*, 2> in{o.a.data(), o.b.data()};
  const std::array<void*, 1> out{o.c.data()};
  for (auto _ : state) {
    plan->run(in, out);
    benchmark::DoNotOptimize(o.c.data());
  }
  state.SetLabel(std::string(to_string(plan->concurrency())) + " plan");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  PluginRegistry& registry = PluginRegistry::global();
  const Workload w{{OpKind::matmul_integer, tiny_gemm()}};
  std::vector<LoadedPlugin> plugins = registry.plugins();
  plugins.push_back({"(in process)", "inline", "0", std::make_shared<InlineOps>()});
  for (const auto& p : plugins) {
    // Host pointers only: a device plugin's direct call would need device buffers, and through
    // the accelerator host data to it is staged, which is a copy benchmark, not dispatch.
    if (!p.ops->availability().usable || !p.ops->host_memory() || !p.ops->supports(w.op).supported)
      continue;
    // One accelerator per plugin, restricted to it, so both sides run the same plugin; no cache
    // file is touched.
    AcceleratorOptions o;
    o.use_cache = false;
    o.policy.plugins = {p.name};
    auto acc = std::make_shared<Accelerator>(std::vector<LoadedPlugin>{p}, o);
    const TuneReport r = acc->tune(w);
    // Direct calls run the plugin's own kernel choice, which the winner need not be (the
    // inline plugin has one kernel).
    benchmark::RegisterBenchmark(("direct/" + r.winner.label()).c_str(), direct, p.ops.get());
    benchmark::RegisterBenchmark(("accelerator/" + r.winner.label()).c_str(), through_accelerator,
                                 acc);
    benchmark::RegisterBenchmark(("plan/" + r.winner.label()).c_str(), through_plan, acc);
    benchmark::RegisterBenchmark(("newparams/" + r.winner.label()).c_str(), new_params, acc);
    if (p.ops->supports(OpDesc{OpKind::matmul_dequant, tiny_gemm()}).supported)
      benchmark::RegisterBenchmark(("newparams_dequant/" + p.name).c_str(), new_params_dequant,
                                   acc);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
