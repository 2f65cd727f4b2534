// oneDNN 2.6 computes int8 matmul exactly only with VNNI or AMX: without them its kernels sum
// u8 x s8 pairs with vpmaddubsw, which saturates at int16 (measured: most elements of a random
// 16x64x64 u8s8 product wrong with DNNL_MAX_CPU_ISA=AVX2). The plugin must then refuse every
// int8 matmul and say why, and still serve everything else. CMake runs this binary a second
// time with DNNL_MAX_CPU_ISA=AVX2 so that both branches run on a VNNI machine.
#include <gtest/gtest.h>

#include "matmul_check.h"

namespace qforge::onednn_test {
namespace {

bool has_exact_int8(const std::string& isa) {
  return isa == "avx512_core_vnni" || isa == "avx512_core_bf16" || isa == "avx512_core_amx" ||
         isa == "avx2_vnni";
}

TEST(Isa, Int8MatmulOnlyWhereOneDnnIsExact) {
  ONEDNN_OR_SKIP(ops);
  Rng rng = test_rng();
  const std::string isa = device_property(ops, "isa_used");
  SCOPED_TRACE("oneDNN ISA " + isa);
  const MatmulDesc d =
      matmul_desc(16, 64, 64, QuantizationParams::per_tensor_affine(DType::uint8, 0.1f, 0),
                  QuantizationParams::per_tensor_affine(DType::int8, 0.1f, 0));
  for (const OpKind op : {OpKind::matmul_integer, OpKind::matmul_dequant}) {
    const Support s = ops.supports({op, d});
    if (has_exact_int8(isa)) {
      EXPECT_TRUE(s.supported) << s.reason;
      EXPECT_GT(expect_exact(ops, random_run(rng, op, d)), 0);
    } else {
      EXPECT_FALSE(s.supported);
      EXPECT_NE(s.reason.find("vpmaddubsw"), std::string::npos) << s.reason;
      EXPECT_NE(s.reason.find(isa), std::string::npos) << s.reason;
    }
  }
  const LinearDesc ld{2, 3, 4, QuantizationParams::per_tensor_symmetric(DType::int8, 0.1f), false};
  EXPECT_EQ(ops.supports({OpKind::linear_forward, ld}).supported, has_exact_int8(isa));
  // Float matmuls and the elementwise ops do not depend on it.
  EXPECT_TRUE(ops.supports({OpKind::linear_backward, ld}).supported);
  EXPECT_TRUE(ops.supports({OpKind::quantize, QuantizeDesc{{4}, d.a, FloatType::f32}}).supported);
}

}  // namespace
}  // namespace qforge::onednn_test
