#include "param_cache.h"

#include <cstring>

#include "check.h"

namespace qforge::cuda {

const void* ParamCache::get(const void* host, std::size_t bytes, std::uint64_t tag, int device,
                            cudaStream_t stream) {
  if (const void* seen = find(tag, bytes)) return seen;
  const void* p = find_or_add(host, bytes, device, stream);
  if (tag != 0) {
    // Params built anew for every call would add a tag per call: forget them all now and then
    // (only the quick path is lost; the contents stay).
    if (by_tag_.size() >= 4 * kCapacity) by_tag_.clear();
    by_tag_[tag] = {last_key_, last_};
  }
  return p;
}

const void* ParamCache::find(std::uint64_t tag, std::size_t bytes) {
  if (tag == 0) return nullptr;
  const auto it = by_tag_.find(tag);
  if (it == by_tag_.end() || it->second.first->size() != bytes) return nullptr;
  it->second.second->last_use = ++clock_;
  last_key_ = it->second.first;
  last_ = it->second.second;
  return last_->buffer->data();
}

const void* ParamCache::find_or_add(const void* host, std::size_t bytes, int device,
                                    cudaStream_t stream) {
  if (last_ && last_key_->size() == bytes && std::memcmp(last_key_->data(), host, bytes) == 0) {
    last_->last_use = ++clock_;
    return last_->buffer->data();
  }
  std::string key(static_cast<const char*>(host), bytes);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    it->second.last_use = ++clock_;
    last_key_ = &it->first;
    last_ = &it->second;
    return it->second.buffer->data();
  }
  if (entries_.size() >= kCapacity) {
    auto oldest = entries_.begin();
    for (auto e = entries_.begin(); e != entries_.end(); ++e)
      if (e->second.last_use < oldest->second.last_use) oldest = e;
    // Queued kernels may still read it.
    check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (&oldest->second == last_) last_ = nullptr, last_key_ = nullptr;
    std::erase_if(by_tag_, [&](const auto& t) { return t.second.second == &oldest->second; });
    entries_.erase(oldest);
  }
  Entry entry;
  entry.buffer = std::make_unique<DeviceBuffer>(bytes, device);
  entry.last_use = ++clock_;
  // From pageable memory the copy is staged before cudaMemcpyAsync returns, so `host` may go
  // away right after; the kernels that read the copy are queued behind it on the same stream.
  if (bytes)
    check(cudaMemcpyAsync(entry.buffer->data(), host, bytes, cudaMemcpyHostToDevice, stream),
          "cudaMemcpyAsync(parameters)");
  const void* p = entry.buffer->data();
  const auto [pos, inserted] = entries_.emplace(std::move(key), std::move(entry));
  (void)inserted;
  last_key_ = &pos->first;
  last_ = &pos->second;
  return p;
}

void ParamCache::clear() noexcept {
  by_tag_.clear();
  entries_.clear();
  last_ = nullptr;
  last_key_ = nullptr;
}

}  // namespace qforge::cuda
