// reshape (Flatten, Reshape, Squeeze, Unsqueeze): NCHW order with a batch of one is already the
// order of the new shape, so the output is the input's buffer and no code runs.
#include "nodes/node_emitter.h"

namespace qforge::model::export_c {
namespace {

class ReshapeEmitter final : public NodeEmitter {
 public:
  EmittedOp emit(const EmitContext& ctx) const override {
    EmittedOp e;
    e.body = "  /* " + ctx.op.node + ": reshape, the same bytes */\n";
    return e;
  }
};

}  // namespace

const NodeEmitter& reshape_emitter() {
  static const ReshapeEmitter e;
  return e;
}

}  // namespace qforge::model::export_c
