// conv2d: qf_conv2d_s8 (or qf_conv2d_s16 in a 16x8 program) with a const parameter struct.
#include "nodes/weighted_common.h"

namespace qforge::model::export_c {
namespace {

class Conv2dEmitter final : public NodeEmitter {
 public:
  EmittedOp emit(const EmitContext& ctx) const override {
    const IntegerOp& op = ctx.op;
    const ConvDesc& d = op.conv;
    const auto s = [](std::int64_t v) { return std::to_string(v); };
    EmittedOp e;
    emit_weighted_arrays(e, ctx);
    const std::string name = "qf_" + ctx.symbol + "_params";
    const bool s16 = is_16x8(ctx);
    e.statics += "/* " + op.node + " */\nstatic const qf_conv2d" + (s16 ? "_s16" : "") +
                 "_params " + name + " = {\n";
    e.statics += "    " + s(d.c) + ", " + s(d.h) + ", " + s(d.w) + ", " + s(d.out_channels) + ", " +
                 s(d.out_h()) + ", " + s(d.out_w()) + ",\n";
    e.statics += "    " + s(d.kernel_h) + ", " + s(d.kernel_w) + ", " + s(d.stride_h) + ", " +
                 s(d.stride_w) + ", " + s(d.dilation_h) + ", " + s(d.dilation_w) + ",\n";
    e.statics += "    " + s(d.pad_top) + ", " + s(d.pad_left) + ", " + s(d.groups) + ",\n";
    e.statics += "    " +
                 (s16 ? std::string()
                      : s(d.x_params.zero_point()) + ", " + s(d.y_params->zero_point()) + ", ") +
                 s(op.act_min) + ", " + s(op.act_max) + ",\n";
    e.statics += "    qf_" + ctx.symbol + "_weights, " + bias_pointer(ctx) + ", qf_" + ctx.symbol +
                 "_multiplier, qf_" + ctx.symbol + "_shift};\n\n";
    e.body = std::string("  qf_conv2d_") + (s16 ? "s16" : "s8") + "(&" + name + ", " + ctx.input +
             ", " + ctx.output + ");\n";
    return e;
  }
};

}  // namespace

const NodeEmitter& conv2d_emitter() {
  static const Conv2dEmitter e;
  return e;
}

}  // namespace qforge::model::export_c
