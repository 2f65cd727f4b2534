// The dtypes, mappings and methods each part of a recipe accepts, and how their lists read in
// messages. One table per role so the validator, the JSON reader and the docs agree.
#pragma once

#include <array>
#include <string>

#include "qforge/calibration/methods.h"
#include "qforge/dtype.h"
#include "qforge/model/recipe.h"

namespace qforge::model::detail {

inline constexpr std::array kWeightDTypes = {DType::int8, DType::uint8, DType::int16, DType::int4};
inline constexpr std::array kActivationDTypes = {DType::int8, DType::uint8, DType::int16};
inline constexpr std::array kMappings = {Mapping::symmetric, Mapping::affine};
inline constexpr std::array kGranularities = {Granularity::per_tensor, Granularity::per_channel,
                                              Granularity::block};
inline constexpr std::array kWeightObservers = {calibration::Method::minmax,
                                                calibration::Method::mse};
inline constexpr std::array kWeightRoundings = {WeightRounding::nearest, WeightRounding::gptq};
inline constexpr std::array kActivationModes = {
    ActivationMode::static_range, ActivationMode::dynamic, ActivationMode::explicit_params};
inline constexpr std::array kRequantModes = {RequantMode::float_multiplier,
                                             RequantMode::fixed_point};
inline constexpr std::array kMethods = {
    calibration::Method::minmax, calibration::Method::percentile, calibration::Method::entropy,
    calibration::Method::mse, calibration::Method::adaptive};

template <typename T, std::size_t N>
bool contains(const std::array<T, N>& list, T value) {
  for (const T& v : list)
    if (v == value) return true;
  return false;
}

// The JSON spelling of each setting.
inline std::string_view text_of(DType t) { return name(t); }
inline std::string_view text_of(Mapping m) { return to_string(m); }
inline std::string_view text_of(Granularity g) { return to_string(g); }
inline std::string_view text_of(ActivationMode m) { return to_string(m); }
inline std::string_view text_of(WeightRounding r) { return to_string(r); }
inline std::string_view text_of(RequantMode m) { return to_string(m); }
inline std::string_view text_of(calibration::Method m) { return calibration::to_string(m); }

// "int8, uint8, int16, int4"
template <typename T, std::size_t N>
std::string join_names(const std::array<T, N>& list) {
  std::string out;
  for (const T& v : list) {
    if (!out.empty()) out += ", ";
    out += std::string(text_of(v));
  }
  return out;
}

// Which calibration options a method reads: a value given for an option the method ignores is
// an error, not a silent no-op.
inline bool method_uses_percentile(calibration::Method m) {
  return m == calibration::Method::percentile || m == calibration::Method::adaptive;
}
inline bool method_uses_bins(calibration::Method m) {  // start_bin and stride
  return m == calibration::Method::entropy || m == calibration::Method::mse ||
         m == calibration::Method::adaptive;
}

}  // namespace qforge::model::detail
