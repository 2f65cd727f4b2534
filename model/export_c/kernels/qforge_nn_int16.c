/* qforge_nn_int16: see qforge_nn_int16.h. Written for obviousness: these loops are the exported
 * model's arithmetic, bit for bit the same as qforge's integer-only execution. */
#include "qforge_nn_int16.h"

#include <stddef.h>

static int16_t qf_sat16(int64_t v, int32_t lo, int32_t hi) {
  return (int16_t)(v < lo ? lo : v > hi ? hi : v);
}

void qf_quantize_f32_s16(const float *x, int16_t *y, int32_t n, float scale) {
  int32_t i;
  for (i = 0; i < n; ++i) {
    const float v = x[i] / scale;
    int32_t t;
    if (v != v) {
      t = 0;
    } else if (v >= 8388608.0f) {
      t = 32767;
    } else if (v <= -8388608.0f) {
      t = -32768;
    } else {
      /* |v| < 2^23: the truncation t is exact and so is v - t; round half to even by hand. */
      float d;
      t = (int32_t)v;
      d = v - (float)t;
      if (d > 0.5f || (d == 0.5f && (t & 1) != 0)) t += 1;
      if (d < -0.5f || (d == -0.5f && (t & 1) != 0)) t -= 1;
    }
    y[i] = qf_sat16(t, -32768, 32767);
  }
}

void qf_dequantize_s16_f32(const int16_t *q, float *y, int32_t n, float scale) {
  int32_t i;
  for (i = 0; i < n; ++i) y[i] = (float)q[i] * scale;
}

/* floor(v / 2^e) for e in [1, 62]. An exact division and a correction, since >> of a negative
 * value is implementation-defined in C. */
static int64_t qf_floor_pot64(int64_t v, int32_t e) {
  const int64_t d = (int64_t)1 << e;
  int64_t q = v / d; /* C99 division truncates toward 0 */
  if (v % d != 0 && v < 0) q -= 1;
  return q;
}

int64_t qf_requantize_s64(int64_t x, int32_t multiplier, int32_t shift) {
  const int64_t reduced =
      multiplier < 0x7FFF0000 ? ((int64_t)multiplier + 32768) / 65536 : (int64_t)0x7FFF;
  const int32_t total = 15 - shift; /* in [8, 46] */
  /* |x| < 2^47 and reduced <= 2^15: the product and the rounding term fit int64. */
  return qf_floor_pot64(x * reduced + ((int64_t)1 << (total - 1)), total);
}

void qf_conv2d_s16(const qf_conv2d_s16_params *p, const int16_t *x, int16_t *y) {
  const int32_t cg = p->in_c / p->groups, og = p->out_c / p->groups;
  int32_t o, oh, ow, ci, kh, kw;
  for (o = 0; o < p->out_c; ++o) {
    const int32_t c0 = (o / og) * cg;
    const int8_t *wo = p->weights + (size_t)o * (size_t)(cg * p->kernel_h * p->kernel_w);
    for (oh = 0; oh < p->out_h; ++oh) {
      for (ow = 0; ow < p->out_w; ++ow) {
        int64_t acc = 0;
        for (ci = 0; ci < cg; ++ci) {
          const int16_t *xc = x + (size_t)(c0 + ci) * (size_t)(p->in_h * p->in_w);
          for (kh = 0; kh < p->kernel_h; ++kh) {
            const int32_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
            if (ih < 0 || ih >= p->in_h) continue;
            for (kw = 0; kw < p->kernel_w; ++kw) {
              const int32_t iw = ow * p->stride_w - p->pad_left + kw * p->dilation_w;
              if (iw < 0 || iw >= p->in_w) continue;
              /* |x * w| <= 32768 * 127 fits int32; the sum runs in int64. */
              acc += (int32_t)xc[ih * p->in_w + iw] *
                     (int32_t)wo[(ci * p->kernel_h + kh) * p->kernel_w + kw];
            }
          }
        }
        if (p->bias != NULL) acc += p->bias[o];
        y[((size_t)o * (size_t)p->out_h + (size_t)oh) * (size_t)p->out_w + (size_t)ow] =
            qf_sat16(qf_requantize_s64(acc, p->multiplier[o], p->shift[o]), p->act_min, p->act_max);
      }
    }
  }
}

void qf_dense_s16(const qf_dense_s16_params *p, const int16_t *x, int16_t *y) {
  int32_t n, k;
  for (n = 0; n < p->out_features; ++n) {
    const int8_t *wn = p->weights + (size_t)n * (size_t)p->in_features;
    int64_t acc = 0;
    for (k = 0; k < p->in_features; ++k) acc += (int32_t)x[k] * (int32_t)wn[k];
    if (p->bias != NULL) acc += p->bias[n];
    y[n] = qf_sat16(qf_requantize_s64(acc, p->multiplier[n], p->shift[n]), p->act_min, p->act_max);
  }
}

void qf_maxpool_s16(const qf_pool_params *p, const int16_t *x, int16_t *y) {
  int32_t c, oh, ow, kh, kw;
  for (c = 0; c < p->channels; ++c) {
    const int16_t *xc = x + (size_t)c * (size_t)(p->in_h * p->in_w);
    for (oh = 0; oh < p->out_h; ++oh) {
      for (ow = 0; ow < p->out_w; ++ow) {
        int32_t m = -32768;
        for (kh = 0; kh < p->kernel_h; ++kh) {
          const int32_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
          if (ih < 0 || ih >= p->in_h) continue;
          for (kw = 0; kw < p->kernel_w; ++kw) {
            const int32_t iw = ow * p->stride_w - p->pad_left + kw * p->dilation_w;
            if (iw < 0 || iw >= p->in_w) continue;
            if (xc[ih * p->in_w + iw] > m) m = xc[ih * p->in_w + iw];
          }
        }
        y[((size_t)c * (size_t)p->out_h + (size_t)oh) * (size_t)p->out_w + (size_t)ow] = (int16_t)m;
      }
    }
  }
}

void qf_avgpool_s16(const qf_pool_params *p, const int16_t *x, int16_t *y) {
  int32_t c, oh, ow, kh, kw;
  for (c = 0; c < p->channels; ++c) {
    const int16_t *xc = x + (size_t)c * (size_t)(p->in_h * p->in_w);
    for (oh = 0; oh < p->out_h; ++oh) {
      for (ow = 0; ow < p->out_w; ++ow) {
        int32_t sum = 0, count = 0, q;
        for (kh = 0; kh < p->kernel_h; ++kh) {
          const int32_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
          if (ih < 0 || ih >= p->in_h) continue;
          for (kw = 0; kw < p->kernel_w; ++kw) {
            const int32_t iw = ow * p->stride_w - p->pad_left + kw * p->dilation_w;
            if (iw < 0 || iw >= p->in_w) continue;
            sum += (int32_t)xc[ih * p->in_w + iw];
            ++count;
          }
        }
        if (p->count_include_pad) count = p->kernel_h * p->kernel_w;
        q = count == 0 ? 0 : sum >= 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
        y[((size_t)c * (size_t)p->out_h + (size_t)oh) * (size_t)p->out_w + (size_t)ow] =
            qf_sat16(q, -32768, 32767);
      }
    }
  }
}

void qf_add_s16(const qf_add_s16_params *p, const int16_t *a, const int16_t *b, int16_t *y) {
  int32_t i;
  for (i = 0; i < p->size; ++i) {
    /* |x| * 2^15 <= 2^30 fits int32, and so does the sum of two values scaled by <= 1/2. */
    const int32_t sa =
        qf_requantize((int32_t)a[i] * ((int32_t)1 << 15), p->a_multiplier, p->a_shift);
    const int32_t sb =
        qf_requantize((int32_t)b[i] * ((int32_t)1 << 15), p->b_multiplier, p->b_shift);
    y[i] =
        qf_sat16(qf_requantize(sa + sb, p->out_multiplier, p->out_shift), p->act_min, p->act_max);
  }
}

int32_t qf_argmax_s16(const int16_t *x, int32_t n) {
  int32_t i, best = 0;
  for (i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}
