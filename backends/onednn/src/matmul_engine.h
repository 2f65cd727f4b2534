// dnnl::matmul primitives, created once per (shape, dtypes, attributes, threads) and reused.
//
// Creating a primitive costs far more than a small matmul (JIT code generation), so the plugin
// keeps every primitive it made in an unordered_map keyed by MatmulKey. Zero points are runtime
// arguments (DNNL_RUNTIME_S32_VAL) and scales and bias are operands of binary post-ops, so
// their values are not part of the key: a new batch of activations with new scales and zero
// points reuses the primitive. The thread count is, because an OpenMP-runtime primitive fixes
// its work split when it is created (threads.h).
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "scratchpad.h"

namespace qforge::onednn {

// Layout of the weights memory a primitive expects.
enum class WeightsFormat : std::uint8_t {
  kn,   // plain [K, N] row-major (format_tag::ab): the caller's kn buffer
  nk,   // plain [N, K] row-major, i.e. [K, N] with format_tag::ba: the caller's nk buffer
  any,  // oneDNN's choice (format_tag::any): prepacked weights reordered into it
};

enum class MatmulKind : std::uint8_t {
  int8_s32,  // u8/s8 x s8 -> s32, no scales, no bias
  int8_f32,  // u8/s8 x s8 -> f32 with scales and bias as post-ops
  f32,       // f32 x f32 -> f32
};

struct MatmulKey {
  std::int64_t m = 0, n = 0, k = 0;
  MatmulKind kind = MatmulKind::int8_s32;
  bool a_unsigned = false;
  WeightsFormat weights = WeightsFormat::kn;
  bool src_zero_point = false;      // runtime per-tensor source zero point
  bool weights_zero_point = false;  // runtime per-tensor weights zero point
  // int8_f32 only: y = ((float(C) * sa) * sb) + bias, the reference's order, as binary
  // post-ops: multiply by sa [1, 1], by sb ([1, 1] or [1, N]), add the bias [1, N].
  bool sb_per_column = false;
  bool bias = false;
  int threads = 1;
  friend bool operator==(const MatmulKey&, const MatmulKey&) = default;
};

struct MatmulKeyHash {
  std::size_t operator()(const MatmulKey& k) const noexcept;
};

struct CachedMatmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  std::string impl;  // oneDNN's implementation name, e.g. "brg:avx512_core_amx_int8"
};

// The runtime arguments of one execution. weights must be in pd.weights_desc()'s format.
struct MatmulArgs {
  const void* a = nullptr;
  const dnnl::memory* weights = nullptr;
  void* dst = nullptr;
  std::int32_t src_zero_point = 0;
  std::int32_t weights_zero_point = 0;
  const float* sa = nullptr;    // int8_f32: the output scale (1 value)
  const float* sb = nullptr;    // int8_f32: 1 or N values
  const float* bias = nullptr;  // int8_f32 with bias: N values
};

class MatmulEngine {
 public:
  MatmulEngine();
  // On an engine shared with others (plans' workers: one engine, a stream each).
  explicit MatmulEngine(const dnnl::engine& engine);

  // The primitive for `key`, created on first use. Throws qforge::Error (backend) when oneDNN
  // cannot make one.
  const CachedMatmul& primitive(const MatmulKey& key);
  // Executes and waits.
  void run(const MatmulKey& key, const CachedMatmul& prim, const MatmulArgs& args);

  // A memory object over the caller's plain weights (no copy).
  dnnl::memory wrap_weights(const MatmulKey& key, const void* b);

  dnnl::engine& engine() { return engine_; }
  dnnl::stream& stream() { return stream_; }

  std::size_t cached() const noexcept { return cache_.size(); }
  std::uint64_t hits() const noexcept { return hits_; }
  std::uint64_t misses() const noexcept { return misses_; }

  // The memory descriptor of the weights for a plain format (kn or nk).
  static dnnl::memory::desc plain_weights_desc(const MatmulKey& key);

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::unordered_map<MatmulKey, CachedMatmul, MatmulKeyHash> cache_;
  Scratchpad scratchpad_;
  std::uint64_t hits_ = 0;
  std::uint64_t misses_ = 0;
};

// "m=.. n=.. k=.. u8s8->f32 weights=any src_zp wei_zp sb(per column) bias threads=4"
std::string describe(const MatmulKey& key);

}  // namespace qforge::onednn
