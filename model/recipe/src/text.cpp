#include "text.h"

#include <algorithm>
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

std::string clip(std::string_view s, std::size_t max) {
  std::size_t keep = std::min(s.size(), max);
  // Back off to the start of a UTF-8 sequence (continuation bytes are 10xxxxxx).
  while (keep < s.size() && keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80)
    --keep;
  std::string out;
  for (std::size_t i = 0; i < keep; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (keep < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string quoted(std::string_view s, std::size_t max) { return "'" + clip(s, max) + "'"; }
std::string number(float v) { return shortest(v); }

}  // namespace qforge::model::detail::text
