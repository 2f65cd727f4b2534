// Bindings, push constants and the fused epilogue shared by every GEMM variant.
//
// The kernels multiply packed operands (pack_rows.comp / pack_cols.comp): A is [M, Kp] and B
// is [N, Kp] signed bytes, K contiguous, Kp a multiple of 128, zero padded. The accumulator is
// acc = sum_k a'[m, k] b'[n, k] in int32 (wrapping); the epilogue applies the zero points
//   C = acc - zb' rowsum(a') - za' colsum(b') + K za' zb'
// which is exact: the true C fits int32 (the host claims only K <= int32_safe_k) and int32
// arithmetic is exact modulo 2^32. Then, by mode:
//   0 matmul_integer   C as int32
//   1 matmul_dequant   ((float(C) * sa) * sb) + bias, float32, no contraction (as the reference)
//   2 qlinear, float   requantize_value(C, (sa * sb) / sy) in ONNX's float mode
//   3 qlinear, fixed   the same multiplier in TFLite's fixed-point mode
// Modes 2 and 3 write bytes (QF_OUT8 builds, which need storageBuffer8BitAccess).
#extension GL_GOOGLE_include_directive : require
#if QF_OUT8
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#endif

// The cooperative-matrix kernel reads the packed operands 16 bytes at a time.
#ifndef QF_AB_TYPE
#define QF_AB_TYPE uint
#endif
layout(std430, binding = 0) readonly buffer PackedA { QF_AB_TYPE a_words[]; };
layout(std430, binding = 1) readonly buffer PackedB { QF_AB_TYPE b_words[]; };
layout(std430, binding = 2) readonly buffer RowSums { int row_sums[]; };
layout(std430, binding = 3) readonly buffer ColSums { int col_sums[]; };
layout(std430, binding = 4) readonly buffer Params { uint params[]; };
layout(std430, binding = 5) readonly buffer Bias { float bias[]; };
#if QF_OUT8
layout(std430, binding = 6) writeonly buffer Out8 { uint8_t out8[]; };
#else
layout(std430, binding = 6) writeonly buffer Out32 { uint out32[]; };
#endif

layout(push_constant) uniform Push {
  uint m, n, k, kp_words;   // rows and columns of this dispatch, real K, words per packed row
  uint a_lead, b_lead;      // word offset of this dispatch's row 0 in PackedA / PackedB
  uint rs_lead, cs_lead;    // index of row 0 / column 0 in RowSums / ColSums
  uint out_lead, out_stride;  // element offset of (0, 0) in the output and its row stride
  uint bias_lead, mode;
  uint za_off, za_step;     // zero points (int) in Params: entry za_off + global_row * za_step
  uint zb_off, zb_step;
  uint sa_off, sa_step;     // scales (float bits), the same way
  uint sb_off, sb_step;
  uint m_base, n_base;      // global row and column of this dispatch's (0, 0)
  uint sy_bits;
  int zy, qmin, qmax;
  uint has_bias;
  uint zero;                // always 0 (see the matmul_dequant epilogue)
} pc;

#include "quant_math.glsl"
#include "exact_float.glsl"

// The epilogue in three parts, so that a kernel can load the per-row and per-column terms once
// for many outputs: qf_row / qf_col read them (indices past the dispatch's end are clamped, so
// they read in bounds; qf_store skips those outputs), qf_store computes and writes one output.
struct QfRow {
  int za;     // zero point of A's row (shifted for uint8)
  int rs;     // sum of the packed row
  float sa;
};
struct QfCol {
  int zb;
  int cs;     // sum of the packed column
  float sb;
  float bias; // 0 without bias (then it is not added: -0.0 stays -0.0)
};

QfRow qf_row(uint lm) {
  uint l = min(lm, pc.m - 1u);
  uint gm = pc.m_base + l;
  return QfRow(int(params[pc.za_off + gm * pc.za_step]), row_sums[pc.rs_lead + l],
               uintBitsToFloat(params[pc.sa_off + gm * pc.sa_step]));
}

QfCol qf_col(uint ln) {
  uint l = min(ln, pc.n - 1u);
  uint gn = pc.n_base + l;
  float b = 0.0;
  if (pc.has_bias != 0u) b = bias[pc.bias_lead + l];  // no bias: a 4-byte dummy binding
  return QfCol(int(params[pc.zb_off + gn * pc.zb_step]), col_sums[pc.cs_lead + l],
               uintBitsToFloat(params[pc.sb_off + gn * pc.sb_step]), b);
}

void qf_store(uint lm, uint ln, QfRow r, QfCol c, int acc) {
  if (lm >= pc.m || ln >= pc.n) return;
  int v = acc - c.zb * r.rs - r.za * c.cs + int(pc.k) * r.za * c.zb;
  uint o = pc.out_lead + lm * pc.out_stride + ln;
#if QF_OUT8
  float mult = qf_div_rn(qf_mul_rn(r.sa, c.sb), uintBitsToFloat(pc.sy_bits));
  out8[o] = uint8_t(qf_requantize(v, mult, pc.mode == 3u, pc.zy, pc.qmin, pc.qmax) & 0xff);
#else
  if (pc.mode == 0u) {
    out32[o] = uint(v);
  } else {
    precise float y = (float(v) * r.sa) * c.sb;
    // 'precise' alone is not enough: glslc -O inlines this function and the copies lose their
    // NoContraction decoration, so a driver may fuse the product into the bias add. Passing the
    // product through its bits, xor-ed with a zero the compiler cannot see, rounds it first.
    y = uintBitsToFloat(floatBitsToUint(y) ^ pc.zero);
    if (pc.has_bias != 0u) y = y + c.bias;
    out32[o] = floatBitsToUint(y);
  }
#endif
}

void qf_epilogue(uint lm, uint ln, int acc) {
  if (lm >= pc.m || ln >= pc.n) return;
  qf_store(lm, ln, qf_row(lm), qf_col(ln), acc);
}
