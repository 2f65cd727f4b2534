// resolve(): first matching rule wins; rules that decide nothing are errors unless optional.
#include "compiled_rule.h"
#include "hints.h"
#include "qforge/error.h"
#include "text.h"

namespace qforge::model {
namespace {

constexpr std::size_t kListedRules = 20;  // unused rules explained in one error message

std::string rule_summary(const Recipe& recipe, std::size_t index) {
  const Rule& r = recipe.rules[index];
  std::string out = rule_name(recipe, index) + " (";
  if (r.match.name_regex) out += "name_regex " + detail::text::quoted(*r.match.name_regex);
  if (!r.match.op_types.empty()) {
    if (r.match.name_regex) out += ", ";
    out += "op_types [";
    for (std::size_t i = 0; i < r.match.op_types.size(); ++i)
      out += (i ? ", " : "") + detail::text::clip(r.match.op_types[i]);
    out += "]";
  }
  return out + ")";
}

}  // namespace

RecipeResolution resolve(const Recipe& recipe, std::span<const NodeRef> nodes) {
  const std::vector<detail::CompiledRule> rules = detail::compile_recipe(recipe);
  RecipeResolution out;
  out.nodes.resize(nodes.size());
  out.rules.resize(rules.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    NodeDecision& decision = out.nodes[n];
    // Every rule is tested, not only up to the first match, so the report can show the matches
    // that earlier rules took (and an all-shadowed rule can be reported as unused).
    for (std::size_t r = 0; r < rules.size(); ++r) {
      if (!rules[r].matches(nodes[n])) continue;
      if (decision.rule == kDefaultRule) {
        decision.rule = r;
        out.rules[r].decided.push_back(n);
      } else {
        out.rules[r].shadowed.push_back(n);
      }
    }
    if (decision.rule == kDefaultRule) {
      decision.quantize = recipe.default_quantize;
      out.by_default.push_back(n);
    } else {
      decision.quantize = recipe.rules[decision.rule].quantize;
    }
  }

  std::vector<std::size_t> unused;
  for (std::size_t r = 0; r < rules.size(); ++r)
    if (out.rules[r].decided.empty() && !recipe.rules[r].optional) unused.push_back(r);
  if (unused.empty()) return out;

  std::string message = std::to_string(unused.size()) + " of " + std::to_string(rules.size()) +
                        " rule(s) decide no node of the " + std::to_string(nodes.size()) +
                        "-node graph (mark a rule \"optional\": true when that is expected):";
  for (std::size_t k = 0; k < unused.size() && k < kListedRules; ++k) {
    const std::size_t r = unused[k];
    message += "\n  " + rule_summary(recipe, r) + ": " +
               detail::explain_unused_rule(recipe, rules[r], r, out, nodes);
  }
  if (unused.size() > kListedRules)
    message += "\n  ... and " + std::to_string(unused.size() - kListedRules) + " more";
  throw Error(ErrorCode::invalid_argument, "recipe: " + message);
}

}  // namespace qforge::model
