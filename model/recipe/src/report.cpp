// format_report(): what each rule decided and matched, for people reading a quantization run.
#include "hints.h"
#include "qforge/error.h"

namespace qforge::model {
namespace {

void append_nodes(std::string& out, const char* what, const std::vector<std::size_t>& which,
                  std::span<const NodeRef> nodes) {
  out += "  " + std::string(what) + " (" + std::to_string(which.size()) + ")" +
         (which.empty() ? "\n" : ":\n");
  for (std::size_t n : which) out += "    " + detail::node_label(nodes[n], n) + "\n";
}

}  // namespace

std::string format_report(const Recipe& recipe, const RecipeResolution& resolution,
                          std::span<const NodeRef> nodes) {
  if (resolution.nodes.size() != nodes.size() || resolution.rules.size() != recipe.rules.size())
    throw Error(ErrorCode::invalid_argument,
                "format_report: the resolution covers " + std::to_string(resolution.nodes.size()) +
                    " nodes and " + std::to_string(resolution.rules.size()) +
                    " rules; expected the " + std::to_string(nodes.size()) + " nodes and " +
                    std::to_string(recipe.rules.size()) + " rules it was resolved from");
  std::string out;
  for (std::size_t r = 0; r < recipe.rules.size(); ++r) {
    const Rule& rule = recipe.rules[r];
    out += rule_name(recipe, r) + (rule.optional ? " (optional)" : "") + " -> " +
           describe(rule.quantize) + "\n";
    append_nodes(out, "decided", resolution.rules[r].decided, nodes);
    if (!resolution.rules[r].shadowed.empty())
      append_nodes(out, "also matched, but decided by an earlier rule",
                   resolution.rules[r].shadowed, nodes);
  }
  out += "default -> " + describe(recipe.default_quantize) + "\n";
  append_nodes(out, "decided", resolution.by_default, nodes);
  return out;
}

}  // namespace qforge::model
