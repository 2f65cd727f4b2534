// Identity, devices, memory and capability of the CUDA backend. The ops live in
// cuda_ops_quantize.cpp, cuda_ops_matmul.cpp and cuda_ops_linear.cpp.
#include "cuda_ops.h"

#include <algorithm>

#include "check.h"
#include "device_buffer.h"
#include "kernel_names.h"
#include "kernels/gemm_mma.cuh"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cuda {
namespace {

void check_range(const Buffer& buffer, std::size_t offset, std::size_t bytes, const char* what) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(offset) + " of a " + std::to_string(buffer.size()) +
                    "-byte buffer; expected the range to lie inside the buffer");
}

void check_ours(const Buffer& buffer, const char* what) {
  if (buffer.device().backend != kBackendName)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": the buffer lives on " + buffer.device().backend +
                    "; expected a buffer allocated by the cuda backend");
}

}  // namespace

CudaOps::CudaOps() : probe_(probe_devices()) {
  // Serve the first device that can run the kernels.
  for (const auto& d : probe_.devices)
    if (d.usable()) {
      device_ = d.index;
      break;
    }
}

CudaOps::CudaOps(const Probe& probe, const PlanContext& context)
    : probe_(probe), planned_(true), device_(context.device), forced_kernel_(context.kernel) {}

CudaOps::~CudaOps() {
  // Buffers handed out stay valid (they free themselves); only the stream and scratch go.
  workspace_.clear();
  params_.clear();
  if (stream_) cudaStreamDestroy(stream_);
}

std::vector<DeviceInfo> CudaOps::devices() const {
  std::vector<DeviceInfo> out;
  for (const auto& d : probe_.devices) out.push_back(to_device_info(d, probe_));
  return out;
}

cudaStream_t CudaOps::stream() {
  if (!probe_.availability.usable)
    throw Error(ErrorCode::unavailable, "cuda: " + probe_.availability.reason);
  // cudaSetDevice is per host thread: every op makes its device current again.
  check(cudaSetDevice(device_), "cudaSetDevice");
  // A plan queues on the legacy default stream: ordered after the caller's earlier work there
  // and on every blocking stream (the instance's, other plans'), and before later work there.
  if (planned_) return cudaStreamLegacy;
  if (!stream_) check(cudaStreamCreate(&stream_), "cudaStreamCreate");
  return stream_;
}

DeviceFacts CudaOps::facts(int device) const {
  if (!probe_.availability.usable) return {};
  const DeviceProps& p = probe_.devices.at(static_cast<std::size_t>(device));
  return {p.cc, p.multiprocessors, wgmma_available(device)};
}

std::shared_ptr<Buffer> CudaOps::allocate(std::size_t bytes) {
  stream();  // usable device, current
  return std::make_shared<DeviceBuffer>(bytes, device_);
}

void CudaOps::copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                             std::size_t bytes) {
  check_range(dst, dst_offset, bytes, "copy_to_device");
  check_ours(dst, "copy_to_device");
  if (bytes == 0) return;
  cudaStream_t s = stream();
  check(cudaMemcpyAsync(static_cast<std::byte*>(dst.data()) + dst_offset, src, bytes,
                        cudaMemcpyHostToDevice, s),
        "cudaMemcpyAsync(host to device)");
  // The caller may reuse src as soon as this returns.
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

void CudaOps::copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                           std::size_t bytes) {
  check_range(src, src_offset, bytes, "copy_to_host");
  check_ours(src, "copy_to_host");
  if (bytes == 0) return;
  cudaStream_t s = stream();
  auto& buffer = const_cast<Buffer&>(src);
  check(cudaMemcpyAsync(dst, static_cast<const std::byte*>(buffer.data()) + src_offset, bytes,
                        cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync(device to host)");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

void CudaOps::synchronize() {
  if (stream_) {
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  // Plans made from this instance queue on their devices' legacy default streams: waiting for
  // the instance's work waits for theirs too.
  const std::uint64_t plans = plan_devices_.load(std::memory_order_relaxed);
  for (int d = 0; d < 64; ++d)
    if ((plans >> d) & 1u) {
      check(cudaSetDevice(d), "cudaSetDevice");
      check(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize(legacy stream)");
    }
}

Support CudaOps::supports(const OpDesc& op, int device) const {
  if (!probe_.availability.usable) return Support::no("cuda: " + probe_.availability.reason);
  const auto it = std::find_if(probe_.devices.begin(), probe_.devices.end(),
                               [&](const DeviceProps& d) { return d.index == device; });
  if (it == probe_.devices.end())
    return Support::no("cuda: device " + std::to_string(device) + "; expected 0 to " +
                       std::to_string(static_cast<long long>(probe_.devices.size()) - 1));
  if (!it->usable())
    return Support::no("cuda: device " + std::to_string(device) + " (" + it->name +
                       ") has compute capability " + std::to_string(it->cc / 10) + "." +
                       std::to_string(it->cc % 10) + "; expected " +
                       std::to_string(kMinComputeCapability / 10) + "." +
                       std::to_string(kMinComputeCapability % 10) + " or newer");
  if (const auto* m = std::get_if<MatmulDesc>(&op.desc); m && m->a_params_at_run) {
    // A's params given at run: the flag's own rules (matmul_dequant, per-tensor A), then cuda's
    // for the zero point farthest from A's codes, since any run may bring it (the int32-safe K).
    // Nothing a plan keeps depends on A's params: packed B holds B's codes, column sums, zero
    // points and scales; A's scale and zero point reach the epilogue as kernel arguments.
    try {
      reference::check_descriptor(op);
    } catch (const Error& e) {
      return Support::no(std::string("cuda: ") + e.what());
    }
    return support_for(OpDesc{op.op, reference::a_params_at_run_bound(*m)}, facts(device));
  }
  return support_for(op, facts(device));
}

void CudaOps::begin(OpKind kind, const MatmulDesc& desc) {
  stream();
  if (planned_) return;  // validated when the plan was made
  if (desc.a_params_at_run)
    throw Error(ErrorCode::invalid_argument,
                "cuda: " + std::string(to_string(kind)) +
                    ": A's params given at run (a_params_at_run) on a per-call op, which has no "
                    "place for them; expected a plan (its runs take a_scale and a_zero_point)");
  if (auto r = refusal_for_matmul(kind, desc))
    throw Error(r->invalid ? ErrorCode::invalid_argument : ErrorCode::unsupported,
                "cuda: " + std::string(to_string(kind)) + ": " + r->reason);
}

void CudaOps::begin(OpKind kind, const QuantizeDesc& desc) {
  stream();
  if (planned_) return;  // validated when the plan was made
  if (auto r = refusal_for_quantize(desc))
    throw Error(r->invalid ? ErrorCode::invalid_argument : ErrorCode::unsupported,
                "cuda: " + std::string(to_string(kind)) + ": " + r->reason);
}

void CudaOps::begin(const OpDesc& op) {
  stream();
  if (planned_) return;  // validated when the plan was made
  if (auto r = refusal_for(op))
    throw Error(r->invalid ? ErrorCode::invalid_argument : ErrorCode::unsupported,
                "cuda: " + std::string(to_string(op.op)) + ": " + r->reason);
}

GemmKernel CudaOps::pick_gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool blockwise,
                              bool gemv) {
  const auto candidates = gemm_candidates(m, n, k, facts(), blockwise, gemv);
  if (auto forced = parse_gemm_kernel(forced_kernel_)) {
    if (std::find(candidates.begin(), candidates.end(), *forced) == candidates.end())
      throw Error(ErrorCode::unsupported,
                  "cuda: kernel " + forced_kernel_ + " cannot run on " + props().name);
    return *forced;
  }
  if (candidates.empty())
    throw Error(ErrorCode::unsupported, "cuda: no GEMM kernel for " + props().name);
  return candidates.front();
}

}  // namespace qforge::cuda
