// Scratchpad memory for oneDNN primitives, owned by whoever runs them.
//
// Every primitive the plugin creates uses dnnl::scratchpad_mode::user and is executed with a
// buffer of the worker (or call) that runs it. oneDNN's default mode keeps one library scratchpad
// per thread, shared by the primitives that thread created (Debian builds oneDNN with
// DNNL_ENABLE_CONCURRENT_EXEC off), so a primitive may only run on the thread that created it.
// Plans break that rule by design: a plan's primitives are created when it is made and run on
// whichever thread calls it, where the library scratchpad was missing (SIGSEGV at a small address
// inside oneDNN's OpenMP threads, seen on the GPU host's AVX-512 CPU).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>

namespace qforge::onednn {

// An attribute set that asks for a user scratchpad; every primitive_attr of the plugin starts
// from this.
dnnl::primitive_attr user_scratchpad_attr();

// A growing buffer lent to one execution at a time.
class Scratchpad {
 public:
  // Adds DNNL_ARG_SCRATCHPAD to `args` when the primitive needs one.
  template <typename Args>
  void add_to(Args& args, const dnnl::memory::desc& md, const dnnl::engine& engine) {
    if (md.get_size() == 0) return;
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(md, engine, reserve(md.get_size())));
  }

 private:
  // oneDNN places a scratchpad's parts at aligned offsets from its start and its kernels may use
  // aligned vector loads on them, so the start is page-aligned as oneDNN's own allocations are.
  static constexpr std::align_val_t kAlignment{4096};
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, kAlignment); }
  };
  void* reserve(std::size_t bytes);
  std::unique_ptr<std::byte[], Free> buffer_;
  std::size_t bytes_ = 0;
};

// One reorder from src to dst on `stream`, with a scratchpad of its own; waits.
void reorder_once(const dnnl::memory& src, const dnnl::memory& dst, dnnl::stream& stream);

}  // namespace qforge::onednn
