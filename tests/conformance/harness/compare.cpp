#include "harness/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace qforge::conformance {

OutputSpec OutputSpec::quantized(std::string name, Shape shape, DType dtype) {
  OutputSpec s;
  s.name = std::move(name);
  s.shape = std::move(shape);
  s.kind = ValueKind::quantized;
  s.dtype = dtype;
  return s;
}

OutputSpec OutputSpec::int32(std::string name, Shape shape) {
  OutputSpec s;
  s.name = std::move(name);
  s.shape = std::move(shape);
  s.kind = ValueKind::int32;
  return s;
}

OutputSpec OutputSpec::floating(std::string name, Shape shape, FloatType type, double tolerance) {
  OutputSpec s;
  s.name = std::move(name);
  s.shape = std::move(shape);
  s.kind = ValueKind::floating;
  s.float_type = type;
  s.nmse_tolerance = tolerance;
  return s;
}

std::size_t OutputSpec::count() const { return static_cast<std::size_t>(element_count(shape)); }

std::size_t OutputSpec::bytes() const {
  switch (kind) {
    case ValueKind::quantized: return storage_bytes(dtype, count());
    case ValueKind::int32: return 4 * count();
    case ValueKind::floating: return static_cast<std::size_t>(size_of(float_type)) * count();
  }
  return 0;
}

std::size_t OutputSpec::element_bytes() const {
  switch (kind) {
    case ValueKind::quantized: return traits(dtype).bits >= 8 ? traits(dtype).bits / 8 : 1;
    case ValueKind::int32: return 4;
    case ValueKind::floating: return static_cast<std::size_t>(size_of(float_type));
  }
  return 1;
}

std::string multi_index(const Shape& shape, std::size_t flat) {
  std::vector<std::int64_t> index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<std::size_t>(shape[d]);
    index[d] = extent == 0 ? 0 : static_cast<std::int64_t>(flat % extent);
    flat = extent == 0 ? 0 : flat / extent;
  }
  return to_string(Shape(index.begin(), index.end()));
}

namespace {

std::string header(const OutputSpec& spec) {
  std::ostringstream out;
  out << "output " << spec.name << " " << to_string(spec.shape) << " ";
  switch (spec.kind) {
    case ValueKind::quantized: out << name(spec.dtype); break;
    case ValueKind::int32: out << "int32"; break;
    case ValueKind::floating: out << name(spec.float_type); break;
  }
  return out.str();
}

::testing::AssertionResult compare_quantized(const OutputSpec& spec, std::span<const std::byte> got,
                                             std::span<const std::byte> expected) {
  // Sizes are equal (compare checks them). An empty output (a zero extent) may have null data,
  // which memcmp must not be given even for zero bytes.
  if (got.empty() || std::memcmp(got.data(), expected.data(), got.size()) == 0)
    return ::testing::AssertionSuccess();
  const std::size_t n = spec.count();
  std::size_t mismatches = 0, first = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (load_element(spec.dtype, got.data(), i) != load_element(spec.dtype, expected.data(), i)) {
      if (first == n) first = i;
      ++mismatches;
    }
  }
  std::ostringstream msg;
  msg << header(spec) << ": ";
  if (first == n) {
    msg << "every element matches but the padding bits of the last byte differ (got 0x" << std::hex
        << std::to_integer<int>(got.back()) << ", expected 0x"
        << std::to_integer<int>(expected.back()) << std::dec
        << "); padding bits must be zero (dtype.h)";
  } else {
    msg << mismatches << " of " << n << " elements differ; first at " << first << " "
        << multi_index(spec.shape, first) << ": got " << load_element(spec.dtype, got.data(), first)
        << ", expected " << load_element(spec.dtype, expected.data(), first);
  }
  return ::testing::AssertionFailure() << msg.str();
}

::testing::AssertionResult compare_int32(const OutputSpec& spec, std::span<const std::byte> got,
                                         std::span<const std::byte> expected) {
  const std::size_t n = spec.count();
  std::size_t mismatches = 0, first = n;
  std::int32_t g0 = 0, e0 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::int32_t g, e;
    std::memcpy(&g, got.data() + 4 * i, 4);
    std::memcpy(&e, expected.data() + 4 * i, 4);
    if (g != e) {
      if (first == n) first = i, g0 = g, e0 = e;
      ++mismatches;
    }
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << header(spec) << ": " << mismatches << " of " << n << " elements differ; first at "
         << first << " " << multi_index(spec.shape, first) << ": got " << g0 << ", expected " << e0;
}

::testing::AssertionResult compare_floating(const OutputSpec& spec, std::span<const std::byte> got,
                                            std::span<const std::byte> expected,
                                            std::span<const double> magnitude) {
  const std::size_t n = spec.count();
  double error = 0.0, energy = 0.0, worst = -1.0;
  std::size_t worst_index = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float g = load_float(spec.float_type, got.data(), i);
    const float e = load_float(spec.float_type, expected.data(), i);
    if (!std::isfinite(e)) {
      const bool same = std::isnan(e) ? std::isnan(g) : g == e;
      if (!same)
        return ::testing::AssertionFailure()
               << header(spec) << ": element " << i << " " << multi_index(spec.shape, i) << " is "
               << g << " where the reference gives " << e;
      continue;
    }
    if (!std::isfinite(g))
      return ::testing::AssertionFailure()
             << header(spec) << ": element " << i << " " << multi_index(spec.shape, i) << " is "
             << g << " where the reference gives the finite " << e
             << (std::isnan(g) ? " (NaN: not written, or computed as NaN)" : "");
    const double d = static_cast<double>(g) - static_cast<double>(e);
    error += d * d;
    const double size = std::max(std::fabs(static_cast<double>(e)),
                                 magnitude.empty() ? 0.0 : std::fabs(magnitude[i]));
    energy += size * size;
    if (d * d > worst) worst = d * d, worst_index = i;
  }
  const double nmse =
      energy > 0.0 ? error / energy : (error > 0.0 ? std::numeric_limits<double>::infinity() : 0.0);
  if (nmse <= spec.nmse_tolerance) return ::testing::AssertionSuccess();
  std::ostringstream msg;
  msg.precision(9);
  msg << header(spec) << ": NMSE " << nmse << " exceeds the tolerance " << spec.nmse_tolerance
      << " over " << n << " elements; worst element " << worst_index << " "
      << multi_index(spec.shape, worst_index) << ": got "
      << load_float(spec.float_type, got.data(), worst_index) << ", expected "
      << load_float(spec.float_type, expected.data(), worst_index);
  return ::testing::AssertionFailure() << msg.str();
}

}  // namespace

::testing::AssertionResult compare_output(const OutputSpec& spec, std::span<const std::byte> got,
                                          std::span<const std::byte> expected,
                                          std::span<const double> magnitude) {
  if (!magnitude.empty() && magnitude.size() != spec.count())
    return ::testing::AssertionFailure() << header(spec) << ": " << magnitude.size()
                                         << " magnitudes for " << spec.count() << " elements";
  if (got.size() != spec.bytes() || expected.size() != spec.bytes())
    return ::testing::AssertionFailure()
           << header(spec) << ": " << got.size() << " bytes read back and " << expected.size()
           << " expected; the output holds " << spec.bytes();
  switch (spec.kind) {
    case ValueKind::quantized: return compare_quantized(spec, got, expected);
    case ValueKind::int32: return compare_int32(spec, got, expected);
    case ValueKind::floating: return compare_floating(spec, got, expected, magnitude);
  }
  return ::testing::AssertionFailure() << "unknown output kind";
}

}  // namespace qforge::conformance
