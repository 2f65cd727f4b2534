// matmul_integer, matmul_dequant and qlinear_matmul: pack A (and B unless prepacked) into
// signed [rows, Kp] bytes with row sums (pack_rows.comp / pack_cols.comp), then one GEMM kernel
// with the fused epilogue (gemm_common.glsl), split into dispatches that fit the limits.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "buffers.h"
#include "ops_internal.h"
#include "pipelines.h"
#include "qforge/error.h"
#include "windows.h"

namespace qforge::vulkan {
namespace {

constexpr std::uint64_t kKAlign = 128;  // Kp: K rounded up to the largest K step of a kernel

std::uint64_t padded_k(std::int64_t k) {
  return (static_cast<std::uint64_t>(k) + kKAlign - 1) / kKAlign * kKAlign;
}

// uint8 operands become int8 ones (q ^ 0x80 = q - 128) with the zero point moved by 128.
std::int32_t shift_of(DType t) { return t == DType::uint8 ? 128 : 0; }
std::uint32_t flip_of(DType t) { return t == DType::uint8 ? 0x80808080u : 0u; }

struct PackPush {
  std::uint32_t rows, k, kp_words, src_lead, dst_lead, sums_lead, flip, unused;
};
struct PackColsPush {
  std::uint32_t cols, k, kp_words, src_lead, dst_lead, sums_lead, flip, src_stride, k_base, w_end;
};

// Packs `rows` rows of k bytes (row-major, at r) into dst [rows, kp] and their sums.
void record_pack_rows(Context& ctx, Commands& cmd, const Resolved& r, std::uint64_t rows,
                      std::uint64_t k, std::uint64_t kp, std::uint32_t flip, DeviceBuffer& dst,
                      DeviceBuffer& sums) {
  if (rows == 0) return;
  const DeviceCaps& caps = ctx.caps();
  const std::uint64_t cap = window_capacity(caps);
  const std::uint64_t row_bytes = std::max<std::uint64_t>({k, kp, 4});
  std::uint64_t chunk = std::min<std::uint64_t>(rows, cap / row_bytes);
  chunk = std::min<std::uint64_t>(chunk, (max_linear_groups(caps) - 1) * 4);
  chunk = std::max<std::uint64_t>(chunk, 1);
  const Pipeline& pipe = ctx.pipelines().get("pack_rows", 3, sizeof(PackPush));
  for (std::uint64_t r0 = 0; r0 < rows; r0 += chunk) {
    const std::uint64_t n = std::min(chunk, rows - r0);
    const Window ws = window(caps, *r.buffer, r.offset + r0 * k, n * k);
    const Window wd = window(caps, dst, r0 * kp, n * kp);
    const Window wsum = window(caps, sums, r0 * 4, n * 4);
    PackPush push{static_cast<std::uint32_t>(n),
                  static_cast<std::uint32_t>(k),
                  static_cast<std::uint32_t>(kp / 4),
                  static_cast<std::uint32_t>(ws.lead),
                  static_cast<std::uint32_t>(wd.lead / 4),
                  static_cast<std::uint32_t>(wsum.lead / 4),
                  flip,
                  0};
    const Grid g = grid_for(caps, (n + 3) / 4);
    const BufferBinding b[] = {ws.binding, wd.binding, wsum.binding};
    cmd.dispatch(pipe, b, &push, sizeof push, g.x, g.y);
  }
}

// Packs a [k, cols] matrix (row stride cols, at r) into dst [cols, kp] and column sums.
void record_pack_cols(Context& ctx, Commands& cmd, const Resolved& r, std::uint64_t cols,
                      std::uint64_t k, std::uint64_t kp, std::uint32_t flip, DeviceBuffer& dst,
                      DeviceBuffer& sums) {
  if (cols == 0) return;
  const DeviceCaps& caps = ctx.caps();
  const std::uint64_t cap = window_capacity(caps);
  cmd.fill(sums.handle(), 0, (cols * 4 + 3) / 4 * 4, 0);
  cmd.barrier();
  if (k == 0) {
    record_pack_rows(ctx, cmd, r, 0, 0, 0, flip, dst, sums);  // nothing to pack: sums are 0
    return;
  }
  // Columns per dispatch: the packed rows fit one window and the grid's x. K per dispatch in
  // multiples of 4 (one packed word) so that rows [k0, k1) of the source columns fit a window.
  std::uint64_t n_chunk = std::min<std::uint64_t>(cols, cap / std::max<std::uint64_t>(kp, 4));
  n_chunk = std::min<std::uint64_t>(n_chunk,
                                    static_cast<std::uint64_t>(caps.max_workgroup_count[0]) * 64);
  n_chunk = std::max<std::uint64_t>(n_chunk, 1);
  const std::uint64_t rows_fit = cap / std::max<std::uint64_t>(cols, 1);
  std::uint64_t k_chunk = std::max<std::uint64_t>(4, std::min<std::uint64_t>(k, rows_fit) / 4 * 4);
  k_chunk = std::min<std::uint64_t>(k_chunk,
                                    static_cast<std::uint64_t>(caps.max_workgroup_count[1]) * 256);
  const Pipeline& pipe = ctx.pipelines().get("pack_cols", 3, sizeof(PackColsPush));
  for (std::uint64_t k0 = 0; k0 < k; k0 += k_chunk) {
    const std::uint64_t kn = std::min(k_chunk, k - k0);
    const std::uint64_t w_end = (k0 + kn >= k) ? kp / 4 : (k0 + kn) / 4;  // last: padding too
    const std::uint64_t words = w_end - k0 / 4;
    for (std::uint64_t c0 = 0; c0 < cols; c0 += n_chunk) {
      const std::uint64_t cn = std::min(n_chunk, cols - c0);
      // Rows [k0, k0 + kn) of columns [c0, c0 + cn): (kn - 1) * cols + cn bytes from (k0, c0).
      const Window ws = window(caps, *r.buffer, r.offset + k0 * cols + c0, (kn - 1) * cols + cn);
      const Window wd = window(caps, dst, c0 * kp, cn * kp);
      const Window wsum = window(caps, sums, c0 * 4, cn * 4);
      PackColsPush push{static_cast<std::uint32_t>(cn),
                        static_cast<std::uint32_t>(k),
                        static_cast<std::uint32_t>(kp / 4),
                        static_cast<std::uint32_t>(ws.lead),
                        static_cast<std::uint32_t>(wd.lead / 4),
                        static_cast<std::uint32_t>(wsum.lead / 4),
                        flip,
                        static_cast<std::uint32_t>(cols),
                        static_cast<std::uint32_t>(k0),
                        static_cast<std::uint32_t>(w_end)};
      const BufferBinding b[] = {ws.binding, wd.binding, wsum.binding};
      cmd.dispatch(pipe, b, &push, sizeof push, static_cast<std::uint32_t>((cn + 63) / 64),
                   static_cast<std::uint32_t>((words + 63) / 64));
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Prepacked B

class VulkanPackedWeights final : public PackedWeights {
 public:
  VulkanPackedWeights(std::shared_ptr<Context> ctx, MatmulDesc desc)
      : ctx_(std::move(ctx)),
        desc_(std::move(desc)),
        kp_(padded_k(desc_.k)),
        packed_(*ctx_, static_cast<std::uint64_t>(desc_.n) * kp_, MemoryKind::device),
        sums_(*ctx_, static_cast<std::uint64_t>(desc_.n) * 4, MemoryKind::device) {}

  const MatmulDesc& desc() const noexcept override { return desc_; }
  std::string backend() const override { return "vulkan"; }
  std::size_t bytes() const noexcept override { return packed_.size() + sums_.size(); }

  Context& context() const noexcept { return *ctx_; }
  DeviceBuffer& packed() noexcept { return packed_; }
  DeviceBuffer& sums() noexcept { return sums_; }

 private:
  std::shared_ptr<Context> ctx_;
  MatmulDesc desc_;
  std::uint64_t kp_;
  DeviceBuffer packed_;
  DeviceBuffer sums_;
};

namespace {

void record_pack_b(Context& ctx, Commands& cmd, const MatmulDesc& desc, const void* b,
                   DeviceBuffer& dst, DeviceBuffer& sums) {
  const auto n = static_cast<std::uint64_t>(desc.n), k = static_cast<std::uint64_t>(desc.k);
  const Resolved rb = resolve(ctx, b, n * k, "matmul: b");
  const std::uint32_t flip = flip_of(desc.b.dtype());
  if (desc.b_layout == MatrixLayout::nk)
    record_pack_rows(ctx, cmd, rb, n, k, padded_k(desc.k), flip, dst, sums);
  else record_pack_cols(ctx, cmd, rb, n, k, padded_k(desc.k), flip, dst, sums);
}

}  // namespace

std::shared_ptr<PackedWeights> pack_gemm_weights(std::shared_ptr<Context> ctx, Stream& st,
                                                 const MatmulDesc& desc, const void* b) {
  auto w = std::make_shared<VulkanPackedWeights>(ctx, desc);
  Commands& cmd = st.commands();
  cmd.begin();
  if (desc.n > 0 && desc.k > 0) record_pack_b(*ctx, cmd, desc, b, w->packed(), w->sums());
  else if (desc.n > 0) cmd.fill(w->sums().handle(), 0, w->sums().size(), 0);
  cmd.submit();
  return w;
}

// ---------------------------------------------------------------------------------------------
// GEMM

namespace {

struct GemmPush {
  std::uint32_t m, n, k, kp_words;
  std::uint32_t a_lead, b_lead, rs_lead, cs_lead;
  std::uint32_t out_lead, out_stride, bias_lead, mode;
  std::uint32_t za_off, za_step, zb_off, zb_step;
  std::uint32_t sa_off, sa_step, sb_off, sb_step;
  std::uint32_t m_base, n_base, sy_bits;
  std::int32_t zy, qmin, qmax;
  std::uint32_t has_bias;
  std::uint32_t
      zero;  // 0: keeps the driver from fusing the dequantization product into the bias add
};
static_assert(sizeof(GemmPush) <= 128, "push constants beyond the guaranteed 128 bytes");

}  // namespace

const Pipeline& gemm_pipeline(Context& ctx, Kernel kernel, bool out8) {
  const GemmKernelInfo& info = gemm_info(kernel);
  // The packing passes that feed every GEMM kernel, made with it.
  ctx.pipelines().get("pack_rows", 3, sizeof(PackPush));
  ctx.pipelines().get("pack_cols", 3, sizeof(PackColsPush));
  return ctx.pipelines().get(out8 ? info.shader_q8 : info.shader, 7, sizeof(GemmPush));
}

double run_gemm(Stream& st, Kernel kernel, OpKind op, const MatmulDesc& desc, const void* a,
                const void* b, const PackedWeights* packed, const float* bias, void* out) {
  Context& ctx = st.context();
  const auto M = static_cast<std::uint64_t>(desc.m), N = static_cast<std::uint64_t>(desc.n);
  const auto K = static_cast<std::uint64_t>(desc.k);
  if (M == 0 || N == 0) return 0.0;
  const std::uint64_t kp = padded_k(desc.k);
  const DeviceCaps& caps = ctx.caps();
  const bool out8 = op == OpKind::qlinear_matmul;
  const std::uint64_t elt = out8 ? 1 : 4;

  const Resolved ra = resolve(ctx, a, M * K, "matmul: a");
  const Resolved ro = resolve(ctx, out, M * N * elt, "matmul: output");
  if (!out8 && ro.offset % 4 != 0)
    throw Error(ErrorCode::invalid_argument,
                "matmul: output at byte offset " + std::to_string(ro.offset) +
                    " of its buffer; expected 4-byte alignment for int32/float32 data");
  std::optional<Resolved> rbias;
  if (op == OpKind::matmul_dequant && desc.has_bias) {
    rbias = resolve(ctx, bias, N * 4, "matmul_dequant: bias");
    if (rbias->offset % 4 != 0)
      throw Error(ErrorCode::invalid_argument, "matmul_dequant: bias is not 4-byte aligned");
  }

  // Params: za', zb' (zero points shifted for uint8), sa, sb as 32-bit words.
  const QuantizationParams& pa = desc.a;
  const QuantizationParams& pb = desc.b;
  const std::size_t na = pa.count(), nb = pb.count();
  std::vector<std::uint32_t> params(2 * (na + nb));
  for (std::size_t i = 0; i < na; ++i) {
    params[i] = static_cast<std::uint32_t>(pa.zero_point(i) - shift_of(pa.dtype()));
    const float s = pa.scale(i);
    std::memcpy(&params[na + nb + i], &s, 4);
  }
  for (std::size_t i = 0; i < nb; ++i) {
    params[na + i] = static_cast<std::uint32_t>(pb.zero_point(i) - shift_of(pb.dtype()));
    const float s = pb.scale(i);
    std::memcpy(&params[2 * na + nb + i], &s, 4);
  }
  DeviceBuffer& pbuf = scratch(st, "params", params.size() * 4, MemoryKind::upload);
  std::memcpy(pbuf.mapped(), params.data(), params.size() * 4);

  DeviceBuffer& packed_a = scratch(st, "packed_a", M * kp, MemoryKind::device);
  DeviceBuffer& row_sums = scratch(st, "row_sums", M * 4, MemoryKind::device);
  DeviceBuffer* packed_b = nullptr;
  DeviceBuffer* col_sums = nullptr;
  if (packed) {
    auto* w = dynamic_cast<const VulkanPackedWeights*>(packed);
    if (w == nullptr || &w->context() != &ctx)
      throw Error(ErrorCode::invalid_argument,
                  "matmul: packed weights made by " + packed->backend() +
                      (w ? " for another vulkan device" : std::string()) +
                      "; expected weights packed by this vulkan device");
    const MatmulDesc& p = w->desc();
    if (p.n != desc.n || p.k != desc.k || p.b_layout != desc.b_layout || !(p.b == desc.b))
      throw Error(ErrorCode::shape_mismatch,
                  "matmul: packed weights for n=" + std::to_string(p.n) +
                      " k=" + std::to_string(p.k) + " used with n=" + std::to_string(desc.n) +
                      " k=" + std::to_string(desc.k) +
                      "; expected the same B shape, layout and params it was packed for");
    packed_b = &const_cast<VulkanPackedWeights*>(w)->packed();
    col_sums = &const_cast<VulkanPackedWeights*>(w)->sums();
  } else {
    packed_b = &scratch(st, "packed_b", N * kp, MemoryKind::device);
    col_sums = &scratch(st, "col_sums", N * 4, MemoryKind::device);
  }

  Commands& cmd = st.commands();
  cmd.begin();
  record_pack_rows(ctx, cmd, ra, M, K, kp, flip_of(pa.dtype()), packed_a, row_sums);
  if (!packed) {
    if (K > 0) {
      record_pack_b(ctx, cmd, desc, b, *packed_b, *col_sums);
    } else {
      cmd.fill(col_sums->handle(), 0, (N * 4 + 15) / 16 * 16, 0);
    }
  }
  cmd.barrier();

  const GemmKernelInfo& shape = gemm_info(kernel);
  const Pipeline& pipe = gemm_pipeline(ctx, kernel, out8);
  // Dispatch tiles: A rows and B rows within a window each, the output span within a window,
  // the grid within the limits.
  const std::uint64_t cap = window_capacity(caps);
  const std::uint64_t row_bytes = std::max<std::uint64_t>(kp, 4);
  auto round_tile = [](std::uint64_t v, std::uint64_t tile) {
    return v >= tile ? v / tile * tile : v;
  };
  std::uint64_t n_chunk = std::min<std::uint64_t>(
      {N, cap / row_bytes, cap / elt, std::uint64_t{caps.max_workgroup_count[0]} * shape.tile_n});
  n_chunk = std::max<std::uint64_t>(round_tile(n_chunk, shape.tile_n), 1);
  const std::uint64_t out_rows_fit = cap / elt >= n_chunk ? (cap / elt - n_chunk) / N + 1 : 1;
  std::uint64_t m_chunk =
      std::min<std::uint64_t>({M, cap / row_bytes, out_rows_fit,
                               std::uint64_t{caps.max_workgroup_count[1]} * shape.tile_m});
  m_chunk = std::max<std::uint64_t>(round_tile(m_chunk, shape.tile_m), 1);

  const QuantizationParams* py = desc.y ? &*desc.y : nullptr;
  float sy = py ? py->scale() : 1.0f;
  std::uint32_t sy_bits = 0;
  std::memcpy(&sy_bits, &sy, 4);
  const std::uint32_t mode = op == OpKind::matmul_integer                    ? 0u
                             : op == OpKind::matmul_dequant                  ? 1u
                             : desc.requant_mode == RequantMode::fixed_point ? 3u
                                                                             : 2u;
  for (std::uint64_t m0 = 0; m0 < M; m0 += m_chunk) {
    const std::uint64_t mc = std::min(m_chunk, M - m0);
    for (std::uint64_t n0 = 0; n0 < N; n0 += n_chunk) {
      const std::uint64_t nc = std::min(n_chunk, N - n0);
      const Window wa = window(caps, packed_a, m0 * kp, mc * kp);
      const Window wb = window(caps, *packed_b, n0 * kp, nc * kp);
      const Window wrs = window(caps, row_sums, m0 * 4, mc * 4);
      const Window wcs = window(caps, *col_sums, n0 * 4, nc * 4);
      const Window wp = window(caps, pbuf, 0, params.size() * 4);
      const Window wbias = rbias ? window(caps, *rbias->buffer, rbias->offset + n0 * 4, nc * 4)
                                 : window(caps, pbuf, 0, 4);
      const Window wo =
          window(caps, *ro.buffer, ro.offset + (m0 * N + n0) * elt, ((mc - 1) * N + nc) * elt);
      GemmPush push{};
      push.m = static_cast<std::uint32_t>(mc);
      push.n = static_cast<std::uint32_t>(nc);
      push.k = static_cast<std::uint32_t>(K);
      push.kp_words = static_cast<std::uint32_t>(kp / 4);
      push.a_lead = static_cast<std::uint32_t>(wa.lead / 4);
      push.b_lead = static_cast<std::uint32_t>(wb.lead / 4);
      push.rs_lead = static_cast<std::uint32_t>(wrs.lead / 4);
      push.cs_lead = static_cast<std::uint32_t>(wcs.lead / 4);
      push.out_lead = static_cast<std::uint32_t>(wo.lead / elt);
      push.out_stride = static_cast<std::uint32_t>(N);
      push.bias_lead = static_cast<std::uint32_t>(wbias.lead / 4);
      push.mode = mode;
      push.za_off = 0;
      push.za_step = na > 1 ? 1 : 0;
      push.zb_off = static_cast<std::uint32_t>(na);
      push.zb_step = nb > 1 ? 1 : 0;
      push.sa_off = static_cast<std::uint32_t>(na + nb);
      push.sa_step = na > 1 ? 1 : 0;
      push.sb_off = static_cast<std::uint32_t>(2 * na + nb);
      push.sb_step = nb > 1 ? 1 : 0;
      push.m_base = static_cast<std::uint32_t>(m0);
      push.n_base = static_cast<std::uint32_t>(n0);
      push.sy_bits = sy_bits;
      push.zy = py ? py->zero_point() : 0;
      push.qmin = py ? py->qmin() : 0;
      push.qmax = py ? py->qmax() : 0;
      push.has_bias = rbias ? 1u : 0u;
      const BufferBinding bind[] = {wa.binding, wb.binding,    wrs.binding, wcs.binding,
                                    wp.binding, wbias.binding, wo.binding};
      cmd.dispatch(pipe, bind, &push, sizeof push,
                   static_cast<std::uint32_t>((nc + shape.tile_n - 1) / shape.tile_n),
                   static_cast<std::uint32_t>((mc + shape.tile_m - 1) / shape.tile_m));
    }
  }
  return cmd.submit();
}

}  // namespace qforge::vulkan
