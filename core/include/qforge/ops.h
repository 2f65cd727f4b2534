// QuantizationOps: the interface every backend plugin implements.
//
// A backend instance serves one device (CPU backends: the host). All data pointers passed to
// the op methods live in that device's memory: host memory when host_memory() is true,
// otherwise memory from allocate(). Params, zero points, scales and shapes always travel in
// the descriptors, on the host. Ops are synchronous from the caller's view: when a call
// returns, its outputs are written (GPU backends synchronise or the next copy_to_host does;
// see each backend's docs).
//
// Capability is per op and per device: supports() answers for a whole descriptor (dtype x scheme
// x layout x shape) on one of devices() and, when it says yes, lists the kernel variants that
// can run it there. An op called with a descriptor that supports() rejects throws
// ErrorCode::unsupported with the same reason.
//
// The instance holds no choice of device or kernel. The per-call ops run the backend's own
// kernel choice on its default device (default_device(): the first one unless the backend
// documents another); running a given kernel, or on another device, is a plan
// (plan(op, PlanRequest{device, kernel})), which names the kernel it runs (Plan::kernel()).
//
// Threading: the per-call ops may be used from one thread at a time per instance. Plans
// (plan()) carry their own rules (plan.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "qforge/export.h"
#include "qforge/op_desc.h"
#include "qforge/plan.h"
#include "qforge/tensor.h"

namespace qforge {

// Whether the backend can run on this machine, and if not, why ("no CUDA device",
// "CPU lacks AVX2"). score orders usable backends when nothing has been measured (0 = unusable).
struct Availability {
  bool usable = false;
  int score = 0;
  std::string reason;
};

struct DeviceInfo {
  std::string name;                               // "Intel(R) Xeon ...", "NVIDIA H100 80GB HBM3"
  std::string kind;                               // "cpu", "gpu"
  std::uint64_t memory_bytes = 0;                 // 0 when unknown
  std::map<std::string, std::string> properties;  // free-form facts worth printing
};

struct Support {
  bool supported = false;
  std::string reason;                // why not, when !supported
  std::vector<std::string> kernels;  // kernel variants able to run it, best guess first

  static Support yes(std::vector<std::string> kernels) { return {true, {}, std::move(kernels)}; }
  static Support no(std::string why) { return {false, std::move(why), {}}; }
};

// Weights (the B operand of a matmul) packed once into a backend's preferred layout and reused
// across calls, with whatever the epilogue needs precomputed (column sums for zero-point
// compensation, ...). Made by QuantizationOps::pack_weights of one backend and usable only by
// that backend instance. desc() is the descriptor it was packed for; m is ignored, so one
// packed B serves every M.
class QFORGE_API PackedWeights {
 public:
  virtual ~PackedWeights();
  virtual const MatmulDesc& desc() const noexcept = 0;
  virtual std::string backend() const = 0;         // name() of the backend that packed it
  virtual std::size_t bytes() const noexcept = 0;  // memory it holds
};

class QFORGE_API QuantizationOps {
 public:
  virtual ~QuantizationOps();

  // ---- identity and devices ----
  virtual std::string name() const = 0;     // plugin name, e.g. "cpu_scalar"
  virtual std::string version() const = 0;  // plugin version
  virtual Availability availability() const = 0;
  virtual std::vector<DeviceInfo> devices() const = 0;
  // The device the per-call ops run on, an index into devices(); fixed for the life of the
  // instance.
  virtual int default_device() const { return 0; }

  // ---- memory ----
  virtual bool host_memory() const = 0;  // op pointers are host pointers
  virtual std::shared_ptr<Buffer> allocate(std::size_t bytes);
  virtual void copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                              std::size_t bytes);
  virtual void copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                            std::size_t bytes);
  virtual void synchronize() {}

  // ---- options ----
  // Backend-specific knobs by name, e.g. "threads" = "4", "isa" = "avx2,avx512_vnni".
  // Returns false for a key this backend does not know; throws invalid_argument for a bad value.
  virtual bool set_option(std::string_view key, std::string_view value);

  // ---- capability ----
  // Whether `op` can run on devices()[device], and the kernels that can run it there (an index
  // out of range: no, with the reason). Backends with one device may ignore `device` beyond that.
  virtual Support supports(const OpDesc& op, int device) const = 0;
  // The same on default_device(), where the per-call ops run. A backend that overrides the
  // virtual one brings this into scope with `using QuantizationOps::supports;`.
  Support supports(const OpDesc& op) const { return supports(op, default_device()); }

  // ---- ops (see reference.h for the exact meaning of each) ----
  virtual void quantize(const QuantizeDesc& desc, const void* x, void* q) = 0;
  virtual void dequantize(const QuantizeDesc& desc, const void* q, float* x) = 0;
  virtual void requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) = 0;
  virtual void matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                              std::int32_t* c) = 0;
  virtual void matmul_dequant(const MatmulDesc& desc, const void* a, const void* b,
                              const float* bias, void* y) = 0;
  virtual void qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) = 0;
  // qlinear_matmul with its int32 bias [N] at scale sa * sb[n] (desc.has_bias). The default
  // throws unsupported: a backend that does not implement it refuses qlinear_matmul with a bias
  // in supports(). desc.activation, which needs no operand, reaches qlinear_matmul too: a
  // backend that does not apply it refuses it there.
  virtual void qlinear_matmul_bias(const MatmulDesc& desc, const void* a, const void* b,
                                   const std::int32_t* bias, void* y);
  // Prepacked weights. The default keeps a copy of B in a buffer of this backend (host-memory
  // backends only) and the *_packed ops forward to the plain ones; fast backends override all
  // four. b has desc.b_shape() elements.
  virtual std::shared_ptr<PackedWeights> pack_weights(const MatmulDesc& desc, const void* b);
  virtual void matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                     std::int32_t* c);
  virtual void matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                     const float* bias, void* y);
  virtual void qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                     void* y);

  // Convolution: conv_integer, qlinear_conv or conv_dequant by `op` (reference.h). x, w, bias
  // and y as op_operands() lists them: bias is float32 or int32 [O] as desc.bias says (null
  // when none), y is int32, int8/uint8 or float32. The default throws unsupported: a backend
  // that does not implement it refuses the three kinds in supports(), and overrides both to
  // claim them.
  virtual void conv(OpKind op, const ConvDesc& desc, const void* x, const void* w, const void* bias,
                    void* y);
  // Weight-only matmul (matmul_weight_only): a float32 [M, K], b the codes of B, bias float32 [N]
  // or null, y float32 [M, N]. The default throws unsupported, as conv's does.
  virtual void matmul_weight_only(const MatmulDesc& desc, const float* a, const void* b,
                                  const float* bias, float* y);

  // ---- plans (plan.h) ----
  // An immutable plan of `op` on request.device with request.kernel, the request's weights
  // fixed. Throws unsupported (with supports()' reason) for a descriptor, kernel or device this
  // backend refuses. The default runs the per-call ops above under a lock of this instance
  // (PlanConcurrency::serialized), keeps fixed weights in this backend's memory and a fixed
  // matmul B as pack_weights() packed it. Since the per-call ops run one kernel on one device,
  // the default serves only default_device() and the kernel they choose (supports()' first);
  // a backend with other kernels or devices to offer overrides it.
  virtual std::shared_ptr<const Plan> plan(const OpDesc& op, const PlanRequest& request);

  // Writes y (uint8) and returns the params it computed.
  virtual QuantizationParams dynamic_quantize_linear(const DynamicQuantizeDesc& desc,
                                                     const float* x, std::uint8_t* y) = 0;
  virtual QuantizationParams linear_forward(const LinearDesc& desc, const float* x,
                                            const std::int8_t* wq, const float* bias,
                                            std::int8_t* xq, float* y) = 0;
  virtual void linear_backward(const LinearDesc& desc, const float* dy, const std::int8_t* xq,
                               const QuantizationParams& xq_params, const std::int8_t* wq,
                               float* dx, float* dw, float* db) = 0;

 private:
  friend class CallPlan;
  std::mutex call_plan_mutex_;  // serialises the runs of the default plans of this instance
};

}  // namespace qforge
