#include "text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace qforge::calibration::text {
namespace {

template <typename T>
std::string shortest(T v, int max_digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  for (int digits = 6; digits <= max_digits; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
    if (static_cast<T>(std::strtod(buf, nullptr)) == v) break;
  }
  return buf;
}

}  // namespace

std::string number(double v) { return shortest(v, 17); }
std::string number(float v) { return shortest(v, 9); }

}  // namespace qforge::calibration::text
