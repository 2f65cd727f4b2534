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
  if (op == OpKind::matmul_dequant) d.has_bias = true;
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
      {"linear_fwd_32x256x256", linear(OpKind::linear_forward, 32, 256, 256)},
      {"linear_bwd_32x256x256", linear(OpKind::linear_backward, 32, 256, 256)},
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
      {"qlinear_u8s8_u8_256x1024x1024",
       op_of(OpKind::qlinear_matmul, matmul(256, 1024, 1024, DType::uint8, DType::int8,
                                            Granularity::per_channel, MatrixLayout::kn))},
      {"linear_fwd_256x1024x1024", linear(OpKind::linear_forward, 256, 1024, 1024)},
      {"linear_bwd_256x1024x1024", linear(OpKind::linear_backward, 256, 1024, 1024)},
  };
  return s;
}

}  // namespace qforge
