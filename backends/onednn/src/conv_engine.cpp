#include "conv_engine.h"

#include <unordered_map>

#include "conv_weights.h"
#include "qforge/error.h"
#include "scratchpad.h"

namespace qforge::onednn {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dt x_type(bool x_unsigned) { return x_unsigned ? dt::u8 : dt::s8; }

CachedConv create(const dnnl::engine& engine, const ConvKey& key) {
  const ConvDesc& d = key.geometry;
  const std::int64_t groups = d.groups * key.chunks;
  const dnnl::memory::desc src({d.n, d.c, d.h, d.w}, x_type(key.x_unsigned), tag::nhwc);
  const dnnl::memory::desc weights(conv_weights_dims(d, key.chunks), dt::s8, tag::any);
  const dnnl::memory::desc dst({d.n, groups * (d.out_channels / d.groups), d.out_h(), d.out_w()},
                               dt::s32, tag::nhwc);
  dnnl::primitive_attr attr = user_scratchpad_attr();
  if (key.src_zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  // oneDNN counts dilation from 0 (1 = one gap), ONNX from 1.
  const dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, weights, dst,
      {d.stride_h, d.stride_w}, {d.dilation_h - 1, d.dilation_w - 1}, {d.pad_top, d.pad_left},
      {d.pad_bottom, d.pad_right});
  dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  CachedConv c{pd, dnnl::convolution_forward(pd), pd.impl_info_str()};
  return c;
}

}  // namespace

std::vector<std::int64_t> ConvKey::fields() const {
  const ConvDesc& d = geometry;
  return {
      d.n,         d.c,        d.h,          d.w,          d.out_channels, d.kernel_h, d.kernel_w,
      d.stride_h,  d.stride_w, d.dilation_h, d.dilation_w, d.pad_top,      d.pad_left, d.pad_bottom,
      d.pad_right, d.groups,   chunks,       x_unsigned,   src_zero_point, threads};
}

const CachedConv& ConvEngine::primitive(const ConvKey& key, const dnnl::engine& engine) {
  const auto fields = key.fields();
  if (auto it = cache_.find(fields); it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  try {
    auto [it, inserted] = cache_.emplace(fields, create(engine, key));
    ++misses_;
    return it->second;
  } catch (const dnnl::error& e) {
    throw Error(ErrorCode::backend, "onednn: creating dnnl::convolution_forward for " +
                                        describe(key) + " failed: " + e.what() + " (status " +
                                        std::to_string(static_cast<int>(e.status)) + ")");
  }
}

void ConvEngine::run(const ConvKey& key, const CachedConv& prim, const void* x,
                     const dnnl::memory& weights, std::int32_t src_zero_point, std::int32_t* dst,
                     const dnnl::engine& engine, dnnl::stream& stream) {
  try {
    std::unordered_map<int, dnnl::memory> m;
    m.emplace(DNNL_ARG_SRC, dnnl::memory(prim.pd.src_desc(), engine, const_cast<void*>(x)));
    m.emplace(DNNL_ARG_WEIGHTS, weights);
    m.emplace(DNNL_ARG_DST, dnnl::memory(prim.pd.dst_desc(), engine, dst));
    std::int32_t zp = src_zero_point;
    if (key.src_zero_point)
      m.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
                dnnl::memory({{1}, dt::s32, tag::x}, engine, &zp));
    scratchpad_.add_to(m, prim.pd.scratchpad_desc(), engine);
    prim.primitive.execute(stream, m);
    stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(ErrorCode::backend, "onednn: executing dnnl::convolution_forward (" + prim.impl +
                                        ") for " + describe(key) + " failed: " + e.what());
  }
}

void reorder_nchw_to_nhwc(const ConvDesc& d, const void* x, void* nhwc, const dnnl::engine& engine,
                          dnnl::stream& stream) {
  const dt t = x_type(d.x_params.dtype() == DType::uint8);
  try {
    dnnl::memory src({{d.n, d.c, d.h, d.w}, t, tag::nchw}, engine, const_cast<void*>(x));
    dnnl::memory dst({{d.n, d.c, d.h, d.w}, t, tag::nhwc}, engine, nhwc);
    reorder_once(src, dst, stream);
  } catch (const dnnl::error& e) {
    throw Error(
        ErrorCode::backend,
        std::string("onednn: reordering convolution input NCHW -> NHWC failed: ") + e.what());
  }
}

std::string describe(const ConvKey& key) {
  const ConvDesc& d = key.geometry;
  auto s = [](std::int64_t v) { return std::to_string(v); };
  std::string out = "n=" + s(d.n) + " c=" + s(d.c) + " h=" + s(d.h) + " w=" + s(d.w) +
                    " o=" + s(d.out_channels) + " k=" + s(d.kernel_h) + "x" + s(d.kernel_w) +
                    " s=" + s(d.stride_h) + "x" + s(d.stride_w) + " d=" + s(d.dilation_h) + "x" +
                    s(d.dilation_w) + " p=" + s(d.pad_top) + "," + s(d.pad_left) + "," +
                    s(d.pad_bottom) + "," + s(d.pad_right) + " g=" + s(d.groups) +
                    " chunks=" + s(key.chunks) + (key.x_unsigned ? " u8" : " s8");
  if (key.src_zero_point) out += " src_zp";
  return out + " threads=" + std::to_string(key.threads);
}

}  // namespace qforge::onednn
