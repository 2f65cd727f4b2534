// softmax: qf_softmax_s8 with a const parameter struct (TFLite's int8 SOFTMAX; its output params
// are fixed at scale 1/256, zero point -128).
#include "nodes/node_emitter.h"

namespace qforge::model::export_c {
namespace {

class SoftmaxEmitter final : public NodeEmitter {
 public:
  EmittedOp emit(const EmitContext& ctx) const override {
    const IntegerOp& op = ctx.op;
    const auto s = [](std::int64_t v) { return std::to_string(v); };
    const auto& m = op.multipliers.at(0);
    EmittedOp e;
    const std::string name = "qf_" + ctx.symbol + "_params";
    e.statics += "/* " + op.node + " */\nstatic const qf_softmax_params " + name + " = {\n";
    e.statics += "    " + s(op.rows) + ", " + s(op.depth) + ",\n";
    e.statics += "    " + s(m.multiplier) + ", " + s(m.shift) + ", " + s(op.diff_min) + "};\n\n";
    e.body = "  qf_softmax_s8(&" + name + ", " + ctx.input + ", " + ctx.output + ");\n";
    return e;
  }
};

}  // namespace

const NodeEmitter& softmax_emitter() {
  static const SoftmaxEmitter e;
  return e;
}

}  // namespace qforge::model::export_c
