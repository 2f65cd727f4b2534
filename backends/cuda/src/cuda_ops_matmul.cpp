// matmul_integer, matmul_dequant, qlinear_matmul and their prepacked forms: operand
// preparation (gemm.h explains the int8 form and the zero-point compensation), kernel choice,
// epilogue set-up.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "check.h"
#include "cuda_ops.h"
#include "kernel_names.h"
#include "kernels/gemm_prep.h"
#include "packed_weights.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cuda {
namespace {

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }
std::int64_t round16(std::int64_t k) { return (k + 15) / 16 * 16; }
std::int32_t int8_shift(DType t) { return t == DType::uint8 ? 128 : 0; }

// How an int8/uint8/int4/uint4 operand is stored (gemm_prep.h).
SourceCodes codes_of(DType t) {
  SourceCodes c;
  c.bits = traits(t).bits;
  c.flip_sign = t == DType::uint8;
  c.is_signed = traits(t).is_signed;
  return c;
}

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

// QuantizationParams equality by bytes: a block-wise B carries N * K / block pairs, which
// operator== compares one float at a time (about 1 ns per pair) on every packed call.

std::size_t element_bytes(OpKind kind, const MatmulDesc& d) {
  switch (kind) {
    case OpKind::matmul_integer: return 4;
    case OpKind::matmul_dequant: return static_cast<std::size_t>(size_of(d.out_type));
    default: return 1;
  }
}

}  // namespace

IntVec CudaOps::int_vec(const QuantizationParams& params, std::int32_t shift, bool& all_zero) {
  const auto values = params.zero_points();
  all_zero =
      values.empty() || (params.min_zero_point() == shift && params.max_zero_point() == shift);
  // All zero: the epilogue never reads them (no compensation term), so nothing travels. Symmetric
  // per-channel weights took a 32 KB vector and a cache lookup per call here.
  if (all_zero) return {nullptr, 0, 1};
  if (values.size() == 1) return {nullptr, values[0] - shift, 1};
  const std::uint64_t tag = param_tag(params, ParamArray::shifted_zero_points);
  if (const void* seen = params_.find(tag, values.size_bytes()))
    return {static_cast<const std::int32_t*>(seen), 0, 1};
  std::vector<std::int32_t> shifted(values.begin(), values.end());
  for (auto& v : shifted) v -= shift;
  return {upload(std::span<const std::int32_t>(shifted), tag), 0, 1};
}

FloatVec CudaOps::float_vec(const QuantizationParams& params) {
  const auto values = params.scales();
  if (values.size() == 1) return {nullptr, values[0], 1};
  return {device_scales(params), 1.0f, 1};
}

CudaOps::AOperand CudaOps::prepare_a(const MatmulDesc& desc, const void* a, std::int64_t kp) {
  AOperand op;
  if (desc.a.dtype() == DType::int8 && desc.k == kp && aligned16(a)) {
    op.data = static_cast<const std::int8_t*>(a);
    op.ld = kp;
  } else {
    auto* dst = workspace_.get<std::int8_t>(Slot::a_operand, static_cast<std::size_t>(desc.m * kp),
                                            device_, stream());
    launch_to_s8_operand(static_cast<const std::uint8_t*>(a), codes_of(desc.a.dtype()), false,
                         desc.m, desc.k, desc.k, dst, kp, stream());
    op.data = dst;
    op.ld = kp;
  }
  op.za = int_vec(desc.a, int8_shift(desc.a.dtype()), op.za_all_zero);
  op.sa = float_vec(desc.a);
  return op;
}

CudaOps::BOperand CudaOps::prepare_b(const MatmulDesc& desc, const void* b, std::int64_t kp,
                                     Slot data_slot, Slot sums_slot, bool need_sums) {
  BOperand op;
  const bool kn = desc.b_layout == MatrixLayout::kn;
  if (desc.b.dtype() == DType::int8 && !kn && desc.k == kp && aligned16(b)) {
    op.data = static_cast<const std::int8_t*>(b);
  } else {
    auto* dst = workspace_.get<std::int8_t>(data_slot, static_cast<std::size_t>(desc.n * kp),
                                            device_, stream());
    launch_to_s8_operand(static_cast<const std::uint8_t*>(b), codes_of(desc.b.dtype()), kn, desc.n,
                         desc.k, kn ? desc.n : desc.k, dst, kp, stream());
    op.data = dst;
  }
  op.ld = kp;
  op.zb = int_vec(desc.b, int8_shift(desc.b.dtype()), op.zb_all_zero);
  op.sb = float_vec(desc.b);
  if (need_sums) {
    auto* sums = workspace_.get<std::int32_t>(sums_slot, static_cast<std::size_t>(desc.n), device_,
                                              stream());
    launch_row_sums(op.data, desc.n, op.ld, sums, stream());
    op.col_sums = sums;
  }
  return op;
}

void CudaOps::attach_split_workspace(GemmLaunch& how, std::int64_t m, std::int64_t n) {
  const SplitWorkspace need = split_workspace(how.kernel, m, n, how.splits);
  if (need.ints > 0)
    how.workspace = workspace_.get<std::int32_t>(Slot::split_k, static_cast<std::size_t>(need.ints),
                                                 device_, stream());
  if (need.counters > 0)
    how.counters = static_cast<int*>(workspace_.get_zeroed(
        Slot::split_counters, static_cast<std::size_t>(need.counters) * sizeof(int), device_,
        stream()));
}

void CudaOps::run_matmul(OpKind kind, const MatmulDesc& desc, const void* a, const BOperand* packed,
                         const void* b, const float* bias, void* out) {
  const std::int64_t M = desc.m, N = desc.n, K = desc.k, kp = round16(K);
  cudaStream_t s = stream();
  const GemmKernel kernel = pick_gemm(M, N, K);

  Epilogue ep;
  if (kind == OpKind::qlinear_matmul) {
    // The reference rejects a multiplier (sa * sb) / sy that is not finite, and a fixed-point
    // one that needs a shift above 31. Float products and quotients are monotonic, so the
    // largest scales give the largest multiplier: checking it checks them all.
    const float sa = *std::max_element(desc.a.scales().begin(), desc.a.scales().end());
    const float sb = *std::max_element(desc.b.scales().begin(), desc.b.scales().end());
    const float sy = desc.y->scale();
    const float largest = (sa * sb) / sy;
    if (!std::isfinite(largest))
      throw Error(ErrorCode::invalid_argument,
                  "cuda: qlinear_matmul: multiplier (sa * sb) / sy = (" + float_text(sa) + " * " +
                      float_text(sb) + ") / " + float_text(sy) +
                      " is not finite; expected scales whose ratio fits float32");
    if (desc.requant_mode == RequantMode::fixed_point) reference::quantize_multiplier(largest);
    ep.kind = EpilogueKind::requantize;
    ep.sy = sy;
    ep.zy = desc.y->zero_point();
    ep.qmin = desc.y->qmin();
    ep.qmax = desc.y->qmax();
    ep.fixed_point = desc.requant_mode == RequantMode::fixed_point;
  } else if (kind == OpKind::matmul_dequant) {
    ep.kind = EpilogueKind::float_out;
    ep.out_type = desc.out_type;
    ep.bias = desc.has_bias ? bias : nullptr;
  } else {
    ep.kind = EpilogueKind::int32_out;
  }
  if (M == 0 || N == 0) return;

  const AOperand A = prepare_a(desc, a, kp);
  BOperand B =
      packed ? *packed : prepare_b(desc, b, kp, Slot::b_operand, Slot::b_sums, !A.za_all_zero);
  ep.out = out;
  ep.ldc = N;
  ep.m = M;
  ep.n = N;
  ep.k = K;
  const std::size_t eb = element_bytes(kind, desc);
  ep.paired = reinterpret_cast<std::uintptr_t>(out) % (2 * eb) == 0 && N % 2 == 0;
  ep.za = A.za;
  ep.zb = B.zb;
  ep.sa = A.sa;
  ep.sb = B.sb;
  if (!B.zb_all_zero) {
    auto* sums =
        workspace_.get<std::int32_t>(Slot::a_sums, static_cast<std::size_t>(M), device_, s);
    launch_row_sums(A.data, M, A.ld, sums, s);
    ep.a_rowsum = sums;
  }
  if (!A.za_all_zero) ep.b_colsum = B.col_sums;

  GemmOperands op;
  op.a = A.data;
  op.b = B.data;
  op.m = M;
  op.n = N;
  op.k = K;
  op.kp = kp;
  op.lda = A.ld;
  op.ldb = B.ld;
  GemmLaunch how;
  how.kernel = kernel;
  how.device = device_;
  how.splits = choose_splits(kernel, M, N, kp, props().multiprocessors);
  attach_split_workspace(how, M, N);
  launch_gemm(how, op, ep, s);
}

namespace {
bool blockwise(const MatmulDesc& desc) { return desc.b.scheme().granularity == Granularity::block; }
}  // namespace

void CudaOps::matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                             std::int32_t* c) {
  begin(OpKind::matmul_integer, desc);
  if (blockwise(desc)) run_blockwise(OpKind::matmul_integer, desc, a, nullptr, b, nullptr, c);
  else run_matmul(OpKind::matmul_integer, desc, a, nullptr, b, nullptr, c);
}

void CudaOps::matmul_dequant(const MatmulDesc& desc, const void* a, const void* b,
                             const float* bias, void* y) {
  begin(OpKind::matmul_dequant, desc);
  if (blockwise(desc)) run_blockwise(OpKind::matmul_dequant, desc, a, nullptr, b, bias, y);
  else run_matmul(OpKind::matmul_dequant, desc, a, nullptr, b, bias, y);
}

void CudaOps::qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) {
  begin(OpKind::qlinear_matmul, desc);
  run_matmul(OpKind::qlinear_matmul, desc, a, nullptr, b, nullptr, y);
}

std::shared_ptr<PackedWeights> CudaOps::pack_weights(const MatmulDesc& desc, const void* b) {
  // Only B matters here: m and A's params are those of whatever call comes later. An int8
  // symmetric A gives the loosest int32 bound (every 8-bit A reaches |q - z| >= 128), so the
  // later call's own check is the one that can refuse K.
  MatmulDesc b_only = desc;
  b_only.m = 0;
  b_only.a = QuantizationParams::per_tensor_symmetric(DType::int8, 1.0f);
  b_only.y.reset();
  // Block-wise B: checked as for matmul_dequant, which bounds no K (the later call checks its own).
  try {
    begin(blockwise(desc) ? OpKind::matmul_dequant : OpKind::matmul_integer, b_only);
  } catch (const Error& e) {
    // The message names pack_weights, the call that was made.
    std::string why = e.what();
    if (why.rfind("cuda: ", 0) == 0) why.erase(0, 6);
    throw Error(e.code(), "cuda: pack_weights (checked as " + why + ")");
  }
  if (blockwise(desc)) return pack_blockwise(desc, b);
  cudaStream_t s = stream();
  auto packed = std::make_shared<CudaPackedWeights>(desc, device_);
  const std::int64_t kp = round16(desc.k);
  const bool kn = desc.b_layout == MatrixLayout::kn;
  BOperand& op = packed->operand;
  auto* data = packed->own<std::int8_t>(static_cast<std::size_t>(desc.n * kp));
  launch_to_s8_operand(static_cast<const std::uint8_t*>(b), codes_of(desc.b.dtype()), kn, desc.n,
                       desc.k, kn ? desc.n : desc.k, data, kp, s);
  op.data = data;
  op.ld = kp;
  auto* sums = packed->own<std::int32_t>(static_cast<std::size_t>(desc.n));
  launch_row_sums(data, desc.n, kp, sums, s);
  op.col_sums = sums;
  // Zero points and scales in buffers of the packed weights (the parameter cache may evict).
  const auto zps = desc.b.zero_points();
  const std::int32_t shift = int8_shift(desc.b.dtype());
  op.zb_all_zero = std::all_of(zps.begin(), zps.end(), [&](std::int32_t v) { return v == shift; });
  if (zps.size() == 1) {
    op.zb = {nullptr, zps[0] - shift, 1};
  } else {
    std::vector<std::int32_t> shifted(zps.begin(), zps.end());
    for (auto& v : shifted) v -= shift;
    auto* dz = packed->own<std::int32_t>(shifted.size());
    check(cudaMemcpyAsync(dz, shifted.data(), shifted.size() * sizeof(std::int32_t),
                          cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync(packed zero points)");
    op.zb = {dz, 0, 1};
  }
  const auto scales = desc.b.scales();
  if (scales.size() == 1) {
    op.sb = {nullptr, scales[0], 1};
  } else {
    auto* ds = packed->own<float>(scales.size());
    check(cudaMemcpyAsync(ds, scales.data(), scales.size_bytes(), cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync(packed scales)");
    op.sb = {ds, 1.0f, 1};
  }
  // The host vectors above must outlive the copies.
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return packed;
}

const CudaPackedWeights& CudaOps::packed_b(const MatmulDesc& desc, const PackedWeights& b) {
  const auto* w = dynamic_cast<const CudaPackedWeights*>(&b);
  if (!w || b.backend() != kBackendName)
    throw Error(ErrorCode::invalid_argument,
                "packed weights made by " + b.backend() +
                    " passed to cuda; expected weights packed by the same backend");
  if (w->device() != device_)
    throw Error(ErrorCode::invalid_argument,
                "cuda: packed weights live on device " + std::to_string(w->device()) +
                    " but device " + std::to_string(device_) +
                    " is selected; expected weights packed on the same device");
  // A plan packed its own B from its own descriptor: nothing to compare (for per-channel B the
  // params' comparison alone cost microseconds on every run).
  if (planned_) return *w;
  const MatmulDesc& p = w->desc();
  if (p.n != desc.n || p.k != desc.k || p.b_layout != desc.b_layout || !(p.b == desc.b))
    throw Error(ErrorCode::shape_mismatch,
                "packed weights for n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
                    " used with n=" + std::to_string(desc.n) + " k=" + std::to_string(desc.k) +
                    "; expected the same B shape, layout and params it was packed for");
  return *w;
}

void CudaOps::matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                    std::int32_t* c) {
  begin(OpKind::matmul_integer, desc);
  const CudaPackedWeights& w = packed_b(desc, b);
  if (blockwise(desc))
    run_blockwise(OpKind::matmul_integer, desc, a, &w.blockwise, nullptr, nullptr, c);
  else run_matmul(OpKind::matmul_integer, desc, a, &w.operand, nullptr, nullptr, c);
}

void CudaOps::matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                    const float* bias, void* y) {
  begin(OpKind::matmul_dequant, desc);
  const CudaPackedWeights& w = packed_b(desc, b);
  if (blockwise(desc))
    run_blockwise(OpKind::matmul_dequant, desc, a, &w.blockwise, nullptr, bias, y);
  else run_matmul(OpKind::matmul_dequant, desc, a, &w.operand, nullptr, bias, y);
}

void CudaOps::qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                    void* y) {
  begin(OpKind::qlinear_matmul, desc);
  run_matmul(OpKind::qlinear_matmul, desc, a, &packed_b(desc, b).operand, nullptr, nullptr, y);
}

}  // namespace qforge::cuda
