// Convolution layers at batch 1 (a ResNet 3x3 and 1x1, a stem 7x7 stride 2, a MobileNet
// depthwise 3x3), each as qlinear_conv (fixed point, int32 bias, ReLU) in NCHW and NHWC and as
// conv_dequant, vulkan's plan against cpu_scalar's (the reference) on the same operands. GOPS
// count 2 * outputs * reduction over vulkan's wall time (the op is synchronous: the call returns
// when the results are in device memory). On lavapipe both run on the CPU: the ratio is the
// figure, not the rate.
#include "conv_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "qforge/op_table.h"
#include "qforge/plan.h"

namespace qforge::vkbench {
namespace {

using Clock = std::chrono::steady_clock;

struct Layer {
  const char* name;
  std::int64_t c, hw, o, k, stride, groups;
};

ConvDesc make(const Layer& l, ConvLayout layout, OpKind op) {
  ConvDesc d;
  d.layout = layout;
  d.n = 1, d.c = l.c, d.h = d.w = l.hw, d.out_channels = l.o;
  d.kernel_h = d.kernel_w = l.k;
  d.stride_h = d.stride_w = l.stride;
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = l.k / 2;
  d.groups = l.groups;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 128);
  std::vector<float> sw(static_cast<std::size_t>(l.o));
  for (std::size_t i = 0; i < sw.size(); ++i) sw[i] = 0.001f * static_cast<float>(1 + i % 7);
  d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sw);
  d.bias = ConvBias::int32;
  d.activation = ConvActivation::relu;
  if (op == OpKind::qlinear_conv) {
    d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.05f, 0);
    d.requant_mode = RequantMode::fixed_point;
  }
  return d;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median wall seconds of `reps` runs after one warm-up run.
template <class F>
double seconds(int reps, F&& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median(t);
}

}  // namespace

bool run_conv_bench(QuantizationOps& vk, QuantizationOps* scalar, int reps) {
  const Layer layers[] = {{"resnet 3x3 64->64 @28", 64, 28, 64, 3, 1, 1},
                          {"resnet 1x1 256->64 @28", 256, 28, 64, 1, 1, 1},
                          {"stem 7x7/2 3->64 @112", 3, 112, 64, 7, 2, 1},
                          {"depthwise 3x3 c128 @56", 128, 56, 128, 3, 1, 128}};
  std::mt19937 rng(7);
  std::printf("\n%-46s %-5s %10s %8s %11s %9s\n", "convolution (batch 1)", "", "vulkan ms", "GOPS",
              "scalar ms", "scalar/vk");
  for (const Layer& l : layers)
    for (const OpKind op : {OpKind::qlinear_conv, OpKind::conv_dequant})
      for (const ConvLayout layout : {ConvLayout::nchw, ConvLayout::nhwc}) {
        if (op == OpKind::conv_dequant && layout == ConvLayout::nhwc) continue;
        const ConvDesc d = make(l, layout, op);
        const OpDesc od{op, d};
        const Support s = vk.supports(od);
        if (!s.supported) {
          std::printf("%s: %s\n", l.name, s.reason.c_str());
          return false;
        }
        const OpOperands operands = op_operands(od);
        std::vector<std::vector<std::uint8_t>> in;
        for (const auto& spec : operands.inputs) {
          std::vector<std::uint8_t> b(spec.bytes);
          for (auto& v : b) v = static_cast<std::uint8_t>(rng() & 0xff);
          if (spec.name == "w")
            for (auto& v : b) v = v == 0x80 ? 0x81 : v;  // symmetric int8: no -128
          if (spec.name == "bias")
            for (std::size_t i = 0; i + 4 <= b.size(); i += 4) {
              const std::int32_t v = static_cast<std::int32_t>(rng() % 10001) - 5000;
              std::memcpy(&b[i], &v, 4);
            }
          in.push_back(std::move(b));
        }
        const std::size_t y_bytes = operands.outputs[0].bytes;
        PlanRequest request;
        for (std::size_t i = 0; i < in.size(); ++i)
          request.weights.push_back(i == 0 ? nullptr : in[i].data());
        const auto vk_plan = vk.plan(od, request);
        auto x = vk.allocate(in[0].size());
        vk.copy_to_device(*x, 0, in[0].data(), in[0].size());
        auto y = vk.allocate(y_bytes);
        std::vector<const void*> vin(in.size(), nullptr);
        vin[0] = x->data();
        std::vector<void*> vout = {y->data()};
        const double t_vk = seconds(reps, [&] { vk_plan->run(vin, vout); });
        std::vector<std::uint8_t> got(y_bytes), want(y_bytes);
        vk.copy_to_host(got.data(), *y, 0, y_bytes);
        double t_scalar = 0;
        if (scalar) {
          const auto sp = scalar->plan(od, request);
          std::vector<const void*> sin(in.size(), nullptr);
          sin[0] = in[0].data();
          std::vector<void*> sout = {want.data()};
          t_scalar = seconds(std::min(reps, 3), [&] { sp->run(sin, sout); });
          if (got != want) {
            std::printf("%s: vulkan's output differs from cpu_scalar's\n", l.name);
            return false;
          }
        }
        const double ops = 2.0 * static_cast<double>(d.out_channels * d.out_h() * d.out_w()) *
                           static_cast<double>(d.reduction());
        const std::string what = std::string(l.name) + " " + std::string(to_string(op));
        std::printf("%-46s %-5s %10.3f %8.2f %11.3f %9.2f\n", what.c_str(),
                    std::string(to_string(layout)).c_str(), t_vk * 1e3, ops / t_vk * 1e-9,
                    t_scalar * 1e3, scalar ? t_scalar / t_vk : 0.0);
        std::fflush(stdout);
      }
  return true;
}

}  // namespace qforge::vkbench
