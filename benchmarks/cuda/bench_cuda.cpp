// qforge_bench_cuda: the CUDA backend's figures against anchors measured in the same run
// (docs/PERFORMANCE.md, section "cuda"). Ops run through the plugin loaded by the registry, as
// users run them; the per-row absmax kernel, which has no op yet, is called directly.
//
//   qforge_bench_cuda [--quick] [--only SECTION]...
//
// SECTION: anchors, gemm, dp4a, quantize, linear, blockwise (the int4 block-wise weight-only
// GEMM against int8 per-channel), conv (ResNet-50 / MobileNet layers), variants (K rotation on/off
// for the large tiles), profile (one call of each tensor-core kernel at 4096^3, for a profiler).
//
// Prints one table; every GEMM result is spot-checked against a host computation first, so a
// wrong kernel shows as WRONG instead of as a fast one.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "anchors.h"
#include "bench_blockwise.h"
#include "bench_conv.h"
#include "kernels/rowwise.h"
#include "qforge/error.h"
#include "qforge/plan.h"
#include "qforge/registry.h"

using namespace qforge;
using bench::host_us_per_call;
using bench::time_ms;

namespace {

struct Row {
  std::string what, shape;
  double ms = 0, value = 0;
  std::string unit;
  std::string anchor;
  double anchor_value = 0;
  std::string target;
  bool ok = true;
};

std::vector<Row> g_rows;
int g_reps = 20;

void add(Row r) {
  std::printf("  %-44s %-18s %9.4f ms %9.1f %-5s", r.what.c_str(), r.shape.c_str(), r.ms, r.value,
              r.unit.c_str());
  if (r.anchor_value > 0) std::printf("  %5.2fx %s", r.value / r.anchor_value, r.anchor.c_str());
  std::printf("%s\n", r.ok ? "" : "  WRONG");
  std::fflush(stdout);
  g_rows.push_back(std::move(r));
}

std::string dims(std::int64_t m, std::int64_t n, std::int64_t k) {
  return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

// A device array of the plugin with host-generated contents.
struct Dev {
  std::shared_ptr<Buffer> buf;
  void* p() const { return buf->data(); }
};
Dev upload(QuantizationOps& ops, const void* host, std::size_t bytes) {
  Dev d{ops.allocate(bytes)};
  if (host) ops.copy_to_device(*d.buf, 0, host, bytes);
  return d;
}

std::vector<std::int8_t> random_s8(std::size_t n, std::mt19937_64& rng) {
  std::vector<std::int8_t> v(n);
  std::uniform_int_distribution<int> d(-127, 127);
  for (auto& x : v) x = static_cast<std::int8_t>(d(rng));
  return v;
}

// Checks 64 random entries of C (int32 or float epilogue) against a host evaluation.
bool spot_check(QuantizationOps& ops, const Dev& out, bool is_float,
                const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b,
                std::int64_t m, std::int64_t n, std::int64_t k, float sa,
                const std::vector<float>& sb, const std::vector<float>& bias,
                std::mt19937_64& rng) {
  ops.synchronize();
  std::uniform_int_distribution<std::int64_t> rm(0, m - 1), rn(0, n - 1);
  for (int t = 0; t < 64; ++t) {
    const std::int64_t i = rm(rng), j = rn(rng);
    std::int64_t c = 0;
    for (std::int64_t x = 0; x < k; ++x)
      c += static_cast<std::int64_t>(a[i * k + x]) * b[j * k + x];
    std::uint32_t got = 0;
    ops.copy_to_host(&got, *out.buf, static_cast<std::size_t>((i * n + j) * 4), 4);
    std::uint32_t want;
    if (is_float) {
      const float v = ((static_cast<float>(c) * sa) * sb[j]) + bias[j];
      std::memcpy(&want, &v, 4);
    } else {
      want = static_cast<std::uint32_t>(static_cast<std::int32_t>(c));
    }
    if (got != want) {
      std::printf("    mismatch at (%lld, %lld): got 0x%08x, expected 0x%08x\n",
                  static_cast<long long>(i), static_cast<long long>(j), got, want);
      return false;
    }
  }
  return true;
}

// A plan of `op` with `kernel` (empty: the plugin's own choice) on the default device, every
// operand given on each run.
std::shared_ptr<const Plan> plan_of(QuantizationOps& ops, const OpDesc& op,
                                    const std::string& kernel) {
  return ops.plan(op, PlanRequest{ops.default_device(), kernel, {}});
}

void gemm_section(QuantizationOps& ops, std::mt19937_64& rng, double copy_gbps) {
  std::printf("\nint8 GEMM, A[M,K] x B[N,K]^T (nk), int32 accumulation\n");
  struct Shape {
    std::int64_t m, n, k;
    bool all_kernels;
  };
  const Shape shapes[] = {{8192, 8192, 8192, true}, {4096, 4096, 4096, true},
                          {1, 8192, 8192, false},   {16, 8192, 8192, false},
                          {32, 8192, 8192, false},  {128, 8192, 8192, false}};
  for (const auto& s : shapes) {
    const auto a = random_s8(static_cast<std::size_t>(s.m * s.k), rng);
    const auto b = random_s8(static_cast<std::size_t>(s.n * s.k), rng);
    std::vector<float> sb(static_cast<std::size_t>(s.n)), bias(static_cast<std::size_t>(s.n));
    std::uniform_real_distribution<float> u(0.001f, 0.01f);
    for (auto& v : sb) v = u(rng);
    for (auto& v : bias) v = u(rng) - 0.005f;
    const float sa = 0.02f;
    Dev da = upload(ops, a.data(), a.size()), db = upload(ops, b.data(), b.size());
    Dev dsb = upload(ops, bias.data(), bias.size() * 4);
    Dev dc = upload(ops, nullptr, static_cast<std::size_t>(s.m * s.n) * 4);
    const double ops_count = 2.0 * s.m * s.n * s.k;
    const std::string shape = dims(s.m, s.n, s.k);

    float lt_ms = bench::cublaslt_s8_gemm_ms(
        static_cast<const std::int8_t*>(da.p()), static_cast<const std::int8_t*>(db.p()),
        static_cast<std::int32_t*>(dc.p()), static_cast<int>(s.m), static_cast<int>(s.n),
        static_cast<int>(s.k), g_reps);
    const double lt_tops = lt_ms > 0 ? ops_count / (lt_ms * 1e-3) / 1e12 : 0.0;
    if (lt_ms > 0)
      add({"cuBLASLt s8 gemm int32 out (anchor)", shape, lt_ms, lt_tops, "TOPS", "", 0, ""});
    else std::printf("  cuBLASLt has no algorithm for %s\n", shape.c_str());

    MatmulDesc d{s.m,
                 s.n,
                 s.k,
                 QuantizationParams::per_tensor_symmetric(DType::int8, sa),
                 QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sb),
                 MatrixLayout::nk};
    d.has_bias = true;
    const Support sup = ops.supports({OpKind::matmul_dequant, d});
    std::vector<std::string> kernels = sup.kernels;
    // Skinny shapes: the backend's own choice, and the skinny and the mma.sync split-K kernels
    // for comparison.
    if (!s.all_kernels)
      kernels = {"", "s8_gemm_mma_m16n8k32_skinny_32x32", "s8_gemm_mma_m16n8k32_32x128_splitk"};
    for (const auto& kernel : kernels) {
      if (kernel.find("dp4a") != std::string::npos) continue;  // measured on its own below
      if (s.all_kernels && (kernel.find("32x128") != std::string::npos ||
                            kernel.find("skinny") != std::string::npos))
        continue;  // built for skinny M
      const auto plan = plan_of(ops, {OpKind::matmul_dequant, d}, kernel);
      auto run = [&] { plan->run({da.p(), db.p(), dsb.p()}, {dc.p()}); };
      run();
      const std::string used = plan->kernel();
      const bool ok = spot_check(ops, dc, true, a, b, s.m, s.n, s.k, sa, sb, bias, rng);
      const float ms = time_ms(run, 3, g_reps);
      const double tops = ops_count / (ms * 1e-3) / 1e12;
      Row r{"dequant f32+bias " + used,          shape, ms, tops, "TOPS", "x cuBLASLt", lt_tops,
            s.m >= 4096 ? ">= 1.2x" : ">= 1.0x", ok};
      add(r);
      if (s.m <= 128) {
        // Weight streaming: B is read once per call.
        const double gbps = static_cast<double>(s.n * s.k) / (ms * 1e-3) / 1e9;
        add({"  weight stream (B bytes / time)", shape, ms, gbps, "GB/s", "x d2d copy", copy_gbps,
             "report", ok});
        const float ten = time_ms(
                              [&] {
                                for (int i = 0; i < 10; ++i) run();
                              },
                              1, 5) /
                          10;
        // Host time per call (enqueueing only, no synchronisation): when it exceeds the GPU time,
        // the per-call event figure measures the host.
        const double host_us = host_us_per_call(run, 50);
        // The same op with M = 0: checks and dispatch, no launch.
        MatmulDesc empty = d;
        empty.m = 0;
        const double empty_us = host_us_per_call(
            [&] {
              ops.matmul_dequant(empty, da.p(), db.p(), static_cast<const float*>(dsb.p()), dc.p());
            },
            200);
        std::printf(
            "    %s: per call %.4f ms, 10 back-to-back %.4f ms each, host %.1f us per call (M = 0: "
            "%.1f us)\n",
            used.c_str(), ms, ten, host_us, empty_us);
      }
    }
    if (!s.all_kernels && s.m <= 32) {
      // The skinny kernel's ring depth (QFORGE_CUDA_SKINNY_STAGES), same data.
      for (const char* stages : {"2", "3", "4", "6"}) {
        setenv("QFORGE_CUDA_SKINNY_STAGES", stages, 1);
        const auto plan =
            plan_of(ops, {OpKind::matmul_dequant, d}, "s8_gemm_mma_m16n8k32_skinny_32x32");
        auto run = [&] { plan->run({da.p(), db.p(), dsb.p()}, {dc.p()}); };
        run();
        const bool ok = spot_check(ops, dc, true, a, b, s.m, s.n, s.k, sa, sb, bias, rng);
        const float ms = time_ms(run, 3, g_reps);
        add({std::string("  skinny stages=") + stages + " B stream", shape, ms,
             static_cast<double>(s.n * s.k) / (ms * 1e-3) / 1e9, "GB/s", "x d2d copy", copy_gbps,
             "report", ok});
      }
      unsetenv("QFORGE_CUDA_SKINNY_STAGES");
    }
    if (!s.all_kernels && s.m > 32) {
      // The wgmma kernel's split-K factor (QFORGE_CUDA_WGMMA_SPLITS), same data.
      for (const char* splits : {"1", "2", "3", "4", "6", "8"}) {
        setenv("QFORGE_CUDA_WGMMA_SPLITS", splits, 1);
        auto run = [&] {
          ops.matmul_dequant(d, da.p(), db.p(), static_cast<const float*>(dsb.p()), dc.p());
        };
        run();
        const bool ok = spot_check(ops, dc, true, a, b, s.m, s.n, s.k, sa, sb, bias, rng);
        const float ms = time_ms(run, 3, g_reps);
        add({"  " + plan_of(ops, {OpKind::matmul_dequant, d}, "")->kernel() + " splits=" + splits,
             shape, ms, ops_count / (ms * 1e-3) / 1e12, "TOPS", "x cuBLASLt", lt_tops, "report",
             ok});
      }
      unsetenv("QFORGE_CUDA_WGMMA_SPLITS");
    }
    if (!s.all_kernels) {
      // Inference keeps its weights packed: B converted once, its scales on the device.
      const auto packed = ops.pack_weights(d, db.p());
      auto run = [&] {
        ops.matmul_dequant_packed(d, da.p(), *packed, static_cast<const float*>(dsb.p()), dc.p());
      };
      run();
      const std::string used = plan_of(ops, {OpKind::matmul_dequant, d}, "")->kernel();
      const bool ok = spot_check(ops, dc, true, a, b, s.m, s.n, s.k, sa, sb, bias, rng);
      const float ms = time_ms(run, 3, g_reps);
      add({"dequant f32+bias packed " + used, shape, ms, ops_count / (ms * 1e-3) / 1e12, "TOPS",
           "x cuBLASLt", lt_tops, ">= 1.0x", ok});
      add({"  weight stream, packed", shape, ms, static_cast<double>(s.n * s.k) / (ms * 1e-3) / 1e9,
           "GB/s", "x d2d copy", copy_gbps, "report", ok});
    }
  }
}

// One square GEMM through a plan of matmul_integer with `kernel`; returns the median ms.
float square_gemm_ms(QuantizationOps& ops, std::int64_t s, const std::string& kernel, int reps,
                     bool batch_too, std::mt19937_64& rng, bool& ok) {
  const auto a = random_s8(static_cast<std::size_t>(s * s), rng);
  const auto b = random_s8(static_cast<std::size_t>(s * s), rng);
  Dev da = upload(ops, a.data(), a.size()), db = upload(ops, b.data(), b.size());
  Dev dc = upload(ops, nullptr, static_cast<std::size_t>(s * s) * 4);
  MatmulDesc d{s,
               s,
               s,
               QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
               QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
               MatrixLayout::nk};
  const auto plan = plan_of(ops, {OpKind::matmul_integer, d}, kernel);
  auto run = [&] { plan->run({da.p(), db.p()}, {dc.p()}); };
  run();
  ok = spot_check(ops, dc, false, a, b, s, s, s, 1.0f, {}, {}, rng);
  const float ms = reps > 0 ? time_ms(run, 2, reps) : 0.0f;
  if (batch_too && reps > 0) {
    // Ten calls between one pair of events: if this differs from the per-call median, the
    // per-call figure carries host gaps.
    const float ten = time_ms(
        [&] {
          for (int i = 0; i < 10; ++i) run();
        },
        1, 3);
    std::printf("    %s %lld^3: per call %.4f ms, 10 back-to-back %.4f ms each\n", kernel.c_str(),
                static_cast<long long>(s), ms, ten / 10);
  }
  return ms;
}

void variants_section(QuantizationOps& ops, std::mt19937_64& rng) {
  std::printf("\nvariants: K rotation (QFORGE_CUDA_GEMM_KROTATE) off / on, matmul_integer\n");
  const Support sup = ops.supports(
      {OpKind::matmul_integer,
       MatmulDesc{4096, 4096, 4096, QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                  QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f)}});
  for (const std::int64_t s : {std::int64_t{4096}, std::int64_t{8192}})
    for (const auto& kernel : sup.kernels) {
      if (kernel.find("dp4a") != std::string::npos || kernel.find("32x128") != std::string::npos)
        continue;
      for (const char* rot : {"0", "1"}) {
        setenv("QFORGE_CUDA_GEMM_KROTATE", rot, 1);
        bool ok = false;
        const float ms = square_gemm_ms(ops, s, kernel, g_reps / 2, rot[0] == '0', rng, ok);
        add({"int32 " + kernel + " krot=" + rot, dims(s, s, s), ms,
             2.0 * s * s * s / (ms * 1e-3) / 1e12, "TOPS", "", 0, "experiment", ok});
      }
    }
  unsetenv("QFORGE_CUDA_GEMM_KROTATE");
}

void profile_section(QuantizationOps& ops, std::mt19937_64& rng) {
  const Support sup = ops.supports(
      {OpKind::matmul_integer,
       MatmulDesc{4096, 4096, 4096, QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
                  QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f)}});
  for (const auto& kernel : sup.kernels) {
    if (kernel.find("dp4a") != std::string::npos) continue;
    bool ok = false;
    square_gemm_ms(ops, 4096, kernel, 0, false, rng, ok);
    std::printf("profiled %s: %s\n", kernel.c_str(), ok ? "correct" : "WRONG");
  }
}

void dp4a_section(QuantizationOps& ops, std::mt19937_64& rng, double dp4a_peak) {
  std::printf("\nDP4A GEMM\n");
  const std::int64_t m = 8192, n = 8192, k = 8192;
  const auto a = random_s8(static_cast<std::size_t>(m * k), rng);
  const auto b = random_s8(static_cast<std::size_t>(n * k), rng);
  Dev da = upload(ops, a.data(), a.size()), db = upload(ops, b.data(), b.size());
  Dev dc = upload(ops, nullptr, static_cast<std::size_t>(m * n) * 4);
  MatmulDesc d{m,
               n,
               k,
               QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
               QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f),
               MatrixLayout::nk};
  const auto plan = plan_of(ops, {OpKind::matmul_integer, d}, "s8_gemm_dp4a_128x128");
  auto run = [&] { plan->run({da.p(), db.p()}, {dc.p()}); };
  run();
  const bool ok = spot_check(ops, dc, false, a, b, m, n, k, 1.0f, {}, {}, rng);
  const float ms = time_ms(run, 1, 5);
  add({"matmul_integer s8_gemm_dp4a_128x128", dims(m, n, k), ms,
       2.0 * m * n * k / (ms * 1e-3) / 1e12, "TOPS", "x dp4a peak", dp4a_peak, ">= 0.6x", ok});
}

void quantize_section(QuantizationOps& ops, std::mt19937_64& rng, double copy_gbps) {
  std::printf("\nquantize / dequantize (GB/s = bytes read + written per second)\n");
  const std::int64_t rows = 8192, cols = 8192, n = rows * cols;
  std::vector<float> x(static_cast<std::size_t>(n));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : x) v = normal(rng);
  std::vector<std::uint16_t> xb(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    xb[i] = static_cast<std::uint16_t>(bits >> 16);  // truncation is fine for timing data
  }
  Dev dx = upload(ops, x.data(), x.size() * 4), dxb = upload(ops, xb.data(), xb.size() * 2);
  Dev dq = upload(ops, nullptr, x.size()), dy = upload(ops, nullptr, x.size() * 4);
  Dev ds = upload(ops, nullptr, static_cast<std::size_t>(rows) * 4);
  const std::string shape = dims(rows, cols, 1).substr(0, dims(rows, cols, 1).size() - 2);
  auto gbps = [&](double bytes, float ms) { return bytes / (ms * 1e-3) / 1e9; };

  const auto p = QuantizationParams::per_tensor_symmetric(DType::int8, 0.03f);
  // The reciprocal fast path (default), then the exact division for every element
  // (QFORGE_CUDA_QUANTIZE_DIVIDE=1) on the same data: same codes, the difference is the speed.
  for (const bool divide : {false, true}) {
    if (divide) setenv("QFORGE_CUDA_QUANTIZE_DIVIDE", "1", 1);
    const std::string how = divide ? " (divide)" : "";
    for (const FloatType t : {FloatType::f32, FloatType::bf16}) {
      const QuantizeDesc d{{rows, cols}, p, t};
      const void* src = t == FloatType::f32 ? dx.p() : dxb.p();
      const float ms = time_ms([&] { ops.quantize(d, src, dq.p()); }, 3, g_reps);
      const double bytes = static_cast<double>(n) * (size_of(t) + 1);
      add({std::string("quantize per-tensor ") + name(t) + "->int8" + how, shape, ms,
           gbps(bytes, ms), "GB/s", "x d2d copy", copy_gbps, divide ? "report" : ">= 0.85x"});
    }
    for (const FloatType t : {FloatType::f32, FloatType::bf16}) {
      const void* src = t == FloatType::f32 ? dx.p() : dxb.p();
      const float ms = time_ms(
          [&] {
            cuda::launch_rowwise_absmax_quantize(t, src, rows, cols,
                                                 static_cast<std::int8_t*>(dq.p()),
                                                 static_cast<float*>(ds.p()), nullptr);
          },
          3, g_reps);
      const double bytes = static_cast<double>(n) * (size_of(t) + 1) + rows * 4.0;
      add({std::string("absmax per-row quantize ") + name(t) + "->int8" + how, shape, ms,
           gbps(bytes, ms), "GB/s", "x d2d copy", copy_gbps, divide ? "report" : ">= 0.85x"});
    }
  }
  unsetenv("QFORGE_CUDA_QUANTIZE_DIVIDE");
  {
    const QuantizeDesc d{{rows, cols}, p, FloatType::f32};
    const float ms =
        time_ms([&] { ops.dequantize(d, dq.p(), static_cast<float*>(dy.p())); }, 3, g_reps);
    add({"dequantize per-tensor int8->f32", shape, ms, gbps(n * 5.0, ms), "GB/s", "x d2d copy",
         copy_gbps, ">= 0.85x"});
  }
  {
    const float ms = time_ms(
        [&] {
          ops.dynamic_quantize_linear({{rows, cols}}, static_cast<const float*>(dx.p()),
                                      static_cast<std::uint8_t*>(dq.p()));
        },
        3, g_reps);
    add({"dynamic_quantize_linear f32->uint8 (2 passes)", shape, ms, gbps(n * 5.0, ms), "GB/s",
         "x d2d copy", copy_gbps, "report"});
  }
}

void linear_section(QuantizationOps& ops, std::mt19937_64& rng) {
  std::printf("\nquantized linear (M = N = K)\n");
  for (const std::int64_t s : {std::int64_t{4096}, std::int64_t{8192}}) {
    std::vector<float> x(static_cast<std::size_t>(s * s));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& v : x) v = normal(rng);
    const auto w = random_s8(static_cast<std::size_t>(s * s), rng);
    std::vector<float> sw(static_cast<std::size_t>(s), 0.01f),
        bias(static_cast<std::size_t>(s), 0.1f);
    Dev dx = upload(ops, x.data(), x.size() * 4), dw = upload(ops, w.data(), w.size());
    Dev db = upload(ops, bias.data(), bias.size() * 4), dxq = upload(ops, nullptr, x.size());
    Dev dy = upload(ops, nullptr, x.size() * 4), dgx = upload(ops, nullptr, x.size() * 4);
    Dev dgw = upload(ops, nullptr, x.size() * 4),
        dgb = upload(ops, nullptr, static_cast<std::size_t>(s) * 4);
    const LinearDesc d{
        s, s, s, QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sw), true};
    QuantizationParams xp = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
    const float fwd = time_ms(
        [&] {
          xp = ops.linear_forward(d, static_cast<const float*>(dx.p()),
                                  static_cast<const std::int8_t*>(dw.p()),
                                  static_cast<const float*>(db.p()),
                                  static_cast<std::int8_t*>(dxq.p()), static_cast<float*>(dy.p()));
        },
        2, s > 4096 ? 5 : 10);
    const double flop = 2.0 * s * s * s;
    add({"linear_forward f32 (absmax, quantize, gemm)", dims(s, s, s), fwd,
         flop / (fwd * 1e-3) / 1e12, "TOPS", "", 0, "report"});
    const float bwd = time_ms(
        [&] {
          ops.linear_backward(d, static_cast<const float*>(dy.p()),
                              static_cast<const std::int8_t*>(dxq.p()), xp,
                              static_cast<const std::int8_t*>(dw.p()), static_cast<float*>(dgx.p()),
                              static_cast<float*>(dgw.p()), static_cast<float*>(dgb.p()));
        },
        1, s > 4096 ? 3 : 5);
    add({"linear_backward f32 (dX, dW, db)", dims(s, s, s), bwd, 2.0 * flop / (bwd * 1e-3) / 1e12,
         "TFLOPS", "", 0, "report"});
    std::printf("    backward / forward time: %.1fx\n", bwd / fwd);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) g_reps = 5;
    else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only.emplace_back(argv[++i]);
  }
  auto want = [&](const char* section) {
    return only.empty() || std::find(only.begin(), only.end(), section) != only.end();
  };
  PluginRegistry registry;
  registry.load_default();
  QuantizationOps* ops = registry.find("cuda");
  if (!ops) {
    std::printf("qforge_bench_cuda: the cuda plugin did not load; nothing to measure\n");
    for (const auto& f : registry.failures())
      std::printf("  %s: %s\n", f.path.c_str(), f.message.c_str());
    return 0;
  }
  const Availability av = ops->availability();
  if (!av.usable) {
    std::printf("qforge_bench_cuda: cuda cannot run here: %s\n", av.reason.c_str());
    return 0;
  }
  try {
    const DeviceInfo dev = ops->devices().at(static_cast<std::size_t>(ops->default_device()));
    const int sms = std::stoi(dev.properties.at("multiprocessors"));
    std::printf("device: %s, sm_%s, %d SMs, %.1f GiB, driver %s\n", dev.name.c_str(),
                dev.properties.at("compute_capability").c_str(), sms,
                dev.memory_bytes / 1073741824.0, dev.properties.at("driver").c_str());
    std::mt19937_64 rng(12345);

    if (std::find(only.begin(), only.end(), "profile") != only.end()) {
      profile_section(*ops, rng);
      return 0;
    }
    double copy_gbps = 0, dp4a_peak = 0;
    if (want("anchors") || want("gemm") || want("dp4a") || want("quantize") || want("blockwise")) {
      std::printf("\nanchors\n");
      const std::size_t copy_bytes = std::size_t{1} << 30;
      Dev c0 = upload(*ops, nullptr, copy_bytes), c1 = upload(*ops, nullptr, copy_bytes);
      copy_gbps = bench::d2d_copy_gbps(c1.p(), c0.p(), copy_bytes, g_reps);
      c0.buf.reset();
      c1.buf.reset();
      add({"device-to-device copy (read + write)", "1 GiB", 0, copy_gbps, "GB/s", "", 0, "anchor"});
      dp4a_peak = bench::dp4a_peak_tops(sms);
      add({"__dp4a register-only peak", "", 0, dp4a_peak, "TOPS", "", 0, "anchor"});
      const double mma_peak = bench::mma_peak_tops(sms);
      add({"mma.sync s8 m16n8k32 register-only peak", "", 0, mma_peak, "TOPS", "", 0, "anchor"});
      const bench::HostCosts host = bench::host_costs(2000);
      add({"host: empty kernel launch", "", 0, host.launch_us, "us", "", 0, "anchor"});
      add({"host: cudaSetDevice", "", 0, host.set_device_us, "us", "", 0, "anchor"});
      add({"host: cudaGetLastError", "", 0, host.get_last_error_us, "us", "", 0, "anchor"});
    }
    if (want("variants")) variants_section(*ops, rng);
    if (want("gemm")) gemm_section(*ops, rng, copy_gbps);
    if (want("dp4a")) dp4a_section(*ops, rng, dp4a_peak);
    if (want("quantize")) quantize_section(*ops, rng, copy_gbps);
    if (want("linear")) linear_section(*ops, rng);
    if (want("blockwise"))
      bench::blockwise_section(
          *ops, rng, copy_gbps,
          [](const std::string& what, const std::string& shape, double ms, double value,
             const std::string& unit, const std::string& anchor, double anchor_value,
             const std::string& target, bool ok) {
            add({what, shape, ms, value, unit, anchor, anchor_value, target, ok});
          },
          g_reps);
    if (want("conv"))
      bench::conv_section(
          *ops, registry.find("cpu_x86"), rng,
          [](const std::string& what, const std::string& shape, double ms, double value,
             const std::string& unit, const std::string& anchor, double anchor_value,
             const std::string& target, bool ok) {
            add({what, shape, ms, value, unit, anchor, anchor_value, target, ok});
          },
          g_reps);
  } catch (const std::exception& e) {
    std::printf("qforge_bench_cuda: %s\n", e.what());
    return 1;
  }

  std::printf("\n%-46s %-18s %10s %9s %8s  %s\n", "summary", "shape", "ms", "rate", "ratio",
              "target");
  for (const auto& r : g_rows) {
    char ratio[32] = "";
    if (r.anchor_value > 0) std::snprintf(ratio, sizeof ratio, "%.2f", r.value / r.anchor_value);
    std::printf("%-46s %-18s %10.4f %9.1f %8s  %s %s%s\n", r.what.substr(0, 46).c_str(),
                r.shape.c_str(), r.ms, r.value, ratio, r.target.c_str(), r.unit.c_str(),
                r.ok ? "" : " WRONG");
  }
  return 0;
}
