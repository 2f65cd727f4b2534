// matmul_weight_only (float A, int4 weights in blocks of 32 along K, float Y: ONNX Runtime's
// MatMulNBits) through a cpu_x86 plan with B and bias fixed, against OpenBLAS sgemm on the
// float weights, on MiniLM's feed-forward shapes (batch 32 x 128 tokens: M = 4096; hidden 384,
// intermediate 1536) and M = 1. Weights rotate among copies (plans) so that one pass exceeds
// the caches, as in the GEMM family; the int4 weights are an eighth of the float ones.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

std::vector<std::string> run_weight_only_benchmarks(QuantizationOps& x86, const Options& opt) {
  std::vector<std::array<std::int64_t, 3>> shapes = {
      {4096, 1536, 384}, {4096, 384, 1536}, {1, 1536, 384}, {1, 384, 1536}, {32, 1536, 384}};
  if (opt.quick) shapes = {{256, 1536, 384}, {1, 1536, 384}};
  if (!opt.shapes.empty()) shapes = opt.shapes;
  if (opt.threads > 0) openblas_set_num_threads(opt.threads);
  std::mt19937 rng(777);
  std::vector<std::string> table;
  table.push_back(pad("weight-only MxNxK", 20) + pad("s4 plan ms", 12) + pad("GFLOPS", 9) +
                  pad("sgemm ms", 10) + pad("GFLOPS", 9) + pad("sgemm/s4", 10) + "kernel");
  for (const auto& [m, n, k] : shapes) {
    const std::int64_t block = 32, blocks = (k + block - 1) / block;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> codes(-7, 7);
    std::vector<float> a(static_cast<std::size_t>(m * k)), bias(static_cast<std::size_t>(n));
    for (auto& v : a) v = normal(rng);
    for (auto& v : bias) v = normal(rng);
    std::vector<float> scales(static_cast<std::size_t>(n * blocks));
    for (auto& v : scales) v = 0.01f + 0.001f * std::abs(normal(rng));
    const MatmulDesc d{
        .m = m,
        .n = n,
        .k = k,
        .a = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
        .b = QuantizationParams::blockwise(DType::int4, Mapping::symmetric, block, scales),
        .b_layout = MatrixLayout::nk,
        .has_bias = true,
        .out_type = FloatType::f32,
        .y = std::nullopt};
    const OpDesc op{OpKind::matmul_weight_only, d};
    const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    const Support s = x86.supports(op);
    if (!s.supported) {
      std::printf("weight-only %-16s unsupported: %s\n", shape.c_str(), s.reason.c_str());
      continue;
    }
    // Codes and their float values (the sgemm's B, [N, K] row-major).
    std::vector<std::byte> b(static_cast<std::size_t>(n * k + 1) / 2);
    std::vector<float> bf(static_cast<std::size_t>(n * k));
    for (std::int64_t i = 0; i < n * k; ++i) {
      const int q = codes(rng);
      store_element(DType::int4, b.data(), static_cast<std::size_t>(i), q);
      bf[static_cast<std::size_t>(i)] =
          static_cast<float>(q) *
          scales[static_cast<std::size_t>((i / k) * blocks + (i % k) / block)];
    }
    const int copies = static_cast<int>(std::clamp<std::size_t>(
        opt.rotate_bytes / std::max<std::size_t>(bf.size() * sizeof(float), 1) + 1, 1, 16));
    std::vector<std::vector<float>> bfs(static_cast<std::size_t>(copies), bf);
    std::vector<std::shared_ptr<const Plan>> plans;
    for (int i = 0; i < copies; ++i)
      plans.push_back(x86.plan(op, {0, "", {nullptr, b.data(), bias.data()}}));
    std::vector<float> y(static_cast<std::size_t>(m * n)), ys(y.size());
    auto pick = [&](auto& v, int i) -> auto& { return v[static_cast<std::size_t>(i) % v.size()]; };
    const std::function<void(int)> variants[] = {
        [&](int i) {
          pick(plans, i)->run({a.data(), nullptr, nullptr}, {y.data()});
        },
        [&](int i) {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m),
                      static_cast<int>(n), static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k),
                      pick(bfs, i).data(), static_cast<int>(k), 0.0f, ys.data(),
                      static_cast<int>(n));
        }};
    double best[2] = {0, 0};
    for (int round = 0; round < 3; ++round)
      for (int v = 0; v < 2; ++v) {
        const double t = measure(variants[v], opt.min_time_s / 3, opt.min_runs).median_s;
        if (round == 0 || t < best[v]) best[v] = t;
      }
    // The same product (the plan adds the bias): a wrong kernel must not produce a figure.
    double num = 0, den = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double want = static_cast<double>(ys[i]) + bias[i % static_cast<std::size_t>(n)];
      num += (y[i] - want) * (y[i] - want);
      den += want * want;
    }
    const double flops =
        2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const std::string kernel = plans[0]->kernel();
    std::printf(
        "weight-only %-16s s4 plan %8.3f ms %7.1f GFLOPS  sgemm %8.3f ms %7.1f GFLOPS  "
        "sgemm/s4 %.2f  NMSE %.1e  (%s)\n",
        shape.c_str(), best[0] * 1e3, flops / best[0] * 1e-9, best[1] * 1e3, flops / best[1] * 1e-9,
        best[1] / best[0], den > 0 ? num / den : num, kernel.c_str());
    table.push_back(pad(shape, 20) + pad(fixed(best[0] * 1e3, 3), 12) +
                    pad(fixed(flops / best[0] * 1e-9, 1), 9) + pad(fixed(best[1] * 1e3, 3), 10) +
                    pad(fixed(flops / best[1] * 1e-9, 1), 9) +
                    pad(fixed(best[1] / best[0], 2), 10) + kernel);
  }
  return table;
}

}  // namespace qforge::bench
