// recipe_to_json(): every setting written out, so a saved recipe documents itself and reads
// back to an equal Recipe.
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "allowed.h"
#include "qforge/model/recipe.h"

namespace qforge::model {
namespace {

using ojson = nlohmann::ordered_json;

// A float as the double the reader turns back into the same float: its shortest decimal form
// when that survives decimal -> double -> float (almost always, and it reads well), else the
// float's exact value.
double float_for_json(float f) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf - 1, f);
  *r.ptr = '\0';
  const double shortest = std::strtod(buf, nullptr);
  return static_cast<float>(shortest) == f ? shortest : static_cast<double>(f);
}

ojson weights_json(const WeightQuantization& w) {
  ojson j;
  j["dtype"] = name(w.dtype);
  j["mapping"] = to_string(w.mapping);
  j["granularity"] = to_string(w.granularity);
  if (w.axis) j["axis"] = *w.axis;
  if (w.granularity == Granularity::block) j["block_size"] = w.block_size;
  // Written only when not the default, so recipes that predate the field read back unchanged.
  if (w.observer != calibration::Method::minmax) j["observer"] = calibration::to_string(w.observer);
  if (w.rounding != WeightRounding::nearest) j["rounding"] = to_string(w.rounding);
  return j;
}

ojson calibration_json(const calibration::MethodOptions& o) {
  ojson j;
  j["method"] = calibration::to_string(o.method);
  if (detail::method_uses_percentile(o.method)) {
    j["percentile"] = o.percentile;
    j["percentile_interpolate"] = o.percentile_interpolate;
  }
  if (detail::method_uses_bins(o.method)) {
    j["start_bin"] = o.start_bin;
    j["stride"] = o.stride;
  }
  return j;
}

ojson activations_json(const ActivationQuantization& a) {
  ojson j;
  j["mode"] = to_string(a.mode);
  j["dtype"] = name(a.dtype);
  j["mapping"] = to_string(a.mapping);
  j["granularity"] = to_string(a.granularity);
  if (a.mode == ActivationMode::static_range) j["calibration"] = calibration_json(a.calibration);
  if (a.scale) j["scale"] = float_for_json(*a.scale);
  if (a.zero_point) j["zero_point"] = *a.zero_point;
  return j;
}

void put_action(ojson& j, const std::optional<LayerQuantization>& q) {
  if (!q) {
    j["skip"] = true;
    return;
  }
  if (q->weights) j["weights"] = weights_json(*q->weights);
  if (q->activations) {
    j["activations"] = activations_json(*q->activations);
    j["requantization"] = to_string(q->requantization);
  }
}

}  // namespace

std::string recipe_to_json(const Recipe& recipe) {
  validate(recipe);  // only valid recipes are written, so every written file reads back
  ojson doc;
  doc["format"] = "qforge.recipe";
  doc["version"] = 1;
  ojson def = ojson::object();
  put_action(def, recipe.default_quantize);
  doc["default"] = std::move(def);
  ojson rules = ojson::array();
  for (const Rule& r : recipe.rules) {
    ojson j;
    if (!r.label.empty()) j["label"] = r.label;
    ojson match = ojson::object();
    if (r.match.name_regex) match["name_regex"] = *r.match.name_regex;
    if (!r.match.op_types.empty()) match["op_types"] = r.match.op_types;
    j["match"] = std::move(match);
    j["optional"] = r.optional;
    put_action(j, r.quantize);
    rules.push_back(std::move(j));
  }
  doc["rules"] = std::move(rules);
  return doc.dump(2) + "\n";
}

}  // namespace qforge::model
