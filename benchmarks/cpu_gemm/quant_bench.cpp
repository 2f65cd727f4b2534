// quantize / dequantize of 64 MiB of float32 (16 Mi elements) against memcpy of the same bytes.
// Bandwidth counts bytes read plus bytes written: quantize reads 64 MiB and writes 16 MiB,
// dequantize the reverse, memcpy reads and writes 64 MiB. memcpy runs on as many threads as the
// plugin, on disjoint slices, so the ratio compares like with like. Two ratios: "of memcpy"
// compares bytes moved per second; "x memcpy time" is the time memcpy takes to copy the
// 64 MiB float tensor over the time the op takes for that tensor (the same bytes, once).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "bench.h"
#include "qforge/reference.h"
#include "timing.h"

namespace qforge::bench {
namespace {

constexpr std::size_t kElements = std::size_t{16} << 20;  // 64 MiB of float32

// memcpy of one 64 MiB buffer on `threads` threads (disjoint slices). The threads are started
// once and meet through spinning atomics, like the plugin's pool: creating threads per copy,
// or sleeping on a futex, would add its own cost to the anchor (tens of microseconds per
// thread under the GPU host's gVisor kernel) and flatter the ratio.
double parallel_memcpy_gbs(const Options& opt, int threads) {
  const std::size_t bytes = kElements * sizeof(float);
  const int copies = static_cast<int>(std::clamp<std::size_t>(opt.rotate_bytes / bytes + 1, 1, 4));
  std::vector<std::vector<char>> src(static_cast<std::size_t>(copies), std::vector<char>(bytes, 1));
  std::vector<char> dst(bytes, 0);
  const std::size_t slice =
      (bytes + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads);
  std::atomic<const char*> from{nullptr};
  std::atomic<int> round{0}, finished{0};
  std::atomic<bool> stop{false};
  auto copy_slice = [&](int th, const char* s) {
    const std::size_t o = static_cast<std::size_t>(th) * slice;
    if (o < bytes) std::memcpy(dst.data() + o, s + o, std::min(slice, bytes - o));
  };
  std::vector<std::thread> helpers;
  for (int th = 1; th < threads; ++th)
    helpers.emplace_back([&, th] {
      for (int seen = 0;;) {
        while (round.load() == seen && !stop.load()) __builtin_ia32_pause();
        if (stop.load()) return;
        seen = round.load();
        copy_slice(th, from.load());
        finished.fetch_add(1);
      }
    });
  const Timing t = measure(
      [&](int i) {
        from.store(src[static_cast<std::size_t>(i) % src.size()].data());
        finished.store(0);
        round.fetch_add(1);
        copy_slice(0, from.load());
        while (finished.load() != threads - 1) __builtin_ia32_pause();
      },
      opt.min_time_s, opt.min_runs);
  stop.store(true);
  for (auto& h : helpers) h.join();
  return 2.0 * static_cast<double>(bytes) / t.median_s * 1e-9;
}

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

}  // namespace

std::vector<std::string> run_quant_benchmarks(QuantizationOps& x86, QuantizationOps* onednn,
                                              const Options& opt) {
  const int threads = std::stoi(x86.devices()[0].properties.at("threads_used"));
  const std::size_t fbytes = kElements * sizeof(float);
  const int copies = static_cast<int>(std::clamp<std::size_t>(opt.rotate_bytes / fbytes + 1, 1, 4));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<std::vector<float>> x(static_cast<std::size_t>(copies),
                                    std::vector<float>(kElements));
  for (auto& v : x) std::generate(v.begin(), v.end(), [&] { return u(rng); });
  std::vector<std::vector<std::uint8_t>> q(static_cast<std::size_t>(copies),
                                           std::vector<std::uint8_t>(kElements));
  std::vector<float> back(kElements);
  const double memcpy_gbs = parallel_memcpy_gbs(opt, threads);

  struct Case {
    std::string name;
    QuantizationParams params;
  };
  const std::int64_t n = static_cast<std::int64_t>(kElements);
  std::vector<Case> cases = {
      {"uint8 per_tensor", QuantizationParams::per_tensor_affine(DType::uint8, 8.0f / 255.0f, 128)},
      {"int8 block(32)", QuantizationParams(DType::int8, Scheme::block_symmetric(32),
                                            std::vector<float>(kElements / 32, 4.0f / 127.0f))},
  };
  std::vector<std::string> table;
  table.push_back(pad("op (64 MiB f32)", 30) + pad("cpu_x86 GB/s", 14) + pad("of memcpy", 11) +
                  pad("x memcpy time", 15) + pad("onednn GB/s", 13) + "memcpy GB/s (" +
                  std::to_string(threads) + " threads)");
  const double memcpy_s =
      2.0 * static_cast<double>(fbytes) / (memcpy_gbs * 1e9);   // one 64 MiB copy
  const double traffic = static_cast<double>(kElements) * 5.0;  // 4 bytes + 1 byte per element
  for (const Case& c : cases) {
    const QuantizeDesc d{{n}, c.params, FloatType::f32};
    for (bool quant : {true, false}) {
      auto run = [&](QuantizationOps& ops) {
        return measure(
            [&](int i) {
              const auto slot = static_cast<std::size_t>(i) % x.size();
              if (quant) ops.quantize(d, x[slot].data(), q[slot].data());
              else ops.dequantize(d, q[slot].data(), back.data());
            },
            opt.min_time_s, opt.min_runs);
      };
      if (!quant)  // dequantize the codes quantize made
        for (std::size_t s = 0; s < x.size(); ++s) x86.quantize(d, x[s].data(), q[s].data());
      const Timing tx = run(x86);
      const double gx = traffic / tx.median_s * 1e-9;
      std::string ox = "n/a";
      if (onednn && onednn->supports({quant ? OpKind::quantize : OpKind::dequantize, d}).supported)
        ox = fixed(traffic / run(*onednn).median_s * 1e-9, 1);
      const std::string name = std::string(quant ? "quantize " : "dequantize ") + c.name;
      std::printf("%-30s cpu_x86 %6.1f GB/s (%s)  %.2f of memcpy %.1f GB/s\n", name.c_str(), gx,
                  x86.plan({quant ? OpKind::quantize : OpKind::dequantize, d}, PlanRequest{})
                      ->kernel()
                      .c_str(),
                  gx / memcpy_gbs, memcpy_gbs);
      std::fflush(stdout);
      table.push_back(pad(name, 30) + pad(fixed(gx, 1), 14) + pad(fixed(gx / memcpy_gbs, 2), 11) +
                      pad(fixed(memcpy_s / tx.median_s, 2), 15) + pad(ox, 13) +
                      fixed(memcpy_gbs, 1));
    }
  }
  return table;
}

}  // namespace qforge::bench
