// Compact workload keys: the accelerator's hot path turns an op descriptor into 128 bits and
// looks the decision up in a hash map, without building strings or touching the heap.
//
// A key holds what decides which kernel is fastest and what the plugins' supports() look at:
// the op, residency, each operand's dtype / mapping / granularity / channel-axis class / block
// size, the layout, bias, output type, requantization mode, and the shape *bucket*: every
// dimension rounded up to a power of two (0 stays 0, 1 stays 1, so M = 1 (GEMV) is its own
// bucket). Scales and zero-point values are not part of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "qforge/accelerator.h"
#include "qforge/op_desc.h"

namespace qforge::accel {

struct WorkloadKey {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  friend bool operator==(const WorkloadKey&, const WorkloadKey&) = default;
  std::string hex() const;  // 32 hex digits, hi first
};

struct WorkloadKeyHash {
  std::size_t operator()(const WorkloadKey& k) const noexcept {
    // splitmix64's finaliser over both halves: cheap and well mixed.
    std::uint64_t x = k.lo ^ (k.hi * 0x9e3779b97f4a7c15ull);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return static_cast<std::size_t>(x);
  }
};

// 0 for 0, else 1 + ceil(log2(d)): 1 -> 1, 2 -> 2, 3..4 -> 3, 5..8 -> 4, ...
int bucket_code(std::int64_t extent) noexcept;
// The largest extent of a bucket: 0, 1, 2, 4, 8, ...
std::int64_t bucket_extent(std::int64_t extent) noexcept;

// Per descriptor type, defined with the other facts of its family (op_table/kinds/*.cpp).
WorkloadKey make_key(OpKind op, const QuantizeDesc& d, Residency r) noexcept;
WorkloadKey make_key(const RequantizeDesc& d, Residency r) noexcept;
WorkloadKey make_key(OpKind op, const MatmulDesc& d, Residency r) noexcept;
WorkloadKey make_key(const DynamicQuantizeDesc& d, Residency r) noexcept;
WorkloadKey make_key(OpKind op, const LinearDesc& d, Residency r) noexcept;
WorkloadKey make_key(OpKind op, const ConvDesc& d, Residency r) noexcept;
WorkloadKey make_key(const Workload& w) noexcept;
// The same, with the op kind every caller of the generic dispatch has at hand.
inline WorkloadKey make_key(OpKind, const RequantizeDesc& d, Residency r) noexcept {
  return make_key(d, r);
}
inline WorkloadKey make_key(OpKind, const DynamicQuantizeDesc& d, Residency r) noexcept {
  return make_key(d, r);
}

}  // namespace qforge::accel
