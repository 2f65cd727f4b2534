// Respecting device limits. A storage-buffer binding may span at most maxStorageBufferRange
// bytes (128 MiB on lavapipe) and start only at a multiple of minStorageBufferOffsetAlignment; a
// dispatch may have at most maxComputeWorkGroupCount groups per dimension. Ops split their work
// into pieces that fit (never asking the driver for more) and bind each piece through a window:
// an aligned binding plus the lead, in bytes, from the binding's start to the piece's first byte.
#pragma once

#include <cstdint>

#include "buffers.h"
#include "context.h"

namespace qforge::vulkan {

struct Window {
  BufferBinding binding;
  std::uint64_t lead = 0;  // bytes from binding.offset to the requested first byte
};

// Payload bytes one window always holds, whatever the alignment: the largest piece an op may
// put into one binding. Also keeps every byte index a shader computes below 2^31.
std::uint64_t window_capacity(const DeviceCaps& caps);

// A binding covering bytes [offset, offset + bytes) of `buffer` (offset aligned down; the range
// rounded up to whole 16-byte units and clipped to the buffer). bytes <= window_capacity().
Window window(const DeviceCaps& caps, const DeviceBuffer& buffer, std::uint64_t offset,
              std::uint64_t bytes);

// A 2-D grid of at least `groups` workgroups within the device's limits (x first, rows of x
// groups along y); shaders linearise it as y * num_groups.x + x.
struct Grid {
  std::uint32_t x = 0, y = 0;
};
// The most groups grid_for() can arrange.
std::uint64_t max_linear_groups(const DeviceCaps& caps);
Grid grid_for(const DeviceCaps& caps, std::uint64_t groups);

}  // namespace qforge::vulkan
