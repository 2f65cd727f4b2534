// CalibrationResult to and from JSON: per tensor, the params and the settings that made them,
// so a calibration can be saved and a quantized model built later without the data.
#include <nlohmann/json.hpp>

#include "qforge/dtype.h"
#include "qforge/error.h"
#include "qforge/model/calibrate.h"

namespace qforge::model {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, "calibration JSON: " + where + ": " + what);
}

template <class T, class Parse>
T parse_enum(const json& j, const std::string& where, Parse parse, const char* expected) {
  if (!j.is_string()) bad(where, std::string("expected a string, one of ") + expected);
  const auto v = parse(j.get<std::string>());
  if (!v) bad(where, "unknown value '" + j.get<std::string>() + "'; expected one of " + expected);
  return *v;
}

const json& field(const json& j, const std::string& where, const char* key) {
  if (!j.is_object() || !j.contains(key)) bad(where, std::string("missing field '") + key + "'");
  return j.at(key);
}

}  // namespace

std::string CalibrationResult::to_json() const {
  json tensors_json = json::object();
  for (const auto& [name, t] : tensors) {
    const auto& m = t.settings.calibration;
    tensors_json[name] = {
        {"dtype", std::string(qforge::name(t.params.dtype()))},
        {"mapping", std::string(to_string(t.params.scheme().mapping))},
        {"scale", t.params.scale()},
        {"zero_point", t.params.zero_point()},
        {"calibration",
         {{"method", std::string(calibration::to_string(m.method))},
          {"percentile", m.percentile},
          {"percentile_interpolate", m.percentile_interpolate},
          {"start_bin", m.start_bin},
          {"stride", m.stride}}},
        {"consumers", t.consumers},
        {"batches", t.stats.batches},
        {"values", t.stats.values},
        {"non_finite", t.stats.non_finite},
    };
  }
  return json{{"tensors", tensors_json}}.dump(2) + "\n";
}

CalibrationResult CalibrationResult::from_json(std::string_view text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ErrorCode::corrupt_data, std::string("calibration JSON: ") + e.what());
  }
  const json& tensors_json = field(root, "top level", "tensors");
  if (!tensors_json.is_object()) bad("tensors", "expected an object");
  CalibrationResult result;
  for (const auto& [name, t] : tensors_json.items()) {
    const std::string where = "tensors." + name;
    try {
      ActivationQuantization s;
      s.mode = ActivationMode::static_range;
      s.dtype = parse_enum<DType>(field(t, where, "dtype"), where + ".dtype", parse_dtype,
                                  "int8, uint8, int16");
      s.mapping = parse_enum<Mapping>(field(t, where, "mapping"), where + ".mapping", parse_mapping,
                                      "affine, symmetric");
      const json& c = field(t, where, "calibration");
      s.calibration.method = parse_enum<calibration::Method>(
          field(c, where + ".calibration", "method"), where + ".calibration.method",
          calibration::parse_method, "minmax, percentile, entropy, mse, adaptive");
      s.calibration.percentile = field(c, where, "percentile").get<double>();
      s.calibration.percentile_interpolate = field(c, where, "percentile_interpolate").get<bool>();
      s.calibration.start_bin = field(c, where, "start_bin").get<int>();
      s.calibration.stride = field(c, where, "stride").get<int>();
      const float scale = field(t, where, "scale").get<float>();
      const auto zp = field(t, where, "zero_point").get<std::int32_t>();
      QuantizationParams params = s.mapping == Mapping::symmetric
                                      ? QuantizationParams::per_tensor_symmetric(s.dtype, scale)
                                      : QuantizationParams::per_tensor_affine(s.dtype, scale, zp);
      if (params.zero_point() != zp) bad(where + ".zero_point", "differs from the mapping's");
      calibration::ObserverStats stats;
      stats.batches = field(t, where, "batches").get<std::int64_t>();
      stats.values = field(t, where, "values").get<std::int64_t>();
      stats.non_finite = field(t, where, "non_finite").get<std::int64_t>();
      result.tensors.emplace(
          name,
          TensorCalibration{name, field(t, where, "consumers").get<std::vector<std::string>>(), s,
                            std::move(params), stats});
    } catch (const json::exception& e) {
      bad(where, e.what());
    }
  }
  return result;
}

}  // namespace qforge::model
