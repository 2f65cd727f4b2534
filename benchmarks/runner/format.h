// Number formatting shared by the table, the progress lines and the chart.
#pragma once

#include <optional>
#include <string>

namespace qforge::bench {

std::string format_seconds(double s);                           // "12.3 us", "4.56 ms", "1.20 s"
std::string format_rate(double rate, const std::string& unit);  // "12.3 GOPS"
std::string format_ratio(std::optional<double> r);              // "35.2x" or "-"
std::string format_fixed(double v, int digits);

}  // namespace qforge::bench
