// requantize: int32 -> int8/uint8 with one multiplier per tensor or per channel, in ONNX's float
// mode or TFLite's fixed-point mode (qforge::reference::requantize_value), exactly. Output words
// are owned as in quantize.comp.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer C { int c[]; };
layout(std430, binding = 1) buffer Y { uint y[]; };
layout(std430, binding = 2) readonly buffer M { float multipliers[]; };

layout(push_constant) uniform Push {
  uint count;
  uint c_lead;      // index of the first element in C
  uint y_lead;      // byte offset of the first element in Y
  uint gran;        // 0 per tensor, 1 per channel
  uint inner;
  uint channels;
  uint block;       // unused (1)
  uint base_a;
  uint base_b;
  int qmin;
  int qmax;
  int zero_point;
  uint fixed_point;
  uint words;
  uint p_lead;      // index of the first multiplier in M
} pc;

#include "elementwise.glsl"
#include "quant_math.glsl"

void main() {
  uint t = qf_linear_invocation();
  if (t >= pc.words) return;
  uint word = pc.y_lead / 4u + t;
  uint first = word * 4u;
  bool partial = first < pc.y_lead || first + 4u > pc.y_lead + pc.count;
  uint out_word = partial ? y[word] : 0u;
  for (uint j = 0u; j < 4u; ++j) {
    uint b = first + j;
    if (b < pc.y_lead || b >= pc.y_lead + pc.count) continue;
    uint e = b - pc.y_lead;
    float m = multipliers[pc.p_lead + qf_param_index(e, pc.gran, pc.inner, pc.channels, pc.block, pc.base_a,
                                         pc.base_b)];
    int v = qf_requantize(c[pc.c_lead + e], m, pc.fixed_point != 0u, pc.zero_point, pc.qmin,
                          pc.qmax);
    out_word = bitfieldInsert(out_word, uint(v) & 0xffu, int(8u * j), 8);
  }
  y[word] = out_word;
}
