#include "qforge/ops.h"

#include <cstring>

#include "qforge/error.h"

namespace qforge {
namespace {

void check_range(const Buffer& buffer, std::size_t offset, std::size_t bytes, const char* what) {
  if (offset > buffer.size() || bytes > buffer.size() - offset)
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(offset) + " of a " + std::to_string(buffer.size()) +
                    "-byte buffer; expected the range to lie inside the buffer");
}

}  // namespace

QuantizationOps::~QuantizationOps() = default;

bool QuantizationOps::select_device(int index) { return index == 0; }

// Defaults for backends whose device is the host: buffers are host memory, copies are memcpy.
std::shared_ptr<Buffer> QuantizationOps::allocate(std::size_t bytes) {
  return make_host_buffer(bytes);
}

void QuantizationOps::copy_to_device(Buffer& dst, std::size_t dst_offset, const void* src,
                                     std::size_t bytes) {
  check_range(dst, dst_offset, bytes, "copy_to_device");
  if (!dst.host_accessible())
    throw Error(ErrorCode::invalid_argument,
                "copy_to_device: destination buffer lives on " + dst.device().backend +
                    "; expected a buffer allocated by " + name());
  if (bytes) std::memcpy(static_cast<std::byte*>(dst.data()) + dst_offset, src, bytes);
}

void QuantizationOps::copy_to_host(void* dst, const Buffer& src, std::size_t src_offset,
                                   std::size_t bytes) {
  check_range(src, src_offset, bytes, "copy_to_host");
  auto& s = const_cast<Buffer&>(src);
  if (!s.host_accessible())
    throw Error(ErrorCode::invalid_argument,
                "copy_to_host: source buffer lives on " + src.device().backend +
                    "; expected a buffer allocated by " + name());
  if (bytes) std::memcpy(dst, static_cast<const std::byte*>(s.data()) + src_offset, bytes);
}

}  // namespace qforge
