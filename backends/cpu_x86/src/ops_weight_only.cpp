// The per-call matmul_weight_only: B packed for this call, then the kernel of weight_only.h.
#include "cpu_x86_ops.h"
#include "kernel_table.h"
#include "qforge/error.h"
#include "qforge/reference.h"
#include "weight_only.h"

namespace qforge::cpu_x86 {

void CpuX86Ops::matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b,
                                   const float* bias, float* y) {
  const OpKind op = OpKind::matmul_weight_only;
  require_supported(op, desc);
  const KernelInfo& k = weight_only_kernel({});
  if (k.role == KernelRole::reference) return reference::matmul_weight_only(desc, a, b, bias, y);
  auto require = [&](const char* what, const void* p, std::int64_t count) {
    if (count > 0 && !p)
      throw Error(ErrorCode::invalid_argument, "cpu_x86: matmul_weight_only: " + std::string(what) +
                                                   " is null; expected a valid host pointer");
  };
  // The descriptor check bounded every operand: these products are exact.
  require("a", a, desc.m * desc.k);
  require("b", b, desc.n * desc.k);
  require("y", y, desc.m * desc.n);
  if (desc.has_bias) require("bias (has_bias is set)", bias, desc.n);
  const WeightOnlyWeights w(desc, b);
  run_weight_only(*pool_, desc.m, a, w, desc.has_bias ? bias : nullptr, y);
}

const KernelInfo& CpuX86Ops::weight_only_kernel(std::string_view forced) const {
  if (!forced.empty()) {
    const KernelInfo& k = *find_kernel(forced);
    if (k.role == KernelRole::reference || k.role == KernelRole::weight_only) return k;
    throw Error(ErrorCode::unsupported,
                "cpu_x86: the forced kernel '" + std::string(forced) +
                    "' cannot run matmul_weight_only; expected f32_qw_gemm_6x16__avx2_fma or "
                    "'reference'");
  }
  for (const KernelInfo& k : all_kernels())
    if (k.role == KernelRole::weight_only && runnable(k)) return k;
  return *find_kernel(kReferenceKernel);
}

}  // namespace qforge::cpu_x86
