#include "gemm_cases.h"

#include <algorithm>
#include <cstring>

#include "qforge/reference.h"

namespace qforge::cpu_x86_test {
namespace {

std::size_t out_bytes(OpKind op, const MatmulDesc& d) {
  const auto n = static_cast<std::size_t>(d.m * d.n);
  return op == OpKind::qlinear_matmul ? n : n * 4;
}

template <class T>
T pick(Rng& rng, std::initializer_list<T> v) {
  return *(v.begin() + static_cast<std::ptrdiff_t>(rng() % v.size()));
}

// The problems' float bias is matmul_dequant's: qlinear_matmul runs them without one (its
// int32 bias is tested by the conformance suite).
MatmulDesc desc_for(OpKind op, const MatmulProblem& p) {
  MatmulDesc d = p.desc;
  if (op == OpKind::qlinear_matmul) d.has_bias = false;
  return d;
}

// Runs op through a plan of how.kernel into y; returns the kernel the plan ran.
std::string run_plan(QuantizationOps& ops, OpKind op, const MatmulProblem& p, const RunWith& how,
                     void* y) {
  const OpDesc desc{op, desc_for(op, p)};
  std::vector<const void*> in{p.a.data(), p.b.data()};
  if (op == OpKind::matmul_dequant && p.desc.has_bias) in.push_back(p.bias.data());
  PlanRequest request{0, how.kernel, {}};
  if (how.fix_b) {
    request.weights.assign(in.size(), nullptr);
    request.weights[1] = p.b.data();
  }
  const auto plan = ops.plan(desc, request);
  if (how.fix_b) in[1] = nullptr;  // the plan must not read it
  plan->run(in, std::vector<void*>{y});
  return plan->kernel();
}

}  // namespace

std::string MatmulProblem::text() const {
  return describe({OpKind::matmul_integer, desc}) + (desc.has_bias ? " +bias" : "");
}

MatmulProblem random_problem(Rng& rng, std::int64_t m, std::int64_t n, std::int64_t k,
                             const ProblemOptions& opt) {
  const DType at = pick(rng, {DType::int8, DType::uint8});
  const DType bt =
      opt.blocked ? pick(rng, {DType::int8, DType::uint8, DType::int4, DType::uint4})
                  : pick(rng, {DType::int8, DType::uint8, DType::int8, DType::uint8, DType::int4});
  const Granularity ag = pick(rng, {Granularity::per_tensor, Granularity::per_channel});
  const MatrixLayout layout =
      opt.blocked ? MatrixLayout::nk : pick(rng, {MatrixLayout::kn, MatrixLayout::nk});
  const Granularity bg = opt.blocked
                             ? Granularity::block
                             : pick(rng, {Granularity::per_tensor, Granularity::per_channel});
  const std::int64_t block = pick<std::int64_t>(rng, {4, 8, 32, 32, 36, 64});
  const std::int64_t b_pairs = bg == Granularity::block ? n * ((k + block - 1) / block) : n;
  const QuantizationParams ap = random_params(rng, at, ag, rng() % 3 == 0, m, 0);
  // Symmetric B for the maddubs kernels: supports() offers them only for a scheme without -128.
  const QuantizationParams bp = random_params(rng, bt, bg, opt.no_min || rng() % 2 == 0, b_pairs,
                                              layout == MatrixLayout::kn ? 1 : 0, block);
  MatmulProblem p{MatmulDesc{.m = m,
                             .n = n,
                             .k = k,
                             .a = ap,
                             .b = bp,
                             .b_layout = layout,
                             .has_bias = rng() % 2 == 0,
                             .out_type = FloatType::f32,
                             .y = std::nullopt},
                  {},
                  {},
                  {}};
  if (opt.qlinear) {
    const DType yt = pick(rng, {DType::int8, DType::uint8});
    // Spread the outputs over the range: |C| grows like sqrt(K) * 100^2.
    const float sy = ap.scale(0) * bp.scale(0) * 100.0f * 100.0f *
                     std::sqrt(static_cast<float>(std::max<std::int64_t>(k, 1))) / 64.0f;
    p.desc.y = rng() % 2 ? QuantizationParams::per_tensor_affine(yt, sy, random_zero_point(rng, yt))
                         : QuantizationParams::per_tensor_symmetric(yt, sy);
    p.desc.requant_mode = pick(rng, {RequantMode::float_multiplier, RequantMode::fixed_point});
  }
  p.a = random_codes(rng, at, m * k);
  if (opt.no_min && bt == DType::int8) p.b = random_codes(rng, bt, n * k, -127, 127);
  else if (opt.no_min && bt == DType::uint8) p.b = random_codes(rng, bt, n * k, 1, 255);
  else p.b = random_codes(rng, bt, n * k);
  std::uniform_real_distribution<float> bias(-2.0f, 2.0f);
  for (std::int64_t i = 0; i < n; ++i) p.bias.push_back(bias(rng));
  return p;
}

bool offers(const QuantizationOps& ops, OpKind op, const MatmulProblem& p,
            const std::string& kernel) {
  const Support s = ops.supports(OpDesc{op, desc_for(op, p)});
  return std::find(s.kernels.begin(), s.kernels.end(), kernel) != s.kernels.end();
}

std::int64_t rows_for(const std::string& kernel, std::int64_t m) {
  if (kernel.starts_with("q8_gemm_") && m <= 16) return m + 16;
  if (kernel.starts_with("q8_gemv_") && m > 16) return 16 - (m - 17) % 12;  // 5 to 16
  // The AMX GEMV tile is offered from 5 rows (kernel_table.cpp: fewer would be mostly padding).
  if (kernel == "q8_gemv_16x32c4__amx" && m < 5) return m + 4;
  return m;
}

std::vector<std::uint8_t> run_matmul(QuantizationOps& ops, OpKind op, const MatmulProblem& p,
                                     const std::string& kernel) {
  std::vector<std::uint8_t> out(out_bytes(op, p.desc) + 64, 0xA5);
  run_plan(ops, op, p, {kernel}, out.data());
  return out;
}

std::string check_matmul(QuantizationOps& ops, OpKind op, const MatmulProblem& p,
                         const RunWith& how) {
  const PackedWeights* packed = how.packed;
  const bool plan = !how.kernel.empty() || how.fix_b;
  const std::size_t bytes = out_bytes(op, p.desc);
  // Canary bytes after the output catch writes past its end.
  std::vector<std::uint8_t> want(bytes + 64, 0xA5), got(bytes + 64, 0x5A);
  void* w = want.data();
  void* g = got.data();
  std::string ran;
  if (plan) ran = run_plan(ops, op, p, how, g);
  switch (op) {
    case OpKind::matmul_integer:
      reference::matmul_integer(p.desc, p.a.data(), p.b.data(), static_cast<std::int32_t*>(w));
      if (plan) break;
      if (packed)
        ops.matmul_integer_packed(p.desc, p.a.data(), *packed, static_cast<std::int32_t*>(g));
      else ops.matmul_integer(p.desc, p.a.data(), p.b.data(), static_cast<std::int32_t*>(g));
      break;
    case OpKind::matmul_dequant:
      reference::matmul_dequant(p.desc, p.a.data(), p.b.data(), p.bias.data(), w);
      if (plan) break;
      if (packed) ops.matmul_dequant_packed(p.desc, p.a.data(), *packed, p.bias.data(), g);
      else ops.matmul_dequant(p.desc, p.a.data(), p.b.data(), p.bias.data(), g);
      break;
    default: {
      const MatmulDesc d = desc_for(op, p);
      reference::qlinear_matmul(d, p.a.data(), p.b.data(), w);
      if (plan) break;
      if (packed) ops.qlinear_matmul_packed(d, p.a.data(), *packed, g);
      else ops.qlinear_matmul(d, p.a.data(), p.b.data(), g);
      break;
    }
  }
  if (how.ran) *how.ran = ran;
  for (std::size_t i = bytes; i < bytes + 64; ++i)
    if (got[i] != 0x5A)
      return "wrote past the end of the output (byte " + std::to_string(i - bytes) + ")";
  const std::size_t elem = op == OpKind::qlinear_matmul ? 1 : 4;
  for (std::size_t i = 0; i < bytes; i += elem)
    if (std::memcmp(&got[i], &want[i], elem) != 0) {
      const std::int64_t e = static_cast<std::int64_t>(i / elem);
      std::string vals;
      if (op == OpKind::matmul_integer) {
        std::int32_t a, b;
        std::memcpy(&a, &got[i], 4);
        std::memcpy(&b, &want[i], 4);
        vals = std::to_string(a) + " vs reference " + std::to_string(b);
      } else if (op == OpKind::matmul_dequant) {
        float a, b;
        std::memcpy(&a, &got[i], 4);
        std::memcpy(&b, &want[i], 4);
        vals = std::to_string(a) + " vs reference " + std::to_string(b);
      } else {
        vals = std::to_string(got[i]) + " vs reference " + std::to_string(want[i]);
      }
      return std::string(to_string(op)) + " differs at (" + std::to_string(e / p.desc.n) + ", " +
             std::to_string(e % p.desc.n) + "): " + vals + " for " + p.text() + " kernel " +
             (plan ? ran : std::string("<backend's choice>"));
    }
  return {};
}

}  // namespace qforge::cpu_x86_test
