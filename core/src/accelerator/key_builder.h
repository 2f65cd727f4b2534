// The pieces every kind's workload key is built from (workload_key.h): a writer of fixed-width
// fields into 128 bits, and the encodings of params and shapes that several kinds share.
#pragma once

#include <cstdint>

#include "accelerator/workload_key.h"
#include "qforge/checked_size.h"
#include "qforge/params.h"
#include "qforge/shape.h"

namespace qforge::accel {

// Appends fixed-width fields to the 128 bits of a key.
class KeyBuilder {
 public:
  explicit KeyBuilder(std::uint64_t tag_bits_op, Residency r) {
    put(tag_bits_op, 4);
    put(static_cast<std::uint64_t>(r), 1);
  }
  void put(std::uint64_t value, int bits) noexcept {
    value &= bits == 64 ? ~0ull : ((1ull << bits) - 1);
    if (pos_ < 64) {
      words_[0] |= value << pos_;
      if (pos_ + bits > 64) words_[1] |= value >> (64 - pos_);
    } else {
      words_[1] |= value << (pos_ - 64);
    }
    pos_ += bits;  // never past 128: the widest key (a conv) uses 98 bits
  }
  void dim(std::int64_t extent) noexcept {
    put(static_cast<std::uint64_t>(bucket_code(extent)), 7);
  }
  WorkloadKey key() const noexcept { return {words_[0], words_[1]}; }

 private:
  std::uint64_t words_[2] = {0, 0};
  int pos_ = 0;
};

// Where a per-channel axis sits in a tensor of `rank`: 1 first, 2 last (contiguous), 3 middle,
// 0 out of range (the op will reject the params; the key need not be meaningful).
inline std::uint64_t axis_class(int axis, std::size_t rank) noexcept {
  const int r = static_cast<int>(rank);
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) return 0;
  if (a == r - 1) return 2;
  return a == 0 ? 1 : 3;
}

// dtype 3 + mapping 2 + granularity 2 + axis class 2 + block size 20 = 29 bits.
inline void put_params(KeyBuilder& b, const QuantizationParams& p, std::size_t rank) noexcept {
  const Scheme& s = p.scheme();
  b.put(static_cast<std::uint64_t>(p.dtype()), 3);
  b.put(static_cast<std::uint64_t>(s.mapping), 2);
  b.put(static_cast<std::uint64_t>(s.granularity), 2);
  b.put(s.granularity == Granularity::per_channel ? axis_class(s.axis, rank) : 0, 2);
  const std::int64_t block = s.granularity == Granularity::block ? s.block_size : 0;
  b.put(static_cast<std::uint64_t>(block < 0 ? 0 : block > 0xFFFFF ? 0xFFFFF : block), 20);
}

// Elementwise shapes bucket as [outer, last]: kernels care how long the contiguous rows are
// and how many there are, not how the outer extent is split.
inline void put_shape(KeyBuilder& b, const Shape& shape) noexcept {
  std::int64_t outer = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i)
    outer = saturating_mul(outer, shape[i] < 0 ? 0 : shape[i]);
  b.dim(outer);
  b.dim(shape.empty() ? 1 : shape.back());
}

}  // namespace qforge::accel
