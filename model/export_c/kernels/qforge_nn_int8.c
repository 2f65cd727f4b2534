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

int32_t qf_argmax_s8(const int8_t *x, int32_t n) {
  int32_t i, best = 0;
  for (i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}
