// The dispatch hot path allocates nothing: a call through the accelerator for a decided bucket
// makes exactly the heap allocations the plugin's own call makes. Its own binary, because it
// replaces the global operator new to count.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "support.h"

namespace {
std::atomic<long> g_allocations{0};
}

// Every replaceable form without an alignment argument is replaced, so that each allocation is
// counted and every block is freed by the function that matches its allocation: the nothrow
// forms (std::stable_sort's temporary buffer uses them) would otherwise stay the runtime's, and
// under AddressSanitizer its nothrow new pairs with our delete (alloc-dealloc-mismatch). The
// over-aligned forms stay the runtime's, with their own matching deletes.
namespace {
void* counted_alloc(std::size_t n) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* counted_alloc_or_throw(std::size_t n) {
  if (void* p = counted_alloc(n)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc_or_throw(n); }
void* operator new[](std::size_t n) { return counted_alloc_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using namespace qforge;

TEST(HotPath, DispatchAddsNoAllocation) {
  auto o = acc_test::options(acc_test::scratch_dir("c") / "t.json");
  o.test_hooks = acc_test::injected({{"acc_good[0]/slow", 1e-6}});
  Accelerator acc(acc_test::plugins({"cpu_scalar", "acc_good"}), o);
  const Workload w = acc_test::small_matmul(4);
  const auto& d = std::get<MatmulDesc>(w.op.desc);
  std::vector<std::uint8_t> a(static_cast<std::size_t>(d.m * d.k), 130);
  std::vector<std::int8_t> b(static_cast<std::size_t>(d.k * d.n), 3);
  std::vector<std::int32_t> c(static_cast<std::size_t>(d.m * d.n));
  acc.matmul_integer(d, a.data(), b.data(), c.data());  // decides the bucket
  const Decision dec = acc.decide(w);
  ASSERT_EQ(dec.id.label(), "acc_good[0]/slow");

  constexpr int kCalls = 50;
  const auto plan = dec.ops->plan(w.op, PlanRequest{0, "slow", {}});
  long before = g_allocations.load();
  for (int i = 0; i < kCalls; ++i) plan->run({a.data(), b.data()}, {c.data()});
  const long direct = g_allocations.load() - before;
  before = g_allocations.load();
  for (int i = 0; i < kCalls; ++i) acc.matmul_integer(d, a.data(), b.data(), c.data());
  const long through = g_allocations.load() - before;
  // At most the plugin's own: the plan kept for this descriptor runs, the accelerator adds none.
  EXPECT_LE(through, direct) << "the accelerator allocated " << (through - direct) / kCalls
                             << " times per call";
}

}  // namespace
