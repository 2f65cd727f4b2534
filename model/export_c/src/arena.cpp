// First-fit placement by liveness: a tensor lives from the op that writes it to the last op
// that reads it (the output to the end, where it is copied out); an op's input and output are
// both live during the op, so they never overlap.
#include "arena.h"

#include <algorithm>

namespace qforge::model::export_c {

ArenaPlan plan_arena(const IntegerProgram& p) {
  const std::size_t n = p.tensors.size();
  std::vector<int> storage(n);  // the tensor whose buffer each tensor uses
  for (std::size_t t = 0; t < n; ++t) storage[t] = static_cast<int>(t);
  std::vector<int> first(n, -1), last(n, -1);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const IntegerOp& op = p.ops[i];
    const auto out = static_cast<std::size_t>(op.output);
    if (op.kind == IntegerOpKind::reshape)
      storage[out] = storage[static_cast<std::size_t>(op.input)];
    const auto s_out = static_cast<std::size_t>(storage[out]);
    if (first[s_out] < 0) first[s_out] = static_cast<int>(i);
    last[s_out] = std::max(last[s_out], static_cast<int>(i));
    for (const int input : {op.input, op.input2}) {
      if (input < 0) continue;
      const auto s_in = static_cast<std::size_t>(storage[static_cast<std::size_t>(input)]);
      last[s_in] = std::max(last[s_in], static_cast<int>(i));
    }
  }
  last[static_cast<std::size_t>(storage[static_cast<std::size_t>(p.ops.back().output)])] =
      static_cast<int>(p.ops.size());

  ArenaPlan plan;
  plan.offset.assign(n, 0);
  // Buffers in bytes, rounded up to 4 so that every offset is 4-byte aligned (int16 tensors).
  const auto bytes = [&](std::size_t t) {
    return (p.tensors[t].elements() * p.activation_bytes() + 3) / 4 * 4;
  };
  std::vector<std::size_t> placed;
  for (std::size_t t = 0; t < n; ++t) {
    if (storage[t] != static_cast<int>(t) || first[t] < 0) continue;
    const std::int64_t size = bytes(t);
    // Candidate offsets: 0 and the end of every live-overlapping placed buffer; take the lowest
    // that collides with none.
    std::vector<std::size_t> conflicts;
    for (std::size_t u : placed)
      if (first[u] <= last[t] && first[t] <= last[u]) conflicts.push_back(u);
    std::vector<std::int64_t> candidates{0};
    for (std::size_t u : conflicts) candidates.push_back(plan.offset[u] + bytes(u));
    std::sort(candidates.begin(), candidates.end());
    for (std::int64_t c : candidates) {
      const bool fits = std::none_of(conflicts.begin(), conflicts.end(), [&](std::size_t u) {
        const std::int64_t u_end = plan.offset[u] + bytes(u);
        return c < u_end && plan.offset[u] < c + size;
      });
      if (fits) {
        plan.offset[t] = c;
        break;
      }
    }
    plan.bytes = std::max(plan.bytes, plan.offset[t] + size);
    placed.push_back(t);
  }
  for (std::size_t t = 0; t < n; ++t)
    plan.offset[t] = plan.offset[static_cast<std::size_t>(storage[t])];
  return plan;
}

}  // namespace qforge::model::export_c
