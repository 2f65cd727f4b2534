// Error helpers shared by the reference ops.
#include <cstdio>

#include "qforge/checked_size.h"
#include "reference/detail.h"

namespace qforge::reference::detail {

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

void fail(ErrorCode code, const std::string& op, const std::string& what) {
  throw Error(code, "reference::" + op + ": " + what);
}

void require_data(const std::string& op, const char* what, const void* p, std::int64_t count) {
  if (p == nullptr && count > 0)
    fail(ErrorCode::invalid_argument, op,
         std::string(what) + " is null for " + std::to_string(count) +
             " elements; expected a valid host pointer");
}

void require_non_negative(const std::string& op, const char* what, std::int64_t v) {
  if (v < 0)
    fail(ErrorCode::invalid_argument, op,
         std::string(what) + " = " + std::to_string(v) + "; expected >= 0");
}

namespace {

// Runs a checked_size.h helper so that its message starts "reference::<op>: ".
template <class Fn>
auto in_op(const std::string& op, Fn fn) {
  try {
    return fn();
  } catch (const Error& e) {
    fail(e.code(), op, e.what());
  }
}

}  // namespace

std::int64_t checked_operand(const std::string& op, std::string_view operand,
                             std::span<const std::int64_t> extents, std::size_t element_bytes) {
  return in_op(op, [&] {
    const std::int64_t count = checked_element_count(operand, extents);
    // Compared first so that the message is only built when it is needed.
    if (static_cast<std::uint64_t>(count) * element_bytes > static_cast<std::uint64_t>(kMaxSize))
      checked_bytes(std::string(operand) + " = " + to_string(Shape(extents.begin(), extents.end())),
                    count, element_bytes);
    return count;
  });
}

std::int64_t checked_operand(const std::string& op, std::string_view operand,
                             std::span<const std::int64_t> extents, DType dtype) {
  const auto& tr = traits(dtype);
  return checked_operand(op, operand, extents,
                         tr.bits < 8 ? 1 : static_cast<std::size_t>(tr.bits / 8));
}

void validate_quantize(const std::string& op, const QuantizeDesc& desc, std::size_t float_bytes) {
  checked_operand(op, "q", desc.shape, desc.params.dtype());
  checked_operand(op, "x", desc.shape, float_bytes);
  desc.params.validate_for(desc.shape);
}

}  // namespace qforge::reference::detail
