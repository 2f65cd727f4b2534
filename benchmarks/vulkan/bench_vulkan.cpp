// qforge_bench_vulkan: figures of the vulkan plugin for docs/PERFORMANCE.md.
//
//   quantize / dequantize (f32 <-> int8, per tensor, per channel, block 32): GB/s counting bytes
//     read plus bytes written, against vkCmdCopyBuffer moving as many bytes, same device and run
//   s8 cooperative-matrix multiply-adds (coopmat_peak.comp), where the device has them: the rate
//     a Vulkan shader gets with the fragments in registers and fed from shared memory
//   int8 GEMM M = N = K (uint8 per-tensor A, int8 per-channel symmetric B [N, K] prepacked,
//     fused dequantization to float32 with bias): GOPS = 2 M N K / time, for every kernel the
//     device offers; against the cuda plugin's matmul_dequant when it is loaded in the same run
//
// Times are medians after a warm-up: GPU time from the plugin's timestamps (last_op_gpu_ns),
// and wall time of the synchronous call. The cuda anchor also runs back to back (one
// synchronize after 20-50 calls): its per-call time is then the device time, which the vulkan
// GPU time is compared with. QFORGE_VULKAN_PIPELINE_STATS=1 adds the driver compiler's
// statistics of each GEMM kernel (registers, where the driver reports them). Usage:
//   qforge_bench_vulkan [--quick] [--reps N] [--elements N] [--gemm 4096,8192] [--conv]
// --quick: lavapipe-sized work (4 Mi elements, GEMM 256 and 512).
// --conv: only the convolution layers (conv_bench.cpp), against cpu_scalar when it loads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "conv_bench.h"
#include "coopmat_peak.h"
#include "copy_anchor.h"
#include "qforge/error.h"
#include "qforge/registry.h"

namespace {

using namespace qforge;
using Clock = std::chrono::steady_clock;

struct Row {
  std::string what, kernel;
  double gpu_s = 0, wall_s = 0, rate = 0;  // rate: GB/s or GOPS (from GPU time)
  std::string unit, anchor;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string device_property(QuantizationOps& ops, const std::string& key) {
  const auto devs = ops.devices();
  const auto& p = devs[static_cast<std::size_t>(ops.default_device())].properties;
  const auto it = p.find(key);
  return it == p.end() ? std::string() : it->second;
}

// The kernel the per-call op runs for `op` (the backend's own choice), as a plan names it.
std::string kernel_of(QuantizationOps& ops, const OpDesc& op) {
  return ops.plan(op, PlanRequest{ops.default_device(), "", {}})->kernel();
}

double gpu_seconds(QuantizationOps& ops) {
  const std::string ns = device_property(ops, "last_op_gpu_ns");
  return ns.empty() ? 0.0 : std::stod(ns) * 1e-9;
}

// Seconds per call of `calls` back-to-back calls and one synchronize at the end: the device
// time of a plugin whose ops only enqueue (the cuda plugin's), its wall time otherwise.
double back_to_back(QuantizationOps& ops, int calls, const std::function<void()>& f) {
  f();
  ops.synchronize();
  std::vector<double> v;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    ops.synchronize();
    v.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / calls);
  }
  return median(v);
}

// Runs f for at least 0.3 s to warm up (after a host-bound phase the H200 ran the next GEMMs up
// to 5x slower for about half a second), then reps times; medians of GPU (when `gpu`) and wall
// time.
std::pair<double, double> time_op(QuantizationOps& ops, int reps, bool gpu,
                                  const std::function<void()>& f) {
  const auto warm_start = Clock::now();
  do {
    f();
    ops.synchronize();
  } while (Clock::now() - warm_start < std::chrono::milliseconds(300));
  std::vector<double> g, w;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    ops.synchronize();
    w.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    if (gpu) g.push_back(gpu_seconds(ops));
  }
  return {median(g), median(w)};
}

// Device memory with random bytes (a cheap generator: 1 GiB fills in well under a second).
std::shared_ptr<Buffer> random_buffer(QuantizationOps& ops, std::size_t bytes, std::uint64_t seed,
                                      bool floats) {
  std::vector<std::uint32_t> host((bytes + 3) / 4);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : host) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const auto r = static_cast<std::uint32_t>(s >> 32);
    if (floats) {
      const float f = (static_cast<float>(r) / 4294967296.0f - 0.5f) * 8.0f;
      std::memcpy(&v, &f, 4);
    } else {
      v = r;
    }
  }
  auto buf = ops.allocate(bytes);
  ops.copy_to_device(*buf, 0, host.data(), bytes);
  return buf;
}

std::vector<std::int64_t> parse_list(const char* text) {
  std::vector<std::int64_t> v;
  for (const char* p = text; *p;) {
    v.push_back(std::strtoll(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int reps = 10;
  std::int64_t elements = 256ll << 20;
  std::vector<std::int64_t> gemm_sizes = {4096, 8192};
  bool elements_set = false, gemm_set = false, conv = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--conv") conv = true;
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--elements" && i + 1 < argc)
      elements = std::atoll(argv[++i]), elements_set = true;
    else if (a == "--gemm" && i + 1 < argc) gemm_sizes = parse_list(argv[++i]), gemm_set = true;
    else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--reps N] [--elements N] [--gemm 4096,8192] [--conv]\n",
                   argv[0]);
      return 2;
    }
  }
  if (quick) {
    if (!elements_set) elements = 4ll << 20;
    if (!gemm_set) gemm_sizes = {256, 512};
    reps = std::min(reps, 5);
  }

  PluginRegistry registry;
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("QFORGE_PLUGIN_PATH"); env && *env) {
    std::string all(env);
    for (std::size_t s = 0; s <= all.size();) {
      const std::size_t e = std::min(all.find(':', s), all.size());
      if (e > s && std::filesystem::exists(all.substr(s, e - s)))
        dirs.emplace_back(all.substr(s, e - s));
      s = e + 1;
    }
  }
  if (std::filesystem::exists(QFORGE_PLUGIN_DIR)) dirs.emplace_back(QFORGE_PLUGIN_DIR);
  registry.load_from(dirs);
  QuantizationOps* vk = registry.find("vulkan");
  if (!vk) {
    std::fprintf(stderr, "the vulkan plugin did not load\n");
    for (const auto& f : registry.failures())
      std::fprintf(stderr, "  %s: %s\n", f.path.c_str(), f.message.c_str());
    return 1;
  }
  const Availability av = vk->availability();
  if (!av.usable) {
    std::fprintf(stderr, "vulkan plugin unavailable: %s\n", av.reason.c_str());
    return 1;
  }
  const auto devs = vk->devices();
  const auto& dev = devs[static_cast<std::size_t>(vk->default_device())];
  std::printf("device %d: %s (%s)\n", vk->default_device(), dev.name.c_str(),
              dev.properties.at("driver").c_str());
  for (const char* key :
       {"vulkan_api", "integer_dot_product_4x8_packed_accelerated", "cooperative_matrix_s8_shapes",
        "subgroup_size", "max_shared_memory_bytes", "max_storage_buffer_range_bytes",
        "gemm_kernels"})
    std::printf("  %s: %s\n", key, dev.properties.at(key).c_str());

  if (conv) {
    try {
      return vkbench::run_conv_bench(*vk, registry.find("cpu_scalar"), reps) ? 0 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "benchmark failed: %s\n", e.what());
      return 1;
    }
  }

  std::vector<Row> rows;
  std::map<std::string, std::string> stats;  // kernel -> compiler statistics
  try {
    // ---- quantize / dequantize against a copy of as many bytes ----
    const auto n = static_cast<std::size_t>(elements);
    const std::size_t moved = 5 * n;  // 4n read + n written, or n read + 4n written
    const vkbench::CopyResult copy = vkbench::measure_copy(vk->default_device(), moved / 2, reps);
    rows.push_back({"vkCmdCopyBuffer " + std::to_string(moved / 2 >> 20) + " MiB", "-",
                    copy.seconds, 0, copy.gbps, "GB/s", "anchor"});
    auto x = random_buffer(*vk, n * 4, 1, true);
    auto q = random_buffer(*vk, n, 2, false);
    auto y = vk->allocate(n * 4);
    const std::int64_t cols = 4096;
    const Shape shape{elements / cols, cols};
    struct Scheme3 {
      const char* name;
      QuantizationParams params;
    };
    std::vector<float> ch_scales(static_cast<std::size_t>(cols), 0.03f);
    std::vector<std::int32_t> ch_zps(static_cast<std::size_t>(cols), 5);
    const std::size_t blocks = n / 32;
    std::vector<float> b_scales(blocks, 0.02f);
    const Scheme3 schemes[] = {
        {"per_tensor", QuantizationParams::per_tensor_affine(DType::int8, 0.03f, 5)},
        {"per_channel",
         QuantizationParams::per_channel(DType::int8, Mapping::affine, 1, ch_scales, ch_zps)},
        {"block32", QuantizationParams::blockwise(DType::int8, Mapping::symmetric, 32, b_scales)},
    };
    for (const auto& s : schemes) {
      const QuantizeDesc desc{shape, s.params};
      auto [g, w] = time_op(*vk, reps, true, [&] { vk->quantize(desc, x->data(), q->data()); });
      rows.push_back({std::string("quantize f32->int8 ") + s.name,
                      kernel_of(*vk, {OpKind::quantize, desc}), g, w,
                      static_cast<double>(moved) / g / 1e9, "GB/s", ""});
      rows.back().anchor =
          std::to_string(rows.back().rate / copy.gbps * 100.0).substr(0, 5) + "% of copy";
      std::tie(g, w) = time_op(*vk, reps, true, [&] {
        vk->dequantize(desc, q->data(), static_cast<float*>(y->data()));
      });
      rows.push_back({std::string("dequantize int8->f32 ") + s.name,
                      kernel_of(*vk, {OpKind::dequantize, desc}), g, w,
                      static_cast<double>(moved) / g / 1e9, "GB/s", ""});
      rows.back().anchor =
          std::to_string(rows.back().rate / copy.gbps * 100.0).substr(0, 5) + "% of copy";
    }
    x.reset();
    q.reset();
    y.reset();

    // ---- the cooperative-matrix multiply-add rate: the GEMMs' ceiling on this device ----
    double coop_peak = 0;  // GOPS, 16x16x32 with the fragments in registers
    for (const auto& p : vkbench::measure_coopmat_peak(vk->default_device(), reps)) {
      rows.push_back({"coopmat peak: " + p.what, "coopmat_peak.comp", p.seconds, 0, p.tops * 1e3,
                      "GOPS", "anchor"});
      if (coop_peak == 0) coop_peak = p.tops * 1e3;
    }

    // ---- int8 GEMM with the fused dequantizing epilogue ----
    QuantizationOps* cuda = registry.find("cuda");
    if (cuda && !cuda->availability().usable) cuda = nullptr;
    for (const std::int64_t s : gemm_sizes) {
      const auto M = s, N = s, K = s;
      std::vector<float> sb(static_cast<std::size_t>(N), 0.01f);
      MatmulDesc d{.m = M,
                   .n = N,
                   .k = K,
                   .a = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 128),
                   .b = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sb),
                   .b_layout = MatrixLayout::nk,
                   .has_bias = true,
                   .out_type = FloatType::f32,
                   .y = std::nullopt,
                   .requant_mode = RequantMode::float_multiplier};
      const double ops_count =
          2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
      double cuda_s = 0, cuda_b2b = 0;
      if (cuda) {
        auto ca = random_buffer(*cuda, static_cast<std::size_t>(M * K), 3, false);
        auto cb = random_buffer(*cuda, static_cast<std::size_t>(N * K), 4, false);
        auto cbias = random_buffer(*cuda, static_cast<std::size_t>(N) * 4, 5, true);
        auto cy = cuda->allocate(static_cast<std::size_t>(M * N) * 4);
        auto w = cuda->pack_weights(d, cb->data());
        auto [g, wall] = time_op(*cuda, reps, false, [&] {
          cuda->matmul_dequant_packed(d, ca->data(), *w, static_cast<const float*>(cbias->data()),
                                      cy->data());
        });
        (void)g;
        cuda_s = wall;
        const std::string cuda_kernel = kernel_of(*cuda, {OpKind::matmul_dequant, d});
        rows.push_back({"cuda gemm " + std::to_string(s) + "^3 dequant", cuda_kernel, 0, wall,
                        ops_count / wall / 1e9, "GOPS", "anchor (wall)"});
        cuda_b2b = back_to_back(*cuda, s >= 8192 ? 20 : 50, [&] {
          cuda->matmul_dequant_packed(d, ca->data(), *w, static_cast<const float*>(cbias->data()),
                                      cy->data());
        });
        rows.push_back({"cuda gemm " + std::to_string(s) + "^3 dequant, back to back", cuda_kernel,
                        0, cuda_b2b, ops_count / cuda_b2b / 1e9, "GOPS", "anchor (device time)"});
      }
      auto a = random_buffer(*vk, static_cast<std::size_t>(M * K), 3, false);
      auto b = random_buffer(*vk, static_cast<std::size_t>(N * K), 4, false);
      auto bias = random_buffer(*vk, static_cast<std::size_t>(N) * 4, 5, true);
      auto out = vk->allocate(static_cast<std::size_t>(M * N) * 4);
      const Support sup = vk->supports({OpKind::matmul_dequant, d});
      if (!sup.supported) {
        std::printf("gemm %lld: %s\n", static_cast<long long>(s), sup.reason.c_str());
        continue;
      }
      std::string fastest;
      double fastest_s = 0;
      for (const auto& kernel : sup.kernels) {
        // The scalar kernels at 8192^3 would take minutes on a GPU without them accelerated.
        if (!quick && s > 4096 && kernel.find("coopmat") == std::string::npos) continue;
        // A plan of the kernel with B fixed (packed once); plans report no GPU time, so its rate
        // is by wall time, which includes the submission.
        std::vector<std::uint8_t> b_host(static_cast<std::size_t>(N * K));
        vk->copy_to_host(b_host.data(), *b, 0, b_host.size());
        const auto plan =
            vk->plan({OpKind::matmul_dequant, d},
                     PlanRequest{vk->default_device(), kernel, {nullptr, b_host.data(), nullptr}});
        const int r = s >= 8192 ? std::max(3, reps / 2) : reps;
        auto [g, wall] = time_op(*vk, r, false, [&] {
          plan->run({a->data(), nullptr, bias->data()}, {out->data()});
        });
        (void)g;
        Row row{"gemm " + std::to_string(s) + "^3 dequant, B fixed in a plan",
                kernel,
                0,
                wall,
                ops_count / wall / 1e9,
                "GOPS",
                ""};
        if (cuda_s > 0)
          row.anchor = std::to_string(cuda_s / wall * 100.0).substr(0, 5) + "% of cuda (wall)";
        if (coop_peak > 0)
          row.anchor += (row.anchor.empty() ? "" : ", ") +
                        std::to_string(row.rate / coop_peak * 100.0).substr(0, 5) +
                        "% of coopmat peak";
        rows.push_back(row);
        if (fastest.empty() || wall < fastest_s) fastest = kernel, fastest_s = wall;
      }
      {
        // The per-call ops (the backend's own kernel), timed on the GPU: prepacked, with an
        // int32 output (what the float epilogue costs), and packing B on each call.
        auto w = vk->pack_weights(d, b->data());
        auto [g, wall] = time_op(*vk, reps, true, [&] {
          vk->matmul_dequant_packed(d, a->data(), *w, static_cast<const float*>(bias->data()),
                                    out->data());
        });
        const std::string own = kernel_of(*vk, {OpKind::matmul_dequant, d});
        rows.push_back({"gemm " + std::to_string(s) + "^3 dequant prepacked", own, g, wall,
                        ops_count / g / 1e9, "GOPS", "fastest plan: " + fastest});
        if (const std::string st = device_property(*vk, "last_op_pipeline_stats"); !st.empty())
          stats[own] = st;
        std::tie(g, wall) = time_op(*vk, std::max(3, reps / 2), true, [&] {
          vk->matmul_integer_packed(d, a->data(), *w, static_cast<std::int32_t*>(out->data()));
        });
        rows.push_back({"gemm " + std::to_string(s) + "^3 int32 out prepacked",
                        kernel_of(*vk, {OpKind::matmul_integer, d}), g, wall, ops_count / g / 1e9,
                        "GOPS", ""});
      }
      {
        auto [g, wall] = time_op(*vk, std::max(3, reps / 2), true, [&] {
          vk->matmul_dequant(d, a->data(), b->data(), static_cast<const float*>(bias->data()),
                             out->data());
        });
        rows.push_back({"gemm " + std::to_string(s) + "^3 dequant direct (packs B each call)",
                        kernel_of(*vk, {OpKind::matmul_dequant, d}), g, wall, ops_count / g / 1e9,
                        "GOPS", ""});
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "benchmark failed: %s\n", e.what());
    return 1;
  }

  std::printf("\n%-48s %-46s %10s %10s %10s %s\n", "what", "kernel", "gpu ms", "wall ms", "rate",
              "vs anchor");
  for (const auto& r : rows)
    std::printf("%-48s %-46s %10.3f %10.3f %8.1f %s %s\n", r.what.c_str(), r.kernel.c_str(),
                r.gpu_s * 1e3, r.wall_s * 1e3, r.rate, r.unit.c_str(), r.anchor.c_str());
  // QFORGE_VULKAN_PIPELINE_STATS=1 on a driver with VK_KHR_pipeline_executable_properties.
  if (!stats.empty()) std::printf("\npipeline statistics (driver compiler)\n");
  for (const auto& [kernel, st] : stats) std::printf("%-58s %s\n", kernel.c_str(), st.c_str());
  return 0;
}
