// An integer-only program lowered from a float graph (docs/C_EXPORT.md): what `qforge export-c`
// writes as C, and what qforge itself executes as the bit-exact oracle for that C.
//
// Conventions are TFLite's int8 spec: activations int8 affine per tensor from calibration,
// weights int8 symmetric per output channel in [-127, 127], bias int32 at scale sx * sw[o], and
// requantization by a Q31 multiplier and shift per output channel (RequantMode::fixed_point).
// Or its 16x8 variant (LowerOptions::activations = int16): activations int16 symmetric (zero
// point 0), the same weights, bias int64, and TFLite's int64 requantization (reference_16x8.h).
// Between the input quantize and the output nothing is float. The program runs one sample (a
// batch of one) in NCHW order.
//
//   IntegerProgram p = lower_to_integer(graph, batches, options);
//   std::vector<std::int32_t> out = run_integer_values(p, input);  // the oracle
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qforge/calibration/methods.h"
#include "qforge/model/executor.h"
#include "qforge/model/graph.h"
#include "qforge/op_desc.h"
#include "qforge/reference.h"

namespace qforge::model {

// One activation tensor of the program (int8, or int16 in a 16x8 program), in NCHW order with the
// batch of one dropped.
struct IntegerTensor {
  std::string name;  // the float graph's tensor it stands for
  Shape shape;       // the float graph's shape (batch included)
  float scale = 1.0f;
  std::int32_t zero_point = 0;
  std::int64_t elements() const;
};

// A float op applied to the input before it is quantized: x = x - c, x / c, x * c or x + c,
// each one float32 operation (the graph's Sub/Div/Mul/Add with a scalar constant).
struct FloatPrefixOp {
  char op = '-';  // one of + - * /
  float constant = 0.0f;
};

enum class IntegerOpKind : std::uint8_t {
  quantize,
  conv2d,
  dense,
  max_pool,
  avg_pool,
  reshape,
  add,
  softmax,
};
std::string_view to_string(IntegerOpKind kind) noexcept;

struct IntegerOp {
  IntegerOpKind kind = IntegerOpKind::reshape;
  std::string node;  // the graph node it came from (the first, for fused nodes)
  int input = -1;    // index into IntegerProgram::tensors; -1 for quantize (the float input)
  int output = -1;
  int input2 = -1;  // add: the second operand
  // conv2d and dense: the descriptor qforge executes (qlinear_conv, fixed_point, or
  // qlinear_conv_16x8; a dense layer is a 1x1 convolution over a [K, 1, 1] input), the int8
  // weights [O, C / groups, KH, KW], the bias [O] (int32 values in an int8 program, int64 in a
  // 16x8 one) and the multipliers that requantization derives from the scales.
  ConvDesc conv;
  std::vector<std::int8_t> weights;
  std::vector<std::int64_t> bias;
  // add: three multipliers, as TFLite's int8 ADD: each input's (x - z) * 2^L is scaled by
  // s_i / (2 max(s1, s2)), and their sum by 2 max(s1, s2) / (2^L sy); L = 20 (int8) or 15
  // (int16, TFLite's general int16 ADD).
  std::vector<reference::FixedPointMultiplier> multipliers;
  std::int32_t act_min = -128, act_max = 127;  // the fused clamp, quantized (int16: +-32768)
  // max_pool and avg_pool (ConvDesc's geometry fields: kernel, stride, dilation, pads).
  bool count_include_pad = false;
  // softmax (TFLite's int8 SOFTMAX over the last axis, the graph's last op): `rows` rows of
  // `depth` contiguous values; multipliers[0] scales an input difference into Q5.26 (scale *
  // beta * 2^26, a left shift), and differences below diff_min give the smallest output. The
  // output's params are fixed: scale 1/256, zero point -128.
  std::int64_t rows = 0, depth = 0;
  std::int32_t diff_min = 0;
  // quantize: the float ops before it.
  std::vector<FloatPrefixOp> prefix;
};

struct IntegerProgram {
  DType activations = DType::int8;      // int8, or int16 for TFLite's 16x8 variant
  std::string input_name, output_name;  // the graph's
  Shape input_shape;                    // float input, batch of one
  std::vector<IntegerTensor> tensors;
  std::vector<IntegerOp> ops;  // in execution order; ops.back() writes the output tensor
  const IntegerTensor& output() const { return tensors.at(ops.back().output); }
  std::int64_t activation_bytes() const { return activations == DType::int16 ? 2 : 1; }
  std::int64_t add_shift() const { return activations == DType::int16 ? 15 : 20; }
  std::int32_t qmin() const { return activations == DType::int16 ? -32768 : -128; }
  std::int32_t qmax() const { return activations == DType::int16 ? 32767 : 127; }
  std::int64_t weight_bytes() const;  // int8 weights + bias (4 or 8 bytes), multipliers, shifts
  std::int64_t multiply_accumulates() const;  // per inference
};

struct LowerOptions {
  // How calibration turns each activation's histogram into a range.
  calibration::MethodOptions calibration{};
  int bins = 2048;
  // int8 (TFLite's int8 spec, affine activations) or int16 (its 16x8 variant: symmetric int16
  // activations, int64 bias).
  DType activations = DType::int8;
};

// The next calibration batch (the graph input's values, any batch size), or nullopt at the end.
using CalibrationSource = std::function<std::optional<TensorMap>()>;

// Lowers `graph` (one float input, one output) to an integer-only program, calibrating every
// activation it quantizes over the batches `next` gives; each batch is observed and dropped, so
// memory does not grow with their number. Throws qforge::Error naming the node for an op or
// attribute it does not support, listing what is supported, and when there is no batch.
IntegerProgram lower_to_integer(const Graph& graph, const CalibrationSource& next,
                                const LowerOptions& options = {});
// The same over batches held in memory.
IntegerProgram lower_to_integer(const Graph& graph, std::span<const TensorMap> batches,
                                const LowerOptions& options = {});

// The op types lower_to_integer accepts, for messages and docs.
std::string_view supported_integer_ops() noexcept;

// Runs the program on one sample (input_shape's elements, float32) through core's reference
// ops (qlinear_conv in fixed-point mode, or qlinear_conv_16x8); returns the output tensor's
// values (int8 or int16).
std::vector<std::int32_t> run_integer_values(const IntegerProgram& program,
                                             std::span<const float> input);
// The same for an int8 program; throws invalid_argument for a 16x8 one.
std::vector<std::int8_t> run_integer(const IntegerProgram& program, std::span<const float> input);
// The output values as model_main.c writes them: one byte each (int8), or two in the host's byte
// order (int16).
std::string output_bytes(const IntegerProgram& program, std::span<const std::int32_t> values);

// The float prefix and the input quantize exactly as the exported C computes them.
std::vector<std::int32_t> quantize_input(const IntegerProgram& program,
                                         std::span<const float> input);

}  // namespace qforge::model
