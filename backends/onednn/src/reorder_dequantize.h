// dequantize of int8/uint8 through a oneDNN reorder (s8/u8 -> f32 with runtime zero points and
// output scales), which computes float(q - z) * s: one rounding of an exact value, the
// reference's result bit for bit (tests/onednn checks it on random data for every granularity).
//
// The tensor is viewed so that scales run along whole dimensions: per tensor [n] (mask 0),
// per channel [outer, C, inner] (mask 1 << 1), blocks of B along a last axis that B divides
// [rows, blocks, B] (mask 0b011). The zero point is one value (mask 0): oneDNN 2.6 cannot
// execute reorders with per-channel source zero points. Reorder primitives are cached like the
// matmuls.
#pragma once

#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "qforge/op_desc.h"
#include "scratchpad.h"

namespace qforge::onednn {

class ReorderDequantizer {
 public:
  ReorderDequantizer(dnnl::engine& engine, dnnl::stream& stream);
  // Requires reorder_can_dequantize(d) (support_rules.h). Returns oneDNN's implementation name.
  std::string run(const QuantizeDesc& d, const void* q, float* x, int threads);
  std::size_t cached() const noexcept { return cache_.size(); }

 private:
  struct Key {
    std::vector<std::int64_t> dims;
    bool is_unsigned = false;
    int mask = 0;
    bool zero_points = false;
    int threads = 1;
    auto operator<=>(const Key&) const = default;
  };
  struct Entry {
    dnnl::reorder::primitive_desc pd;
    dnnl::reorder primitive;
    std::string impl;
  };
  dnnl::engine& engine_;
  dnnl::stream& stream_;
  std::map<Key, Entry> cache_;
  Scratchpad scratchpad_;
};

}  // namespace qforge::onednn
