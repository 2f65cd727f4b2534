// Names a recipe field by its JSON path ("rules[2].weights.dtype") in error messages, so that
// the C++ API and the JSON reader report the same problem in the same words.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "qforge/error.h"
#include "text.h"

namespace qforge::model::detail {

class FieldPath {
 public:
  FieldPath() = default;
  // `note` follows every message from this path and its children, e.g. " [rule 'attention']".
  FieldPath(std::string path, std::string note) : path_(std::move(path)), note_(std::move(note)) {}

  FieldPath operator/(std::string_view field) const {
    return {path_.empty() ? std::string(field) : path_ + "." + std::string(field), note_};
  }
  FieldPath at(std::size_t index) const {
    return {path_ + "[" + std::to_string(index) + "]", note_};
  }
  const std::string& str() const noexcept { return path_; }

  [[noreturn]] void fail(const std::string& what,
                         ErrorCode code = ErrorCode::invalid_argument) const {
    throw Error(code, (path_.empty() ? std::string("recipe") : path_) + ": " + what + note_);
  }

 private:
  std::string path_;
  std::string note_;
};

// The path of rule `index` with its label as the note.
inline FieldPath rule_path(std::size_t index, const std::string& label) {
  return FieldPath("rules[" + std::to_string(index) + "]",
                   label.empty() ? std::string() : " [rule " + text::quoted(label) + "]");
}

}  // namespace qforge::model::detail
