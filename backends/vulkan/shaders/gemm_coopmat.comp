// gemm_coop16: int8 GEMM on NVIDIA cooperative matrices (GL_NV_cooperative_matrix, s8 x s8 ->
// s32), the backend's first tensor-core kernel, kept to compare gemm_coopmat_pipe.comp with
// (vk_gemm_q8_s32acc_coopmat_nv16x16x32_128x128; built with QF_TN=16, QF_BN=128, QF_BK=128).
//
// A workgroup of 8 subgroups (32 invocations each) computes a 128 x QF_BN output tile; the
// subgroups form a 2 x 4 grid, each owning a 64 x (QF_BN / 4) block of 16 x QF_TN accumulator
// tiles. K advances QF_BK bytes at a time: the workgroup copies the A and B slices from global
// memory (16-byte loads, prefetched into registers one step ahead) into shared memory rows
// padded by 16 bytes against bank conflicts, then each subgroup loads 16 x 32 A tiles and
// 32 x QF_TN B tiles (B is stored [N, Kp], i.e. column-major K x N) and multiply-adds.
// The epilogue goes through shared memory one accumulator tile at a time, so each invocation
// can apply gemm_common.glsl's per-element epilogue.
//   QF_TN = 16: 16x16x32 tiles; QF_TN = 8: 16x8x32 tiles. QF_BN = 128 or 256. QF_BK = 64 or 128.
// Every loop over fragments is unrolled: an array of cooperative matrices indexed at run time
// would live in local memory.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

#define QF_AB_TYPE uvec4
#include "gemm_common.glsl"

layout(local_size_x = 256) in;

const uint BM = 128u;
const uint BN = QF_BN;
const uint BK = QF_BK;               // bytes of K per step (64 or 128)
const uint ROW_VEC4 = BK / 16u + 1u;   // uvec4 per shared row: BK bytes + 16 of padding
const uint ROW_SLOTS = BK / 16u;       // uvec4 of K per row
const uint WM = BM / 2u;             // rows per subgroup
const uint WN = BN / 4u;             // columns per subgroup
const uint TM = WM / 16u;            // accumulator tiles per subgroup, down
const uint TN = WN / QF_TN;          // and across

shared uvec4 sh_a[BM * ROW_VEC4];
shared uvec4 sh_b[BN * ROW_VEC4];

const uint A_VEC4 = BM * BK / 16u / 256u;  // uvec4 each invocation copies per step
const uint B_VEC4 = BN * BK / 16u / 256u;

void main() {
  uint lid = gl_LocalInvocationID.x;
  uint sg = gl_SubgroupID;
  uint sg_m = sg / 4u, sg_n = sg % 4u;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  uint kp_vec4 = pc.kp_words / 4u;
  uint a_base = pc.a_lead / 4u, b_base = pc.b_lead / 4u;

  icoopmatNV<32, gl_ScopeSubgroup, 16, QF_TN> acc[TM][TN];
  [[unroll]] for (uint i = 0u; i < TM; ++i)
    [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = icoopmatNV<32, gl_ScopeSubgroup, 16, QF_TN>(0);

  // Invocation lid copies uvec4 (lid + 256 l): row (that / ROW_SLOTS), column (that % ROW_SLOTS).
  uvec4 reg_a[A_VEC4], reg_b[B_VEC4];
  uint steps = kp_vec4 / ROW_SLOTS;  // Kp is a multiple of 128 for BK = 128 (see op_matmul.cpp)
  [[unroll]] for (uint l = 0u; l < A_VEC4; ++l) {
    uint idx = lid + 256u * l, r = idx / ROW_SLOTS, c = idx % ROW_SLOTS;
    reg_a[l] = (steps > 0u && m0 + r < pc.m) ? a_words[a_base + (m0 + r) * kp_vec4 + c] : uvec4(0u);
  }
  [[unroll]] for (uint l = 0u; l < B_VEC4; ++l) {
    uint idx = lid + 256u * l, r = idx / ROW_SLOTS, c = idx % ROW_SLOTS;
    reg_b[l] = (steps > 0u && n0 + r < pc.n) ? b_words[b_base + (n0 + r) * kp_vec4 + c] : uvec4(0u);
  }

  for (uint step = 0u; step < steps; ++step) {
    barrier();  // every subgroup is done reading the previous step's slices
    [[unroll]] for (uint l = 0u; l < A_VEC4; ++l) {
      uint idx = lid + 256u * l;
      sh_a[(idx / ROW_SLOTS) * ROW_VEC4 + idx % ROW_SLOTS] = reg_a[l];
    }
    [[unroll]] for (uint l = 0u; l < B_VEC4; ++l) {
      uint idx = lid + 256u * l;
      sh_b[(idx / ROW_SLOTS) * ROW_VEC4 + idx % ROW_SLOTS] = reg_b[l];
    }
    barrier();
    if (step + 1u < steps) {  // fetch the next slices while this one is multiplied
      uint kv = (step + 1u) * ROW_SLOTS;
      [[unroll]] for (uint l = 0u; l < A_VEC4; ++l) {
        uint idx = lid + 256u * l, r = idx / ROW_SLOTS, c = idx % ROW_SLOTS;
        reg_a[l] = m0 + r < pc.m ? a_words[a_base + (m0 + r) * kp_vec4 + kv + c] : uvec4(0u);
      }
      [[unroll]] for (uint l = 0u; l < B_VEC4; ++l) {
        uint idx = lid + 256u * l, r = idx / ROW_SLOTS, c = idx % ROW_SLOTS;
        reg_b[l] = n0 + r < pc.n ? b_words[b_base + (n0 + r) * kp_vec4 + kv + c] : uvec4(0u);
      }
    }
    [[unroll]] for (uint kk = 0u; kk < BK / 32u; ++kk) {  // 32-byte K slices
      icoopmatNV<8, gl_ScopeSubgroup, 16, 32> fa[TM];
      [[unroll]] for (uint i = 0u; i < TM; ++i)
        coopMatLoadNV(fa[i], sh_a, (sg_m * WM + i * 16u) * ROW_VEC4 + kk * 2u, ROW_VEC4, false);
      [[unroll]] for (uint j = 0u; j < TN; ++j) {
        icoopmatNV<8, gl_ScopeSubgroup, 32, QF_TN> fb;
        coopMatLoadNV(fb, sh_b, (sg_n * WN + j * QF_TN) * ROW_VEC4 + kk * 2u, ROW_VEC4, true);
        [[unroll]] for (uint i = 0u; i < TM; ++i) acc[i][j] = coopMatMulAddNV(fa[i], fb, acc[i][j]);
      }
    }
  }

  // Epilogue: each subgroup stages one 16 x QF_TN tile at a time in its own part of sh_a.
  barrier();
  const uint TILE_VEC4 = 16u * QF_TN / 4u;
  uint stage = sg * TILE_VEC4;
  [[unroll]] for (uint i = 0u; i < TM; ++i)
    [[unroll]] for (uint j = 0u; j < TN; ++j) {
      coopMatStoreNV(acc[i][j], sh_a, stage, QF_TN / 4u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      uint row0 = m0 + sg_m * WM + i * 16u, col0 = n0 + sg_n * WN + j * QF_TN;
      [[unroll]] for (uint t = 0u; t < 16u * QF_TN / 32u; ++t) {
        uint e = t * 32u + gl_SubgroupInvocationID;
        uvec4 v = sh_a[stage + e / 4u];
        qf_epilogue(row0 + e / QF_TN, col0 + e % QF_TN, int(v[e % 4u]));
      }
      subgroupMemoryBarrierShared();
      subgroupBarrier();
    }
}
