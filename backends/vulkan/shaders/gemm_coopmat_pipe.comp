// gemm_coopmat_pipe: int8 GEMM on NVIDIA cooperative matrices (GL_NV_cooperative_matrix, s8 x s8
// -> s32) with 64 x 64 (or 64 x 32) outputs per subgroup, the tensor-core path of the Vulkan
// backend.
//
// Workgroup: QF_SG_M x QF_SG_N subgroups of 32; each owns QF_WT_M x QF_WT_N accumulator tiles of
// 16 x QF_TN (64 x 64 outputs for 4 x 4 tiles of 16 x 16), so the workgroup tile is
// BM = 16 QF_WT_M QF_SG_M rows by BN = QF_TN QF_WT_N QF_SG_N columns.
//
// K advances QF_BK bytes per step through one shared-memory stage: each invocation copies its
// share of the A [BM, BK] and B [BN, BK] slices (B is packed [N, Kp], i.e. K x N column-major)
// with 16-byte loads into registers, then into shared memory rows padded by 16 bytes
// (conflict-free 16 x 32 fragment loads), and the subgroups multiply from there.
//   QF_PREFETCH = 1: the registers already hold step s + 1 while step s is multiplied (two
//     barriers per step, the loads in flight during the multiply), at the price of the copy
//     registers staying live across it.
//   QF_PREFETCH = 0 (direct): each step is copied, then multiplied; no copy registers live across
//     the multiply, and the other workgroups on the multiprocessor hide the load latency.
// (Two shared stages with one barrier per step ran slower on the H200 in every configuration
// tried: docs/VULKAN.md.)
//
// Feeding variants for the tiles that lie wholly inside the output (the others take the direct
// loop above, which zero-fills rows past the end). All ran slower than the direct loop on the
// H200 (run 4 in docs/VULKAN.md: buffer fragment loads expand into many narrow loads there):
//   QF_SRC = 1: only A goes through shared memory; every subgroup loads its B fragments straight
//     from the storage buffer (L1 serves the subgroups that share them), one 32-byte slice ahead
//     of the multiply-adds, so their latency overlaps the slice before.
//   QF_SRC = 2: A and B fragments both come from the storage buffer, one slice ahead; no shared
//     memory and no barrier in the main loop at all (each subgroup streams on its own).
//   QF_SPLIT = 1 (QF_SRC 0 or 1): two shared stages; the copy of step s + 1 is split in halves,
//     each loaded into registers before half of step s's slices and stored to the other stage
//     after them, so the loads are in flight while the tensor cores work and only half a copy's
//     registers are live; one barrier per step.
//
// Workgroups walk the output in groups of 8 tile rows (the usual grouped order), so the tiles
// that run at the same time share A rows and B columns in L2.
//
// Epilogue: each subgroup stores one 16 x WN strip of its accumulators at a time to shared
// memory (rows padded against bank conflicts); lane l then owns columns l, l + 32, ... of the
// strip, whose zero-point, scale and bias terms it loaded once, and writes 32 consecutive
// outputs per store. The per-element arithmetic is gemm_common.glsl's (qf_store), exact as the
// reference. The row loop is not unrolled: the epilogue stays a few hundred instructions, so
// warps still in their main loop keep their code in the instruction cache.
//
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

#ifndef QF_SRC
#define QF_SRC 0
#endif
#ifndef QF_SPLIT
#define QF_SPLIT 0
#endif
#define QF_AB_TYPE uvec4
#include "gemm_common.glsl"

layout(local_size_x = QF_SG_M * QF_SG_N * 32) in;

const uint THREADS = QF_SG_M * QF_SG_N * 32u;
const uint CN = QF_TN;                // columns of one accumulator tile (16 or 8)
const uint TM = QF_WT_M;              // accumulator tiles per subgroup, down
const uint TN = QF_WT_N;              // and across
const uint WM = TM * 16u;             // rows per subgroup
const uint WN = TN * CN;              // columns per subgroup (a multiple of 32)
const uint BM = QF_SG_M * WM;
const uint BN = QF_SG_N * WN;
const uint BK = QF_BK;                // bytes of K per step: 32, 64 or 128
const uint SLOTS = BK / 16u;          // uvec4 of K per row
const uint ROW = SLOTS + 1u;          // uvec4 per shared row: BK bytes + 16 of padding
const uint A_STAGE = BM * ROW;
const uint MAIN_VEC4 = (BM + BN) * ROW;  // one step's A rows, then its B rows
const uint SLICES = BK / 32u;         // 32-byte K slices per step
#if QF_SPLIT
// The split pipeline's stage: A rows, then B rows when B is staged too; two of them.
const uint STAGE = (BM + (QF_SRC == 0 ? BN : 0u)) * ROW;
const uint SPLIT_VEC4 = 2u * STAGE;
#else
const uint SPLIT_VEC4 = 0u;
#endif
const uint STRIP_ROW = WN / 4u + 1u;  // uvec4 per epilogue strip row: WN words + 4 of padding
const uint STRIP = 16u * STRIP_ROW;
const uint EPI_VEC4 = QF_SG_M * QF_SG_N * STRIP;
const uint A_LOADS = BM * SLOTS / THREADS;  // uvec4 each invocation copies per step (exact:
const uint B_LOADS = BN * SLOTS / THREADS;  // the host's kernel table checks the divisions)
const uint CPL = WN / 32u;            // epilogue columns per lane
const uint GROUP = 8u;                // tile rows per group of the launch order

const uint SH_A = MAIN_VEC4 > EPI_VEC4 ? MAIN_VEC4 : EPI_VEC4;
shared uvec4 sh[SH_A > SPLIT_VEC4 ? SH_A : SPLIT_VEC4];

uvec4 reg_a[A_LOADS];
uvec4 reg_b[B_LOADS];
uint m0, n0, kp_vec4, a_base, b_base;

// Registers <- the A and B slices of K step `step` (rows past the end read as zeros).
void fetch(uint step) {
  uint kv = step * SLOTS;
  [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
    uint idx = gl_LocalInvocationID.x + THREADS * l, r = idx / SLOTS, c = idx % SLOTS;
    reg_a[l] = m0 + r < pc.m ? a_words[a_base + (m0 + r) * kp_vec4 + kv + c] : uvec4(0u);
  }
  [[unroll]] for (uint l = 0u; l < B_LOADS; ++l) {
    uint idx = gl_LocalInvocationID.x + THREADS * l, r = idx / SLOTS, c = idx % SLOTS;
    reg_b[l] = n0 + r < pc.n ? b_words[b_base + (n0 + r) * kp_vec4 + kv + c] : uvec4(0u);
  }
}

// The shared-memory stage <- the registers.
void stash() {
  [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
    uint idx = gl_LocalInvocationID.x + THREADS * l;
    sh[(idx / SLOTS) * ROW + idx % SLOTS] = reg_a[l];
  }
  [[unroll]] for (uint l = 0u; l < B_LOADS; ++l) {
    uint idx = gl_LocalInvocationID.x + THREADS * l;
    sh[A_STAGE + (idx / SLOTS) * ROW + idx % SLOTS] = reg_b[l];
  }
}

#if QF_SPLIT
// The split copy: the A loads of a step (then B's, when staged) in two halves.
const uint COPY = A_LOADS + (QF_SRC == 0 ? B_LOADS : 0u);
const uint HALF = COPY / 2u;  // the host's kernel table checks that COPY is even
uvec4 reg_h[HALF];

void fetch_half(uint step, uint part) {
  uint kv = step * SLOTS;
  [[unroll]] for (uint h = 0u; h < HALF; ++h) {
    uint l = part * HALF + h;
    if (l < A_LOADS) {
      uint idx = gl_LocalInvocationID.x + THREADS * l, r = idx / SLOTS, c = idx % SLOTS;
      reg_h[h] = a_words[a_base + (m0 + r) * kp_vec4 + kv + c];  // full tiles only: in bounds
    } else {
      uint idx = gl_LocalInvocationID.x + THREADS * (l - A_LOADS), r = idx / SLOTS, c = idx % SLOTS;
      reg_h[h] = b_words[b_base + (n0 + r) * kp_vec4 + kv + c];
    }
  }
}

void stash_half(uint stage, uint part) {
  [[unroll]] for (uint h = 0u; h < HALF; ++h) {
    uint l = part * HALF + h;
    if (l < A_LOADS) {
      uint idx = gl_LocalInvocationID.x + THREADS * l;
      sh[stage + (idx / SLOTS) * ROW + idx % SLOTS] = reg_h[h];
    } else {
      uint idx = gl_LocalInvocationID.x + THREADS * (l - A_LOADS);
      sh[stage + BM * ROW + (idx / SLOTS) * ROW + idx % SLOTS] = reg_h[h];
    }
  }
}
#endif

void main() {
  uint lane = gl_SubgroupInvocationID;
  uint sg = gl_SubgroupID;
  uint sg_m = sg / QF_SG_N, sg_n = sg % QF_SG_N;

  // Grouped launch order: consecutive workgroups take GROUP tile rows, then move across.
  uint tiles_n = gl_NumWorkGroups.x, tiles_m = gl_NumWorkGroups.y;
  uint id = gl_WorkGroupID.y * tiles_n + gl_WorkGroupID.x;
  uint first = (id / (GROUP * tiles_n)) * GROUP;
  uint rows_in_group = min(tiles_m - first, GROUP);
  uint in_group = id % (GROUP * tiles_n);
  m0 = (first + in_group % rows_in_group) * BM;
  n0 = (in_group / rows_in_group) * BN;

  kp_vec4 = pc.kp_words / 4u;
  a_base = pc.a_lead / 4u;
  b_base = pc.b_lead / 4u;
  uint steps = kp_vec4 / SLOTS;  // Kp is a multiple of 128 (op_matmul.cpp)

  icoopmatNV<32, gl_ScopeSubgroup, 16, CN> acc[TM][TN];
  [[unroll]] for (uint i = 0u; i < TM; ++i)
    [[unroll]] for (uint j = 0u; j < TN; ++j) acc[i][j] = icoopmatNV<32, gl_ScopeSubgroup, 16, CN>(0);

#if QF_SRC != 0 || QF_SPLIT
  // Row (A) and column (B) offsets of this subgroup's first fragment in the storage buffers.
  uint a_frag = a_base + (m0 + sg_m * WM) * kp_vec4;
  uint b_frag = b_base + (n0 + sg_n * WN) * kp_vec4;
  uint slices = kp_vec4 / 2u;  // 32-byte slices in all: a multiple of 4
  // Uniform over the workgroup; K = 0 (no step) takes the direct loop, which loads nothing.
  bool full = m0 + BM <= pc.m && n0 + BN <= pc.n && steps > 0u;
  if (full) {
#if QF_SRC == 2
    // Fragments of slice t + 1 load while slice t multiplies; the last load repeats the last
    // slice (in bounds, unused) instead of branching.
    icoopmatNV<8, gl_ScopeSubgroup, 16, 32> fa[2][TM];
    icoopmatNV<8, gl_ScopeSubgroup, 32, CN> fb[2][TN];
    [[unroll]] for (uint i = 0u; i < TM; ++i)
      coopMatLoadNV(fa[0][i], a_words, a_frag + i * 16u * kp_vec4, kp_vec4, false);
    [[unroll]] for (uint j = 0u; j < TN; ++j)
      coopMatLoadNV(fb[0][j], b_words, b_frag + j * CN * kp_vec4, kp_vec4, true);
    for (uint t = 0u; t < slices; t += 2u) {
      [[unroll]] for (uint u = 0u; u < 2u; ++u) {
        uint nxt = min(t + u + 1u, slices - 1u) * 2u;
        [[unroll]] for (uint i = 0u; i < TM; ++i)
          coopMatLoadNV(fa[u ^ 1u][i], a_words, a_frag + i * 16u * kp_vec4 + nxt, kp_vec4, false);
        [[unroll]] for (uint j = 0u; j < TN; ++j)
          coopMatLoadNV(fb[u ^ 1u][j], b_words, b_frag + j * CN * kp_vec4 + nxt, kp_vec4, true);
        [[unroll]] for (uint j = 0u; j < TN; ++j)
          [[unroll]] for (uint i = 0u; i < TM; ++i)
            acc[i][j] = coopMatMulAddNV(fa[u][i], fb[u][j], acc[i][j]);
      }
    }
#else
#if QF_SRC == 1
    // B fragments from the storage buffer, one slice ahead (SLICES is even, so the two buffers
    // keep their roles from step to step).
    icoopmatNV<8, gl_ScopeSubgroup, 32, CN> fb[2][TN];
    [[unroll]] for (uint j = 0u; j < TN; ++j)
      coopMatLoadNV(fb[0][j], b_words, b_frag + j * CN * kp_vec4, kp_vec4, true);
#define QF_B_NEXT(S, KK)                                                                   \
    {                                                                                      \
      uint nxt = min((S) * SLICES + (KK) + 1u, slices - 1u) * 2u;                          \
      [[unroll]] for (uint j = 0u; j < TN; ++j)                                            \
        coopMatLoadNV(fb[((KK) + 1u) & 1u][j], b_words, b_frag + j * CN * kp_vec4 + nxt,   \
                      kp_vec4, true);                                                      \
    }
#define QF_B_FRAG(KK, J) fb[(KK) & 1u][J]
#else
#define QF_B_NEXT(S, KK)
#define QF_B_FRAG(KK, J) fbs
#endif
    // Slice KK of the step held in shared memory at offset ST.
#if QF_SRC == 1
#define QF_SLICE(ST, S, KK)                                                                \
    {                                                                                      \
      QF_B_NEXT(S, KK)                                                                     \
      icoopmatNV<8, gl_ScopeSubgroup, 16, 32> fas[TM];                                     \
      [[unroll]] for (uint i = 0u; i < TM; ++i)                                            \
        coopMatLoadNV(fas[i], sh, (ST) + (sg_m * WM + i * 16u) * ROW + (KK) * 2u, ROW, false); \
      [[unroll]] for (uint j = 0u; j < TN; ++j)                                            \
        [[unroll]] for (uint i = 0u; i < TM; ++i)                                          \
          acc[i][j] = coopMatMulAddNV(fas[i], QF_B_FRAG(KK, j), acc[i][j]);                \
    }
#else
#define QF_SLICE(ST, S, KK)                                                                \
    {                                                                                      \
      icoopmatNV<8, gl_ScopeSubgroup, 16, 32> fas[TM];                                     \
      [[unroll]] for (uint i = 0u; i < TM; ++i)                                            \
        coopMatLoadNV(fas[i], sh, (ST) + (sg_m * WM + i * 16u) * ROW + (KK) * 2u, ROW, false); \
      [[unroll]] for (uint j = 0u; j < TN; ++j) {                                          \
        icoopmatNV<8, gl_ScopeSubgroup, 32, CN> fbs;                                       \
        coopMatLoadNV(fbs, sh, (ST) + (BM + sg_n * WN + j * CN) * ROW + (KK) * 2u, ROW, true); \
        [[unroll]] for (uint i = 0u; i < TM; ++i)                                          \
          acc[i][j] = coopMatMulAddNV(fas[i], fbs, acc[i][j]);                             \
      }                                                                                    \
    }
#endif
#if QF_SPLIT
    fetch_half(0u, 0u);
    stash_half(0u, 0u);
    fetch_half(0u, 1u);
    stash_half(0u, 1u);
    barrier();
    for (uint s = 0u; s < steps; ++s) {
      uint cur = (s & 1u) * STAGE, other = STAGE - cur;
      bool more = s + 1u < steps;
      if (more) fetch_half(s + 1u, 0u);
      [[unroll]] for (uint kk = 0u; kk < SLICES; ++kk) {
        QF_SLICE(cur, s, kk)
        if (kk == SLICES / 2u - 1u && more) {
          stash_half(other, 0u);
          fetch_half(s + 1u, 1u);
        }
      }
      if (more) stash_half(other, 1u);
      barrier();  // the other stage is written, and every subgroup is done reading this one
    }
#else
    // Direct: A (QF_SRC = 1) is copied for each step, then multiplied; two barriers per step.
    for (uint s = 0u; s < steps; ++s) {
      [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
        uint idx = gl_LocalInvocationID.x + THREADS * l, r = idx / SLOTS, c = idx % SLOTS;
        reg_a[l] = a_words[a_base + (m0 + r) * kp_vec4 + s * SLOTS + c];
      }
      [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
        uint idx = gl_LocalInvocationID.x + THREADS * l;
        sh[(idx / SLOTS) * ROW + idx % SLOTS] = reg_a[l];
      }
      barrier();
      [[unroll]] for (uint kk = 0u; kk < SLICES; ++kk) QF_SLICE(0u, s, kk)
      barrier();
    }
#endif
#endif
  } else {
#endif  // the direct loop below: every tile of the plain kernels, the edge tiles of the others
#if QF_PREFETCH
  if (steps > 0u) {
    fetch(0u);
    stash();
    if (steps > 1u) fetch(1u);
  }
  barrier();
#endif

  for (uint s = 0u; s < steps; ++s) {
#if !QF_PREFETCH
    fetch(s);  // the barrier that ended step s - 1: every subgroup is done reading it
    stash();
    barrier();
#endif
    [[unroll]] for (uint kk = 0u; kk < BK / 32u; ++kk) {  // 32-byte K slices
      icoopmatNV<8, gl_ScopeSubgroup, 16, 32> fa[TM];
      [[unroll]] for (uint i = 0u; i < TM; ++i)
        coopMatLoadNV(fa[i], sh, (sg_m * WM + i * 16u) * ROW + kk * 2u, ROW, false);
      [[unroll]] for (uint j = 0u; j < TN; ++j) {
        icoopmatNV<8, gl_ScopeSubgroup, 32, CN> fb;
        coopMatLoadNV(fb, sh, A_STAGE + (sg_n * WN + j * CN) * ROW + kk * 2u, ROW, true);
        [[unroll]] for (uint i = 0u; i < TM; ++i) acc[i][j] = coopMatMulAddNV(fa[i], fb, acc[i][j]);
      }
    }
#if QF_PREFETCH
    barrier();  // every subgroup is done reading this step
    if (s + 1u < steps) {  // registers -> shared, then the loads of the step after it
      stash();
      if (s + 2u < steps) fetch(s + 2u);
    }
#endif
    barrier();
  }
#if QF_SRC != 0 || QF_SPLIT
  }
  barrier();  // the epilogue reuses shared memory: every subgroup is done with its last stage
#endif

  // Epilogue (the last barrier of the loop, or the one before it, freed shared memory).
  uint strip = sg * STRIP;
  uint col0 = n0 + sg_n * WN;
  QfCol cols[CPL];
  [[unroll]] for (uint q = 0u; q < CPL; ++q) cols[q] = qf_col(col0 + q * 32u + lane);
  // One strip per accumulator row; written out by the preprocessor because glslc leaves a loop
  // around the inner row loop rolled, which would put acc[][] in local memory.
#define QF_EPI_STRIP(I)                                                                   \
  {                                                                                       \
    [[unroll]] for (uint j = 0u; j < TN; ++j)                                             \
      coopMatStoreNV(acc[I][j], sh, strip + j * (CN / 4u), STRIP_ROW, false);             \
    subgroupMemoryBarrierShared();                                                        \
    subgroupBarrier();                                                                    \
    uint row0 = m0 + sg_m * WM + I * 16u;                                                 \
    [[dont_unroll]] for (uint r = 0u; r < 16u; ++r) {                                     \
      QfRow rp = qf_row(row0 + r);                                                        \
      [[unroll]] for (uint q = 0u; q < CPL; ++q) {                                        \
        uint w = (strip + r * STRIP_ROW) * 4u + q * 32u + lane;                           \
        qf_store(row0 + r, col0 + q * 32u + lane, rp, cols[q], int(sh[w >> 2u][w & 3u])); \
      }                                                                                   \
    }                                                                                     \
    subgroupMemoryBarrierShared();                                                        \
    subgroupBarrier();                                                                    \
  }
  QF_EPI_STRIP(0u)
#if QF_WT_M > 1
  QF_EPI_STRIP(1u)
#endif
#if QF_WT_M > 2
  QF_EPI_STRIP(2u)
#endif
#if QF_WT_M > 3
  QF_EPI_STRIP(3u)
#endif
#if QF_WT_M > 4
#error "QF_WT_M above 4: extend the strip list"
#endif
}
