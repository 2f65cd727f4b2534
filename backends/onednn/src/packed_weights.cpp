#include "packed_weights.h"

#include "qforge/error.h"
#include "scratchpad.h"

namespace qforge::onednn {

OnednnPackedWeights::OnednnPackedWeights(const MatmulDesc& desc, std::vector<std::int8_t> b8,
                                         std::vector<std::int64_t> column_sums)
    : desc_(desc), plain_(std::move(b8)), column_sums_(std::move(column_sums)) {}

std::string OnednnPackedWeights::backend() const { return "onednn"; }

std::size_t OnednnPackedWeights::bytes() const noexcept {
  std::lock_guard lock(mutex_);
  std::size_t total = plain_.size() + column_sums_.size() * sizeof(std::int64_t);
  for (const auto& f : formatted_) total += f.first.get_size();
  return total;
}

const dnnl::memory& OnednnPackedWeights::formatted(const dnnl::memory::desc& md,
                                                   const dnnl::memory& plain_md_memory,
                                                   dnnl::engine& engine,
                                                   dnnl::stream& stream) const {
  std::lock_guard lock(mutex_);
  for (const auto& f : formatted_)
    if (f.first == md) return f.second;
  try {
    dnnl::memory out(md, engine);
    reorder_once(plain_md_memory, out, stream);
    formatted_.emplace_back(md, out);
    return formatted_.back().second;
  } catch (const dnnl::error& e) {
    throw Error(ErrorCode::backend,
                std::string("onednn: reordering packed weights into the matmul's format failed: ") +
                    e.what());
  }
}

const OnednnPackedWeights& packed_for(const MatmulDesc& desc, const PackedWeights& b) {
  const auto* w = dynamic_cast<const OnednnPackedWeights*>(&b);
  if (!w)
    throw Error(ErrorCode::invalid_argument,
                "onednn: packed weights made by " + b.backend() +
                    " passed to onednn; expected weights packed by onednn's pack_weights");
  const MatmulDesc& p = w->desc();
  if (p.n != desc.n || p.k != desc.k || p.b_layout != desc.b_layout || !(p.b == desc.b))
    throw Error(ErrorCode::shape_mismatch,
                "onednn: packed weights for n=" + std::to_string(p.n) +
                    " k=" + std::to_string(p.k) + " " + std::string(to_string(p.b_layout)) + " " +
                    p.b.to_string() + " used with n=" + std::to_string(desc.n) +
                    " k=" + std::to_string(desc.k) + " " + std::string(to_string(desc.b_layout)) +
                    " " + desc.b.to_string() +
                    "; expected the B shape, layout and params they were packed for");
  return *w;
}

}  // namespace qforge::onednn
