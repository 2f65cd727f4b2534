// The input quantize, with the float ops the graph applies to its input before it, each one
// float32 operation in the graph's order (the C must be compiled with FLT_EVAL_METHOD 0 and no
// contraction, -ffp-contract=off, for these to round as qforge's do).
#include "nodes/node_emitter.h"

namespace qforge::model::export_c {
namespace {

class QuantizeEmitter final : public NodeEmitter {
 public:
  EmittedOp emit(const EmitContext& ctx) const override {
    const IntegerTensor& t = ctx.program.tensors.at(static_cast<std::size_t>(ctx.op.output));
    EmittedOp e;
    std::string& b = e.body;
    b += "  /* " + ctx.op.node + ": quantize the input (scale " + float_literal(t.scale) +
         ", zero point " + std::to_string(t.zero_point) + ") */\n";
    b += "  for (i = 0; i < MODEL_INPUT_SIZE; ++i) {\n";
    b += "    float v = " + ctx.input + "[i];\n";
    for (const FloatPrefixOp& f : ctx.op.prefix)
      b += std::string("    v = v ") + f.op + " " + float_literal(f.constant) + ";\n";
    if (is_16x8(ctx))
      b += "    qf_quantize_f32_s16(&v, " + ctx.output + " + i, 1, " + float_literal(t.scale) +
           ");\n";
    else
      b += "    qf_quantize_f32(&v, " + ctx.output + " + i, 1, " + float_literal(t.scale) + ", " +
           std::to_string(t.zero_point) + ");\n";
    b += "  }\n";
    return e;
  }
};

}  // namespace

const NodeEmitter& quantize_emitter() {
  static const QuantizeEmitter e;
  return e;
}

}  // namespace qforge::model::export_c
