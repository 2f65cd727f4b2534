#include "conv_weights.h"

#include <cstdlib>
#include <string>

#include "qforge/error.h"
#include "scratchpad.h"
#include "support_rules.h"

namespace qforge::onednn {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// The fewest slices of the cg input channels of a group that keep every slice's sum within
// kConvExactBound: xmax * sum over the slice of |w[o, c, kh, kw]| for every output channel.
// abs_by_channel[o * cg + c] = sum over kh, kw of |w[o, c, kh, kw]|.
std::int64_t choose_chunks(const std::vector<std::int64_t>& abs_by_channel, std::int64_t o,
                           std::int64_t cg, std::int64_t xmax) {
  for (std::int64_t chunks = 1; chunks <= cg; ++chunks) {
    if (cg % chunks != 0) continue;
    const std::int64_t len = cg / chunks;
    bool fits = true;
    for (std::int64_t oc = 0; oc < o && fits; ++oc)
      for (std::int64_t j = 0; j < chunks && fits; ++j) {
        std::int64_t s = 0;
        for (std::int64_t c = j * len; c < (j + 1) * len; ++c)
          s += abs_by_channel[static_cast<std::size_t>(oc * cg + c)];
        fits = s * xmax <= kConvExactBound;
      }
    if (fits) return chunks;
  }
  // check_support() refused kernels whose single channel can exceed the bound.
  throw Error(ErrorCode::internal,
              "onednn: conv: no split of the reduction keeps oneDNN's sums within 2^24");
}

}  // namespace

dnnl::memory::dims conv_weights_dims(const ConvDesc& d, std::int64_t chunks) {
  const std::int64_t groups = d.groups * chunks;
  if (groups == 1) return {d.out_channels, d.c, d.kernel_h, d.kernel_w};
  return {groups, d.out_channels / d.groups, d.c / d.groups / chunks, d.kernel_h, d.kernel_w};
}

ConvWeights::ConvWeights(const ConvDesc& d, const void* w) {
  const std::int64_t o = d.out_channels, cg = d.c / d.groups, taps = d.kernel_h * d.kernel_w;
  const std::int64_t og = o / d.groups;
  const bool shift = d.w_params.dtype() == DType::uint8;
  const auto* codes = static_cast<const std::uint8_t*>(w);
  auto value = [&](std::int64_t i) -> std::int32_t {  // w as s8 (uint8 shifted by -128)
    return shift ? static_cast<std::int32_t>(codes[i]) - 128
                 : static_cast<std::int32_t>(static_cast<std::int8_t>(codes[i]));
  };

  const bool per_tensor = d.w_params.scheme().granularity == Granularity::per_tensor;
  bool any_zero_point = false;
  std::vector<std::int32_t> zps(static_cast<std::size_t>(o));
  for (std::int64_t oc = 0; oc < o; ++oc) {
    const std::int32_t z =
        d.w_params.zero_point(per_tensor ? 0 : static_cast<std::size_t>(oc)) - (shift ? 128 : 0);
    zps[static_cast<std::size_t>(oc)] = z;
    any_zero_point |= z != 0;
  }
  if (any_zero_point) zero_points_ = std::move(zps);

  std::vector<std::int64_t> abs_by_channel(static_cast<std::size_t>(o * cg), 0);
  for (std::int64_t oc = 0; oc < o; ++oc)
    for (std::int64_t c = 0; c < cg; ++c) {
      std::int64_t s = 0;
      const std::int64_t base = (oc * cg + c) * taps;
      for (std::int64_t t = 0; t < taps; ++t) s += std::abs(value(base + t));
      abs_by_channel[static_cast<std::size_t>(oc * cg + c)] = s;
    }
  chunks_ = cg > 0 ? choose_chunks(abs_by_channel, o, cg, conv_x_magnitude(d)) : 1;

  // [G, chunks, O / G, C / G / chunks, KH, KW] from OIHW [G, O / G, C / G, KH, KW].
  const std::int64_t len = cg / chunks_;
  plain_.resize(static_cast<std::size_t>(o * cg * taps));
  std::size_t i = 0;
  for (std::int64_t g = 0; g < d.groups; ++g)
    for (std::int64_t j = 0; j < chunks_; ++j)
      for (std::int64_t ol = 0; ol < og; ++ol)
        for (std::int64_t c = j * len; c < (j + 1) * len; ++c) {
          const std::int64_t base = ((g * og + ol) * cg + c) * taps;
          for (std::int64_t t = 0; t < taps; ++t)
            plain_[i++] = static_cast<std::int8_t>(value(base + t));
        }
  const dnnl::memory::dims dims = conv_weights_dims(d, chunks_);
  plain_desc_ = dnnl::memory::desc(dims, dt::s8, dims.size() == 4 ? tag::oihw : tag::goihw);
}

const dnnl::memory& ConvWeights::formatted(const dnnl::memory::desc& md, const dnnl::engine& engine,
                                           dnnl::stream& stream) const {
  std::lock_guard lock(mutex_);
  for (const auto& [desc, mem] : formatted_)
    if (desc == md) return mem;
  try {
    dnnl::memory plain(plain_desc_, engine, const_cast<std::int8_t*>(plain_.data()));
    dnnl::memory out(md, engine);
    reorder_once(plain, out, stream);
    formatted_.emplace_back(md, out);
    return formatted_.back().second;
  } catch (const dnnl::error& e) {
    throw Error(ErrorCode::backend,
                std::string("onednn: reordering convolution weights failed: ") + e.what());
  }
}

std::size_t ConvWeights::bytes() const {
  std::lock_guard lock(mutex_);
  std::size_t b = plain_.size() + zero_points_.size() * sizeof(std::int32_t);
  for (const auto& f : formatted_) b += f.first.get_size();
  return b;
}

}  // namespace qforge::onednn
