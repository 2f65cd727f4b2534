// A data set read in batches: samples (model inputs, float32) or labels (int64), from
//   - a .npy file;
//   - a .npz archive with one array, or ARCHIVE.npz:NAME for the array NAME of several;
//   - a directory of .npy files, sorted by name and concatenated along axis 0 (they must agree
//     on element type and on every other axis);
//   - an IDX file, gzip'd or not (MNIST, Fashion-MNIST).
// Only one batch is held at a time: memory does not grow with the data set.
//
// Conversions. Samples: float32 as is, float64 cast, uint8 scaled to [0, 1] (x / 255, as
// torchvision's ToTensor does); IDX images [N, H, W] become [N, 1, H, W] (NCHW with one channel).
// Labels: int64 as is, other integer types cast; they must be [N] or [N, 1].
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "byte_stream.h"
#include "qforge/model/tensor.h"
#include "stored_array.h"

namespace qforge::cli {

enum class DataRole { samples, labels };

class DataReader {
 public:
  // Opens every part and checks their headers and sizes before any data is read. Throws
  // qforge::Error naming the path and what is wrong.
  static std::unique_ptr<DataReader> open(const std::string& spec, DataRole role,
                                          const DataLimits& limits = {});
  ~DataReader();

  std::int64_t count() const noexcept { return count_; }
  // The converted shape of one sample ([] for labels).
  const Shape& sample_shape() const noexcept { return sample_shape_; }
  model::ElementType type() const noexcept;
  // "t10k-images-idx3-ubyte.gz: IDX uint8[10000, 28, 28] as float32[N, 1, 28, 28] / 255"
  const std::string& description() const noexcept { return description_; }

  // The next min(rows, left) samples as one tensor [k, sample_shape...]; nullopt at the end.
  std::optional<model::Tensor> next(std::int64_t rows);
  // Samples not read yet.
  std::int64_t left() const noexcept { return count_ - read_; }

  struct Part;

 private:
  DataReader() = default;
  void open_current();

  DataRole role_ = DataRole::samples;
  DataLimits limits_;
  std::vector<Part> parts_;
  std::size_t current_ = 0;
  std::unique_ptr<ByteStream> stream_;
  std::int64_t part_rows_left_ = 0;
  std::int64_t count_ = 0, read_ = 0;
  Shape sample_shape_;
  std::string description_;
};

// Reads a whole data set at once (`run`'s inputs, tests).
model::Tensor read_all(const std::string& spec, DataRole role, const DataLimits& limits = {});

}  // namespace qforge::cli
