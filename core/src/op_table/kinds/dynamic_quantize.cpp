// dynamic_quantize_linear (DynamicQuantizeDesc): its call, key, bucket words, probes, random
// inputs and work. Its scale and zero point are outputs in the op table and its result per call.
#include <cstring>
#include <limits>

#include "accelerator/bucket_words.h"
#include "accelerator/key_builder.h"
#include "accelerator/probe_shapes.h"
#include "accelerator/random_values.h"
#include "op_table/kinds/example_params.h"
#include "op_table/kinds/kind_work.h"
#include "op_table/op_hooks.h"

namespace qforge {
namespace accel {

WorkloadKey make_key(const DynamicQuantizeDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(OpKind::dynamic_quantize_linear), r);
  put_shape(b, d.shape);
  return b.key();
}

std::string bucket_words(OpKind, const DynamicQuantizeDesc& d) { return shape_bucket(d.shape); }

}  // namespace accel

namespace op_table_detail {

std::vector<OpExample> dynamic_quantize_examples(OpKind) {
  std::vector<OpExample> out;
  for (Shape s : {Shape{1, kExampleCols}, Shape{kExampleRows, kExampleCols}}) {
    std::string label = "f32->u8 " + to_string(s);
    out.push_back({std::move(label), {OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{s}}});
  }
  return out;
}

OpWork dynamic_quantize_work(const OpDesc& op) {
  const auto& d = std::get<DynamicQuantizeDesc>(op.desc);
  return {element_estimate(d.shape) * 5, OpWork::Unit::bytes};
}

namespace {

using accel::HostArrays;
using accel::IoLayout;
using accel::Rng;
using Returned = std::optional<QuantizationParams>;

struct DynamicQuantizeCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    return t.dynamic_quantize_linear(std::get<DynamicQuantizeDesc>(op.desc),
                                     static_cast<const float*>(in[0]),
                                     static_cast<std::uint8_t*>(out[0]));
  }
};

// y_scale and y_zero_point, the outputs after y.
void store_params(const QuantizationParams& p, void* const* out) {
  const float s = p.scale();
  std::memcpy(out[1], &s, sizeof s);
  *static_cast<std::uint8_t*>(out[2]) = static_cast<std::uint8_t>(p.zero_point());
}

OpDesc probe(const OpDesc& real, int level, Rng&) {
  const auto& d = std::get<DynamicQuantizeDesc>(real.desc);
  return OpDesc{real.op, DynamicQuantizeDesc{accel::shrink(d.shape, accel::caps_for(level, 0))}};
}

void random_inputs(const OpDesc&, const IoLayout& layout, Rng& rng, bool specials, HostArrays& h) {
  auto x = accel::normal_floats(rng, layout.inputs[0].count, 2.0);
  if (specials && !x.empty())
    x[static_cast<std::size_t>(accel::uniform(rng, 0, static_cast<std::int64_t>(x.size()) - 1))] =
        std::numeric_limits<float>::quiet_NaN();
  h.inputs.push_back(accel::float_bytes(FloatType::f32, x));
}

}  // namespace

extern const OpHooks kDynamicQuantizeHooks = {
    .invoke = &invoke_on<DynamicQuantizeCall>,
    .invoke_reference = &invoke_reference_on<DynamicQuantizeCall>,
    .store_params = &store_params,
    .probe = &probe,
    .random_inputs = &random_inputs};

}  // namespace op_table_detail
}  // namespace qforge
