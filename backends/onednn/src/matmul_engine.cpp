#include "matmul_engine.h"

#include "qforge/error.h"
#include "scratchpad.h"

namespace qforge::onednn {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dt weights_type(const MatmulKey& k) { return k.kind == MatmulKind::f32 ? dt::f32 : dt::s8; }
dt src_type(const MatmulKey& k) {
  return k.kind == MatmulKind::f32 ? dt::f32 : k.a_unsigned ? dt::u8 : dt::s8;
}
dt dst_type(const MatmulKey& k) { return k.kind == MatmulKind::int8_s32 ? dt::s32 : dt::f32; }

CachedMatmul create(const dnnl::engine& engine, const MatmulKey& key) {
  const dnnl::memory::desc src({key.m, key.k}, src_type(key), tag::ab);
  const dnnl::memory::desc weights =
      key.weights == WeightsFormat::any
          ? dnnl::memory::desc({key.k, key.n}, weights_type(key), tag::any)
          : MatmulEngine::plain_weights_desc(key);
  const dnnl::memory::desc dst({key.m, key.n}, dst_type(key), tag::ab);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (key.src_zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (key.weights_zero_point) attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {DNNL_RUNTIME_S32_VAL});
  if (key.kind == MatmulKind::int8_f32) {
    // ((float(C) * sa) * sb) + bias in this order, as three binary post-ops (multiply by sa
    // [1, 1], multiply by sb [1, 1] or [1, N], add the bias [1, N]) on the converted int32 sum:
    // oneDNN applies them one by one (separate vector multiplies and add, no FMA), which
    // reproduces reference::matmul_dequant bit for bit (tests/onednn checks it). Not output
    // scales: runtime output scales send oneDNN 2.6 from its brgemm/AMX kernels to gemm:jit
    // (measured 5-7x slower), and its matmul bias argument is added before the output scales
    // for int8 (dst = scale * (acc + bias), measured).
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_mul, dnnl::memory::desc({1, 1}, dt::f32, tag::ab));
    ops.append_binary(dnnl::algorithm::binary_mul,
                      dnnl::memory::desc({1, key.sb_per_column ? key.n : 1}, dt::f32, tag::ab));
    if (key.bias)
      ops.append_binary(dnnl::algorithm::binary_add,
                        dnnl::memory::desc({1, key.n}, dt::f32, tag::ab));
    attr.set_post_ops(ops);
  }
  const dnnl::matmul::desc desc(src, weights, dst);
  dnnl::matmul::primitive_desc pd(desc, attr, engine);
  CachedMatmul c{pd, dnnl::matmul(pd), pd.impl_info_str()};
  return c;
}

}  // namespace

std::size_t MatmulKeyHash::operator()(const MatmulKey& k) const noexcept {
  std::size_t h = 0;
  auto mix = [&h](std::uint64_t v) {
    h ^= std::hash<std::uint64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  };
  mix(static_cast<std::uint64_t>(k.m));
  mix(static_cast<std::uint64_t>(k.n));
  mix(static_cast<std::uint64_t>(k.k));
  mix((static_cast<std::uint64_t>(k.kind) << 0) | (static_cast<std::uint64_t>(k.a_unsigned) << 4) |
      (static_cast<std::uint64_t>(k.weights) << 5) |
      (static_cast<std::uint64_t>(k.src_zero_point) << 8) |
      (static_cast<std::uint64_t>(k.weights_zero_point) << 9) |
      (static_cast<std::uint64_t>(k.bias) << 10) |
      (static_cast<std::uint64_t>(k.sb_per_column) << 12));
  mix(static_cast<std::uint64_t>(k.threads));
  return h;
}

namespace {
// Fails inside the plugin's create(), with a message naming oneDNN, when the library cannot
// give a CPU engine, instead of at the first op.
dnnl::engine make_cpu_engine() {
  try {
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  } catch (const dnnl::error& e) {
    throw Error(ErrorCode::unavailable,
                std::string("onednn: oneDNN could not create a CPU engine: ") + e.what());
  }
}
}  // namespace

MatmulEngine::MatmulEngine() : engine_(make_cpu_engine()), stream_(engine_) {}

MatmulEngine::MatmulEngine(const dnnl::engine& engine) : engine_(engine), stream_(engine_) {}

dnnl::memory::desc MatmulEngine::plain_weights_desc(const MatmulKey& key) {
  return dnnl::memory::desc({key.k, key.n}, weights_type(key),
                            key.weights == WeightsFormat::nk ? tag::ba : tag::ab);
}

const CachedMatmul& MatmulEngine::primitive(const MatmulKey& key) {
  if (auto it = cache_.find(key); it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  try {
    auto [it, inserted] = cache_.emplace(key, create(engine_, key));
    ++misses_;
    return it->second;
  } catch (const dnnl::error& e) {
    throw Error(ErrorCode::backend, "onednn: creating dnnl::matmul for " + describe(key) +
                                        " failed: " + e.what() + " (status " +
                                        std::to_string(static_cast<int>(e.status)) + ")");
  }
}

dnnl::memory MatmulEngine::wrap_weights(const MatmulKey& key, const void* b) {
  return dnnl::memory(plain_weights_desc(key), engine_, const_cast<void*>(b));
}

void MatmulEngine::run(const MatmulKey& key, const CachedMatmul& prim, const MatmulArgs& args) {
  try {
    std::unordered_map<int, dnnl::memory> m;
    m.emplace(DNNL_ARG_SRC, dnnl::memory(prim.pd.src_desc(), engine_, const_cast<void*>(args.a)));
    m.emplace(DNNL_ARG_WEIGHTS, *args.weights);
    m.emplace(DNNL_ARG_DST, dnnl::memory(prim.pd.dst_desc(), engine_, args.dst));
    const dnnl::memory::desc one_s32({1}, dt::s32, tag::x);
    std::int32_t src_zp = args.src_zero_point, wei_zp = args.weights_zero_point;
    if (key.src_zero_point)
      m.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, dnnl::memory(one_s32, engine_, &src_zp));
    if (key.weights_zero_point)
      m.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_WEIGHTS,
                dnnl::memory(one_s32, engine_, &wei_zp));
    if (key.kind == MatmulKind::int8_f32) {
      m.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                dnnl::memory({{1, 1}, dt::f32, tag::ab}, engine_, const_cast<float*>(args.sa)));
      m.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1,
                dnnl::memory({{1, key.sb_per_column ? key.n : 1}, dt::f32, tag::ab}, engine_,
                             const_cast<float*>(args.sb)));
      if (key.bias)
        m.emplace(
            DNNL_ARG_ATTR_MULTIPLE_POST_OP(2) | DNNL_ARG_SRC_1,
            dnnl::memory({{1, key.n}, dt::f32, tag::ab}, engine_, const_cast<float*>(args.bias)));
    }
    scratchpad_.add_to(m, prim.pd.scratchpad_desc(), engine_);
    prim.primitive.execute(stream_, m);
    stream_.wait();
  } catch (const dnnl::error& e) {
    throw Error(ErrorCode::backend, "onednn: executing dnnl::matmul (" + prim.impl + ") for " +
                                        describe(key) + " failed: " + e.what());
  }
}

std::string describe(const MatmulKey& k) {
  std::string s =
      "m=" + std::to_string(k.m) + " n=" + std::to_string(k.n) + " k=" + std::to_string(k.k) + " ";
  switch (k.kind) {
    case MatmulKind::int8_s32: s += k.a_unsigned ? "u8s8->s32" : "s8s8->s32"; break;
    case MatmulKind::int8_f32: s += k.a_unsigned ? "u8s8->f32" : "s8s8->f32"; break;
    case MatmulKind::f32: s += "f32->f32"; break;
  }
  s += k.weights == WeightsFormat::any  ? " weights=any"
       : k.weights == WeightsFormat::nk ? " weights=nk"
                                        : " weights=kn";
  if (k.src_zero_point) s += " src_zp";
  if (k.weights_zero_point) s += " wei_zp";
  if (k.kind == MatmulKind::int8_f32) s += k.sb_per_column ? " sb(per column)" : " sb(per tensor)";
  if (k.bias) s += " bias";
  s += " threads=" + std::to_string(k.threads);
  return s;
}

}  // namespace qforge::onednn
