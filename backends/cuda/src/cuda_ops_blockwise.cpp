// matmul_integer and matmul_dequant with block-wise B (kernels/gemm_blockwise.h): B brought to
// the kernels' form (4-bit rows padded to whole 32-code groups only when K or the pointer needs
// it; never expanded to int8), the per-block sums that the zero points need, kernel choice,
// split-K, and packing.
#include <algorithm>
#include <cstdint>

#include "check.h"
#include "cuda_ops.h"
#include "kernel_names.h"
#include "kernels/gemm_prep.h"
#include "packed_weights.h"
#include "qforge/error.h"

namespace qforge::cuda {
namespace {

bool aligned(const void* p, std::uintptr_t to) {
  return reinterpret_cast<std::uintptr_t>(p) % to == 0;
}
std::int64_t round_up(std::int64_t v, std::int64_t m) { return (v + m - 1) / m * m; }

// B's layout fields (no data yet).
BlockwiseB layout_of(const MatmulDesc& d) {
  BlockwiseB op;
  op.bits = traits(d.b.dtype()).bits;
  op.is_signed = traits(d.b.dtype()).is_signed;
  op.block = d.b.scheme().block_size;
  op.blocks = (d.k + op.block - 1) / op.block;
  op.zero_point0 = d.b.zero_point(0);
  op.shift = d.b.dtype() == DType::uint8 ? 128 : 0;
  return op;
}

// Bytes per row of B in the kernels' form when it has to be copied: 4-bit rows padded to whole
// 32-code groups (16-byte aligned), 8-bit rows to a multiple of 16.
std::int64_t padded_ld(const MatmulDesc& d) {
  return traits(d.b.dtype()).bits == 4 ? round_up(d.k, 32) / 2 : round_up(d.k, 16);
}

// The caller's B can be read in place: rows already 16-byte aligned, nothing to convert.
bool b_in_place(const MatmulDesc& d, const void* b) {
  if (!aligned(b, 16)) return false;
  if (traits(d.b.dtype()).bits == 4) return d.k % 32 == 0;
  return d.b.dtype() == DType::int8 && d.k % 16 == 0;
}

SourceCodes codes_of(DType t) {
  SourceCodes c;
  c.bits = traits(t).bits;
  c.flip_sign = t == DType::uint8;
  c.is_signed = traits(t).is_signed;
  return c;
}

// Writes B's codes in the kernels' form to dst ([n, padded_ld] bytes).
void convert_b(const MatmulDesc& d, const void* b, const BlockwiseB& op, std::uint8_t* dst,
               std::int64_t ld, cudaStream_t s) {
  const auto* src = static_cast<const std::uint8_t*>(b);
  if (op.bits == 4) launch_repack_4bit(src, d.n, d.k, op, dst, ld, s);
  else
    launch_to_s8_operand(src, codes_of(d.b.dtype()), false, d.n, d.k, d.k,
                         reinterpret_cast<std::int8_t*>(dst), ld, s);
}

}  // namespace

BlockwiseB CudaOps::prepare_blockwise_b(const MatmulDesc& desc, const void* b, bool need_col_sums) {
  cudaStream_t s = stream();
  const std::int64_t N = desc.n, K = desc.k;
  BlockwiseB op = layout_of(desc);
  op.scales = device_scales(desc.b);
  const bool affine = desc.b.scheme().mapping == Mapping::affine;
  if (affine) op.zero_points = device_zero_points(desc.b);
  if (b_in_place(desc, b)) {
    op.codes = static_cast<const std::uint8_t*>(b);
    op.ld = op.bits == 4 ? K / 2 : K;
  } else {
    op.ld = padded_ld(desc);
    auto* dst = workspace_.get<std::uint8_t>(Slot::b_operand, static_cast<std::size_t>(N * op.ld),
                                             device_, s);
    convert_b(desc, b, op, dst, op.ld, s);
    op.codes = dst;
  }
  // 8-bit B with zero points keeps raw codes: its zero points act through -zb' and A's row sums.
  const bool zb8 = op.bits == 8 && affine;
  if (need_col_sums || zb8) {
    const auto count = static_cast<std::size_t>(N * op.blocks);
    float* sums =
        need_col_sums ? workspace_.get<float>(Slot::bw_col_sums, count, device_, s) : nullptr;
    std::int32_t* total =
        need_col_sums ? workspace_.get<std::int32_t>(Slot::bw_col_sums_total,
                                                     static_cast<std::size_t>(N), device_, s)
                      : nullptr;
    float* nzb = zb8 ? workspace_.get<float>(Slot::bw_neg_zero_points, count, device_, s) : nullptr;
    launch_blockwise_b_sums(op, N, K, sums, total, nzb, s);
    op.col_sums = sums;
    op.col_sums_total = total;
    op.neg_zero_points = nzb;
  }
  return op;
}

void CudaOps::run_blockwise(OpKind kind, const MatmulDesc& desc, const void* a,
                            const BlockwiseB* packed, const void* b, const float* bias, void* out) {
  const std::int64_t M = desc.m, N = desc.n, K = desc.k;
  cudaStream_t s = stream();
  const GemmKernel kernel =
      pick_gemm(M, N, K, /*blockwise=*/true, blockwise_gemv_takes(kind, desc));
  const bool gemv = kernel == GemmKernel::qbw_gemv;
  if (M == 0 || N == 0) return;

  const AOperand A = prepare_a(desc, a, round_up(K, 16));
  // The GEMV sums the centred codes itself: no column sums.
  const BlockwiseB B = packed ? *packed : prepare_blockwise_b(desc, b, !A.za_all_zero && !gemv);
  BlockwiseGemm p;
  p.a = A.data;
  p.lda = A.ld;
  p.b = B;
  p.m = M;
  p.n = N;
  p.k = K;
  p.groups = (K + 31) / 32;
  p.sa = A.sa;
  p.za = A.za;
  p.a_zero_points = !A.za_all_zero;
  if (B.neg_zero_points) {
    auto* sums = workspace_.get<float>(Slot::bw_row_sums, static_cast<std::size_t>(M * B.blocks),
                                       device_, s);
    launch_block_row_sums(A.data, M, A.ld, K, B.block, B.blocks, sums, s);
    p.row_sums = sums;
  }
  if (gemv) {
    p.groups_per_split = static_cast<int>(std::max<std::int64_t>(1, p.groups));
    p.out = out;
    p.ldc = N;
    p.out_type = desc.out_type;
    p.bias = desc.has_bias ? bias : nullptr;
    launch_blockwise_gemv(p, s);
    return;
  }
  p.groups_per_split =
      blockwise_groups_per_split(kernel, M, N, p.groups, B.block, props().multiprocessors);
  const std::int64_t splits = (p.groups + p.groups_per_split - 1) / p.groups_per_split;

  std::int32_t* int_workspace = nullptr;
  if (kind == OpKind::matmul_integer) {
    p.int_out = true;
    p.ep.kind = EpilogueKind::int32_out;
    p.ep.out = out;
    p.ep.ldc = N;
    p.ep.m = M;
    p.ep.n = N;
    p.ep.k = K;
    p.ep.paired = aligned(out, 8) && N % 2 == 0;
    p.ep.za = A.za;
    // C = raw - za' * (column sum of the centred B); B's own zero points are already gone.
    if (!A.za_all_zero) p.ep.b_colsum = B.col_sums_total;
    if (splits > 1)
      int_workspace =
          workspace_.get<std::int32_t>(Slot::split_k, static_cast<std::size_t>(M * N), device_, s);
  } else {
    p.out = out;
    p.ldc = N;
    p.out_type = desc.out_type;
    p.bias = desc.has_bias ? bias : nullptr;
    p.paired = aligned(out, 2 * static_cast<std::uintptr_t>(size_of(desc.out_type))) && N % 2 == 0;
    if (splits > 1) {
      const std::int64_t tiles = ((M + blockwise_tile_m(kernel) - 1) / blockwise_tile_m(kernel)) *
                                 ((N + blockwise_tile_n(kernel) - 1) / blockwise_tile_n(kernel));
      p.partials = workspace_.get<float>(Slot::bw_partials,
                                         static_cast<std::size_t>(splits * M * N), device_, s);
      p.counters = static_cast<int*>(workspace_.get_zeroed(
          Slot::bw_counters, static_cast<std::size_t>(tiles) * sizeof(int), device_, s));
    }
  }
  launch_blockwise_gemm(kernel, p, int_workspace, device_, s);
}

std::shared_ptr<PackedWeights> CudaOps::pack_blockwise(const MatmulDesc& desc, const void* b) {
  cudaStream_t s = stream();
  const std::int64_t N = desc.n, K = desc.k;
  auto packed = std::make_shared<CudaPackedWeights>(desc, device_);
  BlockwiseB op = layout_of(desc);
  // Scales and zero points in buffers of the packed weights (the parameter cache may evict).
  const auto scales = desc.b.scales();
  float* ds = packed->own<float>(scales.size());
  check(cudaMemcpyAsync(ds, scales.data(), scales.size_bytes(), cudaMemcpyHostToDevice, s),
        "cudaMemcpyAsync(packed block scales)");
  op.scales = ds;
  const bool affine = desc.b.scheme().mapping == Mapping::affine;
  if (affine) {
    const auto zps = desc.b.zero_points();
    std::int32_t* dz = packed->own<std::int32_t>(zps.size());
    check(cudaMemcpyAsync(dz, zps.data(), zps.size_bytes(), cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync(packed block zero points)");
    op.zero_points = dz;
  }
  // Always a copy in the padded form: the caller's B may go away.
  op.ld = padded_ld(desc);
  std::uint8_t* codes = packed->own<std::uint8_t>(static_cast<std::size_t>(N * op.ld));
  convert_b(desc, b, op, codes, op.ld, s);
  op.codes = codes;
  // Column sums for calls whose A has a zero point; -zb' for 8-bit B with zero points.
  const auto count = static_cast<std::size_t>(N * op.blocks);
  float* sums = packed->own<float>(count);
  std::int32_t* total = packed->own<std::int32_t>(static_cast<std::size_t>(N));
  float* nzb = op.bits == 8 && affine ? packed->own<float>(count) : nullptr;
  launch_blockwise_b_sums(op, N, K, sums, total, nzb, s);
  op.col_sums = sums;
  op.col_sums_total = total;
  op.neg_zero_points = nzb;
  packed->blockwise = op;
  // The host arrays of `desc` must outlive the copies.
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return packed;
}

}  // namespace qforge::cuda
