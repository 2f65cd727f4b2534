#include "text.h"

#include <charconv>
#include <cmath>

namespace qforge::model::detail::text {
namespace {

template <typename T>
std::string shortest(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::string number(double v) { return shortest(v); }
std::string number(float v) { return shortest(v); }

}  // namespace qforge::model::detail::text
