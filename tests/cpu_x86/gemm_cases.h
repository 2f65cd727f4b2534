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
  bool no_min = false;   // B symmetric, never -128 in the s8 domain (maddubs kernels)
  bool qlinear = false;  // add output params
};

MatmulProblem random_problem(Rng& rng, std::int64_t m, std::int64_t n, std::int64_t k,
                             const ProblemOptions& opt);

// Whether supports() lists `kernel` for op on p: a plan of it can be made.
bool offers(const QuantizationOps& ops, OpKind op, const MatmulProblem& p,
            const std::string& kernel);
// m moved into the rows a GEMM kernel's role serves (supports() lists q8_gemm_ kernels above
// 16 rows, q8_gemv_ kernels at 16 or fewer, the AMX one from 5), keeping its offset from a tile
// edge.
std::int64_t rows_for(const std::string& kernel, std::int64_t m);

// How check_matmul runs the op: with an empty kernel, the per-call op (the backend's own
// kernel; the *_packed op with `packed`); otherwise a plan of that kernel, B fixed when the plan
// is made when `fix_b`. `ran`, when set, receives the kernel the plan ran ("" per call).
struct RunWith {
  std::string kernel;
  bool fix_b = false;
  const PackedWeights* packed = nullptr;
  std::string* ran = nullptr;
};

// Runs op (matmul_integer, matmul_dequant or qlinear_matmul) through ops as `how` says and
// compares with the reference. Returns "" or what differed.
std::string check_matmul(QuantizationOps& ops, OpKind op, const MatmulProblem& p,
                         const RunWith& how = {});

// The raw output bytes of op through ops (for determinism tests): a plan of `kernel`.
std::vector<std::uint8_t> run_matmul(QuantizationOps& ops, OpKind op, const MatmulProblem& p,
                                     const std::string& kernel);

}  // namespace qforge::cpu_x86_test
