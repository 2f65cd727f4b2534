// add: qf_add_s8 with a const parameter struct (TFLite's int8 ADD), or qf_add_s16 (its general
// int16 ADD: zero points 0, inputs shifted left by 15 instead of 20).
#include "nodes/node_emitter.h"

namespace qforge::model::export_c {
namespace {

class AddEmitter final : public NodeEmitter {
 public:
  EmittedOp emit(const EmitContext& ctx) const override {
    const IntegerOp& op = ctx.op;
    const auto& t = ctx.program.tensors;
    const auto s = [](std::int64_t v) { return std::to_string(v); };
    const auto& a = t.at(static_cast<std::size_t>(op.input));
    const auto& b = t.at(static_cast<std::size_t>(op.input2));
    const auto& y = t.at(static_cast<std::size_t>(op.output));
    const auto& m = op.multipliers;
    EmittedOp e;
    const std::string name = "qf_" + ctx.symbol + "_params";
    const bool s16 = is_16x8(ctx);
    // The zero points are 0 in a 16x8 program, and its struct leaves them out.
    const auto z = [&](std::int32_t zp) { return s16 ? std::string() : s(zp) + ", "; };
    e.statics += "/* " + op.node + " */\nstatic const qf_add" + (s16 ? "_s16" : "") + "_params " +
                 name + " = {\n";
    e.statics += "    " + s(y.elements()) + ",\n";
    e.statics += "    " + z(a.zero_point) + s(m.at(0).multiplier) + ", " + s(m.at(0).shift) + ",\n";
    e.statics += "    " + z(b.zero_point) + s(m.at(1).multiplier) + ", " + s(m.at(1).shift) + ",\n";
    e.statics += "    " + z(y.zero_point) + s(m.at(2).multiplier) + ", " + s(m.at(2).shift) + ",\n";
    e.statics += "    " + s(op.act_min) + ", " + s(op.act_max) + "};\n\n";
    e.body = std::string("  qf_add_") + (s16 ? "s16" : "s8") + "(&" + name + ", " + ctx.input +
             ", " + ctx.input2 + ", " + ctx.output + ");\n";
    return e;
  }
};

}  // namespace

const NodeEmitter& add_emitter() {
  static const AddEmitter e;
  return e;
}

}  // namespace qforge::model::export_c
