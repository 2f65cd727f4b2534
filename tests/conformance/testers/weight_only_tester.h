// WeightOnlyTester: matmul_weight_only (float A, int4/uint4/int8/uint8 B, float Y; ONNX
// Runtime's MatMulNBits) on one (M, N, K), after XNNPACK's GemmMicrokernelTester.
//
//   WeightOnlyTester().m(1).n(17).k(70).b_dtype(DType::uint4).b_granularity(Granularity::block)
//       .b_mapping(Mapping::affine).bias(true).test(target, rng);
//
// A is normal(0, 1) floats, codes uniform over B's range, scales log-uniform, zero points
// uniform over the dtype's range (affine); B in blocks along K (nk) or per column / per tensor in
// either layout. Y meets tolerance::kWeightOnly against the double-precision reference, with the
// size of the terms (sum |a * w| + |bias|) as the magnitude of each element.
#pragma once

#include "harness/op_case.h"
#include "harness/seed.h"
#include "qforge/op_desc.h"

namespace qforge::conformance {

class WeightOnlyTester {
 public:
  WeightOnlyTester& m(std::int64_t v) {
    m_ = v;
    return *this;
  }
  WeightOnlyTester& n(std::int64_t v) {
    n_ = v;
    return *this;
  }
  WeightOnlyTester& k(std::int64_t v) {
    k_ = v;
    return *this;
  }
  WeightOnlyTester& b_dtype(DType v) {
    b_dtype_ = v;
    return *this;
  }
  WeightOnlyTester& b_layout(MatrixLayout v) {
    b_layout_ = v;
    return *this;
  }
  WeightOnlyTester& b_granularity(Granularity v) {
    b_granularity_ = v;
    return *this;
  }
  WeightOnlyTester& b_block_size(std::int64_t v) {
    b_block_size_ = v;
    return *this;
  }
  WeightOnlyTester& b_mapping(Mapping v) {
    b_mapping_ = v;
    return *this;
  }
  WeightOnlyTester& bias(bool v) {
    bias_ = v;
    return *this;
  }

  void test(Target& target, Rng& rng) const;

  // The case for given operands (A float32 [M, K], B codes packed as the descriptor says).
  static OpCase weight_only_case(const MatmulDesc& desc, std::vector<float> a,
                                 std::vector<std::byte> b, std::vector<float> bias);

 private:
  std::int64_t m_ = 1, n_ = 1, k_ = 1;
  DType b_dtype_ = DType::int4;
  MatrixLayout b_layout_ = MatrixLayout::nk;
  Granularity b_granularity_ = Granularity::block;
  std::int64_t b_block_size_ = 32;
  Mapping b_mapping_ = Mapping::symmetric;
  bool bias_ = false;
};

}  // namespace qforge::conformance
