// recipe_from_json(): the JSON form of docs/RECIPES.md, read strictly. Every field is checked
// for its type and range and named by its path; unknown and duplicate fields are errors, and so
// are fields that do not apply (an axis on block-wise weights), so that a typo never silently
// falls back to a default.
#include <cfloat>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "allowed.h"
#include "field_path.h"
#include "qforge/error.h"
#include "qforge/model/recipe.h"
#include "text.h"

namespace qforge::model {
namespace {

using json = nlohmann::json;
using detail::FieldPath;
namespace text = detail::text;

constexpr const char* kFormat = "qforge.recipe";
constexpr int kVersion = 1;
constexpr int kMaxDepth = 64;  // a recipe needs 6; the limit keeps hostile nesting cheap

// ---- typed access, every failure naming the field ----

std::string type_of(const json& v) { return std::string(v.type_name()); }

void require_object(const json& j, const FieldPath& where) {
  if (!j.is_object()) where.fail("a JSON " + type_of(j) + "; expected an object");
}

// Rejects fields outside `allowed`: a misspelt field must not fall back to a default.
void check_fields(const json& object, const FieldPath& where,
                  std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    (where / text::clip(key, 64)).fail("unknown field; expected one of " + list);
  }
}

const json* find(const json& object, std::string_view key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string get_string(const json& v, const FieldPath& where) {
  if (!v.is_string()) where.fail("a JSON " + type_of(v) + "; expected a string");
  return v.get<std::string>();
}

bool get_bool(const json& v, const FieldPath& where) {
  if (!v.is_boolean()) where.fail("a JSON " + type_of(v) + "; expected true or false");
  return v.get<bool>();
}

std::int64_t get_int(const json& v, const FieldPath& where, std::int64_t lo, std::int64_t hi) {
  if (!v.is_number_integer())
    where.fail((v.is_number() ? "the number " + v.dump() : "a JSON " + type_of(v)) +
               "; expected an integer");
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    where.fail(v.dump() + " is out of range; expected an integer in [" + std::to_string(lo) + ", " +
               std::to_string(hi) + "]");
  const std::int64_t x = v.get<std::int64_t>();
  if (x < lo || x > hi)
    where.fail(std::to_string(x) + " is out of range; expected an integer in [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

double get_number(const json& v, const FieldPath& where) {
  if (!v.is_number()) where.fail("a JSON " + type_of(v) + "; expected a number");
  const double x = v.get<double>();
  if (!std::isfinite(x)) where.fail(text::number(x) + "; expected a finite number");
  return x;
}

template <typename T, std::size_t N, typename Parse>
T get_enum(const json& v, const FieldPath& where, const char* what,
           const std::array<T, N>& expected, Parse parse) {
  const std::string s = get_string(v, where);
  const std::optional<T> parsed = parse(s);
  if (!parsed)
    where.fail("unknown " + std::string(what) + " " + text::quoted(s) + "; expected one of " +
               detail::join_names(expected));
  return *parsed;
}

// ---- the parts of a recipe ----

WeightQuantization read_weights(const json& j, const FieldPath& where) {
  require_object(j, where);
  check_fields(j, where,
               {"dtype", "mapping", "granularity", "axis", "block_size", "observer", "rounding"});
  WeightQuantization w;
  if (const json* v = find(j, "dtype"))
    w.dtype = get_enum(*v, where / "dtype", "dtype", detail::kWeightDTypes, parse_dtype);
  if (const json* v = find(j, "mapping"))
    w.mapping = get_enum(*v, where / "mapping", "mapping", detail::kMappings, parse_mapping);
  if (const json* v = find(j, "granularity"))
    w.granularity = get_enum(*v, where / "granularity", "granularity", detail::kGranularities,
                             parse_granularity);
  const std::string granularity(to_string(w.granularity));
  if (const json* v = find(j, "axis")) {
    if (w.granularity != Granularity::per_channel)
      (where / "axis")
          .fail("an axis applies only to granularity per_channel; this one is " + granularity);
    w.axis = static_cast<int>(get_int(*v, where / "axis", std::numeric_limits<int>::min(),
                                      std::numeric_limits<int>::max()));
  }
  if (const json* v = find(j, "block_size")) {
    if (w.granularity != Granularity::block)
      (where / "block_size")
          .fail("a block size applies only to granularity block; this one is " + granularity);
    w.block_size = get_int(*v, where / "block_size", std::numeric_limits<std::int64_t>::min(),
                           std::numeric_limits<std::int64_t>::max());
  }
  if (const json* v = find(j, "observer"))
    w.observer = get_enum(*v, where / "observer", "weight observer", detail::kWeightObservers,
                          [](std::string_view s) -> std::optional<calibration::Method> {
                            const auto m = calibration::parse_method(s);
                            if (m && detail::contains(detail::kWeightObservers, *m)) return m;
                            return std::nullopt;
                          });
  if (const json* v = find(j, "rounding"))
    w.rounding = get_enum(*v, where / "rounding", "weight rounding", detail::kWeightRoundings,
                          parse_weight_rounding);
  return w;
}

calibration::MethodOptions read_calibration(const json& j, const FieldPath& where) {
  require_object(j, where);
  check_fields(j, where, {"method", "percentile", "percentile_interpolate", "start_bin", "stride"});
  calibration::MethodOptions o;
  if (const json* v = find(j, "method"))
    o.method =
        get_enum(*v, where / "method", "method", detail::kMethods, calibration::parse_method);
  const std::string method(calibration::to_string(o.method));
  auto applies = [&](const char* field, bool uses) {
    const json* v = find(j, field);
    if (v && !uses)
      (where / field)
          .fail("method " + method + " does not use " + field +
                " (percentile and adaptive use percentile options; entropy, mse and "
                "adaptive use start_bin and stride)");
    return v;
  };
  if (const json* v = applies("percentile", detail::method_uses_percentile(o.method)))
    o.percentile = get_number(*v, where / "percentile");
  if (const json* v = applies("percentile_interpolate", detail::method_uses_percentile(o.method)))
    o.percentile_interpolate = get_bool(*v, where / "percentile_interpolate");
  if (const json* v = applies("start_bin", detail::method_uses_bins(o.method)))
    o.start_bin = static_cast<int>(get_int(*v, where / "start_bin", 0, 1 << 30));
  if (const json* v = applies("stride", detail::method_uses_bins(o.method)))
    o.stride = static_cast<int>(get_int(*v, where / "stride", 1, 1 << 30));
  return o;
}

ActivationQuantization read_activations(const json& j, const FieldPath& where) {
  require_object(j, where);
  check_fields(j, where,
               {"mode", "dtype", "mapping", "granularity", "calibration", "scale", "zero_point"});
  ActivationQuantization a;
  if (const json* v = find(j, "mode"))
    a.mode = get_enum(*v, where / "mode", "mode", detail::kActivationModes, parse_activation_mode);
  if (const json* v = find(j, "dtype"))
    a.dtype = get_enum(*v, where / "dtype", "dtype", detail::kActivationDTypes, parse_dtype);
  if (const json* v = find(j, "mapping"))
    a.mapping = get_enum(*v, where / "mapping", "mapping", detail::kMappings, parse_mapping);
  if (const json* v = find(j, "granularity"))
    a.granularity = get_enum(*v, where / "granularity", "granularity", detail::kGranularities,
                             parse_granularity);
  const std::string mode(to_string(a.mode));
  if (const json* v = find(j, "calibration")) {
    if (a.mode != ActivationMode::static_range)
      (where / "calibration").fail("calibration applies only to mode static; this one is " + mode);
    a.calibration = read_calibration(*v, where / "calibration");
  }
  if (const json* v = find(j, "scale")) {
    if (a.mode != ActivationMode::explicit_params)
      (where / "scale").fail("a scale applies only to mode explicit; this one is " + mode);
    const double s = get_number(*v, where / "scale");
    // Decimal text for FLT_MAX ("3.4028235e+38") reads as a double just above it: round to
    // float first (guarded, as converting a double far outside float's range is undefined).
    const float f = s > 0.0 && s < 3.5e38 ? static_cast<float>(s) : 0.0f;
    if (!(std::isnormal(f) && f > 0.0f && f <= FLT_MAX))
      (where / "scale")
          .fail(text::number(s) + "; expected a float32 > 0 in [1.17549435e-38, 3.40282347e+38]");
    a.scale = f;
  }
  if (const json* v = find(j, "zero_point")) {
    if (a.mode != ActivationMode::explicit_params)
      (where / "zero_point")
          .fail("a zero point applies only to mode explicit; this one is " + mode);
    const auto& tr = traits(a.dtype);
    const std::int64_t z =
        get_int(*v, where / "zero_point", std::numeric_limits<std::int32_t>::min(),
                std::numeric_limits<std::int32_t>::max());
    if (z < tr.qmin || z > tr.qmax)
      (where / "zero_point")
          .fail(std::to_string(z) + " is outside " + std::string(tr.name) +
                "; expected a value in [" + std::to_string(tr.qmin) + ", " +
                std::to_string(tr.qmax) + "]");
    a.zero_point = static_cast<std::int32_t>(z);
  }
  return a;
}

// The action part shared by rules and the default: skip, or weights / activations /
// requantization.
std::optional<LayerQuantization> read_action(const json& j, const FieldPath& where) {
  const json* skip = find(j, "skip");
  const json* weights = find(j, "weights");
  const json* activations = find(j, "activations");
  const json* requant = find(j, "requantization");
  if (skip && get_bool(*skip, where / "skip")) {
    if (weights || activations || requant)
      (where / "skip")
          .fail(
              "true keeps the node float, yet weights, activations or "
              "requantization are given; expected one or the other");
    return std::nullopt;
  }
  if (!weights && !activations)
    where.fail(
        "says neither \"skip\": true nor how to quantize; expected \"skip\": true, "
        "\"weights\", \"activations\" or both");
  LayerQuantization l;
  l.weights = weights ? std::optional(read_weights(*weights, where / "weights")) : std::nullopt;
  l.activations = activations ? std::optional(read_activations(*activations, where / "activations"))
                              : std::nullopt;
  if (requant)
    l.requantization =
        get_enum(*requant, where / "requantization", "requantization", detail::kRequantModes,
                 [](std::string_view s) -> std::optional<RequantMode> {
                   for (RequantMode m : detail::kRequantModes)
                     if (to_string(m) == s) return m;
                   return std::nullopt;
                 });
  return l;
}

NodeMatch read_match(const json& j, const FieldPath& where) {
  require_object(j, where);
  check_fields(j, where, {"name_regex", "op_types"});
  NodeMatch m;
  if (const json* v = find(j, "name_regex")) m.name_regex = get_string(*v, where / "name_regex");
  if (const json* v = find(j, "op_types")) {
    if (!v->is_array())
      (where / "op_types")
          .fail("a JSON " + type_of(*v) +
                "; expected an array of op type strings, "
                "e.g. [\"Conv\", \"MatMul\"]");
    for (std::size_t i = 0; i < v->size(); ++i)
      m.op_types.push_back(get_string((*v)[i], (where / "op_types").at(i)));
    if (m.op_types.empty())
      (where / "op_types")
          .fail(
              "empty list; expected at least one op type (leave the field out "
              "to match any op type)");
  }
  return m;
}

Rule read_rule(const json& j, std::size_t index) {
  FieldPath where = FieldPath("rules", "").at(index);
  require_object(j, where);
  std::string label;
  if (const json* v = find(j, "label")) label = get_string(*v, where / "label");
  where = detail::rule_path(index, label);
  check_fields(j, where,
               {"label", "match", "optional", "skip", "weights", "activations", "requantization"});
  Rule r;
  r.label = std::move(label);
  const json* match = find(j, "match");
  if (!match)
    (where / "match").fail("missing; expected {\"name_regex\": ..., \"op_types\": [...]}");
  r.match = read_match(*match, where / "match");
  if (const json* v = find(j, "optional")) r.optional = get_bool(*v, where / "optional");
  r.quantize = read_action(j, where);
  return r;
}

// A first pass over the text with limits the DOM parser lacks: nesting depth (nothing legitimate
// nests deeply, and code walking a DOM may recurse) and duplicate keys (nlohmann keeps the last
// one silently). It is a SAX pass rather than a parser callback because nlohmann 3.11's callback
// parser rescans the enclosing container at every object end: quadratic in the number of rules.
class DocumentGuard {
 public:
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const std::string&) { return true; }
  bool string(std::string&) { return true; }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    if (!open_.empty() && open_.back().is_object && !open_.back().keys.insert(k).second)
      throw Error(ErrorCode::invalid_argument, "recipe: duplicate field " + text::quoted(k) +
                                                   " in one object; expected each field once");
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, ..." -> "parse error at line 1, ..."
    if (const auto close = what.find("] ");
        what.rfind("[json.exception.", 0) == 0 && close != std::string::npos)
      what.erase(0, close + 2);
    throw Error(ErrorCode::corrupt_data, "recipe: not valid JSON: " + text::clip(what, 300));
  }

 private:
  struct Level {
    bool is_object;
    std::set<std::string> keys;
  };
  bool open(bool is_object) {
    if (open_.size() >= static_cast<std::size_t>(kMaxDepth))
      throw Error(ErrorCode::corrupt_data, "recipe: JSON nests deeper than " +
                                               std::to_string(kMaxDepth) +
                                               " levels; a recipe needs at most 6");
    open_.push_back({is_object, {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }
  std::vector<Level> open_;
};

json parse_strict(std::string_view text) {
  DocumentGuard guard;
  json::sax_parse(text.begin(), text.end(), &guard);
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // the guard has seen the same text; not expected
    throw Error(ErrorCode::corrupt_data, std::string("recipe: not valid JSON: ") + e.what());
  }
}

}  // namespace

Recipe recipe_from_json(std::string_view text) {
  const json doc = parse_strict(text);
  const FieldPath top;
  require_object(doc, top);
  const json* format = find(doc, "format");
  if (!format) FieldPath("format", "").fail(std::string("missing; expected \"") + kFormat + "\"");
  if (const std::string f = get_string(*format, FieldPath("format", "")); f != kFormat)
    FieldPath("format", "").fail(text::quoted(f) + "; expected '" + kFormat + "'");
  const json* version = find(doc, "version");
  if (!version) FieldPath("version", "").fail("missing; expected " + std::to_string(kVersion));
  if (const auto v =
          get_int(*version, FieldPath("version", ""), std::numeric_limits<std::int64_t>::min(),
                  std::numeric_limits<std::int64_t>::max());
      v != kVersion)
    FieldPath("version", "")
        .fail(std::to_string(v) + " is not supported; expected " + std::to_string(kVersion));
  // After format and version, so that another kind of file is named as such rather than by
  // its first unknown field.
  check_fields(doc, top, {"format", "version", "default", "rules"});

  Recipe recipe;
  if (const json* d = find(doc, "default")) {
    const FieldPath where("default", "");
    require_object(*d, where);
    check_fields(*d, where, {"skip", "weights", "activations", "requantization"});
    recipe.default_quantize = read_action(*d, where);
  }
  if (const json* rules = find(doc, "rules")) {
    if (!rules->is_array())
      FieldPath("rules", "").fail("a JSON " + type_of(*rules) + "; expected an array of rules");
    recipe.rules.reserve(rules->size());
    for (std::size_t i = 0; i < rules->size(); ++i)
      recipe.rules.push_back(read_rule((*rules)[i], i));
  }
  validate(recipe);
  return recipe;
}

}  // namespace qforge::model
