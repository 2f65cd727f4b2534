// Number formatting for messages and the JSON writer.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace qforge::model::detail::text {

// The fewest digits that read back to the same value ("0.0313725", "inf", "nan").
std::string number(double v);
std::string number(float v);

// User text (a pattern, a label, a node name) made safe for a one-line message: control bytes
// as \xNN, and at most `max` bytes of it (cut at a UTF-8 boundary) followed by "... (N bytes)"
// so that a 1 MB pattern does not become a 1 MB message.
std::string clip(std::string_view s, std::size_t max = 160);
// clip() in single quotes: 'conv1'.
std::string quoted(std::string_view s, std::size_t max = 160);

}  // namespace qforge::model::detail::text
