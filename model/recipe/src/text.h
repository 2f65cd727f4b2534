// Number formatting for messages and the JSON writer.
#pragma once

#include <string>

namespace qforge::model::detail::text {

// The fewest digits that read back to the same value ("0.0313725", "inf", "nan").
std::string number(double v);
std::string number(float v);

}  // namespace qforge::model::detail::text
