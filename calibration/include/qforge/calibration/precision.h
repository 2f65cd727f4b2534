// "Fastest within an accuracy budget": for float data and an error budget (NMSE against
// float), which dtype and scheme to quantize with. Each choice's error is computed exactly with
// the reference (every verified plugin reproduces it); the choices within the budget are timed
// through an accelerator like any workload, and the fastest is recommended.
//
// It sits with calibration, since both choose how to quantize from data; the accelerator only
// measures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qforge/accelerator.h"
#include "qforge/calibration/export.h"
#include "qforge/params.h"
#include "qforge/scheme.h"

namespace qforge::calibration {

// Given float data and a tolerance (NMSE against float32), try a small list of (dtype, scheme)
// choices, keep those whose error meets the tolerance, and time them through the accelerator;
// the fastest that meets the tolerance is recommended.
struct QuantizationChoice {
  DType dtype = DType::int8;
  Scheme scheme;
  QFORGE_CALIBRATION_API std::string label() const;  // "int8 per_channel_symmetric(axis=0)"
};

struct MatmulChoice {
  DType a = DType::int8;
  Scheme a_scheme;  // per-tensor
  DType b = DType::int8;
  Scheme b_scheme;  // per-tensor, per-column or block-wise (block-wise uses the nk layout)
  QFORGE_CALIBRATION_API std::string label()
      const;  // "a=uint8/per_tensor_affine b=int4/block_symmetric(32)"
};

struct PrecisionResult {
  std::string label;
  double nmse = 0;                   // error of the quantized result against float (double) math
  bool meets = false;                // nmse <= tolerance
  double seconds = 0;                // measured time of the quantized path (0 when not timed)
  std::vector<CandidateId> winners;  // the candidate that ran each op of the path
  std::string message;               // why it was not timed, or why it failed
};

struct PrecisionRecommendation {
  std::optional<std::size_t> best;  // index into tried
  std::vector<PrecisionResult> tried;
};

// The lists tried when none is given.
QFORGE_CALIBRATION_API std::vector<QuantizationChoice> default_quantization_choices();
QFORGE_CALIBRATION_API std::vector<MatmulChoice> default_matmul_choices();

// x is a float32 tensor of `shape` (rank 2 for per-channel and block-wise choices); the path
// timed is quantize + dequantize.
QFORGE_CALIBRATION_API PrecisionRecommendation
recommend_quantization(Accelerator& accelerator, const Shape& shape, std::span<const float> x,
                       double nmse_tolerance, std::vector<QuantizationChoice> choices = {});
// a is float32 [m, k] (activations, quantized per call), b float32 [k, n] (weights); the path
// timed is quantize(a) + matmul_dequant.
QFORGE_CALIBRATION_API PrecisionRecommendation
recommend_matmul(Accelerator& accelerator, std::int64_t m, std::int64_t n, std::int64_t k,
                 std::span<const float> a, std::span<const float> b, double nmse_tolerance,
                 std::vector<MatmulChoice> choices = {});

}  // namespace qforge::calibration
