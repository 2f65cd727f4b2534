#include "qforge/op_desc.h"

#include "qforge/op_table.h"

namespace qforge {
namespace {

std::string params_text(const QuantizationParams& p) {
  return std::string(name(p.dtype())) + "/" + to_string(p.scheme());
}

struct Describe {
  OpKind op;
  std::string operator()(const QuantizeDesc& d) const {
    return std::string(to_string(op)) + " shape=" + to_string(d.shape) + " " +
           params_text(d.params) + " float=" + name(d.float_type);
  }
  std::string operator()(const RequantizeDesc& d) const {
    return std::string(to_string(op)) + " shape=" + to_string(d.shape) +
           " out=" + std::string(name(d.out_dtype)) +
           " multipliers=" + std::to_string(d.multipliers.size()) +
           " mode=" + std::string(to_string(d.mode));
  }
  std::string operator()(const MatmulDesc& d) const {
    const bool weight_only = op == OpKind::matmul_weight_only;
    std::string s = std::string(to_string(op)) + " m=" + std::to_string(d.m) +
                    " n=" + std::to_string(d.n) + " k=" + std::to_string(d.k) +
                    " a=" + (weight_only ? std::string("float32") : params_text(d.a)) +
                    " b=" + params_text(d.b) + " b_layout=" + std::string(to_string(d.b_layout));
    if (op == OpKind::matmul_dequant || weight_only)
      s += std::string(" out=") + name(d.out_type) + (d.has_bias ? " bias" : "");
    if (op == OpKind::qlinear_matmul && d.y)
      s += " y=" + params_text(*d.y) + " mode=" + std::string(to_string(d.requant_mode));
    if (op == OpKind::qlinear_matmul && d.has_bias) s += " bias=int32";
    if (d.activation != ConvActivation::none) s += " act=" + std::string(to_string(d.activation));
    if (d.a_params_at_run) s += " a_params=at_run";
    return s;
  }
  std::string operator()(const DynamicQuantizeDesc& d) const {
    return std::string(to_string(op)) + " shape=" + to_string(d.shape);
  }
  std::string operator()(const LinearDesc& d) const {
    return std::string(to_string(op)) + " m=" + std::to_string(d.m) + " n=" + std::to_string(d.n) +
           " k=" + std::to_string(d.k) + " w=" + params_text(d.w) + (d.has_bias ? " bias" : "");
  }
  std::string operator()(const ConvDesc& d) const {
    auto pair = [](std::int64_t a, std::int64_t b) {
      return std::to_string(a) + "x" + std::to_string(b);
    };
    std::string s =
        std::string(to_string(op)) + " " + std::string(to_string(d.layout)) +
        " n=" + std::to_string(d.n) + " c=" + std::to_string(d.c) + " hw=" + pair(d.h, d.w) +
        " o=" + std::to_string(d.out_channels) + " kernel=" + pair(d.kernel_h, d.kernel_w) +
        " stride=" + pair(d.stride_h, d.stride_w) +
        " dilation=" + pair(d.dilation_h, d.dilation_w) + " pads=" + std::to_string(d.pad_top) +
        "," + std::to_string(d.pad_left) + "," + std::to_string(d.pad_bottom) + "," +
        std::to_string(d.pad_right) + " groups=" + std::to_string(d.groups) +
        " x=" + params_text(d.x_params) + " w=" + params_text(d.w_params);
    if (d.bias != ConvBias::none) s += " bias=" + std::string(to_string(d.bias));
    if (op == OpKind::qlinear_conv && d.y_params)
      s += " y=" + params_text(*d.y_params) + " mode=" + std::string(to_string(d.requant_mode));
    if (d.activation != ConvActivation::none) s += " act=" + std::string(to_string(d.activation));
    return s;
  }
};

}  // namespace

std::string_view to_string(OpKind op) noexcept {
  const auto i = static_cast<std::size_t>(op);
  return i < op_table().size() ? op_table()[i].name : "unknown";
}

std::optional<OpKind> parse_op_kind(std::string_view text) noexcept {
  for (const OpInfo& info : op_table())
    if (info.name == text) return info.kind;
  return std::nullopt;
}

std::string_view to_string(MatrixLayout l) noexcept { return l == MatrixLayout::kn ? "kn" : "nk"; }

std::string_view to_string(RequantMode m) noexcept {
  return m == RequantMode::float_multiplier ? "float_multiplier" : "fixed_point";
}

std::string describe(const OpDesc& op) { return std::visit(Describe{op.op}, op.desc); }

}  // namespace qforge
