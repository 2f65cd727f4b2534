#include "windows.h"

#include <algorithm>

#include "qforge/error.h"

namespace qforge::vulkan {

std::uint64_t window_capacity(const DeviceCaps& caps) {
  const std::uint64_t range = std::min<std::uint64_t>(caps.max_storage_buffer_range, 1ull << 31);
  const std::uint64_t slack = caps.min_storage_offset_alignment + 16;
  return range > 2 * slack ? range - slack : range / 2;
}

Window window(const DeviceCaps& caps, const DeviceBuffer& buffer, std::uint64_t offset,
              std::uint64_t bytes) {
  const std::uint64_t align = std::max<std::uint64_t>(16, caps.min_storage_offset_alignment);
  Window w;
  w.binding.buffer = buffer.handle();
  w.binding.offset = offset / align * align;
  w.lead = offset - w.binding.offset;
  std::uint64_t range = (w.lead + std::max<std::uint64_t>(bytes, 1) + 15) / 16 * 16;
  range = std::min<std::uint64_t>(range, buffer.size() - w.binding.offset);
  if (range > caps.max_storage_buffer_range)
    throw Error(ErrorCode::internal, "vulkan: a window of " + std::to_string(range) +
                                         " bytes exceeds maxStorageBufferRange " +
                                         std::to_string(caps.max_storage_buffer_range));
  w.binding.range = range;
  return w;
}

std::uint64_t max_linear_groups(const DeviceCaps& caps) {
  return static_cast<std::uint64_t>(caps.max_workgroup_count[0]) * caps.max_workgroup_count[1];
}

Grid grid_for(const DeviceCaps& caps, std::uint64_t groups) {
  if (groups == 0) return {0, 0};
  const std::uint64_t max_x = caps.max_workgroup_count[0];
  const std::uint64_t x = std::min(groups, max_x);
  const std::uint64_t y = (groups + x - 1) / x;
  if (y > caps.max_workgroup_count[1])
    throw Error(ErrorCode::internal, "vulkan: " + std::to_string(groups) +
                                         " workgroups do not fit the device's grid; the op "
                                         "should have split them");
  return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y)};
}

}  // namespace qforge::vulkan
