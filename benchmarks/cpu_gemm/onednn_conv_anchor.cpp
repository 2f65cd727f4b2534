// oneDNN's own int8 convolution, used the way a oneDNN user would use it: the raw CPU anchor of
// issue 15 for cpu_x86's convolutions (qforge_bench_cpu_gemm --only conv times those). Unlike the
// onednn plugin, nothing of qforge's exact epilogue runs here: oneDNN writes every output itself.
//
// Per layer (the shapes of qforge_bench_cpu_gemm's conv rows), u8 source with a runtime zero
// point, s8 weights with per-output-channel scales, primitives created and weights reordered once
// outside the timed loop, as a user prepares a model:
//   s32 nhwc  int32 output, NHWC source and destination, no bias (the ConvInteger equivalent)
//   s32 any   the same with oneDNN's preferred (`any`) source/destination layouts; the source is
//             reordered to it once, outside the timed loop
//   u8 nhwc   u8 output through oneDNN's output scales (per channel), int32 bias, ReLU and a
//             destination zero point (the QLinearConv equivalent; oneDNN's float arithmetic,
//             not bit-exact with qforge's requantization)
//   f32 nhwc  float output through the same scales and bias (the conv_dequant equivalent)
//   s32 no zp as s32 nhwc without the source zero point (a symmetric model's convolution; on AMX
//             oneDNN 2.6's brgemm kernels take only this case, so it shows oneDNN's best path)
// Median of repeated executions (timing.h); each variant prints oneDNN's implementation name.
//
//   qforge_bench_onednn_conv [--threads N] [--min-time S]
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "timing.h"

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using qforge::bench::fixed;
using qforge::bench::measure;

struct Layer {
  const char* name;
  std::int64_t n, c, hw, o, k, groups;
  std::int64_t stride = 1;
};

struct Variant {
  const char* name;
  dt dst_type;
  bool any_layout;  // source and destination in oneDNN's preferred layout
  bool requant;     // output scales, int32 bias (and for u8: ReLU, destination zero point)
  bool src_zero_point = true;
};

struct Result {
  double ms = 0;
  std::string impl;
};

dnnl::memory::dims weight_dims(const Layer& l) {
  if (l.groups == 1) return {l.o, l.c, l.k, l.k};
  return {l.groups, l.o / l.groups, l.c / l.groups, l.k, l.k};
}

Result run_variant(const dnnl::engine& engine, dnnl::stream& stream, const Layer& l,
                   const Variant& v, double min_time_s, std::mt19937& rng) {
  // Padding as ONNX's SAME_UPPER (the suites' layers): out = ceil(hw / stride), the extra pad at
  // the bottom and right.
  const std::int64_t out_hw = (l.hw + l.stride - 1) / l.stride;
  const std::int64_t pad_total = std::max<std::int64_t>(0, (out_hw - 1) * l.stride + l.k - l.hw);
  const std::int64_t pad = pad_total / 2, pad_end = pad_total - pad;
  const dnnl::memory::dims src_dims{l.n, l.c, l.hw, l.hw}, dst_dims{l.n, l.o, out_hw, out_hw};
  const dnnl::memory::desc src_user(src_dims, dt::u8, tag::nhwc);
  const dnnl::memory::desc src_md =
      v.any_layout ? dnnl::memory::desc(src_dims, dt::u8, tag::any) : src_user;
  const dnnl::memory::desc dst_md(dst_dims, v.dst_type, v.any_layout ? tag::any : tag::nhwc);
  const dnnl::memory::desc w_md(weight_dims(l), dt::s8, tag::any);
  const dnnl::memory::desc bias_md({l.o}, dt::s32, tag::x);

  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127), bias(-5000, 5000);
  std::uniform_real_distribution<float> scale(1e-4f, 1e-3f);
  std::vector<float> scales(static_cast<std::size_t>(l.o));
  for (auto& s : scales) s = scale(rng);

  dnnl::primitive_attr attr;
  if (v.src_zero_point) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (v.requant) {
    attr.set_output_scales(1 << 1, scales);  // per output channel (weights' scale x source's)
    if (v.dst_type == dt::u8) {
      dnnl::post_ops po;
      po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(po);
      attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    }
  }
  const auto desc =
      v.requant
          ? dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                w_md, bias_md, dst_md, {l.stride, l.stride}, {pad, pad}, {pad_end, pad_end})
          : dnnl::convolution_forward::desc(
                dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                w_md, dst_md, {l.stride, l.stride}, {pad, pad}, {pad_end, pad_end});
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine);
  const dnnl::convolution_forward conv(pd);

  // Operands, prepared once: user data in NHWC / (g)oihw, reordered to the primitive's layouts.
  dnnl::memory src_u(src_user, engine);
  auto* xs = static_cast<std::uint8_t*>(src_u.get_data_handle());
  for (std::size_t i = 0; i < src_user.get_size(); ++i)
    xs[i] = static_cast<std::uint8_t>(byte(rng));
  dnnl::memory w_u({weight_dims(l), dt::s8, l.groups == 1 ? tag::oihw : tag::goihw}, engine);
  auto* ws = static_cast<std::int8_t*>(w_u.get_data_handle());
  for (std::size_t i = 0; i < w_u.get_desc().get_size(); ++i)
    ws[i] = static_cast<std::int8_t>(weight(rng));
  dnnl::memory b(bias_md, engine);
  auto* bs = static_cast<std::int32_t*>(b.get_data_handle());
  for (std::int64_t i = 0; i < l.o; ++i) bs[i] = bias(rng);

  dnnl::memory src = src_u, w(pd.weights_desc(), engine), dst(pd.dst_desc(), engine);
  dnnl::reorder(w_u, w).execute(stream, w_u, w);
  if (pd.src_desc() != src_user) {
    src = dnnl::memory(pd.src_desc(), engine);
    dnnl::reorder(src_u, src).execute(stream, src_u, src);
  }
  stream.wait();
  std::int32_t zx = 128, zy = 3;
  dnnl::memory zx_m({{1}, dt::s32, tag::x}, engine, &zx), zy_m({{1}, dt::s32, tag::x}, engine, &zy);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
  if (v.src_zero_point) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zx_m);
  if (v.requant) args.emplace(DNNL_ARG_BIAS, b);
  if (v.requant && v.dst_type == dt::u8)
    args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, zy_m);

  const auto t = measure(
      [&](int) {
        conv.execute(stream, args);
        stream.wait();
      },
      min_time_s, 10);
  return {t.median_s * 1e3, pd.impl_info_str()};
}

std::string pad_to(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  double min_time_s = 0.3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      omp_set_num_threads(std::stoi(argv[++i]));
    } else if (a == "--min-time" && i + 1 < argc) {
      min_time_s = std::stod(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--min-time S]\n", argv[0]);
      return 2;
    }
  }
  // The layers of qforge_bench_cpu_gemm --only conv (benchmarks/suites/suites.cpp), all NHWC
  // here, padded as SAME_UPPER (H and W kept at stride 1).
  const Layer layers[] = {
      {"quick 3x3", 1, 32, 28, 32, 3, 1},
      {"quick 1x1", 1, 64, 28, 64, 1, 1},
      {"quick depthwise 3x3", 1, 64, 28, 64, 3, 64},
      {"ResNet-50 3x3", 1, 64, 56, 64, 3, 1},
      {"ResNet-50 3x3", 32, 64, 56, 64, 3, 1},
      {"ResNet-50 1x1", 1, 256, 56, 64, 1, 1},
      {"ResNet-50 1x1", 32, 256, 56, 64, 1, 1},
      {"MobileNet depthwise 3x3", 1, 144, 56, 144, 3, 144},
      {"MobileNet depthwise 3x3 s2", 1, 144, 56, 144, 3, 144, 2},
      // The Fashion-MNIST CNN's depthwise /5/Conv at batch 256 (issue 16).
      {"CNN depthwise 3x3", 256, 16, 14, 16, 3, 16},
  };
  const Variant variants[] = {{"s32 nhwc", dt::s32, false, false},
                              {"s32 any", dt::s32, true, false},
                              {"u8 nhwc", dt::u8, false, true},
                              {"f32 nhwc", dt::f32, false, true},
                              {"s32 no zp", dt::s32, false, false, false}};
  const dnnl::version_t* ver = dnnl::version();
  std::printf("oneDNN %d.%d.%d (%s), OpenMP threads %d, min time %.2f s\n", ver->major, ver->minor,
              ver->patch, ver->hash, omp_get_max_threads(), min_time_s);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::mt19937 rng(15);
  std::printf("%s", pad_to("layer (NHWC)", 42).c_str());
  for (const auto& v : variants) std::printf("%s", pad_to(std::string(v.name) + " ms", 14).c_str());
  std::printf("implementations (in the columns' order)\n");
  for (const Layer& l : layers) {
    const std::string name = std::string(l.name) + " " + std::to_string(l.n) + "x" +
                             std::to_string(l.c) + "x" + std::to_string(l.hw) + "x" +
                             std::to_string(l.hw) + " o" + std::to_string(l.o);
    std::printf("%s", pad_to(name, 42).c_str());
    std::string impls;
    for (const auto& v : variants) {
      try {
        const Result r = run_variant(engine, stream, l, v, min_time_s, rng);
        std::printf("%s", pad_to(fixed(r.ms, 3), 14).c_str());
        impls += (impls.empty() ? "" : " | ") + r.impl;
      } catch (const dnnl::error& e) {
        std::printf("%s", pad_to("failed", 14).c_str());
        impls += std::string(impls.empty() ? "" : " | ") + "(" + e.what() + ")";
      }
      std::fflush(stdout);
    }
    std::printf("%s\n", impls.c_str());
  }
  return 0;
}
