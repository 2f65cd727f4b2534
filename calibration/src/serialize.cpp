// JSON forms of observers and params (serialize.h, docs/CALIBRATION.md "Files").
#include "qforge/calibration/serialize.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qforge/calibration/histogram_observer.h"
#include "qforge/calibration/minmax.h"
#include "qforge/error.h"
#include "qforge/input_file.h"

namespace qforge::calibration {
namespace {

using json = nlohmann::json;

constexpr const char* kObserverFormat = "qforge.calibration.observer";
constexpr const char* kParamsFormat = "qforge.calibration.params";
constexpr int kVersion = 1;
constexpr float kInf = std::numeric_limits<float>::infinity();

[[noreturn]] void corrupt(const std::string& ctx, const std::string& what) {
  throw Error(ErrorCode::corrupt_data, ctx + ": " + what);
}

// ---- reading with messages that name the field ----

const json& field(const json& j, const std::string& name, const std::string& ctx) {
  if (!j.is_object()) corrupt(ctx, std::string("a JSON ") + j.type_name() + "; expected an object");
  const auto it = j.find(name);
  if (it == j.end()) corrupt(ctx, "missing field '" + name + "'");
  return *it;
}

double number(const json& j, const std::string& name, const std::string& ctx) {
  const json& v = field(j, name, ctx);
  if (!v.is_number())
    corrupt(ctx, "field '" + name + "' is " + v.type_name() + "; expected a number");
  return v.get<double>();
}

std::int64_t integer(const json& j, const std::string& name, const std::string& ctx) {
  const json& v = field(j, name, ctx);
  if (!v.is_number_integer())
    corrupt(ctx, "field '" + name + "' is " + v.type_name() + "; expected an integer");
  // Checked before conversion: an unsigned value above 2^63 - 1 would wrap to a negative one.
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    corrupt(ctx, "field '" + name + "' = " + v.dump() + "; expected a 64-bit signed integer");
  return v.get<std::int64_t>();
}

// A double that a float can hold: converting one outside float's range is undefined behaviour.
float to_float(double d, const std::string& what, const std::string& ctx) {
  if (!(std::fabs(d) <= static_cast<double>(std::numeric_limits<float>::max())))
    corrupt(ctx, what + " = " + std::to_string(d) + "; expected a finite 32-bit float");
  return static_cast<float>(d);
}

int small_int(const json& j, const std::string& name, const std::string& ctx) {
  const std::int64_t v = integer(j, name, ctx);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    corrupt(ctx, "field '" + name + "' = " + std::to_string(v) + "; expected a 32-bit integer");
  return static_cast<int>(v);
}

std::string string(const json& j, const std::string& name, const std::string& ctx) {
  const json& v = field(j, name, ctx);
  if (!v.is_string())
    corrupt(ctx, "field '" + name + "' is " + v.type_name() + "; expected a string");
  return v.get<std::string>();
}

bool boolean(const json& j, const std::string& name, const std::string& ctx) {
  const json& v = field(j, name, ctx);
  if (!v.is_boolean())
    corrupt(ctx, "field '" + name + "' is " + v.type_name() + "; expected true or false");
  return v.get<bool>();
}

const json& array(const json& j, const std::string& name, const std::string& ctx) {
  const json& v = field(j, name, ctx);
  if (!v.is_array())
    corrupt(ctx, "field '" + name + "' is " + v.type_name() + "; expected an array");
  return v;
}

// Floats of an array; null stands for `missing` (+inf or -inf: a channel without data).
std::vector<float> floats(const json& j, const std::string& name, const std::string& ctx,
                          float missing) {
  std::vector<float> out;
  for (const json& v : array(j, name, ctx)) {
    if (v.is_null()) out.push_back(missing);
    else if (v.is_number())
      out.push_back(to_float(v.get<double>(), "an element of '" + name + "'", ctx));
    else corrupt(ctx, "an element of '" + name + "' is " + v.type_name() + "; expected a number");
  }
  return out;
}

std::vector<double> doubles(const json& j, const std::string& name, const std::string& ctx) {
  std::vector<double> out;
  for (const json& v : array(j, name, ctx)) {
    if (!v.is_number())
      corrupt(ctx, "an element of '" + name + "' is " + v.type_name() + "; expected a number");
    out.push_back(v.get<double>());
  }
  return out;
}

json parse(std::string_view text, const std::string& ctx, const char* format) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    corrupt(ctx, std::string("not valid JSON (") + e.what() + "); expected a complete " + format +
                     " document (a truncated or damaged file?)");
  }
  const std::string f = string(j, "format", ctx);
  if (f != format) corrupt(ctx, "format '" + f + "'; expected '" + format + "'");
  const std::int64_t v = integer(j, "version", ctx);
  if (v != kVersion)
    corrupt(ctx, "version " + std::to_string(v) + "; expected " + std::to_string(kVersion));
  return j;
}

// ---- writing ----

json bound(float v) { return std::isfinite(v) ? json(static_cast<double>(v)) : json(nullptr); }

json bounds(const std::vector<float>& v) {
  json a = json::array();
  for (float x : v) a.push_back(bound(x));
  return a;
}

json stats_json(const ObserverStats& s) {
  return {{"batches", s.batches},
          {"empty_batches", s.empty_batches},
          {"values", s.values},
          {"non_finite", s.non_finite}};
}

ObserverStats read_stats(const json& j, const std::string& ctx) {
  const json& s = field(j, "stats", ctx);
  const std::string c = ctx + " stats";
  ObserverStats out{integer(s, "batches", c), integer(s, "empty_batches", c),
                    integer(s, "values", c), integer(s, "non_finite", c)};
  if (out.batches < 0 || out.empty_batches < 0 || out.values < 0 || out.non_finite < 0)
    corrupt(c, "a negative count; expected counts >= 0");
  return out;
}

json method_json(const MethodOptions& o) {
  return {{"method", std::string(to_string(o.method))},
          {"percentile", o.percentile},
          {"percentile_interpolate", o.percentile_interpolate},
          {"start_bin", o.start_bin},
          {"stride", o.stride}};
}

MethodOptions read_method(const json& j, const std::string& ctx) {
  const json& m = field(j, "method", ctx);
  const std::string c = ctx + " method";
  MethodOptions o;
  const std::string name = string(m, "method", c);
  const auto parsed = parse_method(name);
  if (!parsed)
    corrupt(c, "method '" + name + "'; expected minmax, percentile, entropy, mse or adaptive");
  o.method = *parsed;
  o.percentile = number(m, "percentile", c);
  o.percentile_interpolate = boolean(m, "percentile_interpolate", c);
  o.start_bin = small_int(m, "start_bin", c);
  o.stride = small_int(m, "stride", c);
  return o;
}

json histogram_json(const Histogram& h) {
  return {{"limit", static_cast<double>(h.limit())},
          {"min", bound(h.min())},
          {"max", bound(h.max())},
          {"negative", std::vector<double>(h.negative().begin(), h.negative().end())},
          {"positive", std::vector<double>(h.positive().begin(), h.positive().end())}};
}

Histogram read_histogram(const json& j, int bins, const std::string& ctx) {
  const json& mn = field(j, "min", ctx);
  const json& mx = field(j, "max", ctx);
  auto value = [&](const json& v, const char* name, float missing) {
    if (v.is_null()) return missing;
    if (!v.is_number())
      corrupt(ctx, std::string("field '") + name + "' is " + v.type_name() + "; expected a number");
    return to_float(v.get<double>(), std::string("field '") + name + "'", ctx);
  };
  return Histogram::from_parts(bins, to_float(number(j, "limit", ctx), "field 'limit'", ctx),
                               value(mn, "min", kInf), value(mx, "max", -kInf),
                               doubles(j, "negative", ctx), doubles(j, "positive", ctx));
}

std::unique_ptr<Observer> read_observer(std::string_view text, const std::string& ctx) {
  const json j = parse(text, ctx, kObserverFormat);
  const std::string kind = string(j, "kind", ctx);
  const json& axis_json = field(j, "axis", ctx);
  std::optional<int> axis;
  if (!axis_json.is_null()) axis = small_int(j, "axis", ctx);
  const std::int64_t channels = integer(j, "channels", ctx);
  const ObserverStats stats = read_stats(j, ctx);
  // The constructors and restored() validate the state; their errors become corrupt_data.
  try {
    if (kind == "minmax")
      return std::make_unique<MinMaxObserver>(MinMaxObserver::restored(
          axis, channels, stats, floats(j, "lo", ctx, kInf), floats(j, "hi", ctx, -kInf)));
    if (kind == "moving_average_minmax")
      return std::make_unique<MovingAverageMinMaxObserver>(MovingAverageMinMaxObserver::restored(
          to_float(number(j, "averaging_constant", ctx), "field 'averaging_constant'", ctx), axis,
          channels, stats, floats(j, "lo", ctx, kInf), floats(j, "hi", ctx, -kInf)));
    if (kind == "histogram") {
      const int bins = small_int(j, "bins", ctx);
      if (bins < 1 || bins > Histogram::kMaxBins)
        corrupt(ctx, "field 'bins' = " + std::to_string(bins) + "; expected 1 to " +
                         std::to_string(Histogram::kMaxBins));
      std::vector<Histogram> hists;
      const json& list = array(j, "histograms", ctx);
      for (std::size_t i = 0; i < list.size(); ++i)
        hists.push_back(read_histogram(list[i], bins, ctx + " histogram " + std::to_string(i)));
      return std::make_unique<HistogramObserver>(HistogramObserver::restored(
          read_method(j, ctx), bins, axis, channels, stats, std::move(hists)));
    }
  } catch (const Error& e) {
    // Errors of this reader already name the file; those of the validating constructors do
    // not, and become corrupt_data that does.
    if (e.code() == ErrorCode::corrupt_data && std::string_view(e.what()).starts_with(ctx)) throw;
    corrupt(ctx, e.what());
  }
  corrupt(ctx, "observer kind '" + kind + "'; expected minmax, moving_average_minmax or histogram");
}

json params_json(const QuantizationParams& p) {
  const Scheme& s = p.scheme();
  return {
      {"dtype", std::string(name(p.dtype()))},
      {"mapping", std::string(to_string(s.mapping))},
      {"granularity", std::string(to_string(s.granularity))},
      {"axis", s.axis},
      {"block_size", s.block_size},
      {"scales", std::vector<double>(p.scales().begin(), p.scales().end())},
      {"zero_points", std::vector<std::int32_t>(p.zero_points().begin(), p.zero_points().end())}};
}

QuantizationParams read_params(const json& j, const std::string& ctx) {
  const std::string dtype_name = string(j, "dtype", ctx);
  const auto dtype = parse_dtype(dtype_name);
  if (!dtype) corrupt(ctx, "dtype '" + dtype_name + "'; expected int8, uint8, int16, ...");
  const std::string mapping_name = string(j, "mapping", ctx);
  const auto mapping = parse_mapping(mapping_name);
  if (!mapping)
    corrupt(ctx, "mapping '" + mapping_name + "'; expected affine, symmetric or logarithmic");
  const std::string gran_name = string(j, "granularity", ctx);
  const auto gran = parse_granularity(gran_name);
  if (!gran)
    corrupt(ctx, "granularity '" + gran_name + "'; expected per_tensor, per_channel or block");
  Scheme scheme{*mapping, *gran, small_int(j, "axis", ctx), integer(j, "block_size", ctx)};
  std::vector<float> scales;
  for (double d : doubles(j, "scales", ctx))
    scales.push_back(to_float(d, "an element of 'scales'", ctx));
  std::vector<std::int32_t> zps;
  for (const json& v : array(j, "zero_points", ctx)) {
    if (!v.is_number_integer())
      corrupt(ctx, std::string("an element of 'zero_points' is ") + v.type_name() +
                       "; expected an integer");
    const auto z = v.get<std::int64_t>();
    if (z < std::numeric_limits<std::int32_t>::min() ||
        z > std::numeric_limits<std::int32_t>::max())
      corrupt(ctx, "zero point " + std::to_string(z) + "; expected a 32-bit integer");
    zps.push_back(static_cast<std::int32_t>(z));
  }
  try {
    return QuantizationParams(*dtype, scheme, std::move(scales), std::move(zps));
  } catch (const Error& e) {
    corrupt(ctx, e.what());
  }
}

ParamsMap read_params_map(std::string_view text, const std::string& ctx) {
  const json j = parse(text, ctx, kParamsFormat);
  const json& tensors = field(j, "tensors", ctx);
  if (!tensors.is_object())
    corrupt(ctx, std::string("field 'tensors' is ") + tensors.type_name() + "; expected an object");
  ParamsMap out;
  for (const auto& [key, value] : tensors.items())
    out.emplace(key, read_params(value, ctx + " tensor '" + key + "'"));
  return out;
}

}  // namespace

std::string observer_to_json(const Observer& observer) {
  json j = {{"format", kObserverFormat},
            {"version", kVersion},
            {"kind", std::string(observer.kind())},
            {"axis", observer.axis() ? json(*observer.axis()) : json(nullptr)},
            {"channels", observer.channels()},
            {"stats", stats_json(observer.stats())}};
  if (const auto* r = dynamic_cast<const RangeObserver*>(&observer)) {
    j["lo"] = bounds(r->lows());
    j["hi"] = bounds(r->highs());
    if (const auto* m = dynamic_cast<const MovingAverageMinMaxObserver*>(&observer))
      j["averaging_constant"] = static_cast<double>(m->averaging_constant());
  } else if (const auto* h = dynamic_cast<const HistogramObserver*>(&observer)) {
    j["bins"] = h->bins();
    j["method"] = method_json(h->method());
    json list = json::array();
    for (const Histogram& hist : h->histograms()) list.push_back(histogram_json(hist));
    j["histograms"] = std::move(list);
  } else {
    throw Error(ErrorCode::unsupported,
                "observer_to_json: observer kind '" + std::string(observer.kind()) +
                    "'; expected minmax, moving_average_minmax or histogram");
  }
  // Compact: histograms are thousands of numbers, one per line would triple the file.
  return j.dump();
}

// Every access above checks the type first; this turns anything nlohmann might still throw
// into corrupt_data naming the file (or the function), never an nlohmann exception.
template <class F>
auto guarded(const std::string& ctx, F&& read) {
  try {
    return read();
  } catch (const json::exception& e) {
    corrupt(ctx, std::string("unexpected JSON content (") + e.what() + ")");
  }
}

std::unique_ptr<Observer> observer_from_json(std::string_view text) {
  const std::string ctx = "observer_from_json";
  return guarded(ctx, [&] { return read_observer(text, ctx); });
}

void save_observer(const Observer& observer, const std::filesystem::path& path) {
  write_file_atomically(path, observer_to_json(observer));
}

std::unique_ptr<Observer> load_observer(const std::filesystem::path& path) {
  const std::string ctx = "load_observer(" + path.string() + ")";
  return guarded(ctx, [&] { return read_observer(read_input_file(path, ctx), ctx); });
}

std::string params_to_json(const ParamsMap& params) {
  json tensors = json::object();
  for (const auto& [key, p] : params) tensors[key] = params_json(p);
  const json j = {{"format", kParamsFormat}, {"version", kVersion}, {"tensors", tensors}};
  return j.dump(1);
}

ParamsMap params_from_json(std::string_view text) {
  const std::string ctx = "params_from_json";
  return guarded(ctx, [&] { return read_params_map(text, ctx); });
}

void save_params(const ParamsMap& params, const std::filesystem::path& path) {
  write_file_atomically(path, params_to_json(params));
}

ParamsMap load_params(const std::filesystem::path& path) {
  const std::string ctx = "load_params(" + path.string() + ")";
  return guarded(ctx, [&] { return read_params_map(read_input_file(path, ctx), ctx); });
}

}  // namespace qforge::calibration
