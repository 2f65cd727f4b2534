// gemm_plain / gemm_dot: int8 GEMM with int32 accumulation on a 64x64 output tile per
// workgroup, 16 x 16 invocations each computing 4 x 4 outputs, K in steps of 64 bytes through
// shared memory (8.5 KiB, inside lavapipe's 32 KiB). Loops over the 4 x 4 accumulators are
// unrolled so they stay in registers.
//   QF_DOT=0: plain int8 arithmetic (bytes unpacked and multiplied in int32); runs anywhere.
//   QF_DOT=1: OpSDot on packed 4x8-bit words (SPV_KHR_integer_dot_product, the non-saturating
//             form), accelerated where integerDotProduct4x8BitPackedSignedAccelerated.
// glslang here has no GL_EXT_integer_dot_product, so OpSDot comes through
// GL_EXT_spirv_intrinsics (opcode 4450, capabilities DotProduct and
// DotProductInput4x8BitPacked).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#if QF_DOT
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450)
int qf_sdot(int a, int b, spirv_literal int packed_vector_format);
#endif

layout(local_size_x = 256) in;

#include "gemm_common.glsl"

shared uint tile_a[64][17];  // 16 words of K per row, one word of padding against bank conflicts
shared uint tile_b[64][17];

int dot4(uint a, uint b) {
#if QF_DOT
  return qf_sdot(int(a), int(b), 0);  // PackedVectorFormat4x8Bit
#else
  int ia = int(a), ib = int(b);
  return bitfieldExtract(ia, 0, 8) * bitfieldExtract(ib, 0, 8) +
         bitfieldExtract(ia, 8, 8) * bitfieldExtract(ib, 8, 8) +
         bitfieldExtract(ia, 16, 8) * bitfieldExtract(ib, 16, 8) +
         bitfieldExtract(ia, 24, 8) * bitfieldExtract(ib, 24, 8);
#endif
}

void main() {
  uint lid = gl_LocalInvocationID.x;
  uint tx = lid % 16u, ty = lid / 16u;
  uint m0 = gl_WorkGroupID.y * 64u, n0 = gl_WorkGroupID.x * 64u;
  int acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0;

  for (uint kt = 0u; kt < pc.kp_words; kt += 16u) {
    [[unroll]] for (uint l = 0u; l < 4u; ++l) {
      uint idx = lid + 256u * l;
      uint r = idx / 16u, w = idx % 16u;
      tile_a[r][w] = m0 + r < pc.m ? a_words[pc.a_lead + (m0 + r) * pc.kp_words + kt + w] : 0u;
      tile_b[r][w] = n0 + r < pc.n ? b_words[pc.b_lead + (n0 + r) * pc.kp_words + kt + w] : 0u;
    }
    barrier();
    [[unroll]] for (uint w = 0u; w < 16u; ++w) {
      uint a[4], b[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = tile_a[ty + 16u * i][w];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = tile_b[tx + 16u * j][w];
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += dot4(a[i], b[j]);
    }
    barrier();
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) qf_epilogue(m0 + ty + 16u * i, n0 + tx + 16u * j, acc[i][j]);
}
