// coopmat_peak: the rate of s8 NV cooperative-matrix multiply-adds a Vulkan compute shader gets,
// the ceiling of the GEMM kernels built on them (like qforge_bench_cuda's register-only
// mma.sync loop). Each subgroup multiply-adds 2 x 4 independent 16 x QF_TN accumulators
// (a 32 x 4*QF_TN block) per iteration:
//   QF_SMEM = 0: the A and B fragments stay in registers (the multiply-add rate alone);
//   QF_SMEM = 1: they are loaded from shared memory every iteration, from rows padded as the
//     GEMM kernels pad them (the multiply-adds fed the way the GEMMs feed them, no barriers).
// The accumulators are stored only when the push constant `store` is set (never by the
// benchmark), which keeps every multiply-add live.
#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Data { uvec4 data[]; };
layout(push_constant) uniform Push {
  uint iters;
  uint store;
} pc;

const uint CN = QF_TN;
const uint ROW = 9u;  // uvec4 per shared row: 128 bytes of K + 16 of padding, as in the GEMMs
const uint ROWS = 256u;
shared uvec4 sh[ROWS * ROW];

void main() {
  uint lid = gl_LocalInvocationID.x;
  // Inputs: the first ROWS * 8 uvec4 of data, whatever they hold.
  [[unroll]] for (uint l = 0u; l < 8u; ++l) sh[lid * ROW + l] = data[lid * 8u + l];
  barrier();

  icoopmatNV<32, gl_ScopeSubgroup, 16, CN> acc[2][4];
  [[unroll]] for (uint i = 0u; i < 2u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = icoopmatNV<32, gl_ScopeSubgroup, 16, CN>(0);
  uint sg_row = gl_SubgroupID * 32u;  // each subgroup reads its own 32 rows (and B rows after them)

#if QF_SMEM
  for (uint it = 0u; it < pc.iters; ++it) {
    uint kk = (it & 3u) * 2u;  // a different 32-byte K slice each iteration: nothing to hoist
    icoopmatNV<8, gl_ScopeSubgroup, 16, 32> fa[2];
    [[unroll]] for (uint i = 0u; i < 2u; ++i)
      coopMatLoadNV(fa[i], sh, (sg_row + i * 16u) * ROW + kk, ROW, false);
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      icoopmatNV<8, gl_ScopeSubgroup, 32, CN> fb;
      coopMatLoadNV(fb, sh, ((sg_row + j * CN) % ROWS) * ROW + kk, ROW, true);
      [[unroll]] for (uint i = 0u; i < 2u; ++i) acc[i][j] = coopMatMulAddNV(fa[i], fb, acc[i][j]);
    }
  }
#else
  icoopmatNV<8, gl_ScopeSubgroup, 16, 32> fa[2];
  icoopmatNV<8, gl_ScopeSubgroup, 32, CN> fb[4];
  [[unroll]] for (uint i = 0u; i < 2u; ++i)
    coopMatLoadNV(fa[i], sh, (sg_row + i * 16u) * ROW, ROW, false);
  [[unroll]] for (uint j = 0u; j < 4u; ++j)
    coopMatLoadNV(fb[j], sh, ((sg_row + j * CN) % ROWS) * ROW + 2u, ROW, true);
  for (uint it = 0u; it < pc.iters; ++it) {
    [[unroll]] for (uint u = 0u; u < 4u; ++u)
      [[unroll]] for (uint i = 0u; i < 2u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
  }
#endif

  if (pc.store != 0u) {
    [[unroll]] for (uint i = 0u; i < 2u; ++i)
      [[unroll]] for (uint j = 0u; j < 4u; ++j)
        coopMatStoreNV(acc[i][j], data, ((gl_SubgroupID * 8u + i * 4u + j) * 16u * CN) / 4u, CN / 4u, false);
  }
}
