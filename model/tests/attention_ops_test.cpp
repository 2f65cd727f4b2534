// The float kernels of a transformer's attention and normalisation (broadcasting binary ops,
// Softmax, LayerNormalization, Transpose, batched MatMul, trailing-axis reductions) against
// plain loops, on fresh random shapes with odd sizes and the broadcast patterns BERT uses, run
// on a pool of 3 threads; and a batched MatMul bit-identical to one thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "onnx_builder.h"
#include "qforge/model/executor.h"
#include "qforge/model/onnx_import.h"
#include "test_support.h"

namespace qforge::model {
namespace {

using testing::OnnxBuilder;
constexpr int F = onnx::TensorProto::FLOAT;

std::int64_t pick(std::mt19937_64& g, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
}

// Strides of a row-major shape.
Shape strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// The index of element `linear` of `out` in an operand of shape `in` broadcast to it.
std::int64_t broadcast_index(const Shape& out, const Shape& in, std::int64_t linear) {
  const Shape st = strides(in);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t d = out.size() - 1 - i;
    const std::int64_t idx = linear % out[d];
    linear /= out[d];
    if (i < in.size()) {
      const std::size_t di = in.size() - 1 - i;
      if (in[di] != 1) at += idx * st[di];
    }
  }
  return at;
}

testing::Dims dims(const Shape& s) { return testing::Dims(s.begin(), s.end()); }

TensorMap run_one(OnnxBuilder& m, const TensorMap& in, int threads = 3) {
  const Executor e(import_onnx_bytes(m.bytes(), "attention_ops"), {},
                   ExecutorOptions{.threads = threads});
  return e.run(in);
}

TEST(AttentionOps, BinaryOpsBroadcastLikePlainLoops) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(501);
  for (int round = 0; round < 12; ++round) {
    // [b, s, h]-like shapes, odd sizes; one round large enough to split rows across threads.
    const std::int64_t b = pick(g, 1, 5), s = pick(g, 1, 40),
                       h = round == 0 ? 4099 : pick(g, 1, 70);
    const Shape out{b, s, 3, h};
    // BERT's patterns: bias [h], mask [b, 1, 1, h], a per-row statistic [b, s, 3, 1], a scalar,
    // the same shape, and the broadcast on the left operand.
    const std::vector<std::pair<Shape, Shape>> patterns = {
        {out, {h}}, {out, {b, 1, 1, h}}, {out, {b, s, 3, 1}},         {out, {}},
        {out, out}, {{h}, out},          {{b, 1, 3, 1}, {1, s, 1, h}}};
    const auto& [sa, sb] = patterns[static_cast<std::size_t>(round) % patterns.size()];
    SCOPED_TRACE(qforge::to_string(sa) + " with " + qforge::to_string(sb));
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      SCOPED_TRACE(op);
      OnnxBuilder m(17);
      m.input("a", F, dims(sa)).input("b", F, dims(sb)).output("y", F, dims(out));
      m.node(op, {"a", "b"}, {"y"}, "op");
      const Tensor a = test::random_tensor(g, sa, -2.0f, 2.0f);
      const Tensor bt = test::random_tensor(g, sb, 0.5f, 2.0f);
      const Tensor y = run_one(m, {{"a", a}, {"b", bt}}).at("y");
      const auto av = a.values<float>(), bv = bt.values<float>(), yv = y.values<float>();
      for (std::int64_t i = 0; i < element_count(out); ++i) {
        const float u = av[static_cast<std::size_t>(broadcast_index(out, sa, i))];
        const float v = bv[static_cast<std::size_t>(broadcast_index(out, sb, i))];
        const float want = op[0] == 'A'   ? u + v
                           : op[0] == 'S' ? u - v
                           : op[0] == 'M' ? u * v
                                          : u / v;
        ASSERT_EQ(yv[static_cast<std::size_t>(i)], want) << "element " << i;
      }
    }
  }
}

TEST(AttentionOps, SoftmaxOverTheLastAxisMatchesDouble) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(502);
  for (const std::int64_t len : {1, 7, 8, 9, 31, 128, 131}) {
    const std::int64_t rows = pick(g, 1, 300);
    SCOPED_TRACE("rows " + std::to_string(rows) + " len " + std::to_string(len));
    OnnxBuilder m(17);
    m.input("x", F, {rows, len}).output("y", F, {rows, len});
    m.node("Softmax", {"x"}, {"y"}, "softmax");
    Tensor x = test::random_tensor(g, {rows, len}, -30.0f, 30.0f);
    // Masked positions as BERT writes them: the lowest float added to the score.
    auto xv = x.values<float>();
    for (std::size_t i = 0; i < xv.size(); i += 3)
      if (i % static_cast<std::size_t>(len) != 0) xv[i] += std::numeric_limits<float>::lowest();
    const Tensor y = run_one(m, {{"x", x}}).at("y");
    const auto yv = y.values<float>();
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* xr = xv.data() + r * len;
      // The difference to the max in float, as any float softmax forms it (its rounding alone
      // moves exp by up to 60 · 2^-24 relative); exp and the sum in double.
      const float mx = *std::max_element(xr, xr + len);
      double sum = 0;
      for (std::int64_t j = 0; j < len; ++j) sum += std::exp(double(xr[j] - mx));
      for (std::int64_t j = 0; j < len; ++j) {
        const double want = std::exp(double(xr[j] - mx)) / sum;
        const float got = yv[static_cast<std::size_t>(r * len + j)];
        ASSERT_NEAR(got, want, 2e-6 * want + 1e-30) << "row " << r << " column " << j;
        if (xr[j] < -1e30f) {
          ASSERT_EQ(got, 0.0f) << "a masked position";
        }
      }
    }
  }
}

TEST(AttentionOps, SoftmaxExpAcrossItsRange) {
  // Rows [x, 0]: y0 = e^x / (e^x + 1), exp over [-100, 0] through the kernel's polynomial,
  // with NaN and -inf rows.
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(503);
  std::vector<float> x;
  for (float v = -100.0f; v <= 0.0f; v += 0.0137f) x.push_back(v);
  for (float v : test::random_values(g, 5000, -90.0f, 0.0f)) x.push_back(v);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  x.push_back(nan);
  x.push_back(-std::numeric_limits<float>::infinity());
  const auto rows = static_cast<std::int64_t>(x.size());
  std::vector<float> in(x.size() * 2, 0.0f);
  for (std::size_t i = 0; i < x.size(); ++i) in[2 * i] = x[i];
  OnnxBuilder m(17);
  m.input("x", F, {rows, 2}).output("y", F, {rows, 2});
  m.node("Softmax", {"x"}, {"y"}, "softmax");
  const Tensor y = run_one(m, {{"x", Tensor::from_values<float>({rows, 2}, in)}}).at("y");
  const auto yv = y.values<float>();
  for (std::size_t i = 0; i < x.size(); ++i) {
    SCOPED_TRACE("x = " + std::to_string(x[i]));
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(yv[2 * i]));
      continue;
    }
    const double e = std::exp(double(x[i]));
    const double want = e / (e + 1.0);
    if (want < std::numeric_limits<float>::min()) {
      EXPECT_LE(yv[2 * i], std::numeric_limits<float>::min());
    } else {
      EXPECT_NEAR(yv[2 * i], want, 5e-7 * want);
    }
    EXPECT_NEAR(yv[2 * i + 1], 1.0 / (e + 1.0), 1.2e-7);
  }
}

TEST(AttentionOps, LayerNormalizationMatchesDouble) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(504);
  for (const std::int64_t cols : {1, 5, 8, 17, 384, 391}) {
    const std::int64_t rows = pick(g, 1, 200);
    SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols));
    for (const bool with_bias : {true, false}) {
      OnnxBuilder m(17);
      m.input("x", F, {rows, cols}).output("y", F, {rows, cols});
      const auto scale = test::random_values(g, static_cast<std::size_t>(cols));
      const auto bias = test::random_values(g, static_cast<std::size_t>(cols));
      m.initializer("scale", {cols}, scale);
      m.initializer("bias", {cols}, bias);
      std::vector<std::string> ins = {"x", "scale"};
      if (with_bias) ins.push_back("bias");
      OnnxBuilder::attr(m.node("LayerNormalization", ins, {"y"}, "ln"), "epsilon", 1e-5f);
      const Tensor x = test::random_tensor(g, {rows, cols}, -4.0f, 6.0f);
      const Tensor y = run_one(m, {{"x", x}}).at("y");
      const auto xv = x.values<float>(), yv = y.values<float>();
      for (std::int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (std::int64_t j = 0; j < cols; ++j) mean += xv[static_cast<std::size_t>(r * cols + j)];
        mean /= double(cols);
        for (std::int64_t j = 0; j < cols; ++j) {
          const double d = xv[static_cast<std::size_t>(r * cols + j)] - mean;
          var += d * d;
        }
        const double inv = 1.0 / std::sqrt(var / double(cols) + 1e-5);
        for (std::int64_t j = 0; j < cols; ++j) {
          const auto i = static_cast<std::size_t>(r * cols + j);
          const auto c = static_cast<std::size_t>(j);
          const double want = (xv[i] - mean) * inv * scale[c] + (with_bias ? bias[c] : 0.0);
          ASSERT_NEAR(yv[i], want, 2e-5 * (1.0 + std::abs(want))) << "row " << r << " col " << j;
        }
      }
    }
  }
}

TEST(AttentionOps, TransposeMatchesIndexLoop) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(505);
  // BERT's head splits first ([b,s,h,d] -> [b,h,s,d] and -> [b,h,d,s]), then random ones.
  std::vector<std::pair<Shape, std::vector<std::int64_t>>> cases = {
      {{3, 37, 5, 17}, {0, 2, 1, 3}},
      {{3, 37, 5, 17}, {0, 2, 3, 1}},
      {{8, 128, 12, 32}, {0, 2, 3, 1}},
      {{8, 128, 12, 32}, {0, 2, 1, 3}}};
  for (int i = 0; i < 12; ++i) {
    const auto rank = static_cast<std::size_t>(pick(g, 1, 5));
    Shape s(rank);
    for (auto& d : s) d = pick(g, 1, 19);
    std::vector<std::int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), g);
    cases.emplace_back(s, perm);
  }
  for (const auto& [s, perm] : cases) {
    Shape os;
    for (std::int64_t p : perm) os.push_back(s[static_cast<std::size_t>(p)]);
    SCOPED_TRACE(qforge::to_string(s) + " perm " +
                 qforge::to_string(Shape(perm.begin(), perm.end())));
    OnnxBuilder m(17);
    m.input("x", F, dims(s)).output("y", F, dims(os));
    OnnxBuilder::attr(m.node("Transpose", {"x"}, {"y"}, "tr"), "perm", perm);
    const Tensor x = test::random_tensor(g, s);
    const Tensor y = run_one(m, {{"x", x}}).at("y");
    const Shape ist = strides(s);
    const auto xv = x.values<float>(), yv = y.values<float>();
    for (std::int64_t o = 0; o < element_count(os); ++o) {
      std::int64_t rest = o, at = 0;
      for (std::size_t d = os.size(); d-- > 0;) {
        at += rest % os[d] * ist[static_cast<std::size_t>(perm[d])];
        rest /= os[d];
      }
      ASSERT_EQ(yv[static_cast<std::size_t>(o)], xv[static_cast<std::size_t>(at)]) << o;
    }
  }
}

TEST(AttentionOps, BatchedMatMulMatchesPlainLoopAndOneThread) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(506);
  for (int round = 0; round < 7; ++round) {
    std::int64_t b = pick(g, 1, 4), h = pick(g, 1, 13), m_ = pick(g, 1, 40), k = pick(g, 1, 40),
                 n = pick(g, 1, 40);
    // One round of attention's own size: large enough that OpenBLAS threads each product when
    // one thread runs the batch, so the bits are compared with one-thread-per-product too.
    if (round == 6) b = 2, h = 3, m_ = 128, k = 32, n = 128;
    // Attention's [b,h,m,k] x [b,h,k,n], and a B broadcast over the first batch axis.
    const Shape sa{b, h, m_, k};
    const Shape sb = round % 2 ? Shape{1, h, k, n} : Shape{b, h, k, n};
    const Shape so{b, h, m_, n};
    SCOPED_TRACE(qforge::to_string(sa) + " x " + qforge::to_string(sb));
    OnnxBuilder mb(17);
    mb.input("a", F, dims(sa)).input("b", F, dims(sb)).output("y", F, dims(so));
    mb.node("MatMul", {"a", "b"}, {"y"}, "mm");
    const TensorMap in = {{"a", test::random_tensor(g, sa)}, {"b", test::random_tensor(g, sb)}};
    const Tensor one = run_one(mb, in, 1).at("y");
    const Tensor many = run_one(mb, in, 3).at("y");
    ASSERT_EQ(std::memcmp(one.data(), many.data(), one.byte_size()), 0) << "1 and 3 threads differ";
    const auto av = in.at("a").values<float>(), bv = in.at("b").values<float>();
    const auto yv = many.values<float>();
    for (std::int64_t bi = 0; bi < b; ++bi)
      for (std::int64_t hi = 0; hi < h; ++hi)
        for (std::int64_t r = 0; r < m_; ++r)
          for (std::int64_t c = 0; c < n; ++c) {
            double acc = 0;
            const std::int64_t bb = sb[0] == 1 ? 0 : bi;
            for (std::int64_t kk = 0; kk < k; ++kk)
              acc += double(av[static_cast<std::size_t>(((bi * h + hi) * m_ + r) * k + kk)]) *
                     bv[static_cast<std::size_t>(((bb * h + hi) * k + kk) * n + c)];
            ASSERT_NEAR(yv[static_cast<std::size_t>(((bi * h + hi) * m_ + r) * n + c)], acc, 1e-4)
                << bi << "," << hi << "," << r << "," << c;
          }
  }
}

TEST(AttentionOps, ReductionsMatchPlainLoops) {
  SCOPED_TRACE(test::seed_text());
  auto g = test::rng(507);
  const Shape s{pick(g, 1, 6), pick(g, 1, 30), pick(g, 1, 50)};
  const Tensor x = test::random_tensor(g, s);
  const auto xv = x.values<float>();
  // Trailing axes (LayerNormalization's ReduceMean), a middle axis (pooling), leading blocks,
  // two blocks apart (the scattering walk), all axes.
  for (const std::vector<std::int64_t>& axes :
       std::vector<std::vector<std::int64_t>>{{-1}, {1, 2}, {1}, {0}, {0, 1}, {0, 2}, {0, 1, 2}}) {
    for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
      SCOPED_TRACE(std::string(op) + " over " + qforge::to_string(Shape(axes.begin(), axes.end())) +
                   " of " + qforge::to_string(s));
      Shape os = s;
      for (std::int64_t a : axes) os[static_cast<std::size_t>(a < 0 ? a + 3 : a)] = 1;
      OnnxBuilder m(11);  // axes an attribute for all four
      m.input("x", F, dims(s)).output("y", F, dims(os));
      OnnxBuilder::attr(m.node(op, {"x"}, {"y"}, "r"), "axes", axes);
      const Tensor y = run_one(m, {{"x", x}}).at("y");
      const std::string o_ = op;
      const bool is_max = o_ == "ReduceMax", is_min = o_ == "ReduceMin";
      std::vector<double> want(static_cast<std::size_t>(element_count(os)), is_max   ? -1e30
                                                                            : is_min ? 1e30
                                                                                     : 0.0);
      std::vector<int> count(want.size(), 0);
      // A sum folds in input order in float: every path must give exactly these bits.
      std::vector<float> in_order(want.size(), 0.0f);
      for (std::int64_t i = 0; i < element_count(s); ++i) {
        const auto o = static_cast<std::size_t>(broadcast_index(s, os, i));
        in_order[o] += xv[static_cast<std::size_t>(i)];
        const double v = xv[static_cast<std::size_t>(i)];
        want[o] = is_max ? std::max(want[o], v) : is_min ? std::min(want[o], v) : want[o] + v;
        ++count[o];
      }
      const auto yv = y.values<float>();
      for (std::size_t o = 0; o < want.size(); ++o) {
        const double w = o_ == "ReduceMean" ? want[o] / count[o] : want[o];
        // Max and min are exact; sums are folded in float.
        ASSERT_NEAR(yv[o], w, is_max || is_min ? 0.0 : 1e-5 * (1.0 + std::abs(w))) << o;
        if (o_ == "ReduceSum") ASSERT_EQ(yv[o], in_order[o]) << o << ": not in input order";
      }
    }
  }
}

}  // namespace
}  // namespace qforge::model
