// max_pool and avg_pool: qf_maxpool_s8 / qf_avgpool_s8 (_s16 in a 16x8 program) with a const
// parameter struct.
#include "nodes/node_emitter.h"

namespace qforge::model::export_c {
namespace {

class PoolEmitter final : public NodeEmitter {
 public:
  explicit PoolEmitter(bool max) : max_(max) {}
  EmittedOp emit(const EmitContext& ctx) const override {
    const IntegerOp& op = ctx.op;
    const ConvDesc& d = op.conv;
    const auto s = [](std::int64_t v) { return std::to_string(v); };
    const IntegerTensor& t = ctx.program.tensors.at(static_cast<std::size_t>(op.output));
    EmittedOp e;
    const std::string name = "qf_" + ctx.symbol + "_params";
    e.statics += "/* " + op.node + " */\nstatic const qf_pool_params " + name + " = {\n";
    e.statics += "    " + s(d.c) + ", " + s(d.h) + ", " + s(d.w) + ", " + s(d.out_h()) + ", " +
                 s(d.out_w()) + ",\n";
    e.statics += "    " + s(d.kernel_h) + ", " + s(d.kernel_w) + ", " + s(d.stride_h) + ", " +
                 s(d.stride_w) + ", " + s(d.dilation_h) + ", " + s(d.dilation_w) + ",\n";
    e.statics += "    " + s(d.pad_top) + ", " + s(d.pad_left) + ", " +
                 s(op.count_include_pad ? 1 : 0) + ", " + s(t.zero_point) + "};\n\n";
    e.body = std::string("  ") + (max_ ? "qf_maxpool_" : "qf_avgpool_") +
             (is_16x8(ctx) ? "s16" : "s8") + "(&" + name + ", " + ctx.input + ", " + ctx.output +
             ");\n";
    return e;
  }

 private:
  bool max_;
};

}  // namespace

const NodeEmitter& max_pool_emitter() {
  static const PoolEmitter e(true);
  return e;
}
const NodeEmitter& avg_pool_emitter() {
  static const PoolEmitter e(false);
  return e;
}

}  // namespace qforge::model::export_c
