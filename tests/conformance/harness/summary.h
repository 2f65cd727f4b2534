// Per-plugin totals over a run, printed at its end, so a log shows at a glance how much of the
// grid each backend actually ran and how much it declined (a skipped case is not a passed one).
#pragma once

#include <string>

#include "harness/op_case.h"

namespace qforge::conformance {

// Adds one test's tally to its plugin's totals.
void record_tally(const std::string& plugin, const Tally& tally);

// One line per plugin: cases compared, refusals checked, cases rejected by supports(), launch
// variants not offered; empty when nothing was recorded.
std::string summary_report();

}  // namespace qforge::conformance
