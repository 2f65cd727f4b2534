// Accelerators built from one registry, used from several threads at once: each thread tunes
// and calls the per-call ops of its own accelerator on one shared cpu_x86 instance (whose plans
// run concurrently), with params that repeat (plans kept per descriptor) and params that change
// on every call (a plan made per call), and every result must equal the reference.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "qforge/reference.h"
#include "qforge/registry.h"
#include "support.h"

namespace {

using namespace qforge;

constexpr int kThreads = 4;
constexpr int kRounds = 12;

std::vector<std::uint8_t> u8(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (auto& x : v) x = static_cast<std::uint8_t>(rng());
  return v;
}

std::vector<std::int8_t> s8(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::int8_t> v(n);
  for (auto& x : v) x = static_cast<std::int8_t>(static_cast<int>(rng() % 255) - 127);
  return v;
}

// One thread's work; returns what differed from the reference (empty when nothing).
std::string work(Accelerator& acc, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string failures;
  for (int round = 0; round < kRounds; ++round) {
    // Shapes of two buckets, params fixed (kept plans) or drawn per call (a new plan).
    const std::int64_t m = round % 2 ? 7 : 33;
    const bool fresh = round % 3 == 0;
    MatmulDesc d = std::get<MatmulDesc>(acc_test::small_matmul(m).op.desc);
    if (fresh)
      d.a = QuantizationParams::per_tensor_affine(DType::uint8,
                                                  0.01f + 0.001f * static_cast<float>(rng() % 50),
                                                  static_cast<std::int32_t>(rng() % 256));
    const auto a = u8(rng, static_cast<std::size_t>(d.m * d.k));
    const auto b = s8(rng, static_cast<std::size_t>(d.k * d.n));
    std::vector<std::int32_t> got(static_cast<std::size_t>(d.m * d.n)), want(got.size());
    acc.matmul_integer(d, a.data(), b.data(), got.data());
    reference::matmul_integer(d, a.data(), b.data(), want.data());
    if (got != want) failures += " matmul_integer m=" + std::to_string(m);

    MatmulDesc q = d;
    q.y = QuantizationParams::per_tensor_affine(DType::uint8, 2.0f + static_cast<float>(round),
                                                static_cast<std::int32_t>(rng() % 256));
    std::vector<std::uint8_t> qgot(got.size()), qwant(got.size());
    acc.qlinear_matmul(q, a.data(), b.data(), qgot.data());
    reference::qlinear_matmul(q, a.data(), b.data(), qwant.data());
    if (qgot != qwant) failures += " qlinear_matmul m=" + std::to_string(m);

    const QuantizeDesc qd{{16, 40}, QuantizationParams::per_tensor_affine(DType::int8, 0.1f, 3)};
    std::vector<float> x(16 * 40);
    for (auto& v : x) v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 64.0f;
    std::vector<std::int8_t> xgot(x.size()), xwant(x.size());
    acc.quantize(qd, x.data(), xgot.data());
    reference::quantize(qd, x.data(), xwant.data());
    if (xgot != xwant) failures += " quantize";
  }
  return failures;
}

TEST(Threads, AcceleratorsOfOneRegistryRunAtOnce) {
  const auto plugin = std::filesystem::path(QFORGE_PLUGIN_DIR) / "libqforge_plugin_cpu_x86.so";
  if (!std::filesystem::exists(plugin)) GTEST_SKIP() << "cpu_x86 is not built here";
  PluginRegistry registry;
  ASSERT_TRUE(registry.load_file(plugin));
  if (!registry.plugins().at(0).ops->availability().usable)
    GTEST_SKIP() << "cpu_x86 cannot run here: " << registry.plugins()[0].ops->availability().reason;
  const auto seed = acc_test::test_seed();
  SCOPED_TRACE("QFORGE_TEST_SEED=" + std::to_string(seed));
  const auto dir = acc_test::scratch_dir("t");

  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::string f;
      try {
        auto o = acc_test::options(dir / ("t" + std::to_string(t) + ".json"));
        o.budget.per_workload_s = 0.2;
        Accelerator acc(registry, o);
        f = work(acc, seed + static_cast<std::uint64_t>(t));
      } catch (const std::exception& e) {
        f = std::string(" threw: ") + e.what();
      }
      if (!f.empty()) {
        std::lock_guard lock(mutex);
        failures.push_back("thread " + std::to_string(t) + ":" + f);
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace
