// quantize and dequantize (QuantizeDesc): their calls, keys, bucket words, probes, random
// inputs and work.
#include "accelerator/bucket_words.h"
#include "accelerator/key_builder.h"
#include "accelerator/probe_shapes.h"
#include "accelerator/random_values.h"
#include "op_table/kinds/example_params.h"
#include "op_table/kinds/kind_work.h"
#include "op_table/op_hooks.h"

namespace qforge {
namespace accel {

WorkloadKey make_key(OpKind op, const QuantizeDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(op), r);
  put_params(b, d.params, d.shape.size());
  // dequantize always writes float32: its float_type does not split buckets.
  b.put(op == OpKind::quantize ? static_cast<std::uint64_t>(d.float_type) : 0, 2);
  put_shape(b, d.shape);
  return b.key();
}

std::string bucket_words(OpKind op, const QuantizeDesc& d) {
  std::string s = " " + params_text(d.params);
  if (op == OpKind::quantize) s += std::string(" float=") + name(d.float_type);
  return s + shape_bucket(d.shape);
}

}  // namespace accel

namespace op_table_detail {

std::vector<OpExample> quantize_examples(OpKind op) {
  std::vector<OpExample> out;
  for (DType t : {DType::int8, DType::uint8, DType::int4, DType::int16}) {
    for (Granularity g : {Granularity::per_tensor, Granularity::per_channel, Granularity::block}) {
      QuantizationParams p = example_params(t, g, kExampleRows, kExampleCols, 0);
      std::string label = std::string(name(t)) + " " + to_string(p.scheme());
      out.push_back(
          {std::move(label), {op, QuantizeDesc{{kExampleRows, kExampleCols}, std::move(p)}}});
    }
  }
  return out;
}

OpWork quantize_work(const OpDesc& op) {
  const auto& d = std::get<QuantizeDesc>(op.desc);
  return {element_estimate(d.shape) * (size_of(d.float_type) + bytes_per(d.params.dtype())),
          OpWork::Unit::bytes};
}

OpWork dequantize_work(const OpDesc& op) {
  const auto& d = std::get<QuantizeDesc>(op.desc);
  return {element_estimate(d.shape) * (4 + bytes_per(d.params.dtype())), OpWork::Unit::bytes};
}

namespace {

using accel::HostArrays;
using accel::IoLayout;
using accel::Rng;
using Returned = std::optional<QuantizationParams>;

struct QuantizeCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    t.quantize(std::get<QuantizeDesc>(op.desc), in[0], out[0]);
    return std::nullopt;
  }
};

struct DequantizeCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    t.dequantize(std::get<QuantizeDesc>(op.desc), in[0], static_cast<float*>(out[0]));
    return std::nullopt;
  }
};

OpDesc probe(const OpDesc& real, int level, Rng& rng) {
  const auto& d = std::get<QuantizeDesc>(real.desc);
  QuantizeDesc p = d;
  p.shape = accel::shrink(d.shape, accel::caps_for(level, accel::block_of(d.params)));
  p.params = accel::random_params(rng, d.params.dtype(), d.params.scheme(), p.shape);
  return OpDesc{real.op, p};
}

void quantize_inputs(const OpDesc& op, const IoLayout& layout, Rng& rng, bool specials,
                     HostArrays& h) {
  const auto& d = std::get<QuantizeDesc>(op.desc);
  h.inputs.push_back(accel::float_bytes(
      d.float_type, accel::quantize_inputs(rng, d.params, layout.inputs[0].count, specials)));
}

void dequantize_inputs(const OpDesc& op, const IoLayout& layout, Rng& rng, bool, HostArrays& h) {
  const auto& d = std::get<QuantizeDesc>(op.desc);
  h.inputs.push_back(accel::full_range_codes(rng, d.params.dtype(), layout.inputs[0].count));
}

}  // namespace

extern const OpHooks kQuantizeHooks = {.invoke = &invoke_on<QuantizeCall>,
                                       .invoke_reference = &invoke_reference_on<QuantizeCall>,
                                       .probe = &probe,
                                       .random_inputs = &quantize_inputs};
extern const OpHooks kDequantizeHooks = {.invoke = &invoke_on<DequantizeCall>,
                                         .invoke_reference = &invoke_reference_on<DequantizeCall>,
                                         .probe = &probe,
                                         .random_inputs = &dequantize_inputs};

}  // namespace op_table_detail
}  // namespace qforge
