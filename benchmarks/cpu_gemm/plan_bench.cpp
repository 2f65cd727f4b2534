// What a call costs through each of cpu_x86's entry points for one u8 x s8 -> f32 GEMM
// (matmul_dequant, per-channel int8 weights, bias): the per-call op with B given each call
// ("direct", packs B every time), the per-call op with weights packed once ("prepacked"), and
// plans with B fixed when made or given on every run. Times per call in microseconds: per
// variant the best median of three interleaved rounds. Weights rotate among copies as in the
// GEMM family, so no variant is served from caches that the others cannot be.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>

#include "bench.h"
#include "qforge/plan.h"
#include "timing.h"

namespace qforge::bench {
namespace {

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

}  // namespace

std::vector<std::string> run_plan_benchmarks(QuantizationOps& x86, const Options& opt) {
  std::vector<std::array<std::int64_t, 3>> shapes;
  for (std::int64_t nk : {1024, 4096})
    for (std::int64_t m : {1, 64, 256})
      if (!opt.quick || nk == 1024) shapes.push_back({m, nk, nk});
  if (!opt.shapes.empty()) shapes = opt.shapes;
  std::mt19937 rng(4242);
  std::vector<std::string> table;
  table.push_back(pad("shape MxNxK", 18) + pad("direct us", 12) + pad("prepacked us", 14) +
                  pad("plan us", 12) + pad("plan/prepacked", 16) + pad("plan B/run us", 15) +
                  "plan kernel");
  for (const auto& [m, n, k] : shapes) {
    std::vector<std::uint8_t> a(static_cast<std::size_t>(m * k));
    std::vector<std::int8_t> b(static_cast<std::size_t>(n * k));
    std::vector<float> bias(static_cast<std::size_t>(n)), scales(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> du(0, 255), ds(-127, 127);
    std::uniform_real_distribution<float> df(-1.0f, 1.0f);
    for (auto& v : a) v = static_cast<std::uint8_t>(du(rng));
    for (auto& v : b) v = static_cast<std::int8_t>(ds(rng));
    for (auto& v : bias) v = df(rng);
    for (auto& v : scales) v = 0.001f + 0.01f * (df(rng) + 1.0f);
    const MatmulDesc d{
        .m = m,
        .n = n,
        .k = k,
        .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 131),
        .b = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, scales),
        .b_layout = MatrixLayout::nk,
        .has_bias = true,
        .out_type = FloatType::f32,
        .y = std::nullopt};
    const OpDesc op{OpKind::matmul_dequant, d};
    const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    const Support s = x86.supports(op);
    if (!s.supported) {
      std::printf("plan %-16s unsupported: %s\n", shape.c_str(), s.reason.c_str());
      continue;
    }
    const int copies = static_cast<int>(
        std::clamp<std::size_t>(opt.rotate_bytes / std::max<std::size_t>(b.size(), 1) + 1, 1, 16));
    std::vector<std::vector<std::int8_t>> bs(static_cast<std::size_t>(copies), b);
    std::vector<std::shared_ptr<PackedWeights>> packed;
    std::vector<std::shared_ptr<const Plan>> plans;
    for (const auto& bc : bs) {
      packed.push_back(x86.pack_weights(d, bc.data()));
      plans.push_back(x86.plan(op, {0, "", {nullptr, bc.data(), nullptr}}));
    }
    const auto per_run = x86.plan(op, {});
    std::vector<float> y(static_cast<std::size_t>(m * n)), y_plan(y.size());
    auto pick = [&](auto& v, int i) -> auto& { return v[static_cast<std::size_t>(i) % v.size()]; };
    // The variants take turns, three rounds of a third of the time each, and each keeps its
    // best round: on a shared machine, load that comes and goes then does not favour the
    // variant that happened to run while it was quiet.
    const std::function<void(int)> variants[] = {
        [&](int i) { x86.matmul_dequant(d, a.data(), pick(bs, i).data(), bias.data(), y.data()); },
        [&](int i) {
          x86.matmul_dequant_packed(d, a.data(), *pick(packed, i), bias.data(), y.data());
        },
        [&](int i) {
          pick(plans, i)->run({a.data(), nullptr, bias.data()}, {y_plan.data()});
        },
        [&](int i) {
          per_run->run({a.data(), pick(bs, i).data(), bias.data()}, {y_plan.data()});
        }};
    double best[4] = {0, 0, 0, 0};
    for (int round = 0; round < 3; ++round)
      for (int v = 0; v < 4; ++v) {
        const double t = measure(variants[v], opt.min_time_s / 3, opt.min_runs).median_s;
        if (round == 0 || t < best[v]) best[v] = t;
      }
    const double direct = best[0] * 1e6, pre = best[1] * 1e6, plan = best[2] * 1e6,
                 plan_b = best[3] * 1e6;
    if (std::memcmp(y.data(), y_plan.data(), y.size() * sizeof(float)) != 0)
      std::printf("WARNING: the plan's output differs from the per-call op's for %s\n",
                  shape.c_str());
    std::printf(
        "plan %-16s direct %10.1f us  prepacked %10.1f us  plan %10.1f us  plan B/run %10.1f us"
        "  (%s)\n",
        shape.c_str(), direct, pre, plan, plan_b, plans[0]->kernel().c_str());
    std::fflush(stdout);
    table.push_back(pad(shape, 18) + pad(fixed(direct, 1), 12) + pad(fixed(pre, 1), 14) +
                    pad(fixed(plan, 1), 12) + pad(fixed(plan / pre, 3), 16) +
                    pad(fixed(plan_b, 1), 15) + plans[0]->kernel());
  }
  return table;
}

}  // namespace qforge::bench
