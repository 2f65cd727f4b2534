/* qforge_nn_int16: the portable 16x8 kernels of a model exported by `qforge export-c` with int16
 * activations.
 *
 * Conventions (TFLite's 16x8 quantization, which CMSIS-NN's s16 kernels follow): activations
 * int16 symmetric per tensor (zero point 0, the full range [-32768, 32767]), weights int8
 * symmetric per output channel in [-127, 127], bias int64 at scale sx * sw[o], sums in int64,
 * and per output channel a Q31 multiplier with a shift, applied as TFLite's int64
 * MultiplyByQuantizedMultiplier: the multiplier reduced to Q15, then one rounding (half toward
 * +infinity). Add and the pools follow TFLite's int16 kernels (see each).
 *
 * C99 with fixed-width types only; no allocation, no global state. Arrays are NCHW with a batch
 * of one. The pool parameters and qf_requantize (the add's 32-bit requantization) come from
 * qforge_nn_int8.h, which an int16 export ships too.
 */
#ifndef QFORGE_NN_INT16_H
#define QFORGE_NN_INT16_H

#include <stdint.h>

#include "qforge_nn_int8.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = sat_int16(rne(x / scale)); NaN gives 0. One float32 division per element, as ONNX
 * QuantizeLinear: compile with -ffp-contract=off and a FLT_EVAL_METHOD of 0. */
void qf_quantize_f32_s16(const float *x, int16_t *y, int32_t n, float scale);
/* y = q * scale in float32. */
void qf_dequantize_s16_f32(const int16_t *q, float *y, int32_t n, float scale);

/* TFLite's MultiplyByQuantizedMultiplier for int64 (CMSIS-NN's arm_nn_requantize_s64):
 * reduced = multiplier < 0x7FFF0000 ? (multiplier + 2^15) >> 16 : 0x7FFF, then
 * floor((x * reduced + 2^(14 - shift)) / 2^(15 - shift)). Needs |x| < 2^47, shift in [-31, 7]
 * (the exporter proves both). */
int64_t qf_requantize_s64(int64_t x, int32_t multiplier, int32_t shift);

/* A 2-D convolution (groups and depthwise included), int64 sums, requantization and a clamp. */
typedef struct {
  int32_t in_c, in_h, in_w;
  int32_t out_c, out_h, out_w;
  int32_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w;
  int32_t pad_top, pad_left, groups;
  int32_t act_min, act_max;
  const int8_t *weights;     /* [out_c, in_c / groups, kernel_h, kernel_w] */
  const int64_t *bias;       /* [out_c], or NULL */
  const int32_t *multiplier; /* [out_c] */
  const int32_t *shift;      /* [out_c] */
} qf_conv2d_s16_params;
void qf_conv2d_s16(const qf_conv2d_s16_params *p, const int16_t *x, int16_t *y);

/* y[n] = clamp(requant_s64(sum_k x[k] * w[n, k] + bias[n])). */
typedef struct {
  int32_t in_features, out_features;
  int32_t act_min, act_max;
  const int8_t *weights; /* [out_features, in_features] */
  const int64_t *bias;   /* [out_features], or NULL */
  const int32_t *multiplier;
  const int32_t *shift;
} qf_dense_s16_params;
void qf_dense_s16(const qf_dense_s16_params *p, const int16_t *x, int16_t *y);

/* Max and average pooling as qf_maxpool_s8 / qf_avgpool_s8 (zero_point is 0): the average
 * rounds half away from zero (TFLite's AveragePool16); its int32 sum bounds the window to 65535
 * positions, which the exporter checks. */
void qf_maxpool_s16(const qf_pool_params *p, const int16_t *x, int16_t *y);
void qf_avgpool_s16(const qf_pool_params *p, const int16_t *x, int16_t *y);

/* TFLite's general int16 ADD: each x * 2^15 is requantized by its multiplier (32-bit, double
 * rounding: qf_requantize), the sum by the output's, and the clamp applied. */
typedef struct {
  int32_t size;
  int32_t a_multiplier, a_shift;
  int32_t b_multiplier, b_shift;
  int32_t out_multiplier, out_shift;
  int32_t act_min, act_max;
} qf_add_s16_params;
void qf_add_s16(const qf_add_s16_params *p, const int16_t *a, const int16_t *b, int16_t *y);

/* The index of the first largest element. */
int32_t qf_argmax_s16(const int16_t *x, int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* QFORGE_NN_INT16_H */
