#include "work.h"

#include "qforge/op_table.h"

namespace qforge::bench {

// The op table's estimate (OpInfo::work), in double: it never throws, so a shape beyond the
// size limit is reported by the tuning that follows (every plugin refuses it), as one
// workload's error, not the run's end.
Work work_of(const OpDesc& op) {
  const OpWork w = op_info(op.op).work(op);
  if (w.unit == OpWork::Unit::multiply_adds) return {2.0 * w.amount, "GOPS"};
  return {w.amount, "GB/s"};
}

std::optional<double> WorkloadResult::speedup_vs_scalar() const {
  if (!report || !scalar_seconds || report->winner_seconds <= 0) return std::nullopt;
  return *scalar_seconds / report->winner_seconds;
}

std::optional<double> WorkloadResult::speedup_vs_anchor() const {
  if (!report || !anchor || report->winner_seconds <= 0 || anchor->seconds <= 0)
    return std::nullopt;
  return anchor->seconds / report->winner_seconds;
}

}  // namespace qforge::bench
