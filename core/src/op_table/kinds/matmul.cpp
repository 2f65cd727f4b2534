// The kinds on MatmulDesc: matmul_integer, matmul_dequant, qlinear_matmul and
// matmul_weight_only (float A: its `a` params are not read). Their calls, key, bucket words,
// probes, random inputs, magnitudes and work.
#include <cmath>
#include <cstring>

#include "accelerator/bucket_words.h"
#include "accelerator/key_builder.h"
#include "accelerator/probe_shapes.h"
#include "accelerator/random_values.h"
#include "op_table/kinds/example_params.h"
#include "op_table/op_hooks.h"
#include "qforge/checked_size.h"
#include "qforge/reference.h"

namespace qforge {
namespace accel {

WorkloadKey make_key(OpKind op, const MatmulDesc& d, Residency r) noexcept {
  KeyBuilder b(static_cast<std::uint64_t>(op), r);
  // matmul_weight_only's A is float32 whatever d.a says: its params do not split buckets.
  const bool weight_only = op == OpKind::matmul_weight_only;
  if (weight_only) b.put(0, 29);
  else put_params(b, d.a, 2);
  put_params(b, d.b, 2);
  b.put(static_cast<std::uint64_t>(d.b_layout), 1);
  const bool dequant = op == OpKind::matmul_dequant;
  const bool qlinear = op == OpKind::qlinear_matmul;
  b.put((dequant || weight_only || qlinear) && d.has_bias ? 1 : 0, 1);
  b.put(dequant ? static_cast<std::uint64_t>(d.out_type) : 0, 2);
  b.put(qlinear ? static_cast<std::uint64_t>(d.requant_mode) : 0, 1);
  const bool has_y = qlinear && d.y.has_value();
  b.put(has_y ? 1 : 0, 1);
  b.put(has_y ? static_cast<std::uint64_t>(d.y->dtype()) : 0, 3);
  b.put(has_y ? static_cast<std::uint64_t>(d.y->scheme().mapping) : 0, 2);
  b.put(qlinear ? static_cast<std::uint64_t>(d.activation) : 0, 2);
  b.dim(d.m);
  b.dim(d.n);
  b.dim(d.k);
  return b.key();
}

std::string bucket_words(OpKind op, const MatmulDesc& d) {
  const bool weight_only = op == OpKind::matmul_weight_only;
  std::string s = " a=" + (weight_only ? std::string("float32") : params_text(d.a)) +
                  " b=" + params_text(d.b) + " " + std::string(to_string(d.b_layout));
  if (weight_only && d.has_bias) s += " bias";
  if (op == OpKind::matmul_dequant)
    s += std::string(" out=") + name(d.out_type) + (d.has_bias ? " bias" : "");
  if (op == OpKind::qlinear_matmul && d.y)
    s += " y=" + std::string(name(d.y->dtype())) + "/" +
         std::string(to_string(d.y->scheme().mapping)) + " " +
         std::string(to_string(d.requant_mode));
  if (op == OpKind::qlinear_matmul && d.has_bias) s += " bias=int32";
  if (op == OpKind::qlinear_matmul && d.activation != ConvActivation::none)
    s += " act=" + std::string(to_string(d.activation));
  return s + upto("m", d.m) + upto("n", d.n) + upto("k", d.k);
}

}  // namespace accel

namespace op_table_detail {

namespace {

// The (A, B) operand pairs every matmul example is built from.
struct MatmulPair {
  DType a, b;
  Granularity b_granularity;
  MatrixLayout layout;
};

std::vector<MatmulPair> matmul_pairs(bool with_int4_blocks) {
  std::vector<MatmulPair> pairs;
  for (MatrixLayout layout : {MatrixLayout::kn, MatrixLayout::nk})
    for (DType a : {DType::uint8, DType::int8})
      for (Granularity g : {Granularity::per_tensor, Granularity::per_channel})
        pairs.push_back({a, DType::int8, g, layout});
  // Block-wise B runs along K, so only the nk layout carries it (op_desc.h).
  pairs.push_back({DType::int8, DType::int8, Granularity::block, MatrixLayout::nk});
  if (with_int4_blocks)
    pairs.push_back({DType::int8, DType::int4, Granularity::block, MatrixLayout::nk});
  return pairs;
}

MatmulDesc example_matmul(const MatmulPair& p) {
  // B's channels are columns of the [K, N] view: axis 1 for kn, axis 0 for nk.
  const bool kn = p.layout == MatrixLayout::kn;
  const std::int64_t rows = kn ? kExampleK : kExampleN, cols = kn ? kExampleN : kExampleK;
  return MatmulDesc{kExampleM,
                    kExampleN,
                    kExampleK,
                    example_params(p.a, Granularity::per_tensor, kExampleM, kExampleK, 0),
                    example_params(p.b, p.b_granularity, rows, cols, kn ? 1 : 0),
                    p.layout,
                    /*has_bias=*/false,
                    FloatType::f32,
                    /*y=*/std::nullopt,
                    RequantMode::float_multiplier};
}

std::string matmul_label(const MatmulDesc& d) {
  return dtype_short(d.a.dtype()) + "x" + dtype_short(d.b.dtype()) + " " +
         std::string(to_string(d.b_layout)) + " b=" + to_string(d.b.scheme());
}

}  // namespace

std::vector<OpExample> matmul_examples(OpKind op) {
  std::vector<OpExample> out;
  for (const MatmulPair& p : matmul_pairs(op != OpKind::qlinear_matmul)) {
    MatmulDesc d = example_matmul(p);
    std::string label = matmul_label(d);
    if (op == OpKind::matmul_dequant) d.has_bias = true;
    if (op == OpKind::qlinear_matmul) {
      // The output takes A's type, as ONNX QLinearMatMul's usual u8/s8 graphs do.
      d.y = example_params(p.a, Granularity::per_tensor, kExampleM, kExampleN, 0);
      for (RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
        MatmulDesc dm = d;
        dm.requant_mode = mode;
        out.push_back({label + " " + std::string(to_string(mode)), {op, dm}});
        // The fused form of a Gemm + Relu between quantized layers: int32 bias, clamped codes.
        dm.has_bias = true;
        dm.activation = ConvActivation::relu;
        out.push_back(
            {label + " " + std::string(to_string(mode)) + " bias relu", {op, std::move(dm)}});
      }
      continue;
    }
    out.push_back({std::move(label), {op, std::move(d)}});
  }
  return out;
}

// Float A against int4 / uint4 / int8 B in blocks of 32 along K (MatMulNBits) and per column.
std::vector<OpExample> weight_only_examples(OpKind) {
  std::vector<OpExample> out;
  for (DType b : {DType::int4, DType::uint4, DType::int8})
    for (Granularity g : {Granularity::block, Granularity::per_channel}) {
      MatmulDesc d = example_matmul({DType::int8, b, g, MatrixLayout::nk});
      d.has_bias = true;
      std::string label = "f32x" + dtype_short(b) + " nk b=" + to_string(d.b.scheme());
      out.push_back({std::move(label), {OpKind::matmul_weight_only, std::move(d)}});
    }
  return out;
}

OpWork matmul_work(const OpDesc& op) {
  const auto& d = std::get<MatmulDesc>(op.desc);
  return {static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k),
          OpWork::Unit::multiply_adds};
}

namespace {

using accel::HostArrays;
using accel::IoLayout;
using accel::Rng;
using Returned = std::optional<QuantizationParams>;

const float* f32(const void* p) { return static_cast<const float*>(p); }
const std::int32_t* i32(const void* p) { return static_cast<const std::int32_t*>(p); }

struct MatmulIntegerCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    t.matmul_integer(std::get<MatmulDesc>(op.desc), in[0], in[1],
                     static_cast<std::int32_t*>(out[0]));
    return std::nullopt;
  }
};

// A's params given at run (MatmulDesc::a_params_at_run): the last two inputs.
float run_a_scale(const MatmulDesc& d, const void* const* in) {
  float s = 0;
  std::memcpy(&s, in[d.has_bias ? 3 : 2], sizeof s);
  return s;
}
std::int32_t run_a_zero_point(const MatmulDesc& d, const void* const* in) {
  std::int32_t z = 0;
  std::memcpy(&z, in[d.has_bias ? 4 : 3], sizeof z);
  return z;
}

struct MatmulDequantCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    const auto& d = std::get<MatmulDesc>(op.desc);
    const float* bias = d.has_bias ? f32(in[2]) : nullptr;
    // The flagged op is the plain one on A's params built from the run's values.
    if (d.a_params_at_run)
      t.matmul_dequant(
          reference::with_a_params_at_run(d, run_a_scale(d, in), run_a_zero_point(d, in)), in[0],
          in[1], bias, out[0]);
    else t.matmul_dequant(d, in[0], in[1], bias, out[0]);
    return std::nullopt;
  }
};

struct QlinearMatmulCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    const auto& d = std::get<MatmulDesc>(op.desc);
    if (d.has_bias) t.qlinear_matmul_bias(d, in[0], in[1], i32(in[2]), out[0]);
    else t.qlinear_matmul(d, in[0], in[1], out[0]);
    return std::nullopt;
  }
};

struct MatmulWeightOnlyCall {
  template <class Ops>
  static Returned run(Ops& t, const OpDesc& op, const void* const* in, void* const* out,
                      const Returned&) {
    const auto& d = std::get<MatmulDesc>(op.desc);
    t.matmul_weight_only(d, f32(in[0]), in[1], d.has_bias ? f32(in[2]) : nullptr,
                         static_cast<float*>(out[0]));
    return std::nullopt;
  }
};

OpDesc probe(const OpDesc& real, int level, Rng& rng) {
  const auto& d = std::get<MatmulDesc>(real.desc);
  const accel::Caps c =
      accel::caps_for(level, std::max(accel::block_of(d.a), accel::block_of(d.b)));
  MatmulDesc p = d;
  p.m = accel::cap(d.m, c.m);
  p.n = accel::cap(d.n, c.n);
  p.k = accel::cap(d.k, c.last);
  p.a = accel::random_params(rng, d.a.dtype(), d.a.scheme(), p.a_shape());
  p.b = accel::random_params(rng, d.b.dtype(), d.b.scheme(), p.b_shape());
  if (d.y) {
    // An output scale that keeps most results inside the code range: about the spread of
    // C (sqrt(K) products of a few dozen codes each) over the range's half width.
    const double spread = std::sqrt(static_cast<double>(p.k)) * 40.0 * 40.0 *
                          accel::abs_max_scale(p.a) * accel::abs_max_scale(p.b);
    const float sy = static_cast<float>(spread / 64.0);
    const DType yt = d.y->dtype();
    p.y = d.y->scheme().mapping == Mapping::affine
              ? QuantizationParams::per_tensor_affine(yt, sy,
                                                      std::uniform_int_distribution<std::int32_t>(
                                                          traits(yt).qmin, traits(yt).qmax)(rng))
              : QuantizationParams(yt, d.y->scheme(), {sy});
  }
  return OpDesc{real.op, p};
}

// Multiply-adds: M * N * K can exceed int64 even for a valid descriptor.
std::int64_t probe_macs(const OpDesc& real) noexcept {
  const auto& d = std::get<MatmulDesc>(real.desc);
  return saturating_mul(saturating_mul(d.m, d.n), std::max<std::int64_t>(d.k, 1));
}

// Codes in windows that keep the int32 sums exact; matmul_dequant's bias as floats.
void integer_inputs(const OpDesc& op, const IoLayout& layout, Rng& rng, bool, HostArrays& h) {
  const auto& d = std::get<MatmulDesc>(op.desc);
  const bool int_bias = op.op == OpKind::qlinear_matmul && d.has_bias;
  // One more term than K for qlinear_matmul's int32 bias: |C| + |bias| stays inside int32.
  const std::int64_t w = accel::overflow_window(int_bias ? d.k + 1 : d.k);
  // A's params given at run are drawn afresh for every run, and A's codes around them.
  std::optional<QuantizationParams> run_a;
  if (d.a_params_at_run) run_a = accel::random_params(rng, d.a.dtype(), d.a.scheme(), d.a_shape());
  h.inputs.push_back(accel::window_codes(rng, run_a ? *run_a : d.a, d.a_shape(), w));
  h.inputs.push_back(accel::window_codes(rng, d.b, d.b_shape(), w));
  if (op.op == OpKind::matmul_dequant && d.has_bias)
    h.inputs.push_back(
        accel::float_bytes(FloatType::f32, accel::normal_floats(rng, layout.inputs[2].count, 1.0)));
  if (int_bias) {
    const std::int64_t limit = std::min<std::int64_t>(std::int64_t{1} << 20, w * w);
    std::vector<std::int32_t> b(static_cast<std::size_t>(d.n));
    for (auto& v : b) v = static_cast<std::int32_t>(accel::uniform(rng, -limit, limit));
    h.inputs.push_back(accel::int32_bytes(b));
  }
  if (run_a) {
    h.inputs.push_back(accel::float_bytes(FloatType::f32, {run_a->scale()}));
    h.inputs.push_back(accel::int32_bytes({run_a->zero_point()}));
  }
}

void weight_only_inputs(const OpDesc& op, const IoLayout& layout, Rng& rng, bool, HostArrays& h) {
  const auto& d = std::get<MatmulDesc>(op.desc);
  h.inputs.push_back(
      accel::float_bytes(FloatType::f32, accel::normal_floats(rng, layout.inputs[0].count, 1.0)));
  h.inputs.push_back(accel::full_range_codes(rng, d.b.dtype(), layout.inputs[1].count));
  if (d.has_bias)
    h.inputs.push_back(
        accel::float_bytes(FloatType::f32, accel::normal_floats(rng, layout.inputs[2].count, 1.0)));
}

std::size_t b_pair(const QuantizationParams& b, std::int64_t n, std::int64_t k,
                   std::int64_t depth) {
  switch (b.scheme().granularity) {
    case Granularity::per_tensor: return 0;
    case Granularity::per_channel: return static_cast<std::size_t>(n);
    case Granularity::block: break;
  }
  const std::int64_t bs = b.scheme().block_size;
  return static_cast<std::size_t>(n * ((depth + bs - 1) / bs) + k / bs);
}

// |C·sa·sb| + |bias| per output, per block for block-wise B (accelerator/magnitude.cpp).
void dequant_magnitudes(const OpDesc& op, const HostArrays& h,
                        std::vector<std::vector<double>>& out) {
  const auto& flagged = std::get<MatmulDesc>(op.desc);
  std::optional<MatmulDesc> plain;
  if (flagged.a_params_at_run) {
    std::array<const void*, kMaxOperands> in{};
    for (std::size_t i = 0; i < h.inputs.size() && i < in.size(); ++i) in[i] = h.inputs[i].data();
    plain = reference::with_a_params_at_run(flagged, run_a_scale(flagged, in.data()),
                                            run_a_zero_point(flagged, in.data()));
  }
  const MatmulDesc& d = plain ? *plain : flagged;
  const auto* a = h.inputs[0].data();
  const auto* b = h.inputs[1].data();
  const bool kn = d.b_layout == MatrixLayout::kn;
  const bool blocks = d.b.scheme().granularity == Granularity::block;
  const std::int64_t bs = blocks ? d.b.scheme().block_size : d.k + 1;
  std::vector<double> mag(static_cast<std::size_t>(d.m * d.n), 0.0);
  for (std::int64_t m = 0; m < d.m; ++m) {
    const std::size_t ap = d.a.count() == 1 ? 0 : static_cast<std::size_t>(m);
    const double sa = d.a.scale(ap);
    const std::int32_t za = d.a.zero_point(ap);
    for (std::int64_t n = 0; n < d.n; ++n) {
      double total = 0;
      for (std::int64_t k0 = 0; k0 < d.k; k0 += bs) {
        const std::int64_t k1 = std::min(d.k, k0 + bs);
        const std::size_t bp = b_pair(d.b, n, k0, d.k);
        double block = 0;
        for (std::int64_t k = k0; k < k1; ++k) {
          const auto av = load_element(d.a.dtype(), a, static_cast<std::size_t>(m * d.k + k)) - za;
          const auto bi = static_cast<std::size_t>(kn ? k * d.n + n : n * d.k + k);
          const auto bv = load_element(d.b.dtype(), b, bi) - d.b.zero_point(bp);
          block += std::fabs(static_cast<double>(av)) * std::fabs(static_cast<double>(bv));
        }
        total += block * sa * d.b.scale(bp);
      }
      if (d.has_bias) {
        float bias = 0;
        std::memcpy(&bias, h.inputs[2].data() + n * 4, 4);
        total += std::fabs(bias);
      }
      mag[static_cast<std::size_t>(m * d.n + n)] = total;
    }
  }
  out[0] = std::move(mag);
}

}  // namespace

extern const OpHooks kMatmulIntegerHooks = {
    .invoke = &invoke_on<MatmulIntegerCall>,
    .invoke_reference = &invoke_reference_on<MatmulIntegerCall>,
    .probe = &probe,
    .probe_macs = &probe_macs,
    .random_inputs = &integer_inputs};
extern const OpHooks kMatmulDequantHooks = {
    .invoke = &invoke_on<MatmulDequantCall>,
    .invoke_reference = &invoke_reference_on<MatmulDequantCall>,
    .probe = &probe,
    .probe_macs = &probe_macs,
    .random_inputs = &integer_inputs,
    .magnitudes = &dequant_magnitudes};
extern const OpHooks kQlinearMatmulHooks = {
    .invoke = &invoke_on<QlinearMatmulCall>,
    .invoke_reference = &invoke_reference_on<QlinearMatmulCall>,
    .probe = &probe,
    .probe_macs = &probe_macs,
    .random_inputs = &integer_inputs};
extern const OpHooks kMatmulWeightOnlyHooks = {
    .invoke = &invoke_on<MatmulWeightOnlyCall>,
    .invoke_reference = &invoke_reference_on<MatmulWeightOnlyCall>,
    .probe = &probe,
    .probe_macs = &probe_macs,
    .random_inputs = &weight_only_inputs};

}  // namespace op_table_detail
}  // namespace qforge
