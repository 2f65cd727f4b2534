// Words for workloads, buckets, policies and statuses: what reports, cache keys and the tools
// print. Nothing here is on the dispatch hot path.
#include <algorithm>
#include <variant>

#include "accelerator/workload_key.h"
#include "qforge/accelerator.h"

namespace qforge {
namespace {

using accel::bucket_extent;

std::string params_text(const QuantizationParams& p) {
  return std::string(name(p.dtype())) + "/" + to_string(p.scheme());
}

std::string upto(const char* label, std::int64_t extent) {
  return std::string(" ") + label + "<=" + std::to_string(bucket_extent(extent));
}

std::string shape_bucket(const Shape& shape) {
  std::int64_t outer = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) outer *= shape[i];
  return upto("rows", outer) + upto("cols", shape.empty() ? 1 : shape.back());
}

struct BucketText {
  OpKind op;
  std::string operator()(const QuantizeDesc& d) const {
    std::string s = " " + params_text(d.params);
    if (op == OpKind::quantize) s += std::string(" float=") + name(d.float_type);
    return s + shape_bucket(d.shape);
  }
  std::string operator()(const RequantizeDesc& d) const {
    return std::string(" s32->") + std::string(name(d.out_dtype)) + " " +
           std::string(to_string(d.mode)) +
           (d.multipliers.size() == 1 ? " per_tensor"
                                      : " per_axis(" + std::to_string(d.axis) + ")") +
           shape_bucket(d.shape);
  }
  std::string operator()(const MatmulDesc& d) const {
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
    return s + upto("m", d.m) + upto("n", d.n) + upto("k", d.k);
  }
  std::string operator()(const DynamicQuantizeDesc& d) const { return shape_bucket(d.shape); }
  std::string operator()(const ConvDesc& d) const {
    auto pair = [](std::int64_t a, std::int64_t b) {
      return std::to_string(a) + "x" + std::to_string(b);
    };
    std::string s = " " + std::string(to_string(d.layout)) + " x=" + params_text(d.x_params) +
                    " w=" + params_text(d.w_params);
    if (op != OpKind::conv_integer && d.bias != ConvBias::none)
      s += " bias=" + std::string(to_string(d.bias));
    if (op == OpKind::qlinear_conv && d.y_params)
      s += " y=" + std::string(name(d.y_params->dtype())) + "/" +
           std::string(to_string(d.y_params->scheme().mapping)) + " " +
           std::string(to_string(d.requant_mode));
    if (op != OpKind::conv_integer && d.activation != ConvActivation::none)
      s += " act=" + std::string(to_string(d.activation));
    s += " kernel=" + pair(d.kernel_h, d.kernel_w) + " stride=" + pair(d.stride_h, d.stride_w) +
         " dilation=" + pair(d.dilation_h, d.dilation_w);
    if (d.groups > 1 && d.groups == d.c) s += " depthwise";
    if (d.pad_top || d.pad_left || d.pad_bottom || d.pad_right) s += " padded";
    return s + upto("n", d.n) + upto("c", d.c) + upto("h", d.h) + upto("w", d.w) +
           upto("o", d.out_channels) + upto("groups", d.groups);
  }
  std::string operator()(const LinearDesc& d) const {
    return " w=" + params_text(d.w) + (d.has_bias ? " bias" : "") + upto("m", d.m) +
           upto("n", d.n) + upto("k", d.k);
  }
};

}  // namespace

std::string_view to_string(Residency r) noexcept {
  return r == Residency::host ? "host" : "device";
}

std::string_view to_string(CandidateStatus s) noexcept {
  switch (s) {
    case CandidateStatus::measured: return "measured";
    case CandidateStatus::wrong_result: return "wrong_result";
    case CandidateStatus::threw: return "threw";
    case CandidateStatus::timed_out: return "timed_out";
    case CandidateStatus::not_verified: return "not_verified";
    case CandidateStatus::not_measured: return "not_measured";
    case CandidateStatus::quarantined: return "quarantined";
    case CandidateStatus::unsupported: return "unsupported";
  }
  return "unknown";
}

std::string_view to_string(DecisionSource s) noexcept {
  switch (s) {
    case DecisionSource::memory: return "memory";
    case DecisionSource::cache: return "cache";
    case DecisionSource::tuned: return "tuned";
    case DecisionSource::fallback: return "fallback";
  }
  return "unknown";
}

std::string CandidateId::label() const {
  std::string s = plugin + "[" + std::to_string(device) + "]";
  if (!kernel.empty()) s += "/" + kernel;
  return s;
}

std::string Policy::tag() const {
  // Sorted, so that the same set written in another order shares the cache entries.
  std::vector<std::string> sorted = plugins;
  std::sort(sorted.begin(), sorted.end());
  std::string list;
  for (const auto& p : sorted) list += (list.empty() ? "" : ",") + p;
  return "plugins=" + (list.empty() ? std::string("*") : list) +
         ";device=" + (device_kind.empty() ? std::string("*") : device_kind) +
         ";transfers=" + (include_transfers ? "1" : "0");
}

std::string workload_bucket(const Workload& w) {
  return std::string(to_string(w.op.op)) + " " + std::string(to_string(w.residency)) +
         std::visit(BucketText{w.op.op}, w.op.desc);
}

std::string workload_cache_key(const Workload& w, const Policy& policy) {
  return accel::make_key(w).hex() + "@" + policy.tag();
}

}  // namespace qforge
