// Where the executor keeps the intermediate tensors of one run: a liveness plan over one arena.
//
// Every node output lives from the step that writes it to the last step that reads it (graph
// outputs to the end of the run). Buffers whose lifetimes do not overlap may share bytes, so the
// arena needs about the liveness peak (the most bytes live at any one step) rather than the sum
// of all intermediates. Offsets are assigned greedily by size, largest first, each into the
// smallest gap left by the buffers already placed whose lifetimes overlap it (TFLite's arena
// planner and ONNX Runtime's memory patterns do the same; Pisarchyk and Lee, "Efficient Memory
// Management for Deep Neural Net Inference", 2020, call it greedy by size).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "qforge/model/export.h"

namespace qforge::model {

// Offsets in the arena are multiples of this: enough for every element type and for SIMD loads.
inline constexpr std::size_t kArenaAlignment = 64;

// One buffer to place: its size and the steps (inclusive) from its first write to its last read.
struct BufferLifetime {
  std::size_t bytes = 0;
  std::size_t first = 0;
  std::size_t last = 0;
};

struct PlannedBuffer {
  // The tensors sharing the buffer: the node output that writes it first, then any outputs
  // computed in place on it (a Relu over its input).
  std::vector<std::string> tensors;
  BufferLifetime lifetime;
  std::size_t offset = 0;  // in the arena, a multiple of kArenaAlignment
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;
  std::size_t arena_bytes = 0;          // what the executor allocates: the planned peak
  std::size_t liveness_peak_bytes = 0;  // the most bytes live at one step: no plan needs less
  std::size_t total_bytes = 0;          // every buffer apart: memory without reuse
  bool reuse = true;                    // false: every buffer has its own bytes
};

// Offsets for the given lifetimes (sizes rounded up to kArenaAlignment): buffers whose lifetimes
// overlap never overlap in bytes; with reuse off, buffers are laid out one after another.
// Returns the offsets, in the order of `buffers`, and sets `arena_bytes` to the bytes they span.
QFORGE_MODEL_API std::vector<std::size_t> assign_offsets(std::span<const BufferLifetime> buffers,
                                                         bool reuse, std::size_t& arena_bytes);

// The most bytes (rounded up to kArenaAlignment per buffer) live at any one step.
QFORGE_MODEL_API std::size_t liveness_peak(std::span<const BufferLifetime> buffers);

// "arena 1.20 MiB for 5.31 MiB of intermediates in 42 buffers (liveness peak 1.10 MiB)".
QFORGE_MODEL_API std::string describe(const MemoryPlan& plan);

}  // namespace qforge::model
