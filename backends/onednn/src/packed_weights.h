// Prepacked weights of the onednn plugin: B widened to s8 once (matmul_operands.h), its column
// sums for zero-point compensation, and the weights reordered into each format a primitive
// asked for (format_tag::any), made on first request and kept. oneDNN's blocked int8 formats
// also carry the source-zero-point compensation it precomputes while reordering, so repeated
// calls pass over the weights once per matmul and nothing else.
//
// A packed B serves every M: the brgemm formats oneDNN picks do not depend on M (checked in
// tests/onednn), and a primitive that wants another format gets its own reorder.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>
#include <vector>

#include "matmul_operands.h"
#include "qforge/ops.h"

namespace qforge::onednn {

class OnednnPackedWeights final : public PackedWeights {
 public:
  // b8: B widened to s8 in desc.b_layout.
  OnednnPackedWeights(const MatmulDesc& desc, std::vector<std::int8_t> b8,
                      std::vector<std::int64_t> column_sums);

  const MatmulDesc& desc() const noexcept override { return desc_; }
  std::string backend() const override;
  std::size_t bytes() const noexcept override;

  const std::int8_t* plain() const noexcept { return plain_.data(); }
  const std::vector<std::int64_t>& column_sums() const noexcept { return column_sums_; }
  // The weights in oneDNN format `md`, reordered from the plain copy the first time. Safe to
  // call from several threads at once (the plans of a fixed B run concurrently).
  const dnnl::memory& formatted(const dnnl::memory::desc& md, const dnnl::memory& plain_md_memory,
                                dnnl::engine& engine, dnnl::stream& stream) const;
  std::size_t formats() const {
    std::lock_guard lock(mutex_);
    return formatted_.size();
  }

 private:
  MatmulDesc desc_;
  std::vector<std::int8_t> plain_;
  std::vector<std::int64_t> column_sums_;
  // One entry per format asked for; a handful at most (int8 s32, fused f32). A deque: entries
  // stay where they are while another is added, so references handed out stay valid.
  mutable std::deque<std::pair<dnnl::memory::desc, dnnl::memory>> formatted_;
  mutable std::mutex mutex_;
};

// The onednn packed weights behind `b`, checked against the call's descriptor.
const OnednnPackedWeights& packed_for(const MatmulDesc& desc, const PackedWeights& b);

}  // namespace qforge::onednn
