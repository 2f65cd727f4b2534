/* qforge_nn_int8: see qforge_nn_int8.h. Written for obviousness: these loops are the exported
 * model's arithmetic, bit for bit the same as qforge's integer-only execution. */
#include "qforge_nn_int8.h"

#include <stddef.h>

static int32_t qf_clamp32(int64_t v, int32_t lo, int32_t hi) {
  return v < lo ? lo : v > hi ? hi : (int32_t)v;
}

void qf_quantize_f32(const float *x, int8_t *y, int32_t n, float scale, int32_t zero_point) {
  int32_t i;
  for (i = 0; i < n; ++i) {
    const float v = x[i] / scale;
    int32_t q;
    if (v != v) {
      q = zero_point;
    } else if (v >= 8388608.0f) {
      q = 127;
    } else if (v <= -8388608.0f) {
      q = -128;
    } else {
      /* |v| < 2^23: the truncation t is exact and so is v - t; round half to even by hand. */
      int32_t t = (int32_t)v;
      const float d = v - (float)t;
      if (d > 0.5f || (d == 0.5f && (t & 1) != 0)) t += 1;
      if (d < -0.5f || (d == -0.5f && (t & 1) != 0)) t -= 1;
      q = qf_clamp32((int64_t)t + zero_point, -128, 127);
    }
    y[i] = (int8_t)q;
  }
}

void qf_dequantize_f32(const int8_t *q, float *y, int32_t n, float scale, int32_t zero_point) {
  int32_t i;
  for (i = 0; i < n; ++i) y[i] = (float)((int32_t)q[i] - zero_point) * scale;
}

/* gemmlowp's SaturatingRoundingDoublingHighMul. */
static int32_t qf_high_mul(int32_t a, int32_t b) {
  const int64_t ab = (int64_t)a * (int64_t)b;
  const int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
  if (a == b && a == INT32_MIN) return INT32_MAX;
  return (int32_t)((ab + nudge) / ((int64_t)1 << 31)); /* C99 division truncates toward 0 */
}

/* gemmlowp's RoundingDivideByPOT: x / 2^e rounded half away from zero. The floor is taken by an
 * exact division, since >> of a negative value is implementation-defined in C. */
static int32_t qf_divide_by_pot(int32_t x, int32_t e) {
  int64_t v, mask, remainder, threshold;
  if (e <= 0) return x;
  v = x;
  mask = ((int64_t)1 << e) - 1;
  remainder = v & mask;
  threshold = (mask >> 1) + (v < 0 ? 1 : 0);
  return (int32_t)((v - remainder) / ((int64_t)1 << e) + (remainder > threshold ? 1 : 0));
}

int32_t qf_requantize(int32_t x, int32_t multiplier, int32_t shift) {
  const int32_t left = shift > 0 ? shift : 0;
  const int32_t right = shift > 0 ? 0 : -shift;
  const int32_t shifted = qf_clamp32((int64_t)x * ((int64_t)1 << left), INT32_MIN, INT32_MAX);
  return qf_divide_by_pot(qf_high_mul(shifted, multiplier), right);
}

void qf_conv2d_s8(const qf_conv2d_params *p, const int8_t *x, int8_t *y) {
  const int32_t cg = p->in_c / p->groups, og = p->out_c / p->groups;
  int32_t o, oh, ow, ci, kh, kw;
  for (o = 0; o < p->out_c; ++o) {
    const int32_t c0 = (o / og) * cg;
    const int8_t *wo = p->weights + (size_t)o * (size_t)(cg * p->kernel_h * p->kernel_w);
    for (oh = 0; oh < p->out_h; ++oh) {
      for (ow = 0; ow < p->out_w; ++ow) {
        int32_t acc = 0;
        for (ci = 0; ci < cg; ++ci) {
          const int8_t *xc = x + (size_t)(c0 + ci) * (size_t)(p->in_h * p->in_w);
          for (kh = 0; kh < p->kernel_h; ++kh) {
            const int32_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
            if (ih < 0 || ih >= p->in_h) continue;
            for (kw = 0; kw < p->kernel_w; ++kw) {
              const int32_t iw = ow * p->stride_w - p->pad_left + kw * p->dilation_w;
              if (iw < 0 || iw >= p->in_w) continue;
              acc += ((int32_t)xc[ih * p->in_w + iw] - p->in_zero_point) *
                     (int32_t)wo[(ci * p->kernel_h + kh) * p->kernel_w + kw];
            }
          }
        }
        if (p->bias != NULL) acc += p->bias[o];
        y[((size_t)o * (size_t)p->out_h + (size_t)oh) * (size_t)p->out_w + (size_t)ow] =
            (int8_t)qf_clamp32(
                (int64_t)qf_requantize(acc, p->multiplier[o], p->shift[o]) + p->out_zero_point,
                p->act_min, p->act_max);
      }
    }
  }
}

void qf_dense_s8(const qf_dense_params *p, const int8_t *x, int8_t *y) {
  int32_t n, k;
  for (n = 0; n < p->out_features; ++n) {
    const int8_t *wn = p->weights + (size_t)n * (size_t)p->in_features;
    int32_t acc = 0;
    for (k = 0; k < p->in_features; ++k) acc += ((int32_t)x[k] - p->in_zero_point) * (int32_t)wn[k];
    if (p->bias != NULL) acc += p->bias[n];
    y[n] = (int8_t)qf_clamp32(
        (int64_t)qf_requantize(acc, p->multiplier[n], p->shift[n]) + p->out_zero_point, p->act_min,
        p->act_max);
  }
}

void qf_maxpool_s8(const qf_pool_params *p, const int8_t *x, int8_t *y) {
  int32_t c, oh, ow, kh, kw;
  for (c = 0; c < p->channels; ++c) {
    const int8_t *xc = x + (size_t)c * (size_t)(p->in_h * p->in_w);
    for (oh = 0; oh < p->out_h; ++oh) {
      for (ow = 0; ow < p->out_w; ++ow) {
        int32_t m = -128;
        for (kh = 0; kh < p->kernel_h; ++kh) {
          const int32_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
          if (ih < 0 || ih >= p->in_h) continue;
          for (kw = 0; kw < p->kernel_w; ++kw) {
            const int32_t iw = ow * p->stride_w - p->pad_left + kw * p->dilation_w;
            if (iw < 0 || iw >= p->in_w) continue;
            if (xc[ih * p->in_w + iw] > m) m = xc[ih * p->in_w + iw];
          }
        }
        y[((size_t)c * (size_t)p->out_h + (size_t)oh) * (size_t)p->out_w + (size_t)ow] = (int8_t)m;
      }
    }
  }
}

void qf_avgpool_s8(const qf_pool_params *p, const int8_t *x, int8_t *y) {
  int32_t c, oh, ow, kh, kw;
  for (c = 0; c < p->channels; ++c) {
    const int8_t *xc = x + (size_t)c * (size_t)(p->in_h * p->in_w);
    for (oh = 0; oh < p->out_h; ++oh) {
      for (ow = 0; ow < p->out_w; ++ow) {
        int32_t sum = 0, count = 0, q;
        for (kh = 0; kh < p->kernel_h; ++kh) {
          const int32_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
          if (ih < 0 || ih >= p->in_h) continue;
          for (kw = 0; kw < p->kernel_w; ++kw) {
            const int32_t iw = ow * p->stride_w - p->pad_left + kw * p->dilation_w;
            if (iw < 0 || iw >= p->in_w) continue;
            sum += (int32_t)xc[ih * p->in_w + iw] - p->zero_point;
            ++count;
          }
        }
        if (p->count_include_pad) count = p->kernel_h * p->kernel_w;
        q = count == 0 ? 0 : sum >= 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
        y[((size_t)c * (size_t)p->out_h + (size_t)oh) * (size_t)p->out_w + (size_t)ow] =
            (int8_t)qf_clamp32((int64_t)q + p->zero_point, -128, 127);
      }
    }
  }
}

void qf_add_s8(const qf_add_params *p, const int8_t *a, const int8_t *b, int8_t *y) {
  int32_t i;
  for (i = 0; i < p->size; ++i) {
    /* |x - z| <= 255, so the shifted values fit int32 with room to spare. */
    const int32_t sa = qf_requantize(((int32_t)a[i] - p->a_zero_point) * ((int32_t)1 << 20),
                                     p->a_multiplier, p->a_shift);
    const int32_t sb = qf_requantize(((int32_t)b[i] - p->b_zero_point) * ((int32_t)1 << 20),
                                     p->b_multiplier, p->b_shift);
    y[i] = (int8_t)qf_clamp32(
        (int64_t)qf_requantize(sa + sb, p->out_multiplier, p->out_shift) + p->out_zero_point,
        p->act_min, p->act_max);
  }
}

/* The softmax's fixed point is gemmlowp's: a value with N integer bits is an int32_t scaled by
 * 2^(31 - N) (Q0.31, Q2.29, Q5.26, Q12.19); a product of two is qf_high_mul, whose result has
 * the sum of their integer bits; a sum is the plain one (every operand below is bounded far
 * from overflow); a rescale to fewer integer bits is a saturating left shift, to more a
 * rounding division. */
static int32_t qf_saturating_shift_left(int32_t x, int32_t e) {
  return qf_clamp32((int64_t)x * ((int64_t)1 << e), INT32_MIN, INT32_MAX);
}

/* exp(a) for a in [-1/4, 0), Q0.31 in and out: exp(-1/8) times the Taylor series of exp(x)
 * around x = a + 1/8 = 0 to the fourth power. */
static int32_t qf_exp_on_interval(int32_t a) {
  const int32_t exp_minus_one_eighth = 1895147668; /* exp(-1/8) in Q0.31 */
  const int32_t one_third = 715827883;             /* 1/3 in Q0.31 */
  const int32_t x = a + ((int32_t)1 << 28);        /* a + 1/8, in [-1/8, 1/8) */
  const int32_t x2 = qf_high_mul(x, x), x3 = qf_high_mul(x2, x), x4 = qf_high_mul(x2, x2);
  /* x^2 / 2 + x^3 / 6 + x^4 / 24 = ((x^4 / 4 + x^3) / 3 + x^2) / 2 */
  const int32_t terms =
      qf_divide_by_pot(qf_high_mul(qf_divide_by_pot(x4, 2) + x3, one_third) + x2, 1);
  return qf_clamp32((int64_t)exp_minus_one_eighth + qf_high_mul(exp_minus_one_eighth, x + terms),
                    INT32_MIN, INT32_MAX);
}

int32_t qf_exp_on_negative_values(int32_t a) {
  /* exp(-2^k) in Q0.31 for k = -2, -1, ..., 4: the factors of the whole quarters of -a. */
  static const int32_t factors[7] = {1672461947, 1302514674, 790015084, 290630308,
                                     39332535,   720401,     242};
  const int32_t quarter = (int32_t)1 << 24; /* 1/4 in Q5.26 */
  /* a = a_mod - remainder with a_mod in [-1/4, 0) and remainder a multiple of 1/4 (bitwise
   * operations on int32_t see its two's complement representation). */
  const int32_t a_mod = (a & (quarter - 1)) - quarter;
  const int32_t remainder = a_mod - a;
  int32_t result, k;
  if (a == 0) return INT32_MAX; /* 1 in Q0.31 */
  result = qf_exp_on_interval(qf_saturating_shift_left(a_mod, 5));
  for (k = 0; k < 7; ++k)
    if ((remainder & (quarter << k)) != 0) result = qf_high_mul(result, factors[k]);
  return result;
}

int32_t qf_one_over_one_plus_x_for_x_in_0_1(int32_t a) {
  const int32_t one_q2 = (int32_t)1 << 29; /* 1 in Q2.29 */
  /* d = (1 + a) / 2 in Q0.31 (1 is INT32_MAX there), rounded half away from zero. */
  const int64_t sum = (int64_t)a + INT32_MAX;
  const int32_t d = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
  /* Newton-Raphson for 1 / d in Q2.29 from 48/17 - 32/17 d, the best linear start on [1/2, 1). */
  int32_t x = 1515870810 + qf_high_mul(d, -1010580540), i;
  for (i = 0; i < 3; ++i) {
    const int32_t error = one_q2 - qf_high_mul(d, x);           /* 1 - d x, Q2.29 */
    x = x + qf_saturating_shift_left(qf_high_mul(x, error), 2); /* Q4.27 -> Q2.29 */
  }
  /* 1 / (1 + a) = x / 2: the same bits read as Q1.30, rescaled to Q0.31. */
  return qf_saturating_shift_left(x, 1);
}

/* exp(beta * scale * d) for d = x - max(row) >= diff_min, in Q0.31: d scaled into Q5.26 by the
 * input multiplier (a left shift: TFLite's MultiplyByQuantizedMultiplierGreaterThanOne). */
static int32_t qf_softmax_exp(const qf_softmax_params *p, int32_t d) {
  return qf_exp_on_negative_values(qf_requantize(d, p->input_multiplier, p->input_left_shift));
}

void qf_softmax_s8(const qf_softmax_params *p, const int8_t *x, int8_t *y) {
  int32_t r, c;
  for (r = 0; r < p->rows; ++r) {
    const int8_t *xr = x + (size_t)r * (size_t)p->depth;
    int8_t *yr = y + (size_t)r * (size_t)p->depth;
    int32_t max = -128, sum = 0, headroom = 0, reciprocal, exponent;
    for (c = 0; c < p->depth; ++c)
      if (xr[c] > max) max = xr[c];
    /* The sum of exponentials in Q12.19 (each term rounded): at least 1, the max's own term,
     * and below 4096 since depth <= 4095. */
    for (c = 0; c < p->depth; ++c)
      if ((int32_t)xr[c] - max >= p->diff_min)
        sum += qf_divide_by_pot(qf_softmax_exp(p, (int32_t)xr[c] - max), 12);
    /* sum = 2^(12 - headroom) * (1 + f) with f in [0, 1) in Q0.31. */
    while ((((uint32_t)sum << headroom) & 0x80000000u) == 0) ++headroom;
    reciprocal =
        qf_one_over_one_plus_x_for_x_in_0_1((int32_t)(((uint32_t)sum << headroom) - 0x80000000u));
    /* exp / sum in Q0.31 is exp * reciprocal / 2^(12 - headroom); to the output scale 1/256
     * that is a further division by 2^23, both as one rounding division. */
    exponent = 12 - headroom + 31 - 8;
    for (c = 0; c < p->depth; ++c) {
      const int32_t d = (int32_t)xr[c] - max;
      int32_t q = -128;
      if (d >= p->diff_min)
        q = qf_clamp32(
            (int64_t)qf_divide_by_pot(qf_high_mul(reciprocal, qf_softmax_exp(p, d)), exponent) -
                128,
            -128, 127);
      yr[c] = (int8_t)q;
    }
  }
}

int32_t qf_argmax_s8(const int8_t *x, int32_t n) {
  int32_t i, best = 0;
  for (i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}
