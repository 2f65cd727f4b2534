// validate(): every invalid setting is an error naming the rule and the field.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "qforge/model/recipe.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using test::expect_error;

// A one-rule recipe whose action is `l` (label "r" shows in every message).
Recipe with_rule(const LayerQuantization& l) {
  Recipe r;
  r.rules.push_back({.label = "r", .match = {.op_types = {"Conv"}}, .quantize = l});
  return r;
}

void expect_invalid(const LayerQuantization& l, std::initializer_list<std::string> pieces) {
  std::vector<std::string> all(pieces);
  const std::string message =
      expect_error([&] { validate(with_rule(l)); }, ErrorCode::invalid_argument, {});
  for (const auto& p : all)
    EXPECT_NE(message.find(p), std::string::npos) << "missing '" << p << "' in: " << message;
  EXPECT_NE(message.find("[rule 'r']"), std::string::npos) << message;
}

TEST(RecipeValidate, DefaultsAreValid) {
  EXPECT_NO_THROW(validate(with_rule(LayerQuantization{})));
  EXPECT_NO_THROW(validate(Recipe{}));
  LayerQuantization weight_only;
  weight_only.activations.reset();
  weight_only.weights->dtype = DType::int4;
  weight_only.weights->granularity = Granularity::block;
  weight_only.weights->block_size = 128;
  EXPECT_NO_THROW(validate(with_rule(weight_only)));
  LayerQuantization activations_only;
  activations_only.weights.reset();
  activations_only.activations = ActivationQuantization::dynamic_per_batch();
  EXPECT_NO_THROW(validate(with_rule(activations_only)));
  LayerQuantization sym_uint8;  // valid: zero point 128, narrow range [1, 255] (dtype.h)
  sym_uint8.weights->dtype = DType::uint8;
  sym_uint8.activations->dtype = DType::uint8;
  sym_uint8.activations->mapping = Mapping::symmetric;
  EXPECT_NO_THROW(validate(with_rule(sym_uint8)));
}

TEST(RecipeValidate, WeightSettings) {
  LayerQuantization l;
  l.weights->dtype = DType::uint4;
  expect_invalid(l, {"rules[0].weights.dtype: dtype uint4 is not supported for weights; expected "
                     "one of int8, uint8, int16, int4"});
  l = {};
  l.weights->mapping = Mapping::logarithmic;
  expect_invalid(l,
                 {"rules[0].weights.mapping: mapping logarithmic", "expected symmetric or affine"});
  l = {};
  l.weights->granularity = Granularity::block;
  l.weights->axis = 1;
  expect_invalid(l, {"rules[0].weights.axis: an axis applies only to granularity per_channel; "
                     "this one is block"});
  for (std::int64_t bad : {0, 1, -32, 48, 131072}) {
    l = {};
    l.weights->granularity = Granularity::block;
    l.weights->block_size = bad;
    expect_invalid(l, {"rules[0].weights.block_size: " + std::to_string(bad) +
                       "; expected a power of two from 2 to 65536"});
  }
  l = {};
  l.weights->observer = calibration::Method::entropy;
  expect_invalid(l, {"rules[0].weights.observer: weight observer entropy is not supported; "
                     "expected one of minmax, mse"});
  l = {};
  l.weights->observer = calibration::Method::mse;
  EXPECT_NO_THROW(validate(with_rule(l)));
  l.weights->rounding = WeightRounding::gptq;
  EXPECT_NO_THROW(validate(with_rule(l)));
  l = {};
  l.weights->rounding = static_cast<WeightRounding>(7);
  expect_invalid(l, {"rules[0].weights.rounding: unknown weight rounding value; expected one of "
                     "nearest, gptq"});
  l = {};
  l.weights->block_size = 64;  // per_channel
  expect_invalid(l,
                 {"rules[0].weights.block_size: a block size applies only to granularity block"});
}

TEST(RecipeValidate, ActivationSettings) {
  LayerQuantization l;
  l.activations->dtype = DType::int4;
  expect_invalid(l, {"rules[0].activations.dtype: dtype int4 is not supported for activations; "
                     "expected one of int8, uint8, int16"});
  l = {};
  l.activations->granularity = Granularity::block;
  expect_invalid(l,
                 {"rules[0].activations.granularity: block: activations are quantized per tensor"});
  l = {};
  l.activations->mapping = Mapping::logarithmic;
  expect_invalid(l, {"rules[0].activations.mapping"});
  l = {};
  l.activations->calibration.method = calibration::Method::minmax;
  l.activations->calibration.percentile = 99.9;
  expect_invalid(l, {"rules[0].activations.calibration.percentile: method minmax does not use a "
                     "percentile"});
  l = {};
  l.activations->calibration.method = calibration::Method::percentile;
  l.activations->calibration.start_bin = 64;
  expect_invalid(l, {"rules[0].activations.calibration.start_bin: method percentile has no "
                     "candidate bins"});
  for (double p : {0.0, -1.0, 100.5, std::nan("")}) {
    l = {};
    l.activations->calibration.method = calibration::Method::percentile;
    l.activations->calibration.percentile = p;
    expect_invalid(
        l, {"rules[0].activations.calibration.percentile:", "expected a value in (0, 100]"});
  }
  l = {};
  l.activations->calibration.stride = 0;
  expect_invalid(l, {"rules[0].activations.calibration.stride: 0; expected >= 1"});
  l = {};
  l.activations = ActivationQuantization::dynamic_per_batch();
  l.activations->calibration.method = calibration::Method::mse;
  expect_invalid(l, {"rules[0].activations.calibration: calibration options apply to mode static; "
                     "this one is dynamic"});
}

TEST(RecipeValidate, ExplicitScaleAndZeroPoint) {
  LayerQuantization l;
  l.activations = ActivationQuantization::explicit_affine(DType::uint8, 0.02f, 128);
  EXPECT_NO_THROW(validate(with_rule(l)));
  l.activations->scale.reset();
  expect_invalid(l, {"rules[0].activations.scale: missing; mode explicit needs a scale"});
  for (float bad : {0.0f, -0.5f, std::numeric_limits<float>::infinity(), std::nanf(""),
                    std::numeric_limits<float>::denorm_min()}) {
    l.activations->scale = bad;
    expect_invalid(l, {"rules[0].activations.scale:", "expected a finite float32 > 0"});
  }
  l.activations = ActivationQuantization::explicit_affine(DType::int8, 0.5f, 128);
  expect_invalid(l, {"rules[0].activations.zero_point: 128 is outside int8; expected a value in "
                     "[-128, 127]"});
  l.activations = ActivationQuantization::explicit_affine(DType::int16, 0.5f, -40000);
  expect_invalid(l, {"rules[0].activations.zero_point: -40000 is outside int16"});
  l.activations->zero_point.reset();
  expect_invalid(l,
                 {"rules[0].activations.zero_point: missing; mode explicit with affine mapping"});
  l.activations = ActivationQuantization::explicit_symmetric(DType::uint8, 0.5f);
  EXPECT_NO_THROW(validate(with_rule(l)));
  l.activations->zero_point = 128;  // restating the fixed zero point is fine
  EXPECT_NO_THROW(validate(with_rule(l)));
  l.activations->zero_point = 0;
  expect_invalid(l, {"rules[0].activations.zero_point: 0; symmetric uint8 has zero point 128"});
  l.activations = ActivationQuantization::static_calibrated();
  l.activations->scale = 1.0f;
  expect_invalid(l, {"rules[0].activations.scale: a scale applies only to mode explicit; this one "
                     "is static"});
  l.activations = ActivationQuantization::dynamic_per_batch();
  l.activations->zero_point = 3;
  expect_invalid(l,
                 {"rules[0].activations.zero_point: a zero point applies only to mode explicit"});
}

TEST(RecipeValidate, FixedPointRequantizationNeedsIntegerOnlySettings) {
  LayerQuantization l;
  l.requantization = RequantMode::fixed_point;
  EXPECT_NO_THROW(validate(with_rule(l)));  // int8 symmetric per-channel, static int8 affine
  l.activations->dtype = DType::int16;
  l.activations->mapping = Mapping::symmetric;
  EXPECT_NO_THROW(validate(with_rule(l)));  // TFLite's 16x8 mode
  l.activations->mapping = Mapping::affine;
  expect_invalid(l, {"rules[0].requantization: fixed_point with int16 activations needs them "
                     "symmetric"});
  l = {};
  l.requantization = RequantMode::fixed_point;
  l.activations.reset();
  expect_invalid(l, {"rules[0].requantization: fixed_point needs integer outputs"});
  l.activations = ActivationQuantization::dynamic_per_batch();
  expect_invalid(l, {"rules[0].requantization: fixed_point needs scales known ahead of time"});
  l.activations = ActivationQuantization{};
  l.weights->dtype = DType::int16;
  expect_invalid(l, {"rules[0].requantization: fixed_point needs int8 or int4 weights"});
  l.weights->dtype = DType::int8;
  l.weights->mapping = Mapping::affine;
  expect_invalid(l, {"rules[0].requantization: fixed_point needs symmetric weights"});
  l.weights->mapping = Mapping::symmetric;
  l.weights->granularity = Granularity::block;
  expect_invalid(l, {"rules[0].requantization: fixed_point cannot rescale block by block"});
}

TEST(RecipeValidate, MatchAndActionShape) {
  LayerQuantization none;
  none.weights.reset();
  none.activations.reset();
  expect_invalid(none, {"rules[0]: quantizes neither weights nor activations"});

  Recipe r;
  r.rules.push_back(Rule::skip({}, "empty"));
  expect_error([&] { validate(r); }, ErrorCode::invalid_argument,
               {"rules[0].match: matches on nothing; expected name_regex, op_types or both",
                "[rule 'empty']"});
  r.rules[0].match.name_regex = "";
  expect_error([&] { validate(r); }, ErrorCode::invalid_argument,
               {"rules[0].match.name_regex: empty pattern"});
  r.rules[0].match.name_regex = "(conv";
  expect_error([&] { validate(r); }, ErrorCode::invalid_argument,
               {"rules[0].match.name_regex: invalid regular expression '(conv': missing ): (conv"});
  r.rules[0].match.name_regex = "a{2000}{2000}";  // RE2 refuses patterns this large
  expect_error([&] { validate(r); }, ErrorCode::invalid_argument,
               {"rules[0].match.name_regex: invalid regular expression 'a{2000}{2000}'"});
  r.rules[0].match.name_regex = "(?<name>x)";  // Perl syntax RE2 lacks (in this version)
  expect_error([&] { validate(r); }, ErrorCode::invalid_argument,
               {"rules[0].match.name_regex: invalid regular expression"});
  r.rules[0].match.name_regex.reset();
  r.rules[0].match.op_types = {"Conv", ""};
  expect_error([&] { validate(r); }, ErrorCode::invalid_argument,
               {"rules[0].match.op_types[1]: empty op type"});

  Recipe d;
  d.default_quantize = LayerQuantization{};
  d.default_quantize->weights->dtype = DType::binary;
  expect_error([&] { validate(d); }, ErrorCode::invalid_argument,
               {"default.weights.dtype: dtype binary"});
}

}  // namespace
}  // namespace qforge::model
