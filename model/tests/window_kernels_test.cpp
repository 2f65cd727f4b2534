// The direct convolution (one input channel per group: depthwise and single-channel first
// layers) and the 2-D pools on random geometries against plain loops: odd sizes, asymmetric
// pads, strides, dilations, channel multipliers, and images smaller than the window's span.
//
// The direct convolution adds bias + taps in row-major order on every path (flat stride-1 planes,
// strided rows, 3x3 or any kernel), padding taps adding w * 0, so it must equal a plain float
// loop in that order bit for bit, and be identical for every thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "onnx_builder.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

struct Geometry {
  std::int64_t n, c, mult, h, w, kh, kw, sh, sw, dh, dw;
  std::int64_t pt, pl, pb, pr;  // pads: top, left, bottom, right
  std::int64_t oh() const { return (h + pt + pb - (kh - 1) * dh - 1) / sh + 1; }
  std::int64_t ow() const { return (w + pl + pr - (kw - 1) * dw - 1) / sw + 1; }
  std::string text() const {
    return "x [" + std::to_string(n) + "," + std::to_string(c) + "," + std::to_string(h) + "," +
           std::to_string(w) + "] mult " + std::to_string(mult) + " kernel " + std::to_string(kh) +
           "x" + std::to_string(kw) + " strides " + std::to_string(sh) + "," + std::to_string(sw) +
           " dilations " + std::to_string(dh) + "," + std::to_string(dw) + " pads " +
           std::to_string(pt) + "," + std::to_string(pl) + "," + std::to_string(pb) + "," +
           std::to_string(pr);
  }
};

std::int64_t pick(std::mt19937_64& g, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
}

// A random geometry whose window fits the padded input. Half of them keep the output width equal
// to the input width at stride 1 (the "same" convs of real models, the direct conv's flat path).
Geometry random_geometry(std::mt19937_64& g, bool conv) {
  for (;;) {
    Geometry s{};
    s.n = pick(g, 1, 3);
    s.c = pick(g, 1, 4);
    s.mult = conv ? pick(g, 1, 3) : 1;
    s.h = pick(g, 1, 19);
    s.w = pick(g, 1, 31);
    s.kh = pick(g, 1, 5);
    s.kw = pick(g, 1, 5);
    s.dh = pick(g, 1, 3) == 1 ? 1 : pick(g, 1, 3);
    s.dw = pick(g, 1, 3) == 1 ? 1 : pick(g, 1, 3);
    s.sh = pick(g, 1, 3);
    s.sw = pick(g, 1, 3);
    s.pt = pick(g, 0, 3);
    s.pb = pick(g, 0, 3);
    s.pl = pick(g, 0, 3);
    s.pr = pick(g, 0, 3);
    if (pick(g, 0, 1) == 1) {
      s.sh = s.sw = 1;
      const std::int64_t total = (s.kw - 1) * s.dw;
      s.pl = pick(g, 0, total);
      s.pr = total - s.pl;
    }
    if (!conv) {  // pools: pads smaller than the window, ONNX's rule
      s.pt = std::min(s.pt, s.kh - 1);
      s.pb = std::min(s.pb, s.kh - 1);
      s.pl = std::min(s.pl, s.kw - 1);
      s.pr = std::min(s.pr, s.kw - 1);
    }
    if (s.h + s.pt + s.pb >= (s.kh - 1) * s.dh + 1 && s.w + s.pl + s.pr >= (s.kw - 1) * s.dw + 1)
      return s;
  }
}

Graph conv_graph(const Geometry& s, const std::vector<float>& w, const std::vector<float>& b) {
  OnnxBuilder m(17);
  const std::int64_t oc = s.c * s.mult;
  m.input("x", F, {s.n, s.c, s.h, s.w});
  m.initializer("w", {oc, 1, s.kh, s.kw}, w);
  m.initializer("b", {oc}, b);
  auto& n = m.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  OnnxBuilder::attr(n, "group", s.c);
  OnnxBuilder::attr(n, "strides", std::vector<std::int64_t>{s.sh, s.sw});
  OnnxBuilder::attr(n, "dilations", std::vector<std::int64_t>{s.dh, s.dw});
  OnnxBuilder::attr(n, "pads", std::vector<std::int64_t>{s.pt, s.pl, s.pb, s.pr});
  m.output("y", F, {s.n, oc, s.oh(), s.ow()});
  return import_onnx_bytes(m.bytes(), "direct_conv");
}

// bias + w * x over every tap in row-major order, in float, a padding tap's x being zero.
std::vector<float> plain_conv(const Geometry& s, std::span<const float> x,
                              const std::vector<float>& w, const std::vector<float>& b) {
  const std::int64_t m = s.c * s.mult, oh_n = s.oh(), ow_n = s.ow();
  std::vector<float> y;
  for (std::int64_t n = 0; n < s.n; ++n)
    for (std::int64_t oc = 0; oc < m; ++oc)
      for (std::int64_t oh = 0; oh < oh_n; ++oh)
        for (std::int64_t ow = 0; ow < ow_n; ++ow) {
          float acc = b[oc];
          for (std::int64_t kh = 0; kh < s.kh; ++kh)
            for (std::int64_t kw = 0; kw < s.kw; ++kw) {
              const std::int64_t ih = oh * s.sh - s.pt + kh * s.dh;
              const std::int64_t iw = ow * s.sw - s.pl + kw * s.dw;
              const bool inside = ih >= 0 && ih < s.h && iw >= 0 && iw < s.w;
              acc += w[(oc * s.kh + kh) * s.kw + kw] *
                     (inside ? x[((n * s.c + oc / s.mult) * s.h + ih) * s.w + iw] : 0.0f);
            }
          y.push_back(acc);
        }
  return y;
}

TEST(DirectConv, RandomGeometriesMatchAPlainLoopBitForBit) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(1601);
  for (int i = 0; i < 300; ++i) {
    const Geometry s = random_geometry(g, true);
    SCOPED_TRACE(s.text());
    const std::int64_t m = s.c * s.mult;
    const auto w = test::random_values(g, static_cast<std::size_t>(m * s.kh * s.kw));
    const auto b = test::random_values(g, static_cast<std::size_t>(m));
    const Tensor x = test::random_tensor(g, {s.n, s.c, s.h, s.w});
    const Graph graph = conv_graph(s, w, b);
    const Tensor y = Executor(graph, {}, ExecutorOptions{.threads = 1}).run({{"x", x}}).at("y");
    ASSERT_EQ(y.shape(), (Shape{s.n, m, s.oh(), s.ow()}));
    const auto want = plain_conv(s, x.values<float>(), w, b);
    const auto got = y.values<float>();
    for (std::size_t k = 0; k < want.size(); ++k) ASSERT_EQ(got[k], want[k]) << "element " << k;
    const Tensor y3 = Executor(graph, {}, ExecutorOptions{.threads = 3}).run({{"x", x}}).at("y");
    ASSERT_EQ(std::memcmp(y.data(), y3.data(), y.byte_size()), 0) << "3 threads differ";
  }
}

// Windows that see only padding: the stride steps over the input's columns (or rows).
TEST(DirectConv, WindowsInThePaddingAlone) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(1604);
  for (const Geometry& s : {Geometry{1, 1, 2, 3, 1, 1, 1, 1, 3, 1, 1, 0, 2, 0, 0},
                            Geometry{1, 2, 1, 1, 4, 1, 1, 3, 1, 1, 1, 2, 0, 0, 0},
                            Geometry{2, 1, 1, 1, 1, 2, 2, 3, 3, 1, 1, 1, 1, 3, 3}}) {
    SCOPED_TRACE(s.text());
    const std::int64_t m = s.c * s.mult;
    const auto w = test::random_values(g, static_cast<std::size_t>(m * s.kh * s.kw));
    const auto b = test::random_values(g, static_cast<std::size_t>(m));
    const Tensor x = test::random_tensor(g, {s.n, s.c, s.h, s.w});
    const Tensor y = Executor(conv_graph(s, w, b)).run({{"x", x}}).at("y");
    const auto want = plain_conv(s, x.values<float>(), w, b);
    ASSERT_EQ(y.shape(), (Shape{s.n, m, s.oh(), s.ow()}));
    EXPECT_EQ(std::memcmp(y.data(), want.data(), y.byte_size()), 0);
  }
}

// Large enough that the executor's pool splits the planes, in the shapes of the example CNN.
TEST(DirectConv, SplitPlanesAreIdenticalToOneThread) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(1602);
  for (const Geometry& s : {Geometry{16, 1, 16, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
                            Geometry{32, 16, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
                            Geometry{8, 8, 2, 33, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}}) {
    SCOPED_TRACE(s.text());
    const std::int64_t m = s.c * s.mult;
    const auto w = test::random_values(g, static_cast<std::size_t>(m * s.kh * s.kw));
    const auto b = test::random_values(g, static_cast<std::size_t>(m));
    const Tensor x = test::random_tensor(g, {s.n, s.c, s.h, s.w});
    const Graph graph = conv_graph(s, w, b);
    const Tensor one = Executor(graph, {}, ExecutorOptions{.threads = 1}).run({{"x", x}}).at("y");
    const auto want = plain_conv(s, x.values<float>(), w, b);
    ASSERT_EQ(std::memcmp(one.data(), want.data(), one.byte_size()), 0);
    for (const int threads : {2, 4}) {
      const Tensor many =
          Executor(graph, {}, ExecutorOptions{.threads = threads}).run({{"x", x}}).at("y");
      EXPECT_EQ(std::memcmp(one.data(), many.data(), one.byte_size()), 0) << threads << " threads";
    }
  }
}

Graph pool_graph(const Geometry& s, const std::string& op) {
  OnnxBuilder m(12);
  m.input("x", F, {s.n, s.c, s.h, s.w});
  auto& n = m.node(op, {"x"}, {"y"}, "pool");
  OnnxBuilder::attr(n, "kernel_shape", std::vector<std::int64_t>{s.kh, s.kw});
  OnnxBuilder::attr(n, "strides", std::vector<std::int64_t>{s.sh, s.sw});
  OnnxBuilder::attr(n, "pads", std::vector<std::int64_t>{s.pt, s.pl, s.pb, s.pr});
  if (op == "MaxPool") OnnxBuilder::attr(n, "dilations", std::vector<std::int64_t>{s.dh, s.dw});
  m.output("y", F, {s.n, s.c, s.oh(), s.ow()});
  return import_onnx_bytes(m.bytes(), "pool");
}

// MaxPool and AveragePool (without count_include_pad) on random geometries, a quarter of them
// 2x2 stride 2 unpadded (the vectorised MaxPool path), against loops in double.
TEST(Pool2d, RandomGeometriesMatchAPlainLoop) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(1603);
  for (int i = 0; i < 300; ++i) {
    Geometry s = random_geometry(g, false);
    const std::string op = pick(g, 0, 2) == 0 ? "AveragePool" : "MaxPool";
    if (op == "AveragePool") s.dh = s.dw = 1;
    if (pick(g, 0, 3) == 0 || s.h + s.pt + s.pb < (s.kh - 1) * s.dh + 1 ||
        s.w + s.pl + s.pr < (s.kw - 1) * s.dw + 1) {
      s = Geometry{s.n, s.c, 1, pick(g, 2, 19), pick(g, 2, 31), 2, 2, 2, 2, 1, 1, 0, 0, 0, 0};
    }
    SCOPED_TRACE(op + " " + s.text());
    const Tensor x = test::random_tensor(g, {s.n, s.c, s.h, s.w});
    const Graph graph = pool_graph(s, op);
    const Tensor y = Executor(graph, {}, ExecutorOptions{.threads = 1}).run({{"x", x}}).at("y");
    ASSERT_EQ(y.shape(), (Shape{s.n, s.c, s.oh(), s.ow()}));
    const auto xv = x.values<float>();
    const auto got = y.values<float>();
    std::size_t k = 0;
    for (std::int64_t plane = 0; plane < s.n * s.c; ++plane)
      for (std::int64_t oh = 0; oh < s.oh(); ++oh)
        for (std::int64_t ow = 0; ow < s.ow(); ++ow, ++k) {
          double acc = op == "MaxPool" ? -INFINITY : 0.0;
          std::int64_t valid = 0;
          for (std::int64_t kh = 0; kh < s.kh; ++kh)
            for (std::int64_t kw = 0; kw < s.kw; ++kw) {
              const std::int64_t ih = oh * s.sh - s.pt + kh * s.dh;
              const std::int64_t iw = ow * s.sw - s.pl + kw * s.dw;
              if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
              const double v = xv[static_cast<std::size_t>((plane * s.h + ih) * s.w + iw)];
              acc = op == "MaxPool" ? std::max(acc, v) : acc + v;
              ++valid;
            }
          if (op == "AveragePool") acc /= static_cast<double>(valid);
          // A window wholly in the padding: MaxPool gives -inf, AveragePool 0 / 0.
          if (std::isnan(acc)) ASSERT_TRUE(std::isnan(got[k])) << "element " << k;
          else if (std::isinf(acc)) ASSERT_EQ(got[k], acc) << "element " << k;
          else ASSERT_NEAR(got[k], acc, 1e-5 * (1 + std::fabs(acc))) << "element " << k;
        }
    const Tensor y3 = Executor(graph, {}, ExecutorOptions{.threads = 3}).run({{"x", x}}).at("y");
    ASSERT_EQ(std::memcmp(y.data(), y3.data(), y.byte_size()), 0) << "3 threads differ";
  }
}

// A NaN tap loses to any other value in the 2x2 stride-2 MaxPool, as in the general window loop.
TEST(Pool2d, MaxPool2x2IgnoresNaNTaps) {
  Geometry s{1, 1, 1, 4, 6, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0};
  std::vector<float> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) - 12.0f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  v[0] = nan;   // window (0, 0): top-left tap
  v[9] = nan;   // window (0, 1): bottom-right tap (row 1, column 3)
  v[16] = nan;  // window (1, 2): top-left tap (row 2, column 4)
  const Tensor x = Tensor::from_values<float>({1, 1, 4, 6}, std::span<const float>(v));
  const Tensor y = Executor(pool_graph(s, "MaxPool")).run({{"x", x}}).at("y");
  const std::vector<float> want = {-5, -4, -1, 7, 9, 11};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y.values<float>()[i], want[i]) << i;
}

}  // namespace
}  // namespace qforge::model
