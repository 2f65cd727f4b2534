// The CUDA backend: QuantizationOps on one NVIDIA GPU (docs/CUDA.md).
//
// Memory: op pointers are device pointers from allocate() (plain cudaMalloc), anywhere inside an
// allocation. Parameters (scales, zero points) travel on the host in the descriptors and are
// copied to the device on demand, cached by content.
// Ordering: ops queue their kernels on the instance's stream and return; copy_to_host and
// synchronize() wait for them (synchronize() for the runs of this instance's plans too). Ops that
// return host values (dynamic_quantize_linear, linear_forward) wait before returning. The stream is
// a blocking one, so work queued on the legacy default stream by the caller is ordered with it too.
// Errors: every CUDA call is checked; failures become qforge::Error(ErrorCode::backend) naming
// the call and CUDA's message. Without a usable GPU the plugin still loads; availability() says
// why and every op throws ErrorCode::unavailable with that reason.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "device_probe.h"
#include "kernels/gemm.h"
#include "kernels/gemm_blockwise.h"
#include "param_cache.h"
#include "qforge/ops.h"
#include "support.h"
#include "workspace.h"

namespace qforge::cuda {

// Part of the tuning cache's fingerprint: a new version re-measures the accelerator's choices
// (0.3.0: split-K reduced in the wgmma kernel, the block-wise CUDA-core GEMV).
inline constexpr const char* kPluginVersion = "0.3.0";

class CudaPackedWeights;
class CudaPlan;

// How many times this process packed convolution weights for the implicit-GEMM kernel: once per
// per-call convolution, once per plan with fixed weights. The plugin exports it as
// qforge_cuda_conv_weight_packs() (plugin.cpp) so that tests can see a plan does not re-pack.
inline std::atomic<std::uint64_t> conv_weight_packs{0};
// How many convolution runs waited for the int32-bias overflow flag: every per-call one with an
// int32 bias, and plan runs whose fixed weights and bias could not be proven safe. Exported as
// qforge_cuda_conv_overflow_checks() so that tests can see which path a plan takes.
inline std::atomic<std::uint64_t> conv_overflow_checks{0};

// What a plan fixes in the CudaOps it runs on (cuda_plan.cpp): its device and the kernel asked
// for (empty: the automatic choice, which for a fixed descriptor and device is fixed too).
struct PlanContext {
  int device = 0;
  std::string kernel;
};

class CudaOps final : public QuantizationOps {
 public:
  CudaOps();
  // The private CudaOps of one plan: the instance's probe, the plan's device and kernel, its
  // own scratch and parameter copies, and kernels queued on the device's legacy default stream
  // (docs/CUDA.md, "Plans"). Descriptors are validated when the plan is made, not on each run.
  CudaOps(const Probe& probe, const PlanContext& context);
  ~CudaOps() override;
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  std::string name() const override { return kBackendName; }
  std::string version() const override { return kPluginVersion; }
  Availability availability() const override { return probe_.availability; }
  std::vector<DeviceInfo> devices() const override;
  // The instance's: the first usable device; a plan's: the plan's device.
  int default_device() const override { return device_; }

  bool host_memory() const override { return false; }
  std::shared_ptr<Buffer> allocate(std::size_t bytes) override;
  void copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                      std::size_t bytes) override;
  void copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                    std::size_t bytes) override;
  void synchronize() override;

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

  std::shared_ptr<PackedWeights> pack_weights(const MatmulDesc& desc, const void* b) override;
  void matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             std::int32_t* c) override;
  void matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             const float* bias, void* y) override;
  void qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                             void* y) override;

  void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
            void* y) override;

  // Native plans (cuda_plan.cpp): device and kernel fixed, fixed weights uploaded and packed
  // once; a run reads nothing of this instance.
  std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request) override;

  QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                             std::uint8_t* y) override;
  QuantizationParams linear_forward(const LinearDesc& desc, const float* x, const std::int8_t* wq,
                                    const float* bias, std::int8_t* xq, float* y) override;
  void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                       const QuantizationParams& xq_params, const std::int8_t* wq, float* dx,
                       float* dw, float* db) override;

  // ---- for the op implementations (cuda_ops_*.cpp) ----
  // The B operand as the GEMM kernels read it, with what the epilogue needs about B.
  struct BOperand {
    const std::int8_t* data = nullptr;  // [N, ld] int8
    std::int64_t ld = 0;
    const std::int32_t* col_sums = nullptr;  // sums of each row of data, or null
    IntVec zb;                               // zb' (zero points in the int8 domain)
    bool zb_all_zero = true;
    FloatVec sb;
  };

 private:
  friend class CudaPlan;

  // What a plan computes once for its convolution (conv_constants, cuda_ops_conv.cpp) instead
  // of on every run: fixed weights in the implicit-GEMM kernel's form (the packed [O, kp] int8
  // codes and, when X has a zero point, their row sums), qlinear_conv's per-channel
  // multipliers, and whether fixed weights and a fixed int32 bias were proven never to take
  // acc + bias out of int32 (reference::conv_int32_cannot_overflow), so that a run launches no
  // overflow flag and does not wait for it.
  struct ConvConstants {
    const std::int8_t* packed = nullptr;  // null: packed per run (depthwise: W read as given)
    const std::int32_t* sums = nullptr;
    const float* multiplier = nullptr;               // float mode
    const std::int32_t* fixed_multiplier = nullptr;  // fixed-point mode, with fixed_shift
    const std::int32_t* fixed_shift = nullptr;
    bool bias_cannot_overflow = false;
    std::string kernel;                                  // conv_kernel's choice, fixed
    std::vector<std::unique_ptr<DeviceBuffer>> buffers;  // the device arrays above
  };
  // A plan's ConvConstants on this instance's device. device_w: the plan's device copy of fixed
  // weights (else null); host_w, host_bias: the fixed weights and int32 bias as the request
  // gave them (null when not fixed). Waits for the packing, so that its errors surface here.
  ConvConstants conv_constants(OpKind op, const ConvDesc& desc, const void* device_w,
                               const void* host_w, const void* host_bias);
  // conv() with what a plan computed before (`fixed`), or everything on this call (null). W
  // is read when `fixed` has no packed form, and to report an int32 overflow.
  void run_conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
                void* y, const ConvConstants* fixed);
  // The kernel conv() runs for `desc` (the forced one if it can, else the first candidate).
  std::string conv_kernel(OpKind op, const ConvDesc& desc) const;
  // Packs W [O, C/G, kh, kw] (device codes) into `packed` ([O, kp]) and, when `sums` is not
  // null, writes its row sums there; queued on `s`.
  void pack_conv_weights(const ConvDesc& desc, const void* w, std::int8_t* packed,
                         std::int32_t* sums, cudaStream_t s);

  // Checks the device is usable and the descriptor supported (throws otherwise), makes the
  // device current and the stream ready.
  void begin(const OpDesc& op);
  // The same for a matmul without copying its descriptor into an OpDesc (block-wise params
  // carry N * K / block pairs, and a copy per call costs more than a skinny GEMM).
  void begin(OpKind kind, const MatmulDesc& desc);
  void begin(OpKind kind, const QuantizeDesc& desc);  // quantize, dequantize
  cudaStream_t stream();
  DeviceFacts facts() const { return facts(device_); }
  DeviceFacts facts(int device) const;
  const DeviceProps& props() const { return probe_.devices.at(static_cast<std::size_t>(device_)); }

  // Device copies of host arrays, kept by content (ParamCache); `tag` (param_tag) finds one seen
  // before without comparing it.
  template <class T>
  const T* upload(std::span<const T> host, std::uint64_t tag = 0) {
    return params_.get(host, tag, device_, stream());
  }
  // Which array of a QuantizationParams: the tag is unique per (identity, array).
  enum class ParamArray : std::uint64_t { scales = 0, zero_points = 1, shifted_zero_points = 2 };
  static std::uint64_t param_tag(const QuantizationParams& p, ParamArray which) {
    return p.identity() == 0 ? 0 : p.identity() * 4 + static_cast<std::uint64_t>(which);
  }
  const float* device_scales(const QuantizationParams& p) {
    return upload(p.scales(), param_tag(p, ParamArray::scales));
  }
  const std::int32_t* device_zero_points(const QuantizationParams& p) {
    return upload(p.zero_points(), param_tag(p, ParamArray::zero_points));
  }

  // Matmul plumbing (cuda_ops_matmul.cpp).
  GemmKernel pick_gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool blockwise = false,
                       bool gemv = false);
  struct AOperand {
    const std::int8_t* data = nullptr;
    std::int64_t ld = 0;
    IntVec za;
    bool za_all_zero = true;
    FloatVec sa;
  };
  AOperand prepare_a(const MatmulDesc& desc, const void* a, std::int64_t kp);
  // The split-K workspace (and tile counters) `how` needs for an [m, n] output.
  void attach_split_workspace(GemmLaunch& how, std::int64_t m, std::int64_t n);
  BOperand prepare_b(const MatmulDesc& desc, const void* b, std::int64_t kp, Slot data_slot,
                     Slot sums_slot, bool need_sums);
  const CudaPackedWeights& packed_b(const MatmulDesc& desc, const PackedWeights& b);
  void run_matmul(OpKind kind, const MatmulDesc& desc, const void* a, const BOperand* packed,
                  const void* b, const float* bias, void* out);
  IntVec int_vec(const QuantizationParams& params, std::int32_t shift, bool& all_zero);
  FloatVec float_vec(const QuantizationParams& params);  // its scales

  // Block-wise B (cuda_ops_blockwise.cpp): matmul_integer / matmul_dequant, with B in its own
  // form (packed weights) or brought to it now (prepare_blockwise_b: its column sums only when
  // `need_col_sums`, i.e. A has a zero point).
  void run_blockwise(OpKind kind, const MatmulDesc& desc, const void* a, const BlockwiseB* packed,
                     const void* b, const float* bias, void* out);
  BlockwiseB prepare_blockwise_b(const MatmulDesc& desc, const void* b, bool need_col_sums);
  std::shared_ptr<PackedWeights> pack_blockwise(const MatmulDesc& desc, const void* b);

  Probe probe_;
  bool planned_ = false;  // a plan's CudaOps: validated at plan time, legacy default stream
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  Workspace workspace_;
  ParamCache params_;
  std::string forced_kernel_;  // a plan's kernel (PlanContext); empty: the automatic choice
  // Bit d: a plan was made for device d (synchronize() waits for those devices' plans too).
  std::atomic<std::uint64_t> plan_devices_{0};
};

}  // namespace qforge::cuda
