// matmul_integer, matmul_dequant, qlinear_matmul (plain and prepacked) and pack_weights.
#include <cstring>

#include "epilogue.h"
#include "matmul_operands.h"
#include "onednn_ops.h"
#include "ops_common.h"
#include "packed_weights.h"
#include "threads.h"

namespace qforge::onednn {
namespace {

void require_matmul_data(const char* op, const MatmulDesc& d, const void* a, const void* b,
                         const void* out) {
  require_data(op, "a", a, d.m * d.k);
  require_data(op, "b", b, d.n * d.k);
  require_data(op, "output", out, d.m * d.n);
}

WeightsFormat plain_format(const MatmulDesc& d) {
  return d.b_layout == MatrixLayout::kn ? WeightsFormat::kn : WeightsFormat::nk;
}

}  // namespace

void OnednnOps::matmul_s32(const MatmulDesc& d, const void* a, const Weights& w, std::int32_t* c,
                           const ThreadScope& threads, const std::string& /*kernel*/) {
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) {  // empty sums
    std::memset(c, 0, static_cast<std::size_t>(d.m * d.n) * sizeof(std::int32_t));
    return;
  }
  const OperandPlan plan = plan_operands(d);
  const void* a8 = widen_a(d, plan, a, a_scratch_);
  const std::int8_t* b8 = w.packed ? w.packed->plain() : widen_b(d, plan, w.b, b_scratch_);

  MatmulKey key;
  key.m = d.m;
  key.n = d.n;
  key.k = d.k;
  key.kind = MatmulKind::int8_s32;
  key.a_unsigned = plan.a_unsigned;
  key.weights = w.packed ? WeightsFormat::any : plain_format(d);
  key.src_zero_point = plan.za.whole != 0;
  key.weights_zero_point = plan.zb.whole != 0;
  key.threads = threads.threads();
  const CachedMatmul& prim = engine_.primitive(key);

  MatmulKey plain_key = key;
  plain_key.weights = plain_format(d);
  const dnnl::memory plain = engine_.wrap_weights(plain_key, b8);
  const dnnl::memory& weights = w.packed ? w.packed->formatted(prim.pd.weights_desc(), plain,
                                                               engine_.engine(), engine_.stream())
                                         : plain;
  MatmulArgs args;
  args.a = a8;
  args.weights = &weights;
  args.dst = c;
  args.src_zero_point = plan.za.whole;
  args.weights_zero_point = plan.zb.whole;
  engine_.run(key, prim, args);

  if (plan.compensated()) {
    Compensation comp;
    comp.k = d.k;
    comp.za = plan.za.residual;
    comp.zb = plan.zb.residual;
    if (!comp.zb.empty()) {
      comp.row_term = row_sums(a8, plan.a_unsigned, d.m, d.k);
      for (auto& v : comp.row_term) v -= d.k * plan.za.whole;
    }
    if (!comp.za.empty()) {
      comp.col_term = w.packed ? w.packed->column_sums() : column_sums(b8, d.b_layout, d.n, d.k);
      for (auto& v : comp.col_term) v -= d.k * plan.zb.whole;
    }
    compensate(c, d.m, d.n, comp, threads.threads());
  }
}

void OnednnOps::fused_dequant(const MatmulDesc& d, const void* a, const Weights& w,
                              const float* bias, float* y, const ThreadScope& threads,
                              const std::string& /*kernel*/) {
  const OperandPlan plan = plan_operands(d);  // no residuals: fused_dequant_possible()
  const void* a8 = widen_a(d, plan, a, a_scratch_);
  const std::int8_t* b8 = w.packed ? w.packed->plain() : widen_b(d, plan, w.b, b_scratch_);

  MatmulKey key;
  key.m = d.m;
  key.n = d.n;
  key.k = d.k;
  key.kind = MatmulKind::int8_f32;
  key.a_unsigned = plan.a_unsigned;
  key.weights = w.packed ? WeightsFormat::any : plain_format(d);
  key.src_zero_point = plan.za.whole != 0;
  key.weights_zero_point = plan.zb.whole != 0;
  key.sb_per_column = d.b.count() != 1;
  key.bias = d.has_bias;
  key.threads = threads.threads();
  const CachedMatmul& prim = engine_.primitive(key);

  const float sa = d.a.scale(0);  // uniform (fused_dequant_possible)

  MatmulKey plain_key = key;
  plain_key.weights = plain_format(d);
  const dnnl::memory plain = engine_.wrap_weights(plain_key, b8);
  const dnnl::memory& weights = w.packed ? w.packed->formatted(prim.pd.weights_desc(), plain,
                                                               engine_.engine(), engine_.stream())
                                         : plain;
  MatmulArgs args;
  args.a = a8;
  args.weights = &weights;
  args.dst = y;
  args.src_zero_point = plan.za.whole;
  args.weights_zero_point = plan.zb.whole;
  args.sa = &sa;
  args.sb = d.b.scales().data();
  args.bias = bias;
  engine_.run(key, prim, args);
}

void OnednnOps::integer(const MatmulDesc& d, const void* a, const Weights& w, std::int32_t* c,
                        const std::string& kernel) {
  const ThreadScope scope(threads_);
  matmul_s32(d, a, w, c, scope, kernel);
}

void OnednnOps::dequant(const MatmulDesc& d, const void* a, const Weights& w, const float* bias,
                        void* y, const std::string& kernel) {
  if (d.has_bias) require_data("matmul_dequant", "bias (has_bias is set)", bias, d.n);
  const ThreadScope scope(threads_);
  if (d.m == 0 || d.n == 0) {
    return;
  }
  const bool fused = kernel == kernel::matmul_u8s8_f32 || kernel == kernel::matmul_s8s8_f32;
  if (fused && d.k > 0) {
    fused_dequant(d, a, w, bias, static_cast<float*>(y), scope, kernel);
    return;
  }
  c_scratch_.resize(static_cast<std::size_t>(d.m * d.n));
  matmul_s32(d, a, w, c_scratch_.data(), scope, kernel);
  dequant_epilogue(c_scratch_.data(), d, bias, y, scope.threads());
}

void OnednnOps::qlinear(const MatmulDesc& d, const void* a, const Weights& w, void* y,
                        const std::string& kernel) {
  const ThreadScope scope(threads_);
  if (d.m == 0 || d.n == 0) {
    return;
  }
  c_scratch_.resize(static_cast<std::size_t>(d.m * d.n));
  matmul_s32(d, a, w, c_scratch_.data(), scope, kernel);
  requant_epilogue(c_scratch_.data(), d, y, scope.threads());
}

void OnednnOps::matmul_integer(const MatmulDesc& desc, const void* a, const void* b,
                               std::int32_t* c) {
  const std::string k = begin(OpKind::matmul_integer, desc);
  require_matmul_data("matmul_integer", desc, a, b, c);
  integer(desc, a, {b, nullptr}, c, k);
}

void OnednnOps::matmul_dequant(const MatmulDesc& desc, const void* a, const void* b,
                               const float* bias, void* y) {
  const std::string k = begin(OpKind::matmul_dequant, desc);
  require_matmul_data("matmul_dequant", desc, a, b, y);
  dequant(desc, a, {b, nullptr}, bias, y, k);
}

void OnednnOps::qlinear_matmul(const MatmulDesc& desc, const void* a, const void* b, void* y) {
  const std::string k = begin(OpKind::qlinear_matmul, desc);
  require_matmul_data("qlinear_matmul", desc, a, b, y);
  qlinear(desc, a, {b, nullptr}, y, k);
}

std::shared_ptr<PackedWeights> OnednnOps::pack_weights(const MatmulDesc& desc, const void* b) {
  // Packing serves every matmul op of this B, so it asks what they all need.
  const Support s = supports({OpKind::matmul_integer, desc});
  if (!s.supported) {
    // The checks are matmul_integer's; the message names pack_weights, the call that was made.
    std::string why = s.reason;
    if (why.rfind("onednn: ", 0) == 0) why.erase(0, 8);
    throw Error(ErrorCode::unsupported, "onednn: pack_weights (checked as matmul_integer): " + why);
  }
  require_data("pack_weights", "b", b, desc.n * desc.k);
  const OperandPlan plan = plan_operands(desc);
  std::vector<std::int8_t> b8;
  const std::int8_t* widened = widen_b(desc, plan, b, b8);
  if (widened != b8.data()) b8.assign(widened, widened + desc.n * desc.k);
  std::vector<std::int64_t> sums = column_sums(b8.data(), desc.b_layout, desc.n, desc.k);
  auto packed = std::make_shared<OnednnPackedWeights>(desc, std::move(b8), std::move(sums));

  // Reorder now into the formats the int32 and (where it applies) the fused kernel take for this
  // M, so that the first matmul does not pay for it. Usually one format serves both and every M
  // (packed_weights.h); another one is made on first use.
  if (desc.n > 0 && desc.k > 0) {
    const ThreadScope scope(threads_);
    MatmulKey key;
    key.m = std::max<std::int64_t>(desc.m, 1);
    key.n = desc.n;
    key.k = desc.k;
    key.a_unsigned = plan.a_unsigned;
    key.weights = WeightsFormat::any;
    key.src_zero_point = plan.za.whole != 0;
    key.weights_zero_point = plan.zb.whole != 0;
    key.threads = scope.threads();
    MatmulKey plain_key = key;
    plain_key.weights = plain_format(desc);
    const dnnl::memory plain = engine_.wrap_weights(plain_key, packed->plain());
    std::vector<MatmulKey> keys{key};
    if (fused_dequant_possible(desc)) {
      key.kind = MatmulKind::int8_f32;
      key.sb_per_column = desc.b.count() != 1;
      key.bias = desc.has_bias;
      keys.push_back(key);
    }
    for (const MatmulKey& k : keys) {
      const CachedMatmul& prim = engine_.primitive(k);
      packed->formatted(prim.pd.weights_desc(), plain, engine_.engine(), engine_.stream());
    }
  }
  return packed;
}

void OnednnOps::matmul_integer_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      std::int32_t* c) {
  const std::string k = begin(OpKind::matmul_integer, desc);
  const OnednnPackedWeights& w = packed_for(desc, b);
  require_matmul_data("matmul_integer_packed", desc, a, w.plain(), c);
  integer(desc, a, {nullptr, &w}, c, k);
}

void OnednnOps::matmul_dequant_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      const float* bias, void* y) {
  const std::string k = begin(OpKind::matmul_dequant, desc);
  const OnednnPackedWeights& w = packed_for(desc, b);
  require_matmul_data("matmul_dequant_packed", desc, a, w.plain(), y);
  dequant(desc, a, {nullptr, &w}, bias, y, k);
}

void OnednnOps::qlinear_matmul_packed(const MatmulDesc& desc, const void* a, const PackedWeights& b,
                                      void* y) {
  const std::string k = begin(OpKind::qlinear_matmul, desc);
  const OnednnPackedWeights& w = packed_for(desc, b);
  require_matmul_data("qlinear_matmul_packed", desc, a, w.plain(), y);
  qlinear(desc, a, {nullptr, &w}, y, k);
}

}  // namespace qforge::onednn
