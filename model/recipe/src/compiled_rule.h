// A validated rule ready to test nodes: its regex compiled once (RE2, linear-time matching).
#pragma once

#include <re2/re2.h>

#include <memory>
#include <string>
#include <vector>

#include "qforge/model/recipe.h"

namespace qforge::model::detail {

class FieldPath;

// Compiles `pattern`; on failure throws at `where` with the pattern and RE2's message.
std::unique_ptr<re2::RE2> compile_pattern(const std::string& pattern, const FieldPath& where);
// Partial match: the pattern may match anywhere in `text` (anchor with ^ and $).
bool pattern_matches(const re2::RE2& re, std::string_view text);

struct CompiledRule {
  const Rule* rule = nullptr;
  std::unique_ptr<re2::RE2> name_regex;  // null when the rule does not match on names

  bool name_matches(std::string_view name) const;
  bool op_type_matches(std::string_view op_type) const;
  bool matches(const NodeRef& node) const {
    return op_type_matches(node.op_type) && name_matches(node.name);
  }
};

// Validates the whole recipe (as validate() does) and compiles every rule's regex.
std::vector<CompiledRule> compile_recipe(const Recipe& recipe);

// Validation of one rule's action, shared by validate() and the JSON reader.
void validate_layer(const LayerQuantization& layer, const FieldPath& where);
void validate_match(const NodeMatch& match, const FieldPath& where);

}  // namespace qforge::model::detail
