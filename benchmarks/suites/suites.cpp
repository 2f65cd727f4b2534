// The benchmark suites (suites.h). Shapes are chosen so the quick suite tunes in about a minute
// with only cpu_scalar (the plain-loop reference) on a 2-core machine; the full suite is what a
// faster machine deserves.
#include "qforge/bench/suites.h"

namespace qforge {
namespace {

Workload elementwise(OpKind op, DType t, Scheme s, Shape shape) {
  return {{op, QuantizeDesc{shape, workload_params(t, s, shape), FloatType::f32}}};
}

MatmulDesc matmul(std::int64_t m, std::int64_t n, std::int64_t k, DType a, DType b, Granularity bg,
                  MatrixLayout layout) {
  const Scheme as =
      traits(a).is_signed ? Scheme::per_tensor_symmetric() : Scheme::per_tensor_affine();
  Scheme bs = Scheme::per_tensor_symmetric();
  if (bg == Granularity::per_channel)
    bs = Scheme::per_channel_symmetric(layout == MatrixLayout::kn ? 1 : 0);
  if (bg == Granularity::block) bs = Scheme::block_symmetric();
  const Shape b_shape = layout == MatrixLayout::kn ? Shape{k, n} : Shape{n, k};
  return MatmulDesc{m,
                    n,
                    k,
                    workload_params(a, as, {m, k}),
                    workload_params(b, bs, b_shape),
                    layout,
                    /*has_bias=*/false,
                    FloatType::f32,
                    std::nullopt,
                    RequantMode::float_multiplier};
}

Workload op_of(OpKind op, MatmulDesc d) {
  if (op == OpKind::matmul_dequant || op == OpKind::matmul_weight_only) d.has_bias = true;
  if (op == OpKind::qlinear_matmul) {
    d.y = workload_params(d.a.dtype(), d.a.scheme(), {d.m, d.n});
    d.requant_mode = RequantMode::fixed_point;
  }
  return {{op, d}};
}

Workload requantize(Shape shape, DType out, RequantMode mode) {
  RequantizeDesc d;
  d.multipliers.assign(static_cast<std::size_t>(shape.back()), 1.0f / 1024);
  d.axis = -1;
  d.shape = std::move(shape);
  d.out_dtype = out;
  d.out_zero_point = traits(out).is_signed ? 0 : 128;
  d.mode = mode;
  return {{OpKind::requantize, d}};
}

Workload linear(OpKind op, std::int64_t m, std::int64_t n, std::int64_t k) {
  LinearDesc d{m, n, k, workload_params(DType::int8, Scheme::per_channel_symmetric(0), {n, k}),
               true};
  return {{op, d}};
}

// A 2-D convolution with u8 activations and per-output-channel s8 weights, padded to keep H
// and W for odd kernels at stride 1 (ResNet's and MobileNet's layers).
Workload conv(OpKind op, ConvLayout layout, std::int64_t n, std::int64_t c, std::int64_t hw,
              std::int64_t o, std::int64_t k, std::int64_t stride, std::int64_t groups) {
  ConvDesc d;
  d.layout = layout;
  d.n = n;
  d.c = c;
  d.h = d.w = hw;
  d.out_channels = o;
  d.kernel_h = d.kernel_w = k;
  d.stride_h = d.stride_w = stride;
  d.groups = groups;
  apply_auto_pad(d, AutoPad::same_upper);
  d.x_params = workload_params(DType::uint8, Scheme::per_tensor_affine(), d.x_shape());
  d.w_params = workload_params(DType::int8, Scheme::per_channel_symmetric(0), d.w_shape());
  if (op != OpKind::conv_integer) d.bias = ConvBias::int32;
  if (op == OpKind::qlinear_conv) {
    d.y_params = workload_params(DType::uint8, Scheme::per_tensor_affine(), d.y_shape());
    d.requant_mode = RequantMode::fixed_point;
    d.activation = ConvActivation::relu;
  }
  return {{op, d}};
}

}  // namespace

std::vector<NamedWorkload> quick_suite() {
  const Shape act{256, 1024};
  return {
      {"quantize_f32_s8_tensor_256x1024",
       elementwise(OpKind::quantize, DType::int8, Scheme::per_tensor_symmetric(), act)},
      {"quantize_f32_u8_rows_256x1024",
       elementwise(OpKind::quantize, DType::uint8, Scheme::per_channel_affine(0), act)},
      {"quantize_f32_s4_block32_256x1024",
       elementwise(OpKind::quantize, DType::int4, Scheme::block_symmetric(), act)},
      {"dequantize_s8_cols_256x1024",
       elementwise(OpKind::dequantize, DType::int8, Scheme::per_channel_symmetric(1), act)},
      {"requantize_s32_s8_fixed_256x1024", requantize(act, DType::int8, RequantMode::fixed_point)},
      {"dql_f32_u8_256x1024", {{OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{act}}}},
      {"gemm_u8s8_s32_64x256x256",
       op_of(OpKind::matmul_integer, matmul(64, 256, 256, DType::uint8, DType::int8,
                                            Granularity::per_channel, MatrixLayout::kn))},
      {"gemv_s8s8_s32_1x1024x1024",
       op_of(OpKind::matmul_integer, matmul(1, 1024, 1024, DType::int8, DType::int8,
                                            Granularity::per_channel, MatrixLayout::nk))},
      {"gemm_s8s4_f32_block32_32x512x512",
       op_of(OpKind::matmul_dequant,
             matmul(32, 512, 512, DType::int8, DType::int4, Granularity::block, MatrixLayout::nk))},
      {"qlinear_u8s8_u8_64x256x256",
       op_of(OpKind::qlinear_matmul, matmul(64, 256, 256, DType::uint8, DType::int8,
                                            Granularity::per_channel, MatrixLayout::kn))},
      {"wo_f32s4_f32_block32_32x512x512",
       op_of(OpKind::matmul_weight_only,
             matmul(32, 512, 512, DType::int8, DType::int4, Granularity::block, MatrixLayout::nk))},
      {"linear_fwd_32x256x256", linear(OpKind::linear_forward, 32, 256, 256)},
      {"linear_bwd_32x256x256", linear(OpKind::linear_backward, 32, 256, 256)},
      {"conv_u8s8_s32_3x3_nhwc_1x32x28x28_o32",
       conv(OpKind::conv_integer, ConvLayout::nhwc, 1, 32, 28, 32, 3, 1, 1)},
      {"qconv_u8s8_u8_1x1_nchw_1x64x28x28_o64",
       conv(OpKind::qlinear_conv, ConvLayout::nchw, 1, 64, 28, 64, 1, 1, 1)},
      {"conv_u8s8_f32_dw3x3_nhwc_1x64x28x28",
       conv(OpKind::conv_dequant, ConvLayout::nhwc, 1, 64, 28, 64, 3, 1, 64)},
  };
}

std::vector<NamedWorkload> full_suite() {
  const Shape act{1024, 4096};
  std::vector<NamedWorkload> s = {
      {"quantize_f32_s8_tensor_1024x4096",
       elementwise(OpKind::quantize, DType::int8, Scheme::per_tensor_symmetric(), act)},
      {"quantize_f32_u8_tensor_1024x4096",
       elementwise(OpKind::quantize, DType::uint8, Scheme::per_tensor_affine(), act)},
      {"quantize_f32_s8_rows_1024x4096",
       elementwise(OpKind::quantize, DType::int8, Scheme::per_channel_symmetric(0), act)},
      {"quantize_f32_s4_block32_1024x4096",
       elementwise(OpKind::quantize, DType::int4, Scheme::block_symmetric(), act)},
      {"quantize_f32_s8_log_1024x4096",
       elementwise(OpKind::quantize, DType::int8, Scheme::logarithmic(), act)},
      {"dequantize_s8_cols_1024x4096",
       elementwise(OpKind::dequantize, DType::int8, Scheme::per_channel_symmetric(1), act)},
      {"dequantize_s4_block32_1024x4096",
       elementwise(OpKind::dequantize, DType::int4, Scheme::block_symmetric(), act)},
      {"requantize_s32_s8_fixed_1024x4096", requantize(act, DType::int8, RequantMode::fixed_point)},
      {"requantize_s32_u8_float_1024x4096",
       requantize(act, DType::uint8, RequantMode::float_multiplier)},
      {"dql_f32_u8_1024x4096", {{OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{act}}}},
      {"gemv_s8s8_s32_1x4096x4096",
       op_of(OpKind::matmul_integer, matmul(1, 4096, 4096, DType::int8, DType::int8,
                                            Granularity::per_channel, MatrixLayout::nk))},
      {"gemm_u8s8_s32_256x1024x1024",
       op_of(OpKind::matmul_integer, matmul(256, 1024, 1024, DType::uint8, DType::int8,
                                            Granularity::per_channel, MatrixLayout::kn))},
      {"gemm_s8s8_s32_1024x1024x1024",
       op_of(OpKind::matmul_integer, matmul(1024, 1024, 1024, DType::int8, DType::int8,
                                            Granularity::per_tensor, MatrixLayout::nk))},
      {"gemm_s8s8_f32_256x1024x1024",
       op_of(OpKind::matmul_dequant, matmul(256, 1024, 1024, DType::int8, DType::int8,
                                            Granularity::per_channel, MatrixLayout::nk))},
      {"gemm_s8s4_f32_block32_256x1024x1024",
       op_of(OpKind::matmul_dequant, matmul(256, 1024, 1024, DType::int8, DType::int4,
                                            Granularity::block, MatrixLayout::nk))},
      {"wo_f32s4_f32_block32_4096x1536x384",
       op_of(OpKind::matmul_weight_only, matmul(4096, 1536, 384, DType::int8, DType::int4,
                                                Granularity::block, MatrixLayout::nk))},
      {"qlinear_u8s8_u8_256x1024x1024",
       op_of(OpKind::qlinear_matmul, matmul(256, 1024, 1024, DType::uint8, DType::int8,
                                            Granularity::per_channel, MatrixLayout::kn))},
      {"linear_fwd_256x1024x1024", linear(OpKind::linear_forward, 256, 1024, 1024)},
      {"linear_bwd_256x1024x1024", linear(OpKind::linear_backward, 256, 1024, 1024)},
      // ResNet-50's 3x3 and 1x1 layers at batch 1 and 32, a MobileNet depthwise layer.
      {"qconv_resnet50_3x3_nhwc_1x64x56x56",
       conv(OpKind::qlinear_conv, ConvLayout::nhwc, 1, 64, 56, 64, 3, 1, 1)},
      {"qconv_resnet50_3x3_nhwc_32x64x56x56",
       conv(OpKind::qlinear_conv, ConvLayout::nhwc, 32, 64, 56, 64, 3, 1, 1)},
      {"qconv_resnet50_1x1_nhwc_1x256x56x56_o64",
       conv(OpKind::qlinear_conv, ConvLayout::nhwc, 1, 256, 56, 64, 1, 1, 1)},
      {"qconv_resnet50_1x1_nhwc_32x256x56x56_o64",
       conv(OpKind::qlinear_conv, ConvLayout::nhwc, 32, 256, 56, 64, 1, 1, 1)},
      {"qconv_mobilenet_dw3x3_nhwc_1x144x56x56",
       conv(OpKind::qlinear_conv, ConvLayout::nhwc, 1, 144, 56, 144, 3, 1, 144)},
      {"conv_u8s8_s32_3x3_nchw_1x64x56x56",
       conv(OpKind::conv_integer, ConvLayout::nchw, 1, 64, 56, 64, 3, 1, 1)},
      {"conv_u8s8_f32_3x3_nhwc_1x64x56x56",
       conv(OpKind::conv_dequant, ConvLayout::nhwc, 1, 64, 56, 64, 3, 1, 1)},
  };
  return s;
}

}  // namespace qforge
