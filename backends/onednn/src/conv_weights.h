// The weights of one convolution as dnnl::convolution_forward takes them, prepared once per
// call, or once per plan when W is fixed.
//
// oneDNN 2.6's int8 convolution takes s8 weights and no weights zero point, and it converts
// every int32 sum to float32 before storing it, even into an int32 destination (its kernels run
// the output stage in float), so a sum is exact only while |sum| <= 2^24. So:
//   - W int8 is taken as is; uint8 becomes w - 128 with zero points zw - 128 ((w - zw) is
//     unchanged). Zero points left after that are compensated by the plugin (conv_epilogue.h).
//   - The reduction of each group is split into `chunks` slices of C / groups / chunks input
//     channels, run as oneDNN groups of their own (groups * chunks groups, each with all O /
//     groups output channels of its group): max|x - zx| * sum over a slice of |w| <= 2^24 for
//     every output channel and slice, so every sum oneDNN converts is exact; the plugin adds
//     the slices in int32. The fewest chunks that divide C / groups and meet the bound are
//     taken (usually 1; random full-range weights need a few). The MACs are the same.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <utility>
#include <vector>

#include "qforge/op_desc.h"

namespace qforge::onednn {

class ConvWeights {
 public:
  // d was accepted by check_support(); w holds d.w_shape() codes of d.w_params.dtype().
  ConvWeights(const ConvDesc& d, const void* w);

  std::int64_t chunks() const noexcept { return chunks_; }
  // The remaining zero point of each output channel (after the uint8 shift); empty when all
  // are 0, i.e. nothing to compensate.
  const std::vector<std::int32_t>& zero_points() const noexcept { return zero_points_; }
  // [groups * chunks, O / groups, C / groups / chunks, KH, KW] s8 (goihw), or [O, C, KH, KW]
  // (oihw) when groups * chunks == 1.
  const dnnl::memory::desc& plain_desc() const noexcept { return plain_desc_; }
  // The weights in oneDNN format `md`, reordered from the plain copy the first time. Safe to
  // call from several threads at once (a plan's runs share one ConvWeights).
  const dnnl::memory& formatted(const dnnl::memory::desc& md, const dnnl::engine& engine,
                                dnnl::stream& stream) const;
  std::size_t bytes() const;

 private:
  std::int64_t chunks_ = 1;
  std::vector<std::int32_t> zero_points_;
  std::vector<std::int8_t> plain_;
  dnnl::memory::desc plain_desc_;
  // One entry per format asked for; a deque keeps references valid while one is added.
  mutable std::deque<std::pair<dnnl::memory::desc, dnnl::memory>> formatted_;
  mutable std::mutex mutex_;
};

// The oneDNN weights dims of d split into `chunks` (see ConvWeights::plain_desc).
dnnl::memory::dims conv_weights_dims(const ConvDesc& d, std::int64_t chunks);

}  // namespace qforge::onednn
