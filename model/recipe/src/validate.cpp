// Validation of recipes (recipe.h: validate) and compilation of their rules.
#include <re2/re2.h>

#include <bit>
#include <cmath>

#include "allowed.h"
#include "compiled_rule.h"
#include "field_path.h"
#include "qforge/error.h"
#include "text.h"

namespace qforge::model {
namespace detail {
namespace {

constexpr std::int64_t kMaxBlockSize = std::int64_t{1} << 16;

void validate_weights(const WeightQuantization& w, const FieldPath& where) {
  if (!contains(kWeightDTypes, w.dtype))
    (where / "dtype")
        .fail("dtype " + std::string(name(w.dtype)) +
              " is not supported for weights; expected one of " + join_names(kWeightDTypes));
  if (!contains(kMappings, w.mapping))
    (where / "mapping")
        .fail("mapping " + std::string(to_string(w.mapping)) +
              " is not supported by recipes; expected symmetric or affine");
  if (!contains(kGranularities, w.granularity))
    (where / "granularity")
        .fail("unknown granularity value; expected one of " + join_names(kGranularities));
  if (!contains(kWeightObservers, w.observer))
    (where / "observer")
        .fail("weight observer " + std::string(calibration::to_string(w.observer)) +
              " is not supported; expected one of " + join_names(kWeightObservers));
  if (!contains(kWeightRoundings, w.rounding))
    (where / "rounding")
        .fail("unknown weight rounding value; expected one of " + join_names(kWeightRoundings));
  if (w.axis && w.granularity != Granularity::per_channel)
    (where / "axis")
        .fail("an axis applies only to granularity per_channel; this one is " +
              std::string(to_string(w.granularity)));
  if (w.granularity == Granularity::block) {
    if (w.block_size < 2 || w.block_size > kMaxBlockSize ||
        !std::has_single_bit(static_cast<std::uint64_t>(w.block_size)))
      (where / "block_size")
          .fail(std::to_string(w.block_size) + "; expected a power of two from 2 to 65536");
  } else if (w.block_size != kDefaultBlockSize) {
    (where / "block_size")
        .fail("a block size applies only to granularity block; this one is " +
              std::string(to_string(w.granularity)));
  }
}

void validate_calibration(const calibration::MethodOptions& o, const FieldPath& where) {
  if (!contains(kMethods, o.method))
    (where / "method").fail("unknown method value; expected one of " + join_names(kMethods));
  const calibration::MethodOptions defaults;
  const std::string method(calibration::to_string(o.method));
  if (!method_uses_percentile(o.method)) {
    if (o.percentile != defaults.percentile)
      (where / "percentile").fail("method " + method + " does not use a percentile");
    if (o.percentile_interpolate != defaults.percentile_interpolate)
      (where / "percentile_interpolate").fail("method " + method + " does not use a percentile");
  }
  if (!method_uses_bins(o.method)) {
    if (o.start_bin != defaults.start_bin)
      (where / "start_bin").fail("method " + method + " has no candidate bins");
    if (o.stride != defaults.stride)
      (where / "stride").fail("method " + method + " has no candidate bins");
  }
  if (!(o.percentile > 0.0 && o.percentile <= 100.0))
    (where / "percentile").fail(text::number(o.percentile) + "; expected a value in (0, 100]");
  if (o.start_bin < 0) (where / "start_bin").fail(std::to_string(o.start_bin) + "; expected >= 0");
  if (o.stride < 1) (where / "stride").fail(std::to_string(o.stride) + "; expected >= 1");
  calibration::validate(o);  // calibration's own rules, should they grow
}

void validate_activations(const ActivationQuantization& a, const FieldPath& where) {
  if (!contains(kActivationModes, a.mode))
    (where / "mode").fail("unknown mode value; expected one of " + join_names(kActivationModes));
  if (!contains(kActivationDTypes, a.dtype))
    (where / "dtype")
        .fail("dtype " + std::string(name(a.dtype)) +
              " is not supported for activations; expected one of " +
              join_names(kActivationDTypes));
  if (!contains(kMappings, a.mapping))
    (where / "mapping")
        .fail("mapping " + std::string(to_string(a.mapping)) +
              " is not supported by recipes; expected symmetric or affine");
  if (a.granularity != Granularity::per_tensor)
    (where / "granularity")
        .fail(std::string(to_string(a.granularity)) +
              ": activations are quantized per tensor; per_channel and block "
              "apply to weights");
  const std::string mode(to_string(a.mode));
  if (a.mode == ActivationMode::static_range) {
    validate_calibration(a.calibration, where / "calibration");
  } else if (!(a.calibration == calibration::MethodOptions{})) {
    (where / "calibration").fail("calibration options apply to mode static; this one is " + mode);
  }
  if (a.mode != ActivationMode::explicit_params) {
    if (a.scale)
      (where / "scale").fail("a scale applies only to mode explicit; this one is " + mode);
    if (a.zero_point)
      (where / "zero_point")
          .fail("a zero point applies only to mode explicit; this one is " + mode);
    return;
  }
  if (!a.scale) (where / "scale").fail("missing; mode explicit needs a scale");
  if (!(std::isfinite(*a.scale) && *a.scale > 0.0f && std::isnormal(*a.scale)))
    (where / "scale")
        .fail(text::number(*a.scale) +
              "; expected a finite float32 > 0 (normal, at least 1.17549435e-38)");
  const auto& tr = traits(a.dtype);
  if (a.mapping == Mapping::symmetric) {
    const std::int32_t z = symmetric_zero_point(a.dtype);
    if (a.zero_point && *a.zero_point != z)
      (where / "zero_point")
          .fail(std::to_string(*a.zero_point) + "; symmetric " + std::string(tr.name) +
                " has zero point " + std::to_string(z) + " (leave it out or use affine)");
    return;
  }
  if (!a.zero_point)
    (where / "zero_point").fail("missing; mode explicit with affine mapping needs a zero point");
  if (*a.zero_point < tr.qmin || *a.zero_point > tr.qmax)
    (where / "zero_point")
        .fail(std::to_string(*a.zero_point) + " is outside " + std::string(tr.name) +
              "; expected a value in [" + std::to_string(tr.qmin) + ", " + std::to_string(tr.qmax) +
              "]");
}

// Integer-only execution (TFLite's int8 spec, CMSIS-NN's 16x8 mode): every scale is folded into
// an integer multiplier and shift, so nothing may need a float at run time.
void validate_fixed_point(const LayerQuantization& l, const FieldPath& where) {
  const FieldPath field = where / "requantization";
  if (!l.activations)
    field.fail(
        "fixed_point needs integer outputs, but this rule leaves activations float; "
        "expected float_multiplier or static/explicit activations");
  if (l.activations->mode == ActivationMode::dynamic)
    field.fail(
        "fixed_point needs scales known ahead of time, but activations are dynamic; "
        "expected float_multiplier or activations static/explicit");
  if (l.activations->dtype == DType::int16 && l.activations->mapping != Mapping::symmetric)
    field.fail(
        "fixed_point with int16 activations needs them symmetric (zero point 0, as in "
        "TFLite's 16x8 mode); these are affine");
  if (!l.weights) return;
  const WeightQuantization& w = *l.weights;
  if (w.dtype != DType::int8 && w.dtype != DType::int4)
    field.fail("fixed_point needs int8 or int4 weights (int32 accumulation); these are " +
               std::string(name(w.dtype)));
  if (w.mapping != Mapping::symmetric)
    field.fail("fixed_point needs symmetric weights (zero point 0); these are affine");
  if (w.granularity == Granularity::block)
    field.fail(
        "fixed_point cannot rescale block by block inside an integer accumulation; "
        "expected weights per_tensor or per_channel");
}

}  // namespace

void validate_layer(const LayerQuantization& l, const FieldPath& where) {
  if (!l.weights && !l.activations)
    where.fail(
        "quantizes neither weights nor activations; expected at least one, or skip to "
        "keep the node float");
  if (l.weights) validate_weights(*l.weights, where / "weights");
  if (l.activations) validate_activations(*l.activations, where / "activations");
  if (!contains(kRequantModes, l.requantization))
    (where / "requantization").fail("unknown value; expected one of " + join_names(kRequantModes));
  if (l.requantization == RequantMode::fixed_point) validate_fixed_point(l, where);
}

void validate_match(const NodeMatch& m, const FieldPath& where) {
  if (!m.name_regex && m.op_types.empty())
    where.fail(
        "matches on nothing; expected name_regex, op_types or both (the default already "
        "covers every node no rule matches)");
  if (m.name_regex && m.name_regex->empty())
    (where / "name_regex")
        .fail(
            "empty pattern; expected a regular expression (\".\" matches "
            "every named node)");
  for (std::size_t i = 0; i < m.op_types.size(); ++i)
    if (m.op_types[i].empty()) (where / "op_types").at(i).fail("empty op type");
}

std::unique_ptr<re2::RE2> compile_pattern(const std::string& pattern, const FieldPath& where) {
  re2::RE2::Options options;
  options.set_log_errors(false);  // the message goes into the qforge::Error, not to stderr
  auto re = std::make_unique<re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok())
    where.fail("invalid regular expression " + text::quoted(pattern) + ": " +
               text::clip(re->error()) +
               " (RE2 syntax: https://github.com/google/re2/wiki/Syntax)");
  return re;
}

bool pattern_matches(const re2::RE2& re, std::string_view text) {
  return re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re);
}

bool CompiledRule::name_matches(std::string_view name) const {
  return !name_regex || pattern_matches(*name_regex, name);
}

bool CompiledRule::op_type_matches(std::string_view op_type) const {
  if (rule->match.op_types.empty()) return true;
  for (const std::string& t : rule->match.op_types)
    if (t == op_type) return true;
  return false;
}

std::vector<CompiledRule> compile_recipe(const Recipe& recipe) {
  std::vector<CompiledRule> out;
  out.reserve(recipe.rules.size());
  for (std::size_t i = 0; i < recipe.rules.size(); ++i) {
    const Rule& rule = recipe.rules[i];
    const FieldPath where = rule_path(i, rule.label);
    validate_match(rule.match, where / "match");
    if (rule.quantize) validate_layer(*rule.quantize, where);
    CompiledRule compiled;
    compiled.rule = &rule;
    if (rule.match.name_regex)
      compiled.name_regex = compile_pattern(*rule.match.name_regex, where / "match" / "name_regex");
    out.push_back(std::move(compiled));
  }
  if (recipe.default_quantize) validate_layer(*recipe.default_quantize, FieldPath("default", ""));
  return out;
}

}  // namespace detail

void validate(const Recipe& recipe) { (void)detail::compile_recipe(recipe); }

}  // namespace qforge::model
