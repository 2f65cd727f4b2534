#include "harness/summary.h"

#include <map>
#include <sstream>

namespace qforge::conformance {
namespace {

std::map<std::string, Tally>& totals() {
  static std::map<std::string, Tally> t;
  return t;
}

}  // namespace

void record_tally(const std::string& plugin, const Tally& tally) {
  Tally& t = totals()[plugin];
  t.compared += tally.compared;
  t.refusals_checked += tally.refusals_checked;
  t.rejected += tally.rejected;
  t.invalid += tally.invalid;
  t.launches_unavailable += tally.launches_unavailable;
  if (t.first_invalid.empty()) t.first_invalid = tally.first_invalid;
  if (t.first_rejection.empty()) t.first_rejection = tally.first_rejection;
}

std::string summary_report() {
  std::ostringstream out;
  for (const auto& [plugin, t] : totals())
    out << "  " << plugin << ": " << t.compared << " cases compared, " << t.refusals_checked
        << " overflow refusals checked, " << t.rejected << " rejected by supports(), "
        << t.launches_unavailable << " launch variants not offered, " << t.invalid
        << " descriptors the reference rejects\n"
        << (t.first_invalid.empty()
                ? ""
                : "    first rejected by the reference: " + t.first_invalid + "\n");
  return out.str();
}

}  // namespace qforge::conformance
