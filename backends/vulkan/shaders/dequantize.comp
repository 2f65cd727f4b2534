// dequantize: int8/uint8 -> float32, x = float(q - z) * s (qforge::reference::dequantize_value).
// Each invocation writes four consecutive outputs; q may start at any byte.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Q { uint q[]; };
layout(std430, binding = 1) writeonly buffer X { float x[]; };
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

void main() {
  uint t = qf_linear_invocation();
  for (uint j = 0u; j < 4u; ++j) {
    uint e = t * 4u + j;
    if (e >= pc.count) return;
    uint b = pc.q_lead + e;
    uint byte_ = (q[b >> 2] >> (8u * (b & 3u))) & 0xffu;
    int code = pc.is_signed != 0u ? bitfieldExtract(int(byte_), 0, 8) : int(byte_);
    uvec2 pair = pairs[pc.p_lead + qf_param_index(e, pc.gran, pc.inner, pc.channels, pc.block, pc.base_a,
                                      pc.base_b)];
    x[pc.x_lead + e] = float(code - int(pair.y)) * uintBitsToFloat(pair.x);
  }
}
