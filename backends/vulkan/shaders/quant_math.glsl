// Exact quantization arithmetic shared by the shaders. Everything here reproduces
// qforge::reference bit for bit on any conformant Vulkan driver; docs/VULKAN.md explains how.
//
// Vulkan only promises 2.5 ULP for a float division (and less outside [2^-126, 2^126]) and lets
// drivers flush denormals, so rne(x / s) cannot be computed with '/' alone. quantize_offset()
// divides with '/' and accepts the result where no rounding can tell 2.5 ULP apart (the quotient
// is far from a half-integer); elsewhere it divides the significands exactly in integers.

const int QF_INT_MIN = int(0x80000000u);
const int QF_INT_MAX = 0x7fffffff;

// Significand (with the hidden bit, normalised so bit 23 is set) and exponent e such that the
// finite, non-zero |f| (given as its bits) is sig * 2^e.
void qf_decode(uint bits, out uint sig, out int e) {
  uint ex = (bits >> 23) & 0xffu;
  uint frac = bits & 0x7fffffu;
  if (ex == 0u) {  // subnormal: shift the leading one up to bit 23
    int lead = findMSB(frac);
    sig = frac << uint(23 - lead);
    e = -149 - (23 - lead);
  } else {
    sig = frac | 0x800000u;
    e = int(ex) - 150;
  }
}

// rne(fl(x / s)) in integers, for finite s > 0 and non-NaN x, limited to +/-8192 (enough for
// every saturation bound). fl() is the correctly rounded float32 quotient, as the reference's
// true division: 24 quotient bits by long division, rounded to nearest even with the remainder,
// then rounded half to even to an integer.
int qf_exact_rne_div(uint xb, uint sb) {
  uint ax = xb & 0x7fffffffu;
  if (ax == 0u) return 0;
  int sign = (xb >> 31) != 0u ? -1 : 1;
  if (ax >= 0x7f800000u) return sign * 8192;  // +/-inf
  uint mx, ms;
  int ex, es;
  qf_decode(ax, mx, ex);
  qf_decode(sb & 0x7fffffffu, ms, es);
  int e = ex - es;  // x / s = (mx / ms) * 2^e
  if (mx < ms) {
    mx <<= 1;
    e -= 1;
  }
  // Now mx / ms is in [1, 2): the quotient lies in [2^e, 2^(e+1)).
  if (e >= 13) return sign * 8192;
  if (e < -2) return 0;  // below 0.25: rounds to 0 whatever fl() does
  uint q = 0u;
  uint r = mx;
  for (int i = 0; i < 24; ++i) {
    q <<= 1;
    if (r >= ms) {
      r -= ms;
      q |= 1u;
    }
    r <<= 1;
  }
  // q = floor(mx * 2^23 / ms), r = twice the remainder: round to nearest even (a quotient of
  // two floats is never exactly half-way, but the tie rule costs nothing).
  if (r > ms || (r == ms && (q & 1u) != 0u)) q += 1u;
  // fl(x / s) = q * 2^(e - 23); round half to even to an integer.
  uint sh = uint(23 - e);  // 11 .. 25
  uint ip = q >> sh;
  uint frac = q & ((1u << sh) - 1u);
  uint half_ = 1u << (sh - 1u);
  if (frac > half_ || (frac == half_ && (ip & 1u) != 0u)) ip += 1u;
  return sign * int(ip);
}

// rne(x / s) clamped to [lo, hi] (lo = qmin - z, hi = qmax - z); NaN gives 0. The caller adds z.
int quantize_offset(float x, float s, int lo, int hi) {
  uint xb = floatBitsToUint(x);
  if ((xb & 0x7fffffffu) > 0x7f800000u) return 0;  // NaN maps to the zero point
  uint sb = floatBitsToUint(s);
  uint se = (sb >> 23) & 0xffu;
  uint xe = (xb >> 23) & 0xffu;
  bool exact = se == 0u || se >= 253u || (xe == 0u && (xb & 0x7fffffu) != 0u);
  float r;
  if (!exact) {
    float q = x / s;
    float aq = abs(q);
    // q is within 2.5 ULP of the true quotient, so within 3 ULP of fl(x / s): only a quotient
    // within 8 ULP (|q| 2^-20, or 2^-20 below 1) of n + 0.5 can round differently; those few
    // (about 1 in 10^4 for |q| near 100) take the exact path.
    if (aq < 4096.0 && abs(fract(aq) - 0.5) <= max(aq, 1.0) * (1.0 / 1048576.0)) exact = true;
    r = roundEven(q);
  }
  if (exact) r = float(qf_exact_rne_div(xb, sb));
  return int(clamp(r, float(lo), float(hi)));
}

// ---- requantization (reference: requantize_value, TFLite's fixed-point path) ----

// TFLite QuantizeMultiplier of a float multiplier m >= 0: m = mult * 2^(shift - 31). The float's
// 24-bit significand times 2^7 is mult exactly, so no rounding happens (the reference's double
// arithmetic agrees). Multipliers below 2^-32 flush to (0, 0) as TFLite does; the host rejects
// multipliers >= 2^31 before any dispatch.
ivec2 qf_fixed_multiplier(float m) {
  uint b = floatBitsToUint(m);
  uint ex = (b >> 23) & 0xffu;
  if (ex == 0u) return ivec2(0, 0);  // zero or subnormal: shift < -31
  int shift = int(ex) - 126;
  if (shift < -31) return ivec2(0, 0);
  return ivec2(int(((b & 0x7fffffu) | 0x800000u) << 7), shift);
}

// gemmlowp SaturatingRoundingDoublingHighMul with a 64-bit product from imulExtended.
int qf_srdhm(int a, int b) {
  if (a == b && a == QF_INT_MIN) return QF_INT_MAX;
  int hi, lo;
  imulExtended(a, b, hi, lo);
  uint ulo = uint(lo);
  uint carry;
  if (hi >= 0) {  // ab >= 0: nudge 2^30
    ulo = uaddCarry(ulo, 0x40000000u, carry);
    hi += int(carry);
  } else {  // nudge 1 - 2^30 = 0xFFFFFFFF_C0000001
    ulo = uaddCarry(ulo, 0xC0000001u, carry);
    hi += int(carry) - 1;
  }
  // Divide by 2^31 truncating toward zero: a negative sum gets 2^31 - 1 added first.
  if (hi < 0) {
    ulo = uaddCarry(ulo, 0x7fffffffu, carry);
    hi += int(carry);
  }
  return int((uint(hi) << 1) | (ulo >> 31));
}

// gemmlowp RoundingDivideByPOT for exponent in [0, 31].
int qf_rdbpot(int x, int exponent) {
  if (exponent <= 0) return x;
  int mask = int((1u << uint(exponent)) - 1u);
  int remainder = x & mask;
  int threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// TFLite MultiplyByQuantizedMultiplier, with the reference's saturating left shift.
int qf_multiply_fixed(int x, ivec2 mult_shift) {
  int shift = mult_shift.y;
  int ls = max(shift, 0);
  int rs = max(-shift, 0);
  int sat = x;
  if (ls > 0) {
    int top = x >> (31 - ls);
    sat = (top == 0 || top == -1) ? (x << ls) : (x < 0 ? QF_INT_MIN : QF_INT_MAX);
  }
  return qf_rdbpot(qf_srdhm(sat, mult_shift.x), rs);
}

// requantize_value(c, m, mode, z, qmin, qmax): fixed_point != 0 selects TFLite's path.
int qf_requantize(int c, float m, bool fixed_point, int z, int qmin, int qmax) {
  if (fixed_point) {
    int v = qf_multiply_fixed(c, qf_fixed_multiplier(m));
    return clamp(v, qmin - z, qmax - z) + z;
  }
  precise float v = float(c) * m;
  return int(clamp(roundEven(v), float(qmin - z), float(qmax - z))) + z;
}
