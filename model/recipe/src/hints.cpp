#include "hints.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <vector>

#include "text.h"

namespace qforge::model::detail {
namespace {

constexpr std::size_t kListed = 5;             // nodes named in one hint
constexpr std::size_t kListedOpTypes = 20;     // op types named in one hint
constexpr std::size_t kHintScanNodes = 20000;  // nodes compared with a pattern for "closest"
constexpr std::size_t kMinUsefulOverlap = 3;   // shorter common substrings are noise

std::string list_nodes(std::span<const NodeRef> nodes, const std::vector<std::size_t>& which) {
  std::string out;
  for (std::size_t k = 0; k < which.size() && k < kListed; ++k) {
    if (k) out += ", ";
    out += node_label(nodes[which[k]], which[k]);
  }
  if (which.size() > kListed) out += ", ... (" + std::to_string(which.size() - kListed) + " more)";
  return out;
}

// The pattern as plain text for the overlap measure: escapes dropped ("layer\.3" -> "layer.3").
std::string unescape(std::string_view pattern) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) ++i;
    out += pattern[i];
  }
  return out;
}

std::string closest_names(std::string_view pattern, std::span<const NodeRef> nodes,
                          const std::vector<std::size_t>& candidates) {
  const std::string plain = unescape(pattern);
  std::vector<std::pair<std::size_t, std::size_t>> scored;  // (overlap, node), best first
  for (std::size_t k = 0; k < candidates.size() && k < kHintScanNodes; ++k) {
    const std::size_t i = candidates[k];
    const std::size_t overlap = longest_common_substring(plain, nodes[i].name);
    if (overlap >= kMinUsefulOverlap) scored.emplace_back(overlap, i);
  }
  if (scored.empty()) {
    std::vector<std::size_t> first(candidates.begin(),
                                   candidates.begin() + std::min(candidates.size(), kListed));
    return "no node name shares 3 characters with it; the first nodes are " +
           list_nodes(nodes, first);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<std::size_t> best;
  for (std::size_t k = 0; k < scored.size() && k < kListed; ++k) best.push_back(scored[k].second);
  return "closest names: " + list_nodes(nodes, best);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string op_types_hint(const Rule& rule, std::span<const NodeRef> nodes) {
  std::set<std::string_view> present;
  for (const NodeRef& n : nodes) present.insert(n.op_type);
  std::string out;
  for (const std::string& wanted : rule.match.op_types) {
    if (present.count(wanted)) continue;
    for (std::string_view have : present)
      if (lower(have) == lower(wanted)) {
        out += "; did you mean " + text::quoted(have) + " for " + text::quoted(wanted) +
               " (op types are "
               "case-sensitive)?";
        break;
      }
  }
  std::string list;
  std::size_t k = 0;
  for (std::string_view t : present) {
    if (k == kListedOpTypes) {
      list += ", ... (" + std::to_string(present.size() - k) + " more)";
      break;
    }
    if (k++) list += ", ";
    list += t.empty() ? "''" : text::clip(t);
  }
  return "op types in the graph: " + list + out;
}

std::string op_types_text(const Rule& rule) {
  std::string out = "[";
  for (std::size_t i = 0; i < rule.match.op_types.size(); ++i) {
    if (i) out += ", ";
    out += text::clip(rule.match.op_types[i]);
  }
  return out + "]";
}

}  // namespace

std::string node_label(const NodeRef& node, std::size_t index) {
  const std::string op = " (" + text::clip(node.op_type) + ")";
  if (node.name.empty()) return "node #" + std::to_string(index) + op;
  return text::quoted(node.name) + op;
}

std::size_t longest_common_substring(std::string_view a, std::string_view b) {
  a = a.substr(0, 64);
  b = b.substr(0, 256);
  std::vector<std::size_t> prev(b.size() + 1, 0), cur(b.size() + 1, 0);
  std::size_t best = 0;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1 : 0;
      best = std::max(best, cur[j]);
    }
    std::swap(prev, cur);
  }
  return best;
}

std::string explain_unused_rule(const Recipe& recipe, const CompiledRule& rule, std::size_t index,
                                const RecipeResolution& resolution,
                                std::span<const NodeRef> nodes) {
  if (nodes.empty()) return "the graph has no nodes";
  const RuleMatches& own = resolution.rules[index];
  if (!own.shadowed.empty()) {
    std::map<std::size_t, std::size_t> takers;  // earlier rule -> how many of our matches
    for (std::size_t n : own.shadowed) ++takers[resolution.nodes[n].rule];
    std::string by;
    for (const auto& [r, count] : takers) {
      if (!by.empty()) by += ", ";
      by += rule_name(recipe, r) + " (" + std::to_string(count) + ")";
    }
    return "it matches " + std::to_string(own.shadowed.size()) + " node(s) (" +
           list_nodes(nodes, own.shadowed) + ") but earlier rules decided them all: " + by +
           "; the first matching rule wins, so move it before them or mark it optional";
  }

  const Rule& r = *rule.rule;
  std::vector<std::size_t> by_name, by_type, all;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    all.push_back(i);
    if (r.match.name_regex && rule.name_matches(nodes[i].name)) by_name.push_back(i);
    if (!r.match.op_types.empty() && rule.op_type_matches(nodes[i].op_type)) by_type.push_back(i);
  }
  const bool has_name = r.match.name_regex.has_value();
  const bool has_type = !r.match.op_types.empty();
  const std::string pattern = has_name ? text::quoted(*r.match.name_regex) : "";
  if (has_name && has_type) {
    if (!by_name.empty() && !by_type.empty())
      return "name_regex " + pattern + " matches " + list_nodes(nodes, by_name) + " and op_types " +
             op_types_text(r) + " match " + list_nodes(nodes, by_type) +
             ", but no node matches both";
    if (!by_name.empty())
      return "name_regex " + pattern + " matches " + list_nodes(nodes, by_name) +
             ", but none has op type in " + op_types_text(r) + "; " + op_types_hint(r, nodes);
    if (!by_type.empty())
      return "op_types " + op_types_text(r) + " match " + std::to_string(by_type.size()) +
             " node(s) but no name among them matches " + pattern + "; " +
             closest_names(*r.match.name_regex, nodes, by_type);
    return "no node name matches " + pattern + " (" +
           closest_names(*r.match.name_regex, nodes, all) + ") and no node has op type in " +
           op_types_text(r) + " (" + op_types_hint(r, nodes) + ")";
  }
  if (has_name)
    return "no node name matches " + pattern + "; " +
           closest_names(*r.match.name_regex, nodes, all);
  return "no node has op type in " + op_types_text(r) + "; " + op_types_hint(r, nodes);
}

}  // namespace qforge::model::detail
