// pack_cols: a [K, N] int8/uint8 matrix (row stride N, starting at any byte) -> N rows of Kp
// signed bytes (its transpose, zero padded, uint8 flipped as in pack_rows.comp) plus each
// column's sum. A workgroup covers 64 columns and up to 256 values of K; partial column sums meet
// through one atomicAdd per column and workgroup (the sums are zeroed before the dispatch).
// Column indices are relative to the dispatch's window (dispatches split along N and K).
#version 450

layout(local_size_x = 64, local_size_y = 4) in;

layout(std430, binding = 0) readonly buffer In { uint src[]; };
layout(std430, binding = 1) writeonly buffer Out { uint dst[]; };
layout(std430, binding = 2) buffer Sums { int sums[]; };

layout(push_constant) uniform Push {
  uint cols;       // N
  uint k;          // K
  uint kp_words;
  uint src_lead;   // byte offset of B[0, 0] in In
  uint dst_lead;   // word offset of column 0's row in Out
  uint sums_lead;
  uint flip;
  uint src_stride; // bytes between rows of B (N)
  uint k_base;     // K index of In's row 0 (a multiple of 4: dispatches split along K)
  uint w_end;      // first packed word this dispatch does not write
} pc;

shared int partial[4][64];

uint load_byte(uint b) { return (src[b >> 2] >> (8u * (b & 3u))) & 0xffu; }

void main() {
  uint n = gl_WorkGroupID.x * 64u + gl_LocalInvocationID.x;
  uint y = gl_LocalInvocationID.y;
  int sum = 0;
  if (n < pc.cols) {
    uint w0 = pc.k_base / 4u + gl_WorkGroupID.y * 64u;
    for (uint i = 0u; i < 16u; ++i) {
      uint w = w0 + y + 4u * i;
      if (w >= pc.w_end) break;
      uint word = 0u;
      for (uint j = 0u; j < 4u; ++j) {
        uint kk = w * 4u + j;
        if (kk < pc.k)
          word |= (load_byte(pc.src_lead + (kk - pc.k_base) * pc.src_stride + n) ^
                   (pc.flip & 0xffu)) << (8u * j);
      }
      dst[pc.dst_lead + n * pc.kp_words + w] = word;
      sum += bitfieldExtract(int(word), 0, 8) + bitfieldExtract(int(word), 8, 8) +
             bitfieldExtract(int(word), 16, 8) + bitfieldExtract(int(word), 24, 8);
    }
  }
  partial[y][gl_LocalInvocationID.x] = sum;
  barrier();
  if (y == 0u && n < pc.cols) {
    int s = partial[0][gl_LocalInvocationID.x] + partial[1][gl_LocalInvocationID.x] +
            partial[2][gl_LocalInvocationID.x] + partial[3][gl_LocalInvocationID.x];
    atomicAdd(sums[pc.sums_lead + n], s);
  }
}
