// Batches of a data set read on a thread of their own, a few ahead of the caller: calibration
// runs the float model on one batch while the next is read (inflating a gzip'd IDX file takes
// milliseconds per thousand images, which the model need not wait for).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "data/dataset.h"
#include "qforge/model/tensor.h"

namespace qforge::cli {

class BatchPrefetcher {
 public:
  // Reads `batches` batches of `rows` samples from `reader` (which must hold that many and is
  // not touched by anyone else until this object is gone), at most `ahead` of them held.
  BatchPrefetcher(DataReader& reader, std::int64_t rows, std::int64_t batches,
                  std::size_t ahead = 4);
  ~BatchPrefetcher();  // stops reading and joins the thread
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // The next batch, as reader.next(rows) gave it; rethrows the reader's error. Throws
  // qforge::Error (internal) when asked for more than `batches`.
  model::Tensor next();

 private:
  void read_all();

  DataReader& reader_;
  const std::int64_t rows_, batches_;
  const std::size_t ahead_;
  std::int64_t taken_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<model::Tensor> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace qforge::cli
