#include "capability_grid.h"

#include <cstdint>

#include "qforge/params.h"

namespace qforge::hwinfo {
namespace {

// Elementwise ops run on a [rows, cols] tensor; cols is a multiple of the default block.
constexpr std::int64_t kRows = 64;
constexpr std::int64_t kCols = 256;
// Matmul shape: a mid-size GEMM whose K is a multiple of every block size in the grid.
constexpr std::int64_t kM = 64, kN = 128, kK = 256;
constexpr float kScale = 0.05f;

std::string dtype_short(DType t) {
  switch (t) {
    case DType::int8: return "s8";
    case DType::uint8: return "u8";
    case DType::int4: return "s4";
    case DType::uint4: return "u4";
    case DType::int16: return "s16";
    case DType::uint16: return "u16";
    case DType::binary: return "b1";
  }
  return "?";
}

// Params of one granularity for a [rows, cols] tensor whose channels run along `channel_axis`.
// Signed types use the symmetric mapping (weights), unsigned ones affine with a mid zero point
// (activations), as the usual u8 x s8 pairing does.
QuantizationParams make_params(DType t, Granularity g, std::int64_t rows, std::int64_t cols,
                               int channel_axis) {
  const bool sym = traits(t).is_signed;
  const Mapping mapping = sym ? Mapping::symmetric : Mapping::affine;
  const std::int32_t zp = sym ? 0 : (traits(t).qmin + traits(t).qmax + 1) / 2;
  switch (g) {
    case Granularity::per_tensor:
      return sym ? QuantizationParams::per_tensor_symmetric(t, kScale)
                 : QuantizationParams::per_tensor_affine(t, kScale, zp);
    case Granularity::per_channel: {
      const auto n = static_cast<std::size_t>(channel_axis == 0 ? rows : cols);
      return QuantizationParams::per_channel(
          t, mapping, channel_axis, std::vector<float>(n, kScale),
          sym ? std::vector<std::int32_t>{} : std::vector<std::int32_t>(n, zp));
    }
    case Granularity::block: {
      const auto n =
          static_cast<std::size_t>(rows * ((cols + kDefaultBlockSize - 1) / kDefaultBlockSize));
      return QuantizationParams::blockwise(
          t, mapping, kDefaultBlockSize, std::vector<float>(n, kScale),
          sym ? std::vector<std::int32_t>{} : std::vector<std::int32_t>(n, zp));
    }
  }
  return QuantizationParams::per_tensor_symmetric(t, kScale);
}

std::vector<GridCase> quantize_grid(OpKind op) {
  std::vector<GridCase> out;
  for (DType t : {DType::int8, DType::uint8, DType::int4, DType::int16}) {
    for (Granularity g : {Granularity::per_tensor, Granularity::per_channel, Granularity::block}) {
      QuantizationParams p = make_params(t, g, kRows, kCols, 0);
      std::string label = std::string(name(t)) + " " + to_string(p.scheme());
      out.push_back({std::move(label), {op, QuantizeDesc{{kRows, kCols}, std::move(p)}}});
    }
  }
  return out;
}

std::vector<GridCase> requantize_grid() {
  std::vector<GridCase> out;
  for (DType t : {DType::int8, DType::uint8}) {
    for (RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
      for (bool per_channel : {false, true}) {
        RequantizeDesc d;
        d.shape = {kRows, kCols};
        d.multipliers.assign(per_channel ? kCols : 1, 0.0025f);
        d.axis = per_channel ? 1 : -1;
        d.out_dtype = t;
        d.out_zero_point = traits(t).is_signed ? 0 : 128;
        d.mode = mode;
        std::string label = "s32->" + dtype_short(t) + " " + std::string(to_string(mode)) +
                            (per_channel ? " per_channel(axis=1)" : " per_tensor");
        out.push_back({std::move(label), {OpKind::requantize, std::move(d)}});
      }
    }
  }
  return out;
}

// The (A, B) operand pairs every matmul row of the grid is built from.
struct MatmulPair {
  DType a, b;
  Granularity b_granularity;
  MatrixLayout layout;
};

std::vector<MatmulPair> matmul_pairs(bool with_int4_blocks) {
  std::vector<MatmulPair> pairs;
  for (MatrixLayout layout : {MatrixLayout::kn, MatrixLayout::nk})
    for (DType a : {DType::uint8, DType::int8})
      for (Granularity g : {Granularity::per_tensor, Granularity::per_channel})
        pairs.push_back({a, DType::int8, g, layout});
  // Block-wise B runs along K, so only the nk layout carries it (op_desc.h).
  pairs.push_back({DType::int8, DType::int8, Granularity::block, MatrixLayout::nk});
  if (with_int4_blocks)
    pairs.push_back({DType::int8, DType::int4, Granularity::block, MatrixLayout::nk});
  return pairs;
}

MatmulDesc make_matmul(const MatmulPair& p) {
  // B's channels are columns of the [K, N] view: axis 1 for kn, axis 0 for nk.
  const bool kn = p.layout == MatrixLayout::kn;
  const std::int64_t rows = kn ? kK : kN, cols = kn ? kN : kK;
  return MatmulDesc{kM,
                    kN,
                    kK,
                    make_params(p.a, Granularity::per_tensor, kM, kK, 0),
                    make_params(p.b, p.b_granularity, rows, cols, kn ? 1 : 0),
                    p.layout,
                    /*has_bias=*/false,
                    FloatType::f32,
                    /*y=*/std::nullopt,
                    RequantMode::float_multiplier};
}

std::string matmul_label(const MatmulDesc& d) {
  return dtype_short(d.a.dtype()) + "x" + dtype_short(d.b.dtype()) + " " +
         std::string(to_string(d.b_layout)) + " b=" + to_string(d.b.scheme());
}

std::vector<GridCase> matmul_grid(OpKind op) {
  std::vector<GridCase> out;
  for (const MatmulPair& p : matmul_pairs(op != OpKind::qlinear_matmul)) {
    MatmulDesc d = make_matmul(p);
    std::string label = matmul_label(d);
    if (op == OpKind::matmul_dequant) d.has_bias = true;
    if (op == OpKind::qlinear_matmul) {
      // The output takes A's type, as ONNX QLinearMatMul's usual u8/s8 graphs do.
      d.y = make_params(p.a, Granularity::per_tensor, kM, kN, 0);
      for (RequantMode mode : {RequantMode::float_multiplier, RequantMode::fixed_point}) {
        MatmulDesc dm = d;
        dm.requant_mode = mode;
        out.push_back({label + " " + std::string(to_string(mode)), {op, std::move(dm)}});
      }
      continue;
    }
    out.push_back({std::move(label), {op, std::move(d)}});
  }
  return out;
}

// Float A against int4 / uint4 / int8 B in blocks of 32 along K (MatMulNBits) and per column.
std::vector<GridCase> weight_only_grid() {
  std::vector<GridCase> out;
  for (DType b : {DType::int4, DType::uint4, DType::int8})
    for (Granularity g : {Granularity::block, Granularity::per_channel}) {
      MatmulDesc d = make_matmul({DType::int8, b, g, MatrixLayout::nk});
      d.has_bias = true;
      std::string label = "f32x" + dtype_short(b) + " nk b=" + to_string(d.b.scheme());
      out.push_back({std::move(label), {OpKind::matmul_weight_only, std::move(d)}});
    }
  return out;
}

std::vector<GridCase> dynamic_quantize_grid() {
  std::vector<GridCase> out;
  for (Shape s : {Shape{1, kCols}, Shape{kRows, kCols}}) {
    std::string label = "f32->u8 " + to_string(s);
    out.push_back({std::move(label), {OpKind::dynamic_quantize_linear, DynamicQuantizeDesc{s}}});
  }
  return out;
}

std::vector<GridCase> linear_grid(OpKind op) {
  std::vector<GridCase> out;
  for (Granularity g : {Granularity::per_tensor, Granularity::per_channel}) {
    for (bool bias : {false, true}) {
      LinearDesc d{kM, kN, kK, make_params(DType::int8, g, kN, kK, 0), bias};
      std::string label = "w=s8 " + to_string(d.w.scheme()) + (bias ? " bias" : " no-bias");
      out.push_back({std::move(label), {op, std::move(d)}});
    }
  }
  return out;
}

// A 3x3 convolution over [1, 32, 28, 28], SAME padding: dense and depthwise, both layouts,
// u8 x s8 and s8 x s8, weights per tensor and per output channel.
std::vector<GridCase> conv_grid(OpKind op) {
  std::vector<GridCase> out;
  for (const ConvLayout layout : {ConvLayout::nchw, ConvLayout::nhwc})
    for (const bool depthwise : {false, true})
      for (const DType x : {DType::uint8, DType::int8})
        for (const Granularity g : {Granularity::per_tensor, Granularity::per_channel}) {
          ConvDesc d;
          d.layout = layout;
          d.n = 1;
          d.c = d.out_channels = 32;
          d.h = d.w = 28;
          d.kernel_h = d.kernel_w = 3;
          d.groups = depthwise ? d.c : 1;
          apply_auto_pad(d, AutoPad::same_upper);
          d.x_params = make_params(x, Granularity::per_tensor, 1, 1, 0);
          d.w_params = make_params(DType::int8, g, d.out_channels, 1, 0);
          if (op != OpKind::conv_integer) d.bias = ConvBias::int32;
          if (op == OpKind::qlinear_conv) d.y_params = d.x_params;
          std::string label = dtype_short(x) + "xs8 " + std::string(to_string(layout)) +
                              (depthwise ? " dw3x3" : " 3x3") +
                              " w=" + to_string(d.w_params.scheme());
          out.push_back({std::move(label), {op, std::move(d)}});
        }
  return out;
}

}  // namespace

std::vector<GridCase> capability_grid(OpKind op) {
  switch (op) {
    case OpKind::quantize:
    case OpKind::dequantize: return quantize_grid(op);
    case OpKind::requantize: return requantize_grid();
    case OpKind::matmul_integer:
    case OpKind::matmul_dequant:
    case OpKind::qlinear_matmul: return matmul_grid(op);
    case OpKind::dynamic_quantize_linear: return dynamic_quantize_grid();
    case OpKind::linear_forward:
    case OpKind::linear_backward: return linear_grid(op);
    case OpKind::conv_integer:
    case OpKind::qlinear_conv:
    case OpKind::conv_dequant: return conv_grid(op);
    case OpKind::matmul_weight_only: return weight_only_grid();
  }
  return {};
}

std::vector<OpKind> ops_to_report(std::optional<OpKind> only) {
  if (only) return {*only};
  std::vector<OpKind> ops;
  for (int i = 0; i < kOpKindCount; ++i) ops.push_back(static_cast<OpKind>(i));
  return ops;
}

}  // namespace qforge::hwinfo
