// The onednn backend: QuantizationOps over oneDNN 2.6 (Debian's libdnnl) on the host CPU.
//
//   - int8 matmuls run dnnl::matmul (u8/s8 x s8, runtime zero points), primitives cached per
//     shape, dtypes and attributes (matmul_engine.h); int32 results are exact and the
//     dequantizing/requantizing epilogues use the reference's arithmetic (epilogue.h), or, for
//     matmul_dequant, oneDNN's own output scales and bias (kernel dnnl_matmul_*_f32);
//   - pack_weights keeps B in oneDNN's blocked format for repeated calls (packed_weights.h);
//   - quantize, requantize and DynamicQuantizeLinear are loops with the reference's formulas;
//     dequantize goes through a oneDNN reorder where that is bit-exact;
//   - linear_backward is two float32 dnnl::matmul calls;
//   - convolutions run dnnl::convolution_forward with int32 output, exact (conv_weights.h), and
//     the plugin's epilogue (conv_epilogue.h).
// support_rules.h says what is claimed; docs/ONEDNN.md explains why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conv_engine.h"
#include "matmul_engine.h"
#include "qforge/ops.h"
#include "reorder_dequantize.h"
#include "support_rules.h"

namespace qforge::onednn {

inline constexpr const char* kPluginName = "onednn";
inline constexpr const char* kPluginVersion = "0.2.0";

class ConvWeights;
class OnednnPackedWeights;
class ThreadScope;

class OnednnOps final : public QuantizationOps {
 public:
  OnednnOps();

  std::string name() const override { return kPluginName; }
  std::string version() const override { return kPluginVersion; }
  Availability availability() const override;
  std::vector<DeviceInfo> devices() const override;
  bool host_memory() const override { return true; }
  // "threads" = N (> 0) or 0 for OpenMP's default (OMP_NUM_THREADS, else the cores).
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
  void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
            void* y) override;

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

  // A plan (onednn_plan.cpp): concurrent; see there.
  std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request) override;

 private:
  friend class OnednnPlan;
  // A plan's worker: the ops' state (engine streams, primitive caches, scratch) for one run at a
  // time, on the plan's engine with its thread count.
  OnednnOps(const Facts& facts, const dnnl::engine& engine, int threads);
  // One run of a plan of `op` with `kernel`, in op_operands() order; the descriptor was checked
  // when the plan was made. `packed`: the plan's fixed matmul B (input 1 is then not read);
  // `conv_weights`: a convolution's fixed W prepared (input 1 is read only to report an
  // overflow).
  void run_planned(const OpDesc& op, const std::string& kernel, const void* const* in,
                   void* const* out, const OnednnPackedWeights* packed,
                   const ConvWeights* conv_weights);

  // B of a matmul: the caller's buffer, or weights this backend packed.
  struct Weights {
    const void* b = nullptr;
    const OnednnPackedWeights* packed = nullptr;
  };

  // Throws unsupported with supports()'s reason when it says no; returns the kernel the
  // per-call op runs (supports()' first). Takes the descriptor by reference: an OpDesc would
  // copy its params on every call.
  template <class Desc>
  std::string begin(OpKind op, const Desc& desc);
  // The int32 C = (A - za)(B - zb), exact, into c [M, N].
  void matmul_s32(const MatmulDesc& d, const void* a, const Weights& w, std::int32_t* c,
                  const ThreadScope& threads, const std::string& kernel);
  // matmul_dequant (also linear_forward's matmul) with the kernel begin() chose.
  void dequant(const MatmulDesc& d, const void* a, const Weights& w, const float* bias, void* y,
               const std::string& kernel);
  void fused_dequant(const MatmulDesc& d, const void* a, const Weights& w, const float* bias,
                     float* y, const ThreadScope& threads, const std::string& kernel);
  void qlinear(const MatmulDesc& d, const void* a, const Weights& w, void* y,
               const std::string& kernel);
  void integer(const MatmulDesc& d, const void* a, const Weights& w, std::int32_t* c,
               const std::string& kernel);
  // A convolution after its checks, with W prepared (w: the caller's W, for the reference's
  // overflow report).
  const void* pad_with_zero_point(const ConvDesc& d, const void* x_nhwc);
  void run_conv(OpKind op, const ConvDesc& d, const void* x, const ConvWeights& cw, const void* w,
                const void* bias, void* y, const std::string& kernel);
  void dequantize_with(const QuantizeDesc& desc, const void* q, float* x,
                       const std::string& kernel);
  // linear_forward / linear_backward after their checks; sx: the activation scale.
  float forward(const LinearDesc& desc, const float* x, const std::int8_t* wq, const float* bias,
                std::int8_t* xq, float* y, const std::string& kernel);
  void backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq, float sx,
                const std::int8_t* wq, float* dx, float* dw, float* db, const std::string& kernel);

  Facts facts_;
  MatmulEngine engine_;
  ReorderDequantizer reorder_;
  ConvEngine conv_engine_;
  int threads_ = 0;  // 0: OpenMP's default
  // Reused between calls so that repeated matmuls do not page in fresh memory.
  std::vector<std::int32_t> c_scratch_;
  std::vector<std::uint8_t> a_scratch_;
  std::vector<std::int8_t> b_scratch_;
  std::vector<std::uint8_t> x_scratch_;  // a convolution's NCHW input as NHWC
  std::vector<std::uint8_t> x_padded_;   // a convolution's NHWC input padded with its zero point
};

}  // namespace qforge::onednn
