// What the conv2d and dense emitters share: the weight, bias, multiplier and shift arrays.
#pragma once

#include "nodes/node_emitter.h"

namespace qforge::model::export_c {

// Emits <symbol>_weights, _bias (when the op has one), _multiplier and _shift.
inline void emit_weighted_arrays(EmittedOp& e, const EmitContext& ctx) {
  const IntegerOp& op = ctx.op;
  emit_array(e, "int8_t", "qf_" + ctx.symbol + "_weights",
             std::vector<long long>(op.weights.begin(), op.weights.end()));
  if (!op.bias.empty())
    emit_array(e, is_16x8(ctx) ? "int64_t" : "int32_t", "qf_" + ctx.symbol + "_bias",
               std::vector<long long>(op.bias.begin(), op.bias.end()));
  std::vector<long long> mult, shift;
  for (const auto& m : op.multipliers) mult.push_back(m.multiplier), shift.push_back(m.shift);
  emit_array(e, "int32_t", "qf_" + ctx.symbol + "_multiplier", mult);
  emit_array(e, "int32_t", "qf_" + ctx.symbol + "_shift", shift);
}

inline std::string bias_pointer(const EmitContext& ctx) {
  return ctx.op.bias.empty() ? "NULL" : "qf_" + ctx.symbol + "_bias";
}

}  // namespace qforge::model::export_c
