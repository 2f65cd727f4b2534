// Candidate outputs against the reference's: integers byte for byte (padding bits included),
// floats by NMSE = sum (got - ref)^2 / sum max(|ref|, magnitude)^2 within the op's tolerance
// (ggml's metric, with the conformance suite's magnitudes for sums that can cancel:
// magnitude.cpp), with non-finite values matched exactly. The tolerances are docs/NUMERICS.md's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "accelerator/operands.h"
#include "qforge/half.h"

namespace qforge::accel {
namespace {

std::optional<std::string> compare_exact(const ArraySpec& spec, const std::vector<std::byte>& got,
                                         const std::vector<std::byte>& ref) {
  std::size_t first = ref.size(), differing = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (got[i] != ref[i]) {
      if (first == ref.size()) first = i;
      ++differing;
    }
  if (differing == 0) return std::nullopt;
  std::ostringstream s;
  s << "output " << spec.name << " differs from the reference: " << differing << " of "
    << ref.size() << " bytes differ, the first at byte " << first << " (got 0x" << std::hex
    << static_cast<int>(got[first]) << ", expected 0x" << static_cast<int>(ref[first]) << ")";
  return s.str();
}

std::optional<std::string> compare_floats(const ArraySpec& spec, const std::vector<std::byte>& got,
                                          const std::vector<std::byte>& ref,
                                          const std::vector<double>& magnitude) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < spec.count; ++i) {
    const float g = load_float(spec.float_type, got.data(), i);
    const float r = load_float(spec.float_type, ref.data(), i);
    if (!std::isfinite(r) || !std::isfinite(g)) {
      const bool same = (std::isnan(r) && std::isnan(g)) || (std::isinf(r) && g == r);
      if (same) continue;
      std::ostringstream s;
      s << "output " << spec.name << "[" << i << "] = " << g << " where the reference gives " << r;
      return s.str();
    }
    err += (static_cast<double>(g) - r) * (static_cast<double>(g) - r);
    const double size = std::max(std::fabs(static_cast<double>(r)),
                                 magnitude.empty() ? 0.0 : std::fabs(magnitude[i]));
    norm += size * size;
  }
  if (norm == 0) {
    if (err == 0) return std::nullopt;
    return "output " + std::string(spec.name) +
           " is not all zero where the reference is (sum of squares " + std::to_string(err) + ")";
  }
  const double nmse = err / norm;
  if (nmse <= spec.tolerance) return std::nullopt;
  std::ostringstream s;
  s << "output " << spec.name << ": NMSE " << nmse << " exceeds the tolerance " << spec.tolerance
    << " (docs/NUMERICS.md)";
  return s.str();
}

}  // namespace

std::optional<std::string> compare_outputs(const IoLayout& layout, const HostArrays& got,
                                           const HostArrays& expected,
                                           const std::vector<std::vector<double>>& magnitudes) {
  for (std::size_t i = 0; i < layout.outputs.size(); ++i) {
    const ArraySpec& spec = layout.outputs[i];
    static const std::vector<double> none;
    const std::vector<double>& mag = i < magnitudes.size() ? magnitudes[i] : none;
    auto diff = spec.comparison == Comparison::exact
                    ? compare_exact(spec, got.outputs[i], expected.outputs[i])
                    : compare_floats(spec, got.outputs[i], expected.outputs[i], mag);
    if (diff) return diff;
  }
  if (layout.returns_params && !(got.returned == expected.returned))
    return "returned params " + (got.returned ? got.returned->to_string() : std::string("none")) +
           "; the reference returns " +
           (expected.returned ? expected.returned->to_string() : std::string("none"));
  return std::nullopt;
}

}  // namespace qforge::accel
