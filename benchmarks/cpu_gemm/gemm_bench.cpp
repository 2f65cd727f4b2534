// u8 x s8 -> f32 GEMM: cpu_x86 and onednn through matmul_dequant_packed (weights packed once),
// OpenBLAS sgemm on float32 copies of the same operands. Weights rotate among copies so that a
// pass over them cannot be served from the caches.
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "bench.h"
#include "qforge/reference.h"
#include "timing.h"

namespace qforge::bench {
namespace {

struct Shape3 {
  std::int64_t m, n, k;
};

struct Result {
  double gops = 0;
  std::string kernel;
  bool ran = false;
};

int copies_for(std::size_t bytes, std::size_t rotate) {
  return static_cast<int>(
      std::clamp<std::size_t>(rotate / std::max<std::size_t>(bytes, 1) + 1, 1, 16));
}

Result time_plugin(QuantizationOps& ops, const MatmulDesc& d, const std::vector<std::uint8_t>& a,
                   const void* b, const std::vector<float>& bias, std::vector<float>& y,
                   const Options& opt) {
  Result r;
  const Support s = ops.supports({OpKind::matmul_dequant, d});
  if (!s.supported) {
    r.kernel = "unsupported: " + s.reason;
    return r;
  }
  std::vector<std::shared_ptr<PackedWeights>> packed;
  packed.push_back(ops.pack_weights(d, b));
  const int copies = copies_for(packed[0]->bytes(), opt.rotate_bytes);
  for (int i = 1; i < copies; ++i) packed.push_back(ops.pack_weights(d, b));
  const Timing t = measure(
      [&](int i) {
        ops.matmul_dequant_packed(d, a.data(), *packed[static_cast<std::size_t>(i) % packed.size()],
                                  bias.data(), y.data());
      },
      opt.min_time_s, opt.min_runs);
  r.gops = 2.0 * static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k) /
           t.median_s * 1e-9;
  // The kernel the per-call op chose for B's values, as a plan with B fixed names it.
  PlanRequest fixed_b{0, "", {nullptr, b}};
  if (d.has_bias) fixed_b.weights.push_back(nullptr);
  r.kernel = ops.plan({OpKind::matmul_dequant, d}, fixed_b)->kernel();
  r.ran = true;
  return r;
}

Result time_sgemm(const Shape3& s, const std::vector<std::uint8_t>& a,
                  const std::vector<std::int8_t>& b, const Options& opt) {
  std::vector<float> af(a.begin(), a.end());
  const std::size_t b_bytes = b.size() * sizeof(float);
  std::vector<std::vector<float>> bf(
      static_cast<std::size_t>(copies_for(b_bytes, opt.rotate_bytes)),
      std::vector<float>(b.begin(), b.end()));
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
  const Timing t = measure(
      [&](int i) {
        // A [M, K] x B^T, B stored [N, K] like the int8 weights.
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(s.m),
                    static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, af.data(),
                    static_cast<int>(s.k), bf[static_cast<std::size_t>(i) % bf.size()].data(),
                    static_cast<int>(s.k), 0.0f, c.data(), static_cast<int>(s.n));
      },
      opt.min_time_s, opt.min_runs);
  return {2.0 * static_cast<double>(s.m * s.n) * static_cast<double>(s.k) / t.median_s * 1e-9,
          "sgemm", true};
}

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

}  // namespace

std::vector<std::string> run_gemm_benchmarks(QuantizationOps& x86, QuantizationOps* onednn,
                                             const Options& opt) {
  std::vector<Shape3> shapes = {{1, 4096, 4096},    {16, 4096, 4096},   {128, 4096, 4096},
                                {2048, 4096, 4096}, {1024, 1024, 1024}, {2048, 2048, 2048}};
  if (opt.quick) shapes = {{1, 1024, 1024}, {16, 1024, 1024}, {256, 256, 256}};
  if (!opt.shapes.empty()) {
    shapes.clear();
    for (const auto& s : opt.shapes) shapes.push_back({s[0], s[1], s[2]});
  }
  if (opt.threads > 0) openblas_set_num_threads(opt.threads);
  std::mt19937 rng(12345);
  std::vector<std::string> table;
  table.push_back(pad("shape MxNxK", 18) + pad("cpu_x86 GOPS", 14) + pad("onednn GOPS", 13) +
                  pad("x86/onednn", 12) + pad("sgemm GFLOPS", 14) + pad("x86/sgemm", 11) +
                  "cpu_x86 kernel");
  for (const Shape3& s : shapes) {
    std::vector<std::uint8_t> a(static_cast<std::size_t>(s.m * s.k));
    std::vector<std::int8_t> b(static_cast<std::size_t>(s.n * s.k));
    std::vector<float> bias(static_cast<std::size_t>(s.n));
    std::uniform_int_distribution<int> du(0, 255), ds(-127, 127);
    std::uniform_real_distribution<float> df(-1.0f, 1.0f);
    for (auto& v : a) v = static_cast<std::uint8_t>(du(rng));
    for (auto& v : b) v = static_cast<std::int8_t>(ds(rng));
    for (auto& v : bias) v = df(rng);
    std::vector<float> scales(static_cast<std::size_t>(s.n));
    for (auto& v : scales) v = 0.001f + 0.01f * (df(rng) + 1.0f);
    const MatmulDesc d{
        .m = s.m,
        .n = s.n,
        .k = s.k,
        .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 131),
        .b = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, scales),
        .b_layout = MatrixLayout::nk,
        .has_bias = true,
        .out_type = FloatType::f32,
        .y = std::nullopt};
    std::vector<float> y(static_cast<std::size_t>(s.m * s.n));
    const Result rx = time_plugin(x86, d, a, b.data(), bias, y, opt);
    // Sanity: the first row equals the reference bit for bit.
    {
      MatmulDesc d1 = d;
      d1.m = 1;
      std::vector<float> want(static_cast<std::size_t>(s.n));
      reference::matmul_dequant(d1, a.data(), b.data(), bias.data(), want.data());
      if (std::memcmp(want.data(), y.data(), want.size() * sizeof(float)) != 0)
        std::printf("WARNING: cpu_x86 row 0 differs from the reference for %lldx%lldx%lld\n",
                    static_cast<long long>(s.m), static_cast<long long>(s.n),
                    static_cast<long long>(s.k));
    }
    Result ro;
    if (onednn) ro = time_plugin(*onednn, d, a, b.data(), bias, y, opt);
    const Result rs = time_sgemm(s, a, b, opt);
    const std::string shape =
        std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    std::printf("gemm %-16s cpu_x86 %8.1f GOPS (%s)  onednn %s  sgemm %8.1f GFLOPS\n",
                shape.c_str(), rx.gops, rx.kernel.c_str(),
                ro.ran              ? (fixed(ro.gops, 1) + " GOPS (" + ro.kernel + ")").c_str()
                : ro.kernel.empty() ? "n/a"
                                    : ro.kernel.c_str(),
                rs.gops);
    std::fflush(stdout);
    table.push_back(pad(shape, 18) + pad(fixed(rx.gops, 1), 14) +
                    pad(ro.ran ? fixed(ro.gops, 1) : "n/a", 13) +
                    pad(ro.ran ? fixed(rx.gops / ro.gops, 2) : "n/a", 12) +
                    pad(fixed(rs.gops, 1), 14) + pad(fixed(rx.gops / rs.gops, 2), 11) + rx.kernel);
  }
  // Block-wise int4 weights (blocks of 32 along K, ggml Q4_0-like) against int8 activations:
  // the weight-only GEMV of LLM decoding. The anchor is the int8 per-channel row above.
  if (!opt.quick && opt.shapes.empty())
    for (std::int64_t m : {1, 16}) {
      const std::int64_t n = 4096, k = 4096, blocks = k / 32;
      std::vector<std::uint8_t> a(static_cast<std::size_t>(m * k));
      std::vector<std::uint8_t> b4(static_cast<std::size_t>(n * k / 2));
      std::uniform_int_distribution<int> du(0, 255);
      for (auto& v : a) v = static_cast<std::uint8_t>(du(rng));
      for (auto& v : b4) v = static_cast<std::uint8_t>(du(rng));
      std::vector<float> scales(static_cast<std::size_t>(n * blocks), 0.01f),
          bias(static_cast<std::size_t>(n), 0.5f);
      const MatmulDesc d{.m = m,
                         .n = n,
                         .k = k,
                         .a = QuantizationParams::per_tensor_affine(DType::int8, 0.02f, 0),
                         .b = QuantizationParams(DType::int4, Scheme::block_symmetric(32), scales),
                         .b_layout = MatrixLayout::nk,
                         .has_bias = true,
                         .out_type = FloatType::f32,
                         .y = std::nullopt};
      std::vector<float> y(static_cast<std::size_t>(m * n));
      const Result rx = time_plugin(x86, d, a, b4.data(), bias, y, opt);
      Result ro;
      if (onednn) ro = time_plugin(*onednn, d, a, b4.data(), bias, y, opt);
      const std::string shape = std::to_string(m) + "x4096x4096 q4b32";
      std::printf("gemm %-16s cpu_x86 %8.1f GOPS (%s)  onednn %s\n", shape.c_str(), rx.gops,
                  rx.kernel.c_str(), ro.ran ? fixed(ro.gops, 1).c_str() : "n/a");
      table.push_back(pad(shape, 18) + pad(fixed(rx.gops, 1), 14) +
                      pad(ro.ran ? fixed(ro.gops, 1) : "n/a", 13) +
                      pad(ro.ran ? fixed(rx.gops / ro.gops, 2) : "n/a", 12) + pad("-", 14) +
                      pad("-", 11) + rx.kernel);
    }
  return table;
}

}  // namespace qforge::bench
