// The IDX format of MNIST and Fashion-MNIST (yann.lecun.com/exdb/mnist): two zero bytes, a type
// code, the number of dimensions, one big-endian uint32 extent per dimension, then the elements
// big-endian in C order. The files usually ship gzip'd (Debian's dataset-fashion-mnist); the
// gzip layer is zlib's (byte_stream.h), this is the format inside.
//
// Read: type 0x08 (uint8), the one both data sets use, with 1 to 8 dimensions. Malformed cases
// are qforge::Error naming the source: bad magic (corrupt_data), another type code
// (unsupported), zero or too many dimensions, extents over the limits, and data shorter or
// longer than the header declares.
#pragma once

#include <span>

#include "byte_stream.h"
#include "qforge/model/tensor.h"
#include "stored_array.h"

namespace qforge::cli {

// Reads the header and leaves `in` at the first element. When the stream knows its length,
// data of another size than declared is refused here.
StoredArray read_idx_header(ByteStream& in, const DataLimits& limits = {});

// The whole array as stored (uint8).
model::Tensor read_idx(ByteStream& in, const DataLimits& limits = {});

}  // namespace qforge::cli
