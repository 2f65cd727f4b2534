// conv_integer / qlinear_conv / conv_dequant: a direct 2-D convolution, one output element per
// invocation (qlinear_conv: one output word of four byte elements, so that no invocation writes
// bytes of another). The exact sums of the reference (core/src/reference/conv.cpp) in int32:
//   acc = sum over ci < C / groups, kh, kw of (X[n, c0 + ci, ih, iw] - zx) * (W[o, ci, kh, kw] - zw)
// skipping positions outside the input (padding contributes zero). The host claims only
// reductions within reference::int32_safe_reduction, so acc is exact; acc + an int32 bias is
// checked and its first overflow reported through the flag buffer instead of wrapping.
// Epilogues, in the reference's operation order:
//   mode 0 conv_integer   acc as int32
//   mode 1 conv_dequant   clamp((float(acc + bias_i32) * sx) * sw[o] + bias_f32[o]), no contraction
//   mode 2 qlinear, float requantize_value(acc + bias, m[o]) in ONNX's float mode, clamped
//   mode 3 qlinear, fixed the same in TFLite's fixed-point mode
// Operands are read as words (bytes extracted), so no 8- or 16-bit storage feature is needed.
// Plain int32 multiply-adds: the operands of one output are strided (NCHW) or a short run of
// channels (NHWC), not four packed bytes a dot-product instruction could take.
#version 450
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer X { uint x_words[]; };
layout(std430, binding = 1) readonly buffer Wt { uint w_words[]; };
// Params: zw[o] (int) at 0, then per o the float scale sw[o] (mode 1) or multiplier m[o] (2, 3)
// at pc.scale_off; entry o, or 0 for per-tensor W params.
layout(std430, binding = 2) readonly buffer Params { uint params[]; };
layout(std430, binding = 3) readonly buffer Bias { uint bias[]; };  // int32 or float32 bits
layout(std430, binding = 4) buffer Y { uint y_words[]; };
layout(std430, binding = 5) buffer Flag { uint first_overflow; };

layout(push_constant) uniform Push {
  int c, h, w, o;          // input channels, extents, output channels
  int oh, ow, kh, kw;
  int stride_h, stride_w, dilation_h, dilation_w;
  int pad_top, pad_left, cg, og;  // channels per group: in, out
  int zx;
  uint flags;     // bit 0 NHWC, 1 X int8, 2 W int8, 3-4 bias (0 none, 1 int32, 2 float32),
                  // 5-6 mode, 7 per-channel W params
  uint count;     // output elements
  uint x_lead, w_lead, y_lead, bias_lead;  // bytes (X, W, Y) / words (bias) from binding starts
  uint scale_off; // index of the first scale / multiplier in Params
  int zy;
  uint lo_bits, hi_bits;  // clamp: int (modes 2, 3) or float bits (mode 1)
  uint sx_bits;
  uint zero;      // always 0 (see the conv_dequant epilogue)
} pc;

#include "elementwise.glsl"
#include "quant_math.glsl"

int x_byte(uint index, bool is_signed) {
  uint word = x_words[index >> 2];
  int shift = int((index & 3u) * 8u);
  return is_signed ? bitfieldExtract(int(word), shift, 8) : int(bitfieldExtract(word, shift, 8));
}

int w_byte(uint index, bool is_signed) {
  uint word = w_words[index >> 2];
  int shift = int((index & 3u) * 8u);
  return is_signed ? bitfieldExtract(int(word), shift, 8) : int(bitfieldExtract(word, shift, 8));
}

// ceil(a / b) and floor(a / b) for b > 0.
int ceil_div(int a, int b) { return a <= 0 ? -((-a) / b) : (a + b - 1) / b; }
int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The element of linear index e (Y's layout) as an int32 (modes 0, 2, 3) or float32 bits.
uint compute(uint e) {
  bool nhwc = (pc.flags & 1u) != 0u;
  bool x_signed = (pc.flags & 2u) != 0u, w_signed = (pc.flags & 4u) != 0u;
  uint bias_kind = (pc.flags >> 3) & 3u, mode = (pc.flags >> 5) & 3u;
  uint step = (pc.flags >> 7) & 1u;
  int o, y, x, n;
  int t = int(e);
  if (nhwc) {
    o = t % pc.o;  t /= pc.o;
    x = t % pc.ow; t /= pc.ow;
    y = t % pc.oh; n = t / pc.oh;
  } else {
    x = t % pc.ow; t /= pc.ow;
    y = t % pc.oh; t /= pc.oh;
    o = t % pc.o;  n = t / pc.o;
  }
  int c0 = (o / pc.og) * pc.cg;
  int zw = int(params[uint(o) * step]);
  // The kernel taps that land inside the input (the rest read padding, which adds zero):
  // 0 <= y * stride - pad + i * dilation < H, likewise for x.
  int by = y * pc.stride_h - pc.pad_top, bx = x * pc.stride_w - pc.pad_left;
  int i0 = max(0, ceil_div(-by, pc.dilation_h));
  int i1 = min(pc.kh, floor_div(pc.h - 1 - by, pc.dilation_h) + 1);
  int j0 = max(0, ceil_div(-bx, pc.dilation_w));
  int j1 = min(pc.kw, floor_div(pc.w - 1 - bx, pc.dilation_w) + 1);
  // Channel steps: X's next channel is the next byte (NHWC) or the next plane (NCHW); W's is
  // the next KH x KW slice.
  uint x_step = nhwc ? 1u : uint(pc.h * pc.w);
  uint w_step = uint(pc.kh * pc.kw);
  int acc = 0;
  for (int i = i0; i < i1; ++i) {
    int ih = by + i * pc.dilation_h;
    for (int j = j0; j < j1; ++j) {
      int iw = bx + j * pc.dilation_w;
      uint xi = pc.x_lead + uint(nhwc ? ((n * pc.h + ih) * pc.w + iw) * pc.c + c0
                                      : ((n * pc.c + c0) * pc.h + ih) * pc.w + iw);
      uint wi = pc.w_lead + uint((o * pc.cg * pc.kh + i) * pc.kw + j);
      for (int ci = 0; ci < pc.cg; ++ci) {
        acc += (x_byte(xi, x_signed) - pc.zx) * (w_byte(wi, w_signed) - zw);
        xi += x_step;
        wi += w_step;
      }
    }
  }
  if (bias_kind == 1u) {
    int b = int(bias[pc.bias_lead + uint(o)]);
    int sum = acc + b;  // wraps on overflow: detected by the signs, reported, never returned
    if (((acc ^ sum) & (b ^ sum)) < 0) atomicMin(first_overflow, e);
    acc = sum;
  }
  if (mode == 0u) return uint(acc);
  float s = uintBitsToFloat(params[pc.scale_off + uint(o) * step]);
  if (mode == 1u) {
    precise float v = (float(acc) * uintBitsToFloat(pc.sx_bits)) * s;
    // Rounded before the bias add: 'precise' is lost when glslc inlines, and a driver may fuse
    // the product into the add; the bits xor-ed with a zero it cannot see keep them apart.
    v = uintBitsToFloat(floatBitsToUint(v) ^ pc.zero);
    if (bias_kind == 2u) v = v + uintBitsToFloat(bias[pc.bias_lead + uint(o)]);
    float lo = uintBitsToFloat(pc.lo_bits), hi = uintBitsToFloat(pc.hi_bits);
    v = v < lo ? lo : v > hi ? hi : v;
    return floatBitsToUint(v);
  }
  // The clamp of the activation lies inside [qmin, qmax], so it replaces the saturation bounds.
  return uint(qf_requantize(acc, s, mode == 3u, pc.zy, int(pc.lo_bits), int(pc.hi_bits)));
}

void main() {
  uint t = qf_linear_invocation();
  uint mode = (pc.flags >> 5) & 3u;
  if (mode < 2u) {
    if (t >= pc.count) return;
    y_words[pc.y_lead / 4u + t] = compute(t);
    return;
  }
  // Byte outputs: invocation t owns word t of the output's span; bytes outside it are kept.
  uint word = pc.y_lead / 4u + t;
  uint first = word * 4u;
  if (first >= pc.y_lead + pc.count) return;
  bool partial = first < pc.y_lead || first + 4u > pc.y_lead + pc.count;
  uint out_word = partial ? y_words[word] : 0u;
  for (uint j = 0u; j < 4u; ++j) {
    uint b = first + j;
    if (b < pc.y_lead || b >= pc.y_lead + pc.count) continue;
    out_word = bitfieldInsert(out_word, compute(b - pc.y_lead) & 0xffu, int(8u * j), 8);
  }
  y_words[word] = out_word;
}
