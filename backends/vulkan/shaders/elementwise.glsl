// Shared by the element-wise shaders: the linear invocation index of a 2-D dispatch (dispatches
// wider than maxComputeWorkGroupCount[0] wrap into y) and the index of the (scale, zero point)
// pair of an element.

const uint QF_LOCAL = 256u;

uint qf_linear_invocation() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * QF_LOCAL +
         gl_LocalInvocationID.x;
}

// Granularity of the params: 0 per tensor, 1 per channel, 2 block-wise, 3 block-wise with rows a
// whole number of blocks (see op_elementwise.cpp, which fills the push constants).
//   per channel: element e of this dispatch is global element base + e; t = base % inner + e;
//                channel = (base / inner % channels + t / inner) % channels
//   block:       t = base % last + e; pair = (t / last) * blocks_per_row + (t % last) / block,
//                relative to the first pair of the dispatch's row; when last is a multiple of
//                block (3) that is t / block, one division instead of three
uint qf_param_index(uint e, uint gran, uint inner, uint channels, uint block, uint base_a,
                    uint base_b) {
  if (gran == 0u) return 0u;
  uint t = base_b + e;
  if (gran == 1u) return (base_a + t / inner) % channels;
  if (gran == 3u) return t / block;
  return (t / inner) * channels + (t % inner) / block;
}

// The same pair index, and how many consecutive elements from e on share it (at least 1), so a
// word of four elements usually needs one index computation and one pair load.
uint qf_param_run(uint e, uint gran, uint inner, uint channels, uint block, uint base_a,
                  uint base_b, out uint run) {
  if (gran == 0u) {
    run = 4u;
    return 0u;
  }
  uint t = base_b + e;
  if (gran == 3u) {
    run = block - t % block;
    return t / block;
  }
  uint col = t % inner;
  if (gran == 1u) {
    run = inner - col;
    return (base_a + t / inner) % channels;
  }
  run = min(block - col % block, inner - col);
  return (t / inner) * channels + col / block;
}
