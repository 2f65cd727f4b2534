// quantize, dequantize and requantize: element-wise shaders over the tensor, split into
// dispatches that fit the device's binding and grid limits (windows.h).
#include <algorithm>
#include <cstring>
#include <vector>

#include "buffers.h"
#include "ops_internal.h"
#include "pipelines.h"
#include "qforge/error.h"
#include "windows.h"

namespace qforge::vulkan {
namespace {

constexpr std::uint64_t kLocal = 256;        // invocations per workgroup (elementwise.glsl)
constexpr std::uint64_t kPerInvocation = 4;  // elements (or output bytes) per invocation

// Where the (scale, zero point) pair of each element comes from (qf_param_index).
struct ParamLayout {
  std::uint32_t gran = 0;      // 0 per tensor, 1 per channel, 2 block, 3 block (rows whole blocks)
  std::uint64_t inner = 1;     // per channel: elements per channel step; block: last dim
  std::uint64_t channels = 1;  // per channel: channels; block: blocks per row
  std::uint64_t block = 1;
};

ParamLayout param_layout(const Shape& shape, const QuantizationParams& p) {
  ParamLayout l;
  switch (p.scheme().granularity) {
    case Granularity::per_tensor: break;
    case Granularity::per_channel: {
      l.gran = 1;
      const int axis = p.channel_axis(shape.size());
      l.channels = static_cast<std::uint64_t>(shape[static_cast<std::size_t>(axis)]);
      for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d)
        l.inner *= static_cast<std::uint64_t>(shape[d]);
      break;
    }
    case Granularity::block:
      l.gran = 2;
      l.inner = shape.empty() ? 1 : static_cast<std::uint64_t>(shape.back());
      l.block = static_cast<std::uint64_t>(p.scheme().block_size);
      l.channels = (l.inner + l.block - 1) / l.block;
      if (l.inner % l.block == 0) l.gran = 3;  // pair index = element index / block
      break;
  }
  return l;
}

// Pair index (global) of element i.
std::uint64_t pair_of(const ParamLayout& l, std::uint64_t i) {
  switch (l.gran) {
    case 0: return 0;
    case 1: return (i / l.inner) % l.channels;
    default: return (i / l.inner) * l.channels + (i % l.inner) / l.block;  // 2 and 3
  }
}

// Push-constant fields describing the params of one dispatch starting at global element `base`
// whose pair window starts at pair `window_first`.
struct ParamPush {
  std::uint32_t gran, inner, channels, block, base_a, base_b, p_lead;
};

ParamPush param_push(const ParamLayout& l, std::uint64_t base, std::uint64_t window_first) {
  ParamPush p{l.gran,
              static_cast<std::uint32_t>(l.inner),
              static_cast<std::uint32_t>(l.channels),
              static_cast<std::uint32_t>(l.block),
              0,
              0,
              0};
  if (l.gran == 1) {
    p.base_a = static_cast<std::uint32_t>((base / l.inner) % l.channels);
    p.base_b = static_cast<std::uint32_t>(base % l.inner);
    p.p_lead = static_cast<std::uint32_t>(0 - window_first);  // window starts at pair 0
  } else if (l.gran >= 2) {
    p.base_b = static_cast<std::uint32_t>(base % l.inner);
    // The shader counts pairs from the first pair of base's row; the window may start later.
    const std::uint64_t row_first = (base / l.inner) * l.channels;
    p.p_lead = static_cast<std::uint32_t>(row_first - window_first);  // wraps: unsigned math
  }
  return p;
}

// Elements per dispatch: every binding within one window, the grid within the limits.
std::uint64_t chunk_elements(const DeviceCaps& caps, std::uint64_t bytes_per_element) {
  const std::uint64_t cap = window_capacity(caps);
  std::uint64_t chunk = cap / std::max<std::uint64_t>(bytes_per_element, 16);
  chunk = std::min(chunk, (max_linear_groups(caps) - 1) * kLocal * kPerInvocation);
  chunk = std::min<std::uint64_t>(chunk, 1ull << 30);
  return std::max<std::uint64_t>(chunk / 16 * 16, 16);
}

void require_aligned(const Resolved& r, const char* what) {
  if (r.offset % 4 != 0)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": pointer at byte offset " + std::to_string(r.offset) +
                    " of its buffer; expected 4-byte alignment for float32/int32 data");
}

// Where the shaders read the (scale bits, zero point) pairs from, recording any copy into the
// command buffer (after begin()). Small params go straight from the upload buffer. Large ones
// (block-wise params are a quarter of the int8 tensor's bytes) are copied to device-local
// memory so the GPU does not read them across the bus, and kept there: an op that repeats the
// same params (static quantization, a benchmark loop) skips the upload and the copy.
DeviceBuffer& stage_pairs(Stream& st, Commands& cmd, const QuantizationParams& p) {
  constexpr std::size_t kDirectBytes = 64 * 1024;
  st.params_pending().clear();  // left over only if an earlier op failed before submitting
  st.params_pending_identity() = 0;
  const auto scales = p.scales();
  const auto zps = p.zero_points();
  auto fill = [&](std::uint32_t* words) {
    for (std::size_t i = 0; i < scales.size(); ++i) {
      std::memcpy(&words[2 * i], &scales[i], 4);
      words[2 * i + 1] = static_cast<std::uint32_t>(zps[i]);
    }
  };
  const std::size_t bytes = scales.size() * 8;
  DeviceBuffer* device = nullptr;
  if (bytes > kDirectBytes) {
    device = &scratch(st, "params_device", bytes, MemoryKind::device);
    if (device->mapped() != nullptr) device = nullptr;  // device memory is host memory (lavapipe)
  }
  if (device == nullptr) {
    DeviceBuffer& upload = scratch(st, "params", bytes, MemoryKind::upload);
    fill(reinterpret_cast<std::uint32_t*>(upload.mapped()));
    return upload;
  }
  // Compare with the cached copy in place (a temporary the size of the params would cost page
  // faults on every call); on a difference, rewrite the cache and upload it.
  // Equal identities mean equal contents (QuantizationParams::identity): no scan at all.
  auto& cache = st.params_cache();
  const std::size_t count = scales.size();
  bool same = cache.size() == 2 * count;
  if (same && p.identity() != 0 && p.identity() == st.params_cache_identity()) return *device;
  for (std::size_t i = 0; same && i < count; ++i) {
    std::uint32_t s = 0;
    std::memcpy(&s, &scales[i], 4);
    same = cache[2 * i] == s && cache[2 * i + 1] == static_cast<std::uint32_t>(zps[i]);
  }
  if (same) {
    st.params_cache_identity() = p.identity();
    return *device;
  }
  // The device copy is about to change: until the submission succeeds nothing is cached.
  cache.clear();
  st.params_cache_identity() = 0;
  st.params_pending_identity() = p.identity();
  auto& pending = st.params_pending();
  pending.resize(2 * count);
  fill(pending.data());
  DeviceBuffer& upload = scratch(st, "params", bytes, MemoryKind::upload);
  std::memcpy(upload.mapped(), pending.data(), bytes);
  cmd.copy(upload.handle(), 0, device->handle(), 0, bytes);
  cmd.barrier();
  return *device;
}

// After a successful submission: params copied by stage_pairs() are now in device memory.
double commit_params(Stream& st, double gpu_ns) {
  if (!st.params_pending().empty()) {
    st.params_cache().swap(st.params_pending());
    st.params_cache_identity() = st.params_pending_identity();
  }
  st.params_pending().clear();
  st.params_pending_identity() = 0;
  return gpu_ns;
}

struct QuantizePush {
  std::uint32_t count, x_lead, q_lead, gran, inner, channels, block, base_a, base_b;
  std::int32_t qmin, qmax;
  std::uint32_t words, p_lead;
};
struct DequantizePush {
  std::uint32_t count, q_lead, x_lead, gran, inner, channels, block, base_a, base_b, is_signed,
      p_lead, pad;
};
struct RequantizePush {
  std::uint32_t count, c_lead, y_lead, gran, inner, channels, block, base_a, base_b;
  std::int32_t qmin, qmax, zero_point;
  std::uint32_t fixed_point, words, p_lead;
};

// Runs `record(cmd, base, count)` for each chunk of n elements, with a barrier between chunks
// (an output word at a chunk boundary is owned by both dispatches, one after the other).
template <class F>
double for_chunks(Stream& st, std::uint64_t n, std::uint64_t chunk, F&& record) {
  Commands& cmd = st.commands();
  for (std::uint64_t base = 0; base < n; base += chunk) {
    if (base > 0) cmd.barrier();
    record(cmd, base, std::min(chunk, n - base));
  }
  return cmd.submit();
}

// The window of the pair array serving elements [base, base + count).
Window pair_window(const DeviceCaps& caps, const DeviceBuffer& pairs, const ParamLayout& l,
                   std::uint64_t total_pairs, std::uint64_t base, std::uint64_t count,
                   std::uint64_t bytes_each, std::uint64_t& first_pair) {
  if (l.gran >= 2) {
    first_pair = pair_of(l, base);
    const std::uint64_t last = pair_of(l, base + count - 1);
    Window w = window(caps, pairs, first_pair * bytes_each, (last - first_pair + 1) * bytes_each);
    first_pair -= w.lead / bytes_each;  // the pair at the binding's start
    return w;
  }
  first_pair = 0;
  return window(caps, pairs, 0, total_pairs * bytes_each);
}

}  // namespace

const Pipeline& elementwise_pipeline(Context& ctx, OpKind op) {
  switch (op) {
    case OpKind::quantize: return ctx.pipelines().get("quantize", 3, sizeof(QuantizePush));
    case OpKind::dequantize: return ctx.pipelines().get("dequantize", 3, sizeof(DequantizePush));
    case OpKind::requantize: return ctx.pipelines().get("requantize", 3, sizeof(RequantizePush));
    default:
      throw Error(ErrorCode::internal,
                  "vulkan: no element-wise pipeline for " + std::string(to_string(op)));
  }
}

double run_quantize(Stream& st, const QuantizeDesc& desc, const void* x, void* q) {
  Context& ctx = st.context();
  const auto n = static_cast<std::uint64_t>(element_count(desc.shape));
  if (n == 0) return 0.0;
  const Resolved rx = resolve(ctx, x, n * 4, "quantize: x");
  const Resolved rq = resolve(ctx, q, n, "quantize: q");
  require_aligned(rx, "quantize: x");
  const DeviceCaps& caps = ctx.caps();
  const QuantizationParams& p = desc.params;
  const ParamLayout layout = param_layout(desc.shape, p);
  const Pipeline& pipe = elementwise_pipeline(ctx, OpKind::quantize);
  st.commands().begin();
  DeviceBuffer& pairs = stage_pairs(st, st.commands(), p);
  const double ns = for_chunks(
      st, n, chunk_elements(caps, 4), [&](Commands& cmd, std::uint64_t base, std::uint64_t count) {
        const Window wx = window(caps, *rx.buffer, rx.offset + base * 4, count * 4);
        const Window wq = window(caps, *rq.buffer, rq.offset + base, count);
        std::uint64_t first_pair = 0;
        const Window wp = pair_window(caps, pairs, layout, p.count(), base, count, 8, first_pair);
        const ParamPush pp = param_push(layout, base, first_pair);
        const std::uint64_t q_lead = wq.lead;
        const std::uint64_t words = (q_lead + count + 3) / 4 - q_lead / 4;
        QuantizePush push{static_cast<std::uint32_t>(count),
                          static_cast<std::uint32_t>(wx.lead / 4),
                          static_cast<std::uint32_t>(q_lead),
                          pp.gran,
                          pp.inner,
                          pp.channels,
                          pp.block,
                          pp.base_a,
                          pp.base_b,
                          p.qmin(),
                          p.qmax(),
                          static_cast<std::uint32_t>(words),
                          pp.p_lead};
        const Grid g = grid_for(caps, (words + kLocal - 1) / kLocal);
        const BufferBinding b[] = {wx.binding, wq.binding, wp.binding};
        cmd.dispatch(pipe, b, &push, sizeof push, g.x, g.y);
      });
  return commit_params(st, ns);
}

double run_dequantize(Stream& st, const QuantizeDesc& desc, const void* q, float* x) {
  Context& ctx = st.context();
  const auto n = static_cast<std::uint64_t>(element_count(desc.shape));
  if (n == 0) return 0.0;
  const Resolved rq = resolve(ctx, q, n, "dequantize: q");
  const Resolved rx = resolve(ctx, x, n * 4, "dequantize: x");
  require_aligned(rx, "dequantize: x");
  const DeviceCaps& caps = ctx.caps();
  const QuantizationParams& p = desc.params;
  const ParamLayout layout = param_layout(desc.shape, p);
  const Pipeline& pipe = elementwise_pipeline(ctx, OpKind::dequantize);
  st.commands().begin();
  DeviceBuffer& pairs = stage_pairs(st, st.commands(), p);
  const double ns = for_chunks(
      st, n, chunk_elements(caps, 4), [&](Commands& cmd, std::uint64_t base, std::uint64_t count) {
        const Window wq = window(caps, *rq.buffer, rq.offset + base, count);
        const Window wx = window(caps, *rx.buffer, rx.offset + base * 4, count * 4);
        std::uint64_t first_pair = 0;
        const Window wp = pair_window(caps, pairs, layout, p.count(), base, count, 8, first_pair);
        const ParamPush pp = param_push(layout, base, first_pair);
        DequantizePush push{static_cast<std::uint32_t>(count),
                            static_cast<std::uint32_t>(wq.lead),
                            static_cast<std::uint32_t>(wx.lead / 4),
                            pp.gran,
                            pp.inner,
                            pp.channels,
                            pp.block,
                            pp.base_a,
                            pp.base_b,
                            traits(p.dtype()).is_signed ? 1u : 0u,
                            pp.p_lead,
                            0};
        const std::uint64_t invocations = (count + kPerInvocation - 1) / kPerInvocation;
        const Grid g = grid_for(caps, (invocations + kLocal - 1) / kLocal);
        const BufferBinding b[] = {wq.binding, wx.binding, wp.binding};
        cmd.dispatch(pipe, b, &push, sizeof push, g.x, g.y);
      });
  return commit_params(st, ns);
}

double run_requantize(Stream& st, const RequantizeDesc& desc, const std::int32_t* c, void* y) {
  Context& ctx = st.context();
  const auto n = static_cast<std::uint64_t>(element_count(desc.shape));
  if (n == 0) return 0.0;
  const Resolved rc = resolve(ctx, c, n * 4, "requantize: c");
  const Resolved ry = resolve(ctx, y, n, "requantize: y");
  require_aligned(rc, "requantize: c");
  const DeviceCaps& caps = ctx.caps();
  ParamLayout layout;
  if (desc.multipliers.size() > 1) {
    const int rank = static_cast<int>(desc.shape.size());
    const int axis = desc.axis < 0 ? desc.axis + rank : desc.axis;
    layout.gran = 1;
    layout.channels = static_cast<std::uint64_t>(desc.shape[static_cast<std::size_t>(axis)]);
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < desc.shape.size(); ++d)
      layout.inner *= static_cast<std::uint64_t>(desc.shape[d]);
  }
  DeviceBuffer& mult = scratch(st, "params", desc.multipliers.size() * 4, MemoryKind::upload);
  std::memcpy(mult.mapped(), desc.multipliers.data(), desc.multipliers.size() * 4);
  const auto& tr = traits(desc.out_dtype);
  const Pipeline& pipe = elementwise_pipeline(ctx, OpKind::requantize);
  st.commands().begin();
  return for_chunks(st, n, chunk_elements(caps, 4),
                    [&](Commands& cmd, std::uint64_t base, std::uint64_t count) {
                      const Window wc = window(caps, *rc.buffer, rc.offset + base * 4, count * 4);
                      const Window wy = window(caps, *ry.buffer, ry.offset + base, count);
                      const Window wm = window(caps, mult, 0, desc.multipliers.size() * 4);
                      const ParamPush pp = param_push(layout, base, 0);
                      const std::uint64_t words = (wy.lead + count + 3) / 4 - wy.lead / 4;
                      RequantizePush push{static_cast<std::uint32_t>(count),
                                          static_cast<std::uint32_t>(wc.lead / 4),
                                          static_cast<std::uint32_t>(wy.lead),
                                          pp.gran,
                                          pp.inner,
                                          pp.channels,
                                          1,
                                          pp.base_a,
                                          pp.base_b,
                                          tr.qmin,
                                          tr.qmax,
                                          desc.out_zero_point,
                                          desc.mode == RequantMode::fixed_point ? 1u : 0u,
                                          static_cast<std::uint32_t>(words),
                                          0};
                      const Grid g = grid_for(caps, (words + kLocal - 1) / kLocal);
                      const BufferBinding b[] = {wc.binding, wy.binding, wm.binding};
                      cmd.dispatch(pipe, b, &push, sizeof push, g.x, g.y);
                    });
}

}  // namespace qforge::vulkan
