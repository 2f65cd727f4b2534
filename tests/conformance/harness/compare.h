// Comparing a plugin's output with the reference's.
//
// Integer outputs (packed quantized codes, int32 accumulators) must be equal byte for byte,
// padding bits of a last partial byte included (dtype.h: they are zero). A mismatch names the
// first differing element by flat and multi-index with got vs expected, and how many differ.
//
// Float outputs pass when NMSE = sum (got - ref)^2 / sum max(ref, mag)^2 is at most the op's
// tolerance (tolerances.h), no element is NaN or infinite where the reference is finite, and
// non-finite reference elements are matched exactly (inf by sign, NaN by NaN). This is ggml's
// test-backend-ops metric (accumulated in double) with one change: where the tester knows the
// size `mag` of the terms an element was summed from (|C * sa * sb| + |bias|, sum |dy * w|), the
// denominator uses it, so a result that cancels to almost nothing does not turn legitimate
// rounding in its terms into a huge relative error (the bound BLAS tests use: error <= c * eps *
// |A||B|). Without magnitudes mag = |ref|. An all-zero denominator requires an exact match.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <span>
#include <string>

#include "qforge/dtype.h"
#include "qforge/half.h"
#include "qforge/shape.h"

namespace qforge::conformance {

enum class ValueKind { quantized, int32, floating };

struct OutputSpec {
  std::string name;  // "q", "c", "y", "dx"
  Shape shape;
  ValueKind kind = ValueKind::int32;
  DType dtype = DType::int8;              // quantized
  FloatType float_type = FloatType::f32;  // floating
  double nmse_tolerance = 0.0;            // floating

  static OutputSpec quantized(std::string name, Shape shape, DType dtype);
  static OutputSpec int32(std::string name, Shape shape);
  static OutputSpec floating(std::string name, Shape shape, FloatType type, double tolerance);

  std::size_t count() const;
  std::size_t bytes() const;
  // Bytes of one stored element (1 for packed types): the unit a poison pattern repeats in.
  std::size_t element_bytes() const;
};

// `magnitude` is empty or has one entry per element (floating outputs only).
::testing::AssertionResult compare_output(const OutputSpec& spec, std::span<const std::byte> got,
                                          std::span<const std::byte> expected,
                                          std::span<const double> magnitude = {});

// "[1, 4]" for flat index 12 of shape [3, 8].
std::string multi_index(const Shape& shape, std::size_t flat);

}  // namespace qforge::conformance
