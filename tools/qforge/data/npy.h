// numpy's .npy format (numpy.lib.format, versions 1.0, 2.0 and 3.0): a magic string, a version,
// a header length, a Python dict literal {'descr': '<f4', 'fortran_order': False,
// 'shape': (N, ...)}, then the elements in C order.
//
// Read: little-endian (or one-byte) float32, float64, int64, int32, uint8, int8 and bool;
// C order only. Each malformed case is a qforge::Error (corrupt_data unless said) naming the
// source: bad magic, unknown version, a header that is not such a dict or is longer than
// DataLimits::max_header_bytes, an unsupported descr (big-endian, strings, objects, structured;
// `unsupported`), Fortran order (`unsupported`), a shape over the limits, and data shorter or
// longer than the shape declares.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "byte_stream.h"
#include "qforge/model/tensor.h"
#include "stored_array.h"

namespace qforge::cli {

// Reads the header and leaves `in` at the first element. When the stream knows its length
// (a file), data shorter or longer than the declared shape is refused here.
StoredArray read_npy_header(ByteStream& in, const DataLimits& limits = {});

// The whole array, in its stored element type.
model::Tensor read_npy(ByteStream& in, const DataLimits& limits = {});
model::Tensor load_npy(const std::filesystem::path& path, const DataLimits& limits = {});

// The .npy bytes of `t` (version 1.0; header padded to a multiple of 64 bytes as numpy does).
// Every ElementType with a numpy descr is written; float16 and uint16..uint64 too.
std::string npy_bytes(const model::Tensor& t);
// Writes npy_bytes(t) atomically (qforge/output_file.h).
void save_npy(const std::filesystem::path& path, const model::Tensor& t);

}  // namespace qforge::cli
