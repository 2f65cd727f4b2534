// pack_rows: R rows of K int8/uint8 bytes (row stride K, starting at any byte) -> R rows of Kp
// bytes (Kp a multiple of 128, zero padded) of signed int8, plus each row's sum.
//
// The GEMM kernels run on signed bytes only: a uint8 operand with zero point z is the same
// matrix as the int8 operand (q ^ 0x80) = q - 128 with zero point z - 128, so uint8 rows are
// flipped here (flip = 0x80808080) and the host shifts the zero points. Padding is 0 after the
// flip, so it adds nothing to dot products or sums. The sums feed the zero-point correction
// C = sum(a b) - zb sum(a) - za sum(b) + K za zb (gemm_epilogue.glsl).
#version 450

layout(local_size_x = 64, local_size_y = 4) in;

layout(std430, binding = 0) readonly buffer In { uint src[]; };
layout(std430, binding = 1) writeonly buffer Out { uint dst[]; };
layout(std430, binding = 2) writeonly buffer Sums { int sums[]; };

layout(push_constant) uniform Push {
  uint rows;
  uint k;          // bytes per input row
  uint kp_words;   // words per output row (Kp / 4)
  uint src_lead;   // byte offset of row 0 in In
  uint dst_lead;   // word offset of row 0 in Out
  uint sums_lead;  // index of row 0's sum in Sums
  uint flip;       // 0x80808080 for uint8 input, 0 for int8
  uint groups_x;   // unused by the shader (grid width), kept for layout symmetry
} pc;

shared int partial[4][64];

uint load_byte(uint b) { return (src[b >> 2] >> (8u * (b & 3u))) & 0xffu; }

void main() {
  uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 4u + gl_LocalInvocationID.y;
  uint lane = gl_LocalInvocationID.x;
  int sum = 0;
  if (row < pc.rows) {
    uint base = pc.src_lead + row * pc.k;
    bool aligned = (base & 3u) == 0u;
    for (uint w = lane; w < pc.kp_words; w += 64u) {
      uint k0 = w * 4u;
      uint word = 0u;
      if (aligned && k0 + 4u <= pc.k) {
        word = src[(base + k0) >> 2] ^ pc.flip;
      } else {
        for (uint j = 0u; j < 4u; ++j)
          if (k0 + j < pc.k) word |= ((load_byte(base + k0 + j) ^ (pc.flip & 0xffu)) << (8u * j));
      }
      dst[pc.dst_lead + row * pc.kp_words + w] = word;
      sum += bitfieldExtract(int(word), 0, 8) + bitfieldExtract(int(word), 8, 8) +
             bitfieldExtract(int(word), 16, 8) + bitfieldExtract(int(word), 24, 8);
    }
  }
  partial[gl_LocalInvocationID.y][lane] = sum;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (lane < s) partial[gl_LocalInvocationID.y][lane] += partial[gl_LocalInvocationID.y][lane + s];
    barrier();
  }
  if (lane == 0u && row < pc.rows) sums[pc.sums_lead + row] = partial[gl_LocalInvocationID.y][0];
}
