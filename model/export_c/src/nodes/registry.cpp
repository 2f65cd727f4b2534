// The emitter of each op kind.
#include "nodes/node_emitter.h"
#include "qforge/error.h"

namespace qforge::model::export_c {

const NodeEmitter& quantize_emitter();
const NodeEmitter& conv2d_emitter();
const NodeEmitter& dense_emitter();
const NodeEmitter& max_pool_emitter();
const NodeEmitter& avg_pool_emitter();
const NodeEmitter& reshape_emitter();
const NodeEmitter& add_emitter();
const NodeEmitter& softmax_emitter();

const NodeEmitter& emitter_for(IntegerOpKind kind) {
  switch (kind) {
    case IntegerOpKind::quantize: return quantize_emitter();
    case IntegerOpKind::conv2d: return conv2d_emitter();
    case IntegerOpKind::dense: return dense_emitter();
    case IntegerOpKind::max_pool: return max_pool_emitter();
    case IntegerOpKind::avg_pool: return avg_pool_emitter();
    case IntegerOpKind::reshape: return reshape_emitter();
    case IntegerOpKind::add: return add_emitter();
    case IntegerOpKind::softmax: return softmax_emitter();
  }
  throw Error(ErrorCode::internal, "export-c: no emitter for an op kind");
}

}  // namespace qforge::model::export_c
