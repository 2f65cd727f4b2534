// What a data file's header declares: the element type and shape of the array that follows,
// checked against qforge's limits before anything is allocated (data files are untrusted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "qforge/model/tensor.h"
#include "qforge/shape.h"

namespace qforge::cli {

struct DataLimits {
  // One sample (the array without its first axis), which is what a batch holds per row.
  std::uint64_t max_sample_bytes = model::kDefaultMaxTensorBytes;
  // The whole array: it is streamed, never held, but a header declaring more than this is lying
  // or is not a data set qforge should spend hours on.
  std::uint64_t max_total_bytes = std::uint64_t{1} << 40;
  std::size_t max_rank = 8;
  // numpy itself refuses headers over 10000 bytes unless told otherwise.
  std::size_t max_header_bytes = std::size_t{1} << 16;
  // Files of one directory data set, entries of one archive.
  std::size_t max_files = 100000;
};

struct StoredArray {
  model::ElementType type = model::ElementType::float32;
  Shape shape;
  std::uint64_t data_bytes = 0;  // element_size(type) x elements
};

// Fills data_bytes and checks `a` against `limits`; throws qforge::Error (corrupt_data for
// a negative extent or a rank over the limit, invalid_argument for sizes over the limits)
// naming `source` and the declared shape.
void check_stored_array(StoredArray& a, const DataLimits& limits, std::string_view source);

// Rows [first axis] of an array: the element count of one row (1 for a rank-1 array).
std::int64_t row_elements(const StoredArray& a);

}  // namespace qforge::cli
