#include "batch_prefetch.h"

#include <string>

#include "qforge/error.h"

namespace qforge::cli {

BatchPrefetcher::BatchPrefetcher(DataReader& reader, std::int64_t rows, std::int64_t batches,
                                 std::size_t ahead)
    : reader_(reader),
      rows_(rows),
      batches_(batches),
      ahead_(ahead < 1 ? 1 : ahead),
      thread_([this] { read_all(); }) {}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BatchPrefetcher::read_all() {
  try {
    for (std::int64_t i = 0; i < batches_; ++i) {
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || ready_.size() < ahead_; });
        if (stop_) return;
      }
      std::optional<model::Tensor> batch = reader_.next(rows_);
      if (!batch || batch->shape().empty() || batch->shape()[0] != rows_)
        throw Error(ErrorCode::internal, "batch prefetch: the data ended before batch " +
                                             std::to_string(i + 1) + " of " +
                                             std::to_string(batches_) + " (" +
                                             std::to_string(rows_) + " samples each)");
      {
        std::lock_guard lock(mutex_);
        ready_.push_back(std::move(*batch));
      }
      changed_.notify_all();
    }
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
    }
    changed_.notify_all();
  }
}

model::Tensor BatchPrefetcher::next() {
  if (taken_ == batches_)
    throw Error(ErrorCode::internal,
                "batch prefetch: all " + std::to_string(batches_) + " batches were taken");
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || error_; });
  if (ready_.empty()) std::rethrow_exception(error_);
  model::Tensor batch = std::move(ready_.front());
  ready_.pop_front();
  ++taken_;
  lock.unlock();
  changed_.notify_all();
  return batch;
}

}  // namespace qforge::cli
