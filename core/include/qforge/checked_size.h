// Checked size arithmetic: the one place where qforge turns extents into element counts and
// element counts into byte counts.
//
// The size limit. Every extent, every operand's element count and every byte count qforge
// accepts is at most kMaxSize = 2^48 (256 Ti). No machine holds that much (x86-64 user space
// is 2^47 bytes with 4-level paging; the largest GPUs hold under 2^38), so the limit refuses
// nothing that could run, and it keeps every derived quantity exact in int64:
//   - a product of two unchecked extents could reach 2^126, so every product of extents goes
//     through checked_element_count; its result is again at most 2^48;
//   - a checked count times a small constant (an element size, a tile, a split count: anything
//     up to 2^14) stays below 2^62, and sums of up to 2^14 checked sizes stay below 2^62,
//     so offsets, padded sizes and index arithmetic inside a validated operand never overflow.
// The element count of a shape is the product of its extents with empty axes counted as 1 for
// the limit: strides (products of trailing extents) then fit too, even in an empty tensor.
//
// Descriptor validation (reference::check_descriptor, which every backend's supports() runs
// first) applies these checks to every operand of an op, so a backend's own arithmetic on a
// validated descriptor stays within the limit; allocations sized from anything else use
// checked_bytes / checked_storage_bytes directly. Violations throw qforge::Error naming the
// operand and its extents, e.g.
//   "A [M, K] = [4294967296, 4294967296] has more than 2^48 = 281474976710656 elements; ..."
// See docs/ARCHITECTURE.md ("Size limit").
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "qforge/dtype.h"
#include "qforge/export.h"

namespace qforge {

inline constexpr std::int64_t kMaxSize = std::int64_t{1} << 48;

// Number of elements of `operand` with these extents (1 for none). Throws qforge::Error naming
// the operand and its extents: ErrorCode::shape_mismatch for a negative extent,
// ErrorCode::invalid_argument when an extent or the product of the non-zero extents exceeds
// kMaxSize. `operand` is how messages name it: "shape", "A [M, K]", "B [N, K]".
QFORGE_API std::int64_t checked_element_count(std::string_view operand,
                                              std::span<const std::int64_t> extents);
QFORGE_API std::int64_t checked_element_count(std::string_view operand,
                                              std::initializer_list<std::int64_t> extents);

// count * element_bytes, for an allocation or a copy. Throws ErrorCode::invalid_argument
// naming `operand` when count is negative or the product exceeds kMaxSize bytes.
QFORGE_API std::size_t checked_bytes(std::string_view operand, std::int64_t count,
                                     std::size_t element_bytes);
// storage_bytes(dtype, count) (packed int4/binary included), checked the same way.
QFORGE_API std::size_t checked_storage_bytes(std::string_view operand, DType dtype,
                                             std::int64_t count);

// a * b for a, b >= 0, saturating at INT64_MAX instead of overflowing: for keys and cost
// estimates (a workload bucket, a count of multiply-adds), never for a size that is then used.
constexpr std::int64_t saturating_mul(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

}  // namespace qforge
