#include "format.h"

#include <cmath>
#include <cstdio>

namespace qforge::bench {

std::string format_fixed(double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

namespace {
// Three significant digits.
std::string sig3(double v) {
  const int digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return format_fixed(v, digits);
}
}  // namespace

std::string format_seconds(double s) {
  if (s <= 0) return "-";
  if (s < 1e-6) return sig3(s * 1e9) + " ns";
  if (s < 1e-3) return sig3(s * 1e6) + " us";
  if (s < 1) return sig3(s * 1e3) + " ms";
  return sig3(s) + " s";
}

std::string format_rate(double rate, const std::string& unit) {
  if (rate <= 0) return "-";
  if (rate < 0.01) return format_fixed(rate * 1000, 2) + " " + (unit == "GOPS" ? "MOPS" : "MB/s");
  return sig3(rate) + " " + unit;
}

std::string format_ratio(std::optional<double> r) {
  if (!r) return "-";
  if (*r >= 100) return format_fixed(*r, 0) + "x";
  if (*r >= 10) return format_fixed(*r, 1) + "x";
  if (*r >= 0.1) return format_fixed(*r, 2) + "x";
  return format_fixed(*r, *r >= 0.01 ? 3 : 4) + "x";  // far below the anchor: keep digits
}

}  // namespace qforge::bench
