// The block-wise int4 weight-only GEMM (s8_qbw_gemm kernels) against the int8 per-channel GEMM
// of the same shape in the same run: matmul_dequant, float32 out with bias, A int8 per tensor,
// B int4 symmetric in blocks of 32 (the ggml Q4_0 layout, float32 scales) or int8 per channel.
// Three ways to call the block-wise kernel: the op with host params (the parameter cache then
// compares N * K / 32 scales per call), the op with packed weights (the packed check compares
// them too), and the kernel launched directly (no host work: the kernel's own time).
#include "bench_blockwise.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "anchors.h"
#include "kernels/gemm_blockwise.h"
#include "qforge/registry.h"

namespace qforge::bench {
namespace {

struct DevMem {
  void* p = nullptr;
  explicit DevMem(std::size_t bytes) {
    check_cuda(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
  }
  ~DevMem() { cudaFree(p); }
  DevMem(const DevMem&) = delete;
  DevMem& operator=(const DevMem&) = delete;
};

void upload(DevMem& d, const void* host, std::size_t bytes) {
  check_cuda(cudaMemcpy(d.p, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

// y[m, n] in double from the codes, for spot checks: sum over blocks of C_j * sa * sb_j + bias.
double expected_y(const std::vector<std::int8_t>& a, const std::vector<std::uint8_t>& b,
                  const std::vector<float>& sb, float sa, const std::vector<float>& bias,
                  std::int64_t k, std::int64_t m, std::int64_t n, double& magnitude) {
  const std::int64_t blocks = k / 32;
  double y = bias[static_cast<std::size_t>(n)];
  magnitude = std::fabs(y);
  for (std::int64_t j = 0; j < blocks; ++j) {
    std::int64_t c = 0;
    for (std::int64_t kk = j * 32; kk < j * 32 + 32; ++kk) {
      const std::size_t e = static_cast<std::size_t>(n * k + kk);
      const int nib = (b[e / 2] >> (4 * (e & 1))) & 0xF;
      c += static_cast<std::int64_t>(a[static_cast<std::size_t>(m * k + kk)]) * ((nib ^ 8) - 8);
    }
    const double term = static_cast<double>(c) * sa * sb[static_cast<std::size_t>(n * blocks + j)];
    y += term;
    magnitude += std::fabs(term);
  }
  return y;
}

// matmul_dequant, A int8 per tensor (scale sa), nk, float32 out with bias.
MatmulDesc desc_of(std::int64_t m, std::int64_t n, std::int64_t k, float sa, QuantizationParams b) {
  return MatmulDesc{.m = m,
                    .n = n,
                    .k = k,
                    .a = QuantizationParams::per_tensor_symmetric(DType::int8, sa),
                    .b = std::move(b),
                    .b_layout = MatrixLayout::nk,
                    .has_bias = true,
                    .out_type = FloatType::f32,
                    .y = std::nullopt,
                    .requant_mode = RequantMode::float_multiplier};
}

// The tile part of a kernel name (s8_qbw_gemm_mma_m16n8k32_16x128_splitk -> 16x128_splitk),
// so that the summary's 46 columns tell the rows apart.
std::string short_name(const std::string& kernel) {
  if (kernel.find("gemv") != std::string::npos) return "gemv";
  const auto mma = kernel.find("k32_");
  const auto wg = kernel.find("wgmma");
  const std::string tail = mma == std::string::npos ? kernel : kernel.substr(mma + 4);
  return (wg != std::string::npos ? "wgmma " : "") + tail;
}

bool spot_check(const void* dev_y, const std::vector<std::int8_t>& a,
                const std::vector<std::uint8_t>& b, const std::vector<float>& sb, float sa,
                const std::vector<float>& bias, std::int64_t m, std::int64_t n, std::int64_t k,
                std::mt19937_64& rng) {
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::uniform_int_distribution<std::int64_t> rm(0, m - 1), rn(0, n - 1);
  for (int t = 0; t < 32; ++t) {
    const std::int64_t i = rm(rng), j = rn(rng);
    float got = 0;
    check_cuda(
        cudaMemcpy(&got, static_cast<const float*>(dev_y) + i * n + j, 4, cudaMemcpyDeviceToHost),
        "cudaMemcpy");
    double magnitude = 0;
    const double want = expected_y(a, b, sb, sa, bias, k, i, j, magnitude);
    if (!(std::fabs(got - want) <= 1e-5 * magnitude)) {
      std::printf("    mismatch at (%lld, %lld): got %.9g, expected %.9g\n",
                  static_cast<long long>(i), static_cast<long long>(j), static_cast<double>(got),
                  want);
      return false;
    }
  }
  return true;
}

}  // namespace

void blockwise_section(QuantizationOps& ops, std::mt19937_64& rng, double copy_gbps,
                       const AddRow& add, int reps) {
  std::printf(
      "\nblock-wise int4 weight-only GEMM (B int4 symmetric, blocks of 32, f32 scales) vs int8 "
      "per-channel\n");
  int sms = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0),
             "cudaDeviceGetAttribute");
  struct Dims {
    std::int64_t m, n, k;
  };
  for (const Dims s : {Dims{1, 4096, 4096}, Dims{16, 4096, 4096}, Dims{128, 4096, 4096},
                       Dims{1, 8192, 8192}, Dims{4, 8192, 8192}, Dims{8192, 8192, 8192}}) {
    const std::string shape =
        std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    const double ops_count = 2.0 * s.m * s.n * s.k;
    const std::int64_t blocks = s.k / 32;
    std::uniform_int_distribution<int> d8(-127, 127), any_byte(0, 255);
    std::uniform_real_distribution<float> us(0.001f, 0.01f);
    std::vector<std::int8_t> a(static_cast<std::size_t>(s.m * s.k)),
        b8(static_cast<std::size_t>(s.n * s.k));
    for (auto& v : a) v = static_cast<std::int8_t>(d8(rng));
    for (auto& v : b8) v = static_cast<std::int8_t>(d8(rng));
    std::vector<std::uint8_t> b4(static_cast<std::size_t>(s.n * s.k / 2));
    for (auto& v : b4) v = static_cast<std::uint8_t>(any_byte(rng));
    std::vector<float> sb_col(static_cast<std::size_t>(s.n)),
        sb_blk(static_cast<std::size_t>(s.n * blocks)), bias(static_cast<std::size_t>(s.n));
    for (auto& v : sb_col) v = us(rng);
    for (auto& v : sb_blk) v = us(rng);
    for (auto& v : bias) v = us(rng) - 0.005f;
    const float sa = 0.02f;

    auto da = ops.allocate(a.size()), db8 = ops.allocate(b8.size()), db4 = ops.allocate(b4.size());
    auto dbias = ops.allocate(bias.size() * 4),
         dy = ops.allocate(static_cast<std::size_t>(s.m * s.n) * 4);
    ops.copy_to_device(*da, 0, a.data(), a.size());
    ops.copy_to_device(*db8, 0, b8.data(), b8.size());
    ops.copy_to_device(*db4, 0, b4.data(), b4.size());
    ops.copy_to_device(*dbias, 0, bias.data(), bias.size() * 4);
    const auto* bias_p = static_cast<const float*>(dbias->data());

    // int8 per channel: the reference point of the same shape.
    const MatmulDesc d8desc =
        desc_of(s.m, s.n, s.k, sa,
                QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sb_col));
    auto run8 = [&] { ops.matmul_dequant(d8desc, da->data(), db8->data(), bias_p, dy->data()); };
    run8();
    const std::string k8 = ops.plan({OpKind::matmul_dequant, d8desc}, PlanRequest{})->kernel();
    const float ms8 = time_ms(run8, 2, reps);
    const double b8_bytes = static_cast<double>(s.n * s.k + s.n * 4);
    add("int8 per-channel " + short_name(k8), shape, ms8, ops_count / (ms8 * 1e-3) / 1e9, "GOPS",
        "", 0, "reference", true);
    add("  its B stream (codes + scales)", shape, ms8, b8_bytes / (ms8 * 1e-3) / 1e9, "GB/s",
        "x d2d copy", copy_gbps, "report", true);

    const MatmulDesc d4 =
        desc_of(s.m, s.n, s.k, sa,
                QuantizationParams::blockwise(DType::int4, Mapping::symmetric, 32, sb_blk));
    const double b4_bytes = static_cast<double>(s.n * s.k / 2 + s.n * blocks * 4);
    auto run_direct = [&] { ops.matmul_dequant(d4, da->data(), db4->data(), bias_p, dy->data()); };
    run_direct();
    const std::string k4 = ops.plan({OpKind::matmul_dequant, d4}, PlanRequest{})->kernel();
    bool ok = spot_check(dy->data(), a, b4, sb_blk, sa, bias, s.m, s.n, s.k, rng);
    float ms = time_ms(run_direct, 2, reps);
    add("int4 blk32 op host params " + short_name(k4), shape, ms, ops_count / (ms * 1e-3) / 1e9,
        "GOPS", "x int8 per-channel", ops_count / (ms8 * 1e-3) / 1e9, "report", ok);
    {
      // Ten calls between one pair of events, and the host time per call (enqueueing only).
      const float ten = time_ms(
                            [&] {
                              for (int i = 0; i < 10; ++i) run_direct();
                            },
                            1, 5) /
                        10;
      const double host_us = host_us_per_call(run_direct, 50);
      std::printf(
          "    int4 blk32 %s %s: per call %.4f ms, 10 back-to-back %.4f ms each, host %.1f us per "
          "call\n",
          k4.c_str(), shape.c_str(), ms, ten, host_us);
    }

    const auto packed = ops.pack_weights(d4, db4->data());
    auto run_packed = [&] {
      ops.matmul_dequant_packed(d4, da->data(), *packed, bias_p, dy->data());
    };
    run_packed();
    ok = spot_check(dy->data(), a, b4, sb_blk, sa, bias, s.m, s.n, s.k, rng);
    ms = time_ms(run_packed, 2, reps);
    add("int4 blk32 op packed " + short_name(k4), shape, ms, ops_count / (ms * 1e-3) / 1e9, "GOPS",
        "x int8 per-channel", ops_count / (ms8 * 1e-3) / 1e9, "report", ok);

    // The kernel alone, launched directly on the same data (B in place: K is a multiple of 32).
    std::vector<cuda::GemmKernel> kernels = {cuda::GemmKernel::qbw_128x128};
    if (s.m <= 128) kernels.insert(kernels.begin(), cuda::GemmKernel::qbw_16x128);  // for skinny M
    if (s.m <= cuda::kBlockwiseGemvMaxM)
      kernels.insert(kernels.begin(), cuda::GemmKernel::qbw_gemv);
    for (const cuda::GemmKernel kernel : kernels) {
      DevMem scales(sb_blk.size() * 4);
      upload(scales, sb_blk.data(), sb_blk.size() * 4);
      cuda::BlockwiseGemm p;
      p.a = static_cast<const std::int8_t*>(da->data());
      p.lda = s.k;
      p.b.codes = static_cast<const std::uint8_t*>(db4->data());
      p.b.ld = s.k / 2;
      p.b.bits = 4;
      p.b.is_signed = true;
      p.b.block = 32;
      p.b.blocks = blocks;
      p.b.scales = static_cast<const float*>(scales.p);
      p.m = s.m;
      p.n = s.n;
      p.k = s.k;
      p.groups = s.k / 32;
      p.sa = {nullptr, sa, 1};
      p.out = dy->data();
      p.ldc = s.n;
      p.bias = bias_p;
      p.paired = true;
      p.groups_per_split = cuda::blockwise_groups_per_split(kernel, s.m, s.n, p.groups, 32, sms);
      const std::int64_t splits = (p.groups + p.groups_per_split - 1) / p.groups_per_split;
      const std::int64_t tiles =
          ((s.m + cuda::blockwise_tile_m(kernel) - 1) / cuda::blockwise_tile_m(kernel)) *
          ((s.n + cuda::blockwise_tile_n(kernel) - 1) / cuda::blockwise_tile_n(kernel));
      DevMem partials(static_cast<std::size_t>(splits > 1 ? splits * s.m * s.n * 4 : 4));
      DevMem counters(static_cast<std::size_t>(tiles * 4));
      check_cuda(cudaMemset(counters.p, 0, static_cast<std::size_t>(tiles * 4)), "cudaMemset");
      p.partials = static_cast<float*>(partials.p);
      p.counters = static_cast<int*>(counters.p);
      auto run_kernel = [&] {
        if (kernel == cuda::GemmKernel::qbw_gemv) cuda::launch_blockwise_gemv(p, nullptr);
        else cuda::launch_blockwise_gemm(kernel, p, nullptr, 0, nullptr);
      };
      run_kernel();
      ok = spot_check(dy->data(), a, b4, sb_blk, sa, bias, s.m, s.n, s.k, rng);
      ms = time_ms(run_kernel, 2, reps);
      const std::string name = kernel == cuda::GemmKernel::qbw_gemv     ? "gemv"
                               : kernel == cuda::GemmKernel::qbw_16x128 ? "16x128"
                                                                        : "128x128";
      add("int4 blk32 kernel only " + name + " split " + std::to_string(splits), shape, ms,
          ops_count / (ms * 1e-3) / 1e9, "GOPS", "x int8 per-channel",
          ops_count / (ms8 * 1e-3) / 1e9, "report", ok);
      add("  its B stream (codes + scales)", shape, ms, b4_bytes / (ms * 1e-3) / 1e9, "GB/s",
          "x d2d copy", copy_gbps, "report", ok);
    }
  }
}

}  // namespace qforge::bench
