// Quantization recipes: which nodes of a model to quantize, and how.
//
// A Recipe is an ordered list of rules plus a default. Each node of a graph, given as a
// (name, op type) pair, is decided by the FIRST rule that matches it; nodes no rule matches take
// the default. A rule matches on a node-name regular expression (RE2, searched anywhere in the
// name like Python's re.search: anchor with ^ and $), on a list of op types (exact,
// case-sensitive), or on both (a node must satisfy both). Its action is either "skip" (the node
// stays float) or a LayerQuantization: weights, activations and requantization settings.
//
//   Recipe r;
//   r.rules.push_back(Rule::skip({.name_regex = "LayerNorm|Softmax"}));
//   r.rules.push_back({.label = "convs", .match = {.op_types = {"Conv", "Gemm", "MatMul"}},
//                      .quantize = LayerQuantization{}});          // int8 per-channel + static
//                      int8
//   RecipeResolution res = resolve(r, nodes);                       // throws if a rule is unused
//   std::cout << format_report(r, res, nodes);
//
// A rule that decides no node is an error unless it is marked optional: a pattern that matches
// nothing, or one whose every match was already taken by an earlier rule (the usual mistake
// with first-match-wins ordering), is almost always a typo or a misordering, and silently
// quantizing the layer the user wanted to keep float is the worst outcome (NNCF's `validate`).
//
// The same recipe as JSON is described in docs/RECIPES.md; recipe_from_json / recipe_to_json
// convert both ways and every error names the field, e.g.
//   "rules[2].weights.dtype: unknown dtype 'int3'; expected one of int8, uint8, int16, int4".
// A recipe states intent: what a setting means for a particular op (which tensor is the
// weight, which axis is its output channel) is for the quantize transform to decide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/calibration/methods.h"
#include "qforge/dtype.h"
#include "qforge/model/recipe_export.h"
#include "qforge/op_desc.h"
#include "qforge/scheme.h"

namespace qforge::model {

// ---- what a rule does ----

// How a weight's values become codes once each group's range is chosen.
enum class WeightRounding : std::uint8_t {
  nearest,  // "nearest": each value to its nearest code (reference::quantize)
  // "gptq": GPTQ (Frantar et al. 2022): the input dimension K in order, each rounding error spread
  // over the values not yet rounded through the inverse Hessian of the layer's calibration
  // inputs, so the layer's output on those inputs moves least. Needs calibration data; MatMul
  // and Gemm only (qforge/model/gptq.h).
  gptq,
};
QFORGE_RECIPE_API std::string_view to_string(WeightRounding r) noexcept;  // "nearest", "gptq"
QFORGE_RECIPE_API std::optional<WeightRounding> parse_weight_rounding(
    std::string_view text) noexcept;

// Weight quantization. Defaults: int8, symmetric, per output channel (TFLite's int8 spec).
struct WeightQuantization {
  DType dtype = DType::int8;             // int8, uint8, int16 or int4
  Mapping mapping = Mapping::symmetric;  // symmetric or affine
  Granularity granularity = Granularity::per_channel;
  // per_channel only: the weight's axis that carries the channels (negative counts from the
  // end). Unset: the op's output-channel axis, chosen by the transform (Conv 0, Gemm 0 or 1 by
  // transB, MatMul -1), so one rule serves Conv, Gemm and MatMul alike.
  std::optional<int> axis;
  // block only: consecutive elements sharing a scale, a power of two in [2, 65536]. Blocks run
  // along the reduction (input) dimension of the weight.
  std::int64_t block_size = kDefaultBlockSize;
  // How each group's range (the tensor, a channel or a block) is chosen: minmax, its plain
  // min/max; or mse, the clipped range of least squared round-trip error on the group's own
  // values (qforge/model/weight_range.h). Only these two of calibration's methods apply here:
  // the others read a histogram of many batches, a weight group is a few exact values.
  calibration::Method observer = calibration::Method::minmax;
  // How values become codes within those ranges. gptq with block granularity chooses each
  // block's range (by the observer) when its turn comes, on the values as earlier errors left
  // them; per tensor and per channel ranges come first, from the float weight.
  WeightRounding rounding = WeightRounding::nearest;

  friend bool operator==(const WeightQuantization&, const WeightQuantization&) = default;
};

enum class ActivationMode : std::uint8_t {
  static_range,     // "static": (scale, zero point) fixed ahead of time by calibration
  dynamic,          // "dynamic": computed from each batch's min and max at run time
  explicit_params,  // "explicit": the scale and zero point written in the recipe
};
QFORGE_RECIPE_API std::string_view to_string(ActivationMode m) noexcept;  // "static", ...
QFORGE_RECIPE_API std::optional<ActivationMode> parse_activation_mode(
    std::string_view text) noexcept;

// Activation quantization (the node's inputs and output), always per tensor. Defaults: static
// int8 affine with calibration's default method (entropy); ONNX Runtime's dynamic mode and its
// x86 kernels want uint8, which is one field away.
struct ActivationQuantization {
  ActivationMode mode = ActivationMode::static_range;
  DType dtype = DType::int8;                          // int8, uint8 or int16
  Mapping mapping = Mapping::affine;                  // affine or symmetric
  Granularity granularity = Granularity::per_tensor;  // only per_tensor is valid
  // static only: how calibration turns the observed histogram into a range.
  calibration::MethodOptions calibration{};
  // explicit only: the scale (finite, > 0, a normal float32) and zero point (inside the
  // dtype's range; required for affine, and for symmetric it may only restate the fixed one).
  std::optional<float> scale;
  std::optional<std::int32_t> zero_point;

  QFORGE_RECIPE_API static ActivationQuantization static_calibrated(
      DType dtype = DType::int8, calibration::Method method = calibration::MethodOptions{}.method);
  QFORGE_RECIPE_API static ActivationQuantization dynamic_per_batch(DType dtype = DType::uint8);
  QFORGE_RECIPE_API static ActivationQuantization explicit_affine(DType dtype, float scale,
                                                                  std::int32_t zero_point);
  QFORGE_RECIPE_API static ActivationQuantization explicit_symmetric(DType dtype, float scale);

  friend bool operator==(const ActivationQuantization&, const ActivationQuantization&) = default;
};

// What a matched node becomes. Either part may be absent: weights only is weight-only
// quantization (activations stay float, e.g. int4 block-wise LLM weights); activations only
// suits ops without weights (Add, MaxPool, Concat). At least one must be present.
struct LayerQuantization {
  std::optional<WeightQuantization> weights = WeightQuantization{};
  std::optional<ActivationQuantization> activations = ActivationQuantization{};
  // How an int32 accumulator becomes the integer output (static or explicit activations only):
  // float_multiplier (ONNX QLinear ops) or fixed_point (TFLite integer-only; it needs int8 or
  // int4 symmetric weights per tensor or per channel, and int16 activations symmetric).
  RequantMode requantization = RequantMode::float_multiplier;

  friend bool operator==(const LayerQuantization&, const LayerQuantization&) = default;
};

// ---- which nodes a rule applies to ----

struct NodeMatch {
  std::optional<std::string> name_regex;  // RE2 syntax, partial match; non-empty when set
  std::vector<std::string> op_types;      // exact op types; empty means any
  friend bool operator==(const NodeMatch&, const NodeMatch&) = default;
};

struct Rule {
  std::string label;                          // optional human name, shown in messages and reports
  NodeMatch match;                            // at least one of name_regex and op_types
  std::optional<LayerQuantization> quantize;  // nullopt: skip, the node stays float
  bool optional = false;                      // true: deciding no node is not an error

  QFORGE_RECIPE_API static Rule skip(NodeMatch match, std::string label = {});
  friend bool operator==(const Rule&, const Rule&) = default;
};

struct Recipe {
  std::vector<Rule> rules;
  // For nodes that no rule matches; nullopt (the default) keeps them float, so a recipe
  // quantizes exactly what it names.
  std::optional<LayerQuantization> default_quantize;
  friend bool operator==(const Recipe&, const Recipe&) = default;
};

// Throws qforge::Error (invalid_argument) for the first invalid setting, naming it by its JSON
// path ("rules[2].activations.dtype: int4 ..."; "default.weights..."): unsupported dtypes and
// mappings, activations not per tensor, a block size that is not a power of two in range,
// explicit scales that are not finite normal floats > 0, zero points outside the dtype, fields
// set where they do not apply (an axis on block-wise weights, a scale in static mode, non-default
// calibration options outside static mode), fixed-point requantization without integer-only
// settings, an empty or uncompilable regex (RE2's message is quoted).
QFORGE_RECIPE_API void validate(const Recipe& recipe);

// ---- applying a recipe to a graph ----

// A node as the recipe sees it. Names need not be unique or non-empty (ONNX allows both);
// nodes are identified by their position.
struct NodeRef {
  std::string_view name;
  std::string_view op_type;
};

inline constexpr std::size_t kDefaultRule = std::numeric_limits<std::size_t>::max();

struct NodeDecision {
  std::size_t rule = kDefaultRule;            // index into Recipe::rules, or kDefaultRule
  std::optional<LayerQuantization> quantize;  // nullopt: the node stays float
  bool by_default() const noexcept { return rule == kDefaultRule; }
};

struct RuleMatches {
  std::vector<std::size_t> decided;   // nodes this rule decided (its first matches), ascending
  std::vector<std::size_t> shadowed;  // nodes it matched that an earlier rule had decided
};

struct RecipeResolution {
  std::vector<NodeDecision> nodes;      // one per node, in the order given
  std::vector<RuleMatches> rules;       // one per rule, in recipe order
  std::vector<std::size_t> by_default;  // nodes no rule matched, ascending
};

// Decides every node. Validates the recipe first. Throws qforge::Error (invalid_argument) when a
// non-optional rule decides no node, listing every such rule (index, label, pattern and op
// types) with a hint: the nodes whose names are closest to its pattern, the op types present,
// or the earlier rules that took its matches. Linear in nodes x rules (every rule is tested on
// every node, so that the report can show shadowed matches); RE2 matching is linear in the
// name's length whatever the pattern.
QFORGE_RECIPE_API RecipeResolution resolve(const Recipe& recipe, std::span<const NodeRef> nodes);

// A human-readable account: for each rule, what it decided and what it matched in vain; then
// the nodes left to the default. `nodes` must be the span given to resolve().
QFORGE_RECIPE_API std::string format_report(const Recipe& recipe,
                                            const RecipeResolution& resolution,
                                            std::span<const NodeRef> nodes);

// One line: "weights int8 symmetric per_channel | activations static int8 affine (entropy) |
// requantization float_multiplier", or "float" for nullopt.
QFORGE_RECIPE_API std::string describe(const std::optional<LayerQuantization>& quantize);
// "rules[3] 'attention'" (the label only when there is one).
QFORGE_RECIPE_API std::string rule_name(const Recipe& recipe, std::size_t index);

// ---- JSON (docs/RECIPES.md) ----

// Parses and validates a recipe. Unknown fields, wrong types and out-of-range numbers are errors
// naming the field (invalid_argument); text that is not JSON, or nests deeper than 64 levels,
// is corrupt_data with the parser's position. Safe on hostile input (the entry point for a
// fuzzing harness): no recursion on the input's depth, linear-time regexes.
QFORGE_RECIPE_API Recipe recipe_from_json(std::string_view text);
// Every field written out, defaults included, so a saved recipe documents itself; parsing the
// result gives back an equal Recipe.
QFORGE_RECIPE_API std::string recipe_to_json(const Recipe& recipe);

inline constexpr std::size_t kMaxRecipeFileBytes = std::size_t{16} << 20;  // 16 MiB
// Reads a regular file of at most kMaxRecipeFileBytes; every error message starts with the path.
QFORGE_RECIPE_API Recipe load_recipe(const std::filesystem::path& path);
// Validates, then writes atomically (temporary file, fsync, rename).
QFORGE_RECIPE_API void save_recipe(const Recipe& recipe, const std::filesystem::path& path);

}  // namespace qforge::model
