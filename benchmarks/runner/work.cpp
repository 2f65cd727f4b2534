#include "work.h"

#include <variant>

namespace qforge::bench {
namespace {

// An estimate in double, which never throws: a shape beyond the size limit is reported by the
// tuning that follows (every plugin refuses it), as one workload's error, not the run's end.
double count(const Shape& s) {
  double n = 1;
  for (const auto e : s) n *= static_cast<double>(e < 0 ? 0 : e);
  return n;
}
double bytes_per(DType t) { return traits(t).bits / 8.0; }

}  // namespace

Work work_of(const OpDesc& op) {
  switch (op.op) {
    case OpKind::quantize: {
      const auto& d = std::get<QuantizeDesc>(op.desc);
      return {count(d.shape) * (size_of(d.float_type) + bytes_per(d.params.dtype())), "GB/s"};
    }
    case OpKind::dequantize: {
      const auto& d = std::get<QuantizeDesc>(op.desc);
      return {count(d.shape) * (4 + bytes_per(d.params.dtype())), "GB/s"};
    }
    case OpKind::requantize: {
      const auto& d = std::get<RequantizeDesc>(op.desc);
      return {count(d.shape) * (4 + bytes_per(d.out_dtype)), "GB/s"};
    }
    case OpKind::dynamic_quantize_linear: {
      const auto& d = std::get<DynamicQuantizeDesc>(op.desc);
      return {count(d.shape) * 5, "GB/s"};
    }
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul:
    case OpKind::matmul_weight_only: {
      const auto& d = std::get<MatmulDesc>(op.desc);
      return {2.0 * static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k),
              "GOPS"};
    }
    case OpKind::linear_forward:
    case OpKind::linear_backward: {
      const auto& d = std::get<LinearDesc>(op.desc);
      const double products = op.op == OpKind::linear_forward ? 1 : 2;  // dX and dW
      return {products * 2.0 * static_cast<double>(d.m) * static_cast<double>(d.n) *
                  static_cast<double>(d.k),
              "GOPS"};
    }
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant: {
      const auto& d = std::get<ConvDesc>(op.desc);
      return {2.0 * count(d.y_shape()) * static_cast<double>(d.reduction()), "GOPS"};
    }
  }
  return {};
}

std::optional<double> WorkloadResult::speedup_vs_scalar() const {
  if (!report || !scalar_seconds || report->winner_seconds <= 0) return std::nullopt;
  return *scalar_seconds / report->winner_seconds;
}

std::optional<double> WorkloadResult::speedup_vs_anchor() const {
  if (!report || !anchor || report->winner_seconds <= 0 || anchor->seconds <= 0)
    return std::nullopt;
  return anchor->seconds / report->winner_seconds;
}

}  // namespace qforge::bench
