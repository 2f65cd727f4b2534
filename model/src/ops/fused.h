// Kernels for chains of elementwise nodes that the executor runs as one pass over memory
// (model/src/fusion.h finds the chains). Each computes, element by element, the same float32
// operations in the same order as the nodes it replaces, so results are bit-identical to running
// those nodes one by one (the executor runs them unfused when one of their inner tensors is
// kept), and, split by rows or elements, the same for every thread count.
#pragma once

#include <cstdint>

namespace qforge::model::ops {

class RangeSink;  // ops/value_range.h

// erf of n values (the Erf kernel): sixteen lanes at a time where the CPU has AVX-512F, eight
// where it has AVX2, with exactly the arithmetic of fast_erf (ops/fast_erf.h), so lanes and
// scalar calls agree bit for bit.
void erf_values(const float* x, float* y, std::int64_t n);

// BERT's exact GELU, as exporters write it: y = (v * half) * (erf(v / divisor) + one), with
// v = x + bias[i % bias_n] (the Linear layer's bias Add) or v = x when bias is null.
struct GeluErf {
  const float* bias = nullptr;
  std::int64_t bias_n = 0;
  float divisor = 1.4142135f;
  float one = 1.0f;
  float half = 0.5f;
};
void gelu_erf(const GeluErf& g, const float* x, float* y, std::int64_t n);

// Softmax along rows of `len` of (x / divisor + mask) (attention's scaled, masked scores; with
// has_divisor false, x + mask). Row r of x is x + r * len; its mask values are
// mask[mask_offset(r) + j * mask_step], mask_offset summing the row's index along each outer
// axis (extents outer_shape) times that axis's stride in mask_strides (0 where broadcast).
struct MaskedSoftmax {
  bool has_divisor = false;
  float divisor = 1.0f;
  const float* mask = nullptr;
  const std::int64_t* outer_shape = nullptr;  // extents of the axes before the last
  const std::int64_t* mask_strides = nullptr;
  int outer_rank = 0;
  std::int64_t mask_step = 1;  // 1, or 0 when the mask is broadcast along the row
};
void masked_softmax(const MaskedSoftmax& s, const float* x, float* y, std::int64_t rows,
                    std::int64_t len);

// One row of masked_softmax: y = Softmax(x / divisor + mask[j * mask_step]), the Div only with
// has_divisor and the Add only with a mask (null: none). y may be x.
void masked_softmax_row(const float* x, float* y, const float* mask, std::int64_t mask_step,
                        std::int64_t len, bool has_divisor, float divisor);
// `rows` rows of masked_softmax_row at once (row r at x + r * len, its mask at
// mask + r * mask_row_step): one dispatch to the vector clone for all of them.
void masked_softmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t len,
                         const float* mask, std::int64_t mask_row_step, std::int64_t mask_step,
                         bool has_divisor, float divisor);

// The attention chain's two products: the vector kernel of the widest instruction set this CPU
// has (AVX-512, AVX2 or baseline x86-64), the AVX2 or the baseline one by name (so that tests
// check each on one machine), or OpenBLAS sgemm.
enum class AttentionProducts { vector, vector_avx2, vector_baseline, blas };

// Scaled dot-product attention, one task per (batch, head), each head's scores in cache:
//   y[b, i, h, :] = sum_j P[i, j] * v[b, j, h, :],
//   P[i, :] = Softmax(q[b, i, h, :] . k[b, :, h, :] / divisor + mask[b, h, i, :])
// q is [batch, q_len, heads, depth], k [batch, kv_len, heads, depth], v [batch, kv_len, heads,
// v_depth] and y [batch, q_len, heads, v_depth], all contiguous: the layouts of the Linear
// layers' outputs reshaped to heads, so a head is read through its row stride in place and the
// merged-head output is written directly (no head split or merge copies). The products are
// OpenBLAS sgemm calls on one thread each (blas) or a register-blocked vector kernel; the Softmax
// is masked_softmax_row's, so only the products' summation order can differ from the unfused
// MatMuls (last bits).
struct FusedAttention {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* y = nullptr;
  std::int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, depth = 0, v_depth = 0;
  bool has_divisor = false;
  float divisor = 1.0f;
  // The mask (null: none), broadcast to [batch, heads, q_len, kv_len] by these strides (0 along
  // an axis where it has extent 1).
  const float* mask = nullptr;
  std::int64_t mask_strides[4] = {0, 0, 0, 0};
  AttentionProducts products = AttentionProducts::vector;
  RangeSink* range = nullptr;  // when set, given y's range (ops/value_range.h)
};
// The products' kernel of the attention chain from QFORGE_ATTENTION_PRODUCTS: `vector` (the
// default), `vector-avx2`, `vector-baseline` or `blas`, read at each call so tests can run each.
// Asking for vector-avx2 on a CPU without AVX2 is an error.
AttentionProducts attention_products();
void fused_attention(const FusedAttention& a);

// LayerNormalization over rows of `cols` of (x + bias) + residual (a Linear layer's bias Add,
// then the residual Add), or x + residual when bias is null; scale and ln_bias have cols values.
struct AddLayerNorm {
  const float* bias = nullptr;  // [cols] or null
  const float* residual = nullptr;
  const float* scale = nullptr;
  const float* ln_bias = nullptr;  // or null
  float epsilon = 1e-5f;
  RangeSink* range = nullptr;  // when set, given y's range (ops/value_range.h)
};
void add_layernorm(const AddLayerNorm& a, const float* x, float* y, std::int64_t rows,
                   std::int64_t cols);

}  // namespace qforge::model::ops
