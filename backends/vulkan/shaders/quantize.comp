// quantize: float32 -> int8/uint8, per tensor, per channel or block-wise.
// q = saturate(rne(x / s) + z), NaN -> z (qforge::reference::quantize_value), exactly.
//
// Each invocation owns one 32-bit word of the output binding and writes it whole, so any byte
// offset works without 8-bit storage and no two invocations touch the same word. Bytes of an
// owned word outside this dispatch's elements are read and written back unchanged.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };  // the same binding, 16 bytes a load
layout(std430, binding = 1) buffer Q { uint q[]; };
layout(std430, binding = 2) readonly buffer P { uvec2 pairs[]; };  // (scale bits, zero point)

layout(push_constant) uniform Push {
  uint count;       // elements in this dispatch
  uint x_lead;      // index of the first element in X
  uint q_lead;      // byte offset of the first element in Q
  uint gran;        // 0 per tensor, 1 per channel, 2 block
  uint inner;       // per channel: elements per channel step; block: last dimension
  uint channels;    // per channel: channel count; block: blocks per row
  uint block;       // block size
  uint base_a;      // see qf_param_index
  uint base_b;
  int qmin;
  int qmax;
  uint words;       // output words this dispatch owns
  uint p_lead;      // index of the first pair in P
} pc;

#include "elementwise.glsl"
#include "quant_math.glsl"

uint quantize_byte(float v, uvec2 pair) {
  int z = int(pair.y);
  return uint(quantize_offset(v, uintBitsToFloat(pair.x), pc.qmin - z, pc.qmax - z) + z) & 0xffu;
}

void main() {
  uint t = qf_linear_invocation();
  if (t >= pc.words) return;
  uint word = pc.q_lead / 4u + t;
  uint first = word * 4u;  // byte index (in Q) of byte 0 of the word
  if (first >= pc.q_lead && first + 4u <= pc.q_lead + pc.count) {
    // A whole word: four consecutive elements, one 16-byte load where X is aligned for it.
    uint e0 = first - pc.q_lead;
    uint xi = pc.x_lead + e0;
    vec4 v = (xi & 3u) == 0u ? x4[xi >> 2]
                             : vec4(x[xi], x[xi + 1u], x[xi + 2u], x[xi + 3u]);
    uint run;
    uint idx = qf_param_run(e0, pc.gran, pc.inner, pc.channels, pc.block, pc.base_a, pc.base_b, run);
    uvec2 pair = pairs[pc.p_lead + idx];
    uint out_word = quantize_byte(v.x, pair);
    [[unroll]] for (uint j = 1u; j < 4u; ++j) {
      if (j >= run) {  // a new channel or block starts inside the word
        if (pc.gran == 1u) {  // the next channel (channels along the last axis: every element)
          idx = idx + 1u == pc.channels ? 0u : idx + 1u;
          run += pc.inner;
        } else {
          idx = qf_param_run(e0 + j, pc.gran, pc.inner, pc.channels, pc.block, pc.base_a,
                             pc.base_b, run);
          run += j;
        }
        pair = pairs[pc.p_lead + idx];
      }
      out_word |= quantize_byte(v[j], pair) << (8u * j);
    }
    q[word] = out_word;
    return;
  }
  // The first or last word of the dispatch: keep the bytes that are not ours.
  uint out_word = q[word];
  for (uint j = 0u; j < 4u; ++j) {
    uint b = first + j;
    if (b < pc.q_lead || b >= pc.q_lead + pc.count) continue;
    uint e = b - pc.q_lead;
    uvec2 pair = pairs[pc.p_lead + qf_param_index(e, pc.gran, pc.inner, pc.channels, pc.block,
                                                  pc.base_a, pc.base_b)];
    out_word = bitfieldInsert(out_word, quantize_byte(x[pc.x_lead + e], pair), int(8u * j), 8);
  }
  q[word] = out_word;
}
