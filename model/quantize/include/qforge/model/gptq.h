// GPTQ weight rounding (Frantar et al. 2022, "GPTQ: Accurate Post-Training Quantization for
// Generative Pre-trained Transformers"; a recipe's weight "rounding": "gptq", docs/RECIPES.md).
//
// Rounding each weight to its nearest code minimises the error of the weights; what matters is
// the error of the layer's output Y = X W on the inputs it sees. With H = sum over calibration
// rows of x x^T (K x K), the output error of a change dW of one output channel w (a column of W
// along K) is dW^T H dW. GPTQ rounds the K inputs of every channel in order; after rounding input
// i it moves the not yet rounded inputs j > i by the least-squares correction of that error,
//   w_j -= (w_i - q_i) / U_ii * U_ij,
// where U is the upper Cholesky factor of H^-1 (H^-1 = U^T U). Rows of U beyond i are the
// inverse Hessian with inputs 0..i removed, so one factorisation serves the whole pass.
//
// Here the pass works on [N, K] (a row per output channel) in double; the corrections of a run
// of inputs are applied to the inputs after it as one GEMM (GPTQ's lazy batch updates). The
// result is ordinary codes: the rounded values are reference::dequantize_value of the codes of
// reference::quantize_value, so reference::quantize with the returned ranges' params gives
// GPTQ's codes back exactly, and every kernel and export reads them unchanged.
//
// Ranges: per tensor and per channel, chosen first from the float weight by the rule's
// observer (min/max or the mse search of weight_range.h). Blocks along K: each block's range
// is chosen when the pass reaches it, from its values as the earlier corrections left them
// (GPTQ's groups), so a block's scale fits what is actually rounded.
//
// H: a dead input (zero in every calibration row, so H_ii = 0) gets H_ii = 1; its row and
// column of H are zero, so it neither spreads nor receives corrections and rounds to nearest.
// Dampening adds `damping` times the mean of H's diagonal to it, which makes a singular H
// (fewer rows than K, repeated inputs) positive definite; should the factorisation still fail
// numerically, the dampening grows tenfold, up to four times, before giving up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "qforge/model/quantize_export.h"
#include "qforge/model/recipe.h"
#include "qforge/model/weight_range.h"

namespace qforge::model {

// Sum of x x^T over the rows x of a layer's input. Memory: K x K doubles, whatever the number of
// rows added; each add() folds its rows in with one single-precision SYRK (float rows of one
// batch, summed across batches in double).
class QFORGE_QUANTIZE_API HessianAccumulator {
 public:
  explicit HessianAccumulator(std::int64_t k);

  // `rows` is [m, K] row-major; its size must be a multiple of K (throws invalid_argument).
  void add(std::span<const float> rows);

  std::int64_t k() const noexcept { return k_; }
  std::int64_t rows() const noexcept { return rows_; }
  // The sum, K x K row-major: the upper triangle (j >= i) holds it, the lower is zero.
  std::span<const double> upper() const noexcept { return sum_; }

 private:
  std::int64_t k_ = 0;
  std::int64_t rows_ = 0;
  std::vector<double> sum_;
};

struct GptqOptions {
  double damping = 0.01;  // added to H's diagonal, times its mean
};

// What the rounding pass reads: U, the upper Cholesky factor of (H + d I)^-1.
struct GptqFactor {
  std::int64_t k = 0;
  std::int64_t rows = 0;           // calibration rows behind H
  double damping = 0;              // d, as added to H's (dead-fixed) diagonal
  std::vector<std::int64_t> dead;  // inputs with H_ii = 0
  std::vector<double> u;           // K x K row-major, zero below the diagonal
};

// The factor of an accumulated H. Throws invalid_argument for a non-finite H, or when H + d I is
// not positive definite even with the dampening grown (both name the sizes).
QFORGE_QUANTIZE_API GptqFactor gptq_factor(const HessianAccumulator& h,
                                           const GptqOptions& options = {});
// The same for H given as its upper triangle, K x K row-major (the lower is not read).
QFORGE_QUANTIZE_API GptqFactor gptq_factor(std::span<const double> h_upper, std::int64_t k,
                                           std::int64_t rows, const GptqOptions& options = {});

// Rounds `w`, [N, K] row-major (a row per output channel), in place to the dequantized values of
// GPTQ's codes for `rule` (dtype, mapping, granularity, block size and observer; the rounding
// field is not read), and returns each group's range in quantize_weight's order: one per tensor,
// one per row, or one per block of each row (row-major). `factor.k` must be K. Throws
// invalid_argument for mismatched sizes or a non-finite weight.
QFORGE_QUANTIZE_API std::vector<WeightRange> gptq_round(const WeightQuantization& rule,
                                                        std::span<float> w, std::int64_t n,
                                                        std::int64_t k, const GptqFactor& factor);

}  // namespace qforge::model
