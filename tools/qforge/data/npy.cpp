#include "npy.h"

#include <array>
#include <charconv>
#include <cstring>
#include <optional>
#include <vector>

#include "qforge/error.h"
#include "qforge/output_file.h"

namespace qforge::cli {
namespace {

using model::ElementType;

constexpr std::string_view kMagic = "\x93NUMPY";

struct Descr {
  std::string_view text;  // without the byte-order character
  ElementType type;
};
constexpr std::array<Descr, 13> kDescrs{{
    {"f4", ElementType::float32},
    {"f8", ElementType::float64},
    {"f2", ElementType::float16},
    {"i8", ElementType::int64},
    {"i4", ElementType::int32},
    {"i2", ElementType::int16},
    {"i1", ElementType::int8},
    {"u8", ElementType::uint64},
    {"u4", ElementType::uint32},
    {"u2", ElementType::uint16},
    {"u1", ElementType::uint8},
    {"b1", ElementType::boolean},
    {"?", ElementType::boolean},
}};

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::corrupt_data, source + ": not a valid .npy header: " + what);
}

// A parser for the one dict literal numpy writes: string keys; string, bool and int-tuple values.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string source) : s_(text), source_(std::move(source)) {}

  struct Fields {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<Shape> shape;
  };

  Fields parse() {
    Fields f;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string();
      expect(':');
      skip_space();
      if (key == "descr") {
        if (f.descr) bad(source_, "'descr' given twice");
        if (peek() != '\'' && peek() != '"')
          bad(source_, "'descr' is not a string (structured dtypes are not supported)");
        f.descr = string();
      } else if (key == "fortran_order") {
        if (f.fortran_order) bad(source_, "'fortran_order' given twice");
        f.fortran_order = boolean();
      } else if (key == "shape") {
        if (f.shape) bad(source_, "'shape' given twice");
        f.shape = tuple();
      } else {
        bad(source_, "unexpected key '" + key + "'; expected descr, fortran_order and shape");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad(source_, "expected ',' or '}' at offset " + std::to_string(pos_));
    }
    ++pos_;
    skip_space();
    if (pos_ != s_.size()) bad(source_, "text after the closing '}'");
    return f;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c)
      bad(source_, std::string("expected '") + c + "' at offset " + std::to_string(pos_));
    ++pos_;
  }
  std::string string() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"')
      bad(source_, "expected a quoted string at offset " + std::to_string(pos_));
    const std::size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) bad(source_, "unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad(source_, "'fortran_order' is not True or False");
  }
  Shape tuple() {
    if (peek() != '(') bad(source_, "'shape' is not a tuple");
    ++pos_;
    Shape shape;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      std::int64_t v = 0;
      const char* b = s_.data() + pos_;
      const char* e = s_.data() + s_.size();
      const auto [ptr, ec] = std::from_chars(b, e, v);
      if (ec == std::errc::result_out_of_range) bad(source_, "a shape extent overflows int64");
      if (ec != std::errc{} || v < 0)
        bad(source_,
            "a shape extent is not a non-negative integer at offset " + std::to_string(pos_));
      pos_ += static_cast<std::size_t>(ptr - b);
      // numpy writes Python ints; 'L' suffixes come from Python 2.
      if (peek() == 'L') ++pos_;
      shape.push_back(v);
      if (shape.size() > 64) bad(source_, "more than 64 shape extents");
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') bad(source_, "expected ',' or ')' in 'shape'");
    }
    ++pos_;
    return shape;
  }

  std::string_view s_;
  std::string source_;
  std::size_t pos_ = 0;
};

ElementType parse_descr(const std::string& d, const std::string& source) {
  if (d.empty()) bad(source, "'descr' is empty");
  const char order = d[0];
  const bool has_order = order == '<' || order == '>' || order == '|' || order == '=';
  const std::string_view code = has_order ? std::string_view(d).substr(1) : std::string_view(d);
  for (const Descr& x : kDescrs) {
    if (code != x.text) continue;
    if (order == '>' && model::element_size(x.type) > 1)
      throw Error(ErrorCode::unsupported,
                  source + ": big-endian data ('" + d +
                      "') is not supported; expected little-endian, e.g. '<f4'");
    return x.type;
  }
  throw Error(ErrorCode::unsupported,
              source + ": .npy element type '" + d +
                  "' is not supported; expected one of <f4, <f8, <f2, <i8, <i4, <i2, |i1, "
                  "<u8, <u4, <u2, |u1, |b1");
}

std::string descr_of(ElementType t) {
  for (const Descr& x : kDescrs)
    if (x.type == t) return (model::element_size(t) == 1 ? "|" : "<") + std::string(x.text);
  throw Error(ErrorCode::unsupported,
              "npy: no numpy element type for " + std::string(to_string(t)));
}

}  // namespace

StoredArray read_npy_header(ByteStream& in, const DataLimits& limits) {
  const std::string& source = in.name();
  std::array<std::byte, 8> pre{};
  read_exact(in, pre, ".npy magic and version");
  if (std::memcmp(pre.data(), kMagic.data(), kMagic.size()) != 0)
    throw Error(ErrorCode::corrupt_data,
                source + ": not a .npy file: it does not start with the magic \"\\x93NUMPY\"");
  const int major = static_cast<int>(pre[6]), minor = static_cast<int>(pre[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw Error(ErrorCode::unsupported, source + ": .npy version " + std::to_string(major) + "." +
                                            std::to_string(minor) +
                                            " is not supported; expected 1.0, 2.0 or 3.0");
  std::uint64_t header_len = 0;
  if (major == 1) {
    std::array<std::byte, 2> b{};
    read_exact(in, b, ".npy header length");
    header_len = std::to_integer<std::uint64_t>(b[0]) | std::to_integer<std::uint64_t>(b[1]) << 8;
  } else {
    std::array<std::byte, 4> b{};
    read_exact(in, b, ".npy header length");
    for (int i = 3; i >= 0; --i)
      header_len = header_len << 8 | std::to_integer<std::uint64_t>(b[i]);
  }
  if (header_len > limits.max_header_bytes)
    throw Error(ErrorCode::corrupt_data,
                source + ": the .npy header declares " + std::to_string(header_len) +
                    " bytes; at most " + std::to_string(limits.max_header_bytes) + " are accepted");
  std::string text(static_cast<std::size_t>(header_len), '\0');
  read_exact(in, std::as_writable_bytes(std::span<char>(text)), ".npy header");
  if (text.empty() || text.back() != '\n') bad(source, "it does not end with a newline");
  const auto fields = HeaderParser(text, source).parse();
  if (!fields.descr) bad(source, "'descr' is missing");
  if (!fields.fortran_order) bad(source, "'fortran_order' is missing");
  if (!fields.shape) bad(source, "'shape' is missing");
  StoredArray a;
  a.type = parse_descr(*fields.descr, source);
  a.shape = *fields.shape;
  if (*fields.fortran_order && a.shape.size() > 1)
    throw Error(ErrorCode::unsupported, source +
                                            ": Fortran-order arrays are not supported; save with "
                                            "numpy.ascontiguousarray first");
  check_stored_array(a, limits, source);
  if (const auto left = in.remaining(); left && *left != a.data_bytes)
    throw Error(ErrorCode::corrupt_data, source + ": the header declares " +
                                             std::string(to_string(a.type)) + to_string(a.shape) +
                                             " (" + std::to_string(a.data_bytes) +
                                             " bytes) but the file holds " + std::to_string(*left) +
                                             " bytes after the header");
  return a;
}

model::Tensor read_npy(ByteStream& in, const DataLimits& limits) {
  const StoredArray a = read_npy_header(in, limits);
  model::Tensor t(a.type, a.shape);
  read_exact(in, std::span<std::byte>(t.data(), t.byte_size()), "the array's elements");
  std::byte extra{};
  if (in.read(&extra, 1) != 0)
    throw Error(ErrorCode::corrupt_data, in.name() + ": data continues past the " +
                                             std::to_string(a.data_bytes) +
                                             " bytes the header declares");
  return t;
}

model::Tensor load_npy(const std::filesystem::path& path, const DataLimits& limits) {
  auto in = open_file_range(path);
  return read_npy(*in, limits);
}

std::string npy_bytes(const model::Tensor& t) {
  std::string shape = "(";
  for (std::size_t i = 0; i < t.shape().size(); ++i)
    shape += std::to_string(t.shape()[i]) +
             (t.shape().size() == 1 || i + 1 < t.shape().size() ? "," : "");
  // numpy writes "(3,)" and "(2, 3)"; either parses.
  shape += ")";
  std::string dict =
      "{'descr': '" + descr_of(t.type()) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so magic + version + length + dict + '\n' is a multiple of 64.
  const std::size_t unpadded = kMagic.size() + 2 + 2 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  out.append(reinterpret_cast<const char*>(t.data()), t.byte_size());
  return out;
}

void save_npy(const std::filesystem::path& path, const model::Tensor& t) {
  write_file_atomically(path, npy_bytes(t), ".npy file");
}

}  // namespace qforge::cli
