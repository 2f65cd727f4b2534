// requantize (RequantizeDesc): its call, key, bucket words, probes, random inputs and work.
#include <cmath>
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

WorkloadKey make_key(const RequantizeDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(OpKind::requantize), r);
  b.put(static_cast<std::uint64_t>(d.out_dtype), 3);
  b.put(static_cast<std::uint64_t>(d.mode), 1);
  const bool per_axis = d.multipliers.size() != 1;
  b.put(per_axis ? 1 : 0, 1);
  b.put(per_axis ? axis_class(d.axis, d.shape.size()) : 0, 2);
  put_shape(b, d.shape);
  return b.key();
}

std::string bucket_words(OpKind, const RequantizeDesc& d) {
  return std::string(" s32->") + std::string(name(d.out_dtype)) + " " +
         std::string(to_string(d.mode)) +
         (d.multipliers.size() == 1 ? " per_tensor" : " per_axis(" + std::to_string(d.axis) + ")") +
         shape_bucket(d.shape);
}

}  // namespace accel

namespace op_table_detail {

std::vector<OpExample> requantize_examples(OpKind) {
  std::vector<OpExample> out;
  for (DType t : {DType::int8, DType::uint8}) {
    for (RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
      for (bool per_channel : {false, true}) {
        RequantizeDesc d;
        d.shape = {kExampleRows, kExampleCols};
        d.multipliers.assign(per_channel ? kExampleCols : 1, 0.0025f);
        d.axis = per_channel ? 1 : -1;
        d.out_dtype = t;
        d.out_zero_point = traits(t).is_signed ? 0 : 128;
        d.mode = mode;
        std::string label = "s32->" + dtype_short(t) + " " + std::string(to_string(mode)) +
                            (per_channel ? " per_channel(axis=1)" : " per_tensor");
        out.push_back({std::move(label), {OpKind::requantize, std::move(d)}});
      }
    }
  }
  return out;
}

OpWork requantize_work(const OpDesc& op) {
  const auto& d = std::get<RequantizeDesc>(op.desc);
  return {element_estimate(d.shape) * (4 + bytes_per(d.out_dtype)), OpWork::Unit::bytes};
}

namespace {

using accel::HostArrays;
using accel::IoLayout;
using accel::Rng;
using Returned = std::optional<QuantizationParams>;

struct RequantizeCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    t.requantize(std::get<RequantizeDesc>(op.desc), static_cast<const std::int32_t*>(in[0]),
                 out[0]);
    return std::nullopt;
  }
};

OpDesc probe(const OpDesc& real, int level, Rng& rng) {
  const auto& d = std::get<RequantizeDesc>(real.desc);
  RequantizeDesc p = d;
  p.shape = accel::shrink(d.shape, accel::caps_for(level, 0));
  std::size_t count = 1;
  if (d.multipliers.size() != 1) {
    const int rank = static_cast<int>(p.shape.size());
    const int axis = d.axis < 0 ? d.axis + rank : d.axis;
    count = axis >= 0 && axis < rank ? static_cast<std::size_t>(p.shape[axis]) : 1;
  }
  p.multipliers.resize(count);
  for (auto& m : p.multipliers)
    m = static_cast<float>(std::exp2(std::uniform_real_distribution<double>(-14.0, -2.0)(rng)));
  const auto& tr = traits(d.out_dtype);
  p.out_zero_point =
      static_cast<std::int32_t>(std::uniform_int_distribution<std::int32_t>(tr.qmin, tr.qmax)(rng));
  return OpDesc{real.op, p};
}

void random_inputs(const OpDesc&, const IoLayout& layout, Rng& rng, bool specials, HostArrays& h) {
  std::vector<std::int32_t> c(layout.inputs[0].count);
  for (auto& x : c) x = static_cast<std::int32_t>(accel::uniform(rng, -(1 << 22), 1 << 22));
  if (specials) {
    const std::int32_t list[] = {std::numeric_limits<std::int32_t>::min(),
                                 std::numeric_limits<std::int32_t>::max(), 0, -1};
    for (std::size_t i = 0; i < std::size(list) && i < c.size(); ++i) c[i] = list[i];
  }
  h.inputs.push_back(accel::int32_bytes(c));
}

}  // namespace

extern const OpHooks kRequantizeHooks = {.invoke = &invoke_on<RequantizeCall>,
                                         .invoke_reference = &invoke_reference_on<RequantizeCall>,
                                         .probe = &probe,
                                         .random_inputs = &random_inputs};

}  // namespace op_table_detail
}  // namespace qforge
