#include "qforge/checked_size.h"

#include <string>

#include "qforge/error.h"
#include "qforge/shape.h"

namespace qforge {
namespace {

const std::string kLimitText = "2^48 = " + std::to_string(kMaxSize);

std::string extents_text(std::string_view operand, std::span<const std::int64_t> extents) {
  return std::string(operand) + " = " + to_string(Shape(extents.begin(), extents.end()));
}

}  // namespace

std::int64_t checked_element_count(std::string_view operand,
                                   std::span<const std::int64_t> extents) {
  // `bounded` is the product with empty axes counted as 1: every partial product (a stride)
  // is at most it, so checking it keeps them all inside the limit.
  std::int64_t bounded = 1;
  bool empty = false;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    const std::int64_t e = extents[i];
    if (e < 0)
      throw Error(ErrorCode::shape_mismatch, extents_text(operand, extents) + ": extent " +
                                                 std::to_string(i) + " is " + std::to_string(e) +
                                                 "; expected >= 0");
    if (e > kMaxSize)
      throw Error(ErrorCode::invalid_argument, extents_text(operand, extents) + ": extent " +
                                                   std::to_string(i) + " is " + std::to_string(e) +
                                                   "; expected at most " + kLimitText +
                                                   " (qforge's size limit, docs/ARCHITECTURE.md)");
    if (e == 0) {
      empty = true;
      continue;
    }
    // bounded <= kMaxSize and e <= kMaxSize: compare by division, never form the product.
    if (bounded > kMaxSize / e)
      throw Error(ErrorCode::invalid_argument,
                  extents_text(operand, extents) + " has more than " + kLimitText + " elements" +
                      (empty ? " (counting empty axes as 1)" : "") +
                      "; expected at most that many per operand (qforge's size limit, "
                      "docs/ARCHITECTURE.md)");
    bounded *= e;
  }
  return empty ? 0 : bounded;
}

std::int64_t checked_element_count(std::string_view operand,
                                   std::initializer_list<std::int64_t> extents) {
  return checked_element_count(operand,
                               std::span<const std::int64_t>(extents.begin(), extents.size()));
}

std::size_t checked_bytes(std::string_view operand, std::int64_t count, std::size_t element_bytes) {
  if (count < 0)
    throw Error(ErrorCode::invalid_argument, std::string(operand) + ": element count " +
                                                 std::to_string(count) + "; expected >= 0");
  if (element_bytes != 0 &&
      static_cast<std::uint64_t>(count) > static_cast<std::uint64_t>(kMaxSize) / element_bytes)
    throw Error(ErrorCode::invalid_argument,
                std::string(operand) + ": " + std::to_string(count) + " elements of " +
                    std::to_string(element_bytes) + " bytes need more than " + kLimitText +
                    " bytes; expected at most that many per operand (qforge's size limit, "
                    "docs/ARCHITECTURE.md)");
  return static_cast<std::size_t>(count) * element_bytes;
}

std::size_t checked_storage_bytes(std::string_view operand, DType dtype, std::int64_t count) {
  const auto& tr = traits(dtype);
  // Packed types take at most one byte per element; only the check of the count is needed.
  if (tr.bits < 8) return storage_bytes(dtype, checked_bytes(operand, count, 1));
  return checked_bytes(operand, count, static_cast<std::size_t>(tr.bits / 8));
}

}  // namespace qforge
