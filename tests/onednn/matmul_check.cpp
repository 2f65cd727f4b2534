#include "matmul_check.h"

#include "qforge/reference.h"

namespace qforge::onednn_test {

std::size_t output_bytes(const MatmulRun& run) {
  const auto count = static_cast<std::size_t>(run.desc.m * run.desc.n);
  switch (run.op) {
    case OpKind::matmul_integer: return count * sizeof(std::int32_t);
    case OpKind::matmul_dequant:
      return count * static_cast<std::size_t>(size_of(run.desc.out_type));
    default: return count;  // int8 / uint8
  }
}

MatmulDesc matmul_desc(std::int64_t m, std::int64_t n, std::int64_t k, QuantizationParams a,
                       QuantizationParams b, MatrixLayout layout) {
  return MatmulDesc{.m = m,
                    .n = n,
                    .k = k,
                    .a = std::move(a),
                    .b = std::move(b),
                    .b_layout = layout,
                    .has_bias = false,
                    .out_type = FloatType::f32,
                    .y = std::nullopt,
                    .requant_mode = RequantMode::float_multiplier};
}

MatmulRun random_run(Rng& rng, OpKind op, const MatmulDesc& desc) {
  MatmulRun r{op, desc, {}, {}, {}};
  r.a = random_codes(rng, desc.a.dtype(), desc.m * desc.k);
  r.b = random_codes(rng, desc.b.dtype(), desc.n * desc.k);
  if (desc.has_bias) {
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    r.bias.resize(static_cast<std::size_t>(desc.n));
    for (auto& v : r.bias) v = u(rng);
  }
  return r;
}

std::vector<std::uint8_t> reference_output(const MatmulRun& run) {
  std::vector<std::uint8_t> out(output_bytes(run));
  const void* a = run.a.data();
  const void* b = run.b.data();
  switch (run.op) {
    case OpKind::matmul_integer:
      reference::matmul_integer(run.desc, a, b, reinterpret_cast<std::int32_t*>(out.data()));
      break;
    case OpKind::matmul_dequant:
      reference::matmul_dequant(run.desc, a, b, run.bias.data(), out.data());
      break;
    default: reference::qlinear_matmul(run.desc, a, b, out.data()); break;
  }
  return out;
}

int expect_exact(QuantizationOps& ops, const MatmulRun& run, std::string* refusal) {
  const MatmulDesc& d = run.desc;
  SCOPED_TRACE(describe({run.op, d}));
  const Support s = ops.supports({run.op, d});
  if (!s.supported) {
    if (refusal) *refusal = s.reason;
    return 0;
  }
  const std::vector<std::uint8_t> want = reference_output(run);
  int compared = 0;
  const std::size_t elem =
      want.size() / std::max<std::size_t>(1, static_cast<std::size_t>(d.m * d.n));
  // The per-call ops (the backend's own kernel), directly and prepacked.
  for (const bool packed : {false, true}) {
    SCOPED_TRACE(packed ? "per call, prepacked" : "per call, direct");
    std::vector<std::uint8_t> got(want.size(), 0xCD);
    std::shared_ptr<PackedWeights> w;
    if (packed) w = ops.pack_weights(d, run.b.data());
    switch (run.op) {
      case OpKind::matmul_integer:
        if (packed)
          ops.matmul_integer_packed(d, run.a.data(), *w,
                                    reinterpret_cast<std::int32_t*>(got.data()));
        else
          ops.matmul_integer(d, run.a.data(), run.b.data(),
                             reinterpret_cast<std::int32_t*>(got.data()));
        break;
      case OpKind::matmul_dequant:
        if (packed) ops.matmul_dequant_packed(d, run.a.data(), *w, run.bias.data(), got.data());
        else ops.matmul_dequant(d, run.a.data(), run.b.data(), run.bias.data(), got.data());
        break;
      default:
        if (packed) ops.qlinear_matmul_packed(d, run.a.data(), *w, got.data());
        else ops.qlinear_matmul(d, run.a.data(), run.b.data(), got.data());
        break;
    }
    EXPECT_TRUE(same_bytes(got.data(), want.data(), want.size(), std::max<std::size_t>(1, elem)));
  }
  // Every kernel listed, through plans: B given on each run, and B fixed (packed) at plan time.
  for (const std::string& kernel : s.kernels)
    for (const bool fixed : {false, true}) {
      SCOPED_TRACE("kernel " + kernel + (fixed ? ", B fixed" : ", B per run"));
      std::vector<const void*> in{run.a.data(), run.b.data()};
      if (run.op == OpKind::matmul_dequant && d.has_bias) in.push_back(run.bias.data());
      PlanRequest request{0, kernel, {}};
      if (fixed) {
        request.weights.assign(in.size(), nullptr);
        request.weights[1] = run.b.data();
      }
      const auto plan = ops.plan({run.op, d}, request);
      if (fixed) in[1] = nullptr;
      std::vector<std::uint8_t> got(want.size(), 0xCD);
      plan->run(in, std::vector<void*>{got.data()});
      EXPECT_TRUE(same_bytes(got.data(), want.data(), want.size(), std::max<std::size_t>(1, elem)))
          << "plan kernel " << plan->kernel();
      ++compared;
    }
  return compared;
}

}  // namespace qforge::onednn_test
