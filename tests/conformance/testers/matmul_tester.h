// MatmulTester: matmul_integer, matmul_dequant and qlinear_matmul on one (M, N, K), after
// XNNPACK's GemmMicrokernelTester.
//
//   MatmulTester().m(1).n(17).k(33).a_dtype(DType::uint8).b_dtype(DType::int4)
//       .b_layout(MatrixLayout::nk).a_per_row(true).b_granularity(Granularity::block)
//       .test_matmul_dequant(target, rng);
//
// Zero points are random over the dtype's range (affine) and per tensor or per row of A / per
// column of B as set; codes are uniform over the mapping's range (16-bit codes within 2048 of
// their zero point, with 1% extremes in A, so random sums stay inside int32) or, with
// extremes(true), only the two ends of the range, which saturate narrow intermediate sums
// (AVX2 vpmaddubsw) and hit int32 overflow for wide dtypes. Integer outputs are exact; float
// outputs meet tolerances.h.
#pragma once

#include "harness/op_case.h"
#include "harness/seed.h"
#include "qforge/op_desc.h"

namespace qforge::conformance {

class MatmulTester {
 public:
  MatmulTester& m(std::int64_t v) {
    m_ = v;
    return *this;
  }
  MatmulTester& n(std::int64_t v) {
    n_ = v;
    return *this;
  }
  MatmulTester& k(std::int64_t v) {
    k_ = v;
    return *this;
  }
  MatmulTester& a_dtype(DType v) {
    a_dtype_ = v;
    return *this;
  }
  MatmulTester& b_dtype(DType v) {
    b_dtype_ = v;
    return *this;
  }
  MatmulTester& b_layout(MatrixLayout v) {
    b_layout_ = v;
    return *this;
  }
  // A's params per row (per_channel axis 0) instead of per tensor.
  MatmulTester& a_per_row(bool v) {
    a_per_row_ = v;
    return *this;
  }
  // B's params: per_tensor, per_channel (one pair per column of the [K, N] view) or block
  // (along K, nk layout only).
  MatmulTester& b_granularity(Granularity v) {
    b_granularity_ = v;
    return *this;
  }
  MatmulTester& b_block_size(std::int64_t v) {
    b_block_size_ = v;
    return *this;
  }
  MatmulTester& a_mapping(Mapping v) {
    a_mapping_ = v;
    return *this;
  }
  MatmulTester& b_mapping(Mapping v) {
    b_mapping_ = v;
    return *this;
  }
  MatmulTester& extremes(bool v) {
    extremes_ = v;
    return *this;
  }
  // matmul_dequant (float32) and qlinear_matmul (int32 at scale sa * sb[n])
  MatmulTester& bias(bool v) {
    bias_ = v;
    return *this;
  }
  MatmulTester& out_type(FloatType v) {
    out_type_ = v;
    return *this;
  }
  // matmul_dequant with A's params given at run (MatmulDesc::a_params_at_run): the descriptor
  // holds other params of A's dtype and scheme, drawn apart, so that a backend reading them
  // instead of the run's values fails. With a_per_row, a descriptor every backend must refuse.
  MatmulTester& a_params_at_run(bool v) {
    a_params_at_run_ = v;
    return *this;
  }
  // qlinear_matmul
  MatmulTester& y_dtype(DType v) {
    y_dtype_ = v;
    return *this;
  }
  MatmulTester& requant_mode(RequantMode v) {
    requant_mode_ = v;
    return *this;
  }
  // qlinear_matmul's fused clamp; a clamp's bounds are drawn inside the output's real range.
  MatmulTester& activation(ConvActivation v) {
    activation_ = v;
    return *this;
  }

  void test_matmul_integer(Target& target, Rng& rng) const;
  void test_matmul_dequant(Target& target, Rng& rng) const;
  void test_qlinear_matmul(Target& target, Rng& rng) const;

  // Cases on given operands (codes packed as the descriptor's dtypes and layout), for tests
  // that build adversarial data themselves (int32_bound_test.cpp). `pattern` joins the label.
  static OpCase matmul_integer_case(const MatmulDesc& desc, std::vector<std::byte> a,
                                    std::vector<std::byte> b, const std::string& pattern);
  static OpCase matmul_dequant_case(const MatmulDesc& desc, std::vector<std::byte> a,
                                    std::vector<std::byte> b, std::vector<float> bias,
                                    const std::string& pattern);
  // The same op with A's params given at run: `desc` holds the run's values of A, the
  // descriptor of the case holds `placeholder` (A's dtype and scheme) and the flag.
  static OpCase matmul_dequant_at_run_case(const MatmulDesc& desc,
                                           const QuantizationParams& placeholder,
                                           std::vector<std::byte> a, std::vector<std::byte> b,
                                           std::vector<float> bias, const std::string& pattern);
  // bias: int32 [N] when desc.has_bias, else empty.
  static OpCase qlinear_matmul_case(const MatmulDesc& desc, std::vector<std::byte> a,
                                    std::vector<std::byte> b, const std::string& pattern,
                                    std::vector<std::int32_t> bias = {});

 private:
  struct Operands;
  Operands make_operands(Rng& rng) const;

  std::int64_t m_ = 1, n_ = 1, k_ = 1;
  DType a_dtype_ = DType::uint8, b_dtype_ = DType::int8;
  MatrixLayout b_layout_ = MatrixLayout::kn;
  bool a_per_row_ = false;
  Granularity b_granularity_ = Granularity::per_tensor;
  std::int64_t b_block_size_ = 32;
  Mapping a_mapping_ = Mapping::affine, b_mapping_ = Mapping::affine;
  bool extremes_ = false;
  bool bias_ = false;
  FloatType out_type_ = FloatType::f32;
  bool a_params_at_run_ = false;
  DType y_dtype_ = DType::uint8;
  RequantMode requant_mode_ = RequantMode::float_multiplier;
  ConvActivation activation_ = ConvActivation::none;
};

}  // namespace qforge::conformance
