#include "capability_grid.h"

#include "qforge/op_table.h"

namespace qforge::hwinfo {

std::vector<GridCase> capability_grid(OpKind op) { return op_info(op).examples(op); }

std::vector<OpKind> ops_to_report(std::optional<OpKind> only) {
  if (only) return {*only};
  std::vector<OpKind> ops;
  for (const OpInfo& info : op_table()) ops.push_back(info.kind);
  return ops;
}

}  // namespace qforge::hwinfo
