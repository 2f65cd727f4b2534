/* qforge_nn_int8: the portable int8 kernels of a model exported by `qforge export-c`.
 *
 * Conventions (TFLite's int8 spec, which CMSIS-NN follows): activations int8 affine per tensor
 * (scale, zero point), weights int8 symmetric per output channel in [-127, 127], bias int32 at
 * scale sx * sw[o], and per output channel a Q31 multiplier with a power-of-two shift so that
 * y = zy + acc * multiplier * 2^(shift - 31), rounded as TFLite's reference kernels do
 * (SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT: double rounding).
 *
 * C99 with fixed-width types only: nothing assumes the width of int. No allocation, no global
 * state; every buffer is the caller's. Arrays are NCHW with a batch of one (a dense layer's
 * input is the flattened [C * H * W] vector in that order). Only qf_quantize_f32 and
 * qf_dequantize_f32 touch floating point, at the edges of the model.
 */
#ifndef QFORGE_NN_INT8_H
#define QFORGE_NN_INT8_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = sat_int8(rne(x / scale) + zero_point); NaN gives the zero point. One float32 division per
 * element, as ONNX QuantizeLinear: compile with -ffp-contract=off and a FLT_EVAL_METHOD of 0. */
void qf_quantize_f32(const float *x, int8_t *y, int32_t n, float scale, int32_t zero_point);
/* y = (q - zero_point) * scale in float32. */
void qf_dequantize_f32(const int8_t *q, float *y, int32_t n, float scale, int32_t zero_point);

/* TFLite's MultiplyByQuantizedMultiplier: round(x * multiplier * 2^(shift - 31)), the left
 * shift saturating, the right one rounding half away from zero. */
int32_t qf_requantize(int32_t x, int32_t multiplier, int32_t shift);

/* A 2-D convolution (groups and depthwise included) with its requantization and a fused clamp. */
typedef struct {
  int32_t in_c, in_h, in_w;
  int32_t out_c, out_h, out_w;
  int32_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
  int32_t pad_top, pad_left, groups;
  int32_t in_zero_point, out_zero_point, act_min, act_max;
  const int8_t *weights;     /* [out_c, in_c / groups, kernel_h, kernel_w] */
  const int32_t *bias;       /* [out_c], or NULL */
  const int32_t *multiplier; /* [out_c] */
  const int32_t *shift;      /* [out_c] */
} qf_conv2d_params;
void qf_conv2d_s8(const qf_conv2d_params *p, const int8_t *x, int8_t *y);

/* y[n] = requant(sum_k (x[k] - zx) * w[n, k] + bias[n]), clamped. */
typedef struct {
  int32_t in_features, out_features;
  int32_t in_zero_point, out_zero_point, act_min, act_max;
  const int8_t *weights; /* [out_features, in_features] */
  const int32_t *bias;   /* [out_features], or NULL */
  const int32_t *multiplier;
  const int32_t *shift;
} qf_dense_params;
void qf_dense_s8(const qf_dense_params *p, const int8_t *x, int8_t *y);

/* Max and average pooling over each channel; output params equal the input's. Padded positions
 * are skipped by the max; the average divides the sum of (x - zero_point) over the window by
 * the number of valid positions (or the whole window with count_include_pad), rounding half
 * away from zero, then adds the zero point back. */
typedef struct {
  int32_t channels, in_h, in_w, out_h, out_w;
  int32_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
  int32_t pad_top, pad_left, count_include_pad, zero_point;
} qf_pool_params;
void qf_maxpool_s8(const qf_pool_params *p, const int8_t *x, int8_t *y);
void qf_avgpool_s8(const qf_pool_params *p, const int8_t *x, int8_t *y);

/* TFLite's int8 ADD of two tensors of n elements: each (x - z) * 2^20 is requantized by its
 * multiplier, the sum by the output's, the zero point added and the clamp applied. */
typedef struct {
  int32_t size;
  int32_t a_zero_point, a_multiplier, a_shift;
  int32_t b_zero_point, b_multiplier, b_shift;
  int32_t out_zero_point, out_multiplier, out_shift;
  int32_t act_min, act_max;
} qf_add_params;
void qf_add_s8(const qf_add_params *p, const int8_t *a, const int8_t *b, int8_t *y);

/* TFLite's int8 SOFTMAX over `rows` rows of `depth` contiguous values (the last axis), integer
 * only. Per row: d = x - max(row); where d >= diff_min, d is scaled by the input multiplier
 * (scale * beta * 2^26, a Q31 multiplier and a left shift) into Q5.26, exponentiated by
 * qf_exp_on_negative_values into Q0.31 and summed in Q12.19; the sum's reciprocal comes from
 * qf_one_over_one_plus_x_for_x_in_0_1 after normalising it into [1, 2); each output is
 * exp * reciprocal rounded (half away from zero) to the output scale 1/256, minus 128, clamped.
 * Values with d < diff_min give -128. The output params are fixed: scale 1/256, zero point
 * -128. depth <= 4095 keeps the Q12.19 sum within int32. */
typedef struct {
  int32_t rows, depth;
  int32_t input_multiplier, input_left_shift, diff_min;
} qf_softmax_params;
void qf_softmax_s8(const qf_softmax_params *p, const int8_t *x, int8_t *y);

/* The fixed-point pieces of the softmax (gemmlowp's), exposed for testing. exp(a) for a <= 0 in
 * Q5.26, as Q0.31 (exp(0) gives INT32_MAX); and 1 / (1 + a) for a in [0, 1) in Q0.31, as Q0.31
 * (three Newton-Raphson steps from the start 48/17 - 32/17 * (1 + a) / 2). */
int32_t qf_exp_on_negative_values(int32_t a);
int32_t qf_one_over_one_plus_x_for_x_in_0_1(int32_t a);

/* The index of the first largest element. */
int32_t qf_argmax_s8(const int8_t *x, int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* QFORGE_NN_INT8_H */
