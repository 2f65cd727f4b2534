// Gemm and MatMul through OpenBLAS sgemm.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "ops/broadcast.h"
#include "ops/kernel.h"
#include "ops/parallel.h"
#include "ops/parallel_blas.h"

namespace qforge::model::ops {
namespace {

int blas_int(const Node& n, std::int64_t v) {
  if (v > std::numeric_limits<int>::max())
    fail(n, ErrorCode::unsupported,
         "a GEMM extent of " + std::to_string(v) + " exceeds BLAS's int");
  return static_cast<int>(v);
}

// ---- Gemm: Y = alpha * A' * B' + beta * C, A' = transA ? A^T : A, C broadcast to (M, N) ----

std::vector<TensorType> infer_gemm(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  require_type(n, in, 1, {ElementType::float32});
  const Shape& a = in[0].type->shape;
  const Shape& b = in[1].type->shape;
  if (a.size() != 2 || b.size() != 2)
    fail(n, ErrorCode::shape_mismatch,
         "A and B must be 2-D, got " + qforge::to_string(a) + " and " + qforge::to_string(b));
  const bool ta = n.attr_int_or("transA", 0) != 0, tb = n.attr_int_or("transB", 0) != 0;
  const std::int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  const std::int64_t kb = tb ? b[1] : b[0], nn = tb ? b[0] : b[1];
  if (k != kb)
    fail(n, ErrorCode::shape_mismatch,
         "inner extents differ: A' is " + std::to_string(m) + "x" + std::to_string(k) + ", B' is " +
             std::to_string(kb) + "x" + std::to_string(nn));
  const Shape out{m, nn};
  if (in.size() > 2 && in[2].present()) {
    require_type(n, in, 2, {ElementType::float32});
    // Version 6 broadcasts C only when `broadcast` is 1; 7 on always (unidirectionally).
    if (n.since_version < 7 && n.attr_int_or("broadcast", 0) == 0 && in[2].type->shape != out)
      fail(n, ErrorCode::shape_mismatch,
           "C " + qforge::to_string(in[2].type->shape) + " must be " + qforge::to_string(out) +
               " when broadcast is 0");
    if (broadcast_shapes(n, out, in[2].type->shape) != out)
      fail(n, ErrorCode::shape_mismatch,
           "C " + qforge::to_string(in[2].type->shape) + " does not broadcast to " +
               qforge::to_string(out));
  } else if (n.since_version < 11) {
    fail(n, ErrorCode::invalid_argument, "C is required before Gemm version 11");
  }
  return {{ElementType::float32, out}};
}

void run_gemm(const Node& n, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const bool ta = n.attr_int_or("transA", 0) != 0, tb = n.attr_int_or("transB", 0) != 0;
  const float alpha = n.attr_float_or("alpha", 1.0f), beta = n.attr_float_or("beta", 1.0f);
  const Shape& a = in[0]->shape();
  const std::int64_t m = out[0]->shape()[0], nn = out[0]->shape()[1];
  const std::int64_t k = ta ? a[0] : a[1];
  float* y = out[0]->values<float>().data();
  float blas_beta = 0.0f;
  if (in.size() > 2 && in[2] && beta != 0.0f) {
    const float* c = in[2]->values<float>().data();
    const Shape& out_shape = out[0]->shape();
    broadcast_rows<1>(out_shape, {&in[2]->shape()},
                      [&](std::int64_t o, const auto& off, const auto& st, std::int64_t cnt) {
                        for (std::int64_t j = 0; j < cnt; ++j)
                          y[o + j] = beta * c[off[0] + j * st[0]];
                      });
    blas_beta = 1.0f;
  }
  if (m == 0 || nn == 0) return;
  if (k == 0) {
    if (blas_beta == 0.0f) std::fill(y, y + m * nn, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              blas_int(n, m), blas_int(n, nn), blas_int(n, k), alpha, in[0]->values<float>().data(),
              blas_int(n, a[1]), in[1]->values<float>().data(), blas_int(n, in[1]->shape()[1]),
              blas_beta, y, blas_int(n, nn));
}

// ---- MatMul: numpy.matmul (1-D operands promoted, batch axes broadcast) ----

struct MatMulDims {
  Shape a_batch, b_batch, batch;
  std::int64_t m, k, n;
  Shape out;
};

MatMulDims matmul_dims(const Node& node, const Shape& a, const Shape& b) {
  if (a.empty() || b.empty())
    fail(node, ErrorCode::shape_mismatch, "MatMul operands must not be scalars");
  MatMulDims d;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  d.m = a_vec ? 1 : a[a.size() - 2];
  d.k = a.back();
  const std::int64_t kb = b_vec ? b[0] : b[b.size() - 2];
  d.n = b_vec ? 1 : b.back();
  if (d.k != kb)
    fail(node, ErrorCode::shape_mismatch,
         "inner extents differ: " + qforge::to_string(a) + " x " + qforge::to_string(b));
  if (!a_vec) d.a_batch.assign(a.begin(), a.end() - 2);
  if (!b_vec) d.b_batch.assign(b.begin(), b.end() - 2);
  d.batch = broadcast_shapes(node, d.a_batch, d.b_batch);
  d.out = d.batch;
  if (!a_vec) d.out.push_back(d.m);
  if (!b_vec) d.out.push_back(d.n);
  return d;
}

std::vector<TensorType> infer_matmul(const Node& n, std::span<const InferInput> in) {
  require_type(n, in, 0, {ElementType::float32});
  require_type(n, in, 1, {ElementType::float32});
  return {{ElementType::float32, matmul_dims(n, in[0].type->shape, in[1].type->shape).out}};
}

void run_matmul(const Node& node, std::span<const Tensor* const> in, std::span<Tensor* const> out) {
  const MatMulDims d = matmul_dims(node, in[0]->shape(), in[1]->shape());
  const float* a = in[0]->values<float>().data();
  const float* b = in[1]->values<float>().data();
  float* y = out[0]->values<float>().data();
  if (out[0]->size() == 0) return;
  if (d.k == 0) {
    std::fill(y, y + out[0]->size(), 0.0f);
    return;
  }
  const int m = blas_int(node, d.m), n = blas_int(node, d.n), k = blas_int(node, d.k);
  // A batch of rows times one shared matrix (every Linear layer): one call with M = batch * m.
  if (element_count(d.b_batch) == 1 && element_count(d.a_batch) == element_count(d.batch)) {
    const std::int64_t rows = element_count(d.batch) * d.m;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blas_int(node, rows), n, k, 1.0f, a, k,
                b, n, 0.0f, y, n);
    return;
  }
  // Otherwise one product per output batch element, its operands located by broadcasting the
  // batch axes (a 1-element "row" walk over the batch shape). The products are independent:
  // split them across the executor's pool, each one sgemm call on one OpenBLAS thread
  // (ops/parallel_blas.h), a few per task when they are tiny.
  const std::int64_t a_step = d.m * d.k, b_step = d.k * d.n, y_step = d.m * d.n;
  const std::int64_t count = element_count(d.batch);
  std::vector<std::array<std::int64_t, 2>> operands(static_cast<std::size_t>(count));
  broadcast_rows<2>(
      d.batch, {&d.a_batch, &d.b_batch},
      [&](std::int64_t o, const auto& off, const auto& st, std::int64_t cnt) {
        for (std::int64_t j = 0; j < cnt; ++j)
          operands[static_cast<std::size_t>(o + j)] = {off[0] + j * st[0], off[1] + j * st[1]};
      });
  auto products = [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const auto& [ia, ib] = operands[static_cast<std::size_t>(i)];
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a + ia * a_step, k,
                  b + ib * b_step, n, 0.0f, y + i * y_step, n);
    }
  };
  if (count < 2) {
    products(0, count);
    return;
  }
  // One OpenBLAS thread whatever the pool's size: OpenBLAS's threaded sgemm rounds differently
  // from its single-threaded one, so this keeps the results the same for every thread count.
  const SingleThreadedBlas one_blas_thread;
  // About 64K multiply-adds per task at least, so tiny products are not handed out one by one.
  const std::int64_t work = std::max<std::int64_t>(1, d.m * d.n * d.k);
  parallel_for(count, std::max<std::int64_t>(1, std::int64_t{65536} / work), products);
}

}  // namespace

void register_matmul(KernelRegistry& r) {
  r.add({"Gemm",
         {6, 7, 9, 11, 13},
         {"alpha", "beta", "broadcast", "transA", "transB"},
         nullptr,
         infer_gemm,
         run_gemm});
  r.add({"MatMul", {1, 9, 13}, {}, nullptr, infer_matmul, run_matmul});
}

}  // namespace qforge::model::ops
