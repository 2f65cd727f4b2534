// dnnl::convolution_forward primitives (int8 in, int32 out), created once per geometry, dtype,
// zero-point presence and thread count, and reused: like the matmul's (matmul_engine.h), the
// source zero point is a runtime argument, so new activations with new params reuse them.
//
// The primitive reads X as NHWC (oneDNN's int8 kernels are NHWC or blocked; an NCHW input is
// reordered first) and writes int32 NHWC with groups * chunks * (O / groups) channels
// (conv_weights.h), which the plugin's epilogue turns into the output (conv_epilogue.h).
#pragma once

#include <cstdint>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "qforge/op_desc.h"
#include "scratchpad.h"

namespace qforge::onednn {

struct ConvKey {
  ConvDesc geometry;  // only the shape fields and groups are read
  std::int64_t chunks = 1;
  bool x_unsigned = true;
  bool src_zero_point = false;  // runtime per-tensor source zero point
  int threads = 1;
  std::vector<std::int64_t> fields() const;
};

struct CachedConv {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward primitive;
  std::string impl;  // oneDNN's implementation, e.g. "brg:avx512_core_amx_int8"
};

class ConvEngine {
 public:
  const CachedConv& primitive(const ConvKey& key, const dnnl::engine& engine);
  // Executes and waits. x: NHWC codes; dst: int32 [N, OH, OW, groups * chunks * O / groups].
  void run(const ConvKey& key, const CachedConv& prim, const void* x, const dnnl::memory& weights,
           std::int32_t src_zero_point, std::int32_t* dst, const dnnl::engine& engine,
           dnnl::stream& stream);

  std::size_t cached() const noexcept { return cache_.size(); }
  std::uint64_t hits() const noexcept { return hits_; }
  std::uint64_t misses() const noexcept { return misses_; }

 private:
  std::map<std::vector<std::int64_t>, CachedConv> cache_;
  Scratchpad scratchpad_;
  std::uint64_t hits_ = 0;
  std::uint64_t misses_ = 0;
};

// NCHW codes -> NHWC codes through a oneDNN reorder (a plain copy: no scales).
void reorder_nchw_to_nhwc(const ConvDesc& d, const void* x, void* nhwc, const dnnl::engine& engine,
                          dnnl::stream& stream);

// "n=1 c=64 h=56 w=56 o=64 k=3x3 s=1x1 d=1x1 p=1,1,1,1 g=1 chunks=2 u8 src_zp threads=16"
std::string describe(const ConvKey& key);

}  // namespace qforge::onednn
