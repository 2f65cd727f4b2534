// matmul_dequant with A's params given at run (MatmulDesc::a_params_at_run): the check of the
// run's values, the plain descriptor they make, and the bound on the zero points a run may bring.
// The flagged op is defined as the plain op on that descriptor, so every backend's result stays
// bit-comparable to the unflagged op's.
#include <cmath>
#include <cstdlib>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {

void check_a_params_at_run(const MatmulDesc& desc, float scale, std::int32_t zero_point) {
  if (!(std::isfinite(scale) && scale > 0.0f))
    detail::fail(ErrorCode::invalid_argument, "matmul_dequant",
                 "a_scale = " + detail::float_text(scale) +
                     " (A's params given at run); expected a finite value > 0");
  const auto& t = traits(desc.a.dtype());
  if (zero_point < t.qmin || zero_point > t.qmax)
    detail::fail(ErrorCode::invalid_argument, "matmul_dequant",
                 "a_zero_point = " + std::to_string(zero_point) +
                     " (A's params given at run); expected a value in the " + std::string(t.name) +
                     " range [" + std::to_string(t.qmin) + ", " + std::to_string(t.qmax) + "]");
  // Symmetric A has its mapping's fixed zero point, which the descriptor's params hold.
  if (desc.a.scheme().mapping != Mapping::affine && !desc.a.zero_points().empty() &&
      zero_point != desc.a.zero_point(0))
    detail::fail(ErrorCode::invalid_argument, "matmul_dequant",
                 "a_zero_point = " + std::to_string(zero_point) + " with the " +
                     std::string(to_string(desc.a.scheme().mapping)) + " mapping on " +
                     std::string(t.name) + " (A's params given at run); expected " +
                     std::to_string(desc.a.zero_point(0)));
}

MatmulDesc with_a_params_at_run(const MatmulDesc& desc, float scale, std::int32_t zero_point) {
  check_a_params_at_run(desc, scale, zero_point);
  MatmulDesc d = desc;
  d.a = QuantizationParams(desc.a.dtype(), desc.a.scheme(), {scale}, {zero_point});
  d.a_params_at_run = false;
  return d;
}

MatmulDesc a_params_at_run_bound(const MatmulDesc& desc) {
  if (!desc.a_params_at_run) return desc;
  MatmulDesc d = desc;
  d.a_params_at_run = false;
  if (desc.a.scheme().mapping != Mapping::affine) return d;  // its zero point is fixed
  // |q - z| over the codes is largest for a zero point at either end of the range; the end
  // farther from the other one gives qmax - qmin.
  const auto& t = traits(desc.a.dtype());
  d.a = QuantizationParams(desc.a.dtype(), desc.a.scheme(), {1.0f}, {t.qmin});
  return d;
}

}  // namespace qforge::reference
