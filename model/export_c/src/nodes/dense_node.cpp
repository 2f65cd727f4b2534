// dense: qf_dense_s8 (or qf_dense_s16 in a 16x8 program) with a const parameter struct.
#include "nodes/weighted_common.h"

namespace qforge::model::export_c {
namespace {

class DenseEmitter final : public NodeEmitter {
 public:
  EmittedOp emit(const EmitContext& ctx) const override {
    const IntegerOp& op = ctx.op;
    const ConvDesc& d = op.conv;
    const auto s = [](std::int64_t v) { return std::to_string(v); };
    EmittedOp e;
    emit_weighted_arrays(e, ctx);
    const std::string name = "qf_" + ctx.symbol + "_params";
    const bool s16 = is_16x8(ctx);
    e.statics += "/* " + op.node + " */\nstatic const qf_dense" + (s16 ? "_s16" : "") + "_params " +
                 name + " = {\n";
    e.statics += "    " + s(d.c) + ", " + s(d.out_channels) + ", " +
                 (s16 ? std::string()
                      : s(d.x_params.zero_point()) + ", " + s(d.y_params->zero_point()) + ", ") +
                 s(op.act_min) + ", " + s(op.act_max) + ",\n";
    e.statics += "    qf_" + ctx.symbol + "_weights, " + bias_pointer(ctx) + ", qf_" + ctx.symbol +
                 "_multiplier, qf_" + ctx.symbol + "_shift};\n\n";
    e.body = std::string("  qf_dense_") + (s16 ? "s16" : "s8") + "(&" + name + ", " + ctx.input +
             ", " + ctx.output + ");\n";
    return e;
  }
};

}  // namespace

const NodeEmitter& dense_emitter() {
  static const DenseEmitter e;
  return e;
}

}  // namespace qforge::model::export_c
