// The cpu_x86 backend: qforge::QuantizationOps with x86 SIMD kernels (AVX2, AVX-512 VNNI,
// AVX-VNNI, AMX-INT8), chosen at run time from what the CPU supports, what this library was
// built with and what the caller allows (docs/CPU_X86.md).
//
// Options (set_option):
//   "threads"  positive integer, or "0"/"default" for the number of physical cores.
//   "isa"      allowed ISA tiers, e.g. "avx2" or "avx2,avx512_vnni", or "all"; the initial value
//              comes from the environment variable QFORGE_CPU_X86_ISA.
//   "gemv_prefetch"  bytes the GEMV kernels (M <= 16) prefetch ahead on each weight panel,
//              0 to 65536 (0: hardware prefetch only); "default" for kDefaultGemvPrefetch.
#pragma once

#include <memory>
#include <string>

#include "conv.h"
#include "descriptor_rules.h"
#include "gemm_driver.h"
#include "isa.h"
#include "kernel_table.h"
#include "lending_pool.h"
#include "qforge/error.h"
#include "qforge/ops.h"
#include "thread_pool.h"

namespace qforge::cpu_x86 {

// The version keys the accelerator's tuning cache (docs/ACCELERATOR.md): it changes whenever
// the kernels do, so that cached decisions are measured again.
inline constexpr const char* kPluginVersion = "0.4.1";

// Measured on the GPU host's 16-core CPU and on the development machine (docs/CPU_X86.md).
inline constexpr std::int64_t kDefaultGemvPrefetch = 4096;

class CpuX86Ops final : public QuantizationOps {
 public:
  CpuX86Ops();
  ~CpuX86Ops() override;

  std::string name() const override { return "cpu_x86"; }
  std::string version() const override { return kPluginVersion; }
  Availability availability() const override;
  std::vector<DeviceInfo> devices() const override;
  bool host_memory() const override { return true; }

  bool set_option(std::string_view key, std::string_view value) override;

  using QuantizationOps::supports;
  Support supports(const OpDesc& op, int device) const override;

  void quantize(const QuantizeDesc& desc, const void* x, void* q) override;
  void dequantize(const QuantizeDesc& desc, const void* q, float* x) override;
  void requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) override;
  void matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                      std::int32_t* c) override;
  void matmul_dequant(const MatmulDesc& desc, const void* a, const void* b, const float* bias,
                      void* y) override;
  void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) override;
  void qlinear_matmul_bias(const MatmulDesc& desc, const void* a, const void* b,
                           const std::int32_t* bias, void* y) override;
  std::shared_ptr<PackedWeights> pack_weights(const MatmulDesc& desc, const void* b) override;
  void matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             std::int32_t* c) override;
  void matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             const float* bias, void* y) override;
  void qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             void* y) override;
  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                             std::uint8_t* y) override;
  QuantizationParams linear_forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y) override;
  void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                       float* dw, float* db) override;
  // Convolution (ops_conv.cpp, conv.h): im2col into the GEMM kernels, or the direct depthwise
  // or short-reduction kernel.
  void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
            void* y) override;
  // Weight-only matmul (ops_weight_only.cpp, weight_only.h): float A, 4- or 8-bit B.
  void matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b, const float* bias,
                          float* y) override;
  // Native plans (x86_plan.cpp): validated, kernel chosen and a fixed B packed once; they run
  // from any threads at once and keep no state here (docs/CPU_X86.md, "Plans").
  std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request) override;

  // The tiers kernels may use now: compiled in, detected, and allowed.
  IsaSet usable_isas() const { return compiled_ & detected_ & allowed_; }
  int threads() const { return pool_->threads(); }

 private:
  // Throws unsupported with supports()' reason when the descriptor is not accepted. Takes the
  // descriptor by reference: an OpDesc would copy its params on every call.
  template <class Desc>
  void require_supported(OpKind op, const Desc& desc) const {
    if (!detected_.has(Isa::avx2))
      throw Error(ErrorCode::unsupported, "cpu_x86: " + availability().reason);
    check_descriptor(op, desc);
  }
  // The kernel the per-call ops run for an elementwise role: the role's vector kernel, or the
  // reference when `vector_ok` is false.
  const KernelInfo& elementwise_kernel(KernelRole role, bool vector_ok) const;
  // The GEMM kernel for desc with packed weights b (maddubs needs b without -128): `forced`
  // (a plan's requested kernel), else the automatic choice for b.
  const KernelInfo& gemm_kernel(const MatmulDesc& desc, const X86PackedWeights& b, OpKind op,
                                std::string_view forced) const;
  // Whether the automatic choice runs d on the AMX implicit-GEMM kernel.
  bool implicit_first(const ConvDesc& desc) const;
  // How `forced` (a kernel name, or empty for the automatic choice) runs desc: im2col GEMM, the
  // direct depthwise kernel, the short-reduction kernel or the implicit GEMM; throws unsupported
  // when a forced kernel cannot run it.
  ConvPath conv_path(const ConvDesc& desc, OpKind op, std::string_view forced) const;
  // The kernel for a convolution whose weights are prepared (conv_path decided which form): the
  // path's direct kernel, or a GEMM kernel for weights that hold -128 (`holds_min`) or not.
  const KernelInfo& conv_kernel(const ConvDesc& desc, ConvPath path, bool holds_min,
                                std::string_view forced) const;
  // The kernel for matmul_weight_only: `forced` (reference or the weight-only kernel; another
  // kernel throws unsupported), else the weight-only kernel.
  const KernelInfo& weight_only_kernel(std::string_view forced) const;
  // b as this backend's packing, or invalid_argument.
  const X86PackedWeights& own_packed(const PackedWeights& b) const;
  // False when an int32 bias sum left int32 (run_gemm).
  bool run_matmul(OpKind op, const MatmulDesc& desc, const void* a, const X86PackedWeights& b,
                  const GemmOutput& out);
  bool runnable(const KernelInfo& k) const { return usable_isas().has(k.isa); }
  // The driver's choices that follow the options in effect now.
  GemmTuning tuning() const { return {usable_isas().has(Isa::avx512_vnni), gemv_prefetch_}; }

  IsaSet compiled_, detected_, allowed_;
  // Shared with the plans made from this instance: a plan keeps the pool it was made with.
  PollTimes poll_;
  std::shared_ptr<ThreadPool> pool_;
  std::int64_t gemv_prefetch_ = kDefaultGemvPrefetch;
  GemmScratch scratch_;  // the per-call ops' (one call at a time)
  // The plans': shared by every plan made from this instance (lending_pool.h); a plan keeps it
  // alive as it keeps its thread pool.
  std::shared_ptr<LendingPool<GemmScratch>> plan_scratch_ =
      std::make_shared<LendingPool<GemmScratch>>([] { return std::make_unique<GemmScratch>(); });
};

}  // namespace qforge::cpu_x86
