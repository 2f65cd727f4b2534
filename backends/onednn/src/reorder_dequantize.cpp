#include "reorder_dequantize.h"

#include <algorithm>

#include "qforge/error.h"

namespace qforge::onednn {
namespace {

using dt = dnnl::memory::data_type;

dnnl::memory::format_tag plain_tag(std::size_t rank) {
  switch (rank) {
    case 1: return dnnl::memory::format_tag::a;
    case 2: return dnnl::memory::format_tag::ab;
    default: return dnnl::memory::format_tag::abc;
  }
}

}  // namespace

ReorderDequantizer::ReorderDequantizer(dnnl::engine& engine, dnnl::stream& stream)
    : engine_(engine), stream_(stream) {}

std::string ReorderDequantizer::run(const QuantizeDesc& d, const void* q, float* x, int threads) {
  const QuantizationParams& p = d.params;
  p.validate_for(d.shape);
  const std::int64_t n = element_count(d.shape);
  Key key;
  key.is_unsigned = p.dtype() == DType::uint8;
  key.threads = threads;
  switch (p.scheme().granularity) {
    case Granularity::per_tensor:
      key.dims = {n};
      key.mask = 0;
      break;
    case Granularity::per_channel: {
      const auto axis = static_cast<std::size_t>(p.channel_axis(d.shape.size()));
      std::int64_t outer = 1, inner = 1;
      for (std::size_t i = 0; i < axis; ++i) outer *= d.shape[i];
      for (std::size_t i = axis + 1; i < d.shape.size(); ++i) inner *= d.shape[i];
      key.dims = {outer, d.shape[axis], inner};
      key.mask = 1 << 1;
      break;
    }
    case Granularity::block: {
      const std::int64_t last = d.shape.back(), b = p.scheme().block_size;
      key.dims = {n / last, last / b, b};
      key.mask = (1 << 0) | (1 << 1);
      break;
    }
  }
  const auto zps = p.zero_points();
  key.zero_points = std::any_of(zps.begin(), zps.end(), [](std::int32_t z) { return z != 0; });

  auto it = cache_.find(key);
  try {
    if (it == cache_.end()) {
      const dnnl::memory::dims dims(key.dims.begin(), key.dims.end());
      const dnnl::memory::desc src(dims, key.is_unsigned ? dt::u8 : dt::s8, plain_tag(dims.size()));
      const dnnl::memory::desc dst(dims, dt::f32, plain_tag(dims.size()));
      dnnl::primitive_attr attr = user_scratchpad_attr();
      attr.set_output_scales(key.mask, {DNNL_RUNTIME_F32_VAL});
      if (key.zero_points) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      dnnl::reorder::primitive_desc pd(engine_, src, engine_, dst, attr);
      it = cache_.emplace(key, Entry{pd, dnnl::reorder(pd), pd.impl_info_str()}).first;
    }
    const Entry& e = it->second;
    const auto count = static_cast<dnnl::memory::dim>(p.count());
    std::unordered_map<int, dnnl::memory> args;
    args.emplace(DNNL_ARG_FROM, dnnl::memory(e.pd.src_desc(), engine_, const_cast<void*>(q)));
    args.emplace(DNNL_ARG_TO, dnnl::memory(e.pd.dst_desc(), engine_, x));
    args.emplace(DNNL_ARG_ATTR_OUTPUT_SCALES,
                 dnnl::memory({{count}, dt::f32, dnnl::memory::format_tag::x}, engine_,
                              const_cast<float*>(p.scales().data())));
    if (key.zero_points)
      args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_FROM,
                   dnnl::memory({{1}, dt::s32, dnnl::memory::format_tag::x}, engine_,
                                const_cast<std::int32_t*>(zps.data())));
    scratchpad_.add_to(args, e.pd.scratchpad_desc(), engine_);
    e.primitive.execute(stream_, args);
    stream_.wait();
    return e.impl;
  } catch (const dnnl::error& err) {
    throw Error(ErrorCode::backend, "onednn: dequantize through dnnl::reorder (" + p.to_string() +
                                        ", shape " + to_string(d.shape) +
                                        ") failed: " + err.what());
  }
}

}  // namespace qforge::onednn
