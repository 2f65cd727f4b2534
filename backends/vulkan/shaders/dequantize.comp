// dequantize: int8/uint8 -> float32, x = float(q - z) * s (qforge::reference::dequantize_value).
// Each invocation writes four consecutive outputs; q may start at any byte.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Q { uint q[]; };
layout(std430, binding = 1) writeonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer X4 { vec4 x4[]; };  // the same binding, 16 bytes a store
layout(std430, binding = 2) readonly buffer P { uvec2 pairs[]; };  // (scale bits, zero point)

layout(push_constant) uniform Push {
  uint count;
  uint q_lead;      // byte offset of the first element in Q
  uint x_lead;      // index of the first element in X
  uint gran;
  uint inner;
  uint channels;
  uint block;
  uint base_a;
  uint base_b;
  uint is_signed;   // int8 (1) or uint8 (0)
  uint p_lead;      // index of the first pair in P
  uint pad1;
} pc;

#include "elementwise.glsl"

float dequantize_byte(uint byte_, uvec2 pair) {
  int code = pc.is_signed != 0u ? bitfieldExtract(int(byte_), 0, 8) : int(byte_);
  return float(code - int(pair.y)) * uintBitsToFloat(pair.x);
}

void main() {
  uint t = qf_linear_invocation();
  uint e0 = t * 4u;
  if (e0 >= pc.count) return;
  uint b0 = pc.q_lead + e0;
  uint xi = pc.x_lead + e0;
  if (e0 + 4u <= pc.count && (b0 & 3u) == 0u && (xi & 3u) == 0u) {
    // Four elements from one word of Q into one 16-byte store.
    uint w = q[b0 >> 2];
    uint run;
    uint idx = qf_param_run(e0, pc.gran, pc.inner, pc.channels, pc.block, pc.base_a, pc.base_b, run);
    uvec2 pair = pairs[pc.p_lead + idx];
    vec4 v;
    v.x = dequantize_byte(w & 0xffu, pair);
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
      v[j] = dequantize_byte((w >> (8u * j)) & 0xffu, pair);
    }
    x4[xi >> 2] = v;
    return;
  }
  for (uint j = 0u; j < 4u; ++j) {
    uint e = e0 + j;
    if (e >= pc.count) return;
    uint b = pc.q_lead + e;
    uvec2 pair = pairs[pc.p_lead + qf_param_index(e, pc.gran, pc.inner, pc.channels, pc.block,
                                                  pc.base_a, pc.base_b)];
    x[pc.x_lead + e] = dequantize_byte((q[b >> 2] >> (8u * (b & 3u))) & 0xffu, pair);
  }
}
