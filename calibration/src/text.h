// Number formatting for error messages (shared by the sources).
#pragma once

#include <string>

namespace qforge::calibration::text {

// The fewest digits that read back to the same value ("0.0313725", "inf", "nan").
std::string number(double v);
std::string number(float v);

}  // namespace qforge::calibration::text
