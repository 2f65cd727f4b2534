// run_integer: qforge's own execution of an integer program, the oracle of the exported C.
// Convolutions and dense layers run through core's reference qlinear_conv in fixed-point mode
// (int8) or qlinear_conv_16x8 (16x8); pooling and add have no core op, so they are written here
// as plainly as the C kernels. Tensors are held as int32 values whatever their dtype.
#include <algorithm>
#include <cstring>

#include "qforge/error.h"
#include "qforge/model/integer_program.h"
#include "qforge/reference_16x8.h"
#include "qforge_nn_int8.h"

namespace qforge::model {
namespace {

using Values = std::vector<std::int32_t>;

Values pool(const IntegerProgram& p, const IntegerOp& op, std::int32_t zero_point,
            const Values& x) {
  const ConvDesc& d = op.conv;
  const std::int64_t oh_n = d.out_h(), ow_n = d.out_w();
  Values y(static_cast<std::size_t>(d.c * oh_n * ow_n));
  for (std::int64_t c = 0; c < d.c; ++c)
    for (std::int64_t oh = 0; oh < oh_n; ++oh)
      for (std::int64_t ow = 0; ow < ow_n; ++ow) {
        std::int32_t best = p.qmin(), sum = 0, count = 0;
        for (std::int64_t kh = 0; kh < d.kernel_h; ++kh) {
          const std::int64_t ih = oh * d.stride_h - d.pad_top + kh * d.dilation_h;
          if (ih < 0 || ih >= d.h) continue;
          for (std::int64_t kw = 0; kw < d.kernel_w; ++kw) {
            const std::int64_t iw = ow * d.stride_w - d.pad_left + kw * d.dilation_w;
            if (iw < 0 || iw >= d.w) continue;
            const std::int32_t v = x[static_cast<std::size_t>((c * d.h + ih) * d.w + iw)];
            best = std::max(best, v);
            sum += v - zero_point;  // the lowering bounds the window: int32 cannot overflow
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
          q = std::clamp(avg + zero_point, p.qmin(), p.qmax());
        }
        y[static_cast<std::size_t>((c * oh_n + oh) * ow_n + ow)] = q;
      }
  return y;
}

// TFLite's int8 ADD (reference_ops::AddElementwise with left_shift 20), and its general int16
// ADD (left_shift 15, zero points 0): (x - z) * 2^L fits int32 for both.
Values add(const IntegerProgram& p, const IntegerOp& op, const Values& a, const Values& b) {
  const IntegerTensor& ta = p.tensors[static_cast<std::size_t>(op.input)];
  const IntegerTensor& tb = p.tensors[static_cast<std::size_t>(op.input2)];
  const IntegerTensor& ty = p.tensors[static_cast<std::size_t>(op.output)];
  const std::int32_t left = std::int32_t{1} << p.add_shift();
  Values y(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::int32_t sa = reference::multiply_by_quantized_multiplier(
        (a[i] - ta.zero_point) * left, op.multipliers[0]);
    const std::int32_t sb = reference::multiply_by_quantized_multiplier(
        (b[i] - tb.zero_point) * left, op.multipliers[1]);
    const std::int64_t q =
        std::int64_t{reference::multiply_by_quantized_multiplier(sa + sb, op.multipliers[2])} +
        ty.zero_point;
    y[i] = static_cast<std::int32_t>(std::clamp<std::int64_t>(q, op.act_min, op.act_max));
  }
  return y;
}

// The softmax runs the exported kernel itself (compiled into this library): its fixed-point
// exp and reciprocal are written once, in C, and tested against double precision
// (softmax_test.cpp).
Values softmax(const IntegerOp& op, const Values& x) {
  const std::vector<std::int8_t> xs(x.begin(), x.end());
  std::vector<std::int8_t> y(xs.size());
  const qf_softmax_params params{
      static_cast<std::int32_t>(op.rows), static_cast<std::int32_t>(op.depth),
      op.multipliers.at(0).multiplier, op.multipliers.at(0).shift, op.diff_min};
  qf_softmax_s8(&params, xs.data(), y.data());
  return Values(y.begin(), y.end());
}

template <class T>
Values weighted(const IntegerOp& op, const Values& x, std::int64_t out_elements) {
  const std::vector<T> xt(x.begin(), x.end());
  std::vector<T> y(static_cast<std::size_t>(out_elements));
  if constexpr (sizeof(T) == 1) {
    const std::vector<std::int32_t> bias(op.bias.begin(), op.bias.end());
    reference::qlinear_conv(op.conv, xt.data(), op.weights.data(),
                            bias.empty() ? nullptr : bias.data(), y.data());
  } else {
    reference::qlinear_conv_16x8(op.conv, xt.data(), op.weights.data(),
                                 op.bias.empty() ? nullptr : op.bias.data(), y.data());
  }
  return Values(y.begin(), y.end());
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
    case IntegerOpKind::softmax: return "softmax";
  }
  return "?";
}

std::int64_t IntegerTensor::elements() const { return element_count(shape); }

std::int64_t IntegerProgram::weight_bytes() const {
  const std::size_t bias_bytes = activations == DType::int16 ? 8 : 4;
  std::int64_t bytes = 0;
  for (const IntegerOp& op : ops)
    bytes += static_cast<std::int64_t>(
        op.weights.size() + bias_bytes * op.bias.size() +
        (op.kind == IntegerOpKind::conv2d || op.kind == IntegerOpKind::dense
             ? 8 * op.multipliers.size()
             : 0));
  return bytes;
}

std::int64_t IntegerProgram::multiply_accumulates() const {
  std::int64_t macs = 0;
  for (const IntegerOp& op : ops)
    if (op.kind == IntegerOpKind::conv2d || op.kind == IntegerOpKind::dense)
      macs += op.conv.out_channels * op.conv.out_h() * op.conv.out_w() * op.conv.reduction();
  return macs;
}

std::vector<std::int32_t> quantize_input(const IntegerProgram& program,
                                         std::span<const float> input) {
  const IntegerOp& op = program.ops.front();
  const IntegerTensor& t = program.tensors.at(static_cast<std::size_t>(op.output));
  if (static_cast<std::int64_t>(input.size()) != element_count(program.input_shape))
    throw Error(ErrorCode::shape_mismatch, "run_integer: " + std::to_string(input.size()) +
                                               " input values; expected " +
                                               std::to_string(element_count(program.input_shape)));
  std::vector<std::int32_t> q(input.size());
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
    q[i] = reference::quantize_value(v, t.scale, t.zero_point, program.qmin(), program.qmax());
  }
  return q;
}

std::vector<std::int32_t> run_integer_values(const IntegerProgram& program,
                                             std::span<const float> input) {
  std::vector<Values> values(program.tensors.size());
  const bool s16 = program.activations == DType::int16;
  for (const IntegerOp& op : program.ops) {
    auto& y = values[static_cast<std::size_t>(op.output)];
    const IntegerTensor& out = program.tensors[static_cast<std::size_t>(op.output)];
    const Values& x = op.input < 0 ? y : values[static_cast<std::size_t>(op.input)];
    switch (op.kind) {
      case IntegerOpKind::quantize: y = quantize_input(program, input); break;
      case IntegerOpKind::conv2d:
      case IntegerOpKind::dense:
        y = s16 ? weighted<std::int16_t>(op, x, out.elements())
                : weighted<std::int8_t>(op, x, out.elements());
        break;
      case IntegerOpKind::max_pool:
      case IntegerOpKind::avg_pool: y = pool(program, op, out.zero_point, x); break;
      case IntegerOpKind::reshape: y = x; break;
      case IntegerOpKind::add:
        y = add(program, op, x, values[static_cast<std::size_t>(op.input2)]);
        break;
      case IntegerOpKind::softmax: y = softmax(op, x); break;
    }
  }
  return values[static_cast<std::size_t>(program.ops.back().output)];
}

std::vector<std::int8_t> run_integer(const IntegerProgram& program, std::span<const float> input) {
  if (program.activations != DType::int8)
    throw Error(ErrorCode::invalid_argument,
                "run_integer: the program's activations are " +
                    std::string(name(program.activations)) +
                    "; expected int8 (run_integer_values runs any program)");
  const auto v = run_integer_values(program, input);
  return std::vector<std::int8_t>(v.begin(), v.end());
}

std::string output_bytes(const IntegerProgram& program, std::span<const std::int32_t> values) {
  std::string bytes;
  for (const std::int32_t v : values) {
    if (program.activations == DType::int16) {
      const auto h = static_cast<std::int16_t>(v);
      char b[2];
      std::memcpy(b, &h, 2);  // the host's byte order, as fwrite of an int16_t array
      bytes.append(b, 2);
    } else {
      bytes.push_back(static_cast<char>(static_cast<std::int8_t>(v)));
    }
  }
  return bytes;
}

}  // namespace qforge::model
