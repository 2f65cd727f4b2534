// Random matmul problems for the cpu_x86 GEMM tests, and running one through a plugin and the
// reference with every output compared bit for bit (the plugin's float epilogue evaluates
// reference.h's expressions in the same order, so even matmul_dequant matches exactly).
#pragma once

#include <string>
#include <vector>

#include "support.h"

namespace qforge::cpu_x86_test {

// The GEMM kernels, as docs/CPU_X86.md lists them.
inline const std::vector<std::string> kGemmKernels = {
    "q8_gemm_32x32c4__amx",         "q8_gemm_6x64c4__avx512vnni",  "q8_gemm_6x16c4__avxvnni",
    "q8_gemm_4x16c4__avx2_maddubs", "q8_gemm_2x16c4__avx2_maddwd", "q8_gemv_16x32c4__amx",
    "q8_gemv_16x16c4__avx512vnni",  "q8_gemv_6x16c4__avxvnni",     "q8_gemv_4x16c4__avx2_maddubs",
    "q8_gemv_2x16c4__avx2_maddwd"};
inline const std::vector<std::string> kBlockKernels = {
    "q8_qbw_gemm_6x64c4__avx512vnni", "q8_qbw_gemm_6x16c4__avxvnni",
    "q8_qbw_gemm_4x16c4__avx2_maddubs", "q8_qbw_gemm_2x16c4__avx2_maddwd"};

struct MatmulProblem {
  MatmulDesc desc;
  std::vector<std::uint8_t> a, b;
  std::vector<float> bias;
  std::string text() const;
};

struct ProblemOptions {
  bool blocked = false;  // block-wise B (nk)
  bool no_min = false;   // B never holds -128 in the s8 domain (maddubs kernels)
  bool qlinear = false;  // add output params
};

MatmulProblem random_problem(Rng& rng, std::int64_t m, std::int64_t n, std::int64_t k,
                             const ProblemOptions& opt);

// Runs op (matmul_integer, matmul_dequant or qlinear_matmul) through ops, unpacked when
// `packed` is null, and compares with the reference. Returns "" or what differed.
std::string check_matmul(QuantizationOps& ops, OpKind op, const MatmulProblem& p,
                         const PackedWeights* packed = nullptr);

// The raw output bytes of op through ops (for determinism tests).
std::vector<std::uint8_t> run_matmul(QuantizationOps& ops, OpKind op, const MatmulProblem& p);

}  // namespace qforge::cpu_x86_test
