// Quantized convolution: cpu_x86's plans (weights and bias fixed, so packed once) against
// onednn's plans (oneDNN's int8 convolution, weights fixed and reordered once; the CPU anchor of
// issue 15), cpu_scalar's plans (the reference; batch 1 only, it takes seconds) and OpenBLAS's
// float im2col + sgemm of the same geometry (qforge-bench's convolution anchor), on the quick
// suite's convolutions and the full suite's ResNet-50 layers at batch 1 and 32 and MobileNet
// layer. Each qlinear_conv also runs in float-multiplier requantization (the suites use fixed
// point) and, when NHWC, in NCHW: the other epilogue and the transposes.
// GOPS count 2 * outputs * reduction. "call ms" is cpu_x86's per-call op on the same operands
// (descriptor checked and W packed on every call). "x/dnnl" > 1 means cpu_x86 is faster; the
// last column is oneDNN's implementation as the plugin's per-call op reports it.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

#include "anchors.h"
#include "bench.h"
#include "qforge/bench/suites.h"
#include "qforge/op_table.h"
#include "qforge/plan.h"
#include "timing.h"

namespace qforge::bench {
namespace {

std::string pad(std::string s, std::size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

struct Operands {
  std::vector<std::vector<std::uint8_t>> in, out;
};

Operands random_operands(const OpDesc& op, std::mt19937& rng) {
  const OpOperands l = op_operands(op);
  Operands o;
  std::uniform_int_distribution<int> byte(0, 255), bias(-5000, 5000);
  for (const auto& s : l.inputs) {
    std::vector<std::uint8_t> b(s.bytes);
    if (s.name == "bias") {
      for (std::size_t i = 0; i + 4 <= b.size(); i += 4) {
        const std::int32_t v = bias(rng);
        std::memcpy(b.data() + i, &v, 4);
      }
    } else {
      for (auto& v : b) v = static_cast<std::uint8_t>(byte(rng));
      // Symmetric int8 weights use [-127, 127]: no -128.
      if (s.name == "w")
        for (auto& v : b)
          if (v == 0x80) v = 0x81;
    }
    o.in.push_back(std::move(b));
  }
  for (const auto& s : l.outputs) o.out.emplace_back(s.bytes);
  return o;
}

double plan_seconds(QuantizationOps& ops, const OpDesc& op, Operands& o, const Options& opt,
                    std::string* kernel, int min_runs) {
  PlanRequest request;
  for (std::size_t i = 0; i < o.in.size(); ++i)
    request.weights.push_back(i == 0 ? nullptr : o.in[i].data());
  const auto plan = ops.plan(op, request);
  if (kernel) *kernel = plan->kernel();
  std::vector<const void*> in(o.in.size(), nullptr);
  in[0] = o.in[0].data();
  std::vector<void*> out;
  for (auto& b : o.out) out.push_back(b.data());
  return measure([&](int) { plan->run(in, out); }, opt.min_time_s, min_runs).median_s;
}

std::string row_name(const OpDesc& op) {
  const auto& d = std::get<ConvDesc>(op.desc);
  return std::string(to_string(op.op)) + " " + to_string(d.layout).data() + " " +
         std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w) + " o" + std::to_string(d.out_channels) + " k" +
         std::to_string(d.kernel_h) + (d.stride_h > 1 ? " s" + std::to_string(d.stride_h) : "") +
         " g" + std::to_string(d.groups) +
         (op.op == OpKind::qlinear_conv
              ? (d.requant_mode == RequantMode::fixed_point ? " fixed" : " float")
              : "");
}

// Whether a row's name contains one of the '|'-separated texts of --conv-filter (all rows when
// it is empty).
bool matches_filter(const std::string& name, const std::string& filter) {
  if (filter.empty()) return true;
  std::size_t from = 0;
  for (;;) {
    const std::size_t bar = filter.find('|', from);
    const std::string text = filter.substr(from, bar == std::string::npos ? bar : bar - from);
    if (!text.empty() && name.find(text) != std::string::npos) return true;
    if (bar == std::string::npos) return false;
    from = bar + 1;
  }
}

// The per-call op (validates the descriptor and packs W on every call).
double call_seconds(QuantizationOps& ops, const OpDesc& op, Operands& o, const Options& opt) {
  const auto& d = std::get<ConvDesc>(op.desc);
  const void* bias = o.in.size() > 2 ? o.in[2].data() : nullptr;
  return measure(
             [&](int) {
               ops.conv(op.op, d, o.in[0].data(), o.in[1].data(), bias, o.out[0].data());
             },
             opt.min_time_s, opt.min_runs)
      .median_s;
}

// Depthwise layers outside the suites: the Fashion-MNIST CNN's /5/Conv at batch 256 (issue 16:
// 16 channels, so one pixel fills less than a vector) and a stride-2 MobileNet layer.
OpDesc depthwise_layer(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t stride) {
  ConvDesc d;
  d.layout = ConvLayout::nhwc;
  d.n = n;
  d.c = d.out_channels = d.groups = c;
  d.h = d.w = hw;
  d.kernel_h = d.kernel_w = 3;
  d.stride_h = d.stride_w = stride;
  apply_auto_pad(d, AutoPad::same_upper);
  d.x_params = workload_params(DType::uint8, Scheme::per_tensor_affine(), d.x_shape());
  d.w_params = workload_params(DType::int8, Scheme::per_channel_symmetric(0), d.w_shape());
  d.bias = ConvBias::int32;
  d.y_params = workload_params(DType::uint8, Scheme::per_tensor_affine(), d.y_shape());
  d.requant_mode = RequantMode::fixed_point;
  d.activation = ConvActivation::relu;
  return {OpKind::qlinear_conv, d};
}

}  // namespace

std::vector<std::string> run_conv_benchmarks(QuantizationOps& x86, QuantizationOps* onednn,
                                             QuantizationOps* scalar, const Options& opt) {
  std::vector<OpDesc> ops;
  std::vector<NamedWorkload> suite = quick_suite();
  for (auto& w : full_suite()) suite.push_back(std::move(w));
  suite.push_back({"qconv_cnn_dw3x3_nhwc_256x16x14x14", {depthwise_layer(256, 16, 14, 1)}});
  suite.push_back({"qconv_mobilenet_dw3x3_s2_nhwc_1x144x56x56", {depthwise_layer(1, 144, 56, 2)}});
  for (const auto& w : suite) {
    if (w.workload.op.op != OpKind::qlinear_conv && w.workload.op.op != OpKind::conv_integer &&
        w.workload.op.op != OpKind::conv_dequant)
      continue;
    const auto& d = std::get<ConvDesc>(w.workload.op.desc);
    ops.push_back(w.workload.op);
    if (w.workload.op.op == OpKind::qlinear_conv) {
      OpDesc f = w.workload.op;
      std::get<ConvDesc>(f.desc).requant_mode = RequantMode::float_multiplier;
      ops.push_back(f);
      if (d.layout == ConvLayout::nhwc) {
        OpDesc nchw = w.workload.op;
        std::get<ConvDesc>(nchw.desc).layout = ConvLayout::nchw;
        ops.push_back(nchw);
      }
    }
  }
  std::mt19937 rng(77);
  std::vector<std::string> table;
  table.push_back(pad("convolution", 92) + pad("x86 ms", 9) + pad("GOPS", 8) + pad("call ms", 9) +
                  pad("dnnl ms", 9) + pad("x/dnnl", 8) + pad("scalar ms", 11) +
                  pad("x/scalar", 10) + pad("blas ms", 9) + pad("x/blas", 8) + "x86 kernel" +
                  (onednn ? " | onednn" : ""));
  // Every row's plugin measurements first, the OpenBLAS anchors after, and those only once
  // OpenBLAS's threads sleep: they poll with sched_yield for 2^28 cycles (about 0.1 s) after the
  // library starts them at load time and after each threaded call, and at the full thread count
  // they take cores from cpu_x86's and onednn's pools, so that a layer of a few tens of
  // microseconds measures the contention, not a model's steady state (docs/PERFORMANCE.md,
  // "Depthwise convolution at 16 threads").
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  struct Row {
    OpDesc op;
    std::string name, kernel, dnnl_kernel;
    double x = 0, call = 0, s = 0, dnnl = 0;
    bool run_scalar = false;
  };
  std::vector<Row> rows;
  for (const OpDesc& op : ops) {
    const auto& d = std::get<ConvDesc>(op.desc);
    if (!matches_filter(row_name(op), opt.conv_filter)) continue;
    Row r{op, row_name(op), {}, {}};
    Operands o = random_operands(op, rng);
    r.x = plan_seconds(x86, op, o, opt, &r.kernel, opt.min_runs);
    r.call = call_seconds(x86, op, o, opt);
    // cpu_scalar's reference takes tens of seconds at batch 32.
    r.run_scalar = scalar && d.n == 1;
    if (r.run_scalar) r.s = plan_seconds(*scalar, op, o, opt, nullptr, 1);
    if (onednn && onednn->supports(op).supported) {
      r.dnnl = plan_seconds(*onednn, op, o, opt, &r.dnnl_kernel, opt.min_runs);
    } else if (onednn) {
      r.dnnl_kernel = "refused";
    }
    rows.push_back(std::move(r));
  }
  for (const Row& r : rows) {
    const auto& d = std::get<ConvDesc>(r.op.desc);
    const auto blas = conv_sgemm_anchor(d);
    const double gops = 2.0 * static_cast<double>(d.n * d.out_channels * d.out_h() * d.out_w()) *
                        static_cast<double>(d.reduction()) / r.x * 1e-9;
    table.push_back(pad(r.name, 92) + pad(fixed(r.x * 1e3, 3), 9) + pad(fixed(gops, 1), 8) +
                    pad(fixed(r.call * 1e3, 3), 9) +
                    pad(r.dnnl > 0 ? fixed(r.dnnl * 1e3, 3) : "-", 9) +
                    pad(r.dnnl > 0 ? fixed(r.dnnl / r.x, 2) : "-", 8) +
                    pad(r.run_scalar ? fixed(r.s * 1e3, 1) : "-", 11) +
                    pad(r.run_scalar ? fixed(r.s / r.x, 1) : "-", 10) +
                    pad(blas ? fixed(blas->seconds * 1e3, 3) : "-", 9) +
                    pad(blas ? fixed(blas->seconds / r.x, 2) : "-", 8) + r.kernel +
                    (onednn ? " | " + r.dnnl_kernel : ""));
    std::printf("%s\n", table.back().c_str());
    std::fflush(stdout);
  }
  return table;
}

}  // namespace qforge::bench
