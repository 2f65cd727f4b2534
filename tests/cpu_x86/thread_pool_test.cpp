// The cpu_x86 thread pool on its own (its source compiled into this test): every task index runs
// exactly once per call, for many calls in a row, with workers polling and with workers asleep;
// a task's exception reaches the caller and the pool keeps working; several threads calling at
// once, and a task calling the pool, each get all their tasks run once (plans do both). The same
// for the affine hand-out (parallel_for_affine), whose tasks have owners but may be taken by
// any thread, and which above ThreadPool::kMaxAffineTasks falls back to the counter.
#include "thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace qforge::cpu_x86 {
namespace {

void expect_each_index_once(ThreadPool& pool, std::int64_t tasks, bool affine = false) {
  std::vector<std::atomic<int>> hits(static_cast<std::size_t>(tasks));
  const auto hit = [&](std::int64_t i) { hits[static_cast<std::size_t>(i)].fetch_add(1); };
  if (affine) pool.parallel_for_affine(tasks, hit);
  else pool.parallel_for(tasks, hit);
  for (std::int64_t i = 0; i < tasks; ++i)
    ASSERT_EQ(hits[static_cast<std::size_t>(i)].load(), 1) << "task " << i << " of " << tasks;
}

TEST(CpuX86ThreadPool, EveryTaskOnceInBackToBackCalls) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int call = 0; call < 2000; ++call) expect_each_index_once(pool, 1 + call % 97);
  }
}

TEST(CpuX86ThreadPool, EveryTaskOnceAfterTheWorkersSlept) {
  ThreadPool pool(4);
  for (int call = 0; call < 20; ++call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // longer than the workers poll
    expect_each_index_once(pool, 64);
  }
}

TEST(CpuX86ThreadPool, SlowTasksMakeTheCallerWait) {
  ThreadPool pool(3);
  std::atomic<int> done{0};
  pool.parallel_for(6, [&](std::int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // longer than the caller polls
    done.fetch_add(1);
  });
  EXPECT_EQ(done.load(), 6);
}

TEST(CpuX86ThreadPool, AnExceptionReachesTheCallerAndThePoolGoesOn) {
  ThreadPool pool(4);
  for (int round = 0; round < 50; ++round) {
    EXPECT_THROW(pool.parallel_for(100,
                                   [&](std::int64_t i) {
                                     if (i == round) throw std::runtime_error("task failed");
                                   }),
                 std::runtime_error);
    expect_each_index_once(pool, 33);
  }
}

TEST(CpuX86ThreadPool, EveryTaskOnceWithSeveralCallersAtOnce) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int call = 0; call < 500; ++call) {
        const std::int64_t tasks = 1 + (call * 7 + t) % 61;
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(tasks));
        pool.parallel_for(tasks,
                          [&](std::int64_t i) { hits[static_cast<std::size_t>(i)].fetch_add(1); });
        for (auto& h : hits)
          if (h.load() != 1) failures.fetch_add(1);
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
  expect_each_index_once(pool, 50);  // and the pool still serves a single caller
}

TEST(CpuX86ThreadPool, AffineEveryTaskOnceInBackToBackCallsMixedWithCounted) {
  for (int threads : {1, 2, 3, 8, 16}) {
    ThreadPool pool(threads);
    for (int call = 0; call < 2000; ++call) {
      const std::int64_t tasks = 1 + call % (ThreadPool::kMaxAffineTasks + 9);  // past the limit
      expect_each_index_once(pool, tasks, /*affine=*/call % 3 != 0);
    }
  }
}

TEST(CpuX86ThreadPool, AffineEveryTaskOnceAfterTheWorkersSlept) {
  ThreadPool pool(4);
  for (int call = 0; call < 20; ++call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // longer than the workers poll
    expect_each_index_once(pool, call % 2 ? 4 : 64, /*affine=*/true);
  }
}

TEST(CpuX86ThreadPool, AffineExceptionReachesTheCallerAndThePoolGoesOn) {
  ThreadPool pool(4);
  for (int round = 0; round < 50; ++round) {
    EXPECT_THROW(pool.parallel_for_affine(40,
                                          [&](std::int64_t i) {
                                            if (i == round % 40)
                                              throw std::runtime_error("task failed");
                                          }),
                 std::runtime_error);
    expect_each_index_once(pool, 33, /*affine=*/true);
  }
}

TEST(CpuX86ThreadPool, AffineEveryTaskOnceWithSeveralCallersAndNestedCalls) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int call = 0; call < 500; ++call) {
        const std::int64_t tasks = 1 + (call * 7 + t) % 64;
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(tasks));
        pool.parallel_for_affine(
            tasks, [&](std::int64_t i) { hits[static_cast<std::size_t>(i)].fetch_add(1); });
        for (auto& h : hits)
          if (h.load() != 1) failures.fetch_add(1);
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(failures.load(), 0);
  std::vector<std::atomic<int>> hits(8 * 16);
  pool.parallel_for_affine(8, [&](std::int64_t outer) {
    pool.parallel_for_affine(
        16, [&](std::int64_t i) { hits[static_cast<std::size_t>(outer * 16 + i)].fetch_add(1); });
  });
  for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i;
}

TEST(CpuX86ThreadPool, ATaskMayCallThePool) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> hits(8 * 16);
  pool.parallel_for(8, [&](std::int64_t outer) {
    pool.parallel_for(
        16, [&](std::int64_t i) { hits[static_cast<std::size_t>(outer * 16 + i)].fetch_add(1); });
  });
  for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i;
}

}  // namespace
}  // namespace qforge::cpu_x86
