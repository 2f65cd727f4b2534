// Names of recipe settings, the convenience constructors, and one-line descriptions.
#include "allowed.h"
#include "qforge/model/recipe.h"
#include "text.h"

namespace qforge::model {

std::string_view to_string(ActivationMode m) noexcept {
  switch (m) {
    case ActivationMode::static_range: return "static";
    case ActivationMode::dynamic: return "dynamic";
    case ActivationMode::explicit_params: return "explicit";
  }
  return "unknown";
}

std::optional<ActivationMode> parse_activation_mode(std::string_view text) noexcept {
  for (ActivationMode m : detail::kActivationModes)
    if (to_string(m) == text) return m;
  return std::nullopt;
}

std::string_view to_string(WeightRounding r) noexcept {
  switch (r) {
    case WeightRounding::nearest: return "nearest";
    case WeightRounding::gptq: return "gptq";
  }
  return "unknown";
}

std::optional<WeightRounding> parse_weight_rounding(std::string_view text) noexcept {
  for (WeightRounding r : detail::kWeightRoundings)
    if (to_string(r) == text) return r;
  return std::nullopt;
}

ActivationQuantization ActivationQuantization::static_calibrated(DType dtype,
                                                                 calibration::Method method) {
  ActivationQuantization a;
  a.mode = ActivationMode::static_range;
  a.dtype = dtype;
  a.calibration.method = method;
  return a;
}

ActivationQuantization ActivationQuantization::dynamic_per_batch(DType dtype) {
  ActivationQuantization a;
  a.mode = ActivationMode::dynamic;
  a.dtype = dtype;
  return a;
}

ActivationQuantization ActivationQuantization::explicit_affine(DType dtype, float scale,
                                                               std::int32_t zero_point) {
  ActivationQuantization a;
  a.mode = ActivationMode::explicit_params;
  a.dtype = dtype;
  a.scale = scale;
  a.zero_point = zero_point;
  return a;
}

ActivationQuantization ActivationQuantization::explicit_symmetric(DType dtype, float scale) {
  ActivationQuantization a;
  a.mode = ActivationMode::explicit_params;
  a.dtype = dtype;
  a.mapping = Mapping::symmetric;
  a.scale = scale;
  return a;
}

Rule Rule::skip(NodeMatch match, std::string label) {
  Rule r;
  r.label = std::move(label);
  r.match = std::move(match);
  r.quantize = std::nullopt;
  return r;
}

std::string describe(const std::optional<LayerQuantization>& q) {
  if (!q) return "float";
  std::string out;
  if (q->weights) {
    const WeightQuantization& w = *q->weights;
    out += "weights " + std::string(name(w.dtype)) + " " + std::string(to_string(w.mapping)) + " " +
           std::string(to_string(w.granularity));
    if (w.granularity == Granularity::per_channel)
      out += w.axis ? "(axis " + std::to_string(*w.axis) + ")" : "(output channel)";
    if (w.granularity == Granularity::block) out += "(" + std::to_string(w.block_size) + ")";
    if (w.observer != calibration::Method::minmax)
      out += " " + std::string(calibration::to_string(w.observer)) + "-range";
    if (w.rounding != WeightRounding::nearest)
      out += " " + std::string(to_string(w.rounding)) + "-rounded";
  } else {
    out += "weights float";
  }
  out += " | ";
  if (q->activations) {
    const ActivationQuantization& a = *q->activations;
    out += "activations " + std::string(to_string(a.mode)) + " " + std::string(name(a.dtype)) +
           " " + std::string(to_string(a.mapping));
    if (a.mode == ActivationMode::static_range)
      out += " (" + std::string(calibration::to_string(a.calibration.method)) + ")";
    if (a.mode == ActivationMode::explicit_params && a.scale) {
      out += " (scale " + detail::text::number(*a.scale);
      if (a.zero_point) out += ", zero point " + std::to_string(*a.zero_point);
      out += ")";
    }
    out += " | requantization " + std::string(to_string(q->requantization));
  } else {
    out += "activations float";
  }
  return out;
}

std::string rule_name(const Recipe& recipe, std::size_t index) {
  if (index == kDefaultRule) return "default";
  std::string out = "rules[" + std::to_string(index) + "]";
  if (index < recipe.rules.size() && !recipe.rules[index].label.empty())
    out += " " + detail::text::quoted(recipe.rules[index].label);
  return out;
}

}  // namespace qforge::model
