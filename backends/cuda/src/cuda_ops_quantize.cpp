// quantize, dequantize, requantize and dynamic_quantize_linear.
#include <cstdio>
#include <vector>

#include "check.h"
#include "cuda_ops.h"
#include "kernel_names.h"
#include "kernels/quantize.h"
#include "kernels/reduce.h"
#include "kernels/requantize.h"
#include "qforge/error.h"
#include "qforge/reference.h"

namespace qforge::cuda {
namespace {

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

// How element i of `shape` finds its (scale, zero point) pair (validated params).
PairIndexing indexing_for(const QuantizationParams& p, const Shape& shape) {
  PairIndexing ix;
  ix.qmin = p.qmin();
  ix.qmax = p.qmax();
  switch (p.scheme().granularity) {
    case Granularity::per_tensor:
      ix.layout = ParamLayout::per_tensor;
      ix.scale0 = p.scale();
      ix.zero_point0 = p.zero_point();
      break;
    case Granularity::per_channel: {
      ix.layout = ParamLayout::per_channel;
      const auto axis = static_cast<std::size_t>(p.channel_axis(shape.size()));
      ix.extent = shape[axis];
      ix.inner = 1;
      for (std::size_t d = axis + 1; d < shape.size(); ++d) ix.inner *= shape[d];
      break;
    }
    case Granularity::block: {
      ix.layout = ParamLayout::block;
      ix.inner = shape.empty() ? 1 : shape.back();
      ix.block = p.scheme().block_size;
      ix.extent = (ix.inner + ix.block - 1) / ix.block;
      break;
    }
  }
  return ix;
}

}  // namespace

void CudaOps::quantize(const QuantizeDesc& desc, const void* x, void* q) {
  begin(OpKind::quantize, desc);
  const QuantizationParams& p = desc.params;
  PairIndexing ix = indexing_for(p, desc.shape);
  if (ix.layout != ParamLayout::per_tensor) {
    ix.scales = device_scales(p);
    ix.zero_points = device_zero_points(p);
  }
  launch_quantize(desc.float_type, x, p.dtype(), q, element_count(desc.shape), ix, stream());
}

void CudaOps::dequantize(const QuantizeDesc& desc, const void* q, float* x) {
  begin(OpKind::dequantize, desc);
  const QuantizationParams& p = desc.params;
  PairIndexing ix = indexing_for(p, desc.shape);
  if (ix.layout != ParamLayout::per_tensor) {
    ix.scales = device_scales(p);
    ix.zero_points = device_zero_points(p);
  }
  launch_dequantize(p.dtype(), q, x, element_count(desc.shape), ix, stream());
}

void CudaOps::requantize(const RequantizeDesc& desc, const std::int32_t* c, void* y) {
  begin({OpKind::requantize, desc});
  RequantizeArgs a;
  a.n = element_count(desc.shape);
  const auto& tr = traits(desc.out_dtype);
  a.qmin = tr.qmin;
  a.qmax = tr.qmax;
  a.zero_point = desc.out_zero_point;
  if (desc.multipliers.size() > 1) {
    const int rank = static_cast<int>(desc.shape.size());
    const auto axis = static_cast<std::size_t>(desc.axis < 0 ? desc.axis + rank : desc.axis);
    a.extent = desc.shape[axis];
    for (std::size_t d = axis + 1; d < desc.shape.size(); ++d) a.stride *= desc.shape[d];
  }
  if (desc.mode == RequantMode::fixed_point) {
    // The conversion is TFLite's QuantizeMultiplier, done once per multiplier by the reference.
    std::vector<std::int32_t> mult, shift;
    for (const float m : desc.multipliers) {
      const auto fp = reference::quantize_multiplier(m);
      mult.push_back(fp.multiplier);
      shift.push_back(fp.shift);
    }
    a.fixed_point = true;
    a.fixed_multipliers = upload(std::span<const std::int32_t>(mult));
    a.fixed_shifts = upload(std::span<const std::int32_t>(shift));
  } else {
    a.multipliers = upload(std::span<const float>(desc.multipliers));
  }
  launch_requantize(c, static_cast<std::uint8_t*>(y), a, stream());
}

QuantizationParams CudaOps::dynamic_quantize_linear(const DynamicQuantizeDesc& desc, const float* x,
                                                    std::uint8_t* y) {
  begin({OpKind::dynamic_quantize_linear, desc});
  const std::int64_t n = element_count(desc.shape);
  cudaStream_t s = stream();
  auto* partials =
      workspace_.get<RangeStats>(Slot::stats_partials, kRangeStatsMaxBlocks, device_, s);
  auto* stats = workspace_.get<RangeStats>(Slot::stats, 1, device_, s);
  launch_range_stats(FloatType::f32, x, n, partials, stats, props().multiprocessors, s);
  RangeStats host{};
  check(cudaMemcpyAsync(&host, stats, sizeof host, cudaMemcpyDeviceToHost, s),
        "cudaMemcpyAsync(range statistics)");
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  if (host.first_inf != kNoIndex) {
    float v = 0.0f;
    check(cudaMemcpy(&v, x + host.first_inf, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy");
    throw Error(ErrorCode::invalid_argument,
                "cuda: dynamic_quantize_linear: x[" + std::to_string(host.first_inf) +
                    "] = " + float_text(v) +
                    "; expected finite values (an infinite range has no uint8 scale)");
  }
  // The reference's own float32 expressions give (s, z) from the range; NaN did not count.
  const QuantizationParams p =
      reference::params_from_range(DType::uint8, Mapping::affine, host.lo, host.hi);
  PairIndexing ix;
  ix.scale0 = p.scale();
  ix.zero_point0 = p.zero_point();
  ix.qmin = traits(DType::uint8).qmin;
  ix.qmax = traits(DType::uint8).qmax;
  launch_quantize(FloatType::f32, x, DType::uint8, y, n, ix, s);
  return p;
}

}  // namespace qforge::cuda
