// Objects lent to one run at a time, so that back-to-back runs reuse them instead of allocating
// them, and concurrent runs each get their own: GEMM scratch (the packed activations), and the
// descriptors that carry A's params given at run (copying a descriptor would copy B's params).
//
// The GEMM scratch pool belongs to the backend instance and is shared by every plan made from
// it: a model's plans run one after another, so one scratch (one packed A, grown to the largest
// shape it served) stays in cache across them instead of one buffer per plan cycling through
// it. Concurrent runs still each hold a scratch of their own for the whole GEMM.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace qforge::cpu_x86 {

template <class T>
class LendingPool {
 public:
  explicit LendingPool(std::function<std::unique_ptr<T>()> make) : make_(std::move(make)) {}

  class Lease {
   public:
    explicit Lease(LendingPool& pool) : pool_(pool), s_(pool.acquire()) {}
    ~Lease() { pool_.give_back(std::move(s_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    T& get() { return *s_; }

   private:
    LendingPool& pool_;
    std::unique_ptr<T> s_;
  };

  Lease take() { return Lease(*this); }

 private:
  // Last returned, first lent: a run that follows another on one thread gets the scratch that
  // is still in cache.
  std::unique_ptr<T> acquire() {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        std::unique_ptr<T> s = std::move(free_.back());
        free_.pop_back();
        return s;
      }
    }
    return make_();
  }
  void give_back(std::unique_ptr<T> s) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(s));
  }
  const std::function<std::unique_ptr<T>()> make_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<T>> free_;  // as many as runs were ever at once
};

}  // namespace qforge::cpu_x86
