// run_integer: qforge's own execution of an integer program, the oracle of the exported C.
// Convolutions and dense layers run through core's reference qlinear_conv in fixed-point mode;
// pooling has no core op, so it is written here as plainly as the C kernel.
#include <algorithm>

#include "qforge/error.h"
#include "qforge/model/integer_program.h"

namespace qforge::model {
namespace {

std::vector<std::int8_t> pool(const IntegerOp& op, std::int32_t zero_point,
                              const std::vector<std::int8_t>& x) {
  const ConvDesc& d = op.conv;
  const std::int64_t oh_n = d.out_h(), ow_n = d.out_w();
  std::vector<std::int8_t> y(static_cast<std::size_t>(d.c * oh_n * ow_n));
  for (std::int64_t c = 0; c < d.c; ++c)
    for (std::int64_t oh = 0; oh < oh_n; ++oh)
      for (std::int64_t ow = 0; ow < ow_n; ++ow) {
        std::int32_t best = -128, sum = 0, count = 0;
        for (std::int64_t kh = 0; kh < d.kernel_h; ++kh) {
          const std::int64_t ih = oh * d.stride_h - d.pad_top + kh * d.dilation_h;
          if (ih < 0 || ih >= d.h) continue;
          for (std::int64_t kw = 0; kw < d.kernel_w; ++kw) {
            const std::int64_t iw = ow * d.stride_w - d.pad_left + kw * d.dilation_w;
            if (iw < 0 || iw >= d.w) continue;
            const std::int32_t v = x[static_cast<std::size_t>((c * d.h + ih) * d.w + iw)];
            best = std::max(best, v);
            sum += v - zero_point;
            ++count;
          }
        }
        std::int32_t q = best;
        if (op.kind == IntegerOpKind::avg_pool) {
          if (op.count_include_pad) count = static_cast<std::int32_t>(d.kernel_h * d.kernel_w);
          // Round half away from zero, as TFLite's integer average pool.
          const std::int32_t avg = count == 0 ? 0
                                   : sum >= 0 ? (sum + count / 2) / count
                                              : (sum - count / 2) / count;
          q = std::clamp(avg + zero_point, -128, 127);
        }
        y[static_cast<std::size_t>((c * oh_n + oh) * ow_n + ow)] = static_cast<std::int8_t>(q);
      }
  return y;
}

// TFLite's int8 ADD (reference_ops::AddElementwise with left_shift 20).
std::vector<std::int8_t> add(const IntegerProgram& p, const IntegerOp& op,
                             const std::vector<std::int8_t>& a, const std::vector<std::int8_t>& b) {
  const IntegerTensor& ta = p.tensors[static_cast<std::size_t>(op.input)];
  const IntegerTensor& tb = p.tensors[static_cast<std::size_t>(op.input2)];
  const IntegerTensor& ty = p.tensors[static_cast<std::size_t>(op.output)];
  std::vector<std::int8_t> y(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::int32_t sa = reference::multiply_by_quantized_multiplier(
        (a[i] - ta.zero_point) * (1 << 20), op.multipliers[0]);
    const std::int32_t sb = reference::multiply_by_quantized_multiplier(
        (b[i] - tb.zero_point) * (1 << 20), op.multipliers[1]);
    const std::int64_t q =
        std::int64_t{reference::multiply_by_quantized_multiplier(sa + sb, op.multipliers[2])} +
        ty.zero_point;
    y[i] = static_cast<std::int8_t>(std::clamp<std::int64_t>(q, op.act_min, op.act_max));
  }
  return y;
}

}  // namespace

std::string_view to_string(IntegerOpKind kind) noexcept {
  switch (kind) {
    case IntegerOpKind::quantize: return "quantize";
    case IntegerOpKind::conv2d: return "conv2d";
    case IntegerOpKind::dense: return "dense";
    case IntegerOpKind::max_pool: return "max_pool";
    case IntegerOpKind::avg_pool: return "avg_pool";
    case IntegerOpKind::reshape: return "reshape";
    case IntegerOpKind::add: return "add";
  }
  return "?";
}

std::int64_t IntegerTensor::elements() const { return element_count(shape); }

std::int64_t IntegerProgram::weight_bytes() const {
  std::int64_t bytes = 0;
  for (const IntegerOp& op : ops)
    bytes +=
        static_cast<std::int64_t>(op.weights.size() + 4 * op.bias.size() +
                                  (op.kind == IntegerOpKind::add ? 0 : 8 * op.multipliers.size()));
  return bytes;
}

std::int64_t IntegerProgram::multiply_accumulates() const {
  std::int64_t macs = 0;
  for (const IntegerOp& op : ops)
    if (op.kind == IntegerOpKind::conv2d || op.kind == IntegerOpKind::dense)
      macs += op.conv.out_channels * op.conv.out_h() * op.conv.out_w() * op.conv.reduction();
  return macs;
}

std::vector<std::int8_t> quantize_input(const IntegerProgram& program,
                                        std::span<const float> input) {
  const IntegerOp& op = program.ops.front();
  const IntegerTensor& t = program.tensors.at(static_cast<std::size_t>(op.output));
  if (static_cast<std::int64_t>(input.size()) != element_count(program.input_shape))
    throw Error(ErrorCode::shape_mismatch, "run_integer: " + std::to_string(input.size()) +
                                               " input values; expected " +
                                               std::to_string(element_count(program.input_shape)));
  std::vector<std::int8_t> q(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) {
    float v = input[i];
    for (const FloatPrefixOp& f : op.prefix) {
      switch (f.op) {  // one float32 operation each, as the C does
        case '+': v = v + f.constant; break;
        case '-': v = v - f.constant; break;
        case '*': v = v * f.constant; break;
        default: v = v / f.constant; break;
      }
    }
    q[i] = static_cast<std::int8_t>(reference::quantize_value(v, t.scale, t.zero_point, -128, 127));
  }
  return q;
}

std::vector<std::int8_t> run_integer(const IntegerProgram& program, std::span<const float> input) {
  std::vector<std::vector<std::int8_t>> values(program.tensors.size());
  for (const IntegerOp& op : program.ops) {
    auto& y = values[static_cast<std::size_t>(op.output)];
    const IntegerTensor& out = program.tensors[static_cast<std::size_t>(op.output)];
    switch (op.kind) {
      case IntegerOpKind::quantize: y = quantize_input(program, input); break;
      case IntegerOpKind::conv2d:
      case IntegerOpKind::dense:
        y.resize(static_cast<std::size_t>(out.elements()));
        reference::qlinear_conv(op.conv, values[static_cast<std::size_t>(op.input)].data(),
                                op.weights.data(), op.bias.empty() ? nullptr : op.bias.data(),
                                y.data());
        break;
      case IntegerOpKind::max_pool:
      case IntegerOpKind::avg_pool:
        y = pool(op, out.zero_point, values[static_cast<std::size_t>(op.input)]);
        break;
      case IntegerOpKind::reshape: y = values[static_cast<std::size_t>(op.input)]; break;
      case IntegerOpKind::add:
        y = add(program, op, values[static_cast<std::size_t>(op.input)],
                values[static_cast<std::size_t>(op.input2)]);
        break;
    }
  }
  return values[static_cast<std::size_t>(program.ops.back().output)];
}

}  // namespace qforge::model
