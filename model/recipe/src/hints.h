// Explanations for a rule that decided no node: what it did match, which nodes come closest,
// which op types the graph has. Only computed on the error path.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "compiled_rule.h"
#include "qforge/model/recipe.h"

namespace qforge::model::detail {

// "'conv1' (Conv)", or "node #7 (Add)" for a node without a name.
std::string node_label(const NodeRef& node, std::size_t index);

// One sentence (no trailing period) saying why rules[index] decided nothing and what to do.
std::string explain_unused_rule(const Recipe& recipe, const CompiledRule& rule, std::size_t index,
                                const RecipeResolution& resolution, std::span<const NodeRef> nodes);

// Length of the longest common substring of a and b (both cut to their first 64 / 256 bytes,
// so that a hint over 100k nodes stays quick).
std::size_t longest_common_substring(std::string_view a, std::string_view b);

}  // namespace qforge::model::detail
