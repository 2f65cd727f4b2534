// The reference's descriptor checks, from the descriptor alone: the same validators the ops
// run (detail::validate_*), so that supports() of every backend and the reference agree.
#include <algorithm>
#include <cmath>
#include <string>
#include <variant>

#include "qforge/error.h"
#include "qforge/reference.h"
#include "reference/detail.h"

namespace qforge::reference {
namespace {

// Runs a check so that every message starts "reference::<op>: ", also those of the params and
// shape helpers it calls (QuantizationParams::validate_for names only itself).
template <class Fn>
void as_op(const std::string& op, Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind("reference::", 0) == 0) throw;
    detail::fail(e.code(), op, what);
  }
}

float max_scale(const QuantizationParams& p) {
  return p.scales().empty() ? 0.0f : *std::max_element(p.scales().begin(), p.scales().end());
}

struct Check {
  OpKind op;
  std::string name() const { return std::string(to_string(op)); }

  void operator()(const QuantizeDesc& d) const {
    if (op != OpKind::quantize && op != OpKind::dequantize) mismatch("QuantizeDesc");
    // dequantize writes float32 whatever float_type says (op_desc.h).
    detail::validate_quantize(
        name(), d,
        op == OpKind::dequantize ? sizeof(float) : static_cast<std::size_t>(size_of(d.float_type)));
  }
  void operator()(const RequantizeDesc& d) const {
    if (op != OpKind::requantize) mismatch("RequantizeDesc");
    detail::validate_requantize(name(), d);
  }
  void operator()(const MatmulDesc& d) const {
    if (op == OpKind::matmul_integer || op == OpKind::matmul_dequant) {
      detail::validate_matmul(name(), d, /*allow_block_b=*/true);
    } else if (op == OpKind::matmul_weight_only) {
      detail::validate_matmul_weight_only(name(), d);
    } else if (op == OpKind::qlinear_matmul) {
      detail::validate_matmul(name(), d, /*allow_block_b=*/false);
      check_qlinear_output(d, max_scale(d.b));
    } else {
      mismatch("MatmulDesc");
    }
  }
  void operator()(const DynamicQuantizeDesc& d) const {
    if (op != OpKind::dynamic_quantize_linear) mismatch("DynamicQuantizeDesc");
    detail::validate_dynamic_quantize(name(), d);
  }
  void operator()(const LinearDesc& d) const {
    if (op != OpKind::linear_forward && op != OpKind::linear_backward) mismatch("LinearDesc");
    detail::validate_linear(name(), d);
  }
  void operator()(const ConvDesc& d) const {
    if (op != OpKind::conv_integer && op != OpKind::qlinear_conv && op != OpKind::conv_dequant)
      mismatch("ConvDesc");
    detail::validate_conv(name(), op, d);
  }
  [[noreturn]] void mismatch(const char* given) const {
    detail::fail(ErrorCode::invalid_argument, name(),
                 std::string("descriptor is a ") + given +
                     "; expected the descriptor type of this op (op_desc.h)");
  }
};

}  // namespace

void check_descriptor(const OpDesc& op) {
  as_op(std::string(to_string(op.op)), [&] { std::visit(Check{op.op}, op.desc); });
}

void check_descriptor(OpKind op, const QuantizeDesc& d) {
  as_op(std::string(to_string(op)), [&] { Check{op}(d); });
}
void check_descriptor(OpKind op, const RequantizeDesc& d) {
  as_op(std::string(to_string(op)), [&] { Check{op}(d); });
}
void check_descriptor(OpKind op, const MatmulDesc& d) {
  as_op(std::string(to_string(op)), [&] { Check{op}(d); });
}
void check_descriptor(OpKind op, const DynamicQuantizeDesc& d) {
  as_op(std::string(to_string(op)), [&] { Check{op}(d); });
}
void check_descriptor(OpKind op, const LinearDesc& d) {
  as_op(std::string(to_string(op)), [&] { Check{op}(d); });
}

void check_descriptor(OpKind op, const ConvDesc& d) {
  as_op(std::string(to_string(op)), [&] { Check{op}(d); });
}

void check_matmul_a(OpKind op, const MatmulDesc& desc) {
  const std::string name(to_string(op));
  as_op(name, [&] { detail::validate_matmul_a(name, desc); });
}

void check_qlinear_output(const MatmulDesc& d, float max_b_scale) {
  const std::string op = "qlinear_matmul";
  as_op(op, [&] { detail::validate_qlinear_output(op, d); });
  const QuantizationParams& y = *d.y;
  if (d.m > 0 && d.n > 0) {
    const float sa = max_scale(d.a);
    if (!std::isfinite((sa * max_b_scale) / y.scale()))
      detail::fail(ErrorCode::invalid_argument, op,
                   "multiplier (sa * sb) / sy overflows float32 for sa = " +
                       detail::float_text(sa) + ", sb = " + detail::float_text(max_b_scale) +
                       ", sy = " + detail::float_text(y.scale()) +
                       "; expected scales whose ratio fits float32");
  }
}

}  // namespace qforge::reference
