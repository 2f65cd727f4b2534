#include "bench_conv.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "anchors.h"
#include "qforge/reference.h"

namespace qforge::bench {
namespace {

struct Layer {
  const char* name;
  std::int64_t c, hw, o, k, stride, groups;
};

std::int64_t count(const Shape& s) {
  std::int64_t n = 1;
  for (const auto e : s) n *= e;
  return n;
}

// The full suite's convolution (benchmarks/suites): u8 activations per tensor, s8 weights per
// output channel, int32 bias, fixed-point requantization to u8 with a fused ReLU.
ConvDesc layer_desc(const Layer& l, std::int64_t batch) {
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = batch, d.c = l.c, d.h = l.hw, d.w = l.hw, d.out_channels = l.o;
  d.kernel_h = d.kernel_w = l.k;
  d.stride_h = d.stride_w = l.stride;
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = l.k / 2;
  d.groups = l.groups;
  d.x_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.02f, 128);
  std::vector<float> sw(static_cast<std::size_t>(l.o));
  for (std::size_t i = 0; i < sw.size(); ++i) sw[i] = 0.001f + 0.0001f * static_cast<float>(i % 7);
  d.w_params = QuantizationParams::per_channel(DType::int8, Mapping::symmetric, 0, sw);
  d.bias = ConvBias::int32;
  d.y_params = QuantizationParams::per_tensor_affine(DType::uint8, 0.05f, 0);
  d.requant_mode = RequantMode::fixed_point;
  d.activation = ConvActivation::relu;
  return d;
}

std::shared_ptr<Buffer> device_copy(QuantizationOps& ops, const void* host, std::size_t bytes) {
  auto b = ops.allocate(bytes);
  if (host) ops.copy_to_device(*b, 0, host, bytes);
  return b;
}

}  // namespace

void conv_section(QuantizationOps& ops, QuantizationOps* cpu, std::mt19937_64& rng,
                  const AddRow& add, int reps) {
  std::printf(
      "\nconvolution (qlinear_conv NHWC u8 x s8 per-channel, int32 bias, fixed point, relu)\n");
  const Layer layers[] = {
      {"resnet50 3x3 layer1", 64, 56, 64, 3, 1, 1},
      {"resnet50 3x3 layer3", 256, 14, 256, 3, 1, 1},
      {"resnet50 1x1 layer1 256->64", 256, 56, 64, 1, 1, 1},
      {"mobilenet depthwise 3x3", 144, 56, 144, 3, 1, 144},
  };
  std::uniform_int_distribution<int> byte(0, 255), small(-2000, 2000);
  // QFORGE_BENCH_CONV_BATCH=N runs batch N alone (e.g. to profile one launch with ncu).
  std::vector<std::int64_t> batches = {1, 32};
  if (const char* env = std::getenv("QFORGE_BENCH_CONV_BATCH")) batches = {std::atoll(env)};
  for (const Layer& l : layers)
    for (const std::int64_t batch : batches) {
      const ConvDesc d = layer_desc(l, batch);
      const OpKind op = OpKind::qlinear_conv;
      std::vector<std::uint8_t> x(static_cast<std::size_t>(count(d.x_shape())));
      std::vector<std::uint8_t> w(static_cast<std::size_t>(count(d.w_shape())));
      std::vector<std::int32_t> bias(static_cast<std::size_t>(d.out_channels));
      for (auto& v : x) v = static_cast<std::uint8_t>(byte(rng));
      for (auto& v : w) v = static_cast<std::uint8_t>(byte(rng) | 0x01);  // never -128
      for (auto& v : bias) v = small(rng);
      const std::size_t ybytes = static_cast<std::size_t>(count(d.y_shape()));
      auto dx = device_copy(ops, x.data(), x.size()), dw = device_copy(ops, w.data(), w.size()),
           db = device_copy(ops, bias.data(), bias.size() * 4),
           dy = device_copy(ops, nullptr, ybytes);
      auto run = [&] { ops.conv(op, d, dx->data(), dw->data(), db->data(), dy->data()); };
      run();
      ops.synchronize();
      bool ok = true;
      if (batch == 1) {  // bit for bit against the reference (batch 32 takes the host minutes)
        std::vector<std::uint8_t> got(ybytes), want(ybytes);
        ops.copy_to_host(got.data(), *dy, 0, ybytes);
        reference::conv(op, d, x.data(), w.data(), bias.data(), want.data());
        ok = got == want;
      }
      const float ms = time_ms(run, 3, reps);
      const double macs =
          static_cast<double>(count(d.y_shape())) * static_cast<double>(d.reduction());
      const double tops = 2.0 * macs / (ms * 1e-3) / 1e12;
      const std::string shape = std::to_string(batch) + "x" + std::to_string(l.c) + "x" +
                                std::to_string(l.hw) + "^2 o" + std::to_string(l.o);
      double anchor = 0;
      std::string anchor_name;
      if (l.groups == 1) {
        // The GEMM of the same MACs: [N*OH*OW, C*KH*KW] x [O, C*KH*KW]^T.
        const std::int64_t m = d.n * d.out_h() * d.out_w(), n = d.out_channels, k = d.reduction();
        auto a = device_copy(ops, nullptr, static_cast<std::size_t>(m * k));
        auto b = device_copy(ops, nullptr, static_cast<std::size_t>(n * k));
        auto c = device_copy(ops, nullptr, static_cast<std::size_t>(m * n) * 4);
        const float gemm_ms = cublaslt_s8_gemm_ms(
            static_cast<const std::int8_t*>(a->data()), static_cast<const std::int8_t*>(b->data()),
            static_cast<std::int32_t*>(c->data()), static_cast<int>(m), static_cast<int>(n),
            static_cast<int>(k), reps);
        if (gemm_ms > 0) {
          anchor = 2.0 * macs / (gemm_ms * 1e-3) / 1e12;
          anchor_name = "cuBLASLt s8 GEMM same MACs";
        }
      }
      add(std::string(l.name) + " [" + ops.plan({op, d}, PlanRequest{})->kernel() + "]", shape, ms,
          tops, "TOPS", anchor_name, anchor, "report", ok);
      {
        // Without the int32 bias the call queues its kernels and returns; with it, the call
        // waits for the overflow flag (docs/CUDA.md, "Convolution").
        ConvDesc nb = d;
        nb.bias = ConvBias::none;
        auto run_nb = [&] { ops.conv(op, nb, dx->data(), dw->data(), nullptr, dy->data()); };
        const float ms_nb = time_ms(run_nb, 3, reps);
        add(std::string(l.name) + ", no bias (no sync)", shape, ms_nb,
            2.0 * macs / (ms_nb * 1e-3) / 1e12, "TOPS", anchor_name, anchor, "report", true);
      }
      {
        // A plan with W and the int32 bias fixed: the plugin proves when the plan is made that
        // acc + bias cannot leave int32 for any X, and its runs then wait for no overflow flag
        // (docs/CUDA.md, "Convolution"). Batch 1: checked bit for bit.
        const auto plan = ops.plan(
            {op, d}, PlanRequest{ops.default_device(), {}, {nullptr, w.data(), bias.data()}});
        auto run_fixed = [&] { plan->run({dx->data(), nullptr, nullptr}, {dy->data()}); };
        run_fixed();
        ops.synchronize();
        bool same = true;
        if (batch == 1) {
          std::vector<std::uint8_t> got(ybytes), want(ybytes);
          ops.copy_to_host(got.data(), *dy, 0, ybytes);
          reference::conv(op, d, x.data(), w.data(), bias.data(), want.data());
          same = got == want;
        }
        const float ms_fixed = time_ms(run_fixed, 3, reps);
        add(std::string(l.name) + ", plan, W and int32 bias fixed", shape, ms_fixed,
            2.0 * macs / (ms_fixed * 1e-3) / 1e12, "TOPS", anchor_name, anchor, "report", same);
        // The same plan without the bias: what the bias costs once it needs no check.
        ConvDesc nb = d;
        nb.bias = ConvBias::none;
        const auto plan_nb =
            ops.plan({op, nb}, PlanRequest{ops.default_device(), {}, {nullptr, w.data()}});
        const float ms_nb = time_ms(
            [&] {
              plan_nb->run({dx->data(), nullptr}, {dy->data()});
            },
            3, reps);
        add(std::string(l.name) + ", plan, W fixed, no bias", shape, ms_nb,
            2.0 * macs / (ms_nb * 1e-3) / 1e12, "TOPS", anchor_name, anchor, "report", true);
      }
      {
        // Every kernel the plugin lists for the shape, through plans of it, without the bias
        // (batch 1: with it too, checked bit for bit), so that one run compares the tiles the
        // choice weighs.
        std::vector<std::uint8_t> want;
        if (batch == 1) {
          want.resize(ybytes);
          reference::conv(op, d, x.data(), w.data(), bias.data(), want.data());
        }
        ConvDesc nb = d;
        nb.bias = ConvBias::none;
        for (const auto& kernel : ops.supports({op, d}).kernels) {
          bool same = true;
          if (batch == 1) {
            std::vector<const void*> in{dx->data(), dw->data()};
            if (d.bias != ConvBias::none) in.push_back(db->data());
            ops.plan({op, d}, PlanRequest{ops.default_device(), kernel, {}})
                ->run(in, std::vector<void*>{dy->data()});
            std::vector<std::uint8_t> got(ybytes);
            ops.copy_to_host(got.data(), *dy, 0, ybytes);
            same = got == want;
          }
          const auto plan = ops.plan({op, nb}, PlanRequest{ops.default_device(), kernel, {}});
          const float k_ms = time_ms(
              [&] {
                plan->run({dx->data(), dw->data()}, {dy->data()});
              },
              3, reps);
          std::printf("    plan of %-55s %.4f ms no bias (%.1f TOPS)%s\n", kernel.c_str(), k_ms,
                      2.0 * macs / (k_ms * 1e-3) / 1e12, same ? "" : "  WRONG RESULT");
        }
      }
      if (cpu) {
        // The CPU plugin on this host's cores, host memory.
        std::vector<std::uint8_t> yc(ybytes);
        auto once = [&] { cpu->conv(op, d, x.data(), w.data(), bias.data(), yc.data()); };
        once();
        const int n = batch == 1 ? 10 : 3;
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < n; ++i) once();
        const double cms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count() /
            n;
        std::printf("    %s on this host: %.3f ms (%.2f TOPS); cuda is %.1fx faster [%s]\n",
                    cpu->name().c_str(), cms, 2.0 * macs / (cms * 1e-3) / 1e12, cms / ms,
                    cpu->plan({op, d}, PlanRequest{})->kernel().c_str());
      }
    }
}

}  // namespace qforge::bench
