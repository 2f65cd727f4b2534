// Correctly rounded float32 multiply and divide of positive finite values, in integers: the
// requantizing GEMM epilogue computes the multiplier (sa * sb) / sy per output as the reference
// does on the CPU, and a driver may flush denormals or (for '/') be off by 2.5 ULP.
// Needs qf_decode from quant_math.glsl.

// Rounds m26 * 2^(e_field - 152) (m26 in [2^25, 2^26), plus a sticky bit for anything below
// it) to a float32 with round-to-nearest-even, producing subnormals, zero or infinity as IEEE
// does. e_field is the biased exponent the value would have if it were normal.
float qf_round_pack(uint m26, bool sticky, int e_field) {
  if (e_field >= 255) return uintBitsToFloat(0x7f800000u);
  uint sh = 2u + uint(max(1 - e_field, 0));
  if (sh > 27u) return 0.0;  // below half the smallest subnormal
  uint mant = m26 >> sh;
  uint rem = m26 & ((1u << sh) - 1u);
  uint half_ = 1u << (sh - 1u);
  if (rem > half_ || (rem == half_ && (sticky || (mant & 1u) != 0u))) mant += 1u;
  // A normal result carries its hidden bit in mant, which adds the 1 back to (e - 1); a
  // subnormal result has e_field treated as 1 and no hidden bit; a carry out of the
  // significand moves the exponent up by itself.
  uint bits = (uint(max(e_field, 1) - 1) << 23) + mant;
  return bits >= 0x7f800000u ? uintBitsToFloat(0x7f800000u) : uintBitsToFloat(bits);
}

// fl(a * b), a, b > 0 finite.
float qf_mul_rn(float a, float b) {
  uint ma, mb;
  int ea, eb;
  qf_decode(floatBitsToUint(a), ma, ea);
  qf_decode(floatBitsToUint(b), mb, eb);
  uint hi, lo;
  umulExtended(ma, mb, hi, lo);  // P = ma * mb in [2^46, 2^48)
  uint shift = (hi >= (1u << 15)) ? 22u : 21u;  // bring P down to 26 bits
  uint m26 = (hi << (32u - shift)) | (lo >> shift);
  bool sticky = (lo & ((1u << shift) - 1u)) != 0u;
  return qf_round_pack(m26, sticky, ea + eb + int(shift) + 152);
}

// fl(a / b), a >= 0 and b > 0 finite: 26 quotient bits by long division, the remainder as
// sticky bit.
float qf_div_rn(float a, float b) {
  if (a == 0.0) return 0.0;
  uint ma, mb;
  int ea, eb;
  qf_decode(floatBitsToUint(a), ma, ea);
  qf_decode(floatBitsToUint(b), mb, eb);
  int e = ea - eb;
  if (ma < mb) {
    ma <<= 1;
    e -= 1;
  }
  uint q = 0u;
  uint r = ma;
  for (int i = 0; i < 26; ++i) {
    q <<= 1;
    if (r >= mb) {
      r -= mb;
      q |= 1u;
    }
    r <<= 1;
  }
  // q = floor(ma * 2^25 / mb) in [2^25, 2^26); a / b = q * 2^(e - 25) + remainder.
  return qf_round_pack(q, r != 0u, e + 127);
}
