// conv_int32_bound and conv_int32_cannot_overflow (qforge/conv_bound.h).
#include "qforge/conv_bound.h"

#include <algorithm>
#include <limits>
#include <string>

#include "qforge/dtype.h"
#include "reference/detail.h"

namespace qforge::reference {

std::vector<ConvAccRange> conv_int32_bound(OpKind op, const ConvDesc& desc, const void* w,
                                           const std::int32_t* bias) {
  const std::string name = "conv_int32_bound";
  if (op != OpKind::conv_integer && op != OpKind::qlinear_conv && op != OpKind::conv_dequant)
    detail::fail(ErrorCode::invalid_argument, name,
                 "op " + std::string(to_string(op)) +
                     "; expected conv_integer, qlinear_conv or conv_dequant");
  detail::validate_conv(name, op, desc);
  // validate_conv bounded every extent, so these products are exact.
  const std::int64_t per_o = desc.c / desc.groups * desc.kernel_h * desc.kernel_w;
  detail::require_data(name, "w", w, desc.out_channels * per_o);
  const auto& tx = traits(desc.x_params.dtype());
  const std::int64_t zx = desc.x_params.zero_point();
  const std::int64_t up = tx.qmax - zx, down = tx.qmin - zx;  // up >= 0 >= down
  const bool per_tensor = desc.w_params.scheme().granularity == Granularity::per_tensor;
  std::vector<ConvAccRange> ranges(static_cast<std::size_t>(desc.out_channels));
  for (std::int64_t o = 0; o < desc.out_channels; ++o) {
    const std::int64_t zw = desc.w_params.zero_point(per_tensor ? 0 : static_cast<std::size_t>(o));
    ConvAccRange r;
    for (std::int64_t k = 0; k < per_o; ++k) {
      const std::int64_t c =
          load_element(desc.w_params.dtype(), w, static_cast<std::size_t>(o * per_o + k)) - zw;
      // |c| <= 255 and |up|, |down| <= 255: each term below 2^16, the sums far inside int64
      // for any reduction that fits memory.
      r.hi += std::max(c * up, c * down);
      r.lo += std::min(c * up, c * down);
    }
    if (bias) r.lo += bias[o], r.hi += bias[o];
    ranges[static_cast<std::size_t>(o)] = r;
  }
  return ranges;
}

bool conv_int32_cannot_overflow(OpKind op, const ConvDesc& desc, const void* w,
                                const std::int32_t* bias) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int32_t>::min(),
                         kMax = std::numeric_limits<std::int32_t>::max();
  const auto ranges = conv_int32_bound(op, desc, w, nullptr);
  for (std::size_t o = 0; o < ranges.size(); ++o) {
    const std::int64_t b = bias ? bias[o] : 0;
    const ConvAccRange& r = ranges[o];
    // acc alone (a backend may hold it before the bias is added) and acc + bias.
    if (r.lo < kMin || r.hi > kMax || r.lo + b < kMin || r.hi + b > kMax) return false;
  }
  return true;
}

}  // namespace qforge::reference
